/* cli_task: berth task run, show, list, attach, cancel and deliver, over
 * the task.* ops. Each but attach is one request. attach writes one of a
 * task's streams to stdout up to its end, and after a lost connection
 * attaches again from the byte it reached (cli_xfer's policy, as a
 * follower: until it mends), so that stdout gets the stream exactly;
 * then it learns how the task ended (task.show, or the task.finished
 * event it waits for) and exits by that. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "cli.h"
#include "cli_desktop.h"
#include "cli_exec.h"
#include "cli_print.h"
#include "cli_task.h"
#include "cli_workspace.h"
#include "cli_xfer.h"
#include "xmalloc.h"

/* What the task ops take (see supervisor/taskrec.h). */
#define CLI_TASK_ID_LEN 16
#define CLI_TASK_PROMPT_MAX (256u << 10)
#define CLI_TASK_CHECKS_MAX 16
#define CLI_TASK_ARGV_MAX 64
#define CLI_TASK_ARG_MAX 4096
#define CLI_TASK_ENV_MAX 64
#define CLI_TASK_TIMEOUT_MAX (7L * 24 * 3600)
/* What a record's state, reason and cancelled_by hold at most. */
#define CLI_TASK_STATE_MAX 16
#define CLI_TASK_REASON_MAX 512
#define CLI_TASK_WHO_MAX 128
/* deliver answers once git is done, a push included: an hour bounds a
 * slow link, as it does a workspace's clone. */
#define CLI_TASK_DELIVER_WAIT_MS 3600000
/* task list shows a prompt's first line, cut to this many bytes. */
#define CLI_TASK_LIST_PROMPT 40

/* Option values, apart from every global option's. */
enum {
	CLI_TASK_OPT_TIMEOUT = 256,
	CLI_TASK_OPT_ENV,
	CLI_TASK_OPT_CHECK,
	CLI_TASK_OPT_RUNTIME,
	CLI_TASK_OPT_STATE,
	CLI_TASK_OPT_STREAM,
	CLI_TASK_OPT_FROM,
	CLI_TASK_OPT_BRANCH,
	CLI_TASK_OPT_MESSAGE,
	CLI_TASK_OPT_AUTHOR_NAME,
	CLI_TASK_OPT_AUTHOR_EMAIL,
	CLI_TASK_OPT_PUSH,
	CLI_TASK_OPT_USERNAME,
	CLI_TASK_OPT_PASSWORD_STDIN,
	CLI_TASK_OPT_FORCE,
};

/* ---- what the sub-commands share ---- */

/* A task's id is 16 hex digits; whether it names a task is berthd's to
 * say. */
static int
cli_task_id(struct cli *cli, const char *word)
{
	if (strlen(word) == CLI_TASK_ID_LEN &&
	    strspn(word, "0123456789abcdefABCDEF") == CLI_TASK_ID_LEN)
		return CLI_EXIT_OK;
	return cli_usage(
	    cli, "ID is what task run printed, 16 hex digits: '%.64s'", word);
}

/* A word of a sub-command that takes one ID. */
static int
cli_task_take_id(struct cli *cli, const char *word, const char **id)
{
	if (*id != NULL)
		return cli_usage(
		    cli, "task %s takes one ID: %s", cli->sub->name, word);
	*id = word;
	return cli_task_id(cli, word);
}

/* The end of such a walk: the ID there, then cli_ready. */
static int
cli_task_want_id(struct cli *cli, const char *id)
{
	if (id == NULL)
		return cli_usage(cli, "task %s wants an ID", cli->sub->name);
	return cli_ready(cli);
}

/* show and cancel: the ID (and the global options), then op of that
 * task, its result printed by print (cli_ask_print's). */
static int
cli_task_ask_id(
    struct cli *cli, int argc, char **argv, const char *op, cli_print_cb print)
{
	const char *id = NULL;
	char *word;
	int c, status;

