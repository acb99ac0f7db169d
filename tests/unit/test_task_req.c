/* test_task_req: unit tests of a task.run request's reading
 * (supervisor/task_req.c): every argument is taken at its limit and
 * refused one past it; each malformed type, an unknown runtime and a
 * runtime without task arguments are refused with their code and the
 * exact message; the request's limits go over the catalog's, never with
 * a disk limit; and of the request's env the record keeps only the
 * names. */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "config.h"
#include "proto.h"
#include "tap.h"
#include "task_req.h"
#include "taskrec.h"
#include "xmalloc.h"

/* fake takes tasks and has limits of its own; plain takes none. */
static const char catalog[] = "[runtime fake]\n"
                              "command = /bin/true\n"
                              "user = agent\n"
                              "workspace = /w\n"
                              "task = -p\n"
                              "memory_bytes = 64M\n"
                              "max_processes = 32\n"
                              "disk_bytes = 1G\n"
                              "[runtime plain]\n"
                              "command = /bin/true\n"
                              "user = agent\n"
                              "workspace = /w\n"
                              "rpc =\n";

static struct config cfg;

static void
setup(void)
{
	char *cause = NULL;

	config_init(&cfg);
	ck_assert_msg(config_parse_string(&cfg, catalog, "t.conf", &cause) == 0,
	    "%s", cause);
}

static void
teardown(void)
{
	config_free(&cfg);
}

/* A request's args being packed: its entries, counted for the map's head. */
struct req {
	msgpack_sbuffer body;
	msgpack_packer pk;
	size_t n;
};

/* What task_req_parse made of one. */
struct res {
	int rc;
	const char *code;
	char why[TASK_REQ_WHY_MAX];
	struct taskrec r;
	struct task_req q;
};

static void
pstrn(msgpack_packer *pk, const char *s, size_t len)
{
	msgpack_pack_str(pk, len);
	msgpack_pack_str_body(pk, s, len);
}

static void
pstr(msgpack_packer *pk, const char *s)
{
	pstrn(pk, s, strlen(s));
}

/* A string of len bytes of c (the caller frees it). */
static char *
filled(size_t len, char c)
{
	char *s = xmalloc(len + 1);

	memset(s, c, len);
	s[len] = '\0';
	return s;
}

/* Packs a string of len bytes of c. */
static void
pfilled(msgpack_packer *pk, size_t len, char c)
{
	char *s = filled(len, c);

	pstrn(pk, s, len);
	free(s);
}

/* The next entry's key; the caller packs its value. */
static msgpack_packer *
req_key(struct req *q, const char *key)
{
	q->n++;
	pstr(&q->pk, key);
	return &q->pk;
}

/* A request for runtime (NULL: none given). */
static void
req_init(struct req *q, const char *runtime)
{
	msgpack_sbuffer_init(&q->body);
	msgpack_packer_init(&q->pk, &q->body, msgpack_sbuffer_write);
	q->n = 0;
	if (runtime != NULL)
		pstr(req_key(q, "runtime"), runtime);
}

/* A request fake takes as it is, for the cases to add to. */
static void
req_base(struct req *q)
{
	req_init(q, "fake");
	pstr(req_key(q, "prompt"), "make it so");
}

/* Parses q's args (and frees q) into x, as berthd unpacks a message,
 * with whymax bytes of x->why for the message. */
