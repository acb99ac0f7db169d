/* test_gw_ticket: unit tests of noVNC's session tickets (gw_ticket.c):
 * what a minted ticket's cookie says, which Cookie headers carry a ticket
 * that counts, for how long, whom it was minted for (a grant's ticket
 * lasts no longer than the grant, and its revocation ends it), and which
 * Origin counts as the gateway's own for an upgrade the ticket
 * authenticates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_ticket.h"
#include "tap.h"

#define NOW ((lws_usec_t)1000 * LWS_USEC_PER_SEC)
#define TTL ((lws_usec_t)GW_TICKET_TTL_S * LWS_USEC_PER_SEC)

/* The master token's answer: no grant. */
static const struct gw_check_answer master;

/* Mints a ticket at now for who, bounded by until; its hex into hex
 * (GW_TICKET_HEX + 1). */
static void
mint_for(lws_usec_t now, const struct gw_check_answer *who, lws_usec_t until,
    char *hex)
{
	char cookie[GW_TICKET_SET_COOKIE_MAX];
	size_t nl = strlen(GW_TICKET_COOKIE "=");

	gw_ticket_mint(now, who, until, cookie, sizeof cookie);
	ck_assert_int_eq(strncmp(cookie, GW_TICKET_COOKIE "=", nl), 0);
	memcpy(hex, cookie + nl, GW_TICKET_HEX);
	hex[GW_TICKET_HEX] = '\0';
}

/* Mints a ticket at now for the master token. */
static void
mint(lws_usec_t now, char *hex)
{
	mint_for(now, &master, 0, hex);
}

/* gw_ticket_check of a copy of exactly the jar's bytes, so that a read
 * past its end is caught. */
static const char *
check_len(const char *jar, size_t len, lws_usec_t now)
{
	char *copy = malloc(len > 0 ? len : 1);
	const char *r;

	memcpy(copy, jar, len);
	r = gw_ticket_check(copy, len, now, NULL);
	free(copy);
	return r;
}

static const char *
check(const char *jar, lws_usec_t now)
{
	return check_len(jar, strlen(jar), now);
}

/* The verdict on a jar made of fmt with its one "%s" replaced by the
 * ticket's hex. */
static const char *
check_fmt(const char *fmt, const char *hex, lws_usec_t now)
{
	const char *at = strstr(fmt, "%s");
	char jar[512];

	ck_assert_ptr_nonnull(at);
	snprintf(
	    jar, sizeof jar, "%.*s%s%s", (int)(at - fmt), fmt, hex, at + 2);
	return check(jar, now);
}

#define ck_assert_reason(got, want)                                            \
	do {                                                                   \
		const char *got_ = (got), *want_ = (want);                     \
		if (want_ == NULL)                                             \
			ck_assert_msg(got_ == NULL, "refused: %s", got_);      \
		else                                                           \
			ck_assert_msg(got_ != NULL && !strcmp(got_, want_),    \
			    "%s, not %s", got_ ? got_ : "passed", want_);      \
	} while (0)

START_TEST(test_mint)
{
	char cookie[GW_TICKET_SET_COOKIE_MAX], a[GW_TICKET_HEX + 1],
	    b[GW_TICKET_HEX + 1], want[GW_TICKET_SET_COOKIE_MAX];
	size_t i;

	gw_ticket_mint(NOW, &master, 0, cookie, sizeof cookie);
	memcpy(a, cookie + strlen(GW_TICKET_COOKIE "="), GW_TICKET_HEX);
	a[GW_TICKET_HEX] = '\0';
	for (i = 0; i < GW_TICKET_HEX; i++)
		ck_assert_ptr_nonnull(strchr("0123456789abcdef", a[i]));
	snprintf(want, sizeof want,
	    GW_TICKET_COOKIE "=%s; Path=/novnc/; Max-Age=%d; HttpOnly; "
	                     "SameSite=Strict",
	    a, GW_TICKET_TTL_S);
	ck_assert_str_eq(cookie, want);
	mint(NOW, b);
	ck_assert_str_ne(a, b);
	ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", a, NOW), NULL);
	ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", b, NOW), NULL);
}
END_TEST

START_TEST(test_expiry)
{
	char hex[GW_TICKET_HEX + 1];

	mint(NOW, hex);
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex, NOW + TTL - 1), NULL);
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex, NOW + TTL), "invalid");
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex, NOW + 2 * TTL), "invalid");
}
END_TEST

