/* inflight: the waiting requests of every connection (see inflight.h). */
#include <stdlib.h>

#include "inflight.h"
#include "xmalloc.h"

/* Buckets of the table: a power of two. Each WebSocket client has at
 * most PROTO_MAX_IN_FLIGHT requests, and the waiting modules bound their
 * waiters, so the chains stay short. */
#define INFLIGHT_BUCKETS 1024

struct inflight {
	uint64_t serial, id;
	inflight_cancel_fn cancel;
	void *arg;
	struct inflight *next;
};

static struct inflight *inflight_table[INFLIGHT_BUCKETS];
static size_t inflight_count;

static struct inflight **
inflight_bucket(uint64_t serial, uint64_t id)
{
	uint64_t h = (serial * 0x9e3779b97f4a7c15ull) ^ id;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return &inflight_table[h & (INFLIGHT_BUCKETS - 1)];
}

/* Where the entry of serial and id is linked, or NULL if there is none. */
static struct inflight **
inflight_find(uint64_t serial, uint64_t id)
{
	struct inflight **pp;

	for (pp = inflight_bucket(serial, id); *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->serial == serial && (*pp)->id == id)
			return pp;
	return NULL;
}

void
inflight_cancel_serial(void *arg, uint64_t serial, uint64_t id)
{
	(void)serial;
	(void)id;
	*(uint64_t *)arg = 0;
}

void
inflight_add(const struct server_conn *c, uint64_t id,
    inflight_cancel_fn cancel, void *arg)
{
	struct inflight *e = xcalloc(1, sizeof *e), **head;

	e->serial = c->serial;
	e->id = id;
	e->cancel = cancel;
	e->arg = arg;
	head = inflight_bucket(c->serial, id);
	e->next = *head;
	*head = e;
	inflight_count++;
}

/* Unlinks and returns the entry of serial and id, or NULL. */
static struct inflight *
inflight_take(uint64_t serial, uint64_t id)
{
	struct inflight **pp = inflight_find(serial, id), *e;

	if (pp == NULL)
		return NULL;
	e = *pp;
	*pp = e->next;
	inflight_count--;
	return e;
}

void
inflight_end(uint64_t serial, uint64_t id)
{
	free(inflight_take(serial, id));
}

bool
inflight_has(const struct server_conn *c, uint64_t id)
{
	return inflight_find(c->serial, id) != NULL;
}

/* Frees every entry of serial, or every entry if serial is 0. */
static void
inflight_drop(uint64_t serial)
{
	struct inflight **pp, *e;
	size_t i;

	for (i = 0; i < INFLIGHT_BUCKETS && inflight_count > 0; i++) {
		pp = &inflight_table[i];
		while ((e = *pp) != NULL) {
			if (serial != 0 && e->serial != serial) {
				pp = &e->next;
				continue;
			}
			*pp = e->next;
			inflight_count--;
			free(e);
		}
	}
}

void
inflight_conn_gone(const struct server_conn *c)
{
	inflight_drop(c->serial);
}

void
inflight_shutdown(void)
{
	inflight_drop(0);
}

void
inflight_op_cancel(struct server_conn *c, const struct proto_msg *m)
{
	struct inflight *e;
	msgpack_packer *pk;
	uint64_t id;

	if (proto_arg_u64(m->args, "id", &id) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "request.cancel needs \"id\" (a request's id)");
		return;
	}
	/* Taken before the cancel is called, so that a waiter which ends
	 * its entry as it lets go finds nothing left to end. */
	e = inflight_take(c->serial, id);
	if (e != NULL) {
		e->cancel(e->arg, e->serial, e->id);
		server_reply_error(
		    c, id, PROTO_E_CANCELLED, "cancelled by request.cancel");
		free(e);
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 1);
	proto_pack_kv_bool(pk, "cancelled", e != NULL);
	server_reply_end(c);
}
