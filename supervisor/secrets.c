/* secrets: the store of named values (see secrets.h). Owns one locked,
 * undumpable mapping that holds every value back to back, the names,
 * and the redaction set that points into the mapping. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "catalog.h"
#include "events.h"
#include "log.h"
#include "secrets.h"
#include "xmalloc.h"

/* One secret: its value is secrets_mem[off, off + len). */
struct secrets_entry {
	char name[SECRETS_NAME_MAX + 1];
	size_t off;
	size_t len;
};

static uint8_t *secrets_mem; /* SECRETS_TOTAL_MAX bytes, mmap'd */
static size_t secrets_used;  /* values fill [0, secrets_used) */
static struct secrets_entry secrets_v[SECRETS_MAX]; /* sorted by name */
static size_t secrets_n;
/* Rebuilt after every change; points into secrets_v and secrets_mem. */
static struct redact_secret secrets_rv[SECRETS_MAX];
static struct redact_set secrets_rset = {secrets_rv, 0, 0};

/* A new value, checked but not yet stored: the request's bytes. */
struct secrets_new {
	char name[SECRETS_NAME_MAX + 1];
	const uint8_t *value;
	size_t len;
};

void
secrets_init(void)
{
	secrets_mem = mmap(NULL, SECRETS_TOTAL_MAX, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (secrets_mem == MAP_FAILED)
		log_fatal("cannot map memory for secrets: %s", strerror(errno));
	/* The system call itself: the sanitizers' mlock() does nothing, and
	 * the lock is part of what the tests check. */
	if (syscall(SYS_mlock, secrets_mem, SECRETS_TOTAL_MAX) != 0)
		log_warn("cannot lock the secrets' memory (%s): values may be "
		         "swapped out",
		    strerror(errno));
	if (madvise(secrets_mem, SECRETS_TOTAL_MAX, MADV_DONTDUMP) != 0)
		log_warn("cannot keep secrets out of core dumps: %s",
		    strerror(errno));
	/* A child between fork and exec has no use for the values. */
	madvise(secrets_mem, SECRETS_TOTAL_MAX, MADV_WIPEONFORK);
}

void
secrets_shutdown(void)
{
	if (secrets_mem == NULL)
		return;
	explicit_bzero(secrets_mem, SECRETS_TOTAL_MAX);
	munmap(secrets_mem, SECRETS_TOTAL_MAX);
	secrets_mem = NULL;
	secrets_used = 0;
	secrets_n = 0;
	secrets_rset.n = 0;
	secrets_rset.maxlen = 0;
}

/* [A-Za-z_][A-Za-z0-9_]{0,127}: a name fit for the environment. */
static bool
secrets_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > SECRETS_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= 'a' && s[i] <= 'z') ||
		    (i > 0 && s[i] >= '0' && s[i] <= '9'))
			continue;
		return false;
	}
	return true;
}

/* Copies a string object that is a valid name into name; false if it is
 * not one. */
static bool
secrets_name_arg(const msgpack_object *o, char name[SECRETS_NAME_MAX + 1])
{
	if (o->type != MSGPACK_OBJECT_STR ||
	    !secrets_name_ok(o->via.str.ptr, o->via.str.size))
		return false;
	memcpy(name, o->via.str.ptr, o->via.str.size);
	name[o->via.str.size] = '\0';
	return true;
}

static struct secrets_entry *
secrets_find(const char *name)
{
	size_t lo = 0, hi = secrets_n, mid;
	int cmp;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		cmp = strcmp(name, secrets_v[mid].name);
		if (cmp == 0)
			return &secrets_v[mid];
		if (cmp < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int
secrets_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct secrets_entry *)a)->name,
	    ((const struct secrets_entry *)b)->name);
}