START_TEST(test_unknown_and_short)
{
	char hex[GW_TICKET_HEX + 1], other[GW_TICKET_HEX + 1];

	mint(NOW, hex);
	memcpy(other, hex, sizeof other);
	other[GW_TICKET_HEX - 1] = other[GW_TICKET_HEX - 1] == '0' ? '1' : '0';
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", other, NOW), "invalid");
	other[0] = other[0] == 'a' ? 'b' : 'a';
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", other, NOW), "invalid");
	/* Upper case is another ticket: the hex minted is lower case. */
	ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s",
	                     "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"
	                     "0123456789ABCDEF",
	                     NOW),
	    "invalid");
	hex[GW_TICKET_HEX - 1] = '\0';
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex, NOW), "invalid");
	ck_assert_reason(check(GW_TICKET_COOKIE "=", NOW), "invalid");
	ck_assert_reason(check(GW_TICKET_COOKIE "=x", NOW), "invalid");
}
END_TEST

START_TEST(test_missing)
{
	ck_assert_reason(gw_ticket_check(NULL, 0, NOW, NULL), "missing");
	ck_assert_reason(check("", NOW), "missing");
	ck_assert_reason(check(";;  ; \t", NOW), "missing");
	ck_assert_reason(check("a=1; b=2", NOW), "missing");
	ck_assert_reason(check(GW_TICKET_COOKIE, NOW), "missing");
}
END_TEST

START_TEST(test_several_cookies)
{
	char hex[GW_TICKET_HEX + 1];

	mint(NOW, hex);
	ck_assert_reason(
	    check_fmt("a=1; " GW_TICKET_COOKIE "=%s; b=2", hex, NOW), NULL);
	ck_assert_reason(
	    check_fmt("a=1;" GW_TICKET_COOKIE "=%s", hex, NOW), NULL);
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s;berth_token=x", hex, NOW), NULL);
	/* A value that holds the name is no cookie of the name. */
	ck_assert_reason(
	    check_fmt("a=" GW_TICKET_COOKIE "=%s", hex, NOW), "missing");
	/* The first cookie of the name is the one that counts: one
	 * comparison per request, whatever the jar holds. */
	ck_assert_reason(
	    check_fmt(
	        GW_TICKET_COOKIE "=bad; " GW_TICKET_COOKIE "=%s", hex, NOW),
	    "invalid");
}
END_TEST

START_TEST(test_whitespace)
{
	char hex[GW_TICKET_HEX + 1];

	mint(NOW, hex);
	ck_assert_reason(
	    check_fmt("  \t" GW_TICKET_COOKIE "=%s \t ; a=1", hex, NOW), NULL);
	ck_assert_reason(
	    check_fmt("a=1 ;\t" GW_TICKET_COOKIE "=%s\t", hex, NOW), NULL);
	/* Whitespace inside the pair is no part of the rule. */
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "= %s", hex, NOW), "invalid");
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE " =%s", hex, NOW), "missing");
}
END_TEST

START_TEST(test_near_names)
{
	static const char *const fmts[] = {"x" GW_TICKET_COOKIE "=%s",
	    GW_TICKET_COOKIE "x=%s", "berth_novn=%s", "BERTH_NOVNC=%s",
	    "berth-novnc=%s", "a=1," GW_TICKET_COOKIE "=%s"};
	char hex[GW_TICKET_HEX + 1];
	size_t i;

	mint(NOW, hex);
	for (i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
		ck_assert_reason(check_fmt(fmts[i], hex, NOW), "missing");
}
END_TEST

START_TEST(test_too_long)
{
	char hex[GW_TICKET_HEX + 1], jar[4096];

	mint(NOW, hex);
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s0", hex, NOW), "invalid");
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s x", hex, NOW), "invalid");
	snprintf(jar, sizeof jar, GW_TICKET_COOKIE "=%s%s", hex, hex);
	ck_assert_reason(check(jar, NOW), "invalid");
	/* A long jar, the ticket at its end, and the same cut short of the
	 * ticket's last byte. */
	memset(jar, 'a', sizeof jar);
	jar[1] = '=';
	snprintf(jar + sizeof jar - GW_TICKET_HEX - 20, GW_TICKET_HEX + 20,
	    "; " GW_TICKET_COOKIE "=%s", hex);
	ck_assert_reason(check_len(jar, strlen(jar), NOW), NULL);
	ck_assert_reason(check_len(jar, strlen(jar) - 1, NOW), "invalid");
}
END_TEST

/* The table holds GW_TICKET_MAX; one more forgets the oldest. */
START_TEST(test_table_full)
{
	char hex[GW_TICKET_MAX + 1][GW_TICKET_HEX + 1];
	size_t i;

	for (i = 0; i <= GW_TICKET_MAX; i++)
		mint(NOW + (lws_usec_t)i, hex[i]);
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex[0], NOW + GW_TICKET_MAX),
	    "invalid");
	for (i = 1; i <= GW_TICKET_MAX; i++)
		ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", hex[i],
		                     NOW + GW_TICKET_MAX),
		    NULL);
}
END_TEST

