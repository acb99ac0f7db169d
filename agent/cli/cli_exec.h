/* cli_exec: berth exec — one command run in the sandbox through the proc.*
 * ops, its output and exit status passed through as if it ran here. It
 * borrows the command core's option parser and connection through struct
 * cli_host, and owns nothing else. */
#ifndef BERTH_CLI_EXEC_H
#define BERTH_CLI_EXEC_H

#include "cli_host.h"

/* Runs "exec [OPTIONS] [--] CMD ARGS...": argv[0] is "exec". Returns the
 * command's exit status (128 + N for signal N), or one of exec's own. */
int cli_exec_run(const struct cli_host *host, int argc, char **argv);

#endif
