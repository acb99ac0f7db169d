/* idem: idempotency keys (see idem.h). Owns the key table: every key in
 * a hash chain for lookup and in age order for eviction, the unanswered
 * ones also in the pending list that every answer is matched against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idem.h"
#include "inflight.h"
#include "secrets.h"
#include "xmalloc.h"

#define IDEM_BUCKETS 8192 /* a power of two, twice IDEM_MAX */

struct idem_waiter {
	uint64_t serial, id;
};

struct idem_key {
	char key[IDEM_KEY_MAX + 1];
	enum catalog_op_id op;
	bool done; /* answered: result holds the first's result map */
	/* While not done: the first request, and the repeats waiting on
	 * its answer. */
	uint64_t serial, id;
	struct idem_waiter *waiters;
	size_t nwaiters;
	uint8_t *result;
	size_t len;
	struct idem_key *hnext;         /* the hash chain */
	struct idem_key *older, *newer; /* age order */
	struct idem_key *pnext;         /* the pending list, while !done */
};

static struct idem_key *idem_buckets[IDEM_BUCKETS];
static struct idem_key *idem_oldest, *idem_newest;
static struct idem_key *idem_pending;
static size_t idem_nkeys;

/* The ops that create things, and so take a key. */
static bool
idem_keyed(enum catalog_op_id op)
{
	switch (op) {
	case CATALOG_OP_PROC_START:
	case CATALOG_OP_PTY_OPEN:
	case CATALOG_OP_ARTIFACT_PUBLISH:
	case CATALOG_OP_RECORD_START:
	case CATALOG_OP_TASK_RUN:
	case CATALOG_OP_GRANT_CREATE:
	case CATALOG_OP_SECRETS_SET: return true;
	default: return false;
	}
}

/* FNV-1a: keys are a client's, but a chain is at most IDEM_MAX long. */
static struct idem_key **
idem_bucket(const char *key)
{
	uint32_t h = 2166136261u;

	for (; *key != '\0'; key++)
		h = (h ^ (uint8_t)*key) * 16777619u;
	return &idem_buckets[h & (IDEM_BUCKETS - 1)];
}

static struct idem_key *
idem_find(const char *key)
{
	struct idem_key *k;

	for (k = *idem_bucket(key); k != NULL; k = k->hnext)
		if (strcmp(k->key, key) == 0)
			return k;
	return NULL;
}

/* Copies the key o into key: 0, or -1 if it is not a key. */
static int
idem_key_read(const msgpack_object *o, char key[IDEM_KEY_MAX + 1])
{
	uint32_t i;

	if (o->type != MSGPACK_OBJECT_STR || o->via.str.size == 0 ||
	    o->via.str.size > IDEM_KEY_MAX)
		return -1;
	for (i = 0; i < o->via.str.size; i++)
		if (o->via.str.ptr[i] < 0x21 || o->via.str.ptr[i] > 0x7e)
			return -1;
	memcpy(key, o->via.str.ptr, o->via.str.size);
	key[o->via.str.size] = '\0';
	return 0;
}

static void
idem_unpend(struct idem_key *k)
{
	struct idem_key **p;

	for (p = &idem_pending; *p != NULL; p = &(*p)->pnext)
		if (*p == k) {
			*p = k->pnext;
			break;
		}
	k->pnext = NULL;
}

/* Takes k out of the table and frees it; waiters still held are the
 * caller's to have answered. */
static void
idem_remove(struct idem_key *k)
{
	struct idem_key **p;

	for (p = idem_bucket(k->key); *p != k; p = &(*p)->hnext)
		;
	*p = k->hnext;
	if (k->older != NULL)
		k->older->newer = k->newer;
	else
		idem_oldest = k->newer;
	if (k->newer != NULL)
		k->newer->older = k->older;
	else
		idem_newest = k->older;
	if (!k->done)
		idem_unpend(k);
	idem_nkeys--;
	free(k->waiters);
	/* grant.create's result holds the grant's token. */
	if (k->result != NULL)
		explicit_bzero(k->result, k->len);
	free(k->result);
	free(k);
}

/* Makes room by forgetting the oldest key. Repeats waiting on it, if its
 * first is still unanswered, could no longer be answered: they are told
 * to send again. */
static void
idem_evict(void)
{
	struct idem_key *k = idem_oldest;
	struct server_conn *c;
	size_t i;

	for (i = 0; i < k->nwaiters; i++) {
		inflight_end(k->waiters[i].serial, k->waiters[i].id);
		if ((c = server_conn_find(k->waiters[i].serial)) != NULL)
			server_reply_error(c, k->waiters[i].id,
			    PROTO_E_UNAVAILABLE,
			    "key %s was forgotten before its first request "
			    "was answered (%d newer keys came); send again",
			    k->key, IDEM_MAX);
	}
	k->nwaiters = 0;
	idem_remove(k);
}