static void
parse(struct req *q, struct res *x, size_t whymax)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked u;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, q->n);
	msgpack_sbuffer_write(&sb, q->body.data, q->body.size);
	msgpack_sbuffer_destroy(&q->body);
	msgpack_unpacked_init(&u);
	ck_assert_int_eq(msgpack_unpack_next(&u, sb.data, sb.size, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	taskrec_init(&x->r);
	x->code = NULL;
	memset(x->why, 0, sizeof x->why);
	x->rc = task_req_parse(
	    &u.data, &cfg, &x->r, &x->q, &x->code, x->why, whymax);
	/* What it took outlives the message. */
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
}

static void
res_free(struct res *x)
{
	taskrec_free(&x->r);
	child_strv_free(x->q.env);
}

/* q is taken; the caller checks x, then res_free's it. */
static void
expect_taken(struct req *q, struct res *x)
{
	parse(q, x, sizeof x->why);
	ck_assert_msg(x->rc == 0, "refused: %s", x->why);
	ck_assert_ptr_nonnull(x->q.rt);
	ck_assert_str_eq(x->q.rt->name, "fake");
	ck_assert_str_eq(x->r.runtime, "fake");
	ck_assert_ptr_nonnull(x->q.env);
	ck_assert_ptr_nonnull(x->r.env);
}

/* q is refused with code and exactly why. */
static void
expect_refused(struct req *q, const char *code, const char *why)
{
	struct res x;

	parse(q, &x, sizeof x.why);
	ck_assert_int_eq(x.rc, -1);
	ck_assert_ptr_nonnull(x.code);
	ck_assert_str_eq(x.code, code);
	ck_assert_str_eq(x.why, why);
	res_free(&x);
}

static void
expect_bad(struct req *q, const char *why)
{
	expect_refused(q, PROTO_E_BAD_ARGS, why);
}

#define PROMPT_WHY "prompt must be a string of 1-262144 bytes without NUL"
#define CHECKS_WHY                                                             \
	"checks must be a list of at most 16 checks, each an argv (a list of " \
	"strings)"
#define CHECK_WHY(i)                                                           \
	"checks[" #i "] must be an argv: a list of 1-64 strings of 1-4096 "    \
	"bytes"
#define ENV_WHY "env must be a map of at most 64 names to strings"
#define ENV_NAME_WHY "env's names are at most 128 bytes"
#define ENV_MAP_WHY "env must map names (without =) to strings"
#define TIMEOUT_WHY "task.run: \"timeout_s\" must be an integer in 0-604800"

/* The least request: the runtime, the prompt; nothing else is set. */
START_TEST(test_least)
{
	struct req q;
	struct res x;

	req_base(&q);
	expect_taken(&q, &x);
	ck_assert_str_eq(x.r.prompt, "make it so");
	ck_assert_uint_eq(x.r.nchecks, 0);
	ck_assert_uint_eq(x.r.nenv, 0);
	ck_assert_ptr_null(x.r.env[0]);
	ck_assert_ptr_null(x.q.env[0]);
	ck_assert_uint_eq(x.r.timeout_s, 0);
	res_free(&x);
	/* nil stands for absent. */
	req_base(&q);
	msgpack_pack_nil(req_key(&q, "checks"));
	msgpack_pack_nil(req_key(&q, "env"));
	msgpack_pack_nil(req_key(&q, "limits"));
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.r.nchecks, 0);
	ck_assert_uint_eq(x.r.nenv, 0);
	res_free(&x);
}
END_TEST

START_TEST(test_runtime)
{
	struct req q;

	req_init(&q, "nope");
	pstr(req_key(&q, "prompt"), "x");
	expect_refused(&q, PROTO_E_NOT_FOUND, "no runtime nope");
	req_init(&q, "plain");
	pstr(req_key(&q, "prompt"), "x");
	expect_bad(&q,
	    "runtime plain takes no tasks (its catalog entry has no task "
	    "arguments)");
	req_init(&q, NULL);
	pstr(req_key(&q, "prompt"), "x");
	expect_bad(&q, "task.run needs \"runtime\", a runtime's name");
	req_init(&q, NULL);
	msgpack_pack_uint64(req_key(&q, "runtime"), 1);
	pstr(req_key(&q, "prompt"), "x");
	expect_bad(&q, "task.run needs \"runtime\", a runtime's name");
	/* Longer than any runtime's name can be. */
	req_init(&q, NULL);
	pfilled(req_key(&q, "runtime"), CONFIG_MAX_NAME + 1, 'f');
	pstr(req_key(&q, "prompt"), "x");
	expect_bad(&q, "task.run needs \"runtime\", a runtime's name");
}
END_TEST

START_TEST(test_prompt_limit)
{
	struct req q;
	struct res x;
	char *p = filled(TASKREC_PROMPT_MAX, 'p');

	ck_assert_uint_eq(TASKREC_PROMPT_MAX, 262144);
	req_init(&q, "fake");
	pstrn(req_key(&q, "prompt"), p, TASKREC_PROMPT_MAX);
	expect_taken(&q, &x);
	ck_assert_str_eq(x.r.prompt, p);
	res_free(&x);
	req_init(&q, "fake");
	pfilled(req_key(&q, "prompt"), TASKREC_PROMPT_MAX + 1, 'p');
	expect_bad(&q, PROMPT_WHY);
	free(p);
}
END_TEST

