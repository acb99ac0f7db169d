/* cli_ports: berth ports — the TCP ports listened on in the sandbox, by
 * which process and user and since when (port.list), as a table or, with
 * --json, port.list's result as it is. */
#ifndef BERTH_CLI_PORTS_H
#define BERTH_CLI_PORTS_H

#include "cli.h"

extern const struct cli_cmd_entry cli_ports_entry;

#endif