static void
idem_add(const char *key, enum catalog_op_id op, uint64_t serial, uint64_t id)
{
	struct idem_key *k = xcalloc(1, sizeof *k), **b = idem_bucket(key);

	if (idem_nkeys == IDEM_MAX)
		idem_evict();
	snprintf(k->key, sizeof k->key, "%s", key);
	k->op = op;
	k->serial = serial;
	k->id = id;
	k->hnext = *b;
	*b = k;
	k->older = idem_newest;
	if (idem_newest != NULL)
		idem_newest->newer = k;
	else
		idem_oldest = k;
	idem_newest = k;
	k->pnext = idem_pending;
	idem_pending = k;
	idem_nkeys++;
}

/* request.cancel of a repeat waiting for its first's answer: it stops
 * waiting; the first goes on. */
static void
idem_cancel_waiter(void *arg, uint64_t serial, uint64_t id)
{
	struct idem_key *k;
	size_t i;

	(void)arg;
	for (k = idem_pending; k != NULL; k = k->pnext)
		for (i = 0; i < k->nwaiters; i++)
			if (k->waiters[i].serial == serial &&
			    k->waiters[i].id == id) {
				k->waiters[i] = k->waiters[--k->nwaiters];
				return;
			}
}

/* A repeat of k's first, which is still unanswered: it waits, as a
 * waiting request of its connection (duplicate_id, request.cancel). */
static void
idem_wait(struct server_conn *c, struct idem_key *k, uint64_t id)
{
	if (k->nwaiters == IDEM_WAITERS_MAX) {
		server_reply_error(c, id, PROTO_E_UNAVAILABLE,
		    "%d repeats of key %s wait already for its first "
		    "request's answer",
		    IDEM_WAITERS_MAX, k->key);
		return;
	}
	k->waiters =
	    xreallocarray(k->waiters, k->nwaiters + 1, sizeof *k->waiters);
	k->waiters[k->nwaiters].serial = c->serial;
	k->waiters[k->nwaiters].id = id;
	k->nwaiters++;
	inflight_add(c, id, idem_cancel_waiter, NULL);
}

bool
idem_begin(
    struct server_conn *c, enum catalog_op_id op, const struct proto_msg *m)
{
	const msgpack_object *o;
	char key[IDEM_KEY_MAX + 1];
	struct idem_key *k;

	if (!idem_keyed(op) || (o = proto_map_get(m->args, "key")) == NULL)
		return false;
	if (idem_key_read(o, key) < 0)
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s: \"key\" must be a string of 1 to %d printable ASCII "
		    "characters (0x21 to 0x7e: no spaces)",
		    m->op, IDEM_KEY_MAX);
	else if ((k = idem_find(key)) == NULL) {
		idem_add(key, op, c->serial, m->id);
		return false;
	} else if (k->op != op)
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "key %s was used for %s", key, catalog_ops[k->op].name);
	else if (k->done)
		server_reply_packed(c, m->id, true, k->result, k->len);
	else
		idem_wait(c, k, m->id);
	/* Not performed, so not wiped by its handler: a secrets.set's values
	 * would stay in the freed request. */
	if (op == CATALOG_OP_SECRETS_SET)
		secrets_wipe_object(m->args);
	return true;
}

static struct idem_key *
idem_pending_of(uint64_t serial, uint64_t id)
{
	struct idem_key *k;

	for (k = idem_pending; k != NULL; k = k->pnext)
		if (k->serial == serial && k->id == id)
			return k;
	return NULL;
}

bool
idem_awaits(uint64_t serial, uint64_t id)
{
	return idem_pending_of(serial, id) != NULL;
}

/*
 * The first request of a key was answered. A result is kept for the
 * repeats to come; an error forgets the key, so that a repeat is
 * performed anew. Either way the repeats waiting now are answered the
 * same. Answering them reuses the server's reply buffer, which obj may
 * lie in: it is copied first.
 */
void
idem_answered(
    uint64_t serial, uint64_t id, bool ok, const void *obj, size_t len)
{
	struct idem_key *k;
	struct idem_waiter *w;
	struct server_conn *c;
	uint8_t *copy;
	size_t i, n;

	if (idem_pending == NULL || (k = idem_pending_of(serial, id)) == NULL)
		return;
	copy = xmalloc(len > 0 ? len : 1);
	memcpy(copy, obj, len);
	w = k->waiters;
	n = k->nwaiters;
	k->waiters = NULL;
	k->nwaiters = 0;
	if (ok) {
		idem_unpend(k);
		k->done = true;
		k->result = copy;
		k->len = len;
	} else
		idem_remove(k);
	for (i = 0; i < n; i++) {
		inflight_end(w[i].serial, w[i].id);
		if ((c = server_conn_find(w[i].serial)) != NULL)
			server_reply_packed(c, w[i].id, ok, copy, len);
	}
	free(w);
	if (!ok)
		free(copy);
}

void
idem_shutdown(void)
{
	while (idem_oldest != NULL)
		idem_remove(idem_oldest);
}
