/* task_req: a task.run request read (see task_req.h). */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "child.h"
#include "launch.h"
#include "task_req.h"
#include "xmalloc.h"

static int
task_req_prompt(struct server_conn *c, const struct proto_msg *m, char **out)
{
	const msgpack_object *p = proto_map_get(m->args, "prompt");

	if (p == NULL || p->type != MSGPACK_OBJECT_STR ||
	    p->via.str.size == 0 || p->via.str.size > TASKREC_PROMPT_MAX ||
	    memchr(p->via.str.ptr, '\0', p->via.str.size) != NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "prompt must be a string of 1-%u bytes without NUL",
		    TASKREC_PROMPT_MAX);
		return -1;
	}
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
    struct server_conn *c, const struct proto_msg *m, struct taskrec *r)
{
	const msgpack_object *o = proto_map_get(m->args, "checks");
	size_t i;

	if (o == NULL || o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (o->type != MSGPACK_OBJECT_ARRAY ||
	    o->via.array.size > TASKREC_CHECKS_MAX) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "checks must be a list of at most %d checks, each an "
		    "argv (a list of strings)",
		    TASKREC_CHECKS_MAX);
		return -1;
	}
	for (i = 0; i < o->via.array.size; i++) {
		if (task_req_check(&o->via.array.ptr[i], &r->checks[i]) < 0) {
			server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
			    "checks[%zu] must be an argv: a list of 1-%d "
			    "strings of 1-%d bytes",
			    i, TASKREC_ARGV_MAX, TASKREC_ARG_MAX);
			return -1;
		}
		r->nchecks++;
	}
	return 0;
}

/* The env map: its KEY=VALUE list into q, its names into the record. */
static int
task_req_env(struct server_conn *c, const struct proto_msg *m,
    struct taskrec *r, struct task_req *q)
{
	const msgpack_object *e = proto_map_get(m->args, "env");
	const char *why = NULL;
	size_t i;

	if (e != NULL && e->type == MSGPACK_OBJECT_NIL)
		e = NULL;
	if (e != NULL &&
	    (e->type != MSGPACK_OBJECT_MAP ||
	        e->via.map.size > TASKREC_ENV_MAX)) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "env must be a map of at most %d names to strings",
		    TASKREC_ENV_MAX);
		return -1;
	}
	for (i = 0; e != NULL && i < e->via.map.size; i++)
		if (e->via.map.ptr[i].key.type != MSGPACK_OBJECT_STR ||
		    e->via.map.ptr[i].key.via.str.size > TASKREC_ENV_NAME_MAX) {
			server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
			    "env's names are at most %d bytes",
			    TASKREC_ENV_NAME_MAX);
			return -1;
		}
	if ((q->env = launch_env_list(e, &why)) == NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", why);
		return -1;
	}
	r->nenv = e != NULL ? e->via.map.size : 0;
	r->env = xcalloc(r->nenv + 1, sizeof *r->env);
	for (i = 0; i < r->nenv; i++)
		r->env[i] = xstrndup(e->via.map.ptr[i].key.via.str.ptr,
		    e->via.map.ptr[i].key.via.str.size);
	return 0;
}

static int
task_req_limits(
    struct server_conn *c, const struct proto_msg *m, struct task_req *q)
{
	char why[LIMIT_WHY_MAX];
	struct limit_set req;

	if (limit_parse(proto_map_get(m->args, "limits"), false, &req, why) <
	    0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", why);
		return -1;
	}
	/* A workspace's disk is bounded by runtime.start, not by a task. */
	q->limits = q->rt->limits;
	q->limits.v[LIMIT_DISK] = 0;
	limit_merge(&q->limits, &req);
	return 0;
}

/* The runtime of the request, which must take tasks; NULL after a reply. */
static const struct config_runtime *
task_req_runtime(
    struct server_conn *c, const struct proto_msg *m, const struct config *cfg)
{
	char name[CONFIG_MAX_NAME + 1];
	const struct config_runtime *r;

	if (proto_arg_str(m->args, "runtime", name, sizeof name) != 1) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "task.run needs \"runtime\", a runtime's name");
		return NULL;
	}
	if ((r = config_runtime_find(cfg, name)) == NULL) {
		server_reply_error(
		    c, m->id, PROTO_E_NOT_FOUND, "no runtime %s", name);
		return NULL;
	}
	if (!r->has_task) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "runtime %s takes no tasks (its catalog entry has no task "
		    "arguments)",
		    name);
		return NULL;
	}
	return r;
}

int
task_req_parse(struct server_conn *c, const struct proto_msg *m,
    const struct config *cfg, struct taskrec *r, struct task_req *q)
{
	uint64_t timeout = 0;

	memset(q, 0, sizeof *q);
	if ((q->rt = task_req_runtime(c, m, cfg)) == NULL)
		return -1;
	snprintf(r->runtime, sizeof r->runtime, "%s", q->rt->name);
	if (task_req_prompt(c, m, &r->prompt) < 0 ||
	    task_req_checks(c, m, r) < 0 || task_req_env(c, m, r, q) < 0 ||
	    task_req_limits(c, m, q) < 0 ||
	    args_range(c, m, "timeout_s", 0, TASKREC_TIMEOUT_MAX, &timeout) < 0)
		return -1;
	r->timeout_s = (uint32_t)timeout;
	return 0;
}
