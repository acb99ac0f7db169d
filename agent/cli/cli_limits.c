/* cli_limits: berth limits TARGET (see cli_limits.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_desktop.h"
#include "cli_limits.h"
#include "cli_print.h"
#include "xmalloc.h"

#define CLI_LIMITS_COLS 3

static void
cli_limits_pack_cb(msgpack_packer *pk, void *ctx)
{
	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "target", ctx);
}

/* One row per limit asked: its name, value and how it is held. */
static void
cli_limits_table(const msgpack_object *limits)
{
	static const char *const head[CLI_LIMITS_COLS] = {
	    "LIMIT", "VALUE", "HELD BY"};
	const msgpack_object_kv *kv;
	char **cells, **row;
	int64_t value;
	uint32_t i, n;

	if (limits == NULL || limits->type != MSGPACK_OBJECT_MAP ||
	    (n = limits->via.map.size) == 0) {
		printf("no limits\n");
		return;
	}
	cells = cli_print_cells(head, CLI_LIMITS_COLS, n);
	for (i = 0; i < n; i++) {
		kv = &limits->via.map.ptr[i];
		row = &cells[(i + 1) * CLI_LIMITS_COLS];
		row[0] = cli_print_tame(kv->key.type == MSGPACK_OBJECT_STR
		        ? xasprintf("%.*s", (int)kv->key.via.str.size,
		              kv->key.via.str.ptr)
		        : xstrdup("?"));
		value = 0;
		cli_desktop_int(&kv->val, "value", &value);
		row[1] = xasprintf("%" PRId64, value);
		row[2] = cli_desktop_text(&kv->val, "how", "?");
	}
	cli_print_table(CLI_LIMITS_COLS, n + 1, cells);
}

/* The usage as "key value" pairs on one line. */
static void
cli_limits_usage(const msgpack_object *usage)
{
	const msgpack_object_kv *kv;
	uint32_t i;

	printf("usage");
	if (usage == NULL || usage->type != MSGPACK_OBJECT_MAP ||
	    usage->via.map.size == 0)
		printf("  none known");
	for (i = 0; usage != NULL && usage->type == MSGPACK_OBJECT_MAP &&
	     i < usage->via.map.size;
	     i++) {
		kv = &usage->via.map.ptr[i];
		if (kv->key.type == MSGPACK_OBJECT_STR &&
		    kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			printf("  %.*s %" PRIu64, (int)kv->key.via.str.size,
			    kv->key.via.str.ptr, kv->val.via.u64);
	}
	printf("\n");
}

static int
cli_limits_show(struct cli *cli, const msgpack_object *result, void *arg)
{
	int64_t kills = 0;
	char *cgroup;
	bool frozen = false;

	(void)arg;
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	cgroup = cli_desktop_text(result, "cgroup", "none");
	proto_arg_bool(result, "frozen", &frozen);
	cli_desktop_int(result, "oom_kills", &kills);
	printf("cgroup %s%s, %" PRId64 " OOM kill%s\n", cgroup,
	    frozen ? " (frozen)" : "", kills, kills == 1 ? "" : "s");
	free(cgroup);
	cli_limits_table(proto_map_get(result, "limits"));
	cli_limits_usage(proto_map_get(result, "usage"));
	return CLI_EXIT_OK;
}

static int
cli_limits_run(struct cli *cli, int argc, char **argv)
{
	char *word, *target = NULL;
	int c;

	while ((c = cli_next(cli, argc, argv, NULL, "", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (c == CLI_WORD && target != NULL)
			return cli_usage(
			    cli, "limits takes one TARGET: %s", word);
		if (c == CLI_WORD)
			target = word;
	}
	if (target == NULL)
		return cli_usage(cli,
		    "limits wants a TARGET: proc/ID, pty/ID, runtime/NAME or "
		    "task/ID");
	if ((c = cli_ready(cli)) != 0)
		return c;
	return cli_ask(cli, "limits.status", cli_limits_pack_cb, target, 0,
	    cli_limits_show, NULL);
}

const struct cli_cmd_entry cli_limits_entry = {
    .name = "limits",
    .usage = "proc/ID | pty/ID | runtime/NAME",
    .summary = "what bounds a command, a terminal session or a\n"
               "runtime (each limit and the mechanism that holds\n"
               "it, or why none does) and what it uses",
    .exec = cli_limits_run,
};
