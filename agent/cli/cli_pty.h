/* cli_pty: berth pty — the terminal sessions' commands (open, list,
 * attach, send, resize, signal, close, help). attach exits with the
 * session's status when it exits (128 + N for signal N). */
#ifndef BERTH_CLI_PTY_H
#define BERTH_CLI_PTY_H

#include "cli.h"

extern const struct cli_cmd_entry cli_pty_entry;

#endif
