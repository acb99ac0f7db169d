/* cli_desktop: the berth commands for computer use — screenshot, click,
 * move, scroll, type, key, cursor, desktop info, windows and wait-change
 * — over the desktop.* ops, and what record (cli_record) shares with
 * them: the readers of their arguments, the one request and the readers
 * of its result. Each exits 0, 1 also when a screenshot cannot be written
 * here or wait-change saw no change, or with the statuses every command
 * has. */
#ifndef BERTH_CLI_DESKTOP_H
#define BERTH_CLI_DESKTOP_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli.h"

/* A screenshot's or a recording's temp file: ".NAME.XXXXXX", unique. */
#define CLI_DESKTOP_TEMP_SUFFIX ".XXXXXX"

extern const struct cli_cmd_entry cli_desktop_screenshot_entry;
extern const struct cli_cmd_entry cli_desktop_click_entry;
extern const struct cli_cmd_entry cli_desktop_move_entry;
extern const struct cli_cmd_entry cli_desktop_scroll_entry;
extern const struct cli_cmd_entry cli_desktop_type_entry;
extern const struct cli_cmd_entry cli_desktop_key_entry;
extern const struct cli_cmd_entry cli_desktop_cursor_entry;
extern const struct cli_cmd_entry cli_desktop_desktop_entry;
extern const struct cli_cmd_entry cli_desktop_windows_entry;
extern const struct cli_cmd_entry cli_desktop_wait_change_entry;

/* A rectangle of the screen, as --region gives it; a plain value. */
struct cli_desktop_rect {
	bool set;
	long x;
	long y;
	long width;
	long height;
};

/* A decimal integer in [lo, hi], all of s: 0, or -1. */
int cli_desktop_long(const char *s, long lo, long hi, long *out);
/* --region X,Y,W,H into *r, and --quality N into *out: CLI_EXIT_OK, or
 * the usage error's status, told. */
int cli_desktop_region(
    struct cli *cli, const char *arg, struct cli_desktop_rect *r);
int cli_desktop_quality(struct cli *cli, const char *arg, long *out);
/* Packs key: {x, y, width, height}. */
void cli_desktop_pack_rect(
    msgpack_packer *pk, const char *key, const struct cli_desktop_rect *r);

/*
 * Connects, sends op with args from pack, and shows the result, which
 * every desktop op answers as a map, with show (ctx is both's). An error
 * answer is printed as "CODE: MESSAGE" (exit 1). extra_ms is what the op
 * itself may take beyond the time for an answer. Returns the exit status.
 */
int cli_desktop_request(struct cli *cli, const char *op, cli_conn_pack_cb pack,
    void *ctx, int extra_ms, cli_show_cb show);

/* Readers of a result's map: an integer (positive or negative); a string
 * safe on a terminal, allocated, or fallback's copy if absent; "WxH+X+Y"
 * of a map {x, y, width, height}, allocated, "?" where one is missing. */
bool cli_desktop_int(const msgpack_object *map, const char *key, int64_t *out);
char *cli_desktop_text(
    const msgpack_object *map, const char *key, const char *fallback);
char *cli_desktop_geometry(const msgpack_object *map);
/* A result (a map) as JSON with the file it went to put in, and the field
 * drop (NULL: none), the bytes that went there, left out. */
void cli_desktop_file_json(
    const msgpack_object *result, const char *drop, const char *file);

#endif
