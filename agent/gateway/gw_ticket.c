/* gw_ticket: noVNC's session tickets (see gw_ticket.h). Owns the table of
 * live tickets; a slot is reused once expired, or when the table is full
 * by the oldest. Tickets are compared in constant time. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "gw_ticket.h"
#include "rand.h"

struct gw_ticket {
	char hex[GW_TICKET_HEX];
	lws_usec_t expires; /* 0: the slot is free */
	/* Whom it was minted for: grant "" for the master token. */
	char grant[GW_CHECK_GRANT_MAX];
	uint64_t grant_expires_at_ms;
	bool control;
};

static struct gw_ticket gw_tickets[GW_TICKET_MAX];

/* The slot for a new ticket of grant: one of the grant's own once it
 * holds GW_TICKET_PER_GRANT (the one that expires first), so that no
 * grant's holder can push other viewers' tickets out; else a free or
 * expired slot, else the one that expires first. */
static struct gw_ticket *
gw_ticket_slot(lws_usec_t now, const char *grant)
{
	struct gw_ticket *oldest = &gw_tickets[0], *own = NULL, *t;
	size_t i, held = 0;

	for (i = 0; *grant != '\0' && i < GW_TICKET_MAX; i++) {
		t = &gw_tickets[i];
		if (t->expires > now && strcmp(t->grant, grant) == 0) {
			held++;
			if (own == NULL || t->expires < own->expires)
				own = t;
		}
	}
	if (held >= GW_TICKET_PER_GRANT)
		return own;
	for (i = 0; i < GW_TICKET_MAX; i++) {
		if (gw_tickets[i].expires <= now)
			return &gw_tickets[i];
		if (gw_tickets[i].expires < oldest->expires)
			oldest = &gw_tickets[i];
	}
	return oldest;
}

void
gw_ticket_mint(lws_usec_t now, const struct gw_check_answer *who,
    lws_usec_t until, char *out, size_t size)
{
	struct gw_ticket *t = gw_ticket_slot(now, who->grant);
	char hex[GW_TICKET_HEX + 1];
	lws_usec_t expires;

	expires = now + (lws_usec_t)GW_TICKET_TTL_S * LWS_USEC_PER_SEC;
	if (until != 0 && until < expires)
		expires = until;
	rand_hex(hex, GW_TICKET_BYTES);
	memcpy(t->hex, hex, GW_TICKET_HEX);
	/* One past now at least: 0 is a free slot. */
	t->expires = expires > now ? expires : now + 1;
	snprintf(t->grant, sizeof t->grant, "%s", who->grant);
	t->grant_expires_at_ms = who->expires_at_ms;
	t->control = who->control;
	snprintf(out, size,
	    GW_TICKET_COOKIE "=%s; Path=/novnc/; Max-Age=%lld; HttpOnly; "
	                     "SameSite=Strict",
	    hex,
	    (long long)((t->expires - now + LWS_USEC_PER_SEC - 1) /
	        LWS_USEC_PER_SEC));
	explicit_bzero(hex, sizeof hex);
}

void
gw_ticket_revoke(const char *grant)
{
	size_t i;

	/* The master token's tickets are no grant's. */
	if (*grant == '\0')
		return;
	for (i = 0; i < GW_TICKET_MAX; i++)
		if (gw_tickets[i].expires != 0 &&
		    strcmp(gw_tickets[i].grant, grant) == 0)
			explicit_bzero(&gw_tickets[i], sizeof gw_tickets[i]);
}

/* The value of the ticket cookie among the jar's "name=value" pairs; -1
 * if it is not there. */
static int
gw_ticket_cookie(const char *v, size_t n, const char **out, size_t *outlen)
{
	static const char name[] = GW_TICKET_COOKIE "=";
	size_t i = 0, a, nl = sizeof name - 1;

	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ';'))
			i++;
		a = i;
		while (i < n && v[i] != ';')
			i++;
		if (i - a < nl || memcmp(v + a, name, nl) != 0)
			continue;
		a += nl;
		while (i > a && (v[i - 1] == ' ' || v[i - 1] == '\t'))
			i--;
		*out = v + a;
		*outlen = i - a;
		return 0;
	}
	return -1;
}

/* Whether a[0..GW_TICKET_HEX) equals b, without an early exit. */
static int
gw_ticket_equal(const char *a, const char *b)
{
	volatile unsigned char diff = 0;
	size_t i;

	for (i = 0; i < GW_TICKET_HEX; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

/* Every slot is compared, so that the time taken does not tell how many
 * tickets a guess ran past. */
const char *
gw_ticket_check(
    const char *jar, size_t len, lws_usec_t now, struct gw_check_answer *who)
{
	const struct gw_ticket *found = NULL;
	const char *v;
	size_t vlen, i;

	if (who != NULL)
		memset(who, 0, sizeof *who);
	if (jar == NULL || gw_ticket_cookie(jar, len, &v, &vlen) < 0)
		return "missing";
	if (vlen != GW_TICKET_HEX)
		return "invalid";
	for (i = 0; i < GW_TICKET_MAX; i++)
		if (gw_ticket_equal(gw_tickets[i].hex, v) &&
		    gw_tickets[i].expires > now)
			found = &gw_tickets[i];
	if (found == NULL)
		return "invalid";
	if (who != NULL) {
		snprintf(who->grant, sizeof who->grant, "%s", found->grant);
		who->expires_at_ms = found->grant_expires_at_ms;
		who->control = found->control;
	}
	return NULL;
}

/* Whether a[0..n) and b[0..n) are the same bytes, ASCII case aside. Not
 * strncasecmp: a NUL in a header's value must not end the comparison. */
static int
gw_ticket_same_case_aside(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (tolower((unsigned char)a[i]) !=
		    tolower((unsigned char)b[i]))
			return 0;
	return 1;
}

/* Whether origin[0..olen) is scheme followed by host[0..hlen). */
static int
gw_ticket_origin_is(const char *origin, size_t olen, const char *scheme,
    const char *host, size_t hlen)
{
	size_t sl = strlen(scheme);

	return olen == sl + hlen &&
	    gw_ticket_same_case_aside(origin, scheme, sl) &&
	    gw_ticket_same_case_aside(origin + sl, host, hlen);
}

int
gw_ticket_origin_ok(
    const char *origin, size_t olen, const char *host, size_t hlen)
{
	if (origin == NULL || host == NULL || olen == 0 || hlen == 0)
		return 0;
	return gw_ticket_origin_is(origin, olen, "http://", host, hlen) ||
	    gw_ticket_origin_is(origin, olen, "https://", host, hlen);
}
