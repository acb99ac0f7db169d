/* task_req: a task.run request read and checked against every limit
 * into what a task is made of: the request's part of its record
 * (taskrec.h), the environment it runs with and its limits over its
 * runtime's. Nothing starts here, and nothing is kept on any error.
 *
 * Ownership: what task_req_parse fills is the caller's, even when it
 * fails: the record's strings (taskrec_free) and q->env
 * (child_strv_free). */
#ifndef BERTH_TASK_REQ_H
#define BERTH_TASK_REQ_H

#include "config.h"
#include "limit.h"
#include "proto.h"
#include "server.h"
#include "taskrec.h"

struct task_req {
	const struct config_runtime *rt; /* cfg's */
	char **env;                      /* KEY=VALUE, the request's */
	struct limit_set limits; /* the runtime's, the request's over them */
};

/* Reads m's args into r (taskrec_init'ed: runtime, prompt, checks, env's
 * names, timeout_s) and q. 0, or -1 after replying with the error. */
int task_req_parse(struct server_conn *c, const struct proto_msg *m,
    const struct config *cfg, struct taskrec *r, struct task_req *q);

#endif
