/* cli_table: the one table of berth's commands. Each family defines its
 * entries beside the code they run; a new command is one entry there and
 * one line here. */
#include <stddef.h>

#include "cli_core.h"
#include "cli_desktop.h"
#include "cli_events.h"
#include "cli_exec.h"
#include "cli_fs.h"
#include "cli_grant.h"
#include "cli_probe.h"
#include "cli_ports.h"
#include "cli_limits.h"
#include "cli_pty.h"
#include "cli_record.h"
#include "cli_runtime.h"
#include "cli_table.h"
#include "cli_task.h"
#include "cli_workspace.h"

const struct cli_cmd_entry *const cli_table[] = {
    &cli_core_ping_entry,
    &cli_core_state_entry,
    &cli_events_entry,
    &cli_core_service_entry,
    &cli_pty_entry,
    &cli_exec_entry,
    &cli_fs_cp_entry,
    &cli_fs_ls_entry,
    &cli_fs_cat_entry,
    &cli_desktop_screenshot_entry,
    &cli_desktop_click_entry,
    &cli_desktop_move_entry,
    &cli_desktop_scroll_entry,
    &cli_desktop_type_entry,
    &cli_desktop_key_entry,
    &cli_desktop_cursor_entry,
    &cli_desktop_desktop_entry,
    &cli_desktop_windows_entry,
    &cli_desktop_wait_change_entry,
    &cli_record_entry,
    &cli_runtime_entry,
    &cli_limits_entry,
    &cli_workspace_entry,
    &cli_task_entry,
    &cli_grant_entry,
    &cli_probe_entry,
    &cli_ports_entry,
    &cli_core_help_entry,
    NULL,
};