START_TEST(test_prompt_malformed)
{
	struct req q;

	req_init(&q, "fake");
	expect_bad(&q, PROMPT_WHY);
	req_init(&q, "fake");
	msgpack_pack_uint64(req_key(&q, "prompt"), 7);
	expect_bad(&q, PROMPT_WHY);
	req_init(&q, "fake");
	pstr(req_key(&q, "prompt"), "");
	expect_bad(&q, PROMPT_WHY);
	req_init(&q, "fake");
	pstrn(req_key(&q, "prompt"), "do\0this", 7);
	expect_bad(&q, PROMPT_WHY);
	req_init(&q, "fake");
	msgpack_pack_bin(req_key(&q, "prompt"), 1);
	msgpack_pack_bin_body(&q.pk, "x", 1);
	expect_bad(&q, PROMPT_WHY);
}
END_TEST

/* Packs n checks, each of argc arguments of len bytes. */
static void
pchecks(msgpack_packer *pk, size_t n, size_t argc, size_t len)
{
	size_t i, j;

	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++) {
		msgpack_pack_array(pk, argc);
		for (j = 0; j < argc; j++)
			pfilled(pk, len, (char)('a' + j % 26));
	}
}

START_TEST(test_checks_limits)
{
	struct req q;
	struct res x;
	size_t i, j;

	/* The largest: 16 checks of 64 arguments of 4096 bytes. */
	req_base(&q);
	pchecks(req_key(&q, "checks"), TASKREC_CHECKS_MAX, TASKREC_ARGV_MAX,
	    TASKREC_ARG_MAX);
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.r.nchecks, 16);
	for (i = 0; i < x.r.nchecks; i++) {
		ck_assert_uint_eq(x.r.checks[i].argc, 64);
		for (j = 0; j < 64; j++) {
			ck_assert_uint_eq(strlen(x.r.checks[i].argv[j]), 4096);
			ck_assert_int_eq(
			    x.r.checks[i].argv[j][4095], 'a' + (int)j % 26);
		}
		ck_assert_ptr_null(x.r.checks[i].argv[64]);
		ck_assert(!x.r.checks[i].ran);
	}
	res_free(&x);
	req_base(&q);
	pchecks(req_key(&q, "checks"), TASKREC_CHECKS_MAX + 1, 1, 1);
	expect_bad(&q, CHECKS_WHY);
	req_base(&q);
	pchecks(req_key(&q, "checks"), 1, TASKREC_ARGV_MAX + 1, 1);
	expect_bad(&q, CHECK_WHY(0));
	req_base(&q);
	pchecks(req_key(&q, "checks"), 1, 1, TASKREC_ARG_MAX + 1);
	expect_bad(&q, CHECK_WHY(0));
}
END_TEST

START_TEST(test_checks_named)
{
	struct req q;
	struct res x;

	/* A list of no checks is none. */
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 0);
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.r.nchecks, 0);
	res_free(&x);
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 2);
	msgpack_pack_array(&q.pk, 2);
	pstr(&q.pk, "bun");
	pstr(&q.pk, "test");
	msgpack_pack_array(&q.pk, 1);
	pfilled(&q.pk, TASKREC_ARG_MAX + 1, 'z');
	expect_bad(&q, CHECK_WHY(1));
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 3);
	msgpack_pack_array(&q.pk, 1);
	pstr(&q.pk, "/bin/true");
	msgpack_pack_array(&q.pk, 1);
	pstr(&q.pk, "/bin/true");
	msgpack_pack_array(&q.pk, TASKREC_ARGV_MAX + 1);
	for (int i = 0; i <= TASKREC_ARGV_MAX; i++)
		pstr(&q.pk, "a");
	expect_bad(&q, CHECK_WHY(2));
	/* Each at its limit, and the order and words kept. */
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 2);
	msgpack_pack_array(&q.pk, 2);
	pstr(&q.pk, "bun");
	pstr(&q.pk, "test");
	msgpack_pack_array(&q.pk, 1);
	pstr(&q.pk, "make");
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.r.nchecks, 2);
	ck_assert_uint_eq(x.r.checks[0].argc, 2);
	ck_assert_str_eq(x.r.checks[0].argv[0], "bun");
	ck_assert_str_eq(x.r.checks[0].argv[1], "test");
	ck_assert_ptr_null(x.r.checks[0].argv[2]);
	ck_assert_uint_eq(x.r.checks[1].argc, 1);
	ck_assert_str_eq(x.r.checks[1].argv[0], "make");
	res_free(&x);
}
END_TEST

