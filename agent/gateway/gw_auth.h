/* gw_auth: the credential a request presents, one rule for every door of
 * the gateway (/v1, /novnc/, /v1/cdp and the TCP DevTools relay): an
 * Authorization header "Bearer CREDENTIAL". No cookie carries a
 * credential: a browser, which cannot put headers on its WebSocket, gets
 * a session ticket for noVNC's doors instead (gw_ticket.h). What is
 * presented is found here, purely; whether it opens the door only berthd
 * says (gw_check.h): the gateway holds no credential. */
#ifndef BERTH_GW_AUTH_H
#define BERTH_GW_AUTH_H

#include <stddef.h>

/* The reason of a request berthd could not judge: the client gets a 503,
 * not a 401. */
#define GW_AUTH_UNAVAILABLE "unavailable"

/*
 * The credential presented: 0 with *cred and *len pointing into authz,
 * or -1 with *reason "missing" or "malformed". authz: the Authorization
 * header's value, NULL if there is none.
 */
int gw_auth_presented(const char *authz, size_t alen, const char **cred,
    size_t *len, const char **reason);

/* Strips the blanks around *p (len bytes); -1 if nothing is left. */
int gw_auth_trim(const char **p, size_t *len);

#endif
