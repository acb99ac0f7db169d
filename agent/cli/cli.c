/* cli: the berth command-line client. Reads the options, picks the
 * transport (the Unix socket, or the gateway's WebSocket with a token) and
 * runs one command of the table below; each capability adds an entry. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "cli.h"
#include "cli_conn.h"
#include "cli_desktop.h"
#include "cli_exec.h"
#include "cli_fs.h"
#include "cli_print.h"
#include "cli_pty.h"
#include "log.h"
#include "tokenfile.h"
#include "xmalloc.h"

#define CLI_SOCKET_DEFAULT "/var/lib/berth/berthd.sock"
#define CLI_TOKEN_DEFAULT "/var/lib/berth/token"
#define CLI_TIMEOUT_DEFAULT_MS 10000
#define CLI_TIMEOUT_MAX_S 86400
#define CLI_BACKOFF_MIN_MS 100
#define CLI_BACKOFF_MAX_MS 2000
#define CLI_MAX_OPTS 32

#define CLI_USAGE                                                              \
	"usage: berth [--url ws://HOST:PORT/v1 | --socket PATH] "              \
	"[--token-file FILE]\n"                                                \
	"             [--json] [--timeout SEC] COMMAND [ARGS]\n"

/* The options, from the command line and the environment: strings of
 * argv, the environment or static, except cmd_usage (freed by main). */
struct cli {
	const char *socket_path;
	const char *url;
	const char *token_file;
	bool json;
	int timeout_ms;
	char *cmd_usage; /* the running command's, for usage errors */
};

struct cli_cmd {
	const char *name;
	const char *args;
	const char *summary;
	/* Either run does it all, or op is an op without arguments whose
	 * result print shows. */
	int (*run)(struct cli *, const struct cli_cmd *, int, char **);
	const char *op;
	void (*print)(const msgpack_object *result, bool json);
};

