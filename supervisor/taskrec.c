/* taskrec: a task's record, packed, read back and kept on disk (see
 * taskrec.h). Owns nothing between calls. */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsatomic.h"
#include "log.h"
#include "mpcheck.h"
#include "proto.h"
#include "taskrec.h"
#include "xmalloc.h"

/* Deep enough for a check's argv and an exit inside a check; objects
 * enough for the largest record: per check its map, keys, values and
 * exit, plus its arguments; the rest of the record is well under 64. */
static const struct mpcheck_limits taskrec_limits = {
    .max_depth = 4,
    .max_objects =
        64 + TASKREC_ENV_MAX + TASKREC_CHECKS_MAX * (16 + TASKREC_ARGV_MAX),
};

static const char *const taskrec_state_names[TASKREC_NSTATES] = {
    [TASKREC_QUEUED] = "queued",
    [TASKREC_RUNNING] = "running",
    [TASKREC_CHECKING] = "checking",
    [TASKREC_SUCCEEDED] = "succeeded",
    [TASKREC_FAILED] = "failed",
    [TASKREC_CANCELLED] = "cancelled",
    [TASKREC_TIMED_OUT] = "timed_out",
    [TASKREC_INTERRUPTED] = "interrupted",
};

/* The record's keys, in the order they are packed; "v" is the file's. */
enum taskrec_key {
	TK_ID,
	TK_RUNTIME,
	TK_PROMPT,
	TK_CHECKS,
	TK_ENV,
	TK_TIMEOUT,
	TK_STATE,
	TK_REASON,
	TK_FAILED_CHECK,
	TK_CANCELLED_BY,
	TK_CREATED,
	TK_STARTED,
	TK_FINISHED,
	TK_AGENT,
	TK_DELIVERY,
	TK_V,
	TK_N
};

static const char *const taskrec_keys[TK_N] = {
    [TK_ID] = "id",
    [TK_RUNTIME] = "runtime",
    [TK_PROMPT] = "prompt",
    [TK_CHECKS] = "checks",
    [TK_ENV] = "env",
    [TK_TIMEOUT] = "timeout_s",
    [TK_STATE] = "state",
    [TK_REASON] = "reason",
    [TK_FAILED_CHECK] = "failed_check",
    [TK_CANCELLED_BY] = "cancelled_by",
    [TK_CREATED] = "created",
    [TK_STARTED] = "started",
    [TK_FINISHED] = "finished",
    [TK_AGENT] = "agent",
    [TK_DELIVERY] = "delivery",
    [TK_V] = "v",
};

_Static_assert(TK_V == TASKREC_PACK_KEYS, "the packed keys precede v");

enum { CK_ARGV, CK_RAN, CK_EXIT, CK_STARTED, CK_FINISHED, CK_BYTES, CK_N };
static const char *const taskrec_check_keys[CK_N] = {
    [CK_ARGV] = "argv",
    [CK_RAN] = "ran",
    [CK_EXIT] = "exit",
    [CK_STARTED] = "started",
    [CK_FINISHED] = "finished",
    [CK_BYTES] = "bytes",
};

enum { AK_EXIT, AK_BYTES, AK_STDERR_BYTES, AK_N };
static const char *const taskrec_agent_keys[AK_N] = {
    [AK_EXIT] = "exit",
    [AK_BYTES] = "bytes",
    [AK_STDERR_BYTES] = "stderr_bytes",
};

enum { DK_BRANCH, DK_COMMIT, DK_BASE, DK_PUSHED, DK_DIFF, DK_AT, DK_N };
static const char *const taskrec_delivery_keys[DK_N] = {
    [DK_BRANCH] = "branch",
    [DK_COMMIT] = "commit",
    [DK_BASE] = "base",
    [DK_PUSHED] = "pushed",
    [DK_DIFF] = "diff",
    [DK_AT] = "at",
};

void
taskrec_init(struct taskrec *r)
{
	memset(r, 0, sizeof *r);
	r->failed_check = -1;
}

