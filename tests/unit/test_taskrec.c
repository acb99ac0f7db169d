/* test_taskrec: unit tests of a task's record (supervisor/taskrec.c): full
 * and minimal records come back exactly as they were packed; every limit
 * holds at its edge and refuses one past it, naming where; malformed
 * records (wrong types, missing, unknown or repeated keys, truncated or
 * trailing bytes, hostile headers) are refused with the reason; records
 * saved are loaded back oldest first, a bad file among them skipped and
 * left as it was, and a removed one is gone. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"
#include "scratch.h"
#include "tap.h"
#include "taskrec.h"
#include "xmalloc.h"

#define ID_A "0123456789abcdef"
#define ID_B "fedcba9876543210"
#define ID_C "00000000000000ff"

/* n strings, each of len bytes of c (len 0: "s0", "s1", ...). */
static char **
strv(size_t n, size_t len, char c)
{
	char **v = xcalloc(n + 1, sizeof *v);
	size_t i;

	for (i = 0; i < n; i++) {
		if (len == 0)
			v[i] = xasprintf("s%zu", i);
		else {
			v[i] = xmalloc(len + 1);
			memset(v[i], c, len);
			v[i][len] = '\0';
		}
	}
	return v;
}

/* len bytes of c. */
static char *
fill(size_t len, char c)
{
	char *p = xmalloc(len + 1);

	memset(p, c, len);
	p[len] = '\0';
	return p;
}

