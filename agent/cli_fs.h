/* cli_fs: the berth file commands — cp (to and from the sandbox, resumed
 * after a lost connection), ls and cat — over the fs.* ops. They borrow
 * the command core's option parser and connection through struct
 * cli_fs_host, and own nothing else. */
#ifndef BERTH_CLI_FS_H
#define BERTH_CLI_FS_H

#include <getopt.h>
#include <stdbool.h>

#include "cli_conn.h"

/* getopt_cb's answer when the run must end at once (after --help, or a
 * usage error it has already reported). */
#define CLI_FS_STOP (-2)

/*
 * What the command core lends: filled by cli.c, valid for the whole run.
 * cli is the core's own state, passed back to every callback.
 */
struct cli_fs_host {
	void *cli;
	/* getopt_long over opts, the global options and the short options
	 * of shorts (letters whose value is the letter): the value of the
	 * next option of the command, -1 at the first word or the end, or
	 * CLI_FS_STOP with the exit status in *status. */
	int (*getopt_cb)(void *cli, int argc, char **argv,
	    const struct option *opts, const char *shorts, int *status);
	/* Once the words are read: settles the transport and tells the
	 * global settings. Returns an exit status (0: go on). */
	int (*ready_cb)(void *cli, bool *json, int *timeout_ms);
	/* Connects and says hello: a cli_conn status, *cause on failure. */
	int (*open_cb)(void *cli, struct cli_conn **connp, char **cause);
	/* Reports a failed cli_conn status (and frees cause); returns the
	 * exit status for it. */
	int (*fail_cb)(int status, char *cause);
};

/* Each runs its command; argv[0] is the command's name. Returns the exit
 * status: 0, or the core's statuses (1 when a file operation failed,
 * here or in the sandbox). */
int cli_fs_cp(const struct cli_fs_host *host, int argc, char **argv);
int cli_fs_ls(const struct cli_fs_host *host, int argc, char **argv);
int cli_fs_cat(const struct cli_fs_host *host, int argc, char **argv);

/* SIGINT and SIGTERM end a transfer between two waits (every wait of
 * cli_conn returns CLI_CONN_INTERRUPTED), so that a download can remove
 * its temp file; cli_fs_signalled is the signal caught then, else 0. */
void cli_fs_signals(void);
int cli_fs_signalled(void);

#endif
