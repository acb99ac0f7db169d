/* cli_core: berth ping, state, service and help. Each of the first three
 * is one request; help prints the table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_core.h"
#include "cli_print.h"

static double
cli_core_elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* ping times the request alone, not the connect and the hello. */
static int
cli_core_ping(struct cli *cli, int argc, char **argv)
{
	const struct proto_msg *resp;
	struct cli_conn *conn;
	struct timespec t0;
	char *cause;
	int status;

	if ((status = cli_no_words(cli, argc, argv)) != CLI_EXIT_OK)
		return status;
	if ((status = cli_open(cli, &conn, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	status = cli_conn_call(
	    conn, "ping", NULL, NULL, cli->timeout_ms, &resp, &cause);
	if (status == CLI_CONN_OK)
		cli_print_ping(
		    resp->result, cli_core_elapsed_ms(&t0), cli->json);
	cli_conn_close(conn);
	return status == CLI_CONN_OK ? CLI_EXIT_OK : cli_fail(status, cause);
}

const struct cli_cmd_entry cli_core_ping_entry = {
    .name = "ping",
    .usage = "",
    .summary = "check that berthd answers, and how fast",
    .exec = cli_core_ping,
};

static int
cli_core_state_show(struct cli *cli, const msgpack_object *result, void *arg)
{
	(void)arg;
	cli_print_state(result, cli->json);
	return CLI_EXIT_OK;
}

static int
cli_core_state(struct cli *cli, int argc, char **argv)
{
	int status;

	if ((status = cli_no_words(cli, argc, argv)) != CLI_EXIT_OK)
		return status;
	return cli_ask(cli, "state", NULL, NULL, 0, cli_core_state_show, NULL);
}

const struct cli_cmd_entry cli_core_state_entry = {
    .name = "state",
    .usage = "",
    .summary = "show berthd, its services and checks",
    .exec = cli_core_state,
};

/* service's words: the action, the name for all but list, and the
 * signal for signal. */
struct cli_core_service {
	const char *action;
	const char *name;
	const char *signal;
};

/* The signal goes as written, a number as a number: berthd knows the
 * names. */
static void
cli_core_pack_name_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_core_service *s = ctx;

	msgpack_pack_map(pk, s->signal != NULL ? 2 : 1);
	proto_pack_kv_str(pk, "name", s->name);
	if (s->signal == NULL)
		return;
	if (strspn(s->signal, "0123456789") == strlen(s->signal))
		proto_pack_kv_u64(pk, "signal", strtoull(s->signal, NULL, 10));
	else
		proto_pack_kv_str(pk, "signal", s->signal);
}

static int
cli_core_service_show(struct cli *cli, const msgpack_object *result, void *arg)
{
	struct cli_core_service *s = arg;

	if (s->name == NULL)
		cli_print_service_list(result, cli->json);
	else if (s->signal != NULL) {
		if (cli->json)
			cli_print_json(result);
	} else
		cli_print_service(result, cli->json);
	return CLI_EXIT_OK;
}

/* The index of "signal" among service's actions. */
#define CLI_CORE_SIGNAL 5

/* Which of service's actions word is: 0 for list, which takes no name,
 * or -1 for none. */
static int
cli_core_service_action(const char *word)
{
	static const char *const actions[] = {
	    "list", "status", "start", "stop", "restart", "signal"};
	int i;

	for (i = 0; i < (int)(sizeof actions / sizeof *actions); i++)
		if (strcmp(word, actions[i]) == 0)
			return i;
	return -1;
}

static int
cli_core_service_args(
    struct cli *cli, int argc, char **argv, struct cli_core_service *s)
{
	char *word;
	int c, action = -1;

	while ((c = cli_next(cli, argc, argv, NULL, "", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (s->action == NULL) {
			s->action = word;
			action = cli_core_service_action(word);
		} else if (action > 0 && s->name == NULL)
			s->name = word;
		else if (action == CLI_CORE_SIGNAL && s->signal == NULL &&
		    *word != '\0')
			s->signal = word;
		else if (action >= 0)
			return cli_usage(
			    cli, "service takes no arguments: %s", word);
	}
	if (action < 0)
		return cli_usage(cli,
		    "service wants list, status, start, "
		    "stop, restart or signal");
	if (action > 0 && s->name == NULL)
		return cli_usage(cli, "service %s wants a name", s->action);
	if (action == CLI_CORE_SIGNAL && s->signal == NULL)
		return cli_usage(
		    cli, "service signal wants a name and a signal");
	return cli_ready(cli);
}

static int
cli_core_service(struct cli *cli, int argc, char **argv)
{
	struct cli_core_service s = {NULL, NULL, NULL};
	char op[32];
	int status;

	if ((status = cli_core_service_args(cli, argc, argv, &s)) != 0)
		return status;
	snprintf(op, sizeof op, "service.%s", s.action);
	return cli_ask(cli, op, s.name != NULL ? cli_core_pack_name_cb : NULL,
	    &s, 0, cli_core_service_show, &s);
}

const struct cli_cmd_entry cli_core_service_entry = {
    .name = "service",
    .usage = "list | status|start|stop|restart NAME | signal NAME SIG",
    .summary = "list the services, show one, start, stop or\n"
               "restart it, or send a signal to its process group",
    .exec = cli_core_service,
};

static int
cli_core_help(struct cli *cli, int argc, char **argv)
{
	int status;

	if ((status = cli_no_words(cli, argc, argv)) != CLI_EXIT_OK)
		return status;
	cli_help();
	return CLI_EXIT_OK;
}

const struct cli_cmd_entry cli_core_help_entry = {
    .name = "help",
    .usage = "",
    .summary = "show this help",
    .exec = cli_core_help,
};
