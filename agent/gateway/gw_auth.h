/* gw_auth: whether a request carries a credential that opens its door,
 * one rule for every door of the gateway (/v1, /novnc/, /v1/cdp and the
 * TCP DevTools relay). An Authorization header, when there is one, is
 * the credential and must be "Bearer CREDENTIAL"; where a browser comes,
 * which cannot put headers on its WebSocket, the GW_AUTH_COOKIE cookie
 * counts when there is no such header. What is presented is found here,
 * purely; whether it opens the door only berthd says (gw_check.h): the
 * gateway holds no credential. */
#ifndef BERTH_GW_AUTH_H
#define BERTH_GW_AUTH_H

#include <stddef.h>

/* The cookie the noVNC page carries the token in. */
#define GW_AUTH_COOKIE "berth_token"
/* The reason of a request berthd could not judge: the client gets a 503,
 * not a 401. */
#define GW_AUTH_UNAVAILABLE "unavailable"

/*
 * The credential presented: 0 with *cred and *len pointing into authz or
 * jar, or -1 with *reason "missing" or "malformed". authz: the
 * Authorization header's value, NULL if there is none; jar: the Cookie
 * header's value, NULL if there is none or cookies do not count here.
 */
int gw_auth_presented(const char *authz, size_t alen, const char *jar,
    size_t jlen, const char **cred, size_t *len, const char **reason);

/* Strips the blanks around *p (len bytes); -1 if nothing is left. */
int gw_auth_trim(const char **p, size_t *len);

#endif
