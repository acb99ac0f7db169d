/* cli_runtime: berth runtime — the agent runtimes of the catalog (list,
 * status) and the one instance of each (start, stop, pause, resume), over
 * the runtime.* ops. Exits with the statuses every command has. */
#ifndef BERTH_CLI_RUNTIME_H
#define BERTH_CLI_RUNTIME_H

#include "cli.h"

extern const struct cli_cmd_entry cli_runtime_entry;

#endif
