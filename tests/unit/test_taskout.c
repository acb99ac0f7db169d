/* test_taskout: unit tests of a task's output streams (supervisor/
 * taskout.c) behind berthd's real server (server.c) and a real client
 * socket: the file holds every byte written and is read back whole, ended,
 * after a restart; a viewer gets every byte from its offset on, in order,
 * in data messages of at most 64 KiB and only while its connection has
 * room, then eof; attaching again moves the viewer; a connection that
 * goes takes its viewers; a write the filesystem refuses is counted and
 * logged once. */
#include <sys/stat.h>

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "proto.h"
#include "scratch.h"
#include "serverpair.h"
#include "server.h"
#include "tap.h"
#include "taskout.h"

#define NAME "task/0123456789abcdef/agent"

static char *dir;
static char *path;
static struct event_base *base;
static struct server_conn *conn;
static int client = -1;
static struct serverpair sp;

/* berthd listening, and one client it has accepted. */
static void
setup(void)
{
	dir = scratch_make("test_taskout");
	path = xasprintf("%s/agent.out", dir);
	serverpair_open(&sp, dir);
	base = sp.base;
	conn = sp.conn;
	client = sp.client;
}

static void
teardown(void)
{
	serverpair_close(&sp);
	free(path);
	scratch_remove(dir);
}

/* Reads exactly len bytes on the client's side, running berthd's loop
 * (whose drained connection moves taskout's viewers along) meanwhile. */
static void
client_read(void *buf, size_t len)
{
	serverpair_read(&sp, buf, len, 5000);
}

/* Whether anything waits for the client after berthd's loop ran. */
static bool
client_pending(void)
{
	struct pollfd pfd = {client, POLLIN, 0};
	int i;

	for (i = 0; i < 20; i++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	return poll(&pfd, 1, 50) > 0;
}

/* One data message: its stream, offset, bytes and eof. */
struct chunk {
	char stream[PROTO_MAX_NAME + 1];
	uint64_t offset;
	char *bytes;
	size_t n;
	bool eof;
};

static void
recv_chunk(struct chunk *c)
{
	uint8_t hdr[FRAME_HDR], *msg;
	struct proto_msg m;
	const char *code;
	char err[256];
	size_t len;

	client_read(hdr, sizeof hdr);
	len = frame_length(hdr);
	msg = xmalloc(len);
	client_read(msg, len);
	ck_assert_msg(
	    proto_decode(msg, len, &m, &code, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(m.type, PROTO_DATA);
	snprintf(c->stream, sizeof c->stream, "%s", m.stream);
	c->offset = m.offset;
	c->n = m.nbytes;
	c->bytes = xmalloc(m.nbytes + 1);
	memcpy(c->bytes, m.bytes, m.nbytes);
	c->bytes[m.nbytes] = '\0';
	c->eof = false;
	ck_assert_int_ge(proto_arg_bool(&m.unpacked.data, "eof", &c->eof), 0);
	proto_msg_free(&m);
	free(msg);
}

/* The next message is data at offset holding want. */
static void
expect_data(uint64_t offset, const char *want)
{
	struct chunk c;

	recv_chunk(&c);
	ck_assert_str_eq(c.stream, NAME);
	ck_assert_uint_eq(c.offset, offset);
	ck_assert(!c.eof);
	ck_assert_uint_eq(c.n, strlen(want));
	ck_assert_str_eq(c.bytes, want);
	free(c.bytes);
}

static void
expect_eof(uint64_t offset)
{
	struct chunk c;

	recv_chunk(&c);
	ck_assert_str_eq(c.stream, NAME);
	ck_assert_uint_eq(c.offset, offset);
	ck_assert(c.eof);
	ck_assert_uint_eq(c.n, 0);
	free(c.bytes);
}

static void
put(struct taskout *o, const char *s)
{
	taskout_write(o, s, strlen(s));
}

START_TEST(test_file_kept_whole)
{
	struct taskout *o;
	struct stat st;
	char *elsewhere;

	o = taskout_open(path, NAME, true);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(taskout_name(o), NAME);
	put(o, "hello ");
	put(o, "world");
	ck_assert_uint_eq(taskout_size(o), 11);
	ck_assert(!taskout_ended(o));
	taskout_end(o);
	ck_assert(taskout_ended(o));
	ck_assert_uint_eq(taskout_unsaved(o), 0);
	taskout_close(o);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_size, 11);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);

	/* Read back (berthd started again): whole and ended. */
	o = taskout_open(path, NAME, false);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(taskout_size(o), 11);
	ck_assert(taskout_ended(o));
	taskout_close(o);

	/* A new stream empties an old file. */
	o = taskout_open(path, NAME, true);
	ck_assert_uint_eq(taskout_size(o), 0);
	taskout_close(o);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_size, 0);

	/* No file: an empty, ended stream. */
	elsewhere = xasprintf("%s/check-3.out", dir);
	o = taskout_open(elsewhere, NAME, false);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(taskout_size(o), 0);
	ck_assert(taskout_ended(o));
	ck_assert_int_eq(taskout_attach(o, conn, 0), 0);
	taskout_pump(o);
	expect_eof(0);
	taskout_close(o);
	free(elsewhere);

	/* What is not a stream's file is an error. */
	errno = 0;
	ck_assert_ptr_null(taskout_open(dir, NAME, false));
	ck_assert_int_eq(errno, EINVAL);
	elsewhere = xasprintf("%s/none/agent.out", dir);
	ck_assert_ptr_null(taskout_open(elsewhere, NAME, true));
	ck_assert_int_eq(errno, ENOENT);
	free(elsewhere);
}
END_TEST

