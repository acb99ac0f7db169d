/* cli_runtime: berth runtime list, status, start, stop, pause and resume. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_desktop.h"
#include "cli_print.h"
#include "cli_runtime.h"

/* runtime stop answers once the runtime has exited: its stop timeout
 * (SIGTERM, then SIGKILL) is the runtime's to set; a minute covers it. */
#define CLI_RUNTIME_STOP_WAIT_MS 60000

enum {
	CLI_RUNTIME_OPT_WORKSPACE = 256,
	CLI_RUNTIME_OPT_RESUME,
	CLI_RUNTIME_OPT_PORT,
};

/* The words and options of a runtime sub-command; strings of argv. */
struct cli_runtime_args {
	const char *name;
	const char *mode;      /* start only */
	const char *workspace; /* start only; NULL: the runtime's */
	bool resume;
	long port; /* 0: berthd picks one */
};

static void
cli_runtime_pack_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_runtime_args *a = ctx;

	msgpack_pack_map(pk,
	    (a->name != NULL) + (a->mode != NULL) + (a->workspace != NULL) +
	        a->resume + (a->port != 0));
	if (a->name != NULL)
		proto_pack_kv_str(pk, "name", a->name);
	if (a->mode != NULL)
		proto_pack_kv_str(pk, "mode", a->mode);
	if (a->workspace != NULL)
		proto_pack_kv_str(pk, "workspace", a->workspace);
	if (a->resume)
		proto_pack_kv_bool(pk, "resume", true);
	if (a->port != 0)
		proto_pack_kv_u64(pk, "port", (uint64_t)a->port);
}

/* A runtime's status (status and start): key: value lines, and for a
 * terminal UI the command that watches it. */
static int
cli_runtime_status_show(
    struct cli *cli, const msgpack_object *result, void *arg)
{
	const msgpack_object *pty_id;
	char *pty;

	(void)arg;
	cli_print_runtime(result, cli->json);
	pty_id = proto_map_get(result, "pty");
	if (cli->json || pty_id == NULL || pty_id->type != MSGPACK_OBJECT_STR)
		return CLI_EXIT_OK;
	pty = cli_desktop_text(result, "pty", "?");
	printf("\nwatch it with: berth pty attach %s\n", pty);
	free(pty);
	return CLI_EXIT_OK;
}

/* The words of list (none), status and stop (NAME), start (NAME MODE). */
static int
cli_runtime_words(struct cli *cli, int argc, char **argv, size_t want,
    const struct option *opts, struct cli_runtime_args *a)
{
	const char **slots[2] = {&a->name, &a->mode};
	size_t have = 0;
	char *word;
	int c;

	while ((c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD:
			if (have == want)
				return cli_usage(cli,
				    "runtime %s takes %zu word%s: %s",
				    cli->sub->name, want, want == 1 ? "" : "s",
				    word);
			*slots[have++] = word;
			break;
		case CLI_RUNTIME_OPT_WORKSPACE: a->workspace = optarg; break;
		case CLI_RUNTIME_OPT_RESUME: a->resume = true; break;
		case CLI_RUNTIME_OPT_PORT:
			if (cli_desktop_long(optarg, 1, 65535, &a->port) != 0)
				return cli_usage(cli,
				    "--port wants a TCP port, 1 to 65535: %s",
				    optarg);
			break;
		}
	}
	if (have < want)
		return cli_usage(cli, "runtime %s wants %s", cli->sub->name,
		    want == 1 ? "a NAME" : "a NAME and a MODE");
	return cli_ready(cli);
}

static int
cli_runtime_list(struct cli *cli, int argc, char **argv)
{
	struct cli_runtime_args a = {0};
	int status;

	if ((status = cli_runtime_words(cli, argc, argv, 0, NULL, &a)) != 0)
		return status;
	return cli_ask_print(
	    cli, "runtime.list", NULL, NULL, 0, cli_print_runtime_list);
}

static int
cli_runtime_status(struct cli *cli, int argc, char **argv)
{
	struct cli_runtime_args a = {0};
	int status;

	if ((status = cli_runtime_words(cli, argc, argv, 1, NULL, &a)) != 0)
		return status;
	return cli_ask(cli, "runtime.status", cli_runtime_pack_cb, &a, 0,
	    cli_runtime_status_show, NULL);
}

