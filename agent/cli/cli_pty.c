/* cli_pty: the berth pty commands. open, list, send, resize, signal and
 * close are one request each; attach (cli_attach) is the interactive
 * client; help says more of them all. */
#include <sys/ioctl.h>

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_attach.h"
#include "cli_print.h"
#include "cli_pty.h"
#include "xmalloc.h"

#define CLI_PTY_SIZE_MAX 1000
#define CLI_PTY_TTL_MAX (UINT64_C(10) * 366 * 86400)

/* The words of a command without options of its own: exactly n. */
static int
cli_pty_words(struct cli *cli, int argc, char **argv, char **words, int n)
{
	char *word;
	int c, got = 0;

	while ((c = cli_next(cli, argc, argv, NULL, "", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (got == n)
			return cli_usage(cli, "too many arguments: %s", word);
		words[got++] = word;
	}
	if (got < n)
		return cli_usage(cli, "too few arguments");
	return CLI_EXIT_OK;
}

int
cli_pty_uint(struct cli *cli, const char *what, const char *arg, uint64_t min,
    uint64_t max, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || *arg == '-' ||
	    *out < min || *out > max)
		return cli_usage(cli,
		    "%s wants a whole number from %" PRIu64 " to %" PRIu64
		    ": %s",
		    what, min, max, arg);
	return CLI_EXIT_OK;
}

static int
cli_pty_size(struct cli *cli, const char *what, const char *arg, unsigned *out)
{
	uint64_t v;
	int status;

	status = cli_pty_uint(cli, what, arg, 1, CLI_PTY_SIZE_MAX, &v);
	*out = (unsigned)v;
	return status;
}

int
cli_pty_id(struct cli *cli, const char *id)
{
	if (*id == '\0' || strlen(id) > CLI_PTY_ID_MAX)
		return cli_usage(cli, "not a session id: %s", id);
	return CLI_EXIT_OK;
}

/* The terminal's size, from stdin or else stdout; false if neither is
 * a terminal that knows it. */
bool
cli_pty_winsize(unsigned *cols, unsigned *rows)
{
	struct winsize ws;

	if ((ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) &&
	    (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0))
		return false;
	if (ws.ws_row == 0)
		return false;
	*cols = ws.ws_col > CLI_PTY_SIZE_MAX ? CLI_PTY_SIZE_MAX : ws.ws_col;
	*rows = ws.ws_row > CLI_PTY_SIZE_MAX ? CLI_PTY_SIZE_MAX : ws.ws_row;
	return true;
}

/* ---- requests ---- */

void
cli_pty_pack_id_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_pty_args *a = ctx;

	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "id", a->id);
}

void
cli_pty_pack_resize_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_pty_args *a = ctx;

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "id", a->id);
	proto_pack_kv_u64(pk, "cols", a->cols);
	proto_pack_kv_u64(pk, "rows", a->rows);
}

void
cli_pty_pack_input_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_pty_args *a = ctx;

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "id", a->id);
	proto_pack_str(pk, "data");
	msgpack_pack_bin(pk, a->len);
	msgpack_pack_bin_body(pk, a->data, a->len);
}

static void
cli_pty_pack_signal_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_pty_args *a = ctx;

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "id", a->id);
	if (a->signame != NULL)
		proto_pack_kv_str(pk, "signal", a->signame);
	else
		proto_pack_kv_u64(pk, "signal", a->signum);
}

static void
cli_pty_pack_open_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_pty_args *a = ctx;
	size_t n;

	msgpack_pack_map(
	    pk, 2 + (a->argv != NULL) + (a->cwd != NULL) + a->ttl_set);
	proto_pack_kv_u64(pk, "cols", a->cols);
	proto_pack_kv_u64(pk, "rows", a->rows);
	if (a->cwd != NULL)
		proto_pack_kv_str(pk, "cwd", a->cwd);
	if (a->ttl_set)
		proto_pack_kv_u64(pk, "ttl_detached", a->ttl);
	if (a->argv == NULL)
		return;
	for (n = 0; a->argv[n] != NULL; n++)
		;
	proto_pack_str(pk, "argv");
	msgpack_pack_array(pk, n);
	for (n = 0; a->argv[n] != NULL; n++)
		proto_pack_str(pk, a->argv[n]);
}

/* Settles the transport, sends one request and shows its result with
 * print (or as JSON with --json; nothing if print is NULL). */
static int
cli_pty_once(struct cli *cli, const char *op, cli_conn_pack_cb pack, void *ctx,
    cli_print_cb print)
{
	int status;

	if ((status = cli_ready(cli)) != CLI_EXIT_OK)
		return status;
	return cli_ask_print(cli, op, pack, ctx, 0, print);
}

/* ---- open ---- */

static void
cli_pty_show_id(const msgpack_object *result)
{
	char id[CLI_PTY_ID_MAX + 1];

	if (proto_arg_str(result, "id", id, sizeof id) == 1)
		printf("%s\n", id);
}

