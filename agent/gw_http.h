/* gw_http: the gateway's plain HTTP face and its door to the WebSocket:
 * the probes (/healthz, /readyz, /metrics), answered from cached state,
 * and the checks every upgrade passes before the 101 (path, subprotocol,
 * bearer token), refusing with 401/400/404 otherwise. */
#ifndef BERTH_GW_HTTP_H
#define BERTH_GW_HTTP_H

#include <libwebsockets.h>
#include <stddef.h>

int gw_http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len);
/* Whether presented[0..plen) is the token, in time that depends on plen
 * only: no early exit on a differing byte or a differing length. */
int gw_http_token_equal(
    const char *presented, size_t plen, const char *token, size_t tlen);

#endif
