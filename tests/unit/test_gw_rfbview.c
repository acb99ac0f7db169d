/* test_gw_rfbview: unit tests of the view-only filter of a client's RFB
 * stream (gw_rfbview.c): through each handshake (3.3, 3.7, 3.8; None and
 * VNC authentication) only a viewer's messages reach the server, however
 * the bytes are cut; what cannot be framed, breaks a limit, or speaks
 * out of turn closes the stream. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_rfbview.h"
#include "tap.h"

#define BUF_MAX 65536

/* One side's bytes, in the order the relay sees them. */
struct step {
	int server; /* from the server, else from the client */
	size_t len;
	uint8_t bytes[8192];
};

/* A conversation: steps, and what of the client's bytes must pass. */
struct talk {
	struct step steps[16];
	size_t nsteps;
	uint8_t want[BUF_MAX];
	size_t nwant;
};

static struct talk t;

static void
talk_reset(void)
{
	memset(&t, 0, sizeof t);
}

static struct step *
step(int server)
{
	struct step *s;

	if (t.nsteps == 0 || t.steps[t.nsteps - 1].server != server)
		t.nsteps++;
	s = &t.steps[t.nsteps - 1];
	s->server = server;
	return s;
}

/* Bytes from one side; a client's that pass are wanted too. */
static void
say(int server, const void *p, size_t len, int passes)
{
	struct step *s = step(server);

	ck_assert_uint_le(s->len + len, sizeof s->bytes);
	memcpy(s->bytes + s->len, p, len);
	s->len += len;
	if (passes) {
		memcpy(t.want + t.nwant, p, len);
		t.nwant += len;
	}
}

#define SERVER(lit) say(1, lit, sizeof lit - 1, 0)
#define CLIENT(lit) say(0, lit, sizeof lit - 1, 1)
#define PASS(lit) say(0, lit, sizeof lit - 1, 1)
#define DROP(lit) say(0, lit, sizeof lit - 1, 0)

/* How each step is fed: whole, one byte at a time, or the client's
 * bytes, taken together, cut once at `at`; `inplace` filters into the
 * input buffer itself. */
enum feed { WHOLE, BYTES, CUT };

/* Feeds n bytes at p from a copy of exactly n bytes, so that a read past
 * them is caught by the sanitizers; appends what passes to out. */
static void
feed_client(struct gw_rfbview *v, const uint8_t *p, size_t n, int inplace,
    uint8_t *out, size_t *nout)
{
	uint8_t *copy = malloc(n), *dst = inplace ? copy : malloc(n);
	size_t got;

	memcpy(copy, p, n);
	got = gw_rfbview_from_client(v, copy, n, dst);
	ck_assert_uint_le(got, n);
	ck_assert_uint_le(*nout + got, BUF_MAX);
	memcpy(out + *nout, dst, got);
	*nout += got;
	if (!inplace)
		free(dst);
	free(copy);
}

static void
feed_server(struct gw_rfbview *v, const uint8_t *p, size_t n)
{
	uint8_t *copy = malloc(n);

	memcpy(copy, p, n);
	gw_rfbview_from_server(v, copy, n);
	free(copy);
}

/* Plays the conversation: the filter's verdict, and in out what passed. */
static const char *
run(enum feed how, size_t at, int inplace, uint8_t *out, size_t *nout)
{
	static char why[GW_RFBVIEW_WHY_MAX];
	struct gw_rfbview v;
	size_t i, k, n, seen = 0;
	struct step *s;

	gw_rfbview_init(&v);
	*nout = 0;
	for (i = 0; i < t.nsteps; i++) {
		s = &t.steps[i];
		for (k = 0; k < s->len; k += n) {
			n = how == BYTES ? 1 : s->len - k;
			if (how == CUT && !s->server && seen + k < at &&
			    at - (seen + k) < n)
				n = at - (seen + k);
			if (s->server)
				feed_server(&v, s->bytes + k, n);
			else
				feed_client(
				    &v, s->bytes + k, n, inplace, out, nout);
		}
		if (!s->server)
			seen += s->len;
	}
	if (gw_rfbview_error(&v) == NULL)
		return NULL;
	snprintf(why, sizeof why, "%s", gw_rfbview_error(&v));
	return why;
}

/* The client's bytes, all steps taken together. */
static size_t
client_total(void)
{
	size_t i, n = 0;

	for (i = 0; i < t.nsteps; i++)
		if (!t.steps[i].server)
			n += t.steps[i].len;
	return n;
}