static int
secrets_by_off_cmp(const void *a, const void *b)
{
	const struct secrets_entry *x = *(struct secrets_entry *const *)a;
	const struct secrets_entry *y = *(struct secrets_entry *const *)b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static int
secrets_name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void
secrets_rebuild_set(void)
{
	size_t i;

	secrets_rset.n = 0;
	secrets_rset.maxlen = 0;
	for (i = 0; i < secrets_n; i++) {
		if (secrets_v[i].len < REDACT_MIN)
			continue;
		secrets_rv[secrets_rset.n++] =
		    (struct redact_secret){secrets_v[i].name,
		        secrets_mem + secrets_v[i].off, secrets_v[i].len};
		if (secrets_v[i].len > secrets_rset.maxlen)
			secrets_rset.maxlen = secrets_v[i].len;
	}
}

/*
 * Drops the entries whose drop[] is set: their values are wiped, the
 * values kept slide down in the order they lie, and the space freed at
 * the end is wiped too, so no byte of a value outlives it anywhere in
 * the mapping.
 */
static void
secrets_drop(const bool *drop)
{
	struct secrets_entry *byoff[SECRETS_MAX];
	size_t i, n = 0, at = 0, kept = 0;

	for (i = 0; i < secrets_n; i++) {
		if (drop[i])
			explicit_bzero(
			    secrets_mem + secrets_v[i].off, secrets_v[i].len);
		else
			byoff[n++] = &secrets_v[i];
	}
	qsort(byoff, n, sizeof *byoff, secrets_by_off_cmp);
	for (i = 0; i < n; i++) {
		if (byoff[i]->off != at)
			memmove(secrets_mem + at, secrets_mem + byoff[i]->off,
			    byoff[i]->len);
		byoff[i]->off = at;
		at += byoff[i]->len;
	}
	explicit_bzero(secrets_mem + at, secrets_used - at);
	secrets_used = at;
	for (i = 0; i < secrets_n; i++)
		if (!drop[i])
			secrets_v[kept++] = secrets_v[i];
	secrets_n = kept;
}

void
secrets_wipe_object(const msgpack_object *o)
{
	uint32_t i;

	switch (o->type) {
	case MSGPACK_OBJECT_STR:
		explicit_bzero((void *)o->via.str.ptr, o->via.str.size);
		break;
	case MSGPACK_OBJECT_BIN:
		explicit_bzero((void *)o->via.bin.ptr, o->via.bin.size);
		break;
	case MSGPACK_OBJECT_ARRAY:
		for (i = 0; i < o->via.array.size; i++)
			secrets_wipe_object(&o->via.array.ptr[i]);
		break;
	case MSGPACK_OBJECT_MAP:
		for (i = 0; i < o->via.map.size; i++) {
			secrets_wipe_object(&o->via.map.ptr[i].key);
			secrets_wipe_object(&o->via.map.ptr[i].val);
		}
		break;
	default: break;
	}
}

/* Whether the map key o is "key": secrets.set's idempotency key (idem.c),
 * which is not a secret. */
static bool
secrets_idem_key(const msgpack_object *o)
{
	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == 3 &&
	    memcmp(o->via.str.ptr, "key", 3) == 0;
}

/*
 * Checks the request of secrets.set into nv[]; returns how many, or -1
 * with *code and *why (naming no value). Nothing is stored yet: the
 * request is all or nothing.
 */
static ssize_t
secrets_parse_set(const msgpack_object *args, struct secrets_new *nv,
    const char **code, char **why)
{
	const msgpack_object_kv *kv;
	struct secrets_entry *e;
	size_t n, i, j, k = 0, total = 0, kept = 0, held = secrets_used, count;

	*code = PROTO_E_BAD_ARGS;
	for (n = 0, i = 0; i < args->via.map.size; i++)
		n += !secrets_idem_key(&args->via.map.ptr[i].key);
	if (n == 0 || n > SECRETS_MAX) {
		*why = xasprintf(
		    "secrets.set takes 1 to %u NAME: value pairs", SECRETS_MAX);
		return -1;
	}
	for (i = 0; i < args->via.map.size; i++) {
		kv = &args->via.map.ptr[i];
		if (secrets_idem_key(&kv->key))
			continue;
		if (!secrets_name_arg(&kv->key, nv[k].name)) {
			*why =
			    xasprintf("key %zu is not a secret name (letters, "
			              "digits and _, not starting with a "
			              "digit, at most %u)",
			        i + 1, SECRETS_NAME_MAX);
			return -1;
		}
		for (j = 0; j < k; j++)
			if (strcmp(nv[j].name, nv[k].name) == 0) {
				*why =
				    xasprintf("%s is given twice", nv[k].name);
				return -1;
			}
		if (kv->val.type == MSGPACK_OBJECT_STR) {
			nv[k].value = (const uint8_t *)kv->val.via.str.ptr;
			nv[k].len = kv->val.via.str.size;
		} else if (kv->val.type == MSGPACK_OBJECT_BIN) {
			nv[k].value = (const uint8_t *)kv->val.via.bin.ptr;
			nv[k].len = kv->val.via.bin.size;
		} else {
			*why =
			    xasprintf("the value of %s must be a string or bin",
			        nv[k].name);
			return -1;
		}
		if (nv[k].len > SECRETS_VALUE_MAX) {
			*why = xasprintf("the value of %s is over %u bytes",
			    nv[k].name, SECRETS_VALUE_MAX);
			return -1;
		}
		if (memchr(nv[k].value, '\0', nv[k].len) != NULL) {
			*why = xasprintf(
			    "the value of %s holds a NUL byte", nv[k].name);
			return -1;
		}
		total += nv[k].len;
		if ((e = secrets_find(nv[k].name)) != NULL) {
			held -= e->len;
			kept++;
		}
		k++;
	}
	if (total > SECRETS_TOTAL_MAX) {
		*why = xasprintf("the values total %zu bytes, over %u", total,
		    SECRETS_TOTAL_MAX);
		return -1;
	}
	/* What is held already counts too: then the store is full. */
	*code = PROTO_E_CONFLICT;
	count = secrets_n - kept + n;
	if (count > SECRETS_MAX) {
		*why = xasprintf("%zu secrets would be held, over %u; unset "
		                 "some first",
		    count, SECRETS_MAX);
		return -1;
	}
	if (held + total > SECRETS_TOTAL_MAX) {
		*why = xasprintf("the values held would total %zu bytes, over "
		                 "%u; unset some first",
		    held + total, SECRETS_TOTAL_MAX);
		return -1;
	}
	return (ssize_t)n;
}

/* Stores the checked values: replaced ones go first, new ones are
 * appended behind the rest. */
static void
secrets_store(const struct secrets_new *nv, size_t n)
{
	bool drop[SECRETS_MAX] = {false};
	struct secrets_entry *e;
	size_t i;

	for (i = 0; i < n; i++)
		if ((e = secrets_find(nv[i].name)) != NULL)
			drop[e - secrets_v] = true;
	secrets_drop(drop);
	for (i = 0; i < n; i++) {
		e = &secrets_v[secrets_n++];
		memcpy(e->name, nv[i].name, sizeof e->name);
		e->off = secrets_used;
		e->len = nv[i].len;
		memcpy(secrets_mem + secrets_used, nv[i].value, nv[i].len);
		secrets_used += nv[i].len;
	}
	qsort(secrets_v, secrets_n, sizeof *secrets_v, secrets_entry_cmp);
	secrets_rebuild_set();
}

static void
secrets_pack_held(msgpack_packer *pk)
{
	size_t i;

	msgpack_pack_array(pk, secrets_n);
	for (i = 0; i < secrets_n; i++)
		proto_pack_str(pk, secrets_v[i].name);
}

/* secrets.changed {key: [names]}; names sorted, so it reads as a set. */
static void
secrets_emit_changed(
    const char *key, char (*names)[SECRETS_NAME_MAX + 1], size_t n)
{
	msgpack_packer *pk;
	size_t i;

	qsort(names, n, sizeof *names, secrets_name_cmp);
	pk = events_begin(EV_SECRETS_CHANGED);
	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, key);
	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++)
		proto_pack_str(pk, names[i]);
	events_commit();
}

