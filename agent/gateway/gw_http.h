/* gw_http: the gateway's plain HTTP face and its door to the WebSocket:
 * the probes (/healthz, /readyz, /metrics), answered from cached state;
 * the noVNC page's door, where the token may come as a cookie; and the
 * checks every upgrade passes before the 101 (path, subprotocol, token),
 * refusing with 401/400/404 otherwise. Relay WebSockets are then handed
 * to their relay by path. */
#ifndef BERTH_GW_HTTP_H
#define BERTH_GW_HTTP_H

#include <libwebsockets.h>
#include <stddef.h>

/* The desktop's paths: noVNC's page and its WebSocket, and the CDP
 * WebSocket relay (itself, or with /devtools/... after it). */
#define GW_HTTP_NOVNC_PATH "/novnc/"
#define GW_HTTP_NOVNC_WS_PATH "/novnc/websockify"
#define GW_HTTP_CDP_PATH "/v1/cdp"
/* One terminal session's door: /v1/pty/ID, the protocol limited to it. */
#define GW_HTTP_PTY_PATH "/v1/pty/"
#define GW_HTTP_PTY_ID_LEN 8
/* The longest request path looked at; longer ones are not found. */
#define GW_HTTP_PATH_MAX 1024

/*
 * Which relay a WebSocket belongs to. What a relay keeps as the
 * connection's opaque user data starts with this, so that
 * gw_http_relay_cb can hand each event to the right one.
 */
enum gw_http_relay {
	GW_HTTP_RELAY_NOVNC = 1,
	GW_HTTP_RELAY_CDP,
};

int gw_http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len);
/* The relay WebSockets' events: those of protocol "binary", and those
 * of protocols[0] for WebSockets that offered no subprotocol. */
int gw_http_relay_cb(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len);

/* Whether path is a terminal session's door (GW_HTTP_PTY_PATH and a
 * session's id). */
int gw_http_pty_path(const char *path);
/* The credential a terminal session's door presents: the bearer token of
 * the Authorization header, else ?token= (a browser's WebSocket can send
 * no header), into buf[size]: its length, or -1 if there is none that
 * fits. The caller wipes buf. */
int gw_http_pty_credential(struct lws *wsi, char *buf, size_t size);

#endif
