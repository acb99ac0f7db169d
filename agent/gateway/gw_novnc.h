/* gw_novnc: noVNC in the gateway, with no websockify process: its page
 * (static files from gateway.novnc_dir) and its WebSocket relay, which
 * carries the browser's binary messages to a TCP connection to the RFB
 * server (gateway.vnc), adopted into lws as a raw socket, and what the
 * server sends back as binary messages, with flow control both ways. */
#ifndef BERTH_GW_NOVNC_H
#define BERTH_GW_NOVNC_H

#include <libwebsockets.h>
#include <stddef.h>

#include "gw_check.h"

/* One side is read no more while this much waits for the other, and
 * again once it has drained to the low mark. */
#define GW_NOVNC_HIGH_WATER (1024u * 1024)
#define GW_NOVNC_LOW_WATER (256u * 1024)
/* The largest frame a browser may send. RFB clients send small messages
 * (a clipboard is the largest); a frame announcing more is an attack or
 * a bug, and the connection is closed. */
#define GW_NOVNC_FRAME_MAX (4u * 1024 * 1024)
/* How long the RFB server may take to accept the connection. */
#define GW_NOVNC_CONNECT_TIMEOUT_S 10

/* The largest file of the page served; noVNC's largest is ~100 KB. */
#define GW_NOVNC_FILE_MAX (1024u * 1024)

/* The file rel (a path under /novnc/) of gateway.novnc_dir: its bytes in
 * *body (the caller frees them) and its type. -1 if there is no such
 * regular file inside the directory, or it is over GW_NOVNC_FILE_MAX. */
int gw_novnc_file(const char *rel, char **body, size_t *len, const char **type);
/* A WebSocket on /novnc/websockify was accepted for who (the master
 * token's answer, or a desktop grant's): connects to the RFB server. A
 * grant without control gets a view-only relay, whose browser's bytes
 * pass gw_rfbview on their way. From then on the connection's opaque
 * user data is the relay's. */
void gw_novnc_open(struct lws *wsi, const struct gw_check_answer *who);
/* The WebSocket's later events, from gw_http_relay_cb. */
int gw_novnc_ws_cb(
    struct lws *wsi, enum lws_callback_reasons reason, void *in, size_t len);
/* The RFB server connection's events (protocol "berth-vnc"). */
int gw_novnc_vnc_cb(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len);

#endif
