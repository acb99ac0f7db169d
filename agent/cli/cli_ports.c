/* cli_ports: berth ports, over port.list (see cli_ports.h). The SINCE
 * column is in UTC, berthd's wall clock, as port.list gives it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "cli_desktop.h"
#include "cli_ports.h"
#include "cli_print.h"
#include "xmalloc.h"

#define CLI_PORTS_COLS 6

static void
cli_ports_table(const msgpack_object *result)
{
	static const char *const head[CLI_PORTS_COLS] = {
	    "PORT", "ADDRESS", "PID", "COMMAND", "USER", "SINCE"};
	const msgpack_object *items, *p;
	char **cells, **row;
	uint32_t i, n;

	cells = cli_print_list_cells(
	    result, "ports", "no ports", head, CLI_PORTS_COLS, &items, &n);
	if (cells == NULL)
		return;
	for (i = 0; i < n; i++) {
		p = &items[i];
		row = &cells[(i + 1) * CLI_PORTS_COLS];
		row[0] = xasprintf("%" PRIu64, cli_print_u64(p, "port"));
		row[1] = cli_desktop_text(p, "address", "?");
		row[2] = cli_print_u64(p, "pid") == 0
		    ? xstrdup("-")
		    : xasprintf("%" PRIu64, cli_print_u64(p, "pid"));
		row[3] = cli_desktop_text(p, "command", "-");
		row[4] = cli_desktop_text(p, "user", "?");
		row[5] = cli_print_utc(cli_print_u64(p, "since"));
	}
	cli_print_table(CLI_PORTS_COLS, n + 1, cells);
}

static int
cli_ports(struct cli *cli, int argc, char **argv)
{
	const struct proto_msg *resp;
	struct cli_conn *conn;
	char *cause;
	int c, status;

	while ((c = cli_next_opt(cli, argc, argv, NULL, "")) != -1)
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
	if ((status = cli_ready(cli)) != CLI_EXIT_OK)
		return status;
	if ((status = cli_open(cli, &conn, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	status = cli_conn_call(
	    conn, "port.list", NULL, NULL, cli->timeout_ms, &resp, &cause);
	if (status == CLI_CONN_OK && cli->json)
		cli_print_json(resp->result);
	else if (status == CLI_CONN_OK)
		cli_ports_table(resp->result);
	fflush(stdout);
	cli_conn_close(conn);
	return status == CLI_CONN_OK ? CLI_EXIT_OK : cli_fail(status, cause);
}

const struct cli_cmd_entry cli_ports_entry = {
    .name = "ports",
    .usage = "",
    .summary = "the TCP ports listened on in the sandbox: by\n"
               "which process and user, since when",
    .exec = cli_ports,
};
