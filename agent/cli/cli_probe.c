/* cli_probe: berth probe, for warm-pool managers and exec probes. One
 * connection: hello's labels, then state's checks. Strictly ready is
 * what /readyz says 200 to: every readiness check passing. The exit
 * status is the answer (0 ready and every label as asked, 1 not, 2 no
 * answer), so that a probe needs no parsing; the failing checks and
 * their reasons, or the labels that differ, are printed for the person
 * who reads a failed probe's output. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_print.h"
#include "cli_probe.h"
#include "clock.h"
#include "xmalloc.h"

/* The exit statuses, the probe's own interface. */
#define CLI_PROBE_READY 0
#define CLI_PROBE_NOT_READY 1
#define CLI_PROBE_NO_ANSWER 2

/* --label KEY=VALUE given at most this often. */
#define CLI_PROBE_LABELS_MAX 64

enum { CLI_PROBE_OPT_LABEL = 256 };

/* What --label asked: strings of argv, split at the first '='. */
struct cli_probe_label {
	const char *key;
	size_t keylen;
	const char *value;
};

/* One reason the sandbox is not what was asked: a check that fails, or
 * a label that differs. Both strings owned. */
struct cli_probe_miss {
	char *what;
	char *why;
};

struct cli_probe {
	struct cli_probe_label labels[CLI_PROBE_LABELS_MAX];
	size_t nlabels;
	struct cli_probe_miss *misses;
	size_t nmisses, checks;
};

static void
cli_probe_miss(struct cli_probe *p, char *what, char *why)
{
	p->misses = xreallocarray(p->misses, p->nmisses + 1, sizeof *p->misses);
	p->misses[p->nmisses].what = what;
	p->misses[p->nmisses].why = why;
	p->nmisses++;
}

static char *
cli_probe_str(const msgpack_object *o)
{
	if (o == NULL || o->type != MSGPACK_OBJECT_STR)
		return NULL;
	return xasprintf("%.*s", (int)o->via.str.size, o->via.str.ptr);
}

/* Each --label against hello's labels. */
static void
cli_probe_labels(struct cli_probe *p, const msgpack_object *hello)
{
	const msgpack_object *labels = proto_map_get(hello, "labels");
	char *key, *have;
	size_t i;

	for (i = 0; i < p->nlabels; i++) {
		key = xasprintf(
		    "%.*s", (int)p->labels[i].keylen, p->labels[i].key);
		have = cli_probe_str(
		    labels == NULL ? NULL : proto_map_get(labels, key));
		if (have == NULL)
			cli_probe_miss(p, xasprintf("label %s", key),
			    xasprintf(
			        "not set (wanted \"%s\")", p->labels[i].value));
		else if (strcmp(have, p->labels[i].value) != 0)
			cli_probe_miss(p, xasprintf("label %s", key),
			    xasprintf("\"%s\", not \"%s\"", have,
			        p->labels[i].value));
		free(have);
		free(key);
	}
}

/* Each check of state that does not pass. */
static void
cli_probe_checks(struct cli_probe *p, const msgpack_object *state)
{
	const msgpack_object *checks = proto_map_get(state, "checks");
	const msgpack_object_kv *kv;
	const msgpack_object *ok;
	char *name, *reason;
	uint32_t i;

	if (checks == NULL || checks->type != MSGPACK_OBJECT_MAP) {
		cli_probe_miss(p, xstrdup("state"), xstrdup("no checks in it"));
		return;
	}
	for (i = 0; i < checks->via.map.size; i++) {
		kv = &checks->via.map.ptr[i];
		p->checks++;
		ok = proto_map_get(&kv->val, "ok");
		if (ok != NULL && ok->type == MSGPACK_OBJECT_BOOLEAN &&
		    ok->via.boolean)
			continue;
		if ((name = cli_probe_str(&kv->key)) == NULL)
			name = xstrdup("?");
		reason = cli_probe_str(proto_map_get(&kv->val, "reason"));
		if (reason != NULL && *reason == '\0') {
			free(reason);
			reason = NULL;
		}
		cli_probe_miss(
		    p, name, reason != NULL ? reason : xstrdup("not ready"));
	}
}

