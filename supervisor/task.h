/* task: task runs. task.run hands a runtime a prompt: its task mode runs
 * as the runtime's user in its workspace, in a cgroup of its own, then
 * each check; the record (taskrec.h) is on disk from the moment the task
 * is accepted and at every change, and the outputs are kept whole in
 * files (taskout.h), so that a task outlives every disconnect and its
 * record and output outlive berthd. A runtime runs one task at a time:
 * its busy policy rejects or queues the others. task.deliver is
 * task_deliver.h's, on a task that has ended.
 *
 * Ownership: task owns every task (its record, outputs, cgroup, timer and
 * the request's env while it runs) for berthd's life, and the queue; the
 * agent's and the checks' processes are proc's, named by id. */
#ifndef BERTH_TASK_H
#define BERTH_TASK_H

#include <event2/event.h>

#include "config.h"
#include "enforce.h"
#include "proto.h"
#include "server.h"

/* At most this many tasks are kept; past it the oldest ended one goes. */
#define TASK_KEEP_MAX 1024

/* cfg outlives the tasks. Loads the tasks kept under <state>/tasks: one
 * that was queued or running is interrupted now. */
void task_init(struct event_base *base, const struct config *cfg);
/* berthd is stopping: every task queued or running is interrupted now
 * (its record says so, its processes are killed) and none starts. */
void task_stop_all(void);
/* Frees every task (the processes are proc's to end; a task that was
 * running when berthd died says running, and the next berthd finds it
 * interrupted). */
void task_shutdown(void);

void task_op_run(struct server_conn *c, const struct proto_msg *m);
void task_op_show(struct server_conn *c, const struct proto_msg *m);
void task_op_list(struct server_conn *c, const struct proto_msg *m);
void task_op_attach(struct server_conn *c, const struct proto_msg *m);
void task_op_cancel(struct server_conn *c, const struct proto_msg *m);
/* The limits and cgroup of task id (limits.status "task/ID"), kept after
 * it ended; NULL if there is no such task or its agent never started. */
const struct enforce *task_enforce(const char *id);
void task_op_deliver(struct server_conn *c, const struct proto_msg *m);

#endif
