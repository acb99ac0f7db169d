/* fuzz_gw_ticket: libFuzzer target for the reading of noVNC's session
 * ticket cookie and of the Origin an upgrade it authenticates comes from
 * (gw_ticket.c). The first byte picks which. A Cookie header passes only
 * if it holds the live ticket, and a ticket cookie put first makes any
 * header pass; an Origin passes exactly when it is "http://" or
 * "https://" and the Host, ASCII case aside. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "gw_ticket.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NOW ((lws_usec_t)1000 * LWS_USEC_PER_SEC)
#define FUZZ_JAR_MAX 8192

/* The one live ticket, minted at the first input. */
static char fuzz_hex[GW_TICKET_HEX + 1];

static void
fuzz_mint(void)
{
	static const struct gw_check_answer master;
	char cookie[GW_TICKET_SET_COOKIE_MAX];

	if (fuzz_hex[0] != '\0')
		return;
	gw_ticket_mint(FUZZ_NOW, &master, 0, cookie, sizeof cookie);
	memcpy(fuzz_hex, cookie + strlen(GW_TICKET_COOKIE "="), GW_TICKET_HEX);
}

/* The verdict on a copy of exactly len bytes, so that a read past the
 * end is caught; one of the reasons gw_ticket.h names. */
static const char *
fuzz_check(const char *jar, size_t len, lws_usec_t now)
{
	char *copy = malloc(len > 0 ? len : 1);
	const char *r;

	memcpy(copy, jar, len);
	r = gw_ticket_check(copy, len, now, NULL);
	free(copy);
	if (r != NULL && strcmp(r, "missing") != 0 && strcmp(r, "invalid") != 0)
		abort();
	return r;
}

static void
fuzz_cookie(const char *p, size_t n)
{
	static const char first[] = GW_TICKET_COOKIE "=";
	char jar[sizeof first + GW_TICKET_HEX + 2 + FUZZ_JAR_MAX];
	size_t fl = sizeof first - 1, m;
	const char *r;

	if (n > FUZZ_JAR_MAX)
		n = FUZZ_JAR_MAX;
	r = fuzz_check(p, n, FUZZ_NOW);
	if (r == NULL && memmem(p, n, fuzz_hex, GW_TICKET_HEX) == NULL)
		abort();
	/* Expired, nothing passes. */
	if (fuzz_check(p, n,
	        FUZZ_NOW + (lws_usec_t)GW_TICKET_TTL_S * LWS_USEC_PER_SEC) ==
	    NULL)
		abort();
	memcpy(jar, first, fl);
	memcpy(jar + fl, fuzz_hex, GW_TICKET_HEX);
	m = fl + GW_TICKET_HEX;
	jar[m++] = ';';
	memcpy(jar + m, p, n);
	if (fuzz_check(jar, m + n, FUZZ_NOW) != NULL)
		abort();
}

/* Whether a[0..n) and b[0..n) are equal, ASCII case aside. */
static int
fuzz_same(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (tolower((unsigned char)a[i]) !=
		    tolower((unsigned char)b[i]))
			return 0;
	return 1;
}

static int
fuzz_is(const char *o, size_t ol, const char *scheme, const char *h, size_t hl)
{
	size_t sl = strlen(scheme);

	return hl > 0 && ol == sl + hl && fuzz_same(o, scheme, sl) &&
	    fuzz_same(o + sl, h, hl);
}

/* p[0..n) is an Origin, then a Host after the first byte 0x0a. */
static void
fuzz_origin(const char *p, size_t n)
{
	const char *nl = memchr(p, '\n', n);
	size_t ol = nl != NULL ? (size_t)(nl - p) : n;
	size_t hl = nl != NULL ? n - ol - 1 : 0;
	char *o = malloc(ol > 0 ? ol : 1), *h = malloc(hl > 0 ? hl : 1);
	char *own = malloc(8 + hl);
	int ok, want;

	memcpy(o, p, ol);
	memcpy(h, p + ol + (nl != NULL), hl);
	ok = gw_ticket_origin_ok(o, ol, h, hl);
	want = fuzz_is(o, ol, "http://", h, hl) ||
	    fuzz_is(o, ol, "https://", h, hl);
	if (ok != want)
		abort();
	/* The host's own origin always passes, in either case. */
	memcpy(own, "HTTPS://", 8);
	memcpy(own + 8, h, hl);
	if (hl > 0 && !gw_ticket_origin_ok(own, 8 + hl, h, hl))
		abort();
	free(own);
	free(h);
	free(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	fuzz_mint();
	if (data[0] & 1)
		fuzz_origin((const char *)data + 1, size - 1);
	else
		fuzz_cookie((const char *)data + 1, size - 1);
	return 0;
}