	while ((c = cli_next(cli, argc, argv, NULL, "", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if ((status = cli_task_take_id(cli, word, &id)) != CLI_EXIT_OK)
			return status;
	}
	if ((status = cli_task_want_id(cli, id)) != CLI_EXIT_OK)
		return status;
	return cli_ask_print(cli, op, cli_pack_id_cb, (void *)id, 0, print);
}

/* Whether map's key is a string (a nil is a value not there). */
static bool
cli_task_has_str(const msgpack_object *map, const char *key)
{
	const msgpack_object *v = proto_map_get(map, key);

	return v != NULL && v->type == MSGPACK_OBJECT_STR;
}

/* Appends to *s (allocated), as printf would. */
static void cli_task_add(char **s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
cli_task_add(char **s, const char *fmt, ...)
{
	va_list ap;
	char *more, *t;

	va_start(ap, fmt);
	if (vasprintf(&more, fmt, ap) < 0)
		more = NULL;
	va_end(ap);
	if (more == NULL)
		return;
	t = xasprintf("%s%s", *s, more);
	free(more);
	free(*s);
	*s = t;
}

/* A check's argv as one line, each word safe on a terminal. */
static char *
cli_task_words(const msgpack_object *list)
{
	const msgpack_object *w;
	char *s = xstrdup("");
	uint32_t i;

	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY)
		return s;
	for (i = 0; i < list->via.array.size; i++) {
		w = &list->via.array.ptr[i];
		if (w->type == MSGPACK_OBJECT_STR)
			cli_task_add(&s, "%s%.*s", i > 0 ? " " : "",
			    (int)w->via.str.size, w->via.str.ptr);
	}
	return cli_print_tame(s);
}

/* A task's state in words: why it ended otherwise than well, who
 * cancelled it (reason and who "" when there is none). */
static char *
cli_task_state_text(const char *state, const char *reason, const char *who)
{
	char *s = xstrdup(state);

	if (*who != '\0')
		cli_task_add(&s, " by %s", who);
	if (*reason != '\0')
		cli_task_add(&s, ": %s", reason);
	return cli_print_tame(s);
}

/* The same of a record, with a queued task's place. */
static char *
cli_task_record_state(const msgpack_object *r)
{
	char state[CLI_TASK_STATE_MAX] = "?", reason[CLI_TASK_REASON_MAX] = "",
	     who[CLI_TASK_WHO_MAX] = "", *s;
	uint64_t position;

	proto_arg_str(r, "state", state, sizeof state);
	proto_arg_str(r, "reason", reason, sizeof reason);
	proto_arg_str(r, "cancelled_by", who, sizeof who);
	s = cli_task_state_text(state, reason, who);
	if (proto_arg_u64(r, "position", &position) == 1)
		cli_task_add(&s, " (position %" PRIu64 ")", position);
	return s;
}

/* ---- run ---- */

/* One --check: the words after it, as they are (argv's). */
struct cli_task_check {
	char **argv;
	size_t argc;
};

/* task run's words and options, strings of argv; the prompt read from
 * stdin for PROMPT "-" is prompt_read's, which the run frees. */
struct cli_task_run {
	const char *runtime;
	const char *prompt;
	size_t prompt_len;
	char *prompt_read;
	struct cli_task_check checks[CLI_TASK_CHECKS_MAX];
	size_t nchecks;
	const char *env[CLI_TASK_ENV_MAX]; /* "NAME=VALUE", names unique */
	size_t nenv;
	long timeout_s; /* 0: none */
};

/* --check's words: all that follow it up to the next --check or the
 * "--" before the prompt, as they are (a check's options are its own,
 * not berth's). */
static int
cli_task_check(struct cli *cli, int argc, char **argv, struct cli_task_run *r)
{
	struct cli_task_check *k;
	size_t i;

	if (r->nchecks == CLI_TASK_CHECKS_MAX)
		return cli_usage(
		    cli, "at most %d --check", CLI_TASK_CHECKS_MAX);
	k = &r->checks[r->nchecks++];
	k->argv = &argv[optind];
	while (optind < argc && strcmp(argv[optind], "--check") != 0 &&
	    strcmp(argv[optind], "--") != 0)
		optind++;
	k->argc = (size_t)(&argv[optind] - k->argv);
	if (k->argc == 0)
		return cli_usage(cli, "--check wants a command");
	if (k->argc > CLI_TASK_ARGV_MAX)
		return cli_usage(
		    cli, "a --check has at most %d words", CLI_TASK_ARGV_MAX);
	for (i = 0; i < k->argc; i++)
		if (*k->argv[i] == '\0' ||
		    strlen(k->argv[i]) > CLI_TASK_ARG_MAX)
			return cli_usage(cli,
			    "a word of --check has 1 to %d bytes: '%.64s'",
			    CLI_TASK_ARG_MAX, k->argv[i]);
	return CLI_EXIT_OK;
}

/* PROMPT "-": all of stdin, up to the limit (and a byte past it, to
 * tell a prompt too long). */
static int
cli_task_read_prompt(struct cli_task_run *r)
{
	size_t n = 0, got;

	r->prompt_read = xmalloc(CLI_TASK_PROMPT_MAX + 1);
	while (n <= CLI_TASK_PROMPT_MAX &&
	    (got = fread(r->prompt_read + n, 1, CLI_TASK_PROMPT_MAX + 1 - n,
	         stdin)) > 0)
		n += got;
	if (ferror(stdin)) {
		cli_print_warn(
		    "cannot read the prompt from stdin: %s", strerror(errno));
		return CLI_EXIT_FAILED;
	}
	r->prompt = r->prompt_read;
	r->prompt_len = n;
	return CLI_EXIT_OK;
}

/* A word: the RUNTIME before "--", the PROMPT after it. */
static int
cli_task_run_word(struct cli *cli, struct cli_task_run *r, const char *word)
{
	if (cli->dashdash && r->prompt == NULL) {
		r->prompt = word;
		r->prompt_len = strlen(word);
	} else if (cli->dashdash)
		return cli_usage(cli,
		    "task run takes one PROMPT after -- (quote it): %s", word);
	else if (r->runtime == NULL)
		r->runtime = word;
	else
		return cli_usage(cli,
		    "task run takes one RUNTIME, and the PROMPT after --: %s",
		    word);
	return CLI_EXIT_OK;
}

static int
cli_task_run_args(
    struct cli *cli, int argc, char **argv, struct cli_task_run *r)
{
	static const struct option opts[] = {
	    {"timeout", required_argument, NULL, CLI_TASK_OPT_TIMEOUT},
	    {"env", required_argument, NULL, CLI_TASK_OPT_ENV},
	    {"check", no_argument, NULL, CLI_TASK_OPT_CHECK},
	    {NULL, 0, NULL, 0},
	};
	int c, status = CLI_EXIT_OK;
	char *word;

	while (status == CLI_EXIT_OK &&
	    (c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD: status = cli_task_run_word(cli, r, word); break;
		case CLI_TASK_OPT_TIMEOUT:
			if (cli_desktop_long(optarg, 1, CLI_TASK_TIMEOUT_MAX,
			        &r->timeout_s) != 0)
				status = cli_usage(cli,
				    "--timeout wants whole seconds, 1 to %ld "
				    "(7 days): %s",
				    CLI_TASK_TIMEOUT_MAX, optarg);
			break;
		case CLI_TASK_OPT_ENV:
			status = cli_exec_env(
			    cli, r->env, &r->nenv, CLI_TASK_ENV_MAX, optarg);
			break;
		case CLI_TASK_OPT_CHECK:
			status = cli_task_check(cli, argc, argv, r);
			break;
		}
	}
	if (status != CLI_EXIT_OK)
		return status;
	if (r->runtime == NULL)
		return cli_usage(cli, "task run wants a RUNTIME and -- PROMPT");
	if (r->prompt == NULL)
		return cli_usage(cli, "task run wants the PROMPT after --");
	if (strcmp(r->prompt, "-") == 0 &&
	    (status = cli_task_read_prompt(r)) != CLI_EXIT_OK)
		return status;
	if (r->prompt_len == 0)
		return cli_usage(cli, "the PROMPT is empty");
	if (r->prompt_len > CLI_TASK_PROMPT_MAX)
		return cli_usage(cli, "the PROMPT is longer than %u bytes",
		    CLI_TASK_PROMPT_MAX);
	return cli_ready(cli);
}

static void
cli_task_pack_run_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_task_run *r = ctx;
	const struct cli_task_check *k;
	size_t i, j;

	msgpack_pack_map(
	    pk, 2 + (r->nchecks > 0) + (r->timeout_s > 0) + (r->nenv > 0));
	proto_pack_kv_str(pk, "runtime", r->runtime);
	proto_pack_str(pk, "prompt");
	msgpack_pack_str(pk, r->prompt_len);
	msgpack_pack_str_body(pk, r->prompt, r->prompt_len);
	if (r->timeout_s > 0)
		proto_pack_kv_u64(pk, "timeout_s", (uint64_t)r->timeout_s);
	if (r->nchecks > 0) {
		proto_pack_str(pk, "checks");
		msgpack_pack_array(pk, r->nchecks);
		for (i = 0; i < r->nchecks; i++) {
			k = &r->checks[i];
			msgpack_pack_array(pk, k->argc);
			for (j = 0; j < k->argc; j++)
				proto_pack_str(pk, k->argv[j]);
		}
	}
	if (r->nenv > 0)
		cli_exec_pack_env(pk, r->env, r->nenv);
}

/* "ID STATE", and a queued task's place: what a script reads with
 * `read id state`. */
static int
cli_task_run_show(struct cli *cli, const msgpack_object *result, void *arg)
{
	char *id, *state;

	(void)arg;
	if (!cli_task_has_str(result, "id"))
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("task.run answered without an id"));
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	id = cli_desktop_text(result, "id", "?");
	state = cli_task_record_state(result);
	printf("%s %s\n", id, state);
	free(state);
	free(id);
	return CLI_EXIT_OK;
}