static void
strv_free(char **v)
{
	size_t i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/* c's arguments are now argc of argv (NULL-terminated or not). */
static void
argv_set(struct taskrec_check *c, char **argv, size_t argc)
{
	strv_free(c->argv);
	c->argv = argv;
	c->argc = argc;
}

static void
env_set(struct taskrec *r, char **env, size_t n)
{
	strv_free(r->env);
	r->env = env;
	r->nenv = n;
}

static void
minimal(struct taskrec *r, const char *id)
{
	taskrec_init(r);
	snprintf(r->id, sizeof r->id, "%s", id);
	snprintf(r->runtime, sizeof r->runtime, "opencode");
	r->prompt = xstrdup("x");
	r->created = 1700000000000;
}

/* Every field set, every kind of value there is. */
static void
full(struct taskrec *r)
{
	char **argv0 = xcalloc(3, sizeof *argv0);
	char **argv1 = xcalloc(5, sizeof *argv1);

	minimal(r, ID_A);
	free(r->prompt);
	r->prompt = xstrdup("fix the failing test\nand say why");
	r->nchecks = 2;
	argv0[0] = xstrdup("bun");
	argv0[1] = xstrdup("test");
	argv_set(&r->checks[0], argv0, 2);
	argv1[0] = xstrdup("make");
	argv1[1] = xstrdup("lint");
	argv1[2] = xstrdup("-j");
	argv1[3] = xstrdup("2");
	argv_set(&r->checks[1], argv1, 4);
	r->checks[0].ran = true;
	r->checks[0].exit = (struct taskrec_exit){true, 1, 0};
	r->checks[0].started = 1700000005000;
	r->checks[0].finished = 1700000006000;
	r->checks[0].bytes = 12345;
	r->checks[1].ran = true;
	r->checks[1].exit = (struct taskrec_exit){true, -1, 9};
	r->checks[1].started = 1700000006000;
	r->checks[1].finished = 1700000007000;
	r->checks[1].bytes = 1ull << 40;
	env_set(r, strv(2, 0, 0), 2);
	r->timeout_s = 3600;
	r->state = TASKREC_FAILED;
	snprintf(r->reason, sizeof r->reason,
	    "check 0 (bun test) exited with status 1");
	r->failed_check = 0;
	snprintf(r->cancelled_by, sizeof r->cancelled_by, "the backend");
	r->started = 1700000001000;
	r->finished = 1700000007000;
	r->agent = (struct taskrec_exit){true, 0, 0};
	r->agent_bytes = 999;
	r->stderr_bytes = 7;
	r->delivery.done = true;
	snprintf(r->delivery.branch, sizeof r->delivery.branch, "task/fix-it");
	memset(r->delivery.commit, 'a', 40);
	memset(r->delivery.base, 'b', 40);
	r->delivery.pushed = true;
	memset(r->delivery.diff, 'c', 64);
	r->delivery.at = 1700000008000;
}

static void
exit_eq(const struct taskrec_exit *a, const struct taskrec_exit *b)
{
	ck_assert(a->has == b->has);
	ck_assert_int_eq(a->code, b->code);
	ck_assert_int_eq(a->signal, b->signal);
}

static void
strv_eq(char *const *a, size_t na, char *const *b, size_t nb)
{
	size_t i;

	ck_assert_uint_eq(na, nb);
	for (i = 0; i < na; i++)
		ck_assert_str_eq(a[i], b[i]);
	ck_assert(nb == 0 || b[nb] == NULL);
}

static void
rec_eq(const struct taskrec *a, const struct taskrec *b)
{
	const struct taskrec_delivery *x = &a->delivery, *y = &b->delivery;
	size_t i;

	ck_assert_str_eq(a->id, b->id);
	ck_assert_str_eq(a->runtime, b->runtime);
	ck_assert_str_eq(a->prompt, b->prompt);
	strv_eq(a->env, a->nenv, b->env, b->nenv);
	ck_assert_uint_eq(a->timeout_s, b->timeout_s);
	ck_assert_int_eq(a->state, b->state);
	ck_assert_str_eq(a->reason, b->reason);
	ck_assert_int_eq(a->failed_check, b->failed_check);
	ck_assert_str_eq(a->cancelled_by, b->cancelled_by);
	ck_assert_uint_eq(a->created, b->created);
	ck_assert_uint_eq(a->started, b->started);
	ck_assert_uint_eq(a->finished, b->finished);
	exit_eq(&a->agent, &b->agent);
	ck_assert_uint_eq(a->agent_bytes, b->agent_bytes);
	ck_assert_uint_eq(a->stderr_bytes, b->stderr_bytes);
	ck_assert_uint_eq(a->nchecks, b->nchecks);
	for (i = 0; i < a->nchecks; i++) {
		const struct taskrec_check *c = &a->checks[i],
		                           *d = &b->checks[i];
		strv_eq(c->argv, c->argc, d->argv, d->argc);
		ck_assert(c->ran == d->ran);
		exit_eq(&c->exit, &d->exit);
		ck_assert_uint_eq(c->started, d->started);
		ck_assert_uint_eq(c->finished, d->finished);
		ck_assert_uint_eq(c->bytes, d->bytes);
	}
	ck_assert(x->done == y->done);
	ck_assert_str_eq(x->branch, y->branch);
	ck_assert_str_eq(x->commit, y->commit);
	ck_assert_str_eq(x->base, y->base);
	ck_assert(x->pushed == y->pushed);
	ck_assert_str_eq(x->diff, y->diff);
	ck_assert_uint_eq(x->at, y->at);
}

/* r's encoding decodes to r, and encodes again to the same bytes. */
static void
round_trip(const struct taskrec *r)
{
	char why[256], *a, *b;
	struct taskrec back;
	size_t na, nb;

	ck_assert_int_eq(taskrec_encode(r, &a, &na), 0);
	ck_assert_uint_le(na, TASKREC_FILE_MAX);
	taskrec_init(&back);
	ck_assert_msg(
	    taskrec_decode(a, na, &back, why, sizeof why) == 0, "%s", why);
	rec_eq(r, &back);
	ck_assert_int_eq(taskrec_encode(&back, &b, &nb), 0);
	ck_assert_uint_eq(na, nb);
	ck_assert(memcmp(a, b, na) == 0);
	taskrec_free(&back);
	free(a);
	free(b);
}

START_TEST(test_round_trip_full)
{
	struct taskrec r;

	full(&r);
	round_trip(&r);
	taskrec_free(&r);
}
END_TEST

START_TEST(test_round_trip_minimal)
{
	struct taskrec r;

	minimal(&r, ID_B);
	round_trip(&r);
	r.agent = (struct taskrec_exit){true, -1, 15};
	r.state = TASKREC_INTERRUPTED;
	round_trip(&r);
	taskrec_free(&r);
}
END_TEST

/* task.show's map: the record's keys, without "v" (nor position, which
 * is the queue's, not the record's). */
START_TEST(test_pack_is_the_record)
{
	const char *keys[] = {"id", "runtime", "prompt", "checks", "env",
	    "timeout_s", "state", "reason", "failed_check", "cancelled_by",
	    "created", "started", "finished", "agent", "delivery"};
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked u;
	struct taskrec r;
	size_t i;

	full(&r);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	taskrec_pack(&pk, &r);
	msgpack_unpacked_init(&u);
	ck_assert_int_eq(msgpack_unpack_next(&u, sb.data, sb.size, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	ck_assert_int_eq(u.data.type, MSGPACK_OBJECT_MAP);
	ck_assert_uint_eq(u.data.via.map.size, TASKREC_PACK_KEYS);
	ck_assert_uint_eq(sizeof keys / sizeof keys[0], TASKREC_PACK_KEYS);
	for (i = 0; i < TASKREC_PACK_KEYS; i++)
		ck_assert_msg(
		    proto_map_get(&u.data, keys[i]) != NULL, "%s", keys[i]);
	ck_assert_ptr_null(proto_map_get(&u.data, "v"));
	ck_assert_int_eq(
	    proto_map_get(&u.data, "state")->type, MSGPACK_OBJECT_STR);
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
	taskrec_free(&r);
}
END_TEST

/* Decoding r's encoding fails with why holding want, r left empty. */
static void
refused_bytes(const char *buf, size_t len, const char *want)
{
	struct taskrec back;
	char why[256];

	taskrec_init(&back);
	why[0] = '\0';
	ck_assert_int_eq(taskrec_decode(buf, len, &back, why, sizeof why), -1);
	ck_assert_msg(
	    strstr(why, want) != NULL, "\"%s\" lacks \"%s\"", why, want);
	ck_assert_ptr_null(back.prompt);
	ck_assert_ptr_null(back.env);
	ck_assert_uint_eq(back.nchecks, 0);
}

static void
refused(const struct taskrec *r, const char *want)
{
	char *buf;
	size_t len;

	ck_assert_int_eq(taskrec_encode(r, &buf, &len), 0);
	refused_bytes(buf, len, want);
	free(buf);
}

START_TEST(test_limits_in_the_struct)
{
	struct taskrec r;

	full(&r);
	free(r.prompt);
	r.prompt = fill(TASKREC_PROMPT_MAX, 'p');
	round_trip(&r);
	free(r.prompt);
	r.prompt = fill(TASKREC_PROMPT_MAX + 1, 'p');
	refused(&r, "prompt: longer than 262144 bytes");
	r.prompt[0] = '\0';
	refused(&r, "prompt: empty");

	argv_set(&r.checks[1], strv(TASKREC_ARGV_MAX, 0, 0), TASKREC_ARGV_MAX);
	free(r.prompt);
	r.prompt = xstrdup("p");
	round_trip(&r);
	argv_set(&r.checks[1], strv(TASKREC_ARGV_MAX + 1, 0, 0),
	    TASKREC_ARGV_MAX + 1);
	refused(&r, "checks[1].argv: more than 64 strings");
	argv_set(&r.checks[1], strv(0, 0, 0), 0);
	refused(&r, "checks[1].argv: empty");
	argv_set(&r.checks[1], strv(1, 0, 0), 1);

	r.nchecks = 3;
	argv_set(&r.checks[2], strv(1, TASKREC_ARG_MAX, 'a'), 1);
	round_trip(&r);
	argv_set(&r.checks[2], strv(1, TASKREC_ARG_MAX + 1, 'a'), 1);
	refused(&r, "checks[2].argv[0]: longer than 4096 bytes");
	r.checks[2].argv[0][0] = '\0';
	refused(&r, "checks[2].argv[0]: empty");
	argv_set(&r.checks[2], strv(1, 0, 0), 1);

	env_set(&r, strv(TASKREC_ENV_MAX, TASKREC_ENV_NAME_MAX, 'E'),
	    TASKREC_ENV_MAX);
	round_trip(&r);
	r.env[3][5] = '=';
	refused(&r, "env[3]: holds '='");
	env_set(&r, strv(TASKREC_ENV_MAX + 1, 1, 'E'), TASKREC_ENV_MAX + 1);
	refused(&r, "env: more than 64 strings");
	env_set(&r, strv(1, TASKREC_ENV_NAME_MAX + 1, 'E'), 1);
	refused(&r, "env[0]: longer than 128 bytes");
	env_set(&r, strv(0, 0, 0), 0);
	round_trip(&r);

	r.timeout_s = TASKREC_TIMEOUT_MAX;
	round_trip(&r);
	r.timeout_s = TASKREC_TIMEOUT_MAX + 1;
	refused(&r, "timeout_s: more than 604800");
	r.timeout_s = 0;
	round_trip(&r);
	memset(r.reason, 'r', sizeof r.reason - 1);
	memset(r.cancelled_by, 'w', sizeof r.cancelled_by - 1);
	memset(r.delivery.branch, 'b', sizeof r.delivery.branch - 1);
	memset(r.runtime, 'R', sizeof r.runtime - 1);
	round_trip(&r);
	r.failed_check = 2;
	round_trip(&r);
	r.failed_check = 3;
	refused(&r, "failed_check: no check 3 (the task has 3)");
	r.failed_check = -1;
	r.agent = (struct taskrec_exit){true, 255, 0};
	r.checks[0].exit = (struct taskrec_exit){true, -1, 127};
	round_trip(&r);
	r.agent.code = 256;
	refused(&r, "agent.exit.code: more than 255");
	r.agent.code = 0;
	r.checks[0].exit.signal = 128;
	refused(&r, "checks[0].exit.signal: more than 127");
	r.checks[0].exit.signal = 9;
	snprintf(r.runtime, sizeof r.runtime, "a/b");
	refused(&r, "runtime: not a runtime's name");
	r.runtime[0] = '\0';
	refused(&r, "runtime: empty");
	snprintf(r.runtime, sizeof r.runtime, "pi.v2_x-y");
	round_trip(&r);
	snprintf(r.id, sizeof r.id, "0123456789ABCDEF");
	refused(&r, "id: not 16 lowercase hex digits");
	snprintf(r.id, sizeof r.id, "0123456789abcde");
	refused(&r, "id: not 16 lowercase hex digits");
	snprintf(r.id, sizeof r.id, ID_A);
	r.delivery.commit[39] = 'g';
	refused(&r, "delivery.commit: not 40 lowercase hex digits");
	r.delivery.commit[39] = '\0';
	refused(&r, "delivery.commit: not 40 lowercase hex digits");
	taskrec_free(&r);
}
END_TEST

/* Every limit at its largest at once: the largest record there is fits
 * TASKREC_FILE_MAX and the checker's bounds. */
START_TEST(test_largest_record)
{
	struct taskrec r;
	size_t i;

	full(&r);
	free(r.prompt);
	r.prompt = fill(TASKREC_PROMPT_MAX, 'p');
	r.nchecks = TASKREC_CHECKS_MAX;
	for (i = 0; i < TASKREC_CHECKS_MAX; i++) {
		argv_set(&r.checks[i],
		    strv(TASKREC_ARGV_MAX, TASKREC_ARG_MAX, (char)('a' + i)),
		    TASKREC_ARGV_MAX);
		r.checks[i].exit = (struct taskrec_exit){true, -1, 9};
		r.checks[i].started = UINT64_MAX;
		r.checks[i].finished = UINT64_MAX;
		r.checks[i].bytes = UINT64_MAX;
	}
	env_set(&r, strv(TASKREC_ENV_MAX, TASKREC_ENV_NAME_MAX, 'E'),
	    TASKREC_ENV_MAX);
	memset(r.reason, 'r', sizeof r.reason - 1);
	memset(r.cancelled_by, 'w', sizeof r.cancelled_by - 1);
	memset(r.delivery.branch, 'b', sizeof r.delivery.branch - 1);
	memset(r.runtime, 'R', sizeof r.runtime - 1);
	r.failed_check = TASKREC_CHECKS_MAX - 1;
	r.created = r.started = r.finished = r.delivery.at = UINT64_MAX;
	r.agent_bytes = r.stderr_bytes = UINT64_MAX;
	round_trip(&r);
	taskrec_free(&r);
}
END_TEST

/* A record's msgpack, unpacked to be changed, then packed again. */
struct doc {
	msgpack_sbuffer sb;
	msgpack_unpacked u;
	msgpack_object *root;
};

static void
doc_open(struct doc *d, const struct taskrec *r)
{
	char *buf;
	size_t len;

	ck_assert_int_eq(taskrec_encode(r, &buf, &len), 0);
	msgpack_sbuffer_init(&d->sb);
	msgpack_sbuffer_write(&d->sb, buf, len);
	free(buf);
	msgpack_unpacked_init(&d->u);
	ck_assert_int_eq(
	    msgpack_unpack_next(&d->u, d->sb.data, d->sb.size, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	d->root = &d->u.data;
}

static void
doc_close(struct doc *d)
{
	msgpack_unpacked_destroy(&d->u);
	msgpack_sbuffer_destroy(&d->sb);
}

/* The value of key in map, to be changed in place. */
static msgpack_object *
get(msgpack_object *map, const char *key)
{
	msgpack_object *v = (msgpack_object *)proto_map_get(map, key);

	ck_assert_msg(v != NULL, "no %s", key);
	return v;
}

/* The pair of key in map. */
static msgpack_object_kv *
pair_of(msgpack_object *map, const char *key)
{
	msgpack_object_kv *kv;
	uint32_t i;

	for (i = 0; i < map->via.map.size; i++) {
		kv = &map->via.map.ptr[i];
		if (kv->key.type == MSGPACK_OBJECT_STR &&
		    kv->key.via.str.size == strlen(key) &&
		    memcmp(kv->key.via.str.ptr, key, strlen(key)) == 0)
			return kv;
	}
	ck_abort_msg("no %s", key);
	return NULL;
}

static msgpack_object *
key_of(msgpack_object *map, const char *key)
{
	return &pair_of(map, key)->key;
}

/* Drops key from map (the last pair takes its place). */
static void
drop(msgpack_object *map, const char *key)
{
	msgpack_object_kv *kv = pair_of(map, key);

	*kv = map->via.map.ptr[--map->via.map.size];
}

static msgpack_object
str(const char *s)
{
	return (msgpack_object){
	    .type = MSGPACK_OBJECT_STR, .via.str = {(uint32_t)strlen(s), s}};
}

static msgpack_object
num(uint64_t n)
{
	return (msgpack_object){
	    .type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = n};
}

/* The document, packed again, refused with want. */
static void
doc_refused(struct doc *d, const char *want)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_object(&pk, *d->root);
	refused_bytes(sb.data, sb.size, want);
	msgpack_sbuffer_destroy(&sb);
	doc_close(d);
}

/* The same, taken. */
static void
doc_taken(struct doc *d)
{
	struct taskrec back;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char why[256];

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_object(&pk, *d->root);
	taskrec_init(&back);
	ck_assert_msg(
	    taskrec_decode(sb.data, sb.size, &back, why, sizeof why) == 0, "%s",
	    why);
	taskrec_free(&back);
	msgpack_sbuffer_destroy(&sb);
	doc_close(d);
}

/* Limits a struct taskrec cannot go past, so the bytes do. */
START_TEST(test_limits_in_the_bytes)
{
	char longer[TASKREC_REASON_MAX + 1];
	msgpack_object checks[TASKREC_CHECKS_MAX + 1];
	struct taskrec r;
	struct doc d;
	size_t i;

	full(&r);
	memset(longer, 'x', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';

	doc_open(&d, &r);
	for (i = 0; i < TASKREC_CHECKS_MAX; i++)
		checks[i] = get(d.root, "checks")->via.array.ptr[i % 2];
	get(d.root, "checks")->via.array.ptr = checks;
	get(d.root, "checks")->via.array.size = TASKREC_CHECKS_MAX;
	doc_taken(&d);
	doc_open(&d, &r);
	for (i = 0; i <= TASKREC_CHECKS_MAX; i++)
		checks[i] = get(d.root, "checks")->via.array.ptr[i % 2];
	get(d.root, "checks")->via.array.ptr = checks;
	get(d.root, "checks")->via.array.size = TASKREC_CHECKS_MAX + 1;
	doc_refused(&d, "checks: more than 16 checks");

	doc_open(&d, &r);
	longer[TASKREC_REASON_MAX] = '\0';
	*get(d.root, "reason") = str(longer);
	doc_refused(&d, "reason: longer than 511 bytes");
	doc_open(&d, &r);
	longer[TASKREC_WHO_MAX] = '\0';
	*get(d.root, "cancelled_by") = str(longer);
	doc_refused(&d, "cancelled_by: longer than 127 bytes");
	doc_open(&d, &r);
	longer[TASKREC_RUNTIME_MAX + 1] = '\0';
	*get(d.root, "runtime") = str(longer);
	doc_refused(&d, "runtime: longer than 64 bytes");
	doc_open(&d, &r);
	memset(longer, 'x', sizeof longer - 1);
	longer[TASKREC_BRANCH_MAX + 1] = '\0';
	*get(get(d.root, "delivery"), "branch") = str(longer);
	doc_refused(&d, "delivery.branch: longer than 255 bytes");
	doc_open(&d, &r);
	*get(d.root, "id") = str(ID_A "0");
	doc_refused(&d, "id: not 16 lowercase hex digits");
	doc_open(&d, &r);
	*get(get(get(d.root, "checks")->via.array.ptr, "exit"), "code") =
	    num(256);
	doc_refused(&d, "checks[0].exit.code: more than 255");
	doc_open(&d, &r);
	*get(get(&get(d.root, "checks")->via.array.ptr[1], "exit"), "signal") =
	    num(0);
	doc_refused(&d, "checks[1].exit.signal: 0 is no signal");
	taskrec_free(&r);
}
END_TEST

START_TEST(test_malformed)
{
	msgpack_object bad = {
	    .type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = -1};
	msgpack_object nil = {.type = MSGPACK_OBJECT_NIL};
	msgpack_object two[2];
	struct taskrec r;
	struct doc d;

	full(&r);
	doc_open(&d, &r);
	*get(d.root, "state") = num(3);
	doc_refused(&d, "state: not a string");
	doc_open(&d, &r);
	*get(d.root, "state") = str("done");
	doc_refused(&d, "state: not a task's state");
	doc_open(&d, &r);
	*get(d.root, "checks") = str("bun test");
	doc_refused(&d, "checks: not an array");
	doc_open(&d, &r);
	get(get(d.root, "checks")->via.array.ptr + 1, "argv")
	    ->via.array.ptr[1] = num(1);
	doc_refused(&d, "checks[1].argv[1]: not a string");
	doc_open(&d, &r);
	*get(get(d.root, "checks")->via.array.ptr, "argv") = str("bun test");
	doc_refused(&d, "checks[0].argv: not an array");
	doc_open(&d, &r);
	*get(get(d.root, "checks")->via.array.ptr, "ran") = num(1);
	doc_refused(&d, "checks[0].ran: not a boolean");
	doc_open(&d, &r);
	*get(get(d.root, "agent"), "exit") = str("0");
	doc_refused(&d, "agent.exit: not nil, {code} or {signal}");
	doc_open(&d, &r);
	*key_of(get(get(d.root, "agent"), "exit"), "code") = str("status");
	doc_refused(&d, "agent.exit: not nil, {code} or {signal}");
	doc_open(&d, &r);
	*get(get(d.root, "agent"), "exit") = *get(d.root, "delivery");
	doc_refused(&d, "agent.exit: not nil, {code} or {signal}");
	doc_open(&d, &r);
	*get(d.root, "started") = num(0);
	doc_refused(&d, "started: not a time");
	doc_open(&d, &r);
	*get(d.root, "finished") = str("now");
	doc_refused(&d, "finished: not a time");
	doc_open(&d, &r);
	*get(d.root, "reason") = str("");
	doc_refused(&d, "reason: empty");
	doc_open(&d, &r);
	*get(d.root, "created") = bad;
	doc_refused(&d, "created: not an unsigned integer");
	doc_open(&d, &r);
	*get(d.root, "created") = nil;
	doc_refused(&d, "created: not an unsigned integer");
	doc_open(&d, &r);
	*get(d.root, "failed_check") = bad;
	doc_refused(&d, "failed_check: not an unsigned integer");
	doc_open(&d, &r);
	*get(d.root, "delivery") = str("main");
	doc_refused(&d, "delivery: not a map");
	doc_open(&d, &r);
	*get(get(d.root, "delivery"), "pushed") = nil;
	doc_refused(&d, "delivery.pushed: not a boolean");
	doc_open(&d, &r);
	*get(d.root, "env") = *get(d.root, "agent");
	doc_refused(&d, "env: not an array");
	doc_open(&d, &r);
	*get(d.root, "prompt") =
	    (msgpack_object){.type = MSGPACK_OBJECT_BIN, .via.bin = {1, "x"}};
	doc_refused(&d, "prompt: not a string");
	doc_open(&d, &r);
	*get(d.root, "prompt") = (msgpack_object){
	    .type = MSGPACK_OBJECT_STR, .via.str = {3, "a\0b"}};
	doc_refused(&d, "prompt: holds a NUL byte");
	doc_open(&d, &r);
	*d.root = *get(d.root, "checks");
	doc_refused(&d, "not a map");

	/* Keys: each known, each once, none missing. */
	doc_open(&d, &r);
	drop(d.root, "state");
	doc_refused(&d, "missing key \"state\"");
	doc_open(&d, &r);
	drop(get(d.root, "checks")->via.array.ptr + 1, "bytes");
	doc_refused(&d, "checks[1]: missing key \"bytes\"");
	doc_open(&d, &r);
	drop(d.root, "v");
	doc_refused(&d, "missing key \"v\"");
	doc_open(&d, &r);
	*key_of(d.root, "state") = str("status");
	doc_refused(&d, "unknown key \"status\"");
	doc_open(&d, &r);
	*key_of(get(d.root, "delivery"), "at") = str("when");
	doc_refused(&d, "delivery: unknown key \"when\"");
	doc_open(&d, &r);
	*key_of(d.root, "state") = str("St\xc3\xa4te");
	doc_refused(&d, "unknown key");
	doc_open(&d, &r);
	*key_of(d.root, "state") = num(7);
	doc_refused(&d, "a key is not a string");
	doc_open(&d, &r);
	*key_of(d.root, "reason") = str("state");
	doc_refused(&d, "key \"state\" given twice");
	/* task.show's position is not the file's. */
	doc_open(&d, &r);
	*key_of(d.root, "v") = str("position");
	doc_refused(&d, "unknown key \"position\"");
	doc_open(&d, &r);
	*get(d.root, "v") = num(2);
	doc_refused(&d, "v: not version 1");

	/* An exit is one of two maps of one key. */
	doc_open(&d, &r);
	two[0] = get(get(d.root, "agent"), "exit")->via.map.ptr[0].key;
	two[1] = num(0);
	get(get(d.root, "agent"), "exit")->via.map.size = 2;
	get(get(d.root, "agent"), "exit")->via.map.ptr =
	    (msgpack_object_kv[]){{two[0], two[1]}, {str("signal"), num(9)}};
	doc_refused(&d, "agent.exit: not nil, {code} or {signal}");
	taskrec_free(&r);
}
END_TEST

START_TEST(test_bad_bytes)
{
	/* A map that claims four billion pairs: refused before msgpack-c
	 * would allocate for them. */
	static const char huge[] = "\xdf\xff\xff\xff\xff\xa1v\x01";
	struct taskrec r;
	char *buf, *more, *big;
	size_t len, n;

	full(&r);
	ck_assert_int_eq(taskrec_encode(&r, &buf, &len), 0);
	for (n = 0; n < len; n++)
		refused_bytes(buf, n, "");
	refused_bytes(buf, len - 1, "truncated message");
	more = xmalloc(len + 1);
	memcpy(more, buf, len);
	more[len] = '\xc0';
	refused_bytes(more, len + 1, "trailing bytes");
	refused_bytes(huge, sizeof huge - 1, "container count exceeds");
	refused_bytes("\xc1", 1, "reserved");
	big = xcalloc(1, TASKREC_FILE_MAX + 1);
	refused_bytes(big, TASKREC_FILE_MAX + 1, "larger than 5242880 bytes");
	free(big);
	free(more);
	free(buf);
	taskrec_free(&r);
}
END_TEST

START_TEST(test_states)
{
	static const char *const names[] = {"queued", "running", "checking",
	    "succeeded", "failed", "cancelled", "timed_out", "interrupted"};
	struct taskrec r;
	int s;

	minimal(&r, ID_C);
	for (s = 0; s < TASKREC_NSTATES; s++) {
		ck_assert_str_eq(taskrec_state_name(s), names[s]);
		ck_assert(taskrec_state_final(s) == (s >= TASKREC_SUCCEEDED));
		r.state = s;
		round_trip(&r);
	}
	ck_assert(!taskrec_state_final(TASKREC_NSTATES));
	taskrec_free(&r);
}
END_TEST

/* Files. */

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = xmalloc(TASKREC_FILE_MAX);

	ck_assert_ptr_nonnull(f);
	*len = fread(buf, 1, TASKREC_FILE_MAX, f);
	fclose(f);
	return buf;
}

static void
spit(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
}

static void
mode_is(const char *path, mode_t mode)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, mode);
}

START_TEST(test_save_load_remove)
{
	static const char *const bad_ids[] = {
	    "1111111111111111", "2222222222222222", "3333333333333333"};
	char *scratch = scratch_make("test_taskrec");
	char *dir = xasprintf("%s/tasks", scratch);
	char *path, *before[3], *after, *buf;
	size_t nbefore[3], nafter, n, i, len;
	struct taskrec a, b, c, *all;

	/* No directory yet: no records. */
	ck_assert_int_eq(taskrec_load_all(dir, &all, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(all);

	full(&a);
	a.created = 300;
	minimal(&b, ID_B);
	b.created = 100;
	minimal(&c, ID_C);
	c.created = 200;
	ck_assert_int_eq(taskrec_save(dir, &a), 0);
	ck_assert_int_eq(taskrec_save(dir, &b), 0);
	ck_assert_int_eq(taskrec_save(dir, &c), 0);
	mode_is(dir, 0700);
	path = xasprintf("%s/%s", dir, ID_A);
	mode_is(path, 0700);
	free(path);
	path = xasprintf("%s/%s/record", dir, ID_A);
	mode_is(path, 0600);
	free(path);
	path = xasprintf("%s/%s/record.tmp", dir, ID_A);
	ck_assert_int_eq(access(path, F_OK), -1);
	free(path);

	/* Bad ones among them: garbage, a directory with no record, the
	 * record of another task, and something that is no task's. */
	for (i = 0; i < 3; i++) {
		path = xasprintf("%s/%s", dir, bad_ids[i]);
		ck_assert_int_eq(mkdir(path, 0700), 0);
		free(path);
	}
	path = xasprintf("%s/%s/record", dir, bad_ids[0]);
	spit(path, "\x82\xa1v\x01", 4);
	before[0] = slurp(path, &nbefore[0]);
	free(path);
	ck_assert_int_eq(taskrec_encode(&b, &buf, &len), 0);
	path = xasprintf("%s/%s/record", dir, bad_ids[2]);
	spit(path, buf, len);
	before[2] = slurp(path, &nbefore[2]);
	free(path);
	free(buf);
	path = xasprintf("%s/notes", dir);
	spit(path, "hello", 5);
	free(path);

	ck_assert_int_eq(taskrec_load_all(dir, &all, &n), 0);
	ck_assert_uint_eq(n, 3);
	rec_eq(&all[0], &b);
	rec_eq(&all[1], &c);
	rec_eq(&all[2], &a);
	for (i = 0; i < n; i++)
		taskrec_free(&all[i]);
	free(all);
	for (i = 0; i < 3; i += 2) {
		path = xasprintf("%s/%s/record", dir, bad_ids[i]);
		after = slurp(path, &nafter);
		ck_assert_uint_eq(nafter, nbefore[i]);
		ck_assert(memcmp(after, before[i], nafter) == 0);
		free(after);
		free(before[i]);
		free(path);
	}

	/* Saved again: the new record replaces the old one. */
	a.state = TASKREC_SUCCEEDED;
	a.failed_check = -1;
	a.reason[0] = '\0';
	ck_assert_int_eq(taskrec_save(dir, &a), 0);
	taskrec_remove(dir, ID_B);
	path = xasprintf("%s/%s", dir, ID_B);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(errno, ENOENT);
	free(path);
	taskrec_remove(dir, ID_B);
	ck_assert_int_eq(taskrec_load_all(dir, &all, &n), 0);
	ck_assert_uint_eq(n, 2);
	rec_eq(&all[0], &c);
	rec_eq(&all[1], &a);
	for (i = 0; i < n; i++)
		taskrec_free(&all[i]);
	free(all);

	/* An id that is no id names no directory. */
	snprintf(b.id, sizeof b.id, "../../etc");
	errno = 0;
	ck_assert_int_eq(taskrec_save(dir, &b), -1);
	ck_assert_int_eq(errno, EINVAL);
	taskrec_remove(dir, "..");
	path = xasprintf("%s/notes", dir);
	ck_assert_int_eq(access(path, F_OK), 0);
	free(path);

	taskrec_free(&a);
	taskrec_free(&b);
	taskrec_free(&c);
	free(dir);
	scratch_remove(scratch);
}
END_TEST

START_TEST(test_unreadable_dir)
{
	struct taskrec *all, r;
	size_t n;

	ck_assert_int_eq(taskrec_load_all("/dev/null", &all, &n), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	minimal(&r, ID_A);
	ck_assert_int_eq(taskrec_save("/dev/null/tasks", &r), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	taskrec_free(&r);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("taskrec");
	TCase *tc = tcase_create("taskrec");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_round_trip_full);
	tcase_add_test(tc, test_round_trip_minimal);
	tcase_add_test(tc, test_pack_is_the_record);
	tcase_add_test(tc, test_limits_in_the_struct);
	tcase_add_test(tc, test_largest_record);
	tcase_add_test(tc, test_limits_in_the_bytes);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_bad_bytes);
	tcase_add_test(tc, test_states);
	tcase_add_test(tc, test_save_load_remove);
	tcase_add_test(tc, test_unreadable_dir);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