/* --json: {ready, checks, failing: [{what, why}]}. */
static void
cli_probe_json(const struct cli_probe *p)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked u;
	size_t i;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	proto_pack_kv_bool(&pk, "ready", p->nmisses == 0);
	proto_pack_kv_u64(&pk, "checks", p->checks);
	proto_pack_str(&pk, "failing");
	msgpack_pack_array(&pk, p->nmisses);
	for (i = 0; i < p->nmisses; i++) {
		msgpack_pack_map(&pk, 2);
		proto_pack_kv_str(&pk, "what", p->misses[i].what);
		proto_pack_kv_str(&pk, "why", p->misses[i].why);
	}
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, sb.data, sb.size, NULL) ==
	    MSGPACK_UNPACK_SUCCESS)
		cli_print_json(&u.data);
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
}

static void
cli_probe_print(const struct cli_probe *p, bool json)
{
	size_t i;

	if (json) {
		cli_probe_json(p);
		return;
	}
	if (p->nmisses == 0)
		printf("ready (%zu checks pass)\n", p->checks);
	for (i = 0; i < p->nmisses; i++)
		printf(
		    "not ready: %s: %s\n", p->misses[i].what, p->misses[i].why);
}

/* Connects and asks, within timeout_ms for the whole: a cli_conn status. */
static int
cli_probe_ask(struct cli *cli, struct cli_probe *p, char **cause)
{
	uint64_t start = clock_mono_ms(), spent;
	const struct proto_msg *resp;
	struct cli_conn *conn;
	int status;

	if ((status = cli_open(cli, &conn, cause)) != CLI_CONN_OK)
		return status;
	cli_probe_labels(p, cli_conn_last(conn)->result);
	spent = clock_mono_ms() - start;
	status = cli_conn_call(conn, "state", NULL, NULL,
	    spent >= (uint64_t)cli->timeout_ms ? 1
	                                       : cli->timeout_ms - (int)spent,
	    &resp, cause);
	if (status == CLI_CONN_OK)
		cli_probe_checks(p, resp->result);
	cli_conn_close(conn);
	return status;
}

/* --label KEY=VALUE. */
static int
cli_probe_label_opt(struct cli *cli, struct cli_probe *p, const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (eq == NULL || eq == arg)
		return cli_usage(cli, "--label wants KEY=VALUE: '%.64s'", arg);
	if (p->nlabels == CLI_PROBE_LABELS_MAX)
		return cli_usage(
		    cli, "at most %d --label", CLI_PROBE_LABELS_MAX);
	p->labels[p->nlabels].key = arg;
	p->labels[p->nlabels].keylen = (size_t)(eq - arg);
	p->labels[p->nlabels].value = eq + 1;
	p->nlabels++;
	return CLI_EXIT_OK;
}

static int
cli_probe_run(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"label", required_argument, NULL, CLI_PROBE_OPT_LABEL},
	    {NULL, 0, NULL, 0},
	};
	struct cli_probe p = {0};
	char *cause = NULL;
	int c, status;
	size_t i;

	while ((c = cli_next_opt(cli, argc, argv, opts, "")) != -1) {
		if (c == CLI_STOP)
			return CLI_PROBE_NO_ANSWER;
		if (cli_probe_label_opt(cli, &p, optarg) != CLI_EXIT_OK)
			return CLI_PROBE_NO_ANSWER;
	}
	if (cli_ready(cli) != CLI_EXIT_OK)
		return CLI_PROBE_NO_ANSWER;
	status = cli_probe_ask(cli, &p, &cause);
	if (status != CLI_CONN_OK) {
		cli_fail(status, cause);
		status = CLI_PROBE_NO_ANSWER;
	} else {
		cli_probe_print(&p, cli->json);
		status = p.nmisses == 0 ? CLI_PROBE_READY : CLI_PROBE_NOT_READY;
	}
	for (i = 0; i < p.nmisses; i++) {
		free(p.misses[i].what);
		free(p.misses[i].why);
	}
	free(p.misses);
	fflush(stdout);
	return status;
}

const struct cli_cmd_entry cli_probe_entry = {
    .name = "probe",
    .usage = "[--label KEY=VALUE]...",
    .summary = "exit 0 when berthd is strictly ready (every\n"
               "readiness check passes, as /readyz says 200) and\n"
               "each --label matches; 1 when not, printing the\n"
               "failing checks and their reasons; 2 when it cannot\n"
               "ask (--timeout SEC bounds the whole probe)",
    .exec = cli_probe_run,
};