void
secrets_op_set(struct server_conn *c, const struct proto_msg *m)
{
	static struct secrets_new nv[SECRETS_MAX];
	static char names[SECRETS_MAX][SECRETS_NAME_MAX + 1];
	msgpack_packer *pk;
	const char *code;
	char *why = NULL;
	ssize_t n;
	size_t i;

	n = secrets_parse_set(m->args, nv, &code, &why);
	if (n < 0) {
		server_reply_error(c, m->id, code, "%s", why);
		free(why);
	} else {
		secrets_store(nv, (size_t)n);
		for (i = 0; i < (size_t)n; i++)
			memcpy(names[i], nv[i].name, sizeof names[i]);
		secrets_emit_changed("set", names, (size_t)n);
		pk = server_reply_begin(c, m->id);
		msgpack_pack_map(pk, 1);
		proto_pack_str(pk, "names");
		secrets_pack_held(pk);
		server_reply_end(c);
	}
	/* The request's bytes are the connection's receive buffer: no copy
	 * of a value stays there, taken or refused. */
	secrets_wipe_object(m->args);
	explicit_bzero(nv, sizeof nv);
}

void
secrets_op_unset(struct server_conn *c, const struct proto_msg *m)
{
	static char names[SECRETS_MAX][SECRETS_NAME_MAX + 1];
	const msgpack_object *a = proto_map_get(m->args, "names");
	bool drop[SECRETS_MAX] = {false};
	struct secrets_entry *e;
	msgpack_packer *pk;
	size_t i, n = 0;

	if (a == NULL || a->type != MSGPACK_OBJECT_ARRAY ||
	    a->via.array.size > SECRETS_MAX) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "secrets.unset needs \"names\": a list of at most %u names",
		    SECRETS_MAX);
		return;
	}
	for (i = 0; i < a->via.array.size; i++)
		if (!secrets_name_arg(&a->via.array.ptr[i], names[0])) {
			server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
			    "names[%zu] is not a secret name", i);
			return;
		}
	for (i = 0; i < a->via.array.size; i++) {
		secrets_name_arg(&a->via.array.ptr[i], names[n]);
		if ((e = secrets_find(names[n])) != NULL &&
		    !drop[e - secrets_v]) {
			drop[e - secrets_v] = true;
			n++;
		}
	}
	if (n > 0) {
		secrets_drop(drop);
		secrets_rebuild_set();
		secrets_emit_changed("unset", names, n);
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "unset");
	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++)
		proto_pack_str(pk, names[i]);
	server_reply_end(c);
}