/*
 * Plays the conversation every way: whole, a byte at a time, in place,
 * and cut in two at every byte of the client's. Each gives the same
 * output and verdict: the wanted bytes and no error if why is NULL,
 * else an error containing why (and the output, the same each way, is
 * left in out for the caller to look at).
 */
static void
check_talk(const char *why, uint8_t *out, size_t *nout)
{
	static uint8_t other[BUF_MAX];
	size_t n, k, total = client_total();
	const char *got, *again;

	got = run(WHOLE, 0, 0, out, nout);
	if (why == NULL) {
		ck_assert_msg(got == NULL, "closed: %s", got);
		ck_assert_uint_eq(*nout, t.nwant);
		ck_assert_mem_eq(out, t.want, t.nwant);
	} else {
		ck_assert_msg(got != NULL, "not closed, wanted %s", why);
		ck_assert_msg(strstr(got, why) != NULL, "closed: %s", got);
	}
	for (k = 0; k <= total + 2; k++) {
		if (k == total + 1)
			again = run(BYTES, 0, 0, other, &n);
		else if (k == total + 2)
			again = run(WHOLE, 0, 1, other, &n);
		else
			again = run(CUT, k, k % 2, other, &n);
		ck_assert_int_eq(again == NULL, got == NULL);
		if (got != NULL)
			ck_assert_str_eq(again, got);
		ck_assert_uint_eq(n, *nout);
		ck_assert_mem_eq(other, out, n);
	}
}

static void
be16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* 3.8 with security type None, through ClientInit (sent unshared). */
static void
hello38(void)
{
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.008\n");
	SERVER("\x01\x01");
	CLIENT("\x01");
	SERVER("\0\0\0\0");
	DROP("\0");
	t.want[t.nwant++] = 1; /* shared, whatever the client asked */
	SERVER("\x05\x00\x03\x20"
	       "\x20\x18\x00\x01\x00\xff\x00\xff\x00\xff"
	       "\x10\x08\x00\x00\x00\x00\x00\x00\x00\x05"
	       "berth");
}

/* Every message a viewer needs (they pass) and every one it must not
 * send (they do not), as noVNC and other clients write them. */
static void
messages(void)
{
	uint8_t m[64];

	PASS("\x00\0\0\0"
	     "\x20\x18\x00\x01\x00\xff\x00\xff\x00\xff\x10\x08"
	     "\x00\0\0\0");
	PASS("\x02\0\x00\x03"
	     "\x00\x00\x00\x07"
	     "\xff\xff\xfe\xcc"
	     "\x00\x00\x00\x00");
	PASS("\x03\x01\x00\x00\x00\x00\x05\x00\x03\x20");
	DROP("\x04\x01\0\0\x00\x00\xff\x0d"); /* KeyEvent */
	DROP("\x05\x01\x00\x10\x00\x20");     /* PointerEvent */
	DROP("\x06\0\0\0\x00\x00\x00\x05"
	     "hello"); /* ClientCutText */
	DROP("\x06\0\0\0\xff\xff\xff\xf8"
	     "\x10\0\0\x01\x00\x00\x00\x00");
	PASS("\x96\x01\x00\x00\x00\x00\x05\x00\x03\x20"); /* continuous */
	PASS("\xf8\0\0\0\x80\x00\x00\x03\x04"
	     "abcd");                           /* Fence */
	PASS("\xf8\0\0\0\x00\x00\x00\x00\x00"); /* empty Fence */
	memset(m, 0, sizeof m);
	m[0] = 251; /* SetDesktopSize, two screens */
	be16(m + 2, 640);
	be16(m + 4, 480);
	m[6] = 2;
	say(0, m, 8 + 32, 0);
	DROP("\xfa\0\x01\x02"); /* xvp: reboot */
	DROP("\xfd\x81\x00\x04"
	     "\x01\x02\x03\x04"); /* gii, big end */
	DROP("\xfd\x01\x03\x00"
	     "\x01\x02\x03"); /* gii, little */
	DROP("\xff\x00\x00\x01\x00\x00\xff\x0d\x00\x00\x00\x1c"); /* QEMU key */
	DROP("\xff\x01\x00\x00"); /* QEMU audio on */
	DROP("\xff\x01\x00\x02\x03\x02\x00\x00\xac\x44");
	PASS("\x03\x01\x00\x00\x00\x00\x05\x00\x03\x20");
}

