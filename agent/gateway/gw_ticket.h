/* gw_ticket: noVNC's session tickets. /novnc/?token= exchanges the token
 * (the master token, or a desktop grant's) for a random ticket that the
 * browser keeps as the GW_TICKET_COOKIE cookie (Path=/novnc/), so that
 * the cookie never holds the token, which a browser would send to every
 * port of the host. A ticket remembers the grant it was minted for, and
 * lasts no longer than the grant. Tickets live in the gateway's memory
 * only: a restart ends every session. */
#ifndef BERTH_GW_TICKET_H
#define BERTH_GW_TICKET_H

#include <libwebsockets.h>
#include <stddef.h>

#include "gw_check.h"

/* The cookie the noVNC page carries its ticket in. */
#define GW_TICKET_COOKIE "berth_novnc"
/* A ticket is this many random bytes, in hex in the cookie. */
#define GW_TICKET_BYTES 32
#define GW_TICKET_HEX (2 * GW_TICKET_BYTES)
/* How long a ticket counts; the cookie says as much in Max-Age. */
#define GW_TICKET_TTL_S (12 * 60 * 60)
/* Tickets held at once; minting one more forgets the oldest. A grant
 * holds at most GW_TICKET_PER_GRANT: its next forgets its own oldest. */
#define GW_TICKET_MAX 64
#define GW_TICKET_PER_GRANT 8

/*
 * Mints a ticket for whom berthd admitted (who: the master token's
 * answer, or a grant's), valid from now until now + GW_TICKET_TTL_S, or
 * until until if that is earlier (0: no such bound; a grant's expiry, on
 * the clock of now), and writes its Set-Cookie value into out (at least
 * GW_TICKET_SET_COOKIE_MAX), whose Max-Age says as much.
 */
#define GW_TICKET_SET_COOKIE_MAX 160
void gw_ticket_mint(lws_usec_t now, const struct gw_check_answer *who,
    lws_usec_t until, char *out, size_t size);
/* Whether the Cookie header's value jar[0..len) holds a ticket that is
 * known and not expired at now. NULL if it does, with whom it was minted
 * for in *who (grant, expires_at_ms and control; who may be NULL), else
 * the reason a refusal is journaled with: "missing" (no such cookie) or
 * "invalid". */
const char *gw_ticket_check(
    const char *jar, size_t len, lws_usec_t now, struct gw_check_answer *who);
/* The grant is revoked or expired: the tickets minted for it count no
 * more. */
void gw_ticket_revoke(const char *grant);
/* Whether the Origin header's value origin[0..olen) is the gateway's own
 * as the Host header's value host[0..hlen) names it: "http://" or
 * "https://" and then host, case aside. A browser sends the cookie with a
 * WebSocket any page opens, so an upgrade the ticket authenticates must
 * come from a page the gateway served; https counts too, for a gateway
 * behind a proxy that terminates TLS on the same authority. */
int gw_ticket_origin_ok(
    const char *origin, size_t olen, const char *host, size_t hlen);

#endif
