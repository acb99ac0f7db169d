/* cli_events: berth events — the journal, and with --follow the live
 * stream, resumed at the exact seq after a lost connection. */
#ifndef BERTH_CLI_EVENTS_H
#define BERTH_CLI_EVENTS_H

#include "cli.h"

extern const struct cli_cmd_entry cli_events_entry;

#endif