static void
taskrec_strv_free(char **v)
{
	size_t i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

void
taskrec_free(struct taskrec *r)
{
	size_t i;

	free(r->prompt);
	taskrec_strv_free(r->env);
	for (i = 0; i < r->nchecks; i++)
		taskrec_strv_free(r->checks[i].argv);
	taskrec_init(r);
}

const char *
taskrec_state_name(enum taskrec_state s)
{
	return s < TASKREC_NSTATES ? taskrec_state_names[s] : "?";
}

bool
taskrec_state_final(enum taskrec_state s)
{
	return s >= TASKREC_SUCCEEDED && s < TASKREC_NSTATES;
}

/* Packing. Every "none" (0, "", -1, not done) is nil, so that a reader
 * never mistakes an unset value for a real one. */

static void
taskrec_pack_exit(msgpack_packer *pk, const struct taskrec_exit *e)
{
	if (!e->has) {
		msgpack_pack_nil(pk);
		return;
	}
	msgpack_pack_map(pk, 1);
	if (e->signal != 0)
		proto_pack_kv_i64(pk, "signal", e->signal);
	else
		proto_pack_kv_i64(pk, "code", e->code);
}

static void
taskrec_pack_time(msgpack_packer *pk, uint64_t t)
{
	if (t == 0)
		msgpack_pack_nil(pk);
	else
		msgpack_pack_uint64(pk, t);
}

static void
taskrec_pack_text(msgpack_packer *pk, const char *s)
{
	if (*s == '\0')
		msgpack_pack_nil(pk);
	else
		proto_pack_str(pk, s);
}

static void
taskrec_pack_strv(msgpack_packer *pk, char *const *v, size_t n)
{
	size_t i;

	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++)
		proto_pack_str(pk, v[i]);
}

static void
taskrec_pack_check(msgpack_packer *pk, const struct taskrec_check *c)
{
	msgpack_pack_map(pk, CK_N);
	proto_pack_str(pk, taskrec_check_keys[CK_ARGV]);
	taskrec_pack_strv(pk, c->argv, c->argc);
	proto_pack_kv_bool(pk, taskrec_check_keys[CK_RAN], c->ran);
	proto_pack_str(pk, taskrec_check_keys[CK_EXIT]);
	taskrec_pack_exit(pk, &c->exit);
	proto_pack_str(pk, taskrec_check_keys[CK_STARTED]);
	taskrec_pack_time(pk, c->started);
	proto_pack_str(pk, taskrec_check_keys[CK_FINISHED]);
	taskrec_pack_time(pk, c->finished);
	proto_pack_kv_u64(pk, taskrec_check_keys[CK_BYTES], c->bytes);
}

static void
taskrec_pack_agent(msgpack_packer *pk, const struct taskrec *r)
{
	msgpack_pack_map(pk, AK_N);
	proto_pack_str(pk, taskrec_agent_keys[AK_EXIT]);
	taskrec_pack_exit(pk, &r->agent);
	proto_pack_kv_u64(pk, taskrec_agent_keys[AK_BYTES], r->agent_bytes);
	proto_pack_kv_u64(
	    pk, taskrec_agent_keys[AK_STDERR_BYTES], r->stderr_bytes);
}

static void
taskrec_pack_delivery(msgpack_packer *pk, const struct taskrec_delivery *d)
{
	if (!d->done) {
		msgpack_pack_nil(pk);
		return;
	}
	msgpack_pack_map(pk, DK_N);
	proto_pack_kv_str(pk, taskrec_delivery_keys[DK_BRANCH], d->branch);
	proto_pack_kv_str(pk, taskrec_delivery_keys[DK_COMMIT], d->commit);
	proto_pack_kv_str(pk, taskrec_delivery_keys[DK_BASE], d->base);
	proto_pack_kv_bool(pk, taskrec_delivery_keys[DK_PUSHED], d->pushed);
	proto_pack_kv_str(pk, taskrec_delivery_keys[DK_DIFF], d->diff);
	proto_pack_kv_u64(pk, taskrec_delivery_keys[DK_AT], d->at);
}

