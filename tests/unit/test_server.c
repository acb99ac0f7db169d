/* test_server: unit tests of berthd's sending (supervisor/server.c): an
 * answer reaches the client framed, and in checked builds one whose map
 * was miscounted stops berthd before it is queued. */

#include <signal.h>
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

static char *dir;
static struct event_base *base;
static struct server_conn *conn;
static int client = -1;
static struct serverpair sp;

/* berthd listening, and one client it has accepted. */
static void
setup(void)
{
	dir = scratch_make("test_server");
	serverpair_open(&sp, dir);
	base = sp.base;
	conn = sp.conn;
	client = sp.client;
}

static void
teardown(void)
{
	serverpair_close(&sp);
	scratch_remove(dir);
}

/* Reads exactly len bytes from the client's side, running berthd's loop
 * while they are on their way. */
static void
client_read(void *buf, size_t len)
{
	serverpair_read(&sp, buf, len, 1000);
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
