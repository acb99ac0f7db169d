/* cli_grant: berth grant create, list and revoke, over the grant.* ops.
 * create prints the link first, for a script to take with head -1, and
 * the token only when asked: a token on a terminal stays in scrollback,
 * recordings and shared screens. list counts how long each grant has by
 * berthd's clock (ping, on the same connection), the clock that ends
 * it. revoke takes every ID on one connection and goes on past one that
 * is refused, as cat goes on past a file. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_desktop.h"
#include "cli_grant.h"
#include "cli_print.h"
#include "cli_pty.h"
#include "xmalloc.h"

/* A grant's id: 'g' and 16 hex digits. */
#define CLI_GRANT_ID_LEN 17
/* What a label holds at most (grant.create's). */
#define CLI_GRANT_LABEL_MAX 256
/* The longest [gateway] grant_max_ttl_s may be; berthd refuses what
 * passes its own, and says which it is. */
#define CLI_GRANT_TTL_MAX (UINT64_C(30) * 86400)
#define CLI_GRANT_COLS 6

/* Option values, apart from every global option's. */
enum {
	CLI_GRANT_OPT_TTL = 256,
	CLI_GRANT_OPT_UNTIL,
	CLI_GRANT_OPT_LABEL,
	CLI_GRANT_OPT_PUBLIC,
	CLI_GRANT_OPT_TOKEN,
};

/* How long until at, from now (both ms, berthd's clock): "in 59m58s". */
static char *
cli_grant_in(uint64_t now, uint64_t at)
{
	char *span, *s;

	if (at <= now)
		return xstrdup("now");
	span = cli_print_duration(at - now);
	s = xasprintf("in %s", span);
	free(span);
	return s;
}

/* ---- create ---- */

/* create's words and options, strings of argv. */
struct cli_grant_create {
	const char *scope;
	uint64_t ttl_s;    /* 0: not given */
	uint64_t until_ms; /* 0: not given */
	const char *label; /* NULL: not given */
	bool public_;
	bool token; /* the token is printed too */
};

static void
cli_grant_pack_create_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_grant_create *g = ctx;

	msgpack_pack_map(pk,
	    1 + (g->ttl_s > 0) + (g->until_ms > 0) + (g->label != NULL) +
	        g->public_);
	proto_pack_kv_str(pk, "scope", g->scope);
	if (g->ttl_s > 0)
		proto_pack_kv_u64(pk, "ttl_s", g->ttl_s);
	if (g->until_ms > 0)
		proto_pack_kv_u64(pk, "expires_at", g->until_ms);
	if (g->label != NULL)
		proto_pack_kv_str(pk, "label", g->label);
	if (g->public_)
		proto_pack_kv_str(pk, "visibility", "public");
}

static int
cli_grant_create_word(struct cli *cli, struct cli_grant_create *g, char *word)
{
	if (g->scope != NULL)
		return cli_usage(cli, "grant create takes one SCOPE: %s", word);
	g->scope = word;
	return CLI_EXIT_OK;
}

/* What goes with what: berthd checks the scope and the times, this the
 * command line's shape. */
static int
cli_grant_create_check(struct cli *cli, const struct cli_grant_create *g)
{
	if (g->scope == NULL)
		return cli_usage(cli,
		    "grant create wants a SCOPE: desktop:view, "
		    "desktop:control, cdp, pty:ID:view, pty:ID:write, "
		    "preview:PORT or runtime:NAME");
	if (g->ttl_s > 0 && g->until_ms > 0)
		return cli_usage(cli, "--ttl and --until exclude each other");
	if (g->label != NULL && strlen(g->label) > CLI_GRANT_LABEL_MAX)
		return cli_usage(
		    cli, "--label has at most %d bytes", CLI_GRANT_LABEL_MAX);
	return cli_ready(cli);
}

static int
cli_grant_create_args(
    struct cli *cli, int argc, char **argv, struct cli_grant_create *g)
{
	static const struct option opts[] = {
	    {"ttl", required_argument, NULL, CLI_GRANT_OPT_TTL},
	    {"until", required_argument, NULL, CLI_GRANT_OPT_UNTIL},
	    {"label", required_argument, NULL, CLI_GRANT_OPT_LABEL},
	    {"public", no_argument, NULL, CLI_GRANT_OPT_PUBLIC},
	    {"token", no_argument, NULL, CLI_GRANT_OPT_TOKEN},
	    {NULL, 0, NULL, 0},
	};
	int c, status = CLI_EXIT_OK;
	char *word;