void
taskrec_pack_keys(msgpack_packer *pk, const struct taskrec *r)
{
	size_t i;

	proto_pack_kv_str(pk, taskrec_keys[TK_ID], r->id);
	proto_pack_kv_str(pk, taskrec_keys[TK_RUNTIME], r->runtime);
	/* A record fresh from taskrec_init has none yet. */
	proto_pack_kv_str(
	    pk, taskrec_keys[TK_PROMPT], r->prompt != NULL ? r->prompt : "");
	proto_pack_str(pk, taskrec_keys[TK_CHECKS]);
	msgpack_pack_array(pk, r->nchecks);
	for (i = 0; i < r->nchecks; i++)
		taskrec_pack_check(pk, &r->checks[i]);
	proto_pack_str(pk, taskrec_keys[TK_ENV]);
	taskrec_pack_strv(pk, r->env, r->nenv);
	proto_pack_kv_u64(pk, taskrec_keys[TK_TIMEOUT], r->timeout_s);
	proto_pack_kv_str(
	    pk, taskrec_keys[TK_STATE], taskrec_state_name(r->state));
	proto_pack_str(pk, taskrec_keys[TK_REASON]);
	taskrec_pack_text(pk, r->reason);
	proto_pack_str(pk, taskrec_keys[TK_FAILED_CHECK]);
	if (r->failed_check < 0)
		msgpack_pack_nil(pk);
	else
		msgpack_pack_int(pk, r->failed_check);
	proto_pack_str(pk, taskrec_keys[TK_CANCELLED_BY]);
	taskrec_pack_text(pk, r->cancelled_by);
	proto_pack_kv_u64(pk, taskrec_keys[TK_CREATED], r->created);
	proto_pack_str(pk, taskrec_keys[TK_STARTED]);
	taskrec_pack_time(pk, r->started);
	proto_pack_str(pk, taskrec_keys[TK_FINISHED]);
	taskrec_pack_time(pk, r->finished);
	proto_pack_str(pk, taskrec_keys[TK_AGENT]);
	taskrec_pack_agent(pk, r);
	proto_pack_str(pk, taskrec_keys[TK_DELIVERY]);
	taskrec_pack_delivery(pk, &r->delivery);
}

void
taskrec_pack(msgpack_packer *pk, const struct taskrec *r)
{
	msgpack_pack_map(pk, TASKREC_PACK_KEYS);
	taskrec_pack_keys(pk, r);
}

int
taskrec_encode(const struct taskrec *r, char **out, size_t *len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, TASKREC_PACK_KEYS + 1);
	proto_pack_kv_u64(&pk, taskrec_keys[TK_V], 1);
	taskrec_pack_keys(&pk, r);
	*out = sb.data;
	*len = sb.size;
	return 0;
}

/* Decoding: every refusal names where in the record it is ("checks[2].
 * argv[0]: longer than 4096 bytes"). */

struct taskrec_dec {
	char *why;
	size_t whymax;
};

