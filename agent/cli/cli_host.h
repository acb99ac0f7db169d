/* cli_host: what the command core (cli.c) lends the command families in
 * their own files (cli_pty, cli_exec, cli_fs, cli_desktop): its option
 * parser, its transport settings and its connection. */
#ifndef BERTH_CLI_HOST_H
#define BERTH_CLI_HOST_H

#include <getopt.h>
#include <stdbool.h>

#include "cli_conn.h"

/* getopt_cb's answer when the run must end at once (after --help, or a
 * usage error it has already reported). */
#define CLI_HOST_STOP (-2)
/* cli_host_next's answer for a word. */
#define CLI_HOST_WORD (-3)

/*
 * Filled by cli.c, valid for the whole run. cli is the core's own state,
 * passed back to every callback.
 */
struct cli_host {
	void *cli;
	/* getopt_long over opts, the global options and the short options
	 * of shorts (letters whose value is the letter, ':' after one that
	 * takes an argument; one of opts may take a global's name, which it
	 * then shadows): the value of the next option of the command, -1 at
	 * the first word or the end, or CLI_HOST_STOP with the exit status in
	 * *status. */
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

/*
 * The next argument of a command whose options may come before, between
 * and after its words: an option of opts or shorts (its value), a word
 * (CLI_HOST_WORD, in *wordp), -1 at the end, or CLI_HOST_STOP (the status
 * in *status). *dashdash, false at first, records a "--" seen: all that
 * follows it is words.
 */
int cli_host_next(const struct cli_host *h, int argc, char **argv,
    const struct option *opts, const char *shorts, bool *dashdash, int *status,
    char **wordp);

#endif