START_TEST(test_checks_malformed)
{
	struct req q;

	req_base(&q);
	pstr(req_key(&q, "checks"), "/bin/true");
	expect_bad(&q, CHECKS_WHY);
	req_base(&q);
	msgpack_pack_map(req_key(&q, "checks"), 0);
	expect_bad(&q, CHECKS_WHY);
	/* An empty argv. */
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 1);
	msgpack_pack_array(&q.pk, 0);
	expect_bad(&q, CHECK_WHY(0));
	/* A check that is a string, not an argv. */
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 2);
	msgpack_pack_array(&q.pk, 1);
	pstr(&q.pk, "/bin/true");
	pstr(&q.pk, "/bin/true");
	expect_bad(&q, CHECK_WHY(1));
	/* A non-string element. */
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 3);
	msgpack_pack_array(&q.pk, 1);
	pstr(&q.pk, "/bin/true");
	msgpack_pack_array(&q.pk, 1);
	pstr(&q.pk, "/bin/true");
	msgpack_pack_array(&q.pk, 2);
	pstr(&q.pk, "/bin/echo");
	msgpack_pack_uint64(&q.pk, 1);
	expect_bad(&q, CHECK_WHY(2));
	/* An empty argument, and one with a NUL. */
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 1);
	msgpack_pack_array(&q.pk, 2);
	pstr(&q.pk, "/bin/echo");
	pstr(&q.pk, "");
	expect_bad(&q, CHECK_WHY(0));
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 1);
	msgpack_pack_array(&q.pk, 1);
	pstrn(&q.pk, "/bin/true\0x", 11);
	expect_bad(&q, CHECK_WHY(0));
	/* A check as a map. */
	req_base(&q);
	msgpack_pack_array(req_key(&q, "checks"), 1);
	msgpack_pack_map(&q.pk, 1);
	pstr(&q.pk, "argv");
	msgpack_pack_array(&q.pk, 1);
	pstr(&q.pk, "/bin/true");
	expect_bad(&q, CHECK_WHY(0));
}
END_TEST

/* Packs an env of n names NAME<i> padded with 'N' to len bytes (len 0:
 * as short as they come), each to "v<i>". */
static void
penv(msgpack_packer *pk, size_t n, size_t len)
{
	char name[TASKREC_ENV_NAME_MAX + 16], val[16];
	size_t i, l;

	msgpack_pack_map(pk, n);
	for (i = 0; i < n; i++) {
		l = (size_t)snprintf(name, sizeof name, "V%zu", i);
		for (; l < len; l++)
			name[l] = 'N';
		pstrn(pk, name, l);
		snprintf(val, sizeof val, "v%zu", i);
		pstr(pk, val);
	}
}

START_TEST(test_env_limits)
{
	struct req q;
	struct res x;
	size_t i;

	req_base(&q);
	penv(req_key(&q, "env"), TASKREC_ENV_MAX, 0);
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.r.nenv, 64);
	ck_assert_ptr_null(x.r.env[64]);
	for (i = 0; i < 64; i++) {
		char want[32];
		snprintf(want, sizeof want, "V%zu", i);
		ck_assert_str_eq(x.r.env[i], want);
		snprintf(want, sizeof want, "V%zu=v%zu", i, i);
		ck_assert_str_eq(x.q.env[i], want);
	}
	ck_assert_ptr_null(x.q.env[64]);
	res_free(&x);
	req_base(&q);
	penv(req_key(&q, "env"), TASKREC_ENV_MAX + 1, 0);
	expect_bad(&q, ENV_WHY);
	req_base(&q);
	penv(req_key(&q, "env"), 2, TASKREC_ENV_NAME_MAX);
	expect_taken(&q, &x);
	ck_assert_uint_eq(strlen(x.r.env[0]), 128);
	ck_assert_uint_eq(strlen(x.r.env[1]), 128);
	res_free(&x);
	req_base(&q);
	penv(req_key(&q, "env"), 2, TASKREC_ENV_NAME_MAX + 1);
	expect_bad(&q, ENV_NAME_WHY);
}
END_TEST

