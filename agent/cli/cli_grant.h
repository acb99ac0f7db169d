/* cli_grant: berth grant — make an access grant and print its link,
 * list the live grants, revoke grants, over the grant.* ops. The token
 * reaches stdout only when asked for (--token, --json). Every command
 * exits with the statuses every command has; revoke exits 1 if berthd
 * refused any of its IDs. */
#ifndef BERTH_CLI_GRANT_H
#define BERTH_CLI_GRANT_H

#include "cli.h"

extern const struct cli_cmd_entry cli_grant_entry;

#endif
