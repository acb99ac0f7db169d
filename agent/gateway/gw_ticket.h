/* gw_ticket: noVNC's session tickets. /novnc/?token= exchanges the token
 * for a random ticket that the browser keeps as the GW_TICKET_COOKIE
 * cookie (Path=/novnc/), so that the cookie never holds the token, which
 * a browser would send to every port of the host. Tickets live in the
 * gateway's memory only: a restart ends every session. */
#ifndef BERTH_GW_TICKET_H
#define BERTH_GW_TICKET_H

#include <libwebsockets.h>
#include <stddef.h>

/* The cookie the noVNC page carries its ticket in. */
#define GW_TICKET_COOKIE "berth_novnc"
/* A ticket is this many random bytes, in hex in the cookie. */
#define GW_TICKET_BYTES 32
#define GW_TICKET_HEX (2 * GW_TICKET_BYTES)
/* How long a ticket counts; the cookie says as much in Max-Age. */
#define GW_TICKET_TTL_S (12 * 60 * 60)
/* Tickets held at once; minting one more forgets the oldest. */
#define GW_TICKET_MAX 64

/* Mints a ticket valid from now until now + GW_TICKET_TTL_S and writes
 * its Set-Cookie value into out (at least GW_TICKET_SET_COOKIE_MAX). */
#define GW_TICKET_SET_COOKIE_MAX 160
void gw_ticket_mint(lws_usec_t now, char *out, size_t size);
/* Whether the Cookie header's value jar[0..len) holds a ticket that is
 * known and not expired at now. NULL if it does, else the reason a
 * refusal is journaled with: "missing" (no such cookie) or "invalid". */
const char *gw_ticket_check(const char *jar, size_t len, lws_usec_t now);
/* Whether the Origin header's value origin[0..olen) is the gateway's own
 * as the Host header's value host[0..hlen) names it: "http://" or
 * "https://" and then host, case aside. A browser sends the cookie with a
 * WebSocket any page opens, so an upgrade the ticket authenticates must
 * come from a page the gateway served; https counts too, for a gateway
 * behind a proxy that terminates TLS on the same authority. */
int gw_ticket_origin_ok(
    const char *origin, size_t olen, const char *host, size_t hlen);

#endif
