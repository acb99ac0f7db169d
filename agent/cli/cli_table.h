/* cli_table: the one table of berth's commands. */
#ifndef BERTH_CLI_TABLE_H
#define BERTH_CLI_TABLE_H

#include "cli.h"

/* Every command, in the order berth --help lists them; NULL-terminated.
 * Static, as are the entries it points to. */
extern const struct cli_cmd_entry *const cli_table[];

#endif
