/* cli_core: the berth commands about berthd itself — ping, state and
 * service — and help. */
#ifndef BERTH_CLI_CORE_H
#define BERTH_CLI_CORE_H

#include "cli.h"

extern const struct cli_cmd_entry cli_core_ping_entry;
extern const struct cli_cmd_entry cli_core_state_entry;
extern const struct cli_cmd_entry cli_core_service_entry;
extern const struct cli_cmd_entry cli_core_help_entry;

#endif
