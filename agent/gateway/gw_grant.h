/* gw_grant: the connections each access grant opened, so that the
 * grant's end closes them. berthd holds the grants; its control
 * connection shows the gateway grant.revoked and grant.expired, and each
 * admitted connection also has a timer of its own at the grant's expiry,
 * so that expiry cuts even while berthd is slow or away. */
#ifndef BERTH_GW_GRANT_H
#define BERTH_GW_GRANT_H

#include <libwebsockets.h>
#include <stdint.h>

#define GW_GRANT_ID_MAX 24

/*
 * One connection's hold on its grant, embedded in the connection's own
 * state (which owns it). cut, if set before gw_grant_admit, closes the
 * connection its own way (a WebSocket close with a reason, say); else
 * wsi is killed. Either way the connection's close calls
 * gw_grant_release.
 */
struct gw_grant_hold {
	char id[GW_GRANT_ID_MAX]; /* "" while it holds none */
	struct lws *wsi;
	void (*cut)(struct gw_grant_hold *h, const char *why);
	lws_sorted_usec_list_t sul; /* the expiry */
	struct gw_grant_hold *prev, *next;
};

/* Registers wsi under grant id until release; expires_at_ms is the
 * grant's expiry (ms since the epoch). 0, or -1 if it has expired. */
int gw_grant_admit(struct gw_grant_hold *h, struct lws *wsi,
    const char *grant_id, uint64_t expires_at_ms);
/* The connection closes: it holds nothing from now on. Harmless twice. */
void gw_grant_release(struct gw_grant_hold *h);
/* Grant id ended (berthd's event): every connection it opened is cut. */
void gw_grant_ended(const char *id, const char *why);

#endif