static int
cli_pty_open(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"cols", required_argument, NULL, 'c'},
	    {"rows", required_argument, NULL, 'r'},
	    {"cwd", required_argument, NULL, 'd'},
	    {"ttl", required_argument, NULL, 't'},
	    {NULL, 0, NULL, 0},
	};
	struct cli_pty_args a = {.cols = 80, .rows = 24};
	bool cols_set = false, rows_set = false;
	unsigned cols, rows;
	char *word;
	int c, status = CLI_EXIT_OK;

	while (status == CLI_EXIT_OK && a.argv == NULL &&
	    (c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case 'c':
			status = cli_pty_size(cli, "--cols", optarg, &a.cols);
			cols_set = true;
			break;
		case 'r':
			status = cli_pty_size(cli, "--rows", optarg, &a.rows);
			rows_set = true;
			break;
		case 'd': a.cwd = optarg; break;
		case 't':
			status = cli_pty_uint(
			    cli, "--ttl", optarg, 0, CLI_PTY_TTL_MAX, &a.ttl);
			a.ttl_set = true;
			break;
		case CLI_WORD:
			/* The command and its arguments, verbatim. */
			a.argv = &argv[optind - 1];
			optind = argc;
			break;
		}
	}
	if (status != CLI_EXIT_OK)
		return status;
	if (cli_pty_winsize(&cols, &rows)) {
		a.cols = cols_set ? a.cols : cols;
		a.rows = rows_set ? a.rows : rows;
	}
	return cli_pty_once(
	    cli, "pty.open", cli_pty_pack_open_cb, &a, cli_pty_show_id);
}

/* ---- list ---- */

static int
cli_pty_list(struct cli *cli, int argc, char **argv)
{
	int status;

	if ((status = cli_pty_words(cli, argc, argv, NULL, 0)) != 0)
		return status;
	return cli_pty_once(cli, "pty.list", NULL, NULL, cli_print_pty_list);
}

/* ---- close, resize, signal, send ---- */

static int
cli_pty_close(struct cli *cli, int argc, char **argv)
{
	struct cli_pty_args a = {0};
	char *words[1] = {NULL};
	int status;

	if ((status = cli_pty_words(cli, argc, argv, words, 1)) != 0 ||
	    (status = cli_pty_id(cli, words[0])) != 0)
		return status;
	a.id = words[0];
	return cli_pty_once(cli, "pty.close", cli_pty_pack_id_cb, &a, NULL);
}

static int
cli_pty_resize(struct cli *cli, int argc, char **argv)
{
	struct cli_pty_args a = {0};
	char *words[3] = {NULL};
	int status;

	if ((status = cli_pty_words(cli, argc, argv, words, 3)) != 0 ||
	    (status = cli_pty_id(cli, words[0])) != 0 ||
	    (status = cli_pty_size(cli, "COLS", words[1], &a.cols)) != 0 ||
	    (status = cli_pty_size(cli, "ROWS", words[2], &a.rows)) != 0)
		return status;
	a.id = words[0];
	return cli_pty_once(
	    cli, "pty.resize", cli_pty_pack_resize_cb, &a, NULL);
}

/* SIGNAL: a name, with or without "SIG", in any case (berthd says which
 * it takes), or a number. */