static int __attribute__((format(printf, 3, 4)))
taskrec_fail(struct taskrec_dec *d, const char *at, const char *fmt, ...)
{
	int n = 0;
	va_list ap;

	if (*at != '\0')
		n = snprintf(d->why, d->whymax, "%s: ", at);
	if (n < 0 || (size_t)n >= d->whymax)
		return -1;
	va_start(ap, fmt);
	vsnprintf(d->why + n, d->whymax - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* at.key, or key at the top. */
static void
taskrec_at(char *buf, size_t len, const char *at, const char *key)
{
	snprintf(buf, len, "%s%s%s", at, *at != '\0' ? "." : "", key);
}

/* Whether the key k is a short word a refusal may quote. */
static bool
taskrec_word(const msgpack_object *k)
{
	uint32_t i;

	if (k->via.str.size == 0 || k->via.str.size > 32)
		return false;
	for (i = 0; i < k->via.str.size; i++)
		if (!((k->via.str.ptr[i] >= 'a' && k->via.str.ptr[i] <= 'z') ||
		        (k->via.str.ptr[i] >= '0' &&
		            k->via.str.ptr[i] <= '9') ||
		        k->via.str.ptr[i] == '_'))
			return false;
	return true;
}

/* Whether the string object k is word. */
static bool
taskrec_is(const msgpack_object *k, const char *word)
{
	return k->type == MSGPACK_OBJECT_STR &&
	    k->via.str.size == strlen(word) &&
	    memcmp(k->via.str.ptr, word, k->via.str.size) == 0;
}

/* Finds in the map o (at) the value of each of the n names, in vals:
 * every key one of them, none twice, none missing. */
static int
taskrec_map(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    const char *const *names, size_t n, const msgpack_object **vals)
{
	const msgpack_object *k;
	uint32_t i;
	size_t j;

	if (o->type != MSGPACK_OBJECT_MAP)
		return taskrec_fail(d, at, "not a map");
	for (j = 0; j < n; j++)
		vals[j] = NULL;
	for (i = 0; i < o->via.map.size; i++) {
		k = &o->via.map.ptr[i].key;
		if (k->type != MSGPACK_OBJECT_STR)
			return taskrec_fail(d, at, "a key is not a string");
		for (j = 0; j < n && !taskrec_is(k, names[j]); j++)
			;
		if (j == n && taskrec_word(k))
			return taskrec_fail(d, at, "unknown key \"%.*s\"",
			    (int)k->via.str.size, k->via.str.ptr);
		if (j == n)
			return taskrec_fail(d, at, "unknown key");
		if (vals[j] != NULL)
			return taskrec_fail(
			    d, at, "key \"%s\" given twice", names[j]);
		vals[j] = &o->via.map.ptr[i].val;
	}
	for (j = 0; j < n; j++)
		if (vals[j] == NULL)
			return taskrec_fail(
			    d, at, "missing key \"%s\"", names[j]);
	return 0;
}

/* A string of min-max bytes with no NUL in it. */
static int
taskrec_str_ok(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    size_t min, size_t max)
{
	if (o->type != MSGPACK_OBJECT_STR)
		return taskrec_fail(d, at, "not a string");
	if (o->via.str.size < min)
		return taskrec_fail(
		    d, at, "%s", min == 1 ? "empty" : "too short");
	if (o->via.str.size > max)
		return taskrec_fail(d, at, "longer than %zu bytes", max);
	if (memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL)
		return taskrec_fail(d, at, "holds a NUL byte");
	return 0;
}

/* The same, copied into out (max + 1 bytes). */
static int
taskrec_str(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    size_t min, size_t max, char *out)
{
	if (taskrec_str_ok(d, at, o, min, max) < 0)
		return -1;
	memcpy(out, o->via.str.ptr, o->via.str.size);
	out[o->via.str.size] = '\0';
	return 0;
}

static int
taskrec_strdup(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    size_t min, size_t max, char **out)
{
	if (taskrec_str_ok(d, at, o, min, max) < 0)
		return -1;
	*out = xstrndup(o->via.str.ptr, o->via.str.size);
	return 0;
}

/* A string or nil ("" in out), never an empty string. */
static int
taskrec_text(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    size_t max, char *out)
{
	if (o->type != MSGPACK_OBJECT_NIL)
		return taskrec_str(d, at, o, 1, max, out);
	*out = '\0';
	return 0;
}

/* Exactly len lowercase hex digits. */
static int
taskrec_hex(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    size_t len, char *out)
{
	uint32_t i;

	if (o->type != MSGPACK_OBJECT_STR || o->via.str.size != len)
		return taskrec_fail(d, at, "not %zu lowercase hex digits", len);
	for (i = 0; i < len; i++)
		if (!((o->via.str.ptr[i] >= '0' && o->via.str.ptr[i] <= '9') ||
		        (o->via.str.ptr[i] >= 'a' && o->via.str.ptr[i] <= 'f')))
			return taskrec_fail(
			    d, at, "not %zu lowercase hex digits", len);
	memcpy(out, o->via.str.ptr, len);
	out[len] = '\0';
	return 0;
}

static int
taskrec_u64(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    uint64_t max, uint64_t *out)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return taskrec_fail(d, at, "not an unsigned integer");
	if (o->via.u64 > max)
		return taskrec_fail(d, at, "more than %" PRIu64, max);
	*out = o->via.u64;
	return 0;
}

static int
taskrec_bool(
    struct taskrec_dec *d, const char *at, const msgpack_object *o, bool *out)
{
	if (o->type != MSGPACK_OBJECT_BOOLEAN)
		return taskrec_fail(d, at, "not a boolean");
	*out = o->via.boolean;
	return 0;
}

/* A time in ms since the epoch, or nil (0: not yet). */
static int
taskrec_time(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    uint64_t *out)
{
	if (o->type == MSGPACK_OBJECT_NIL) {
		*out = 0;
		return 0;
	}
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 == 0)
		return taskrec_fail(d, at,
		    "not a time (ms since the epoch) "
		    "or nil");
	*out = o->via.u64;
	return 0;
}