START_TEST(test_viewer_follows)
{
	struct taskout *o = taskout_open(path, NAME, true);

	put(o, "hello ");
	ck_assert(!taskout_attached(o, conn));
	ck_assert_int_eq(taskout_attach(o, conn, 0), 0);
	ck_assert(taskout_attached(o, conn));
	taskout_pump(o);
	expect_data(0, "hello ");
	put(o, "world");
	expect_data(6, "world");
	ck_assert(!client_pending());
	taskout_end(o);
	expect_eof(11);
	ck_assert(!client_pending());
	/* Pumped again, nothing more: eof goes once. */
	taskout_pump(o);
	ck_assert(!client_pending());
	taskout_close(o);
}
END_TEST

START_TEST(test_attach_at_offset)
{
	struct taskout *o = taskout_open(path, NAME, true);

	put(o, "0123456789");
	taskout_end(o);
	taskout_close(o);
	o = taskout_open(path, NAME, false);
	ck_assert_int_eq(taskout_attach(o, conn, 11), -1);
	ck_assert(!taskout_attached(o, conn));
	ck_assert_int_eq(taskout_attach(o, conn, 4), 0);
	taskout_pump(o);
	expect_data(4, "456789");
	expect_eof(10);
	/* Attached again: the same viewer, moved (one copy, no more). */
	ck_assert_int_eq(taskout_attach(o, conn, 8), 0);
	taskout_pump(o);
	expect_data(8, "89");
	expect_eof(10);
	ck_assert_int_eq(taskout_attach(o, conn, 10), 0);
	taskout_pump(o);
	expect_eof(10);
	ck_assert(!client_pending());
	taskout_close(o);
}
END_TEST

/* More than a connection takes at once: bytes move only while it has
 * room, in chunks of at most 64 KiB, and every one arrives, in order. */