START_TEST(test_38_none)
{
	static uint8_t out[BUF_MAX];
	size_t n;

	talk_reset();
	hello38();
	messages();
	check_talk(NULL, out, &n);
}
END_TEST

START_TEST(test_37_none)
{
	static uint8_t out[BUF_MAX];
	size_t n;

	talk_reset();
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.007\n");
	SERVER("\x02\x10\x01");
	CLIENT("\x01");
	/* No SecurityResult after None in 3.7. */
	CLIENT("\x01");
	messages();
	check_talk(NULL, out, &n);
}
END_TEST

START_TEST(test_33_none)
{
	static uint8_t out[BUF_MAX];
	size_t n;

	talk_reset();
	SERVER("RFB 003.003\n");
	CLIENT("RFB 003.003\n");
	SERVER("\0\0\0\x01");
	CLIENT("\x01");
	messages();
	check_talk(NULL, out, &n);
}
END_TEST

/* VNC authentication: the response passes, and ClientInit waits for
 * the SecurityResult. */
START_TEST(test_vncauth)
{
	static const char *const versions[] = {
	    "RFB 003.003\n", "RFB 003.007\n", "RFB 003.008\n"};
	static uint8_t out[BUF_MAX];
	size_t i, n;

	for (i = 0; i < 3; i++) {
		talk_reset();
		say(1, "RFB 004.001\n", 12, 0);
		say(0, versions[i], 12, 1);
		if (i == 0)
			SERVER("\0\0\0\x02");
		else {
			SERVER("\x02\x02\x01");
			CLIENT("\x02");
		}
		SERVER("0123456789abcdef");
		CLIENT("fedcba9876543210");
		SERVER("\0\0\0\0");
		CLIENT("\x01");
		messages();
		check_talk(NULL, out, &n);
	}
}
END_TEST

/* A ClientCutText far longer than any buffer streams by, and what comes
 * after it passes. */
START_TEST(test_long_cut_text)
{
	static uint8_t out[BUF_MAX], chunk[4096];
	struct gw_rfbview v;
	uint8_t head[8] = {6, 0, 0, 0};
	size_t i, n = 0;

	talk_reset();
	hello38();
	gw_rfbview_init(&v);
	for (i = 0; i < t.nsteps; i++) {
		if (t.steps[i].server)
			feed_server(&v, t.steps[i].bytes, t.steps[i].len);
		else
			feed_client(
			    &v, t.steps[i].bytes, t.steps[i].len, 0, out, &n);
	}
	ck_assert_uint_eq(n, t.nwant);
	be32(head + 4, GW_RFBVIEW_CUT_MAX);
	feed_client(&v, head, sizeof head, 0, out, &n);
	memset(chunk, 0x04, sizeof chunk); /* reads as KeyEvents if leaked */
	for (i = 0; i < GW_RFBVIEW_CUT_MAX / sizeof chunk; i++)
		feed_client(&v, chunk, sizeof chunk, 1, out, &n);
	ck_assert_uint_eq(n, t.nwant);
	feed_client(
	    &v, (const uint8_t *)"\x03\0\0\0\0\0\0\x01\0\x01", 10, 0, out, &n);
	ck_assert_ptr_null(gw_rfbview_error(&v));
	ck_assert_uint_eq(n, t.nwant + 10);
}
END_TEST

/* After a good handshake, one bad message: nothing of it passes (what
 * came before does), and the stream is closed. */
static void
bad_message(const void *msg, size_t len, const char *why)
{
	static uint8_t out[BUF_MAX];
	size_t n, before;

	talk_reset();
	hello38();
	PASS("\x03\x01\x00\x00\x00\x00\x05\x00\x03\x20");
	before = t.nwant;
	say(0, msg, len, 0);
	PASS("\x03\x01\x00\x00\x00\x00\x05\x00\x03\x20");
	check_talk(why, out, &n);
	/* A message that passes may have had the first bytes of its
	 * header passed before the limit was seen. */
	ck_assert_uint_ge(n, before);
	ck_assert_uint_lt(n, before + 9);
	ck_assert_mem_eq(out, t.want, before);
	ck_assert_mem_eq(out + before, msg, n - before);
}

START_TEST(test_unknown_types)
{
	static const uint8_t types[] = {
	    1, 7, 8, 9, 10, 11, 127, 149, 151, 247, 249, 252, 254};
	uint8_t msg[16] = {0};
	size_t i;

	for (i = 0; i < sizeof types; i++) {
		msg[0] = types[i];
		bad_message(msg, sizeof msg, "is unknown");
	}
}
END_TEST