/* nil, {code: 0-255} or {signal: 1-127}, as a wait status tells. */
static int
taskrec_exit(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    struct taskrec_exit *e)
{
	const msgpack_object *k, *v;
	char where[64];
	uint64_t n = 0;

	memset(e, 0, sizeof *e);
	if (o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (o->type != MSGPACK_OBJECT_MAP || o->via.map.size != 1)
		return taskrec_fail(d, at, "not nil, {code} or {signal}");
	k = &o->via.map.ptr[0].key;
	v = &o->via.map.ptr[0].val;
	e->has = true;
	if (taskrec_is(k, "code")) {
		taskrec_at(where, sizeof where, at, "code");
		if (taskrec_u64(d, where, v, 255, &n) < 0)
			return -1;
		e->code = (int)n;
		return 0;
	}
	if (!taskrec_is(k, "signal"))
		return taskrec_fail(d, at, "not nil, {code} or {signal}");
	taskrec_at(where, sizeof where, at, "signal");
	if (taskrec_u64(d, where, v, 127, &n) < 0)
		return -1;
	if (n == 0)
		return taskrec_fail(d, where, "0 is no signal");
	e->code = -1;
	e->signal = (int)n;
	return 0;
}

/* An array of at most max strings of 1-len bytes each (none holding
 * forbid, if not NUL) into *vp, NULL-terminated, and its count. */
static int
taskrec_strv(struct taskrec_dec *d, const char *at, const msgpack_object *o,
    size_t max, size_t len, char forbid, char ***vp, size_t *np)
{
	const msgpack_object *s;
	char where[64];
	uint32_t i;

	if (o->type != MSGPACK_OBJECT_ARRAY)
		return taskrec_fail(d, at, "not an array");
	if (o->via.array.size > max)
		return taskrec_fail(d, at, "more than %zu strings", max);
	*vp = xcalloc(o->via.array.size + 1, sizeof **vp);
	*np = o->via.array.size;
	for (i = 0; i < o->via.array.size; i++) {
		s = &o->via.array.ptr[i];
		snprintf(where, sizeof where, "%s[%u]", at, i);
		if (taskrec_strdup(d, where, s, 1, len, &(*vp)[i]) < 0)
			return -1;
		if (forbid != '\0' && strchr((*vp)[i], forbid) != NULL)
			return taskrec_fail(d, where, "holds '%c'", forbid);
	}
	return 0;
}

static int
taskrec_check(struct taskrec_dec *d, uint32_t i, const msgpack_object *o,
    struct taskrec_check *c)
{
	const msgpack_object *v[CK_N];
	char at[32], where[64];

	snprintf(at, sizeof at, "checks[%u]", i);
	if (taskrec_map(d, at, o, taskrec_check_keys, CK_N, v) < 0)
		return -1;
	taskrec_at(where, sizeof where, at, "argv");
	if (taskrec_strv(d, where, v[CK_ARGV], TASKREC_ARGV_MAX,
	        TASKREC_ARG_MAX, '\0', &c->argv, &c->argc) < 0)
		return -1;
	if (c->argc == 0)
		return taskrec_fail(d, where, "empty");
	taskrec_at(where, sizeof where, at, "ran");
	if (taskrec_bool(d, where, v[CK_RAN], &c->ran) < 0)
		return -1;
	taskrec_at(where, sizeof where, at, "exit");
	if (taskrec_exit(d, where, v[CK_EXIT], &c->exit) < 0)
		return -1;
	taskrec_at(where, sizeof where, at, "started");
	if (taskrec_time(d, where, v[CK_STARTED], &c->started) < 0)
		return -1;
	taskrec_at(where, sizeof where, at, "finished");
	if (taskrec_time(d, where, v[CK_FINISHED], &c->finished) < 0)
		return -1;
	taskrec_at(where, sizeof where, at, "bytes");
	return taskrec_u64(d, where, v[CK_BYTES], UINT64_MAX, &c->bytes);
}

static int
taskrec_checks(
    struct taskrec_dec *d, const msgpack_object *o, struct taskrec *r)
{
	uint32_t i;

	if (o->type != MSGPACK_OBJECT_ARRAY)
		return taskrec_fail(d, "checks", "not an array");
	if (o->via.array.size > TASKREC_CHECKS_MAX)
		return taskrec_fail(
		    d, "checks", "more than %d checks", TASKREC_CHECKS_MAX);
	/* Counted first, so that taskrec_free finds what a refusal half
	 * way left. */
	r->nchecks = o->via.array.size;
	for (i = 0; i < o->via.array.size; i++)
		if (taskrec_check(d, i, &o->via.array.ptr[i], &r->checks[i]) <
		    0)
			return -1;
	return 0;
}

/* A runtime's name, as the catalog allows it. */
static int
taskrec_runtime(struct taskrec_dec *d, const msgpack_object *o, char *out)
{
	const char *p;

	if (taskrec_str(d, "runtime", o, 1, TASKREC_RUNTIME_MAX, out) < 0)
		return -1;
	for (p = out; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		        (*p >= '0' && *p <= '9') || strchr("._-", *p) != NULL))
			return taskrec_fail(d, "runtime",
			    "not a runtime's name (A-Z a-z 0-9 . _ -)");
	return 0;
}

