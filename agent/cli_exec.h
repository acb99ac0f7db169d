/* cli_exec: berth exec — one command run in the sandbox through the proc.*
 * ops, its output and exit status passed through as if it ran here. It
 * borrows the command core's option parser and connection through struct
 * cli_exec_host, and owns nothing else. */
#ifndef BERTH_CLI_EXEC_H
#define BERTH_CLI_EXEC_H

#include <getopt.h>
#include <stdbool.h>

#include "cli_conn.h"

/* getopt_cb's answer when the run must end at once (after --help, or a
 * usage error it has already reported). */
#define CLI_EXEC_STOP (-2)

/* exec's own exit statuses, beside the command's (as timeout(1) has). */
#define CLI_EXEC_EXIT_TIMEOUT 124 /* --timeout ran out; the command died */
#define CLI_EXEC_EXIT_BERTH 125   /* berth failed: usage, connection... */

/*
 * What the command core lends: filled by cli.c, valid for the whole run.
 * cli is the core's own state, passed back to every callback.
 */
struct cli_exec_host {
	void *cli;
	/* getopt_long over opts and the global options (one of opts may
	 * take a global's name, which it then shadows): the value of the
	 * next of opts, -1 at the first word or the end, or CLI_EXEC_STOP
	 * with the exit status in *status. */
	int (*getopt_cb)(void *cli, int argc, char **argv,
	    const struct option *opts, int *status);
	/* Once the words are read: settles the transport and tells the
	 * global settings. Returns an exit status (0: go on). */
	int (*ready_cb)(void *cli, bool *json, int *timeout_ms);
	/* Connects and says hello: a cli_conn status, *cause on failure. */
	int (*open_cb)(void *cli, struct cli_conn **connp, char **cause);
};

/* Runs "exec [OPTIONS] [--] CMD ARGS...": argv[0] is "exec". Returns the
 * command's exit status (128 + N for signal N), or one of exec's own. */
int cli_exec_run(const struct cli_exec_host *host, int argc, char **argv);

#endif