START_TEST(test_limits)
{
	uint8_t msg[16] = {0};

	msg[0] = 2;
	be16(msg + 2, GW_RFBVIEW_ENCODINGS_MAX + 1);
	bad_message(msg, 4, "SetEncodings lists");
	memset(msg, 0, sizeof msg);
	msg[0] = 6;
	be32(msg + 4, GW_RFBVIEW_CUT_MAX + 1);
	bad_message(msg, 8, "ClientCutText of");
	be32(msg + 4, 0x80000000u); /* no positive twin */
	bad_message(msg, 8, "ClientCutText of");
	be32(msg + 4, (uint32_t) - (int32_t)(GW_RFBVIEW_CUT_MAX + 1));
	bad_message(msg, 8, "ClientCutText of");
	memset(msg, 0, sizeof msg);
	msg[0] = 248;
	msg[8] = GW_RFBVIEW_FENCE_MAX + 1;
	bad_message(msg, 9, "Fence");
	bad_message("\xff\x02\0\0", 4, "QEMU message 2");
	bad_message("\xff\x01\0\x03", 4, "QEMU audio operation 3");
}
END_TEST

/* Limits at their edge pass. */
START_TEST(test_limits_edge)
{
	static uint8_t out[BUF_MAX];
	static uint8_t enc[4 + 4 * GW_RFBVIEW_ENCODINGS_MAX];
	uint8_t fence[9 + GW_RFBVIEW_FENCE_MAX] = {248};
	size_t n;

	talk_reset();
	hello38();
	enc[0] = 2;
	be16(enc + 2, GW_RFBVIEW_ENCODINGS_MAX);
	say(0, enc, 1024, 1);
	say(0, enc + 1024, 1024, 1);
	say(0, enc + 2048, 1024, 1);
	say(0, enc + 3072, sizeof enc - 3072, 1);
	fence[8] = GW_RFBVIEW_FENCE_MAX;
	say(0, fence, sizeof fence, 1);
	check_talk(NULL, out, &n);
}
END_TEST

START_TEST(test_bad_versions)
{
	static const char *const clients[] = {"RFB 003.005\n", "RFB 004.000\n",
	    "RFB 003.08\n\n", "RFB 003.008\r", "rfb 003.008\n", "RFB 0x3.008\n",
	    "RFB 003,008\n", "ID:1234567890"};
	static uint8_t out[BUF_MAX];
	size_t i, n;

	for (i = 0; i < sizeof clients / sizeof clients[0]; i++) {
		talk_reset();
		SERVER("RFB 003.008\n");
		say(0, clients[i], 12, 0);
		check_talk("the client's ProtocolVersion is not", out, &n);
		ck_assert_uint_le(n, 11);
	}
	/* Above the server's: the server would decide how to read it. */
	talk_reset();
	SERVER("RFB 003.007\n");
	DROP("RFB 003.008\n");
	check_talk("above the server's", out, &n);
	talk_reset();
	SERVER("RFB 000.000\n"); /* a repeater */
	DROP("RFB 003.003\n");
	check_talk("above the server's", out, &n);
	talk_reset();
	SERVER("RFB 003.00\n\n");
	check_talk("the server's ProtocolVersion is malformed", out, &n);
}
END_TEST

START_TEST(test_security_types)
{
	static uint8_t out[BUF_MAX];
	size_t n;

	/* Not offered. */
	talk_reset();
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.008\n");
	SERVER("\x01\x02");
	DROP("\x01");
	check_talk("not offered", out, &n);
	/* Offered, but one whose bytes the filter does not know. */
	talk_reset();
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.008\n");
	SERVER("\x02\x13\x01");
	DROP("\x13");
	check_talk("security type 19 is not one", out, &n);
	talk_reset();
	SERVER("RFB 003.003\n");
	CLIENT("RFB 003.003\n");
	SERVER("\0\0\0\x10");
	check_talk("security type 16 is not one", out, &n);
}
END_TEST