static int
cli_task_run(struct cli *cli, int argc, char **argv)
{
	struct cli_task_run r = {0};
	int status;

	if ((status = cli_task_run_args(cli, argc, argv, &r)) == CLI_EXIT_OK)
		status = cli_ask(cli, "task.run", cli_task_pack_run_cb, &r, 0,
		    cli_task_run_show, NULL);
	free(r.prompt_read);
	return status;
}

/* ---- show ---- */

/* "key  value" (value taken). */
static void
cli_task_line(const char *key, char *value)
{
	printf("%-10s %s\n", key, value);
	free(value);
}

/* How a process of the task ended, and what it wrote: "exit 0, 120
 * bytes" ("120 bytes" while it runs). */
static char *
cli_task_output(const msgpack_object *map, uint64_t bytes)
{
	const msgpack_object *x = proto_map_get(map, "exit");
	char *s, *exit;

	if (x == NULL || x->type != MSGPACK_OBJECT_MAP)
		return xasprintf("%" PRIu64 " bytes", bytes);
	exit = cli_print_exit(x);
	s = xasprintf("%s, %" PRIu64 " bytes", exit, bytes);
	free(exit);
	return s;
}

static void
cli_task_print_agent(const msgpack_object *agent)
{
	char *s;

	if (agent == NULL || agent->type != MSGPACK_OBJECT_MAP)
		return;
	s = cli_task_output(agent, cli_print_u64(agent, "bytes"));
	cli_task_add(&s, ", %" PRIu64 " on stderr",
	    cli_print_u64(agent, "stderr_bytes"));
	cli_task_line("agent", s);
}

/* A line for each check: how it ended and its command, or that it did
 * not run. Its name is the one task attach --stream takes. */
