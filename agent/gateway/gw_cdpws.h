/* gw_cdpws: the CDP WebSocket relay. A WebSocket on /v1/cdp (the browser
 * target, whose path Chromium's /json/version names) or on
 * /v1/cdp/devtools/... is carried to an lws WebSocket client of
 * Chromium's DevTools at gateway.cdp: text and binary messages relayed
 * fragment by fragment in order, close codes passed on both ways, flow
 * control both ways. */
#ifndef BERTH_GW_CDPWS_H
#define BERTH_GW_CDPWS_H

#include <libwebsockets.h>
#include <stddef.h>

#include "gw_check.h"

/* One side is read no more while this much waits for the other, and
 * again once it has drained to the low mark. */
#define GW_CDPWS_HIGH_WATER (1024u * 1024)
#define GW_CDPWS_LOW_WATER (256u * 1024)
/* The longest DevTools path relayed. */
#define GW_CDPWS_PATH_MAX 256

/* Whether path is a DevTools target path: /devtools/ and then letters,
 * digits and "/._-", no "..", at most GW_CDPWS_PATH_MAX bytes. */
int gw_cdpws_path_ok(const char *path);
/* A WebSocket on /v1/cdp was accepted for who (the master token's
 * answer, or a cdp grant's); rest is what followed /v1/cdp ("" for the
 * browser target). Connects to Chromium. From then on the connection's
 * opaque user data is the relay's. */
void gw_cdpws_open(
    struct lws *wsi, const char *rest, const struct gw_check_answer *who);
/* The client WebSocket's later events, from gw_http_relay_cb. */
int gw_cdpws_ws_cb(
    struct lws *wsi, enum lws_callback_reasons reason, void *in, size_t len);
/* The events of the connections to Chromium (protocol "berth-cdp"): the
 * fetch of /json/version, then the WebSocket client. */
int gw_cdpws_chrome_cb(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len);

#endif
