/* cli_fs: the berth file commands — cp (to and from the sandbox, resumed
 * after a lost connection), ls and cat — over the fs.* ops. */
#ifndef BERTH_CLI_FS_H
#define BERTH_CLI_FS_H

#include "cli.h"

extern const struct cli_cmd_entry cli_fs_cp_entry;
extern const struct cli_cmd_entry cli_fs_ls_entry;
extern const struct cli_cmd_entry cli_fs_cat_entry;

#endif
