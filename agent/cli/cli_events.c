/* cli_events: berth events. A one-off listing prints the journal from
 * --from (default: all of it) up to where it ended when asked; --follow
 * prints on until a signal, and makes a lost connection again. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cli.h"
#include "cli_events.h"
#include "cli_print.h"
#include "cli_xfer.h"
#include "xmalloc.h"

/*
 * The position in the stream is next, the first seq not yet printed. A
 * subscription asks for from_seq = next, so a reconnection resumes
 * exactly there: nothing lost, nothing printed twice. One per run, on
 * the stack of cli_events_run; owns conn.
 */
struct cli_events {
	struct cli *cli;
	struct cli_conn *conn;
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

	status = cli_conn_call(conn, "events.subscribe", cli_events_pack, ev,
	    ev->cli->timeout_ms, &resp, cause);
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

/* A try at mending the stream: a new connection, subscribed from
 * next. */
static int
cli_events_retry_cb(void *arg, char **cause)
{
	struct cli_events *ev = arg;
	int status;

	ev->from = ev->next;
	if ((status = cli_open(ev->cli, &ev->conn, cause)) != CLI_CONN_OK)
		return status;
	status = cli_events_subscribe(ev, ev->conn, false, cause);
	if (status != CLI_CONN_OK) {
		cli_conn_forget(&ev->conn);
	}
	return status;
}

/* After a lost connection (why says how; taken): a follower tries until
 * the stream is back, says so, and goes on from next. */
static int
cli_events_reconnect(struct cli_events *ev, char *why, char **cause)
{
	struct cli_xfer_outage o = {
	    .forever = true, .retry = cli_events_retry_cb, .arg = ev};
	struct cli *cli = ev->cli;
	int status;

	cli_print_warn("%s; reconnecting", why);
	ev->from_set = true;
	status = cli_xfer_mend(cli, &o, why, cause);
	if (status == CLI_CONN_OK)
		cli_print_warn("reconnected to %s; resuming at seq %" PRIu64,
		    cli->url != NULL ? cli->url : cli->socket_path, ev->next);
	return status;
}

static int
cli_events_args(struct cli_events *ev, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"from", required_argument, NULL, 'f'},
	    {"follow", no_argument, NULL, 'F'},
	    {NULL, 0, NULL, 0},
	};
	struct cli *cli = ev->cli;
	char *end, *word;
	int c;

	while ((c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD:
			return cli_usage(
			    cli, "events takes no arguments: %s", word);
		case 'F': ev->follow = true; break;
		case 'f':
			errno = 0;
			ev->from = strtoull(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    *optarg == '-' || ev->from == 0)
				return cli_usage(cli,
				    "--from wants a sequence number (1 or "
				    "more): %s",
				    optarg);
			ev->from_set = true;
			break;
		}
	}
	/* A one-off listing shows the whole journal, like a log viewer. */
	if (!ev->from_set && !ev->follow) {
		ev->from = 1;
		ev->from_set = true;
	}
	return cli_ready(cli);
}

static int
cli_events_run(struct cli *cli, int argc, char **argv)
{
	struct cli_events ev = {.cli = cli};
	const struct proto_msg *msg;
	char *cause;
	int status;

	if ((status = cli_events_args(&ev, argc, argv)) != CLI_EXIT_OK)
		return status;
	/* Following ends with a signal, quietly: it is how one stops. */
	if (ev.follow)
		cli_xfer_signals();
	if ((status = cli_open(cli, &ev.conn, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	if ((status = cli_events_subscribe(&ev, ev.conn, true, &cause)) !=
	    CLI_CONN_OK) {
		cli_conn_close(ev.conn);
		return cli_fail(status, cause);
	}
	while (ev.follow || ev.next <= ev.last) {
		status = cli_conn_recv(
		    ev.conn, ev.follow ? -1 : cli->timeout_ms, &msg, &cause);
		if (status == CLI_CONN_OK) {
			if (msg->type == PROTO_EVENT)
				cli_events_show(&ev, msg);
			continue;
		}
		cli_conn_forget(&ev.conn);
		if (!ev.follow || status == CLI_CONN_INTERRUPTED)
			break;
		if ((status = cli_events_reconnect(&ev, cause, &cause)) !=
		    CLI_CONN_OK)
			break;
	}
	cli_conn_close(ev.conn);
	fflush(stdout);
	return status == CLI_CONN_OK ? CLI_EXIT_OK : cli_fail(status, cause);
}

const struct cli_cmd_entry cli_events_entry = {
    .name = "events",
    .usage = "[--from SEQ] [--follow]",
    .summary = "print the events from SEQ on (default: all the\n"
               "journal holds; with --follow, new ones only);\n"
               "--follow keeps printing them live",
    .exec = cli_events_run,
};
