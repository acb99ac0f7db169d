/* gw_preview: the preview proxy. A listener on --preview-listen (an lws
 * vhost of raw sockets of its own) whose clients reach, under a
 * preview:PORT or runtime:NAME grant, the app on 127.0.0.1:PORT: each
 * request head is routed and checked, its credentials written out of it
 * (gw_preview_http.c), and the rest relayed as bytes. */
#ifndef BERTH_GW_PREVIEW_H
#define BERTH_GW_PREVIEW_H

/* Opens the proxy's listening socket if gateway.preview_listen is set;
 * fatal if it cannot. Call after the gateway's context exists. */
void gw_preview_listen(void);

#endif
