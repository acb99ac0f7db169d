/* cli_desktop: the berth commands for computer use — screenshot, click,
 * move, scroll, type, key, cursor, desktop info, windows, wait-change and
 * record — over the desktop.* and record.* ops. They borrow the command
 * core's option parser and connection through struct cli_desktop_host,
 * and own nothing else. */
#ifndef BERTH_CLI_DESKTOP_H
#define BERTH_CLI_DESKTOP_H

#include <getopt.h>
#include <stdbool.h>

#include "cli_conn.h"

/* getopt_cb's answer when the run must end at once (after --help, or a
 * usage error it has already reported). */
#define CLI_DESKTOP_STOP (-2)

/* The synopses, for the help and for usage errors alike. */
#define CLI_DESKTOP_SCREENSHOT_ARGS                                            \
	"[-o FILE] [--region X,Y,W,H] [--scale F] [--format png|jpeg] "        \
	"[--quality N] [--no-cursor]"
#define CLI_DESKTOP_CLICK_ARGS "[--button B] [--double] [X Y]"
#define CLI_DESKTOP_MOVE_ARGS "X Y"
#define CLI_DESKTOP_SCROLL_ARGS "[--dx N] [--dy N] [X Y]"
#define CLI_DESKTOP_TYPE_ARGS "[--delay MS] TEXT | -"
#define CLI_DESKTOP_KEY_ARGS "COMBO..."
#define CLI_DESKTOP_CURSOR_ARGS ""
#define CLI_DESKTOP_DESKTOP_ARGS "info"
#define CLI_DESKTOP_WINDOWS_ARGS ""
#define CLI_DESKTOP_WAIT_CHANGE_ARGS "[--region X,Y,W,H] [--timeout SEC]"
#define CLI_DESKTOP_RECORD_START_ARGS                                          \
	"[--fps N] [--region X,Y,W,H] [--max-seconds S] [--quality Q]"
#define CLI_DESKTOP_RECORD_STOP_ARGS "ID [-o FILE]"
#define CLI_DESKTOP_RECORD_STATUS_ARGS "[ID]"
#define CLI_DESKTOP_RECORD_ARGS "start|stop|status ..."

/*
 * What the command core lends: filled by cli.c, valid for the whole run.
 * cli is the core's own state, passed back to every callback.
 */
struct cli_desktop_host {
	void *cli;
	/* getopt_long over opts, the global options and the short options
	 * of shorts (letters whose value is the letter, ':' after one that
	 * takes an argument): the value of the next option of the command,
	 * -1 at the first word or the end, or CLI_DESKTOP_STOP with the exit
	 * status in *status. */
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

/* Runs the command named by argv[0] (one of the names above; "desktop"
 * for desktop info, "wait-change" for wait-change, "record" for record
 * start, stop and status). Returns the exit status: 0, or the core's
 * statuses (1 also when a screenshot or a recording cannot be written
 * here, or wait-change saw no change; 128 + N when signal N ended record
 * stop -o). */
int cli_desktop_run(const struct cli_desktop_host *host, int argc, char **argv);

#endif
