/* cli_record: berth record — start, stop and status of the screen's
 * recordings, over the record.* ops. Exits 0, 1 also when the MP4 of
 * record stop -o cannot be written here, 128 + N when signal N ended
 * record stop -o, or with the statuses every command has. */
#ifndef BERTH_CLI_RECORD_H
#define BERTH_CLI_RECORD_H

#include "cli.h"

extern const struct cli_cmd_entry cli_record_entry;

#endif