	while (status == CLI_EXIT_OK &&
	    (c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD:
			status = cli_grant_create_word(cli, g, word);
			break;
		case CLI_GRANT_OPT_TTL:
			status = cli_pty_uint(cli, "--ttl (seconds)", optarg, 1,
			    CLI_GRANT_TTL_MAX, &g->ttl_s);
			break;
		case CLI_GRANT_OPT_UNTIL:
			status =
			    cli_pty_uint(cli, "--until (ms since the epoch)",
			        optarg, 1, UINT64_MAX, &g->until_ms);
			break;
		case CLI_GRANT_OPT_LABEL: g->label = optarg; break;
		case CLI_GRANT_OPT_PUBLIC: g->public_ = true; break;
		case CLI_GRANT_OPT_TOKEN: g->token = true; break;
		}
	}
	if (status != CLI_EXIT_OK)
		return status;
	return cli_grant_create_check(cli, g);
}

/* "key  value" (value taken). */
static void
cli_grant_line(const char *key, char *value)
{
	printf("%-8s %s\n", key, value);
	free(value);
}

/* The link, then the id and when it ends; the token only if asked. */
static int
cli_grant_create_show(struct cli *cli, const msgpack_object *result, void *arg)
{
	const struct cli_grant_create *g = arg;
	uint64_t at = cli_print_u64(result, "expires_at");
	char *url, *utc, *in;

	if (proto_map_get(result, "url") == NULL)
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("grant.create answered without a url"));
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	url = cli_desktop_text(result, "url", "?");
	printf("%s\n", url);
	free(url);
	cli_grant_line("id", cli_desktop_text(result, "id", "?"));
	utc = cli_print_utc(at);
	/* created is berthd's now: the answer left at once. */
	in = cli_grant_in(cli_print_u64(result, "created"), at);
	cli_grant_line("expires", xasprintf("%s (%s)", utc, in));
	free(in);
	free(utc);
	if (g->token)
		cli_grant_line("token", cli_desktop_text(result, "token", "?"));
	return CLI_EXIT_OK;
}

static int
cli_grant_create(struct cli *cli, int argc, char **argv)
{
	struct cli_grant_create g = {0};
	int status;

	if ((status = cli_grant_create_args(cli, argc, argv, &g)) !=
	    CLI_EXIT_OK)
		return status;
	return cli_ask(cli, "grant.create", cli_grant_pack_create_cb, &g, 0,
	    cli_grant_create_show, &g);
}

/* ---- list ---- */

/* Whether a grant has a one-time link to redeem: a private preview. */
static bool
cli_grant_has_link(const msgpack_object *g)
{
	char scope[16] = "", vis[16] = "";

	return proto_arg_str(g, "scope", scope, sizeof scope) == 1 &&
	    strncmp(scope, "preview:", 8) == 0 &&
	    proto_arg_str(g, "visibility", vis, sizeof vis) == 1 &&
	    strcmp(vis, "private") == 0;
}

static void
cli_grant_table(const msgpack_object *result, uint64_t now)
{
	static const char *const head[CLI_GRANT_COLS] = {
	    "ID", "SCOPE", "LABEL", "VISIBILITY", "EXPIRES", "REDEEMED"};
	const msgpack_object *items, *g;
	char **cells, **row;
	bool redeemed;
	uint32_t i, n;

	cells = cli_print_list_cells(
	    result, "grants", "no grants", head, CLI_GRANT_COLS, &items, &n);
	if (cells == NULL)
		return;
	for (i = 0; i < n; i++) {
		g = &items[i];
		row = &cells[(i + 1) * CLI_GRANT_COLS];
		redeemed = false;
		proto_arg_bool(g, "redeemed", &redeemed);
		row[0] = cli_desktop_text(g, "id", "?");
		row[1] = cli_desktop_text(g, "scope", "?");
		row[2] = cli_desktop_text(g, "label", "");
		if (*row[2] == '\0') {
			free(row[2]);
			row[2] = xstrdup("-");
		}
		row[3] = cli_desktop_text(g, "visibility", "?");
		row[4] = cli_grant_in(now, cli_print_u64(g, "expires_at"));
		row[5] = xstrdup(!cli_grant_has_link(g) ? "-"
		        : redeemed                      ? "yes"
		                                        : "no");
	}
	cli_print_table(CLI_GRANT_COLS, n + 1, cells);
}

