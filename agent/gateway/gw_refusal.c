/* gw_refusal: refusals summed per peer address and reason (see
 * gw_refusal.h). Owns the table of peers refused lately and the timer
 * that sends their counts; a peer's slot is freed after an interval with
 * no refusal. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gateway.h"
#include "gw_metrics.h"
#include "gw_refusal.h"
#include "gw_upstream.h"
#include "log.h"

/* The longest reason kept; ours are single words. */
#define GW_REFUSAL_REASON_MAX 16

/* One peer and reason refused lately. */
struct gw_refusal {
	char addr[GATEWAY_PEER_MAX];
	char reason[GW_REFUSAL_REASON_MAX];
	uint64_t pending; /* refusals not yet sent to berthd */
	int used;
};

/* The peers, and the slot of those beyond them. */
static struct gw_refusal gw_refusals[GW_REFUSAL_PEERS + 1];
static lws_sorted_usec_list_t gw_refusal_sul;
static int gw_refusal_scheduled;

/* peer without its port: "ADDR:PORT" gives ADDR, "[ADDR6]:PORT" gives
 * ADDR6. */
static void
gw_refusal_addr(const char *peer, char *out, size_t size)
{
	const char *end;
	size_t n;

	if (*peer == '[' && (end = strchr(peer, ']')) != NULL)
		peer++;
	else if ((end = strrchr(peer, ':')) == NULL)
		end = peer + strlen(peer);
	n = (size_t)(end - peer);
	snprintf(out, size, "%.*s", (int)n, peer);
}

static void gw_refusal_flush(lws_sorted_usec_list_t *sul);

static void
gw_refusal_schedule(void)
{
	if (gw_refusal_scheduled)
		return;
	gw_refusal_scheduled = 1;
	lws_sul_schedule(gateway.ctx, 0, &gw_refusal_sul, gw_refusal_flush,
	    GW_REFUSAL_INTERVAL_US);
}

/* Sends what each peer's interval summed; a peer refused nothing in it
 * is forgotten. */
static void
gw_refusal_flush(lws_sorted_usec_list_t *sul)
{
	struct gw_refusal *r;
	size_t i;

	(void)sul;
	gw_refusal_scheduled = 0;
	for (i = 0; i <= GW_REFUSAL_PEERS; i++) {
		r = &gw_refusals[i];
		if (!r->used)
			continue;
		if (r->pending == 0) {
			r->used = 0;
			continue;
		}
		log_info("refused %" PRIu64
		         " more from %s in the last %d s (%s)",
		    r->pending, r->addr,
		    (int)(GW_REFUSAL_INTERVAL_US / LWS_USEC_PER_SEC),
		    r->reason);
		gw_upstream_auth_failed(r->addr, r->reason, r->pending);
		r->pending = 0;
	}
	/* A peer just sent for is kept one interval more, so that its next
	 * refusal is summed too. */
	for (i = 0; i <= GW_REFUSAL_PEERS; i++)
		if (gw_refusals[i].used) {
			gw_refusal_schedule();
			break;
		}
}

/* The slot of addr and reason; NULL if it is new and *fresh is the slot
 * to fill. */
static struct gw_refusal *
gw_refusal_find(const char *addr, const char *reason, struct gw_refusal **fresh)
{
	struct gw_refusal *r;
	size_t i;

	*fresh = NULL;
	for (i = 0; i < GW_REFUSAL_PEERS; i++) {
		r = &gw_refusals[i];
		if (!r->used) {
			if (*fresh == NULL)
				*fresh = r;
			continue;
		}
		if (strcmp(r->addr, addr) == 0 &&
		    strcmp(r->reason, reason) == 0)
			return r;
	}
	return NULL;
}

void
gw_refusal_note(const char *peer, const char *what, const char *reason)
{
	char addr[GATEWAY_PEER_MAX];
	struct gw_refusal *r, *fresh;

	gw_metrics.auth_failures++;
	gw_refusal_addr(peer, addr, sizeof addr);
	r = gw_refusal_find(addr, reason, &fresh);
	if (r == NULL && fresh == NULL) {
		/* The table is full: one sum for everyone else. */
		r = &gw_refusals[GW_REFUSAL_PEERS];
		if (!r->used) {
			r->used = 1;
			snprintf(r->addr, sizeof r->addr, "*");
			snprintf(r->reason, sizeof r->reason, "%s", reason);
		}
	}
	if (r != NULL) {
		r->pending++;
		gw_refusal_schedule();
		return;
	}
	fresh->used = 1;
	fresh->pending = 0;
	snprintf(fresh->addr, sizeof fresh->addr, "%s", addr);
	snprintf(fresh->reason, sizeof fresh->reason, "%s", reason);
	log_info("refused %s from %s (%s)", what, peer, reason);
	gw_upstream_auth_failed(addr, reason, 1);
	gw_refusal_schedule();
}
