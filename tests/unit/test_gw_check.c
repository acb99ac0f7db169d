/* test_gw_check: unit tests of the gateway's side of gateway.check
 * (gw_check.c) against a berthd of the test's own on a real Unix socket:
 * the request carries the key only when there is one; a grant's answer
 * fills every door's fields; an answer with a field of the wrong type,
 * too long, or a grant without its expiry, admits nobody. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "gateway.h"
#include "gw_check.h"
#include "log.h"
#include "proto.h"
#include "scratch.h"
#include "tap.h"

/* What the fake berthd answers next: a result map packed by the test
 * (packed NULL: an unauthorized error), and what it was asked. */
typedef void (*answer_fn)(msgpack_packer *pk);

static answer_fn answer;
static char asked_key[256];
static int asked_has_key;
static char asked_door[64];
static int listener = -1;
static char *dir, sockpath[256];

/* What of the rest of the gateway gw_check.c reads. */
struct gateway gateway;

void
gateway_peer(struct lws *wsi, char *buf, size_t len)
{
	(void)wsi;
	snprintf(buf, len, "test");
}

static int
read_all(int fd, uint8_t *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = read(fd, buf + off, len - off);
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/* Serves requests on one accepted connection until it closes. */
static void *
berthd(void *arg)
{
	uint8_t hdr[FRAME_HDR], buf[4096];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_msg m;
	const char *code;
	char err[128];
	uint32_t n;
	int fd;

	(void)arg;
	while ((fd = accept(listener, NULL, NULL)) >= 0) {
		while (read_all(fd, hdr, FRAME_HDR) == 0) {
			n = frame_length(hdr);
			if (n > sizeof buf || read_all(fd, buf, n) < 0 ||
			    proto_decode(buf, n, &m, &code, err, sizeof err) <
			        0)
				break;
			asked_has_key = proto_arg_str(
			    m.args, "key", asked_key, sizeof asked_key);
			proto_arg_str(
			    m.args, "door", asked_door, sizeof asked_door);
			msgpack_sbuffer_init(&sb);
			msgpack_sbuffer_write(
			    &sb, (const char *)hdr, FRAME_HDR);
			msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
			if (answer == NULL)
				proto_pack_error(
				    &pk, m.id, PROTO_E_UNAUTHORIZED, "no");
			else {
				proto_pack_result(&pk, m.id);
				answer(&pk);
			}
			frame_header((uint8_t *)sb.data,
			    (uint32_t)(sb.size - FRAME_HDR));
			if (write(fd, sb.data, sb.size) != (ssize_t)sb.size)
				abort();
			msgpack_sbuffer_destroy(&sb);
			proto_msg_free(&m);
		}
		close(fd);
	}
	return NULL;
}

static void
setup(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	pthread_t t;

	log_init("test", 0);
	dir = scratch_make("gw_check");
	snprintf(sockpath, sizeof sockpath, "%s/berthd.sock", dir);
	ck_assert_uint_lt(strlen(sockpath), sizeof sun.sun_path);
	memcpy(sun.sun_path, sockpath, strlen(sockpath) + 1);
	listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(listener, 0);
	ck_assert_int_eq(
	    bind(listener, (struct sockaddr *)&sun, sizeof sun), 0);
	ck_assert_int_eq(listen(listener, 4), 0);
	gateway.socket_path = sockpath;
	pthread_create(&t, NULL, berthd, NULL);
	pthread_detach(t);
}

static void
teardown(void)
{
	gw_check_close();
	close(listener);
	scratch_remove(dir);
}

static void
answer_empty(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 0);
}

static void
answer_view(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "grant", "g0123456789abcdef");
	proto_pack_kv_u64(pk, "expires_at", 1700000000123);
	proto_pack_kv_str(pk, "scope", "desktop:view");
	proto_pack_kv_bool(pk, "control", false);
}

static void
answer_runtime(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 5);
	proto_pack_kv_str(pk, "grant", "gfedcba9876543210");
	proto_pack_kv_u64(pk, "expires_at", 42);
	proto_pack_kv_str(pk, "scope", "runtime:opencode");
	proto_pack_kv_u64(pk, "port", 4096);
	proto_pack_kv_str(pk, "authorization", "Basic b3BlbmNvZGU6eA==");
}

static void
answer_pty(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 5);
	proto_pack_kv_str(pk, "grant", "g1111111111111111");
	proto_pack_kv_u64(pk, "expires_at", 7);
	proto_pack_kv_str(pk, "scope", "pty:ab12cd34:write");
	proto_pack_kv_str(pk, "pty", "ab12cd34");
	proto_pack_kv_bool(pk, "write", true);
}