static void
cli_task_print_checks(const msgpack_object *checks)
{
	const msgpack_object *k;
	bool ran;
	char key[24], *s, *words;
	uint32_t i;

	if (checks == NULL || checks->type != MSGPACK_OBJECT_ARRAY)
		return;
	for (i = 0; i < checks->via.array.size; i++) {
		k = &checks->via.array.ptr[i];
		ran = false;
		proto_arg_bool(k, "ran", &ran);
		words = cli_task_words(proto_map_get(k, "argv"));
		s = ran ? cli_task_output(k, cli_print_u64(k, "bytes"))
		        : xstrdup("not run");
		cli_task_add(&s, ": %s", words);
		free(words);
		snprintf(key, sizeof key, "check/%" PRIu32, i);
		cli_task_line(key, s);
	}
}

static void
cli_task_print_delivery(const msgpack_object *d)
{
	bool pushed = false;
	char *s, *branch, *commit, *diff;

	if (d == NULL || d->type != MSGPACK_OBJECT_MAP)
		return;
	proto_arg_bool(d, "pushed", &pushed);
	branch = cli_desktop_text(d, "branch", "?");
	commit = cli_desktop_text(d, "commit", "?");
	diff = cli_desktop_text(d, "diff", "?");
	s = xasprintf("branch %s, commit %s%s, diff %s", branch, commit,
	    pushed ? ", pushed" : "", diff);
	free(diff);
	free(commit);
	free(branch);
	cli_task_line("delivered", s);
}

/* A string of the server's, whole, a line at a time after indent, each
 * safe on a terminal. */
static void
cli_task_print_lines(const msgpack_object *text, const char *indent)
{
	const char *s = text->via.str.ptr, *end = s + text->via.str.size, *nl;
	char *line;

	while (s < end) {
		nl = memchr(s, '\n', (size_t)(end - s));
		if (nl == NULL)
			nl = end;
		line = cli_print_tame(xstrndup(s, (size_t)(nl - s)));
		printf("%s%s\n", indent, line);
		free(line);
		s = nl + 1;
	}
}

static void
cli_task_print_prompt(const msgpack_object *p)
{
	if (p == NULL || p->type != MSGPACK_OBJECT_STR)
		return;
	printf("prompt\n");
	cli_task_print_lines(p, "  ");
}

/* A record for people: what it is, how it went, what came of it. */
static void
cli_task_print_record(const msgpack_object *r)
{
	const msgpack_object *env = proto_map_get(r, "env");
	uint64_t timeout = cli_print_u64(r, "timeout_s");

	cli_task_line("id", cli_desktop_text(r, "id", "?"));
	cli_task_line("runtime", cli_desktop_text(r, "runtime", "?"));
	cli_task_line("state", cli_task_record_state(r));
	cli_task_line("created", cli_print_utc(cli_print_u64(r, "created")));
	cli_task_line("started", cli_print_utc(cli_print_u64(r, "started")));
	cli_task_line("finished", cli_print_utc(cli_print_u64(r, "finished")));
	if (timeout > 0)
		cli_task_line("timeout", xasprintf("%" PRIu64 " s", timeout));
	if (env != NULL && env->type == MSGPACK_OBJECT_ARRAY &&
	    env->via.array.size > 0)
		cli_task_line("env", cli_task_words(env));
	cli_task_print_agent(proto_map_get(r, "agent"));
	cli_task_print_checks(proto_map_get(r, "checks"));
	cli_task_print_delivery(proto_map_get(r, "delivery"));
	cli_task_print_prompt(proto_map_get(r, "prompt"));
}

static int
cli_task_show(struct cli *cli, int argc, char **argv)
{
	return cli_task_ask_id(
	    cli, argc, argv, "task.show", cli_task_print_record);
}

/* ---- list ---- */

/* list's filters (argv's; NULL: every one). */
struct cli_task_filter {
	const char *runtime;
	const char *state;
};

static void
cli_task_pack_list_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_task_filter *f = ctx;

	msgpack_pack_map(pk, (f->runtime != NULL) + (f->state != NULL));
	if (f->runtime != NULL)
		proto_pack_kv_str(pk, "runtime", f->runtime);
	if (f->state != NULL)
		proto_pack_kv_str(pk, "state", f->state);
}

/* A prompt's first line, cut short (never inside a UTF-8 character),
 * "..." after it if that is not all. */
static char *
cli_task_cut(const msgpack_object *p)
{
	const char *s, *nl;
	size_t n, len;

	if (p == NULL || p->type != MSGPACK_OBJECT_STR)
		return xstrdup("-");
	s = p->via.str.ptr;
	len = p->via.str.size;
	nl = memchr(s, '\n', len);
	n = nl != NULL ? (size_t)(nl - s) : len;
	if (n > CLI_TASK_LIST_PROMPT) {
		n = CLI_TASK_LIST_PROMPT;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	return cli_print_tame(
	    xasprintf("%.*s%s", (int)n, s, n < len ? "..." : ""));
}

static void
cli_task_print_list(const msgpack_object *result)
{
	static const char *const head[] = {
	    "ID", "RUNTIME", "STATE", "CREATED", "PROMPT"};
	const msgpack_object *list = proto_map_get(result, "tasks"), *t;
	char **cells, **row;
	uint32_t i, n;

	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY ||
	    list->via.array.size == 0) {
		printf("no tasks\n");
		return;
	}
	n = list->via.array.size;
	cells = cli_print_cells(head, 5, n);
	for (i = 0; i < n; i++) {
		t = &list->via.array.ptr[i];
		row = &cells[(i + 1) * 5];
		row[0] = cli_desktop_text(t, "id", "?");
		row[1] = cli_desktop_text(t, "runtime", "?");
		row[2] = cli_desktop_text(t, "state", "?");
		row[3] = cli_print_utc(cli_print_u64(t, "created"));
		row[4] = cli_task_cut(proto_map_get(t, "prompt"));
	}
	cli_print_table(5, n + 1, cells);
}