static void
view_grant(struct gw_check_answer *who, const char *id)
{
	memset(who, 0, sizeof *who);
	snprintf(who->grant, sizeof who->grant, "%s", id);
	snprintf(who->scope, sizeof who->scope, "desktop:view");
	who->expires_at_ms = 1700000000000;
}

/* A grant's ticket says whom it is for; the master token's says no
 * grant. */
START_TEST(test_grant_ticket)
{
	char hex[GW_TICKET_HEX + 1], other[GW_TICKET_HEX + 1], jar[128];
	struct gw_check_answer who, got;

	view_grant(&who, "g0123456789abcdef");
	mint_for(NOW, &who, NOW + 10 * LWS_USEC_PER_SEC, hex);
	snprintf(jar, sizeof jar, GW_TICKET_COOKIE "=%s", hex);
	ck_assert_reason(gw_ticket_check(jar, strlen(jar), NOW, &got), NULL);
	ck_assert_str_eq(got.grant, "g0123456789abcdef");
	ck_assert_uint_eq(got.expires_at_ms, 1700000000000);
	ck_assert(!got.control);
	who.control = true;
	mint_for(NOW, &who, NOW + 10 * LWS_USEC_PER_SEC, other);
	snprintf(jar, sizeof jar, GW_TICKET_COOKIE "=%s", other);
	ck_assert_reason(gw_ticket_check(jar, strlen(jar), NOW, &got), NULL);
	ck_assert(got.control);
	mint(NOW, other);
	snprintf(jar, sizeof jar, GW_TICKET_COOKIE "=%s", other);
	ck_assert_reason(gw_ticket_check(jar, strlen(jar), NOW, &got), NULL);
	ck_assert_str_eq(got.grant, "");
	ck_assert(!got.control);
	/* Refused: nothing of another ticket is left in *who. */
	snprintf(jar, sizeof jar, GW_TICKET_COOKIE "=%s", hex);
	ck_assert_reason(
	    gw_ticket_check(jar, strlen(jar), NOW + TTL, &got), "invalid");
	ck_assert_str_eq(got.grant, "");
}
END_TEST

/* A grant's ticket ends with the grant, and says so in Max-Age. */
START_TEST(test_grant_expiry)
{
	char cookie[GW_TICKET_SET_COOKIE_MAX], hex[GW_TICKET_HEX + 1];
	struct gw_check_answer who;
	lws_usec_t until = NOW + 2 * LWS_USEC_PER_SEC + 1;

	view_grant(&who, "g0123456789abcdef");
	gw_ticket_mint(NOW, &who, until, cookie, sizeof cookie);
	ck_assert_ptr_nonnull(strstr(cookie, "; Max-Age=3;"));
	memcpy(hex, cookie + strlen(GW_TICKET_COOKIE "="), GW_TICKET_HEX);
	hex[GW_TICKET_HEX] = '\0';
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex, until - 1), NULL);
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex, until), "invalid");
	/* A grant that outlives the ticket's own span: the span counts. */
	mint_for(NOW, &who, NOW + 2 * TTL, hex);
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex, NOW + TTL - 1), NULL);
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex, NOW + TTL), "invalid");
	/* Already over: the ticket is dead at once. */
	mint_for(NOW, &who, NOW - 1, hex);
	ck_assert_reason(
	    check_fmt(GW_TICKET_COOKIE "=%s", hex, NOW + 1), "invalid");
}
END_TEST

/* Revoking a grant ends its tickets, and no other. */
START_TEST(test_grant_revoke)
{
	char a[GW_TICKET_HEX + 1], b[GW_TICKET_HEX + 1],
	    other[GW_TICKET_HEX + 1], own[GW_TICKET_HEX + 1];
	struct gw_check_answer who, who2;

	view_grant(&who, "g0123456789abcdef");
	view_grant(&who2, "gfedcba9876543210");
	mint_for(NOW, &who, NOW + TTL, a);
	mint_for(NOW, &who, NOW + TTL, b);
	mint_for(NOW, &who2, NOW + TTL, other);
	mint(NOW, own);
	gw_ticket_revoke("g0123456789abcdef");
	ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", a, NOW), "invalid");
	ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", b, NOW), "invalid");
	ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", other, NOW), NULL);
	ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", own, NOW), NULL);
	/* The master token's tickets are no grant's: "" revokes none. */
	gw_ticket_revoke("");
	ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", own, NOW), NULL);
}
END_TEST

/* A grant's holder minting without end pushes out its own tickets only:
 * the others' stay good. */
