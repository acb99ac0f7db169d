/* gw_upstream: the gateway's Unix-socket connections to berthd, adopted
 * into lws as raw sockets so that they share the one service loop with
 * the WebSocket clients: one per client, plus the control connection,
 * which keeps the cached view of the checks and services that /readyz
 * answers from, and the liveness connection, whose pings alone say
 * whether berthd is up. */
#ifndef BERTH_GW_UPSTREAM_H
#define BERTH_GW_UPSTREAM_H

#include <libwebsockets.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gw_queue.h"

struct gw_client;

/* A client is read no more while this much waits for berthd, and again
 * once it has drained to the low mark. */
#define GW_UPSTREAM_HIGH_WATER (1024u * 1024)
#define GW_UPSTREAM_LOW_WATER (256u * 1024)

enum gw_upstream_kind {
	GW_UPSTREAM_CONTROL,
	GW_UPSTREAM_LIVENESS,
	GW_UPSTREAM_CLIENT,
};

/*
 * One connection to berthd. Allocated by gw_upstream_open, freed when lws
 * closes its wsi. client is borrowed: whichever of the two goes first
 * clears the other's pointer to it.
 */
struct gw_upstream {
	enum gw_upstream_kind kind;
	struct lws *wsi;
	struct gw_client *client; /* GW_UPSTREAM_CLIENT, until detached */
	struct gw_queue out;      /* framed messages for berthd */
	size_t outoff;            /* bytes of the first already sent */
	uint8_t *in;              /* received bytes not yet a whole frame */
	size_t inlen;
	size_t incap;
	int attach_pending; /* the first response is gateway.attach's */
};

/* Connects to berthd and adopts the socket. NULL with *cause if berthd
 * cannot be reached; errno is then EAGAIN if its backlog is full, which
 * may clear at once. */
struct gw_upstream *gw_upstream_open(enum gw_upstream_kind kind, char **cause);
/* Queues one message (framed here) for berthd. -1 if the queue is full. */
int gw_upstream_send(struct gw_upstream *up, const void *msg, size_t len);
/* The longest message gw_upstream_send_secret takes. */
#define GW_UPSTREAM_SECRET_MAX 8192
/* The same for a message that holds a credential: written to the socket
 * at once, from a buffer wiped after, unless something is queued before
 * it. -1 if it is too long, or went out in part (the connection is then
 * useless: close it). */
int gw_upstream_send_secret(
    struct gw_upstream *up, const void *msg, size_t len);
/* Detaches the client and closes the connection at the next turn of the
 * loop; up is freed then, so the caller must forget it now. */
void gw_upstream_close(struct gw_upstream *up);
/* Stops (on) or resumes reading berthd's messages on up. */
void gw_upstream_pause(struct gw_upstream *up, int on);
int gw_upstream_cb(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len);

/* The control and liveness connections: connect now and keep
 * reconnecting. */
void gw_upstream_control_start(void);
void gw_upstream_control_stop(void);
/* Whether berthd answers on the liveness connection: connected, hello
 * done, and a ping answered lately. If not, *reason says why. */
int gw_upstream_berthd_up(const char **reason);
/* Tells berthd that count requests of peer were refused (never with the
 * token). */
void gw_upstream_auth_failed(
    const char *peer, const char *reason, uint64_t count);
/* Writes ms since the epoch as a JSON string, RFC 3339 in UTC with
 * milliseconds. */
void gw_upstream_rfc3339(FILE *f, uint64_t ms);

#endif