static int
cli_task_list(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"runtime", required_argument, NULL, CLI_TASK_OPT_RUNTIME},
	    {"state", required_argument, NULL, CLI_TASK_OPT_STATE},
	    {NULL, 0, NULL, 0},
	};
	struct cli_task_filter f = {0};
	int c, status;

	while ((c = cli_next_opt(cli, argc, argv, opts, "")) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_TASK_OPT_RUNTIME: f.runtime = optarg; break;
		case CLI_TASK_OPT_STATE: f.state = optarg; break;
		}
	}
	if ((status = cli_ready(cli)) != CLI_EXIT_OK)
		return status;
	return cli_ask_print(cli, "task.list", cli_task_pack_list_cb, &f, 0,
	    cli_task_print_list);
}

/* ---- cancel ---- */

static int
cli_task_cancel(struct cli *cli, int argc, char **argv)
{
	return cli_task_ask_id(cli, argc, argv, "task.cancel", NULL);
}

/* ---- attach ---- */

/*
 * One attach, across connections: the stream's bytes go to stdout from
 * next on, so that every attachment after the first asks from there and
 * stdout gets each byte once, in order. Once the stream has ended (eof)
 * the connection is subscribed to the events and the task shown: its end
 * is what task.show says, or the task.finished event that comes later.
 * On cli_task_attach's stack; id and stream are argv's; owns conn and
 * name.
 */
struct cli_task_attach {
	struct cli *cli;
	struct cli_conn *conn;
	const char *id;
	const char *stream; /* agent, stderr or check/N */
	char *name;         /* the data messages': "task/ID/STREAM" */
	uint64_t next;      /* the offset of the first byte not yet written */
	bool eof;           /* the stream is all written */
	bool ended;         /* the task's end is known: */
	char state[CLI_TASK_STATE_MAX];
	char reason[CLI_TASK_REASON_MAX];
	char who[CLI_TASK_WHO_MAX];
};

/* --stream: agent, stderr, or check/N (N a number of up to two digits;
 * whether there is such a check is berthd's to say). */
static int
cli_task_stream(struct cli *cli, const char *s)
{
	static const char check[] = "check/";
	const char *num;
	size_t n;

	if (strcmp(s, "agent") == 0 || strcmp(s, "stderr") == 0)
		return CLI_EXIT_OK;
	if (strncmp(s, check, sizeof check - 1) == 0) {
		num = s + sizeof check - 1;
		n = strlen(num);
		if (n >= 1 && n <= 2 && strspn(num, "0123456789") == n)
			return CLI_EXIT_OK;
	}
	return cli_usage(cli, "--stream wants agent, stderr or check/N: %s", s);
}

/* --from: a byte offset of the stream. */
static int
cli_task_from(struct cli *cli, const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || errno != 0 || *end != '\0')
		return cli_usage(cli, "--from wants a byte offset: %s", s);
	*out = v;
	return CLI_EXIT_OK;
}

static int
cli_task_attach_args(struct cli_task_attach *a, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"stream", required_argument, NULL, CLI_TASK_OPT_STREAM},
	    {"from", required_argument, NULL, CLI_TASK_OPT_FROM},
	    {NULL, 0, NULL, 0},
	};
	struct cli *cli = a->cli;
	int c, status = CLI_EXIT_OK;
	char *word;

	while (status == CLI_EXIT_OK &&
	    (c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD:
			status = cli_task_take_id(cli, word, &a->id);
			break;
		case CLI_TASK_OPT_STREAM:
			a->stream = optarg;
			status = cli_task_stream(cli, optarg);
			break;
		case CLI_TASK_OPT_FROM:
			status = cli_task_from(cli, optarg, &a->next);
			break;
		}
	}
	if (status != CLI_EXIT_OK)
		return status;
	return cli_task_want_id(cli, a->id);
}

static void
cli_task_pack_attach_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_task_attach *a = ctx;

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "id", a->id);
	proto_pack_kv_str(pk, "stream", a->stream);
	proto_pack_kv_u64(pk, "from_offset", a->next);
}

/* Attaches the connection to the stream from next. */
static int
cli_task_attach_from(struct cli_task_attach *a, char **cause)
{
	const struct proto_msg *resp;
	uint64_t offset;
	int status;

	status = cli_conn_call(a->conn, "task.attach", cli_task_pack_attach_cb,
	    a, a->cli->timeout_ms, &resp, cause);
	if (status != CLI_CONN_OK)
		return status;
	if (proto_arg_u64(resp->result, "offset", &offset) != 1 ||
	    offset != a->next) {
		*cause = xasprintf("task.attach answered another offset than "
		                   "the %" PRIu64 " asked for",
		    a->next);
		return CLI_CONN_PROTOCOL;
	}
	return CLI_CONN_OK;
}

