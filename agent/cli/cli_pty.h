/* cli_pty: the berth pty commands (open, list, attach, send, resize,
 * signal, close). They borrow the command core's option parser and
 * connection through struct cli_host, and own nothing else. */
#ifndef BERTH_CLI_PTY_H
#define BERTH_CLI_PTY_H

#include "cli_host.h"

/* Runs "pty WORD ...": argv[0] is "pty". Returns the exit status; for
 * attach, the session's own when it exits (128 + N for signal N). */
int cli_pty_run(const struct cli_host *host, int argc, char **argv);

#endif
