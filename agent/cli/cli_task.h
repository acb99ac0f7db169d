/* cli_task: berth task — run a prompt through a runtime as a task (then
 * its checks), show and list tasks, follow one of a task's output
 * streams to its end, cancel a task and deliver its change as a git
 * branch, over the task.* ops. task attach exits 0 if the task
 * succeeded and 1 if it ended otherwise; every command exits with the
 * statuses every command has. */
#ifndef BERTH_CLI_TASK_H
#define BERTH_CLI_TASK_H

#include "cli.h"

extern const struct cli_cmd_entry cli_task_entry;

#endif