START_TEST(test_master)
{
	struct gw_check_answer a;

	answer = answer_empty;
	ck_assert_int_eq(
	    gw_check_grant(GW_CHECK_NOVNC, "tok", 3, NULL, "1.2.3.4", &a),
	    GW_CHECK_OK);
	ck_assert_str_eq(a.grant, "");
	ck_assert_uint_eq(a.expires_at_ms, 0);
	ck_assert_int_eq(asked_has_key, 0);
	ck_assert_str_eq(asked_door, GW_CHECK_NOVNC);
	ck_assert_int_eq(gw_check_grant(GW_CHECK_V1, "tok", 3, NULL, "p", NULL),
	    GW_CHECK_OK);
}
END_TEST

START_TEST(test_grant_fields)
{
	struct gw_check_answer a;

	answer = answer_view;
	ck_assert_int_eq(
	    gw_check_grant(GW_CHECK_NOVNC, "tok", 3, NULL, "p", &a),
	    GW_CHECK_OK);
	ck_assert_str_eq(a.grant, "g0123456789abcdef");
	ck_assert_uint_eq(a.expires_at_ms, 1700000000123);
	ck_assert_str_eq(a.scope, "desktop:view");
	ck_assert(!a.control);
	answer = answer_runtime;
	ck_assert_int_eq(gw_check_grant(GW_CHECK_RUNTIME, "", 0,
	                     "gfedcba9876543210", "p", &a),
	    GW_CHECK_OK);
	ck_assert_int_eq(asked_has_key, 1);
	ck_assert_str_eq(asked_key, "gfedcba9876543210");
	ck_assert_uint_eq(a.port, 4096);
	ck_assert_str_eq(a.authorization, "Basic b3BlbmNvZGU6eA==");
	ck_assert_str_eq(a.pty, "");
	answer = answer_pty;
	ck_assert_int_eq(
	    gw_check_grant(GW_CHECK_PTY, "t", 1, "k", "p", &a), GW_CHECK_OK);
	ck_assert_str_eq(a.pty, "ab12cd34");
	ck_assert(a.write);
	ck_assert_uint_eq(a.port, 0);
	ck_assert_str_eq(a.authorization, "");
}
END_TEST

START_TEST(test_refused)
{
	struct gw_check_answer a;

	answer = answer_view;
	gw_check_grant(GW_CHECK_NOVNC, "tok", 3, NULL, "p", &a);
	answer = NULL;
	ck_assert_int_eq(
	    gw_check_grant(GW_CHECK_NOVNC, "tok", 3, NULL, "p", &a),
	    GW_CHECK_REFUSED);
	ck_assert_str_eq(a.grant, "");
	ck_assert_str_eq(a.scope, "");
	ck_assert_ptr_nonnull(
	    gw_check_token(GW_CHECK_NOVNC, "tok", 3, "p", NULL));
}
END_TEST

static void
bad_type(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "grant", "g0123456789abcdef");
	proto_pack_kv_u64(pk, "expires_at", 1);
	proto_pack_kv_str(pk, "scope", "desktop:view");
	proto_pack_kv_str(pk, "control", "yes");
}

static void
no_expiry(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "grant", "g0123456789abcdef");
	proto_pack_kv_str(pk, "scope", "cdp");
}

static void
long_authz(msgpack_packer *pk)
{
	char big[GW_CHECK_AUTHZ_MAX + 1];

	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "grant", "g0123456789abcdef");
	proto_pack_kv_u64(pk, "expires_at", 1);
	proto_pack_kv_str(pk, "scope", "runtime:x");
	proto_pack_kv_str(pk, "authorization", big);
}

static void
big_port(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "grant", "g0123456789abcdef");
	proto_pack_kv_u64(pk, "expires_at", 1);
	proto_pack_kv_str(pk, "scope", "preview:1");
	proto_pack_kv_u64(pk, "port", 65536);
}

/* Not a grant, yet more than {}: not an answer for the master token. */
static void
extra_field(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	proto_pack_kv_bool(pk, "control", true);
}

static void
not_a_map(msgpack_packer *pk)
{
	msgpack_pack_true(pk);
}

START_TEST(test_malformed_answers)
{
	static const answer_fn bad[] = {
	    bad_type, no_expiry, long_authz, big_port, extra_field, not_a_map};
	struct gw_check_answer a;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		answer = bad[i];
		ck_assert_int_eq(
		    gw_check_grant(GW_CHECK_NOVNC, "tok", 3, NULL, "p", &a),
		    GW_CHECK_UNAVAILABLE);
		ck_assert_str_eq(a.grant, "");
		ck_assert_str_eq(a.authorization, "");
		ck_assert(!a.control);
	}
	/* And the next good answer is read on a new connection. */
	answer = answer_view;
	ck_assert_int_eq(
	    gw_check_grant(GW_CHECK_NOVNC, "tok", 3, NULL, "p", &a),
	    GW_CHECK_OK);
	ck_assert_str_eq(a.grant, "g0123456789abcdef");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("gw_check");
	TCase *tc = tcase_create("core");

	/* In each test's own process, where the answer is set. */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_master);
	tcase_add_test(tc, test_grant_fields);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_malformed_answers);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
