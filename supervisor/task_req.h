/* task_req: a task.run request read and checked against every limit
 * into what a task is made of: the request's part of its record
 * (taskrec.h), the environment it runs with and its limits over its
 * runtime's. A pure parser: it starts nothing and answers no one, so
 * the caller replies with the error it gives.
 *
 * Ownership: what task_req_parse fills is the caller's, even when it
 * fails: the record's strings (taskrec_free) and q->env
 * (child_strv_free). */
#ifndef BERTH_TASK_REQ_H
#define BERTH_TASK_REQ_H

#include <msgpack.h>
#include <stddef.h>

#include "config.h"
#include "limit.h"
#include "taskrec.h"

/* A why of this size holds every message whole. */
#define TASK_REQ_WHY_MAX 256

struct task_req {
	const struct config_runtime *rt; /* cfg's */
	char **env;                      /* KEY=VALUE, the request's */
	struct limit_set limits; /* the runtime's, the request's over them */
};

/* Reads a task.run's args into r (taskrec_init'ed: runtime, prompt,
 * checks, env's names, timeout_s) and q. 0, or -1 with *code (a
 * PROTO_E_* code: not_found for a runtime cfg has not, else bad_args)
 * and why[whymax] saying what is wrong. */
int task_req_parse(const msgpack_object *args, const struct config *cfg,
    struct taskrec *r, struct task_req *q, const char **code, char *why,
    size_t whymax);

#endif
