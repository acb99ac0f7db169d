/* cli: the core every berth command runs on. A command walks its own
 * arguments with the global options among them, settles the transport
 * (the Unix socket, or the gateway's WebSocket with a token) and connects
 * through the functions here. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_conn.h"
#include "cli_print.h"
#include "cli_table.h"
#include "log.h"
#include "tokenfile.h"
#include "xmalloc.h"

#define CLI_SOCKET_DEFAULT "/var/lib/berth/berthd.sock"
#define CLI_TOKEN_DEFAULT "/var/lib/berth/token"
#define CLI_TIMEOUT_MAX_S 86400
#define CLI_MAX_OPTS 32
/* berth --help's column for the summaries, and the widest synopsis that
 * shares a line with its summary. */
#define CLI_HELP_INDENT 34
#define CLI_HELP_HEAD_MAX 30

#define CLI_USAGE                                                              \
	"usage: berth [--url ws://HOST:PORT/v1 | --socket PATH] "              \
	"[--token-file FILE]\n"                                                \
	"             [--json] [--timeout SEC] COMMAND [ARGS]\n"

/* Global options: accepted before the command and after it. */
static const struct option cli_global_opts[] = {
    {"url", required_argument, NULL, 'u'},
    {"socket", required_argument, NULL, 's'},
    {"token-file", required_argument, NULL, 't'},
    {"json", no_argument, NULL, 'j'},
    {"timeout", required_argument, NULL, 'T'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

const struct cli_cmd_entry *
cli_cmd_find(const struct cli_cmd_entry *const *table, const char *name)
{
	for (; *table != NULL; table++)
		if (strcmp((*table)->name, name) == 0)
			return *table;
	return NULL;
}

/* "usage: berth [OPTIONS] SYNOPSIS" of the command running (a
 * sub-command's after its command's name). */
static void
cli_synopsis(const struct cli *cli, FILE *f)
{
	const struct cli_cmd_entry *e = cli->sub != NULL ? cli->sub : cli->cmd;

	fputs("usage: berth [OPTIONS] ", f);
	if (cli->sub != NULL)
		fprintf(f, "%s ", cli->cmd->name);
	if (e->synopsis != NULL)
		fprintf(f, "%s\n", e->synopsis);
	else
		fprintf(f, "%s%s%s\n", e->name, *e->usage != '\0' ? " " : "",
		    e->usage);
}

int
cli_usage(struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_print_vwarn(fmt, ap);
	va_end(ap);
	if (cli->cmd == NULL) {
		fputs(CLI_USAGE "Try 'berth --help' for more.\n", stderr);
		return CLI_EXIT_USAGE;
	}
	cli_synopsis(cli, stderr);
	fprintf(stderr, "Try 'berth %s' for more.\n",
	    cli->cmd->more != NULL ? cli->cmd->more : "--help");
	return CLI_EXIT_USAGE;
}

/* One command's lines of berth --help: a long synopsis gets a line of
 * its own, and the summary's lines stay in their column. */
static void
cli_help_cmd(const struct cli_cmd_entry *e)
{
	char *head = xasprintf(
	    "%s%s%s", e->name, *e->usage != '\0' ? " " : "", e->usage);
	const char *p;

	if (strlen(head) > CLI_HELP_HEAD_MAX)
		printf("  %s\n%*s", head, CLI_HELP_INDENT, "");
	else
		printf("  %-*s  ", CLI_HELP_HEAD_MAX, head);
	for (p = e->summary; *p != '\0'; p++) {
		putchar(*p);
		if (*p == '\n')
			printf("%*s", CLI_HELP_INDENT, "");
	}
	putchar('\n');
	free(head);
}

void
cli_help(void)
{
	const struct cli_cmd_entry *const *e;

	fputs(CLI_USAGE, stdout);
	printf("\ncommands:\n");
	for (e = cli_table; *e != NULL; e++)
		cli_help_cmd(*e);
	printf("\noptions:\n"
	       "  --socket PATH      berthd's Unix socket ($BERTH_SOCKET,\n"
	       "                     default " CLI_SOCKET_DEFAULT ")\n"
	       "  --url URL          the gateway's WebSocket instead "
	       "($BERTH_URL)\n"
	       "  --token-file FILE  the token for --url ($BERTH_TOKEN_FILE,\n"
	       "                     default " CLI_TOKEN_DEFAULT ")\n"
	       "  --json             print JSON instead of text\n"
	       "  --timeout SEC      how long to wait for an answer "
	       "(default %d)\n"
	       "  --version          print the version\n"
	       "\nexit status: 0 success, 1 berth answered with an error "
	       "(or a file here\n"
	       "failed, or wait-change saw no change), 2 usage error, 3 "
	       "cannot connect or\n"
	       "connection lost, 4 authentication refused; exec exits with "
	       "its command's\n"
	       "status.\n",
	    CLI_TIMEOUT_DEFAULT_MS / 1000);
}

/* berth COMMAND --help: the synopsis and what the table says of it. */
static void
cli_help_running(const struct cli *cli)
{
	cli_synopsis(cli, stdout);
	printf("\n%s\n", cli->cmd->summary);
}

static int
cli_parse_timeout(struct cli *cli, const char *arg)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(arg, &end);
	if (errno != 0 || end == arg || *end != '\0' || !(s > 0) ||
	    s > CLI_TIMEOUT_MAX_S)
		return cli_usage(cli,
		    "--timeout wants seconds, more than 0 and at most %d: %s",
		    CLI_TIMEOUT_MAX_S, arg);
	cli->timeout_ms = (int)(s * 1000 + 0.5);
	if (cli->timeout_ms == 0)
		cli->timeout_ms = 1;
	return CLI_EXIT_OK;
}

/* Handles one global option: CLI_EXIT_OK to go on, or CLI_EXIT_USAGE
 * once a usage error is told. --help and --version end the run once they
 * have said their piece: nothing is open while arguments are read. */
static int
cli_global_opt(struct cli *cli, int c, const char *arg)
{
	switch (c) {
	case 'u': cli->url = arg; break;
	case 's': cli->socket_path = arg; break;
	case 't': cli->token_file = arg; break;
	case 'j': cli->json = true; break;
	case 'T': return cli_parse_timeout(cli, arg);
	case 'h':
		if (cli->cmd != NULL)
			cli_help_running(cli);
		else
			cli_help();
		exit(CLI_EXIT_OK);
	case 'V': printf("berth %s\n", BERTH_VERSION); exit(CLI_EXIT_OK);
	}
	return CLI_EXIT_OK;
}

/* Whether opts (NULL or terminated by a zero entry) has one named name. */
static bool
cli_opt_named(const struct option *opts, const char *name)
{
	size_t i;

	for (i = 0; opts != NULL && opts[i].name != NULL; i++)
		if (strcmp(opts[i].name, name) == 0)
			return true;
	return false;
}

/* Fills all with the command's options, then the global ones it does not
 * shadow, and a zero entry; returns how many are the command's. */
static size_t
cli_opts_merge(struct option *all, const struct option *opts, const char *cmd)
{
	size_t n = 0, ncmd, i;

	for (i = 0; opts != NULL && opts[i].name != NULL; i++) {
		if (n == CLI_MAX_OPTS - 1)
			log_fatal("%s has too many options", cmd);
		all[n++] = opts[i];
	}
	ncmd = n;
	for (i = 0; cli_global_opts[i].name != NULL; i++) {
		if (cli_opt_named(opts, cli_global_opts[i].name))
			continue;
		if (n == CLI_MAX_OPTS - 1)
			log_fatal("%s has too many options", cmd);
		all[n++] = cli_global_opts[i];
	}
	memset(&all[n], 0, sizeof all[n]);
	return ncmd;
}

int
cli_getopt(struct cli *cli, int argc, char **argv, const struct option *opts,
    const char *shorts)
{
	static struct option all[CLI_MAX_OPTS];
	char optstring[CLI_MAX_OPTS + 8];
	size_t ncmd;
	int c, idx;

	ncmd = cli_opts_merge(all, opts, argv[0]);
	if (strlen(shorts) > CLI_MAX_OPTS)
		log_fatal("%s has too many short options", argv[0]);
	snprintf(optstring, sizeof optstring, "+:hV%s", shorts);

	opterr = 0;
	/* Which entry matched tells whose option it is: a command's value
	 * may equal a global one's (pty open's --ttl and --token-file). */
	while ((idx = -1, c = getopt_long(argc, argv, optstring, all, &idx)) !=
	    -1) {
		if (c == '?' || c == ':') {
			cli_usage(cli, "%s option: %s",
			    c == ':' ? "missing the argument of" : "unknown",
			    argv[optind - 1]);
			return CLI_STOP;
		}
		if (idx >= 0 && (size_t)idx < ncmd)
			return c;
		if (idx == -1 && strchr(shorts, c) != NULL)
			return c;
		if (cli_global_opt(cli, c, optarg) != CLI_EXIT_OK)
			return CLI_STOP;
	}
	return -1;
}

int
cli_next(struct cli *cli, int argc, char **argv, const struct option *opts,
    const char *shorts, char **wordp)
{
	int before, c;

	if (!cli->dashdash) {
		before = optind == 0 ? 1 : optind;
		c = cli_getopt(cli, argc, argv, opts, shorts);
		if (c != -1)
			return c;
		/* getopt steps over "--" and stops: what follows is words. */
		if (optind == before + 1 && strcmp(argv[before], "--") == 0)
			cli->dashdash = true;
	}
	if (optind >= argc)
		return -1;
	*wordp = argv[optind++];
	return CLI_WORD;
}

int
cli_next_opt(struct cli *cli, int argc, char **argv, const struct option *opts,
    const char *shorts)
{
	char *word = NULL;
	int c;

	if ((c = cli_next(cli, argc, argv, opts, shorts, &word)) != CLI_WORD)
		return c;
	if (cli->sub != NULL)
		cli_usage(cli, "%s %s takes no words: %s", cli->cmd->name,
		    cli->sub->name, word);
	else
		cli_usage(cli, "%s takes no words: %s", cli->cmd->name, word);
	return CLI_STOP;
}

int
cli_no_words(struct cli *cli, int argc, char **argv)
{
	char *word = NULL;
	int c;

	c = cli_next(cli, argc, argv, NULL, "", &word);
	if (c == CLI_STOP)
		return CLI_EXIT_USAGE;
	if (c == CLI_WORD)
		return cli_usage(
		    cli, "%s takes no arguments: %s", cli->cmd->name, word);
	return cli_ready(cli);
}

int
cli_ready(struct cli *cli)
{
	const char *env;

	if (cli->url != NULL && cli->socket_path != NULL)
		return cli_usage(cli, "--url and --socket exclude each other");
	if (cli->socket_path == NULL && (env = getenv("BERTH_URL")) != NULL &&
	    *env != '\0')
		cli->url = env;
	if (cli->socket_path == NULL) {
		env = getenv("BERTH_SOCKET");
		cli->socket_path =
		    env != NULL && *env != '\0' ? env : CLI_SOCKET_DEFAULT;
	}
	if (cli->token_file == NULL) {
		env = getenv("BERTH_TOKEN_FILE");
		cli->token_file =
		    env != NULL && *env != '\0' ? env : CLI_TOKEN_DEFAULT;
	}
	return CLI_EXIT_OK;
}

int
cli_exit_status(const msgpack_object *e, int *status)
{
	const msgpack_object *code = proto_map_get(e, "code");
	uint64_t sig;

	if (code != NULL &&
	    (code->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
	        code->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)) {
		*status = (int)(code->via.i64 & 0xff);
		return 0;
	}
	if (proto_arg_u64(e, "signal", &sig) != 1 || sig == 0 ||
	    sig >= CLI_EXIT_SIGNAL)
		return -1;
	*status = CLI_EXIT_SIGNAL + (int)sig;
	return (int)sig;
}

int
cli_open(struct cli *cli, struct cli_conn **connp, char **cause)
{
	char *token;
	size_t len;
	int status;

	if (cli->url == NULL)
		return cli_conn_open_unix(
		    cli->socket_path, cli->timeout_ms, connp, cause);
	if (tokenfile_read(cli->token_file, &token, &len, cause) < 0)
		return CLI_CONN_AUTH;
	status =
	    cli_conn_open_ws(cli->url, token, cli->timeout_ms, connp, cause);
	explicit_bzero(token, len);
	free(token);
	return status;
}

int
cli_fail(int status, char *cause)
{
	if (status != CLI_CONN_INTERRUPTED)
		cli_print_warn("%s", cause);
	free(cause);
	switch (status) {
	case CLI_CONN_OK:
	case CLI_CONN_INTERRUPTED: return CLI_EXIT_OK;
	case CLI_CONN_ANSWERED: return CLI_EXIT_FAILED;
	case CLI_CONN_AUTH: return CLI_EXIT_AUTH;
	default: return CLI_EXIT_CONNECT;
	}
}

void
cli_pack_id_cb(msgpack_packer *pk, void *ctx)
{
	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "id", ctx);
}