static int
cli_pty_signal(struct cli *cli, int argc, char **argv)
{
	struct cli_pty_args a = {0};
	char *words[2] = {NULL}, *name, *p;
	int status;

	if ((status = cli_pty_words(cli, argc, argv, words, 2)) != 0 ||
	    (status = cli_pty_id(cli, words[0])) != 0)
		return status;
	a.id = words[0];
	if (*words[1] >= '0' && *words[1] <= '9') {
		if ((status = cli_pty_uint(
		         cli, "SIGNAL", words[1], 1, 127, &a.signum)) != 0)
			return status;
		return cli_pty_once(
		    cli, "pty.signal", cli_pty_pack_signal_cb, &a, NULL);
	}
	name = xstrdup(words[1]);
	for (p = name; *p != '\0'; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	a.signame = strncmp(name, "SIG", 3) == 0 ? name + 3 : name;
	status =
	    cli_pty_once(cli, "pty.signal", cli_pty_pack_signal_cb, &a, NULL);
	free(name);
	return status;
}

/* TEXT goes as it is, in pty.input requests of at most 64 KiB each. */
static int
cli_pty_send(struct cli *cli, int argc, char **argv)
{
	struct cli_pty_args a = {0};
	const struct proto_msg *resp;
	struct cli_conn *conn;
	char *words[2] = {NULL}, *cause;
	size_t len, done = 0;
	int status;

	if ((status = cli_pty_words(cli, argc, argv, words, 2)) != 0 ||
	    (status = cli_pty_id(cli, words[0])) != 0 ||
	    (status = cli_ready(cli)) != 0)
		return status;
	a.id = words[0];
	len = strlen(words[1]);
	status = cli_open(cli, &conn, &cause);
	if (status != CLI_CONN_OK)
		return cli_fail(status, cause);
	do {
		a.data = words[1] + done;
		a.len = len - done > CLI_PTY_INPUT_MAX ? CLI_PTY_INPUT_MAX
		                                       : len - done;
		done += a.len;
		status = cli_conn_call(conn, "pty.input", cli_pty_pack_input_cb,
		    &a, cli->timeout_ms, &resp, &cause);
	} while (status == CLI_CONN_OK && done < len);
	if (status == CLI_CONN_OK && cli->json)
		cli_print_json(resp->result);
	cli_conn_close(conn);
	if (status != CLI_CONN_OK)
		return cli_fail(status, cause);
	return CLI_EXIT_OK;
}

/* ---- help, and the dispatch ---- */

static int cli_pty_help(struct cli *cli, int argc, char **argv);

static const struct cli_cmd_entry cli_pty_open_entry = {
    .name = "open",
    .usage = "[--cols N] [--rows N] [--cwd DIR] [--ttl SEC] "
             "[-- CMD ARGS...]",
    .exec = cli_pty_open,
};

static const struct cli_cmd_entry cli_pty_list_entry = {
    .name = "list",
    .usage = "",
    .exec = cli_pty_list,
};

static const struct cli_cmd_entry cli_pty_send_entry = {
    .name = "send",
    .usage = "ID TEXT",
    .exec = cli_pty_send,
};

static const struct cli_cmd_entry cli_pty_resize_entry = {
    .name = "resize",
    .usage = "ID COLS ROWS",
    .exec = cli_pty_resize,
};

static const struct cli_cmd_entry cli_pty_signal_entry = {
    .name = "signal",
    .usage = "ID SIGNAL",
    .exec = cli_pty_signal,
};

static const struct cli_cmd_entry cli_pty_close_entry = {
    .name = "close",
    .usage = "ID",
    .exec = cli_pty_close,
};

static const struct cli_cmd_entry cli_pty_help_entry = {
    .name = "help",
    .usage = "",
    .exec = cli_pty_help,
};

/* The words after pty, in the order pty help lists them. */
static const struct cli_cmd_entry *const cli_pty_subs[] = {
    &cli_pty_open_entry,
    &cli_pty_list_entry,
    &cli_attach_entry,
    &cli_pty_send_entry,
    &cli_pty_resize_entry,
    &cli_pty_signal_entry,
    &cli_pty_close_entry,
    &cli_pty_help_entry,
    NULL,
};

static int
cli_pty_help(struct cli *cli, int argc, char **argv)
{
	const struct cli_cmd_entry *const *e;
	int status;

	if ((status = cli_pty_words(cli, argc, argv, NULL, 0)) != 0)
		return status;
	printf("usage: berth [OPTIONS] pty COMMAND [ARGS]\n\n");
	for (e = cli_pty_subs; *e != NULL; e++)
		printf("  pty %s%s%s\n", (*e)->name,
		    *(*e)->usage != '\0' ? " " : "", (*e)->usage);
	printf(
	    "\n"
	    "open starts a session (default: the login shell, at this\n"
	    "terminal's size or 80x24) and prints its id; --ttl is how long\n"
	    "it lives with no viewer. send types TEXT into it as it is.\n"
	    "\n"
	    "attach shows a session's output from now on (--from OFFSET: from\n"
	    "that byte; --screen: its current screen first) and sends the "
	    "keys\n"
	    "typed to it, Ctrl-C included; --read-only only shows. The detach\n"
	    "key, Ctrl-\\ unless --detach-key says another (^X, one "
	    "character,\n"
	    "or none), pressed twice in a row detaches; pressed once, it is\n"
	    "sent with the next key, or after a second. A lost connection is\n"
	    "made again and the output resumes where it stopped. When the\n"
	    "session exits, attach exits with its status (128 + N for\n"
	    "signal N).\n");
	return CLI_EXIT_OK;
}

/* pty WORD ...: the word picks the sub-command, whose synopsis usage
 * errors then show. */
static int
cli_pty_run(struct cli *cli, int argc, char **argv)
{
	char *word = NULL;
	int c;

	c = cli_next(cli, argc, argv, NULL, "", &word);
	if (c == CLI_STOP)
		return CLI_EXIT_USAGE;
	if (c == -1)
		return cli_usage(cli, "pty wants a command");
	if ((cli->sub = cli_cmd_find(cli_pty_subs, word)) == NULL)
		return cli_usage(cli, "unknown pty command: %s", word);
	return cli->sub->exec(cli, argc, argv);
}

const struct cli_cmd_entry cli_pty_entry = {
    .name = "pty",
    .usage = "COMMAND [ARGS]",
    .summary = "terminal sessions: open, list, attach (Ctrl-\\\n"
               "twice detaches), send, resize, signal, close;\n"
               "'berth pty help' says more",
    .more = "pty help",
    .exec = cli_pty_run,
};
