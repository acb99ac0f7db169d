/* gw_grant: cutting what a grant opened, at its revocation or expiry. */
#include "gw_grant.h"

#include <stdio.h>
#include <string.h>

#include "gateway.h"
#include "gw_ticket.h"
#include "log.h"
#include "proto.h"

static struct gw_grant_hold *gw_grant_holds;

static void
gw_grant_cut(struct gw_grant_hold *h, const char *why)
{
	struct lws *wsi = h->wsi;

	log_info("grant %s %s: its connection is closed", h->id, why);
	if (h->cut != NULL) {
		h->cut(h, why);
		return;
	}
	gw_grant_release(h);
	lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static void
gw_grant_expiry_cb(lws_sorted_usec_list_t *sul)
{
	struct gw_grant_hold *h =
	    lws_container_of(sul, struct gw_grant_hold, sul);

	gw_grant_cut(h, "expired");
}

int
gw_grant_admit(struct gw_grant_hold *h, struct lws *wsi, const char *grant_id,
    uint64_t expires_at_ms)
{
	uint64_t now = proto_now_ms();

	gw_grant_release(h);
	if (expires_at_ms <= now)
		return -1;
	snprintf(h->id, sizeof h->id, "%s", grant_id);
	h->wsi = wsi;
	h->prev = NULL;
	h->next = gw_grant_holds;
	if (gw_grant_holds != NULL)
		gw_grant_holds->prev = h;
	gw_grant_holds = h;
	memset(&h->sul, 0, sizeof h->sul);
	lws_sul_schedule(gateway.ctx, 0, &h->sul, gw_grant_expiry_cb,
	    (lws_usec_t)(expires_at_ms - now) * LWS_US_PER_MS);
	return 0;
}

void
gw_grant_release(struct gw_grant_hold *h)
{
	if (h->id[0] == '\0')
		return;
	lws_sul_cancel(&h->sul);
	if (h->prev != NULL)
		h->prev->next = h->next;
	else
		gw_grant_holds = h->next;
	if (h->next != NULL)
		h->next->prev = h->prev;
	h->prev = h->next = NULL;
	h->id[0] = '\0';
}

void
gw_grant_ended(const char *id, const char *why)
{
	struct gw_grant_hold *h, *next;

	/* The noVNC tickets it was exchanged for count no more either. */
	gw_ticket_revoke(id);
	for (h = gw_grant_holds; h != NULL; h = next) {
		next = h->next;
		if (strcmp(h->id, id) == 0)
			gw_grant_cut(h, why);
	}
}