START_TEST(test_grant_bounded)
{
	char others[GW_TICKET_MAX / 2][GW_TICKET_HEX + 1];
	char mine[GW_TICKET_PER_GRANT + 1][GW_TICKET_HEX + 1];
	struct gw_check_answer who;
	size_t i;

	gw_ticket_revoke("g0123456789abcdef");
	for (i = 0; i < GW_TICKET_MAX / 2; i++)
		mint(NOW + (lws_usec_t)i, others[i]);
	view_grant(&who, "g0123456789abcdef");
	for (i = 0; i < 10 * GW_TICKET_MAX; i++)
		mint_for(NOW + 100 + (lws_usec_t)i, &who,
		    NOW + TTL + (lws_usec_t)i,
		    mine[i % (GW_TICKET_PER_GRANT + 1)]);
	for (i = 0; i < GW_TICKET_MAX / 2; i++)
		ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", others[i],
		                     NOW + 20 * GW_TICKET_MAX),
		    NULL);
	/* The grant's last GW_TICKET_PER_GRANT hold; the one before them
	 * was its own to forget. */
	for (i = 0; i < GW_TICKET_PER_GRANT + 1; i++)
		ck_assert_reason(check_fmt(GW_TICKET_COOKIE "=%s", mine[i],
		                     NOW + 20 * GW_TICKET_MAX),
		    i == (10 * GW_TICKET_MAX) % (GW_TICKET_PER_GRANT + 1)
		        ? "invalid"
		        : NULL);
}
END_TEST

static int
origin(const char *o, const char *host)
{
	return gw_ticket_origin_ok(o, strlen(o), host, strlen(host));
}

START_TEST(test_origin_own)
{
	ck_assert(origin("http://gw.example:8080", "gw.example:8080"));
	ck_assert(origin("https://gw.example:8080", "gw.example:8080"));
	ck_assert(origin("http://10.0.0.5:8080", "10.0.0.5:8080"));
	ck_assert(origin("http://[::1]:8080", "[::1]:8080"));
	ck_assert(origin("http://gw.example", "gw.example"));
	/* Scheme and host name are case-insensitive. */
	ck_assert(origin("HTTP://GW.Example:8080", "gw.example:8080"));
	ck_assert(origin("hTTpS://gw.example:8080", "GW.EXAMPLE:8080"));
}
END_TEST

START_TEST(test_origin_other)
{
	static const char host[] = "gw.example:8080";
	static const char *const others[] = {
	    "http://gw.example:8081", /* another port */
	    "http://gw.example",      /* the default port */
	    "http://gw.example:80",
	    "http://evil.example:8080", /* another host */
	    "http://xgw.example:8080", "http://gw.example:8080.evil.example",
	    "http://gw.example.evil:8080", "http://gw.example:8080@evil",
	    "http://gw.example:8080/", /* a path */
	    "http://gw.example:8080/novnc/",
	    "ws://gw.example:8080", /* scheme */
	    "wss://gw.example:8080", "file://gw.example:8080",
	    "httpx://gw.example:8080", "http:/gw.example:8080",
	    "//gw.example:8080", "gw.example:8080", "http://", "null", "",
	    " http://gw.example:8080", "http://gw.example:8080 ",
	    "http://gw.example:8080\r\n"};
	size_t i;

	for (i = 0; i < sizeof others / sizeof others[0]; i++)
		ck_assert_msg(
		    !origin(others[i], host), "passed: %s", others[i]);
}
END_TEST

START_TEST(test_origin_missing_and_garbage)
{
	ck_assert(!gw_ticket_origin_ok(NULL, 0, "gw:1", 4));
	ck_assert(!gw_ticket_origin_ok("http://gw:1", 11, NULL, 0));
	ck_assert(!origin("http://", ""));
	ck_assert(!origin("", ""));
	ck_assert(!origin("\xff\xfe\x01", "gw:1"));
	/* A NUL does not end the comparison. */
	ck_assert(!gw_ticket_origin_ok("http://a\0b", 10, "a\0c", 3));
	ck_assert(!gw_ticket_origin_ok("http\0//a", 8, "a", 1));
	ck_assert(gw_ticket_origin_ok("http://a\0b", 10, "a\0B", 3));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("gw_ticket");
	TCase *tc = tcase_create("gw_ticket");

	tcase_add_test(tc, test_mint);
	tcase_add_test(tc, test_expiry);
	tcase_add_test(tc, test_unknown_and_short);
	tcase_add_test(tc, test_missing);
	tcase_add_test(tc, test_several_cookies);
	tcase_add_test(tc, test_whitespace);
	tcase_add_test(tc, test_near_names);
	tcase_add_test(tc, test_too_long);
	tcase_add_test(tc, test_table_full);
	tcase_add_test(tc, test_grant_ticket);
	tcase_add_test(tc, test_grant_expiry);
	tcase_add_test(tc, test_grant_revoke);
	tcase_add_test(tc, test_grant_bounded);
	tcase_add_test(tc, test_origin_own);
	tcase_add_test(tc, test_origin_other);
	tcase_add_test(tc, test_origin_missing_and_garbage);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
