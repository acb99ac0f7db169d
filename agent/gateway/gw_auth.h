/* gw_auth: whether a request carries the token, one rule for every door
 * of the gateway (/v1, /novnc/, /v1/cdp and the TCP DevTools relay). An
 * Authorization header, when there is one, is the credential and must be
 * "Bearer TOKEN"; where a browser comes, which cannot put headers on its
 * WebSocket, the GW_AUTH_COOKIE cookie counts when there is no such
 * header. Pure: it reads only the values it is given. */
#ifndef BERTH_GW_AUTH_H
#define BERTH_GW_AUTH_H

#include <stddef.h>

/* The cookie the noVNC page carries the token in. */
#define GW_AUTH_COOKIE "berth_token"

/*
 * authz: the Authorization header's value, NULL if there is none; jar:
 * the Cookie header's value, NULL if there is none or cookies do not
 * count here. NULL if the token is there, else the reason the refusal is
 * journaled with: "missing", "malformed" or "invalid" (never the token).
 */
const char *gw_auth_check(const char *authz, size_t alen, const char *jar,
    size_t jlen, const char *token, size_t tlen);
/* A token presented alone (len bytes at p, blanks around allowed), as in
 * /novnc/?token=: NULL if it is the token, else why not. */
const char *gw_auth_token(
    const char *p, size_t len, const char *token, size_t tlen);

#endif
