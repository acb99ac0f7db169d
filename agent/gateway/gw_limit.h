/* gw_limit: what one peer, or many slow ones, may hold of the gateway's
 * HTTP port. Every accepted connection is tracked until it is destroyed
 * or becomes a WebSocket (which passed the token check); one still
 * without a whole request head is "waiting". A head must be whole within
 * GW_LIMIT_HEAD_S of the connection's start (or of its last answer, for a
 * kept-alive one), else the connection is closed. When a peer holds
 * gateway.peer_max connections, or GW_LIMIT_WAITING_MAX connections are
 * waiting (fewer than lws's header pool, GW_LIMIT_HEADER_POOL, so that a
 * newcomer always finds a header table), the oldest waiting one (of that
 * peer, for the peer's cap) is closed to make room: a slowloris cannot
 * starve /healthz and /readyz. Only one that has waited GW_LIMIT_GRACE_MS
 * is: a burst of clients arrives faster than the loop reads their heads
 * (the ones beyond the header pool wait for a table), and none of them
 * must be closed for the others; a dribbled head is older than that. */
#ifndef BERTH_GW_LIMIT_H
#define BERTH_GW_LIMIT_H

#include <libwebsockets.h>

#define GW_LIMIT_HEAD_S 5
#define GW_LIMIT_HEADER_POOL 128
#define GW_LIMIT_WAITING_MAX 96
#define GW_LIMIT_GRACE_MS 1000
/* Default of --peer-max: connections one peer address may hold. */
#define GW_LIMIT_PEER_MAX_DEFAULT 256

/* A connection was accepted (LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED
 * on protocols[0]). */
void gw_limit_accepted(struct lws *wsi);
/* Its request head is whole: it is no longer waiting. */
void gw_limit_head_done(struct lws *wsi);
/* It answered and waits for the next request (keep-alive). */
void gw_limit_idle(struct lws *wsi);
/* It became a WebSocket, or is destroyed: it is no longer tracked. */
void gw_limit_forget(struct lws *wsi);

#endif