START_TEST(test_paced_by_room)
{
	const size_t total = 4u << 20;
	struct evbuffer *out = bufferevent_get_output(conn->bev);
	char *data = xmalloc(total), *got = xmalloc(total);
	struct taskout *o = taskout_open(path, NAME, true);
	uint64_t at = 0;
	struct chunk c;
	size_t i;

	for (i = 0; i < total; i++)
		data[i] = (char)(i * 7 + i / 4096);
	for (i = 0; i < total; i += 100000)
		taskout_write(
		    o, data + i, total - i < 100000 ? total - i : 100000);
	taskout_end(o);
	ck_assert_uint_eq(taskout_size(o), total);
	ck_assert_int_eq(taskout_attach(o, conn, 0), 0);
	taskout_pump(o);
	ck_assert_uint_eq(server_out_room(conn), 0);
	ck_assert_uint_le(evbuffer_get_length(out), SERVER_OUT_HIGH + 66000);
	while (at < total) {
		recv_chunk(&c);
		ck_assert_str_eq(c.stream, NAME);
		ck_assert(!c.eof);
		ck_assert_uint_eq(c.offset, at);
		ck_assert_uint_gt(c.n, 0);
		ck_assert_uint_le(c.n, 64u << 10);
		memcpy(got + at, c.bytes, c.n);
		at += c.n;
		free(c.bytes);
		ck_assert_uint_le(
		    evbuffer_get_length(out), SERVER_OUT_HIGH + 66000);
	}
	ck_assert(memcmp(got, data, total) == 0);
	expect_eof(total);
	taskout_close(o);
	free(data);
	free(got);
}
END_TEST

/* One connection, two streams: a drained connection moves both. */
START_TEST(test_conn_pump_moves_each)
{
	char *other = xasprintf("%s/agent.err", dir);
	struct taskout *o = taskout_open(path, NAME, true);
	struct taskout *e =
	    taskout_open(other, "task/0123456789abcdef/stderr", true);
	struct chunk c[2];
	int i;

	put(o, "out");
	put(e, "err");
	ck_assert_int_eq(taskout_attach(o, conn, 0), 0);
	ck_assert_int_eq(taskout_attach(e, conn, 1), 0);
	taskout_conn_pump(conn);
	recv_chunk(&c[0]);
	recv_chunk(&c[1]);
	i = strcmp(c[0].stream, NAME) == 0 ? 0 : 1;
	ck_assert_str_eq(c[i].stream, NAME);
	ck_assert_uint_eq(c[i].offset, 0);
	ck_assert_str_eq(c[i].bytes, "out");
	ck_assert_str_eq(c[!i].stream, "task/0123456789abcdef/stderr");
	ck_assert_uint_eq(c[!i].offset, 1);
	ck_assert_str_eq(c[!i].bytes, "rr");
	free(c[0].bytes);
	free(c[1].bytes);
	ck_assert(!client_pending());
	taskout_close(e);
	ck_assert(taskout_attached(o, conn));
	taskout_conn_gone(conn);
	ck_assert(!taskout_attached(o, conn));
	put(o, "more");
	taskout_end(o);
	ck_assert(!client_pending());
	taskout_close(o);
	free(other);
}
END_TEST

/* A device that is always full stands for a full filesystem. */
START_TEST(test_write_refused)
{
	char *log = xasprintf("%s/log", dir), line[512];
	int fd, saved = dup(STDERR_FILENO), lines = 0;
	struct taskout *o;
	FILE *f;

	o = taskout_open("/dev/full", NAME, true);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(taskout_attach(o, conn, 0), 0);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
	put(o, "lost");
	put(o, "also lost");
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	ck_assert_uint_eq(taskout_size(o), 0);
	ck_assert_uint_eq(taskout_unsaved(o), 13);
	taskout_end(o);
	expect_eof(0);
	taskout_close(o);
	f = fopen(log, "r");
	while (fgets(line, sizeof line, f) != NULL)
		if (strstr(line, "/dev/full") != NULL)
			lines++;
	fclose(f);
	ck_assert_int_eq(lines, 1);
	free(log);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("taskout");
	TCase *tc = tcase_create("taskout");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_file_kept_whole);
	tcase_add_test(tc, test_viewer_follows);
	tcase_add_test(tc, test_attach_at_offset);
	tcase_add_test(tc, test_paced_by_room);
	tcase_add_test(tc, test_conn_pump_moves_each);
	tcase_add_test(tc, test_write_refused);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