/* Takes the task's end from map (a record, or task.finished's data), if
 * it has ended. */
static void
cli_task_attach_learn(struct cli_task_attach *a, const msgpack_object *map)
{
	static const char *const ends[] = {
	    "succeeded", "failed", "cancelled", "timed_out", "interrupted"};
	char state[CLI_TASK_STATE_MAX] = "";
	size_t i;

	proto_arg_str(map, "state", state, sizeof state);
	for (i = 0; i < sizeof ends / sizeof ends[0]; i++)
		if (strcmp(state, ends[i]) == 0)
			break;
	if (i == sizeof ends / sizeof ends[0])
		return;
	a->ended = true;
	memcpy(a->state, state, sizeof state);
	proto_arg_str(map, "reason", a->reason, sizeof a->reason);
	proto_arg_str(map, "cancelled_by", a->who, sizeof a->who);
}

/* Once the stream has ended: the events first, so that an end after
 * task.show's answer comes as task.finished, then the task. */
static int
cli_task_attach_await(struct cli_task_attach *a, char **cause)
{
	const struct proto_msg *resp;
	int status;

	status = cli_conn_call(a->conn, "events.subscribe", NULL, NULL,
	    a->cli->timeout_ms, &resp, cause);
	if (status == CLI_CONN_OK)
		status = cli_conn_call(a->conn, "task.show", cli_pack_id_cb,
		    (void *)a->id, a->cli->timeout_ms, &resp, cause);
	if (status == CLI_CONN_OK)
		cli_task_attach_learn(a, resp->result);
	return status;
}

/* One data message of the stream: what of it is past next goes out. A
 * stream is kept whole, so a jump forward is berthd's fault. */
static int
cli_task_attach_data(
    struct cli_task_attach *a, const struct proto_msg *m, char **cause)
{
	uint64_t skip;
	bool eof = false;

	if (a->eof || strcmp(m->stream, a->name) != 0)
		return CLI_CONN_OK;
	if (m->offset > a->next) {
		*cause = xasprintf("task.attach skipped bytes %" PRIu64
		                   " to %" PRIu64 " of %s",
		    a->next, m->offset, a->stream);
		return CLI_CONN_PROTOCOL;
	}
	if (m->offset + m->nbytes > a->next) {
		skip = a->next - m->offset;
		if (cli_xfer_write(STDOUT_FILENO,
		        (const uint8_t *)m->bytes + skip,
		        m->nbytes - skip) != 0) {
			*cause = xasprintf(
			    "cannot write stdout: %s", strerror(errno));
			return CLI_CONN_ANSWERED;
		}
		a->next = m->offset + m->nbytes;
	}
	proto_arg_bool(&m->unpacked.data, "eof", &eof);
	if (!eof)
		return CLI_CONN_OK;
	a->eof = true;
	return cli_task_attach_await(a, cause);
}

/* A task.finished of this task. */
static void
cli_task_attach_event(struct cli_task_attach *a, const struct proto_msg *m)
{
	char id[CLI_TASK_ID_LEN + 1] = "";

	if (!a->eof || strcmp(m->kind, EV_TASK_FINISHED) != 0)
		return;
	if (proto_arg_str(m->data, "id", id, sizeof id) == 1 &&
	    strcmp(id, a->id) == 0)
		cli_task_attach_learn(a, m->data);
}

static int
cli_task_attach_take(
    struct cli_task_attach *a, const struct proto_msg *m, char **cause)
{
	switch (m->type) {
	case PROTO_DATA: return cli_task_attach_data(a, m, cause);
	case PROTO_EVENT: cli_task_attach_event(a, m); break;
	case PROTO_RESPONSE:
	case PROTO_REQUEST: break;
	}
	return CLI_CONN_OK;
}

/* A connection, attached from next (or, past the stream's end, waiting
 * for the task's). */
static int
cli_task_attach_open(struct cli_task_attach *a, char **cause)
{
	int status;

	if ((status = cli_open(a->cli, &a->conn, cause)) != CLI_CONN_OK) {
		a->conn = NULL;
		return status;
	}
	status = a->eof ? cli_task_attach_await(a, cause)
	                : cli_task_attach_from(a, cause);
	if (status != CLI_CONN_OK)
		cli_conn_forget(&a->conn);
	return status;
}

static int
cli_task_attach_retry_cb(void *arg, char **cause)
{
	return cli_task_attach_open(arg, cause);
}

/* After a lost connection (why says how; taken): tries until the stream
 * is back, as a follower does; a loss mended at once is the gateway's
 * flow control, and says nothing. */
static int
cli_task_attach_mend(struct cli_task_attach *a, char *why, char **cause)
{
	struct cli_xfer_outage o = {.forever = true,
	    .quiet = true,
	    .retry = cli_task_attach_retry_cb,
	    .arg = a};
	int status;

	cli_conn_forget(&a->conn);
	status = cli_xfer_mend(a->cli, &o, why, cause);
	if (status == CLI_CONN_OK && o.tries > 1)
		cli_print_warn("reconnected; the %s stream resumes at byte "
		               "%" PRIu64,
		    a->stream, a->next);
	return status;
}