/* A step taken before what it depends on was seen. */
START_TEST(test_out_of_turn)
{
	static uint8_t out[BUF_MAX];
	size_t n;

	talk_reset();
	DROP("RFB 003.008\n");
	check_talk("client spoke out of turn", out, &n);
	ck_assert_uint_eq(n, 0);
	/* The choice before the list. */
	talk_reset();
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.008\n");
	DROP("\x01");
	check_talk("client spoke out of turn", out, &n);
	/* 3.3: ClientInit before the server named the type, pipelined. */
	talk_reset();
	SERVER("RFB 003.003\n");
	CLIENT("RFB 003.003\n");
	DROP("\x01\x04\x01\0\0\0\0\xff\x0d");
	check_talk("client spoke out of turn", out, &n);
	/* ClientInit and a key before the SecurityResult. */
	talk_reset();
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.008\n");
	SERVER("\x01\x01");
	CLIENT("\x01");
	DROP("\x01\x04\x01\0\0\0\0\xff\x0d");
	check_talk("client spoke out of turn", out, &n);
	/* The response before the challenge. */
	talk_reset();
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.008\n");
	SERVER("\x01\x02");
	CLIENT("\x02");
	DROP("0123456789abcdef");
	check_talk("client spoke out of turn", out, &n);
	/* The server's security before the client's version. */
	talk_reset();
	SERVER("RFB 003.008\n"
	       "\x01\x01");
	check_talk("server spoke out of turn", out, &n);
	/* The server's bytes while it waits for the choice. */
	talk_reset();
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.008\n");
	SERVER("\x01\x01\0\0\0\0");
	check_talk("server spoke out of turn", out, &n);
}
END_TEST

/* Refused by the server, a client has nothing more to say. */
START_TEST(test_server_refused)
{
	static uint8_t out[BUF_MAX];
	size_t n;

	talk_reset();
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.008\n");
	SERVER("\0\0\0\0\x05"
	       "nope!");
	DROP("\x01");
	check_talk("server refused", out, &n);
	talk_reset();
	SERVER("RFB 003.008\n");
	CLIENT("RFB 003.008\n");
	SERVER("\x01\x02");
	CLIENT("\x02");
	SERVER("0123456789abcdef");
	CLIENT("fedcba9876543210");
	SERVER("\0\0\0\x01\0\0\0\x04"
	       "auth");
	DROP("\x01\x03\x01\0\0\0\0\0\x10\0\x10");
	check_talk("server refused", out, &n);
	talk_reset();
	SERVER("RFB 003.003\n");
	CLIENT("RFB 003.003\n");
	SERVER("\0\0\0\0\0\0\0\x02no");
	DROP("\x01");
	check_talk("server refused", out, &n);
}
END_TEST

/* What the server says after the handshake is not read: a
 * FramebufferUpdate that would read as anything does not matter. */
START_TEST(test_server_after_handshake)
{
	static uint8_t out[BUF_MAX];
	size_t n;

	talk_reset();
	hello38();
	SERVER("\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff");
	messages();
	SERVER("\x01\x01\x01\x01\x01");
	messages();
	check_talk(NULL, out, &n);
}
END_TEST

/* Once closed, nothing more passes. */
START_TEST(test_closed_stays_closed)
{
	static uint8_t out[BUF_MAX];
	struct gw_rfbview v;
	size_t n = 0;
	const char *why;

	gw_rfbview_init(&v);
	feed_server(&v, (const uint8_t *)"RFB 003.008\n", 12);
	feed_client(&v, (const uint8_t *)"RFB 003.009\n", 12, 0, out, &n);
	why = gw_rfbview_error(&v);
	ck_assert_ptr_nonnull(why);
	ck_assert_uint_eq(n, 11);
	feed_client(
	    &v, (const uint8_t *)"\x03\0\0\0\0\0\0\x01\0\x01", 10, 0, out, &n);
	feed_server(&v, (const uint8_t *)"\x01\x01", 2);
	ck_assert_uint_eq(n, 11);
	ck_assert_str_eq(gw_rfbview_error(&v), why);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("gw_rfbview");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_38_none);
	tcase_add_test(tc, test_37_none);
	tcase_add_test(tc, test_33_none);
	tcase_add_test(tc, test_vncauth);
	tcase_add_test(tc, test_long_cut_text);
	tcase_add_test(tc, test_unknown_types);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_limits_edge);
	tcase_add_test(tc, test_bad_versions);
	tcase_add_test(tc, test_security_types);
	tcase_add_test(tc, test_out_of_turn);
	tcase_add_test(tc, test_server_refused);
	tcase_add_test(tc, test_server_after_handshake);
	tcase_add_test(tc, test_closed_stays_closed);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
