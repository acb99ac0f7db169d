/* test_server: unit tests of berthd's sending (supervisor/server.c): an
 * answer reaches the client framed, and in checked builds one whose map
 * was miscounted stops berthd before it is queued. */
#include <sys/socket.h>
#include <sys/un.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "proto.h"
#include "scratch.h"
#include "server.h"
#include "tap.h"

static char *dir;
static char *path;
static struct event_base *base;
static struct server_conn *conn;
static int client = -1;

/* berthd listening, and one client it has accepted. */
static void
setup(void)
{
	struct sockaddr_un sa;
	char *cause = NULL;
	int i;

	dir = scratch_make("test_server");
	path = xasprintf("%s/sock", dir);
	base = event_base_new();
	ck_assert_msg(
	    server_listen(base, path, (uid_t)-1, (gid_t)-1, &cause) == 0, "%s",
	    cause);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	client = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(client, (struct sockaddr *)&sa, sizeof sa), 0);
	for (i = 0; i < 1000 && (conn = server_conn_find(1)) == NULL; i++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	ck_assert_ptr_nonnull(conn);
}

static void
teardown(void)
{
	close(client);
	server_shutdown();
	event_base_free(base);
	free(path);
	scratch_remove(dir);
}

/* Reads exactly len bytes from the client's side, running berthd's loop
 * while they are on their way. */
static void
client_read(void *buf, size_t len)
{
	struct pollfd pfd = {client, POLLIN, 0};
	size_t got = 0;
	ssize_t n;
	int i;

	for (i = 0; i < 1000 && got < len; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		n = read(client, (char *)buf + got, len - got);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	ck_assert_uint_eq(got, len);
}

START_TEST(test_answer_framed)
{
	msgpack_packer *pk = server_reply_begin(conn, 5);
	uint8_t hdr[FRAME_HDR], *msg;
	struct proto_msg m;
	const char *code;
	char err[256];
	uint64_t n = 0;
	size_t len;

	msgpack_pack_map(pk, 1);
	proto_pack_kv_u64(pk, "n", 42);
	server_reply_end(conn);
	client_read(hdr, sizeof hdr);
	len = frame_length(hdr);
	msg = malloc(len);
	client_read(msg, len);
	ck_assert_msg(
	    proto_decode(msg, len, &m, &code, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(m.type, PROTO_RESPONSE);
	ck_assert_uint_eq(m.id, 5);
	ck_assert(m.ok);
	ck_assert_int_eq(proto_arg_u64(m.result, "n", &n), 1);
	ck_assert_uint_eq(n, 42);
	proto_msg_free(&m);
	free(msg);
}
END_TEST

#ifdef BERTH_CHECKED
START_TEST(test_miscounted_answer_aborts)
{
	msgpack_packer *pk = server_reply_begin(conn, 5);

	msgpack_pack_map(pk, 2);
	proto_pack_kv_u64(pk, "n", 42);
	server_reply_end(conn);
}
END_TEST
#endif

static Suite *
server_suite(void)
{
	Suite *s = suite_create("server");
	TCase *tc = tcase_create("send");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_answer_framed);
#ifdef BERTH_CHECKED
	tcase_add_test_raise_signal(tc, test_miscounted_answer_aborts, SIGABRT);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tap_run(server_suite());
}