static int
taskrec_state(
    struct taskrec_dec *d, const msgpack_object *o, enum taskrec_state *s)
{
	int i;

	if (o->type != MSGPACK_OBJECT_STR)
		return taskrec_fail(d, "state", "not a string");
	for (i = 0; i < TASKREC_NSTATES; i++)
		if (o->via.str.size == strlen(taskrec_state_names[i]) &&
		    memcmp(o->via.str.ptr, taskrec_state_names[i],
		        o->via.str.size) == 0) {
			*s = (enum taskrec_state)i;
			return 0;
		}
	return taskrec_fail(d, "state", "not a task's state");
}

/* What was asked: id, runtime, prompt, checks, env, timeout. */
static int
taskrec_decode_request(
    struct taskrec_dec *d, const msgpack_object **v, struct taskrec *r)
{
	uint64_t t = 0;

	if (taskrec_hex(d, "id", v[TK_ID], TASKREC_ID_LEN, r->id) < 0 ||
	    taskrec_runtime(d, v[TK_RUNTIME], r->runtime) < 0 ||
	    taskrec_strdup(d, "prompt", v[TK_PROMPT], 1, TASKREC_PROMPT_MAX,
	        &r->prompt) < 0 ||
	    taskrec_checks(d, v[TK_CHECKS], r) < 0 ||
	    taskrec_strv(d, "env", v[TK_ENV], TASKREC_ENV_MAX,
	        TASKREC_ENV_NAME_MAX, '=', &r->env, &r->nenv) < 0 ||
	    taskrec_u64(
	        d, "timeout_s", v[TK_TIMEOUT], TASKREC_TIMEOUT_MAX, &t) < 0)
		return -1;
	r->timeout_s = (uint32_t)t;
	return 0;
}

static int
taskrec_failed_check(
    struct taskrec_dec *d, const msgpack_object *o, struct taskrec *r)
{
	uint64_t n = 0;

	if (o->type == MSGPACK_OBJECT_NIL) {
		r->failed_check = -1;
		return 0;
	}
	if (taskrec_u64(d, "failed_check", o, UINT64_MAX, &n) < 0)
		return -1;
	if (n >= r->nchecks)
		return taskrec_fail(d, "failed_check",
		    "no check %llu (the task has %zu)", (unsigned long long)n,
		    r->nchecks);
	r->failed_check = (int)n;
	return 0;
}

/* How it went: state, reason, failed check, who cancelled, times. */
static int
taskrec_decode_state(
    struct taskrec_dec *d, const msgpack_object **v, struct taskrec *r)
{
	if (taskrec_state(d, v[TK_STATE], &r->state) < 0 ||
	    taskrec_text(d, "reason", v[TK_REASON], TASKREC_REASON_MAX - 1,
	        r->reason) < 0 ||
	    taskrec_failed_check(d, v[TK_FAILED_CHECK], r) < 0 ||
	    taskrec_text(d, "cancelled_by", v[TK_CANCELLED_BY],
	        TASKREC_WHO_MAX - 1, r->cancelled_by) < 0 ||
	    taskrec_u64(d, "created", v[TK_CREATED], UINT64_MAX, &r->created) <
	        0 ||
	    taskrec_time(d, "started", v[TK_STARTED], &r->started) < 0 ||
	    taskrec_time(d, "finished", v[TK_FINISHED], &r->finished) < 0)
		return -1;
	return 0;
}