static int
cli_runtime_start(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"workspace", required_argument, NULL, CLI_RUNTIME_OPT_WORKSPACE},
	    {"resume", no_argument, NULL, CLI_RUNTIME_OPT_RESUME},
	    {"port", required_argument, NULL, CLI_RUNTIME_OPT_PORT},
	    {NULL, 0, NULL, 0},
	};
	struct cli_runtime_args a = {0};
	int status;

	if ((status = cli_runtime_words(cli, argc, argv, 2, opts, &a)) != 0)
		return status;
	return cli_ask(cli, "runtime.start", cli_runtime_pack_cb, &a, 0,
	    cli_runtime_status_show, NULL);
}

static int
cli_runtime_stop(struct cli *cli, int argc, char **argv)
{
	struct cli_runtime_args a = {0};
	int status;

	if ((status = cli_runtime_words(cli, argc, argv, 1, NULL, &a)) != 0)
		return status;
	return cli_ask(cli, "runtime.stop", cli_runtime_pack_cb, &a,
	    CLI_RUNTIME_STOP_WAIT_MS, cli_show_json, NULL);
}

/* pause and resume: NAME. A pause is answered once its freeze settled,
 * or within a second without. */
static int
cli_runtime_freeze(
    struct cli *cli, int argc, char **argv, const char *op, cli_print_cb print)
{
	struct cli_runtime_args a = {0};
	int status;

	if ((status = cli_runtime_words(cli, argc, argv, 1, NULL, &a)) != 0)
		return status;
	return cli_ask_print(cli, op, cli_runtime_pack_cb, &a, 0, print);
}

/* A pause holds even while a process is not frozen yet: says so. */
static void
cli_runtime_paused(const msgpack_object *result)
{
	const msgpack_object *f = proto_map_get(result, "frozen");

	if (f != NULL && f->type == MSGPACK_OBJECT_BOOLEAN && !f->via.boolean)
		printf("paused; not every process is frozen yet (berth limits "
		       "says frozen once they are)\n");
}

static int
cli_runtime_pause(struct cli *cli, int argc, char **argv)
{
	return cli_runtime_freeze(
	    cli, argc, argv, "runtime.pause", cli_runtime_paused);
}

static int
cli_runtime_resume(struct cli *cli, int argc, char **argv)
{
	return cli_runtime_freeze(cli, argc, argv, "runtime.resume", NULL);
}

static const struct cli_cmd_entry cli_runtime_list_entry = {
    .name = "list",
    .usage = "",
    .exec = cli_runtime_list,
};

static const struct cli_cmd_entry cli_runtime_status_entry = {
    .name = "status",
    .usage = "NAME",
    .exec = cli_runtime_status,
};

static const struct cli_cmd_entry cli_runtime_start_entry = {
    .name = "start",
    .usage = "NAME tui|server|rpc [--workspace DIR] [--resume] [--port N]",
    .exec = cli_runtime_start,
};

static const struct cli_cmd_entry cli_runtime_stop_entry = {
    .name = "stop",
    .usage = "NAME",
    .exec = cli_runtime_stop,
};

static const struct cli_cmd_entry cli_runtime_pause_entry = {
    .name = "pause",
    .usage = "NAME",
    .exec = cli_runtime_pause,
};

static const struct cli_cmd_entry cli_runtime_resume_entry = {
    .name = "resume",
    .usage = "NAME",
    .exec = cli_runtime_resume,
};

static const struct cli_cmd_entry *const cli_runtime_subs[] = {
    &cli_runtime_list_entry,
    &cli_runtime_status_entry,
    &cli_runtime_start_entry,
    &cli_runtime_stop_entry,
    &cli_runtime_pause_entry,
    &cli_runtime_resume_entry,
    NULL,
};

static int
cli_runtime_run(struct cli *cli, int argc, char **argv)
{
	return cli_sub_run(cli, argc, argv, cli_runtime_subs,
	    "list, status, start, stop, pause or resume");
}

const struct cli_cmd_entry cli_runtime_entry = {
    .name = "runtime",
    .usage = "list | status|stop|pause|resume NAME | start NAME MODE ...",
    .summary = "the agent runtimes: list them with their versions\n"
               "and modes, show one, start one (MODE tui, server\n"
               "or rpc; --workspace DIR, --resume, --port N),\n"
               "stop it, or pause and resume all its processes",
    .exec = cli_runtime_run,
};
