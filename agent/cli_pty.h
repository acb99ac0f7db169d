/* cli_pty: the berth pty commands (open, list, attach, send, resize,
 * signal, close). They borrow the command core's option parser and
 * connection through struct cli_pty_host, and own nothing else. */
#ifndef BERTH_CLI_PTY_H
#define BERTH_CLI_PTY_H

#include <getopt.h>
#include <stdbool.h>

#include "cli_conn.h"

/* getopt_cb's answer when the run must end at once (after --help, or a
 * usage error it has already reported). */
#define CLI_PTY_STOP (-2)

/*
 * What the command core lends: filled by cli.c, valid for the whole run.
 * cli is the core's own state, passed back to every callback.
 */
struct cli_pty_host {
	void *cli;
	/* getopt_long over the global options and opts: the value of the
	 * next of opts, -1 at the first word or the end, or CLI_PTY_STOP
	 * with the exit status in *status. Global options are taken here,
	 * wherever they appear. */
	int (*getopt_cb)(void *cli, int argc, char **argv,
	    const struct option *opts, int *status);
	/* Once the words are read: settles the transport and tells the
	 * global settings. Returns an exit status (0: go on). */
	int (*ready_cb)(void *cli, bool *json, int *timeout_ms);
	/* Connects and says hello: a cli_conn status, *cause on failure. */
	int (*open_cb)(void *cli, struct cli_conn **connp, char **cause);
	/* Reports a failed cli_conn status (and frees cause); returns the
	 * exit status for it. */
	int (*fail_cb)(int status, char *cause);
};

/* Runs "pty WORD ...": argv[0] is "pty". Returns the exit status; for
 * attach, the session's own when it exits (128 + N for signal N). */
int cli_pty_run(const struct cli_pty_host *host, int argc, char **argv);

#endif
