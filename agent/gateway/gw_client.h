/* gw_client: one authenticated WebSocket client (subprotocol berth.v1)
 * and its relay to berthd over its own upstream connection: whole
 * messages in, checked and forwarded; berthd's messages out through a
 * bounded queue that drops the client, never stalls berthd. */
#ifndef BERTH_GW_CLIENT_H
#define BERTH_GW_CLIENT_H

#include <libwebsockets.h>
#include <stddef.h>
#include <stdint.h>

#include "backoff.h"
#include "gateway.h"
#include "gw_queue.h"

struct gw_upstream;

/* The longest close reason RFC 6455 lets a close frame carry, and a NUL. */
#define GW_CLIENT_REASON_MAX 124

/*
 * lws allocates this as the WebSocket connection's user data and frees it
 * after LWS_CALLBACK_CLOSED; what it points to (queue, rx buffer) is
 * freed in that callback.
 */
struct gw_client {
	struct lws *wsi;
	struct gw_upstream *up; /* borrowed; NULL once berthd's side went */
	struct gw_queue out;    /* berthd's messages waiting for the client */
	unsigned char *rx;      /* the message being reassembled */
	size_t rxlen;
	size_t rxcap;
	int in_message; /* fragments of one message are arriving */
	int rx_paused;  /* reading stopped while berthd catches up */
	/* berthd's side is not read while the client catches up; past
	 * sul_stall without a byte taken, the client is dropped (4008). */
	int up_paused;
	lws_sorted_usec_list_t sul_stall;
	int counted; /* counted in connections_active */
	/* While berthd's backlog is full: the next try to connect the
	 * upstream, and the last moment to. */
	lws_sorted_usec_list_t sul_connect;
	struct backoff connect_backoff;
	lws_usec_t connect_deadline;
	char *cred;       /* the credential for the delayed attach; wiped */
	const char *door; /* GW_CHECK_V1, or GW_CHECK_PTY for /v1/pty/ID */
	/* Requests forwarded to berthd whose answers have not yet been
	 * written to the client; at most PROTO_MAX_IN_FLIGHT. */
	size_t in_flight;
	/* A pending close: its code and reason, and whether it waits for
	 * the queue to drain first. */
	int close_code;
	char close_reason[GW_CLIENT_REASON_MAX];
	int close_now;
	int close_begun; /* lws is sending the close frame, then awaits the
	                    client's: a second -1 would cut that short */
	char peer[GATEWAY_PEER_MAX];
};

int gw_client_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len);
/* One message from berthd for this client. */
void gw_client_deliver(struct gw_client *c, const void *msg, size_t len);
/* berthd's side went away (or refused the attach): close with 1011. */
void gw_client_upstream_gone(struct gw_client *c);
/* The upstream drained: read from the client again. */
void gw_client_resume(struct gw_client *c);

#endif