START_TEST(test_env_malformed)
{
	struct req q;

	req_base(&q);
	msgpack_pack_array(req_key(&q, "env"), 1);
	pstr(&q.pk, "A=B");
	expect_bad(&q, ENV_WHY);
	req_base(&q);
	pstr(req_key(&q, "env"), "A=B");
	expect_bad(&q, ENV_WHY);
	req_base(&q);
	msgpack_pack_map(req_key(&q, "env"), 1);
	pstr(&q.pk, "A");
	msgpack_pack_uint64(&q.pk, 1);
	expect_bad(&q, ENV_MAP_WHY);
	req_base(&q);
	msgpack_pack_map(req_key(&q, "env"), 1);
	pstr(&q.pk, "A");
	msgpack_pack_nil(&q.pk);
	expect_bad(&q, ENV_MAP_WHY);
	req_base(&q);
	msgpack_pack_map(req_key(&q, "env"), 2);
	pstr(&q.pk, "A");
	pstr(&q.pk, "a");
	pstr(&q.pk, "A=B");
	pstr(&q.pk, "x");
	expect_bad(&q, ENV_MAP_WHY);
	req_base(&q);
	msgpack_pack_map(req_key(&q, "env"), 1);
	pstr(&q.pk, "");
	pstr(&q.pk, "x");
	expect_bad(&q, ENV_MAP_WHY);
	req_base(&q);
	msgpack_pack_map(req_key(&q, "env"), 1);
	pstrn(&q.pk, "A\0B", 3);
	pstr(&q.pk, "x");
	expect_bad(&q, ENV_MAP_WHY);
	req_base(&q);
	msgpack_pack_map(req_key(&q, "env"), 1);
	pstr(&q.pk, "A");
	pstrn(&q.pk, "x\0y", 3);
	expect_bad(&q, ENV_MAP_WHY);
	/* A name that is no string. */
	req_base(&q);
	msgpack_pack_map(req_key(&q, "env"), 1);
	msgpack_pack_uint64(&q.pk, 1);
	pstr(&q.pk, "x");
	expect_bad(&q, ENV_NAME_WHY);
}
END_TEST

/* The env's values go to the environment, never into the record. */
START_TEST(test_env_names_kept)
{
	static const char secret[] = "s3cr3t-t0ken-value";
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct req q;
	struct res x;

	req_base(&q);
	msgpack_pack_map(req_key(&q, "env"), 2);
	pstr(&q.pk, "API_TOKEN");
	pstr(&q.pk, secret);
	pstr(&q.pk, "MODE");
	pstr(&q.pk, "a=b");
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.r.nenv, 2);
	ck_assert_str_eq(x.r.env[0], "API_TOKEN");
	ck_assert_str_eq(x.r.env[1], "MODE");
	ck_assert_ptr_null(x.r.env[2]);
	ck_assert_str_eq(x.q.env[0], "API_TOKEN=s3cr3t-t0ken-value");
	ck_assert_str_eq(x.q.env[1], "MODE=a=b");
	ck_assert_ptr_null(x.q.env[2]);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	taskrec_pack(&pk, &x.r);
	ck_assert_ptr_nonnull(memmem(sb.data, sb.size, "API_TOKEN", 9));
	ck_assert_ptr_null(memmem(sb.data, sb.size, secret, strlen(secret)));
	ck_assert_ptr_null(memmem(sb.data, sb.size, "a=b", 3));
	msgpack_sbuffer_destroy(&sb);
	res_free(&x);
}
END_TEST

START_TEST(test_timeout)
{
	struct req q;
	struct res x;

	req_base(&q);
	msgpack_pack_uint64(req_key(&q, "timeout_s"), TASKREC_TIMEOUT_MAX);
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.r.timeout_s, 604800);
	res_free(&x);
	req_base(&q);
	msgpack_pack_uint64(req_key(&q, "timeout_s"), 0);
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.r.timeout_s, 0);
	res_free(&x);
	req_base(&q);
	msgpack_pack_uint64(req_key(&q, "timeout_s"), 1);
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.r.timeout_s, 1);
	res_free(&x);
	req_base(&q);
	msgpack_pack_uint64(req_key(&q, "timeout_s"), TASKREC_TIMEOUT_MAX + 1);
	expect_bad(&q, TIMEOUT_WHY);
	/* Past 32 bits: refused, not truncated. */
	req_base(&q);
	msgpack_pack_uint64(req_key(&q, "timeout_s"), (UINT64_C(1) << 32) + 5);
	expect_bad(&q, TIMEOUT_WHY);
	req_base(&q);
	msgpack_pack_int64(req_key(&q, "timeout_s"), -1);
	expect_bad(&q, TIMEOUT_WHY);
	req_base(&q);
	pstr(req_key(&q, "timeout_s"), "10");
	expect_bad(&q, TIMEOUT_WHY);
	req_base(&q);
	msgpack_pack_nil(req_key(&q, "timeout_s"));
	expect_bad(&q, TIMEOUT_WHY);
}
END_TEST