static int cli_cmd_simple(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_ping(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_events(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_help(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_service(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_pty(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_exec(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_cp(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_ls(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_cat(struct cli *, const struct cli_cmd *, int, char **);
static int cli_cmd_desktop(struct cli *, const struct cli_cmd *, int, char **);

static const struct cli_cmd cli_cmds[] = {
    {"ping", "", "check that berthd answers, and how fast", cli_cmd_ping, NULL,
        NULL},
    {"state", "", "show berthd, its services and checks", cli_cmd_simple,
        "state", cli_print_state},
    {"events", "[--from SEQ] [--follow]",
        "print the events from SEQ on (default: all the\n"
        "journal holds; with --follow, new ones only);\n"
        "--follow keeps printing them live",
        cli_cmd_events, NULL, NULL},
    {"service", "list | status|start|stop|restart NAME",
        "list the services, show one, or start, stop or\n"
        "restart it",
        cli_cmd_service, NULL, NULL},
    {"pty", "COMMAND [ARGS]",
        "terminal sessions: open, list, attach (Ctrl-\\\n"
        "twice detaches), send, resize, signal, close;\n"
        "'berth pty help' says more",
        cli_cmd_pty, NULL, NULL},
    {"exec", "[OPTIONS] [--] CMD [ARGS...]",
        "run CMD in the sandbox, its stdout, stderr and\n"
        "exit status passed through (128 + N for signal\n"
        "N); --cwd DIR, --env NAME=VALUE, --user USER,\n"
        "--tag TAG; --stdin passes stdin (else it is\n"
        "closed); --timeout SEC kills it: status 124;\n"
        "berth's own failures: status 125",
        cli_cmd_exec, NULL, NULL},
    {"cp", "[-q] LOCAL :REMOTE | :REMOTE LOCAL",
        "copy a file into the sandbox or out of it\n"
        "(:PATH is in the sandbox; into a directory,\n"
        "the file keeps its name); -q: no progress bar",
        cli_cmd_cp, NULL, NULL},
    {"ls", "[-l] [-a] [-R] PATH",
        "list a directory in the sandbox: -l with mode,\n"
        "size and time (UTC), -a dot files too, -R all\n"
        "below it; --json: fs.list's result",
        cli_cmd_ls, NULL, NULL},
    {"cat", "PATH...", "print files of the sandbox", cli_cmd_cat, NULL, NULL},
    {"screenshot", CLI_DESKTOP_SCREENSHOT_ARGS,
        "the screen, or --region, as PNG or JPEG (by\n"
        "FILE's extension, or --format) into FILE, or to\n"
        "stdout when it is no terminal; --scale 0.05..4,\n"
        "--quality 1..100 (JPEG), --no-cursor leaves the\n"
        "pointer out; --json: the result, not the image",
        cli_cmd_desktop, NULL, NULL},
    {"click", CLI_DESKTOP_CLICK_ARGS,
        "click at X Y (or where the pointer is), twice\n"
        "with --double; --button left|middle|right|\n"
        "back|forward|1..9",
        cli_cmd_desktop, NULL, NULL},
    {"move", CLI_DESKTOP_MOVE_ARGS, "move the pointer to X Y", cli_cmd_desktop,
        NULL, NULL},
    {"scroll", CLI_DESKTOP_SCROLL_ARGS,
        "turn the wheel N clicks (at X Y): --dy down\n"
        "(negative: up), --dx right (negative: left)",
        cli_cmd_desktop, NULL, NULL},
    {"type", CLI_DESKTOP_TYPE_ARGS,
        "type TEXT (UTF-8; -: all of stdin) key by key;\n"
        "--delay MS between keys",
        cli_cmd_desktop, NULL, NULL},
    {"key", CLI_DESKTOP_KEY_ARGS,
        "press each key in turn: Return, ctrl+l, alt+F4", cli_cmd_desktop, NULL,
        NULL},
    {"cursor", CLI_DESKTOP_CURSOR_ARGS, "where the pointer is: X Y",
        cli_cmd_desktop, NULL, NULL},
    {"desktop", CLI_DESKTOP_DESKTOP_ARGS,
        "the display: its size, depth and screens", cli_cmd_desktop, NULL,
        NULL},
    {"windows", CLI_DESKTOP_WINDOWS_ARGS,
        "the windows: id, geometry, active, class, title", cli_cmd_desktop,
        NULL, NULL},
    {"wait-change", CLI_DESKTOP_WAIT_CHANGE_ARGS,
        "wait until the screen (or --region) changes,\n"
        "at most --timeout SEC (default 10, at most 60);\n"
        "exit status 1 if it did not",
        cli_cmd_desktop, NULL, NULL},
    {"record", CLI_DESKTOP_RECORD_ARGS,
        "record the screen to MP4: start [--fps N]\n"
        "[--region X,Y,W,H] [--max-seconds S]\n"
        "[--quality Q] prints its ID; stop ID [-o FILE]\n"
        "ends it and prints the artifact (-o: saves the\n"
        "MP4 here); status [ID] lists the recordings",
        cli_cmd_desktop, NULL, NULL},
    {"help", "", "show this help", cli_cmd_help, NULL, NULL},
};

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

/* Set by getopt handling when the run should end at once with this
 * status (after --help, --version, or a usage error). */
#define CLI_OPT_DONE (-2)
static int cli_opt_status;

static int cli_usage_error(struct cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int
cli_usage_error(struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_print_vwarn(fmt, ap);
	va_end(ap);
	if (cli->cmd_usage != NULL)
		fprintf(stderr, "usage: %s\n", cli->cmd_usage);
	else
		fputs(CLI_USAGE, stderr);
	fputs("Try 'berth --help' for more.\n", stderr);
	return CLI_EXIT_USAGE;
}

static void
cli_help(void)
{
	size_t i;
	char *head;

	fputs(CLI_USAGE, stdout);
	printf("\ncommands:\n");
	for (i = 0; i < sizeof cli_cmds / sizeof cli_cmds[0]; i++) {
		head = xasprintf("%s%s%s", cli_cmds[i].name,
		    *cli_cmds[i].args != '\0' ? " " : "", cli_cmds[i].args);
		/* A long synopsis gets a line of its own. */
		if (strlen(head) > 30)
			printf("  %s\n%34s", head, "");
		else
			printf("  %-30s  ", head);
		for (const char *p = cli_cmds[i].summary; *p != '\0'; p++) {
			putchar(*p);
			if (*p == '\n')
				printf("%34s", "");
		}
		putchar('\n');
		free(head);
	}
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

static int
cli_parse_timeout(struct cli *cli, const char *arg)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(arg, &end);
	if (errno != 0 || end == arg || *end != '\0' || !(s > 0) ||
	    s > CLI_TIMEOUT_MAX_S)
		return cli_usage_error(cli,
		    "--timeout wants seconds, more than 0 and at most %d: %s",
		    CLI_TIMEOUT_MAX_S, arg);
	cli->timeout_ms = (int)(s * 1000 + 0.5);
	if (cli->timeout_ms == 0)
		cli->timeout_ms = 1;
	return CLI_EXIT_OK;
}

/* Handles one global option; a status other than CLI_EXIT_OK ends the
 * run. */
static int
cli_global_opt(struct cli *cli, int c, const char *arg)
{
	switch (c) {
	case 'u': cli->url = arg; break;
	case 's': cli->socket_path = arg; break;
	case 't': cli->token_file = arg; break;
	case 'j': cli->json = true; break;
	case 'T': return cli_parse_timeout(cli, arg);
	case 'h': cli_help(); return CLI_OPT_DONE;
	case 'V': printf("berth %s\n", BERTH_VERSION); return CLI_OPT_DONE;
	default: return cli_usage_error(cli, "unknown option");
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

/*
 * getopt_long over the global options and the command's own (opts, NULL
 * or terminated by a zero entry; a command's option shadows a global one
 * of the same name) and the short options of shorts, letters whose value
 * is the letter. Returns the next command option, or -1 at the end;
 * CLI_OPT_DONE when the run must end with cli_opt_status.
 */
static int
cli_getopt_short(struct cli *cli, int argc, char **argv,
    const struct option *opts, const char *shorts)
{
	static struct option all[CLI_MAX_OPTS];
	char optstring[CLI_MAX_OPTS + 8];
	size_t n = 0, ncmd, i;
	int c, idx, status;

	for (i = 0; opts != NULL && opts[i].name != NULL; i++) {
		if (n == CLI_MAX_OPTS - 1)
			log_fatal("%s has too many options", argv[0]);
		all[n++] = opts[i];
	}
	ncmd = n;
	for (i = 0; cli_global_opts[i].name != NULL; i++) {
		if (cli_opt_named(opts, cli_global_opts[i].name))
			continue;
		if (n == CLI_MAX_OPTS - 1)
			log_fatal("%s has too many options", argv[0]);
		all[n++] = cli_global_opts[i];
	}
	memset(&all[n], 0, sizeof all[n]);
	if (strlen(shorts) > CLI_MAX_OPTS)
		log_fatal("%s has too many short options", argv[0]);
	snprintf(optstring, sizeof optstring, "+:hV%s", shorts);

	opterr = 0;
	/* Which entry matched tells whose option it is: a command's value
	 * may equal a global one's (pty open's --ttl and --token-file). */
	while ((idx = -1, c = getopt_long(argc, argv, optstring, all, &idx)) !=
	    -1) {
		if (c == '?' || c == ':') {
			cli_opt_status = cli_usage_error(cli, "%s option: %s",
			    c == ':' ? "missing the argument of" : "unknown",
			    argv[optind - 1]);
			return CLI_OPT_DONE;
		}
		if (idx >= 0 && (size_t)idx < ncmd)
			return c;
		if (idx == -1 && strchr(shorts, c) != NULL)
			return c;
		if ((status = cli_global_opt(cli, c, optarg)) != CLI_EXIT_OK) {
			cli_opt_status =
			    status == CLI_OPT_DONE ? CLI_EXIT_OK : status;
			return CLI_OPT_DONE;
		}
	}
	return -1;
}

static int
cli_getopt(struct cli *cli, int argc, char **argv, const struct option *opts)
{
	return cli_getopt_short(cli, argc, argv, opts, "");
}

/* Fills what the command line left out from the environment, and checks
 * that one transport is chosen. */
static int
cli_defaults(struct cli *cli)
{
	const char *env;

	if (cli->url != NULL && cli->socket_path != NULL)
		return cli_usage_error(
		    cli, "--url and --socket exclude each other");
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

/* Ends the parse of a command's arguments: nothing may be left over, and
 * the transport is settled. */
static int
cli_args_end(struct cli *cli, int argc, char **argv)
{
	if (optind < argc)
		return cli_usage_error(
		    cli, "%s takes no arguments: %s", argv[0], argv[optind]);
	return cli_defaults(cli);
}

static const char *
cli_peer(struct cli *cli)
{
	return cli->url != NULL ? cli->url : cli->socket_path;
}

/* Opens a connection by the options; a cli_conn status. */
static int
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

/* Reports a failed cli_conn status and returns the exit status for it. */
static int
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

/* A request whose error response counts as a failure
 * (CLI_CONN_ANSWERED, "CODE: MESSAGE"). */
static int
cli_call(struct cli *cli, struct cli_conn *conn, const char *op,
    cli_conn_pack_cb pack, void *ctx, const struct proto_msg **respp,
    char **cause)
{
	return cli_conn_call(
	    conn, op, pack, ctx, cli->timeout_ms, respp, cause);
}

/* Takes the command's arguments when it has no options of its own. */
static int
cli_no_args(struct cli *cli, int argc, char **argv)
{
	int c;

	while ((c = cli_getopt(cli, argc, argv, NULL)) != -1)
		if (c == CLI_OPT_DONE)
			return cli_opt_status;
	return cli_args_end(cli, argc, argv);
}

static int
cli_cmd_simple(
    struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	const struct proto_msg *resp;
	struct cli_conn *conn;
	char *cause;
	int status;

	if ((status = cli_no_args(cli, argc, argv)) != CLI_EXIT_OK)
		return status;
	if ((status = cli_open(cli, &conn, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	status = cli_call(cli, conn, cmd->op, NULL, NULL, &resp, &cause);
	if (status == CLI_CONN_OK)
		cmd->print(resp->result, cli->json);
	cli_conn_close(conn);
	return status == CLI_CONN_OK ? CLI_EXIT_OK : cli_fail(status, cause);
}

static void
cli_pack_name_cb(msgpack_packer *pk, void *ctx)
{
	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "name", ctx);
}

/* berth service ACTION [NAME]: list takes no name, the others one. */
static int
cli_cmd_service(
    struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	static const char *const actions[] = {
	    "list", "status", "start", "stop", "restart"};
	const struct proto_msg *resp;
	struct cli_conn *conn;
	const char *action, *name;
	char *cause, op[32];
	size_t i;
	int c, status;

	(void)cmd;
	/* Global options may come before, between and after the words. */
	while ((c = cli_getopt(cli, argc, argv, NULL)) != -1)
		if (c == CLI_OPT_DONE)
			return cli_opt_status;
	action = optind < argc ? argv[optind++] : NULL;
	while ((c = cli_getopt(cli, argc, argv, NULL)) != -1)
		if (c == CLI_OPT_DONE)
			return cli_opt_status;
	for (i = 0; action != NULL && i < sizeof actions / sizeof *actions; i++)
		if (strcmp(action, actions[i]) == 0)
			break;
	if (action == NULL || i == sizeof actions / sizeof *actions)
		return cli_usage_error(cli,
		    "service wants list, status, start, "
		    "stop or restart");
	name = i > 0 && optind < argc ? argv[optind++] : NULL;
	if (i > 0 && name == NULL)
		return cli_usage_error(cli, "service %s wants a name", action);
	while ((c = cli_getopt(cli, argc, argv, NULL)) != -1)
		if (c == CLI_OPT_DONE)
			return cli_opt_status;
	if ((status = cli_args_end(cli, argc, argv)) != CLI_EXIT_OK)
		return status;
	if ((status = cli_open(cli, &conn, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	snprintf(op, sizeof op, "service.%s", action);
	status = cli_call(cli, conn, op, name != NULL ? cli_pack_name_cb : NULL,
	    (void *)name, &resp, &cause);
	if (status == CLI_CONN_OK) {
		if (i == 0)
			cli_print_service_list(resp->result, cli->json);
		else
			cli_print_service(resp->result, cli->json);
	}
	cli_conn_close(conn);
	return status == CLI_CONN_OK ? CLI_EXIT_OK : cli_fail(status, cause);
}

static double
cli_elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static int
cli_cmd_ping(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	const struct proto_msg *resp;
	struct cli_conn *conn;
	struct timespec t0;
	char *cause;
	int status;

	(void)cmd;
	if ((status = cli_no_args(cli, argc, argv)) != CLI_EXIT_OK)
		return status;
	if ((status = cli_open(cli, &conn, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	status = cli_call(cli, conn, "ping", NULL, NULL, &resp, &cause);
	if (status == CLI_CONN_OK)
		cli_print_ping(resp->result, cli_elapsed_ms(&t0), cli->json);
	cli_conn_close(conn);
	return status == CLI_CONN_OK ? CLI_EXIT_OK : cli_fail(status, cause);
}

static int
cli_cmd_help(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	int status;

	(void)cmd;
	if ((status = cli_no_args(cli, argc, argv)) != CLI_EXIT_OK)
		return status;
	cli_help();
	return CLI_EXIT_OK;
}

/*
 * events: the position in the stream is next, the first seq not yet
 * printed. A subscription asks for from_seq = next, so a reconnection
 * resumes exactly there: nothing lost, nothing printed twice.
 */
struct cli_events {
	struct cli *cli;
	bool follow;
	bool from_set;
	uint64_t from; /* the from_seq to subscribe with, if from_set */
	uint64_t next; /* the first seq not yet printed */
	uint64_t last; /* without --follow: the last seq to print */
};

static void
cli_events_pack(msgpack_packer *pk, void *ctx)
{
	struct cli_events *ev = ctx;

	if (!ev->from_set) {
		msgpack_pack_map(pk, 0);
		return;
	}
	msgpack_pack_map(pk, 1);
	proto_pack_kv_u64(pk, "from_seq", ev->from);
}

/* Subscribes conn, and learns where the stream starts and, the first
 * time, where the journal ends. */
static int
cli_events_subscribe(
    struct cli_events *ev, struct cli_conn *conn, bool first, char **cause)
{
	const struct proto_msg *resp;
	uint64_t from, last = 0;
	int status;

	status = cli_call(ev->cli, conn, "events.subscribe", cli_events_pack,
	    ev, &resp, cause);
	if (status != CLI_CONN_OK)
		return status;
	if (proto_arg_u64(resp->result, "from_seq", &from) != 1 ||
	    proto_arg_u64(resp->result, "last_seq", &last) != 1) {
		*cause = xstrdup("events.subscribe answered without from_seq "
		                 "and last_seq");
		return CLI_CONN_PROTOCOL;
	}
	if (first) {
		ev->next = from;
		ev->last = last;
	}
	return CLI_CONN_OK;
}

static void
cli_events_show(struct cli_events *ev, const struct proto_msg *msg)
{
	if (msg->seq == 0 && strcmp(msg->kind, EV_EVENTS_GAP) == 0)
		cli_print_gap(msg, ev->cli->json);
	else if (msg->seq >= ev->next) {
		cli_print_event(msg, ev->cli->json);
		ev->next = msg->seq + 1;
	}
	if (ev->follow)
		fflush(stdout);
}

/* After a lost connection: connect and subscribe again from next, with
 * backoff, until it works, or fails for good (the token, an error
 * answer), or a signal ends the run. */
static int
cli_events_reconnect(
    struct cli_events *ev, struct cli_conn **connp, char **cause)
{
	int backoff = CLI_BACKOFF_MIN_MS, status;

	ev->from_set = true;
	for (;;) {
		if (cli_conn_pause(backoff) == CLI_CONN_INTERRUPTED) {
			*cause = NULL;
			return CLI_CONN_INTERRUPTED;
		}
		backoff = backoff * 2 > CLI_BACKOFF_MAX_MS ? CLI_BACKOFF_MAX_MS
		                                           : backoff * 2;
		ev->from = ev->next;
		status = cli_open(ev->cli, connp, cause);
		if (status == CLI_CONN_OK) {
			status = cli_events_subscribe(ev, *connp, false, cause);
			if (status == CLI_CONN_OK)
				break;
			cli_conn_close(*connp);
			*connp = NULL;
		}
		if (status == CLI_CONN_AUTH || status == CLI_CONN_ANSWERED ||
		    status == CLI_CONN_INTERRUPTED)
			return status;
		free(*cause);
	}
	cli_print_warn("reconnected to %s; resuming at seq %" PRIu64,
	    cli_peer(ev->cli), ev->next);
	return CLI_CONN_OK;
}

static void
cli_events_signal_cb(int sig)
{
	(void)sig;
	cli_conn_interrupt();
}

static int
cli_events_args(struct cli_events *ev, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"from", required_argument, NULL, 'f'},
	    {"follow", no_argument, NULL, 'F'},
	    {NULL, 0, NULL, 0},
	};
	char *end;
	int c;

	while ((c = cli_getopt(ev->cli, argc, argv, opts)) != -1) {
		if (c == CLI_OPT_DONE)
			return cli_opt_status;
		if (c == 'F') {
			ev->follow = true;
			continue;
		}
		errno = 0;
		ev->from = strtoull(optarg, &end, 10);
		if (errno != 0 || end == optarg || *end != '\0' ||
		    *optarg == '-' || ev->from == 0)
			return cli_usage_error(ev->cli,
			    "--from wants a sequence number (1 or more): %s",
			    optarg);
		ev->from_set = true;
	}
	/* A one-off listing shows the whole journal, like a log viewer. */
	if (!ev->from_set && !ev->follow) {
		ev->from = 1;
		ev->from_set = true;
	}
	return cli_args_end(ev->cli, argc, argv);
}

static int
cli_cmd_events(
    struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct cli_events ev = {.cli = cli};
	const struct proto_msg *msg;
	struct cli_conn *conn;
	struct sigaction sa;
	char *cause;
	int status;

	(void)cmd;
	if ((status = cli_events_args(&ev, argc, argv)) != CLI_EXIT_OK)
		return status;
	if (ev.follow) {
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = cli_events_signal_cb;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	if ((status = cli_open(cli, &conn, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	if ((status = cli_events_subscribe(&ev, conn, true, &cause)) !=
	    CLI_CONN_OK) {
		cli_conn_close(conn);
		return cli_fail(status, cause);
	}
	while (ev.follow || ev.next <= ev.last) {
		status = cli_conn_recv(
		    conn, ev.follow ? -1 : cli->timeout_ms, &msg, &cause);
		if (status == CLI_CONN_OK) {
			if (msg->type == PROTO_EVENT)
				cli_events_show(&ev, msg);
			continue;
		}
		cli_conn_close(conn);
		conn = NULL;
		if (!ev.follow || status == CLI_CONN_INTERRUPTED)
			break;
		cli_print_warn("%s; reconnecting", cause);
		free(cause);
		if ((status = cli_events_reconnect(&ev, &conn, &cause)) !=
		    CLI_CONN_OK)
			break;
	}
	cli_conn_close(conn);
	fflush(stdout);
	return status == CLI_CONN_OK ? CLI_EXIT_OK : cli_fail(status, cause);
}

/* The command families in files of their own (cli_pty, cli_exec, cli_fs,
 * cli_desktop) run on loan of the option parser, the settings and the
 * connection. */
static int
cli_lend_getopt_cb(void *cli, int argc, char **argv, const struct option *opts,
    const char *shorts, int *status)
{
	int c = cli_getopt_short(cli, argc, argv, opts, shorts);

	if (c != CLI_OPT_DONE)
		return c;
	*status = cli_opt_status;
	return CLI_HOST_STOP;
}

static int
cli_lend_ready_cb(void *arg, bool *json, int *timeout_ms)
{
	struct cli *cli = arg;

	*json = cli->json;
	*timeout_ms = cli->timeout_ms;
	return cli_defaults(cli);
}

static int
cli_lend_open_cb(void *cli, struct cli_conn **connp, char **cause)
{
	return cli_open(cli, connp, cause);
}

static const struct cli_host *
cli_host(struct cli *cli)
{
	static struct cli_host host = {
	    .getopt_cb = cli_lend_getopt_cb,
	    .ready_cb = cli_lend_ready_cb,
	    .open_cb = cli_lend_open_cb,
	    .fail_cb = cli_fail,
	};

	host.cli = cli;
	return &host;
}

static int
cli_cmd_pty(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	(void)cmd;
	return cli_pty_run(cli_host(cli), argc, argv);
}

static int
cli_cmd_exec(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	(void)cmd;
	return cli_exec_run(cli_host(cli), argc, argv);
}

static int
cli_cmd_cp(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	(void)cmd;
	return cli_fs_cp(cli_host(cli), argc, argv);
}

static int
cli_cmd_ls(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	(void)cmd;
	return cli_fs_ls(cli_host(cli), argc, argv);
}

static int
cli_cmd_cat(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	(void)cmd;
	return cli_fs_cat(cli_host(cli), argc, argv);
}

static int
cli_cmd_desktop(
    struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	(void)cmd;
	return cli_desktop_run(cli_host(cli), argc, argv);
}

static const struct cli_cmd *
cli_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof cli_cmds / sizeof cli_cmds[0]; i++)
		if (strcmp(cli_cmds[i].name, name) == 0)
			return &cli_cmds[i];
	return NULL;
}

int
main(int argc, char **argv)
{
	struct cli cli = {.timeout_ms = CLI_TIMEOUT_DEFAULT_MS};
	const struct cli_cmd *cmd;
	int c, status;

	while ((c = cli_getopt(&cli, argc, argv, NULL)) != -1)
		if (c == CLI_OPT_DONE)
			return cli_opt_status;
	if (optind == argc)
		return cli_usage_error(&cli, "no command given");
	if ((cmd = cli_find(argv[optind])) == NULL)
		return cli_usage_error(
		    &cli, "unknown command: %s", argv[optind]);
	argc -= optind;
	argv += optind;
	cli.cmd_usage = xasprintf("berth [OPTIONS] %s%s%s", cmd->name,
	    *cmd->args != '\0' ? " " : "", cmd->args);
	/* The command's own parse starts after its name; 0 makes getopt
	 * start afresh. */
	optind = 0;
	status = cmd->run(&cli, cmd, argc, argv);
	free(cli.cmd_usage);
	return status;
}