static int
taskrec_agent(struct taskrec_dec *d, const msgpack_object *o, struct taskrec *r)
{
	const msgpack_object *v[AK_N];

	if (taskrec_map(d, "agent", o, taskrec_agent_keys, AK_N, v) < 0 ||
	    taskrec_exit(d, "agent.exit", v[AK_EXIT], &r->agent) < 0 ||
	    taskrec_u64(d, "agent.bytes", v[AK_BYTES], UINT64_MAX,
	        &r->agent_bytes) < 0 ||
	    taskrec_u64(d, "agent.stderr_bytes", v[AK_STDERR_BYTES], UINT64_MAX,
	        &r->stderr_bytes) < 0)
		return -1;
	return 0;
}

static int
taskrec_delivery(
    struct taskrec_dec *d, const msgpack_object *o, struct taskrec_delivery *t)
{
	const msgpack_object *v[DK_N];

	if (o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (taskrec_map(d, "delivery", o, taskrec_delivery_keys, DK_N, v) < 0)
		return -1;
	t->done = true;
	if (taskrec_str(d, "delivery.branch", v[DK_BRANCH], 1,
	        TASKREC_BRANCH_MAX, t->branch) < 0 ||
	    taskrec_hex(d, "delivery.commit", v[DK_COMMIT], 40, t->commit) <
	        0 ||
	    taskrec_hex(d, "delivery.base", v[DK_BASE], 40, t->base) < 0 ||
	    taskrec_bool(d, "delivery.pushed", v[DK_PUSHED], &t->pushed) < 0 ||
	    taskrec_hex(d, "delivery.diff", v[DK_DIFF], 64, t->diff) < 0 ||
	    taskrec_u64(d, "delivery.at", v[DK_AT], UINT64_MAX, &t->at) < 0)
		return -1;
	return 0;
}

static int
taskrec_decode_object(
    struct taskrec_dec *d, const msgpack_object *o, struct taskrec *r)
{
	const msgpack_object *v[TK_N];

	if (taskrec_map(d, "", o, taskrec_keys, TK_N, v) < 0)
		return -1;
	if (v[TK_V]->type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
	    v[TK_V]->via.u64 != 1)
		return taskrec_fail(d, "v", "not version 1");
	if (taskrec_decode_request(d, v, r) < 0 ||
	    taskrec_decode_state(d, v, r) < 0 ||
	    taskrec_agent(d, v[TK_AGENT], r) < 0 ||
	    taskrec_delivery(d, v[TK_DELIVERY], &r->delivery) < 0)
		return -1;
	return 0;
}

int
taskrec_decode(
    const void *buf, size_t len, struct taskrec *r, char *whybuf, size_t whymax)
{
	struct taskrec_dec d = {whybuf, whymax};
	msgpack_unpacked u;
	const char *why;
	int rc;

	if (len > TASKREC_FILE_MAX)
		return taskrec_fail(
		    &d, "", "larger than %u bytes", TASKREC_FILE_MAX);
	/* Before msgpack-c allocates by what a header claims. */
	if (mpcheck_object(buf, len, &taskrec_limits, &why) < 0)
		return taskrec_fail(&d, "", "%s", why);
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, buf, len, NULL) != MSGPACK_UNPACK_SUCCESS)
		rc = taskrec_fail(&d, "", "not msgpack");
	else
		rc = taskrec_decode_object(&d, &u.data, r);
	msgpack_unpacked_destroy(&u);
	if (rc < 0)
		taskrec_free(r);
	return rc;
}

/* Files. */

