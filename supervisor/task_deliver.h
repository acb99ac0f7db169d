/* task_deliver: task.deliver. berthd runs no git (it parses no network
 * bytes): it starts berth-workspace in its deliver mode as the runtime's
 * user, which commits the workspace's files, as they are, on a new
 * branch with berth's own git invocation (a git directory of its own, no
 * config, hook or attribute of the workspace's), pushes it if asked with
 * a one-shot credential on a pipe, and writes the diff to a file berthd
 * made; berthd publishes the diff as an artifact and answers.
 *
 * Ownership: task_deliver owns every delivery under way (at most a few),
 * each with its child, pipes and the request's credential, wiped when it
 * ends; the task's record is task.c's, told through done. */
#ifndef BERTH_TASK_DELIVER_H
#define BERTH_TASK_DELIVER_H

#include <event2/event.h>

#include "config.h"
#include "proto.h"
#include "server.h"
#include "taskrec.h"

/* Told once a delivery of task id succeeded, with what it made. */
typedef void (*task_deliver_done_fn)(
    const char *id, const struct taskrec_delivery *d);

/* cfg outlives the deliveries (the state directory, berth-workspace). */
void task_deliver_init(struct event_base *base, const struct config *cfg,
    task_deliver_done_fn done);
/* Ends every delivery under way (its child killed, its request answered
 * with an error). */
void task_deliver_shutdown(void);

/* The task whose delivery of workspace dir is under way, or NULL: the
 * workspace must hold still meanwhile. */
const char *task_deliver_busy(const char *dir);

/* task.deliver of t (final, its runtime not busy: the caller checked),
 * whose runtime is rt: reads and checks m's args, refuses a task that
 * did not succeed unless force, starts the delivery and answers c once
 * it is done (or at once with an error). */
void task_deliver_op(struct server_conn *c, const struct proto_msg *m,
    const struct taskrec *t, const struct config_runtime *rt);

#endif
