/* task_req: a task.run request read (see task_req.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "child.h"
#include "launch.h"
#include "proto.h"
#include "task_req.h"
#include "xmalloc.h"

/* Says why in why[whymax]; returns -1 for the caller to return. */
static int __attribute__((format(printf, 3, 4)))
task_req_fail(char *why, size_t whymax, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whymax, fmt, ap);
	va_end(ap);
	return -1;
}

static int
task_req_prompt(
    const msgpack_object *args, char **out, char *why, size_t whymax)
{
	const msgpack_object *p = proto_map_get(args, "prompt");

	if (p == NULL || p->type != MSGPACK_OBJECT_STR ||
	    p->via.str.size == 0 || p->via.str.size > TASKREC_PROMPT_MAX ||
	    memchr(p->via.str.ptr, '\0', p->via.str.size) != NULL)
		return task_req_fail(why, whymax,
		    "prompt must be a string of 1-%u bytes without NUL",
		    TASKREC_PROMPT_MAX);
	*out = xstrndup(p->via.str.ptr, p->via.str.size);
	return 0;
}

/* One check: an argv of 1-TASKREC_ARGV_MAX strings. */
static int
task_req_check(const msgpack_object *o, struct taskrec_check *k)
{
	size_t i;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size == 0 ||
	    o->via.array.size > TASKREC_ARGV_MAX)
		return -1;
	for (i = 0; i < o->via.array.size; i++) {
		const msgpack_object *a = &o->via.array.ptr[i];
		if (a->type != MSGPACK_OBJECT_STR || a->via.str.size == 0 ||
		    a->via.str.size > TASKREC_ARG_MAX ||
		    memchr(a->via.str.ptr, '\0', a->via.str.size) != NULL)
			return -1;
	}
	k->argc = o->via.array.size;
	k->argv = xcalloc(k->argc + 1, sizeof *k->argv);
	for (i = 0; i < k->argc; i++)
		k->argv[i] = xstrndup(o->via.array.ptr[i].via.str.ptr,
		    o->via.array.ptr[i].via.str.size);
	return 0;
}

static int
task_req_checks(
    const msgpack_object *args, struct taskrec *r, char *why, size_t whymax)
{
	const msgpack_object *o = proto_map_get(args, "checks");
	size_t i;

	if (o == NULL || o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (o->type != MSGPACK_OBJECT_ARRAY ||
	    o->via.array.size > TASKREC_CHECKS_MAX)
		return task_req_fail(why, whymax,
		    "checks must be a list of at most %d checks, each an "
		    "argv (a list of strings)",
		    TASKREC_CHECKS_MAX);
	for (i = 0; i < o->via.array.size; i++) {
		if (task_req_check(&o->via.array.ptr[i], &r->checks[i]) < 0)
			return task_req_fail(why, whymax,
			    "checks[%zu] must be an argv: a list of 1-%d "
			    "strings of 1-%d bytes",
			    i, TASKREC_ARGV_MAX, TASKREC_ARG_MAX);
		r->nchecks++;
	}
	return 0;
}

/* The env map: its KEY=VALUE list into q, its names into the record. */
static int
task_req_env(const msgpack_object *args, struct taskrec *r, struct task_req *q,
    char *why, size_t whymax)
{
	const msgpack_object *e = proto_map_get(args, "env");
	const char *list_why = NULL;
	size_t i;

	if (e != NULL && e->type == MSGPACK_OBJECT_NIL)
		e = NULL;
	if (e != NULL &&
	    (e->type != MSGPACK_OBJECT_MAP ||
	        e->via.map.size > TASKREC_ENV_MAX))
		return task_req_fail(why, whymax,
		    "env must be a map of at most %d names to strings",
		    TASKREC_ENV_MAX);
	for (i = 0; e != NULL && i < e->via.map.size; i++)
		if (e->via.map.ptr[i].key.type != MSGPACK_OBJECT_STR ||
		    e->via.map.ptr[i].key.via.str.size > TASKREC_ENV_NAME_MAX)
			return task_req_fail(why, whymax,
			    "env's names are at most %d bytes",
			    TASKREC_ENV_NAME_MAX);
	if ((q->env = launch_env_list(e, &list_why)) == NULL)
		return task_req_fail(why, whymax, "%s", list_why);
	r->nenv = e != NULL ? e->via.map.size : 0;
	r->env = xcalloc(r->nenv + 1, sizeof *r->env);
	for (i = 0; i < r->nenv; i++)
		r->env[i] = xstrndup(e->via.map.ptr[i].key.via.str.ptr,
		    e->via.map.ptr[i].key.via.str.size);
	return 0;
}

static int
task_req_limits(
    const msgpack_object *args, struct task_req *q, char *why, size_t whymax)
{
	char lwhy[LIMIT_WHY_MAX];
	struct limit_set req;

	if (limit_parse(proto_map_get(args, "limits"), false, &req, lwhy) < 0)
		return task_req_fail(why, whymax, "%s", lwhy);
	/* A workspace's disk is bounded by runtime.start, not by a task. */
	q->limits = q->rt->limits;
	q->limits.v[LIMIT_DISK] = 0;
	limit_merge(&q->limits, &req);
	return 0;
}

/* As args_range words it for every op, so that task.run speaks as they
 * do. */
static int
task_req_timeout(
    const msgpack_object *args, struct taskrec *r, char *why, size_t whymax)
{
	uint64_t v = 0;

	if (proto_arg_u64(args, "timeout_s", &v) < 0 || v > TASKREC_TIMEOUT_MAX)
		return task_req_fail(why, whymax,
		    "task.run: \"timeout_s\" must be an integer in 0-%u",
		    TASKREC_TIMEOUT_MAX);
	r->timeout_s = (uint32_t)v;
	return 0;
}

/* The runtime of the request, which must take tasks into q->rt. */
static int
task_req_runtime(const msgpack_object *args, const struct config *cfg,
    struct task_req *q, const char **code, char *why, size_t whymax)
{
	char name[CONFIG_MAX_NAME + 1];
	const struct config_runtime *rt;

	if (proto_arg_str(args, "runtime", name, sizeof name) != 1)
		return task_req_fail(why, whymax,
		    "task.run needs \"runtime\", a runtime's name");
	if ((rt = config_runtime_find(cfg, name)) == NULL) {
		*code = PROTO_E_NOT_FOUND;
		return task_req_fail(why, whymax, "no runtime %s", name);
	}
	if (!rt->has_task)
		return task_req_fail(why, whymax,
		    "runtime %s takes no tasks (its catalog entry has no task "
		    "arguments)",
		    name);
	q->rt = rt;
	return 0;
}

int
task_req_parse(const msgpack_object *args, const struct config *cfg,
    struct taskrec *r, struct task_req *q, const char **code, char *why,
    size_t whymax)
{
	memset(q, 0, sizeof *q);
	*code = PROTO_E_BAD_ARGS;
	if (task_req_runtime(args, cfg, q, code, why, whymax) < 0)
		return -1;
	snprintf(r->runtime, sizeof r->runtime, "%s", q->rt->name);
	if (task_req_prompt(args, &r->prompt, why, whymax) < 0 ||
	    task_req_checks(args, r, why, whymax) < 0 ||
	    task_req_env(args, r, q, why, whymax) < 0 ||
	    task_req_limits(args, q, why, whymax) < 0 ||
	    task_req_timeout(args, r, why, whymax) < 0)
		return -1;
	return 0;
}
