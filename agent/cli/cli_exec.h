/* cli_exec: berth exec — one command run in the sandbox through the proc.*
 * ops, its output and exit status passed through as if it ran here: the
 * command's exit status (128 + N for signal N), or one of exec's own
 * (CLI_EXIT_EXEC_*). */
#ifndef BERTH_CLI_EXEC_H
#define BERTH_CLI_EXEC_H

#include "cli.h"

extern const struct cli_cmd_entry cli_exec_entry;

#endif
