/* gw_limit: connection limits of the HTTP port (see gw_limit.h). Owns
 * one struct gw_limit_conn per tracked connection, on a list in the
 * order of their last wait, oldest first, and the timer that closes
 * connections whose head is late. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "gw_limit.h"
#include "log.h"
#include "xmalloc.h"

struct gw_limit_conn {
	struct lws *wsi;
	char addr[GATEWAY_PEER_MAX]; /* the peer's address, without port */
	lws_usec_t since;            /* waiting since; 0: not waiting */
	int killed;                  /* closing: counts for no one */
	struct gw_limit_conn *prev, *next;
};

static struct gw_limit_conn *gw_limit_head, *gw_limit_tail;
static unsigned gw_limit_waiting;
static lws_sorted_usec_list_t gw_limit_sul;
static int gw_limit_scheduled;

static struct gw_limit_conn *
gw_limit_find(struct lws *wsi)
{
	struct gw_limit_conn *c;

	for (c = gw_limit_head; c != NULL; c = c->next)
		if (c->wsi == wsi)
			return c;
	return NULL;
}

static void
gw_limit_unlink(struct gw_limit_conn *c)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		gw_limit_head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	else
		gw_limit_tail = c->prev;
	c->prev = c->next = NULL;
}

static void
gw_limit_append(struct gw_limit_conn *c)
{
	c->prev = gw_limit_tail;
	c->next = NULL;
	if (gw_limit_tail != NULL)
		gw_limit_tail->next = c;
	else
		gw_limit_head = c;
	gw_limit_tail = c;
}

static void
gw_limit_set_waiting(struct gw_limit_conn *c, int waiting)
{
	if (!c->since == !waiting)
		return;
	if (waiting) {
		c->since = lws_now_usecs();
		gw_limit_waiting++;
		/* The list stays in the order of the waits' starts. */
		gw_limit_unlink(c);
		gw_limit_append(c);
	} else {
		c->since = 0;
		gw_limit_waiting--;
	}
}

/* Closes c at the next turn of the loop; it counts no more. */
static void
gw_limit_kill(struct gw_limit_conn *c, const char *why)
{
	log_debug("closing a connection of %s: %s", c->addr, why);
	gw_limit_set_waiting(c, 0);
	c->killed = 1;
	lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static void gw_limit_sweep(lws_sorted_usec_list_t *sul);

static void
gw_limit_schedule(void)
{
	if (gw_limit_scheduled)
		return;
	gw_limit_scheduled = 1;
	lws_sul_schedule(gateway.ctx, 0, &gw_limit_sul, gw_limit_sweep,
	    LWS_USEC_PER_SEC / 4);
}

/* Closes the connections whose head is late. */
static void
gw_limit_sweep(lws_sorted_usec_list_t *sul)
{
	lws_usec_t now = lws_now_usecs(),
	           late = (lws_usec_t)GW_LIMIT_HEAD_S * LWS_USEC_PER_SEC;
	struct gw_limit_conn *c;

	(void)sul;
	gw_limit_scheduled = 0;
	for (c = gw_limit_head; c != NULL; c = c->next)
		if (c->since != 0 && now - c->since >= late)
			gw_limit_kill(c, "no whole request head in time");
	if (gw_limit_waiting != 0)
		gw_limit_schedule();
}

/* The oldest waiting connection, of addr if it is not NULL, if it has
 * waited GW_LIMIT_GRACE_MS at least. */
static struct gw_limit_conn *
gw_limit_oldest(const char *addr)
{
	lws_usec_t grace = (lws_usec_t)GW_LIMIT_GRACE_MS * LWS_US_PER_MS;
	struct gw_limit_conn *c;

	for (c = gw_limit_head; c != NULL; c = c->next)
		if (c->since != 0 &&
		    (addr == NULL || strcmp(c->addr, addr) == 0))
			return lws_now_usecs() - c->since >= grace ? c : NULL;
	return NULL;
}

static unsigned
gw_limit_count(const char *addr)
{
	struct gw_limit_conn *c;
	unsigned n = 0;

	for (c = gw_limit_head; c != NULL; c = c->next)
		n += !c->killed && strcmp(c->addr, addr) == 0;
	return n;
}

/* peer ("ADDR:PORT" or "[ADDR6]:PORT") without its port. */
static void
gw_limit_addr(struct lws *wsi, char *out, size_t size)
{
	char peer[GATEWAY_PEER_MAX], *end;

	gateway_peer(wsi, peer, sizeof peer);
	end = peer[0] == '[' ? strchr(peer, ']') : strrchr(peer, ':');
	if (end != NULL)
		*end = '\0';
	snprintf(out, size, "%s", peer[0] == '[' ? peer + 1 : peer);
}

void
gw_limit_accepted(struct lws *wsi)
{
	struct gw_limit_conn *c, *old;

	c = xcalloc(1, sizeof *c);
	c->wsi = wsi;
	gw_limit_addr(wsi, c->addr, sizeof c->addr);
	if (gw_limit_count(c->addr) >= gateway.peer_max) {
		old = gw_limit_oldest(c->addr);
		if (old != NULL)
			gw_limit_kill(
			    old, "the peer's newest connection needs room");
	}
	if (gw_limit_waiting >= GW_LIMIT_WAITING_MAX) {
		old = gw_limit_oldest(NULL);
		if (old != NULL)
			gw_limit_kill(old, "a newer connection needs room");
	}
	gw_limit_append(c);
	gw_limit_set_waiting(c, 1);
	gw_limit_schedule();
	if (gw_limit_count(c->addr) > gateway.peer_max) {
		log_info("refused a connection of %s: it holds %u already",
		    c->addr, gateway.peer_max);
		gw_limit_kill(c, "too many connections");
	}
}

void
gw_limit_head_done(struct lws *wsi)
{
	struct gw_limit_conn *c = gw_limit_find(wsi);

	if (c != NULL)
		gw_limit_set_waiting(c, 0);
}

void
gw_limit_idle(struct lws *wsi)
{
	struct gw_limit_conn *c = gw_limit_find(wsi);

	if (c != NULL && !c->killed) {
		gw_limit_set_waiting(c, 1);
		gw_limit_schedule();
	}
}

void
gw_limit_forget(struct lws *wsi)
{
	struct gw_limit_conn *c = gw_limit_find(wsi);

	if (c == NULL)
		return;
	gw_limit_set_waiting(c, 0);
	gw_limit_unlink(c);
	free(c);
}
