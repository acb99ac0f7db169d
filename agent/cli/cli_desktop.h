/* cli_desktop: the berth commands for computer use — screenshot, click,
 * move, scroll, type, key, cursor, desktop info, windows, wait-change and
 * record — over the desktop.* and record.* ops. Each exits 0, 1 also
 * when a screenshot or a recording cannot be written here or wait-change
 * saw no change, 128 + N when signal N ended record stop -o, or with the
 * statuses every command has. */
#ifndef BERTH_CLI_DESKTOP_H
#define BERTH_CLI_DESKTOP_H

#include "cli.h"

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
extern const struct cli_cmd_entry cli_desktop_record_entry;

#endif
