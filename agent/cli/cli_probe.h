/* cli_probe: berth probe, the readiness probe of warm-pool managers. */
#ifndef BERTH_CLI_PROBE_H
#define BERTH_CLI_PROBE_H

#include "cli.h"

extern const struct cli_cmd_entry cli_probe_entry;

#endif