/* Follows the stream to its end and the task to its own. */
static int
cli_task_attach_follow(struct cli_task_attach *a, char **cause)
{
	const struct proto_msg *m;
	int status;

	if ((status = cli_task_attach_open(a, cause)) != CLI_CONN_OK)
		return status;
	while (!a->ended) {
		status = cli_conn_recv(a->conn, -1, &m, cause);
		if (status == CLI_CONN_OK)
			status = cli_task_attach_take(a, m, cause);
		if (status == CLI_CONN_OK)
			continue;
		if (status != CLI_CONN_LOST)
			return status;
		if ((status = cli_task_attach_mend(a, *cause, cause)) !=
		    CLI_CONN_OK)
			return status;
	}
	return CLI_CONN_OK;
}

static int
cli_task_attach(struct cli *cli, int argc, char **argv)
{
	struct cli_task_attach a = {.cli = cli, .stream = "agent"};
	char *cause, *end;
	int status;

	if ((status = cli_task_attach_args(&a, argc, argv)) != CLI_EXIT_OK)
		return status;
	a.name = xasprintf("task/%s/%s", a.id, a.stream);
	/* A signal ends the following quietly: it is how one stops. */
	cli_xfer_signals();
	status = cli_task_attach_follow(&a, &cause);
	cli_conn_forget(&a.conn);
	free(a.name);
	if (status != CLI_CONN_OK)
		return cli_xfer_exit(status, cause);
	end = cli_task_state_text(a.state, a.reason, a.who);
	cli_print_warn("task %s %s", a.id, end);
	free(end);
	return strcmp(a.state, "succeeded") == 0 ? CLI_EXIT_OK
	                                         : CLI_EXIT_FAILED;
}

/* ---- deliver ---- */

/* deliver's words and options (argv's), and the push's credential,
 * which cli_task_deliver wipes. */
struct cli_task_deliver {
	const char *id;
	const char *branch;
	const char *message;
	const char *author_name;
	const char *author_email;
	const char *repo; /* --push's; NULL: no push */
	bool force;
	struct cli_workspace_cred cred;
};

static void
cli_task_pack_deliver_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_task_deliver *d = ctx;
	bool author = d->author_name != NULL, push = d->repo != NULL;

	msgpack_pack_map(
	    pk, 3 + author + 2 * push + d->cred.password_stdin + d->force);
	proto_pack_kv_str(pk, "id", d->id);
	proto_pack_kv_str(pk, "branch", d->branch);
	proto_pack_kv_str(pk, "commit_message", d->message);
	if (author) {
		proto_pack_str(pk, "author");
		msgpack_pack_map(pk, 2);
		proto_pack_kv_str(pk, "name", d->author_name);
		proto_pack_kv_str(pk, "email", d->author_email);
	}
	if (push) {
		proto_pack_kv_bool(pk, "push", true);
		proto_pack_kv_str(pk, "repo", d->repo);
	}
	if (d->force)
		proto_pack_kv_bool(pk, "force", true);
	cli_workspace_pack_cred(pk, &d->cred);
}

/* What goes with what: berthd checks each value, this the command
 * line's shape. */
static int
cli_task_deliver_check(struct cli *cli, struct cli_task_deliver *d)
{
	int status;

	if (d->id == NULL)
		return cli_usage(cli, "task deliver wants an ID");
	if (d->branch == NULL || *d->branch == '\0')
		return cli_usage(cli, "task deliver wants --branch B");
	if (d->message == NULL || *d->message == '\0')
		return cli_usage(cli, "task deliver wants --message M");
	if ((d->author_name == NULL) != (d->author_email == NULL))
		return cli_usage(
		    cli, "--author-name and --author-email go together");
	if (d->cred.password_stdin && d->repo == NULL)
		return cli_usage(cli, "--password-stdin goes with --push");
	if ((status = cli_workspace_cred_read(cli, &d->cred)) != CLI_EXIT_OK)
		return status;
	return cli_ready(cli);
}

static int
cli_task_deliver_args(
    struct cli *cli, int argc, char **argv, struct cli_task_deliver *d)
{
	static const struct option opts[] = {
	    {"branch", required_argument, NULL, CLI_TASK_OPT_BRANCH},
	    {"message", required_argument, NULL, CLI_TASK_OPT_MESSAGE},
	    {"author-name", required_argument, NULL, CLI_TASK_OPT_AUTHOR_NAME},
	    {"author-email", required_argument, NULL,
	        CLI_TASK_OPT_AUTHOR_EMAIL},
	    {"push", required_argument, NULL, CLI_TASK_OPT_PUSH},
	    {"username", required_argument, NULL, CLI_TASK_OPT_USERNAME},
	    {"password-stdin", no_argument, NULL, CLI_TASK_OPT_PASSWORD_STDIN},
	    {"force", no_argument, NULL, CLI_TASK_OPT_FORCE},
	    {NULL, 0, NULL, 0},
	};
	char *word;
	int c, status;

