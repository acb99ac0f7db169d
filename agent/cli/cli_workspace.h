/* cli_workspace: berth workspace prepare — clone or update a runtime's
 * workspace over workspace.prepare, a private repository's password read
 * from stdin, never from the command line. Exits with the statuses every
 * command has. */
#ifndef BERTH_CLI_WORKSPACE_H
#define BERTH_CLI_WORKSPACE_H

#include "cli.h"

extern const struct cli_cmd_entry cli_workspace_entry;

#endif