void
secrets_op_list(struct server_conn *c, const struct proto_msg *m)
{
	msgpack_packer *pk = server_reply_begin(c, m->id);

	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "names");
	secrets_pack_held(pk);
	server_reply_end(c);
}

/* Adds e to g ("NAME=VALUE" and the name), unless it is there already. */
static void
secrets_grant_add(struct secrets_grant *g, const struct secrets_entry *e)
{
	size_t i, nlen = strlen(e->name);
	char *var;

	for (i = 0; i < g->nnames; i++)
		if (strcmp(g->names[i], e->name) == 0)
			return;
	var = xmalloc(nlen + 1 + e->len + 1);
	memcpy(var, e->name, nlen);
	var[nlen] = '=';
	memcpy(var + nlen + 1, secrets_mem + e->off, e->len);
	var[nlen + 1 + e->len] = '\0';
	g->vars[g->nvars++] = var;
	g->names[g->nnames++] = xstrdup(e->name);
}

int
secrets_grant(const msgpack_object *arg, struct secrets_grant *g,
    const char **code, char **why)
{
	char name[SECRETS_NAME_MAX + 1];
	size_t i;

	memset(g, 0, sizeof *g);
	*code = PROTO_E_BAD_ARGS;
	if (arg == NULL || arg->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (arg->type == MSGPACK_OBJECT_STR && arg->via.str.size == 3 &&
	    memcmp(arg->via.str.ptr, "all", 3) == 0) {
		g->vars = xcalloc(secrets_n, sizeof *g->vars);
		g->names = xcalloc(secrets_n, sizeof *g->names);
		for (i = 0; i < secrets_n; i++)
			secrets_grant_add(g, &secrets_v[i]);
		return 0;
	}
	if (arg->type != MSGPACK_OBJECT_ARRAY ||
	    arg->via.array.size > SECRETS_MAX) {
		*why = xasprintf("secrets must be \"all\" or a list of at most "
		                 "%u names",
		    SECRETS_MAX);
		return -1;
	}
	for (i = 0; i < arg->via.array.size; i++) {
		if (!secrets_name_arg(&arg->via.array.ptr[i], name)) {
			*why =
			    xasprintf("secrets[%zu] is not a secret name", i);
			return -1;
		}
		if (secrets_find(name) == NULL) {
			*code = PROTO_E_NOT_FOUND;
			*why = xasprintf("no secret named %s", name);
			return -1;
		}
	}
	g->vars = xcalloc(arg->via.array.size, sizeof *g->vars);
	g->names = xcalloc(arg->via.array.size, sizeof *g->names);
	for (i = 0; i < arg->via.array.size; i++) {
		secrets_name_arg(&arg->via.array.ptr[i], name);
		secrets_grant_add(g, secrets_find(name));
	}
	return 0;
}

void
secrets_grant_set(char *const *names, size_t n, struct secrets_grant *g)
{
	const struct secrets_entry *e;
	size_t i;

	memset(g, 0, sizeof *g);
	g->vars = xcalloc(n + 1, sizeof *g->vars);
	g->names = xcalloc(n + 1, sizeof *g->names);
	for (i = 0; i < n; i++)
		if (strlen(names[i]) <= SECRETS_NAME_MAX &&
		    (e = secrets_find(names[i])) != NULL)
			secrets_grant_add(g, e);
}

void
secrets_grant_emit(const struct secrets_grant *g, const char *target)
{
	msgpack_packer *pk;
	size_t i;

	if (g->nnames == 0)
		return;
	pk = events_begin(EV_SECRETS_INJECTED);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "target", target);
	proto_pack_str(pk, "names");
	msgpack_pack_array(pk, g->nnames);
	for (i = 0; i < g->nnames; i++)
		proto_pack_str(pk, g->names[i]);
	events_commit();
}

void
secrets_grant_free(struct secrets_grant *g)
{
	size_t i;

	for (i = 0; i < g->nvars; i++) {
		explicit_bzero(g->vars[i], strlen(g->vars[i]));
		free(g->vars[i]);
	}
	for (i = 0; i < g->nnames; i++)
		free(g->names[i]);
	free(g->vars);
	free(g->names);
	memset(g, 0, sizeof *g);
}

const struct redact_set *
secrets_redact_set(void)
{
	return &secrets_rset;
}