/* The catalog's limits, the request's over them key by key, and no disk
 * limit from either: a workspace's is runtime.start's. */
START_TEST(test_limits)
{
	struct req q;
	struct res x;

	req_base(&q);
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_MEMORY], 64u << 20);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_PROCS], 32);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_CPU], 0);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_FILES], 0);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_DISK], 0);
	res_free(&x);
	req_base(&q);
	msgpack_pack_map(req_key(&q, "limits"), 2);
	pstr(&q.pk, "max_processes");
	msgpack_pack_uint64(&q.pk, 16);
	pstr(&q.pk, "open_files");
	msgpack_pack_uint64(&q.pk, 100);
	expect_taken(&q, &x);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_MEMORY], 64u << 20);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_PROCS], 16);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_FILES], 100);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_CPU], 0);
	ck_assert_uint_eq(x.q.limits.v[LIMIT_DISK], 0);
	res_free(&x);
	/* The catalog's own are its, not changed by a request. */
	ck_assert_uint_eq(
	    config_runtime_find(&cfg, "fake")->limits.v[LIMIT_PROCS], 32);
	ck_assert_uint_eq(
	    config_runtime_find(&cfg, "fake")->limits.v[LIMIT_DISK], 1u << 30);
	req_base(&q);
	msgpack_pack_map(req_key(&q, "limits"), 1);
	pstr(&q.pk, "disk_bytes");
	msgpack_pack_uint64(&q.pk, 32u << 20);
	expect_bad(&q,
	    "limits.disk_bytes bounds a runtime's workspace; a "
	    "command or a terminal session has none");
	req_base(&q);
	msgpack_pack_map(req_key(&q, "limits"), 1);
	pstr(&q.pk, "memory_bytes");
	msgpack_pack_uint64(&q.pk, 1);
	expect_bad(&q,
	    "limits.memory_bytes must be an integer from 4194304 to "
	    "1125899906842624");
	req_base(&q);
	msgpack_pack_map(req_key(&q, "limits"), 1);
	pstr(&q.pk, "nonsense");
	msgpack_pack_uint64(&q.pk, 1);
	expect_bad(&q,
	    "unknown limit \"nonsense\" (known: cpu_millis, "
	    "memory_bytes, max_processes, disk_bytes, open_files)");
	req_base(&q);
	msgpack_pack_array(req_key(&q, "limits"), 0);
	expect_bad(&q, "\"limits\" must be a map of limit names to integers");
}
END_TEST

/* The arguments are read in order, and the first wrong one is named. */
START_TEST(test_first_wrong_named)
{
	struct req q;

	req_init(&q, "nope");
	pstr(req_key(&q, "prompt"), "");
	expect_refused(&q, PROTO_E_NOT_FOUND, "no runtime nope");
	req_init(&q, "fake");
	pstr(req_key(&q, "prompt"), "");
	pstr(req_key(&q, "checks"), "x");
	expect_bad(&q, PROMPT_WHY);
	req_base(&q);
	pstr(req_key(&q, "checks"), "x");
	pstr(req_key(&q, "env"), "x");
	expect_bad(&q, CHECKS_WHY);
	req_base(&q);
	pstr(req_key(&q, "env"), "x");
	pstr(req_key(&q, "timeout_s"), "x");
	expect_bad(&q, ENV_WHY);
}
END_TEST

/* A short why is cut, still a string. */
START_TEST(test_short_why)
{
	struct req q;
	struct res x;

	req_init(&q, "nope");
	parse(&q, &x, 8);
	ck_assert_int_eq(x.rc, -1);
	ck_assert_str_eq(x.code, PROTO_E_NOT_FOUND);
	ck_assert_str_eq(x.why, "no runt");
	ck_assert_ptr_null(x.q.rt);
	res_free(&x);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("task_req");
	TCase *tc = tcase_create("task_req");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_least);
	tcase_add_test(tc, test_runtime);
	tcase_add_test(tc, test_prompt_limit);
	tcase_add_test(tc, test_prompt_malformed);
	tcase_add_test(tc, test_checks_limits);
	tcase_add_test(tc, test_checks_named);
	tcase_add_test(tc, test_checks_malformed);
	tcase_add_test(tc, test_env_limits);
	tcase_add_test(tc, test_env_malformed);
	tcase_add_test(tc, test_env_names_kept);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_first_wrong_named);
	tcase_add_test(tc, test_short_why);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