	while ((c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD:
			if ((status = cli_task_take_id(cli, word, &d->id)) !=
			    CLI_EXIT_OK)
				return status;
			break;
		case CLI_TASK_OPT_BRANCH: d->branch = optarg; break;
		case CLI_TASK_OPT_MESSAGE: d->message = optarg; break;
		case CLI_TASK_OPT_AUTHOR_NAME: d->author_name = optarg; break;
		case CLI_TASK_OPT_AUTHOR_EMAIL: d->author_email = optarg; break;
		case CLI_TASK_OPT_PUSH: d->repo = optarg; break;
		case CLI_TASK_OPT_USERNAME: d->cred.username = optarg; break;
		case CLI_TASK_OPT_PASSWORD_STDIN:
			d->cred.password_stdin = true;
			break;
		case CLI_TASK_OPT_FORCE: d->force = true; break;
		}
	}
	return cli_task_deliver_check(cli, d);
}

/* git's --stat, after a blank line. */
static void
cli_task_print_diffstat(const msgpack_object *stat)
{
	if (stat == NULL || stat->type != MSGPACK_OBJECT_STR ||
	    stat->via.str.size == 0)
		return;
	printf("\n");
	cli_task_print_lines(stat, "");
}

static int
cli_task_deliver_show(struct cli *cli, const msgpack_object *result, void *arg)
{
	const msgpack_object *diff = proto_map_get(result, "diff");
	bool pushed = false;
	char *id;

	(void)arg;
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	proto_arg_bool(result, "pushed", &pushed);
	cli_task_line("commit", cli_desktop_text(result, "commit", "?"));
	cli_task_line("branch", cli_desktop_text(result, "branch", "?"));
	cli_task_line("base", cli_desktop_text(result, "base", "?"));
	cli_task_line("pushed", xstrdup(pushed ? "yes" : "no"));
	id = cli_desktop_text(diff, "id", "?");
	cli_task_line("diff",
	    xasprintf(
	        "%s (%" PRIu64 " bytes)", id, cli_print_u64(diff, "size")));
	free(id);
	cli_task_print_diffstat(proto_map_get(result, "diffstat"));
	return CLI_EXIT_OK;
}

static int
cli_task_deliver(struct cli *cli, int argc, char **argv)
{
	struct cli_task_deliver d = {0};
	int status;

	if ((status = cli_task_deliver_args(cli, argc, argv, &d)) ==
	    CLI_EXIT_OK)
		status = cli_ask(cli, "task.deliver", cli_task_pack_deliver_cb,
		    &d, CLI_TASK_DELIVER_WAIT_MS, cli_task_deliver_show, NULL);
	explicit_bzero(d.cred.password, sizeof d.cred.password);
	return status;
}

/* ---- the table ---- */

static const struct cli_cmd_entry cli_task_run_entry = {
    .name = "run",
    .usage = "RUNTIME [--timeout S] [--env K=V]... [--check ARG...]... "
             "-- PROMPT",
    .synopsis = "run RUNTIME [--timeout S] [--env NAME=VALUE]...\n"
                "             [--check CMD [ARGS...]]... -- PROMPT|-",
    .exec = cli_task_run,
};

static const struct cli_cmd_entry cli_task_show_entry = {
    .name = "show",
    .usage = "ID",
    .exec = cli_task_show,
};

static const struct cli_cmd_entry cli_task_list_entry = {
    .name = "list",
    .usage = "[--runtime NAME] [--state STATE]",
    .exec = cli_task_list,
};

static const struct cli_cmd_entry cli_task_attach_entry = {
    .name = "attach",
    .usage = "ID [--stream agent|stderr|check/N] [--from OFFSET]",
    .exec = cli_task_attach,
};

static const struct cli_cmd_entry cli_task_cancel_entry = {
    .name = "cancel",
    .usage = "ID",
    .exec = cli_task_cancel,
};

static const struct cli_cmd_entry cli_task_deliver_entry = {
    .name = "deliver",
    .usage = "ID --branch B --message M ...",
    .synopsis = "deliver ID --branch B --message M\n"
                "             [--author-name N --author-email E]\n"
                "             [--push REPO [--username U] "
                "[--password-stdin]] [--force]",
    .exec = cli_task_deliver,
};

static const struct cli_cmd_entry *const cli_task_subs[] = {
    &cli_task_run_entry,
    &cli_task_show_entry,
    &cli_task_list_entry,
    &cli_task_attach_entry,
    &cli_task_cancel_entry,
    &cli_task_deliver_entry,
    NULL,
};

static int
cli_task_run_sub(struct cli *cli, int argc, char **argv)
{
	return cli_sub_run(cli, argc, argv, cli_task_subs,
	    "run, show, list, attach, cancel or deliver");
}

const struct cli_cmd_entry cli_task_entry = {
    .name = "task",
    .usage = "run|show|list|attach|cancel|deliver ARGS",
    .summary = "tasks: run a PROMPT through RUNTIME, then each\n"
               "--check; show one, list them, attach ID writes a\n"
               "stream (agent, stderr, check/N) to its end and\n"
               "exits 0 if the task succeeded; cancel it; deliver\n"
               "commits its workspace on a new --branch (--push)",
    .exec = cli_task_run_sub,
};
