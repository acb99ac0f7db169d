/* cli_limits: berth limits TARGET — what bounds a command, a terminal
 * session or a runtime, by which mechanism, and what it uses, over
 * limits.status. Exits with the statuses every command has. */
#ifndef BERTH_CLI_LIMITS_H
#define BERTH_CLI_LIMITS_H

#include "cli.h"

extern const struct cli_cmd_entry cli_limits_entry;

#endif
