/* cli_attach: berth pty attach — the interactive client of a terminal
 * session, one of pty's words (cli_pty). Exits with the session's status
 * when it exits (128 + N for signal N), 0 when detached, 1 when the
 * session is closed or gone, or with the statuses every command has. */
#ifndef BERTH_CLI_ATTACH_H
#define BERTH_CLI_ATTACH_H

#include "cli.h"

extern const struct cli_cmd_entry cli_attach_entry;

#endif