static int
cli_grant_list(struct cli *cli, int argc, char **argv)
{
	const struct proto_msg *resp;
	struct cli_conn *conn;
	uint64_t now = 0;
	char *cause;
	int c, status;

	while ((c = cli_next_opt(cli, argc, argv, NULL, "")) != -1)
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
	if ((status = cli_ready(cli)) != CLI_EXIT_OK)
		return status;
	if ((status = cli_open(cli, &conn, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	if (!cli->json) {
		status = cli_conn_call(
		    conn, "ping", NULL, NULL, cli->timeout_ms, &resp, &cause);
		if (status == CLI_CONN_OK)
			now = cli_print_u64(resp->result, "ts");
	}
	if (status == CLI_CONN_OK)
		status = cli_conn_call(conn, "grant.list", NULL, NULL,
		    cli->timeout_ms, &resp, &cause);
	if (status == CLI_CONN_OK && cli->json)
		cli_print_json(resp->result);
	else if (status == CLI_CONN_OK)
		cli_grant_table(resp->result, now);
	fflush(stdout);
	cli_conn_close(conn);
	return status == CLI_CONN_OK ? CLI_EXIT_OK : cli_fail(status, cause);
}

/* ---- revoke ---- */

/* An ID of the command line: 'g' and 16 hex digits; whether it names a
 * live grant is berthd's to say. */
static int
cli_grant_id(struct cli *cli, const char *word)
{
	if (strlen(word) == CLI_GRANT_ID_LEN && word[0] == 'g' &&
	    strspn(word + 1, "0123456789abcdef") == CLI_GRANT_ID_LEN - 1)
		return CLI_EXIT_OK;
	return cli_usage(cli,
	    "ID is what grant create printed, g and 16 hex digits: '%.64s'",
	    word);
}

/* Every ID is checked before the first is sent: a typo revokes none. */
static int
cli_grant_revoke(struct cli *cli, int argc, char **argv)
{
	const char **ids = xcalloc((size_t)argc, sizeof *ids);
	const struct proto_msg *resp;
	struct cli_conn *conn = NULL;
	int c, i, n = 0, status = CLI_EXIT_OK, failed = 0;
	char *word, *cause = NULL;

	while (status == CLI_EXIT_OK &&
	    (c = cli_next(cli, argc, argv, NULL, "", &word)) != -1) {
		if (c == CLI_STOP)
			status = CLI_EXIT_USAGE;
		else if ((status = cli_grant_id(cli, word)) == CLI_EXIT_OK)
			ids[n++] = word;
	}
	if (status == CLI_EXIT_OK && n == 0)
		status = cli_usage(cli, "grant revoke wants an ID");
	if (status == CLI_EXIT_OK)
		status = cli_ready(cli);
	if (status == CLI_EXIT_OK &&
	    (status = cli_open(cli, &conn, &cause)) != CLI_CONN_OK)
		status = cli_fail(status, cause);
	if (conn == NULL) {
		free(ids);
		return status;
	}
	for (i = 0; i < n && status == CLI_CONN_OK; i++) {
		status = cli_conn_call(conn, "grant.revoke", cli_pack_id_cb,
		    (void *)ids[i], cli->timeout_ms, &resp, &cause);
		if (status != CLI_CONN_ANSWERED)
			continue;
		cli_print_warn("grant %s not revoked: %s", ids[i], cause);
		free(cause);
		failed = 1;
		status = CLI_CONN_OK;
	}
	cli_conn_close(conn);
	free(ids);
	if (status != CLI_CONN_OK)
		return cli_fail(status, cause);
	return failed ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

/* ---- the table ---- */

static const struct cli_cmd_entry cli_grant_create_entry = {
    .name = "create",
    .usage = "SCOPE [--ttl S | --until MS] [--label T] [--public] [--token]",
    .synopsis = "create SCOPE [--ttl SECONDS | --until MS] [--label TEXT]\n"
                "             [--public] [--token]",
    .exec = cli_grant_create,
};

static const struct cli_cmd_entry cli_grant_list_entry = {
    .name = "list",
    .usage = "",
    .exec = cli_grant_list,
};

static const struct cli_cmd_entry cli_grant_revoke_entry = {
    .name = "revoke",
    .usage = "ID...",
    .exec = cli_grant_revoke,
};

static const struct cli_cmd_entry *const cli_grant_subs[] = {
    &cli_grant_create_entry,
    &cli_grant_list_entry,
    &cli_grant_revoke_entry,
    NULL,
};

static int
cli_grant_run_sub(struct cli *cli, int argc, char **argv)
{
	return cli_sub_run(
	    cli, argc, argv, cli_grant_subs, "create, list or revoke");
}

const struct cli_cmd_entry cli_grant_entry = {
    .name = "grant",
    .usage = "create|list|revoke ARGS",
    .summary = "access grants: create SCOPE prints a link that\n"
               "opens SCOPE alone until it expires; list them;\n"
               "revoke IDs. The token is printed only with\n"
               "--token or --json: on a terminal it leaks into\n"
               "scrollback, recordings and shared screens (cdp\n"
               "and pty links need it as their bearer)",
    .exec = cli_grant_run_sub,
};