static bool
taskrec_id_ok(const char *id)
{
	size_t i;

	for (i = 0; i < TASKREC_ID_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		        (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return id[i] == '\0';
}

/* Makes path 0700 unless it is there; its parent is synced when it was
 * made, so that the new entry survives a crash. */
static int
taskrec_mkdir(const char *path)
{
	char *parent, *slash;
	int fd, rc = 0;

	if (mkdir(path, 0700) < 0)
		return errno == EEXIST ? 0 : -1;
	parent = xstrdup(path);
	slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	if ((fd = open(slash != NULL ? parent : ".",
	         O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    fsync(fd) < 0)
		rc = -1;
	if (fd >= 0)
		close(fd);
	free(parent);
	return rc;
}

int
taskrec_save(const char *dir, const struct taskrec *r)
{
	char *path, *buf;
	size_t len;
	int tdir = -1, rc = -1, e;

	if (!taskrec_id_ok(r->id)) {
		errno = EINVAL;
		return -1;
	}
	path = xasprintf("%s/%s", dir, r->id);
	if (taskrec_mkdir(dir) == 0 && taskrec_mkdir(path) == 0 &&
	    (tdir = open(
	         path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		taskrec_encode(r, &buf, &len);
		rc = fsatomic_replace(tdir, "record", buf, len);
		free(buf);
	}
	e = errno;
	if (tdir >= 0)
		close(tdir);
	free(path);
	errno = e;
	return rc;
}

/* Reads <dir>/<id>/record into r; NULL, or why not. */
static const char *
taskrec_load_one(
    int dfd, const char *id, struct taskrec *r, char *why, size_t whymax)
{
	char path[TASKREC_ID_LEN + sizeof "/record"];
	struct stat st;
	char *buf;
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof path, "%.*s/record", TASKREC_ID_LEN, id);
	if ((fd = openat(dfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return strerror(errno);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > TASKREC_FILE_MAX) {
		close(fd);
		return "not a regular file of at most the largest record's "
		       "size";
	}
	buf = xmalloc((size_t)st.st_size);
	do
		n = pread(fd, buf, (size_t)st.st_size, 0);
	while (n < 0 && errno == EINTR);
	e = errno;
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return n < 0 ? strerror(e) : "shorter than its size";
	}
	if (taskrec_decode(buf, (size_t)n, r, why, whymax) < 0) {
		free(buf);
		return why;
	}
	free(buf);
	if (strcmp(r->id, id) != 0) {
		snprintf(why, whymax, "the record of task %s", r->id);
		taskrec_free(r);
		return why;
	}
	return NULL;
}

static int
taskrec_cmp_created(const void *a, const void *b)
{
	const struct taskrec *x = a, *y = b;

	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(x->id, y->id);
}

int
taskrec_load_all(const char *dir, struct taskrec **out, size_t *n)
{
	struct taskrec *all = NULL;
	size_t nall = 0, alloc = 0;
	char why[256];
	const char *bad;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*n = 0;
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (!taskrec_id_ok(de->d_name)) {
			log_warn("%s/%s: not a task's directory; left alone",
			    dir, de->d_name);
			continue;
		}
		if (nall == alloc) {
			alloc = alloc == 0 ? 64 : alloc * 2;
			all = xreallocarray(all, alloc, sizeof *all);
		}
		taskrec_init(&all[nall]);
		bad = taskrec_load_one(
		    dirfd(d), de->d_name, &all[nall], why, sizeof why);
		if (bad != NULL)
			log_warn("%s/%s/record: %s; skipped, left as it is",
			    dir, de->d_name, bad);
		else
			nall++;
	}
	closedir(d);
	if (nall > 0)
		qsort(all, nall, sizeof *all, taskrec_cmp_created);
	*out = all;
	*n = nall;
	return 0;
}

void
taskrec_remove(const char *dir, const char *id)
{
	struct dirent *de;
	char *path;
	DIR *d;

	if (!taskrec_id_ok(id))
		return;
	path = xasprintf("%s/%s", dir, id);
	if ((d = opendir(path)) == NULL) {
		if (errno != ENOENT)
			log_warn("%s: %s", path, strerror(errno));
		free(path);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0 &&
		    unlinkat(dirfd(d), de->d_name, 0) < 0)
			log_warn(
			    "%s/%s: %s", path, de->d_name, strerror(errno));
	closedir(d);
	if (rmdir(path) < 0)
		log_warn("%s: %s", path, strerror(errno));
	free(path);
}
