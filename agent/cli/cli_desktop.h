/* cli_desktop: the berth commands for computer use — screenshot, click,
 * move, scroll, type, key, cursor, desktop info, windows, wait-change and
 * record — over the desktop.* and record.* ops. They borrow the command
 * core's option parser and connection through struct cli_host,
 * and own nothing else. */
#ifndef BERTH_CLI_DESKTOP_H
#define BERTH_CLI_DESKTOP_H

#include "cli_host.h"

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

/* Runs the command named by argv[0] (one of the names above; "desktop"
 * for desktop info, "wait-change" for wait-change, "record" for record
 * start, stop and status). Returns the exit status: 0, or the core's
 * statuses (1 also when a screenshot or a recording cannot be written
 * here, or wait-change saw no change; 128 + N when signal N ended record
 * stop -o). */
int cli_desktop_run(const struct cli_host *host, int argc, char **argv);

#endif