int
cli_ask(struct cli *cli, const char *op, cli_conn_pack_cb pack, void *ctx,
    int extra_ms, cli_show_cb show, void *arg)
{
	const struct proto_msg *resp;
	struct cli_conn *conn;
	char *cause;
	int status;

	if ((status = cli_open(cli, &conn, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	status = cli_conn_call(
	    conn, op, pack, ctx, cli->timeout_ms + extra_ms, &resp, &cause);
	if (status != CLI_CONN_OK) {
		cli_conn_close(conn);
		return cli_fail(status, cause);
	}
	status = show(cli, resp->result, arg);
	fflush(stdout);
	cli_conn_close(conn);
	return status;
}

/* cli_ask_print's show: arg is a cli_print_cb *. */
static int
cli_show_print(struct cli *cli, const msgpack_object *result, void *arg)
{
	cli_print_cb *print = arg;

	if (cli->json)
		cli_print_json(result);
	else if (*print != NULL)
		(*print)(result);
	return CLI_EXIT_OK;
}

int
cli_ask_print(struct cli *cli, const char *op, cli_conn_pack_cb pack, void *ctx,
    int extra_ms, cli_print_cb print)
{
	return cli_ask(cli, op, pack, ctx, extra_ms, cli_show_print, &print);
}

int
cli_show_json(struct cli *cli, const msgpack_object *result, void *arg)
{
	cli_print_cb none = NULL;

	(void)arg;
	return cli_show_print(cli, result, &none);
}

int
cli_sub_run(struct cli *cli, int argc, char **argv,
    const struct cli_cmd_entry *const *subs, const char *wants)
{
	char *word = NULL;
	int c;

	c = cli_next(cli, argc, argv, NULL, "", &word);
	if (c == CLI_STOP)
		return CLI_EXIT_USAGE;
	if (c == CLI_WORD && (cli->sub = cli_cmd_find(subs, word)) != NULL)
		return cli->sub->exec(cli, argc, argv);
	return cli_usage(cli, "%s wants %s", cli->cmd->name, wants);
}
