/* fuzz_task_req: libFuzzer target for a task.run request's args
 * (task_req.c), read by berthd from a client's message, against a fixed
 * catalog of two runtimes: one that takes tasks and has limits of its
 * own, one that takes none. Whatever the bytes, a request taken holds
 * every limit of taskrec.h, its environment is its record's names with
 * their values, and its limits are in their ranges with no disk limit;
 * a refusal has a code and a NUL-ended message within its buffer. */
#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "config.h"
#include "limit.h"
#include "mpcheck.h"
#include "proto.h"
#include "task_req.h"
#include "taskrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char catalog[] = "[runtime fake]\n"
                              "command = /bin/true\n"
                              "user = agent\n"
                              "workspace = /w\n"
                              "task = run -- {prompt}\n"
                              "memory_bytes = 64M\n"
                              "max_processes = 32\n"
                              "disk_bytes = 1G\n"
                              "[runtime plain]\n"
                              "command = /bin/true\n"
                              "user = agent\n"
                              "workspace = /w\n"
                              "rpc =\n";

/* The catalog, read once and kept for the process's life. */
static const struct config *
fuzz_config(void)
{
	static struct config cfg;
	static bool ready;
	char *cause = NULL;

	if (!ready) {
		config_init(&cfg);
		if (config_parse_string(&cfg, catalog, "fuzz.conf", &cause) < 0)
			abort();
		ready = true;
	}
	return &cfg;
}

/* A string of taskrec.h's: 1-max bytes (a NUL ends it: none inside). */
static bool
str_ok(const char *s, size_t max)
{
	return s != NULL && s[0] != '\0' && strnlen(s, max + 1) <= max;
}

static bool
checks_ok(const struct taskrec *r)
{
	size_t i, j;

	if (r->nchecks > TASKREC_CHECKS_MAX)
		return false;
	for (i = 0; i < TASKREC_CHECKS_MAX; i++) {
		const struct taskrec_check *k = &r->checks[i];
		if (i >= r->nchecks) {
			if (k->argv != NULL || k->argc != 0)
				return false;
			continue;
		}
		if (k->argc == 0 || k->argc > TASKREC_ARGV_MAX ||
		    k->argv == NULL || k->argv[k->argc] != NULL || k->ran)
			return false;
		for (j = 0; j < k->argc; j++)
			if (!str_ok(k->argv[j], TASKREC_ARG_MAX))
				return false;
	}
	return true;
}

/* The record's names, and the environment's NAME=VALUE for each. */
static bool
env_ok(const struct taskrec *r, char *const *env)
{
	size_t i, n;

	if (r->nenv > TASKREC_ENV_MAX || r->env == NULL ||
	    r->env[r->nenv] != NULL || env == NULL || env[r->nenv] != NULL)
		return false;
	for (i = 0; i < r->nenv; i++) {
		if (!str_ok(r->env[i], TASKREC_ENV_NAME_MAX) ||
		    strchr(r->env[i], '=') != NULL)
			return false;
		n = strlen(r->env[i]);
		if (strncmp(env[i], r->env[i], n) != 0 || env[i][n] != '=')
			return false;
	}
	return true;
}

static bool
limits_ok(const struct limit_set *l)
{
	char why[LIMIT_WHY_MAX];
	int k;

	for (k = 0; k < LIMIT_NKEYS; k++)
		if (l->v[k] != 0 &&
		    !limit_in_range((enum limit_key)k, l->v[k], why))
			return false;
	return l->v[LIMIT_DISK] == 0;
}

static bool
taken_ok(const struct taskrec *r, const struct task_req *q)
{
	return q->rt != NULL && q->rt->has_task &&
	    strcmp(r->runtime, q->rt->name) == 0 &&
	    str_ok(r->runtime, TASKREC_RUNTIME_MAX) &&
	    str_ok(r->prompt, TASKREC_PROMPT_MAX) && checks_ok(r) &&
	    env_ok(r, q->env) && r->timeout_s <= TASKREC_TIMEOUT_MAX &&
	    limits_ok(&q->limits);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct mpcheck_limits lim = {
	    .max_depth = PROTO_MAX_DEPTH,
	    .max_objects = PROTO_MAX_OBJECTS,
	};
	const struct config *cfg = fuzz_config();
	char why[TASK_REQ_WHY_MAX];
	const char *code = NULL, *bad;
	struct task_req q;
	struct taskrec r;
	msgpack_unpacked u;

	/* As berthd takes a message: checked before msgpack-c allocates. */
	if (mpcheck_object(data, size, &lim, &bad) < 0)
		return 0;
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, (const char *)data, size, NULL) !=
	    MSGPACK_UNPACK_SUCCESS) {
		msgpack_unpacked_destroy(&u);
		return 0;
	}
	taskrec_init(&r);
	memset(why, 'x', sizeof why);
	if (task_req_parse(&u.data, cfg, &r, &q, &code, why, sizeof why) == 0) {
		if (!taken_ok(&r, &q))
			abort();
	} else if (code == NULL ||
	    (strcmp(code, PROTO_E_BAD_ARGS) != 0 &&
	        strcmp(code, PROTO_E_NOT_FOUND) != 0) ||
	    memchr(why, '\0', sizeof why) == NULL || why[0] == '\0')
		abort();
	taskrec_free(&r);
	child_strv_free(q.env);
	msgpack_unpacked_destroy(&u);
	return 0;
}
