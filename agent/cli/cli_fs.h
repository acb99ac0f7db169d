/* cli_fs: the berth file commands — cp (to and from the sandbox, resumed
 * after a lost connection), ls and cat — over the fs.* ops. They borrow
 * the command core's option parser and connection through struct
 * cli_host, and own nothing else. */
#ifndef BERTH_CLI_FS_H
#define BERTH_CLI_FS_H

#include "cli_host.h"

/* Each runs its command; argv[0] is the command's name. Returns the exit
 * status: 0, or the core's statuses (1 when a file operation failed,
 * here or in the sandbox). */
int cli_fs_cp(const struct cli_host *host, int argc, char **argv);
int cli_fs_ls(const struct cli_host *host, int argc, char **argv);
int cli_fs_cat(const struct cli_host *host, int argc, char **argv);

/* SIGINT and SIGTERM end a transfer between two waits (every wait of
 * cli_conn returns CLI_CONN_INTERRUPTED), so that a download can remove
 * its temp file; cli_fs_signalled is the signal caught then, else 0. */
void cli_fs_signals(void);
int cli_fs_signalled(void);

#endif
