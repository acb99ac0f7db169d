/* cli_exec: berth exec. proc.start, attached from byte 0 and
 * acknowledging what arrives, and proc.wait: stdout and stderr go to fds
 * 1 and 2 as they arrive, stdin (with --stdin) to the command by offset,
 * SIGINT and SIGTERM to its process group. A lost connection is made again
 * and each stream resumes at the byte it had reached, stdin at the byte
 * berthd had taken; the command never dies of berth going away. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_exec.h"
#include "cli_print.h"
#include "cli_xfer.h"
#include "clock.h"
#include "xmalloc.h"

/* What proc.start and proc.input take (see supervisor/proc.c). */
#define CLI_EXEC_INPUT_MAX (64u << 10)
#define CLI_EXEC_ENV_MAX 256
#define CLI_EXEC_LIMIT_MAX_S (7.0 * 86400)
#define CLI_EXEC_ID_MAX 32
/*
 * cli_conn cannot wake a wait on stdin, nor stdin one on the connection,
 * and a signal does not end a wait on the connection: the loop waits on
 * the connection a slice at a time. Short while input flows (a chunk of
 * stdin waits at most that long), longer after a pause, and longer still
 * when only a forwarded signal can need the loop.
 */
#define CLI_EXEC_SLICE_MS 10
#define CLI_EXEC_SLICE_IDLE_MS 50
#define CLI_EXEC_SLICE_QUIET_MS 200
#define CLI_EXEC_TYPING_MS 2000
/* proc.input refused for a full backlog: the same bytes go again later. */
#define CLI_EXEC_RETRY_MIN_MS 20
#define CLI_EXEC_RETRY_MAX_MS 500
/* How much output arrives between two proc.ack: berthd lets the command
 * run half a ring (8 MiB) past the last byte acknowledged. */
#define CLI_EXEC_ACK_EVERY (1u << 20)

/* Option values, apart from every global option's. */
enum {
	CLI_EXEC_OPT_CWD = 256,
	CLI_EXEC_OPT_ENV,
	CLI_EXEC_OPT_USER,
	CLI_EXEC_OPT_TIMEOUT,
	CLI_EXEC_OPT_TAG,
	CLI_EXEC_OPT_STDIN,
	CLI_EXEC_OPT_LIMIT,
};

/* --limit NAME=VALUE: as many as proc.start has limits. */
#define CLI_EXEC_RES_MAX 5

enum { CLI_EXEC_STDOUT, CLI_EXEC_STDERR, CLI_EXEC_NOUT };
static const char *const cli_exec_names[CLI_EXEC_NOUT] = {"stdout", "stderr"};

/* SIGINT and SIGTERM received (index 0 and 1), to forward. */
static volatile sig_atomic_t cli_exec_sigs[2];
static const char *const cli_exec_signames[2] = {"INT", "TERM"};

/* One output stream of the command; stream is allocated with the
 * struct cli_exec that holds it. */
struct cli_exec_out {
	char *stream; /* "proc/ID/stdout", as data messages name it */
	int fd;
	uint64_t next;  /* the offset of the first byte not yet written */
	uint64_t acked; /* what berthd was last told we have */
	bool eof;
};

/*
 * One exec, across reconnections. Every attachment after the first asks
 * for each stream from its next, so the output goes on with no gap and no
 * duplicate. Requests sent without waiting (proc.wait, proc.input,
 * proc.close_stdin, proc.signal) are at most one of each kind in flight,
 * known by their ids, since proc.wait is answered out of turn. Allocated
 * and freed by cli_exec_run; argv, cwd, user, tag and env point into the
 * command line; owns conn and the stream names.
 */
struct cli_exec {
	struct cli *cli;

	char **argv; /* NULL-terminated */
	const char *cwd;
	const char *user;
	const char *tag;
	const char *env[CLI_EXEC_ENV_MAX]; /* "NAME=VALUE", names unique */
	size_t nenv;
	uint64_t limit_ms; /* --timeout, 0 for none */
	/* --limit: the names (up to the '=' of their argument) and values,
	 * for berthd to check. */
	const char *res_name[CLI_EXEC_RES_MAX];
	size_t res_len[CLI_EXEC_RES_MAX];
	uint64_t res_value[CLI_EXEC_RES_MAX];
	size_t nres;
	double limit_s;
	bool pipe_in;

	char id[CLI_EXEC_ID_MAX + 1];
	struct cli_conn *conn;
	uint64_t rid; /* the id of the next request sent without waiting */
	struct cli_exec_out out[CLI_EXEC_NOUT];

	uint64_t wait_id;
	uint64_t input_id;
	uint64_t close_id;
	uint64_t signal_id;
	int signal_sent;  /* which of cli_exec_sigs signal_id carries */
	int forwarded[2]; /* how many of cli_exec_sigs went out */

	/* One chunk of stdin at a time: read, sent, answered, then the next,
	 * so that a refused chunk sent again cannot be overtaken. */
	uint8_t in[CLI_EXEC_INPUT_MAX];
	size_t inlen;
	uint64_t in_at; /* where in[] starts in the command's stdin */
	bool in_eof;    /* nothing more to read from stdin */
	bool in_done;   /* the command's stdin is closed */
	uint64_t retry_at;
	int retry_ms;
	uint64_t read_at; /* when stdin last gave something */

	bool exit_known;
	int exit_status;
	bool timed_out;
	bool broken; /* our stdout or stderr has no reader left */
};

static void
cli_exec_signal_cb(int sig)
{
	cli_exec_sigs[sig == SIGTERM]++;
}

static void
cli_exec_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cli_exec_signal_cb;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A closed stdout is an EPIPE, for cli_exec_broken to pass on. */
	signal(SIGPIPE, SIG_IGN);
}

/* ---- the command line ---- */

int
cli_exec_env(
    struct cli *cli, const char **env, size_t *n, size_t max, const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t i, len;

	if (eq == NULL || eq == arg)
		return cli_usage(cli, "--env wants NAME=VALUE: %s", arg);
	len = (size_t)(eq - arg) + 1;
	for (i = 0; i < *n; i++)
		if (strncmp(env[i], arg, len) == 0) {
			env[i] = arg;
			return CLI_EXIT_OK;
		}
	if (*n == max)
		return cli_usage(cli, "at most %zu --env", max);
	env[(*n)++] = arg;
	return CLI_EXIT_OK;
}

void
cli_exec_pack_env(msgpack_packer *pk, const char *const *env, size_t n)
{
	const char *eq;
	size_t i;

	proto_pack_str(pk, "env");
	msgpack_pack_map(pk, n);
	for (i = 0; i < n; i++) {
		eq = strchr(env[i], '=');
		msgpack_pack_str(pk, (size_t)(eq - env[i]));
		msgpack_pack_str_body(pk, env[i], (size_t)(eq - env[i]));
		proto_pack_str(pk, eq + 1);
	}
}

static int
cli_exec_limit(struct cli_exec *e, const char *arg)
{
	char *end;

	errno = 0;
	e->limit_s = strtod(arg, &end);
	if (errno != 0 || end == arg || *end != '\0' || !(e->limit_s > 0) ||
	    e->limit_s > CLI_EXEC_LIMIT_MAX_S) {
		cli_usage(e->cli,
		    "--timeout wants seconds, more than 0 and at most 7 days: "
		    "%s",
		    arg);
		return -1;
	}
	e->limit_ms = (uint64_t)(e->limit_s * 1000 + 0.5);
	if (e->limit_ms == 0)
		e->limit_ms = 1;
	return 0;
}

/* --limit NAME=VALUE, VALUE a number with an optional K, M or G; the
 * names and ranges are berthd's to check (limits.status's). */
static int
cli_exec_resource(struct cli_exec *e, const char *arg)
{
	const char *eq = strchr(arg, '=');
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (eq == NULL || eq == arg || eq[1] < '0' || eq[1] > '9') {
		cli_usage(e->cli, "--limit wants NAME=NUMBER: %s", arg);
		return -1;
	}
	errno = 0;
	v = strtoull(eq + 1, &end, 10);
	if (*end != '\0' && end[1] == '\0')
		shift = *end == 'K' ? 10
		    : *end == 'M'   ? 20
		    : *end == 'G'   ? 30
		                    : 0;
	if (errno != 0 || (*end != '\0' && shift == 0) ||
	    v > (UINT64_MAX >> shift)) {
		cli_usage(e->cli,
		    "--limit wants NAME=NUMBER (K, M or G after it): %s", arg);
		return -1;
	}
	if (e->nres == CLI_EXEC_RES_MAX) {
		cli_usage(e->cli, "at most %d --limit", CLI_EXEC_RES_MAX);
		return -1;
	}
	e->res_name[e->nres] = arg;
	e->res_len[e->nres] = (size_t)(eq - arg);
	e->res_value[e->nres++] = (uint64_t)v << shift;
	return 0;
}

/* Options up to the first word; that word and all after it are the
 * command, verbatim. Returns -1 to go on, or the exit status to end
 * with (0 after --help). */
static int
cli_exec_args(struct cli_exec *e, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"cwd", required_argument, NULL, CLI_EXEC_OPT_CWD},
	    {"env", required_argument, NULL, CLI_EXEC_OPT_ENV},
	    {"user", required_argument, NULL, CLI_EXEC_OPT_USER},
	    {"timeout", required_argument, NULL, CLI_EXEC_OPT_TIMEOUT},
	    {"tag", required_argument, NULL, CLI_EXEC_OPT_TAG},
	    {"stdin", no_argument, NULL, CLI_EXEC_OPT_STDIN},
	    {"limit", required_argument, NULL, CLI_EXEC_OPT_LIMIT},
	    {NULL, 0, NULL, 0},
	};
	int c, rc = 0;

	while (
	    rc == 0 && (c = cli_getopt(e->cli, argc, argv, opts, "")) != -1) {
		switch (c) {
		case CLI_STOP:
			/* A usage error is berth's failure, apart from the
			 * command's statuses. */
			return CLI_EXIT_EXEC_BERTH;
		case CLI_EXEC_OPT_CWD: e->cwd = optarg; break;
		case CLI_EXEC_OPT_ENV:
			rc = cli_exec_env(
			    e->cli, e->env, &e->nenv, CLI_EXEC_ENV_MAX, optarg);
			break;
		case CLI_EXEC_OPT_USER: e->user = optarg; break;
		case CLI_EXEC_OPT_TIMEOUT:
			rc = cli_exec_limit(e, optarg);
			break;
		case CLI_EXEC_OPT_TAG: e->tag = optarg; break;
		case CLI_EXEC_OPT_STDIN: e->pipe_in = true; break;
		case CLI_EXEC_OPT_LIMIT:
			rc = cli_exec_resource(e, optarg);
			break;
		}
	}
	if (rc != 0)
		return CLI_EXIT_EXEC_BERTH;
	if (optind >= argc) {
		cli_usage(e->cli, "exec wants a command");
		return CLI_EXIT_EXEC_BERTH;
	}
	e->argv = &argv[optind];
	if (cli_ready(e->cli) != 0)
		return CLI_EXIT_EXEC_BERTH;
	return -1;
}

/* ---- requests ---- */

static void
cli_exec_pack_start_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_exec *e = ctx;
	size_t n, i;

	msgpack_pack_map(pk,
	    4 + (e->cwd != NULL) + (e->user != NULL) + (e->tag != NULL) +
	        (e->nenv > 0) + (e->limit_ms > 0) + (e->nres > 0));
	for (n = 0; e->argv[n] != NULL; n++)
		;
	proto_pack_str(pk, "argv");
	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++)
		proto_pack_str(pk, e->argv[i]);
	proto_pack_kv_str(pk, "stdin", e->pipe_in ? "pipe" : "closed");
	/* Attached before the first byte: none can pass unread. */
	proto_pack_kv_bool(pk, "attach", true);
	proto_pack_kv_bool(pk, "ack", true);
	if (e->cwd != NULL)
		proto_pack_kv_str(pk, "cwd", e->cwd);
	if (e->user != NULL)
		proto_pack_kv_str(pk, "user", e->user);
	if (e->tag != NULL)
		proto_pack_kv_str(pk, "tag", e->tag);
	if (e->limit_ms > 0)
		proto_pack_kv_u64(pk, "timeout_ms", e->limit_ms);
	if (e->nres > 0) {
		proto_pack_str(pk, "limits");
		msgpack_pack_map(pk, e->nres);
		for (i = 0; i < e->nres; i++) {
			msgpack_pack_str(pk, e->res_len[i]);
			msgpack_pack_str_body(
			    pk, e->res_name[i], e->res_len[i]);
			msgpack_pack_uint64(pk, e->res_value[i]);
		}
	}
	if (e->nenv > 0)
		cli_exec_pack_env(pk, e->env, e->nenv);
}

static void
cli_exec_pack_id_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_exec *e = ctx;

	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "id", e->id);
}

static void
cli_exec_pack_attach_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_exec *e = ctx;
	int i;

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "id", e->id);
	proto_pack_kv_bool(pk, "ack", true);
	proto_pack_str(pk, "from_offset");
	msgpack_pack_map(pk, CLI_EXEC_NOUT);
	for (i = 0; i < CLI_EXEC_NOUT; i++)
		proto_pack_kv_u64(pk, cli_exec_names[i], e->out[i].next);
}

static void
cli_exec_pack_ack_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_exec *e = ctx;
	int i;

	msgpack_pack_map(pk, 1 + CLI_EXEC_NOUT);
	proto_pack_kv_str(pk, "id", e->id);
	for (i = 0; i < CLI_EXEC_NOUT; i++)
		proto_pack_kv_u64(pk, cli_exec_names[i], e->out[i].next);
}

static void
cli_exec_pack_input_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_exec *e = ctx;

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "id", e->id);
	proto_pack_kv_u64(pk, "offset", e->in_at);
	proto_pack_str(pk, "data");
	msgpack_pack_bin(pk, e->inlen);
	msgpack_pack_bin_body(pk, e->in, e->inlen);
}

static void
cli_exec_pack_signal_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_exec *e = ctx;

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "id", e->id);
	proto_pack_kv_str(pk, "signal", cli_exec_signames[e->signal_sent]);
}

/* Sends a request without waiting for its answer; *idp is its id. */
static int
cli_exec_push(struct cli_exec *e, const char *op, cli_conn_pack_cb pack,
    uint64_t *idp, char **cause)
{
	int status;

	status = cli_conn_push(e->conn, e->rid, op, pack, e, cause);
	if (status == CLI_CONN_OK)
		*idp = e->rid++;
	return status;
}

/* ---- output ---- */

/* Writes to one of our fds; EPIPE (no reader left) marks the run
 * broken instead of failing it. */
static int
cli_exec_write(
    struct cli_exec *e, int fd, const uint8_t *p, size_t len, char **cause)
{
	if (cli_xfer_write(fd, p, len) == 0)
		return CLI_CONN_OK;
	if (errno == EPIPE) {
		e->broken = true;
		return CLI_CONN_OK;
	}
	*cause = xasprintf("cannot write the command's %s: %s",
	    cli_exec_names[fd == STDERR_FILENO], strerror(errno));
	return CLI_CONN_ANSWERED;
}

/* One data message: the part past next goes out. A jump forward is
 * output the ring overwrote before berth could read it. */
static int
cli_exec_data(struct cli_exec *e, const struct proto_msg *m, char **cause)
{
	struct cli_exec_out *o = NULL;
	bool eof = false;
	uint64_t skip;
	int i;

	for (i = 0; i < CLI_EXEC_NOUT; i++)
		if (strcmp(m->stream, e->out[i].stream) == 0)
			o = &e->out[i];
	if (o == NULL || o->eof)
		return CLI_CONN_OK;
	proto_arg_bool(&m->unpacked.data, "eof", &eof);
	if (m->offset > o->next) {
		cli_print_warn("%" PRIu64 " bytes of the command's %s were "
		               "lost (berthd no longer held them)",
		    m->offset - o->next, cli_exec_names[o - e->out]);
		o->next = m->offset;
	}
	o->eof = eof;
	if (m->offset + m->nbytes <= o->next)
		return CLI_CONN_OK;
	skip = o->next - m->offset;
	o->next = m->offset + m->nbytes;
	return cli_exec_write(e, o->fd, (const uint8_t *)m->bytes + skip,
	    m->nbytes - skip, cause);
}

/* ---- stdin ---- */

/* Reads the next chunk of stdin, if it is due and there. */
static void
cli_exec_read(struct cli_exec *e)
{
	struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
	ssize_t n;

	if (e->in_eof || e->inlen > 0 || e->input_id != 0 ||
	    poll(&pfd, 1, 0) <= 0)
		return;
	n = read(STDIN_FILENO, e->in, sizeof e->in);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0)
		cli_print_warn("cannot read stdin: %s; closing the command's",
		    strerror(errno));
	if (n <= 0) {
		e->in_eof = true;
		return;
	}
	e->inlen = (size_t)n;
	e->read_at = clock_mono_ms();
}

/* The command's stdin is gone (it closed it, or exited): what is left
 * of ours is moot. */
static void
cli_exec_in_gone(struct cli_exec *e)
{
	e->inlen = 0;
	e->in_eof = true;
	e->in_done = true;
}

static void
cli_exec_input_answer(struct cli_exec *e, const struct proto_msg *m)
{
	e->input_id = 0;
	if (m->ok) {
		e->in_at += e->inlen;
		e->inlen = 0;
		e->retry_ms = 0;
		return;
	}
	if (strcmp(m->err_code, PROTO_E_UNAVAILABLE) == 0) {
		/* The command is not reading: the same bytes, later. */
		e->retry_ms =
		    e->retry_ms == 0 ? CLI_EXEC_RETRY_MIN_MS : e->retry_ms * 2;
		if (e->retry_ms > CLI_EXEC_RETRY_MAX_MS)
			e->retry_ms = CLI_EXEC_RETRY_MAX_MS;
		e->retry_at = clock_mono_ms() + (uint64_t)e->retry_ms;
		return;
	}
	if (strcmp(m->err_code, PROTO_E_CONFLICT) != 0)
		cli_print_warn(
		    "proc.input: %s: %s", m->err_code, m->err_message);
	cli_exec_in_gone(e);
}

/* ---- the end ---- */

/* proc.wait's answer: the exit, as the status a shell would give it. */
static int
cli_exec_waited(struct cli_exec *e, const struct proto_msg *m, char **cause)
{
	const msgpack_object *x;
	char state[16] = "";

	e->wait_id = 0;
	if (!m->ok)
		return cli_conn_refused(m, cause);
	proto_arg_str(m->result, "state", state, sizeof state);
	if (strcmp(state, "exited") != 0)
		return CLI_CONN_OK; /* asked again by the next flush */
	proto_arg_bool(m->result, "timed_out", &e->timed_out);
	x = proto_map_get(m->result, "exit");
	if (cli_exit_status(x, &e->exit_status) < 0) {
		*cause = xstrdup("proc.wait answered without an exit");
		return CLI_CONN_PROTOCOL;
	}
	e->exit_known = true;
	return CLI_CONN_OK;
}

static bool
cli_exec_ended(const struct cli_exec *e)
{
	return e->exit_known && e->out[CLI_EXEC_STDOUT].eof &&
	    e->out[CLI_EXEC_STDERR].eof;
}

static int
cli_exec_answer(struct cli_exec *e, const struct proto_msg *m, char **cause)
{
	if (m->id == e->wait_id)
		return cli_exec_waited(e, m, cause);
	if (m->id == e->input_id)
		cli_exec_input_answer(e, m);
	else if (m->id == e->close_id) {
		e->close_id = 0;
		e->in_done = true;
	} else if (m->id == e->signal_id) {
		e->signal_id = 0;
		/* Too late is no failure: the command has exited. */
		if (!m->ok && strcmp(m->err_code, PROTO_E_CONFLICT) != 0)
			cli_print_warn(
			    "proc.signal: %s: %s", m->err_code, m->err_message);
	}
	return CLI_CONN_OK;
}

static int
cli_exec_handle(void *arg, const struct proto_msg *m, char **cause)
{
	struct cli_exec *e = arg;
	switch (m->type) {
	case PROTO_DATA: return cli_exec_data(e, m, cause);
	case PROTO_RESPONSE: return cli_exec_answer(e, m, cause);
	case PROTO_EVENT:
	case PROTO_REQUEST: break;
	}
	return CLI_CONN_OK;
}

/* Whether berthd should hear what has arrived, so it lets the command
 * run on. */
static bool
cli_exec_ack_due(const struct cli_exec *e)
{
	int i;

	for (i = 0; i < CLI_EXEC_NOUT; i++)
		if (e->out[i].next - e->out[i].acked >= CLI_EXEC_ACK_EVERY)
			return true;
	return false;
}

/* Sends what is due: a signal caught, the wait, what has arrived,
 * stdin's next chunk or its end. */
static int
cli_exec_flush(void *arg, char **cause)
{
	struct cli_exec *e = arg;
	uint64_t ack_id; /* its answer is of no interest */
	int status, k;

	for (k = 0; k < 2 && e->signal_id == 0; k++) {
		if (cli_exec_sigs[k] <= e->forwarded[k])
			continue;
		e->signal_sent = k;
		status = cli_exec_push(e, "proc.signal",
		    cli_exec_pack_signal_cb, &e->signal_id, cause);
		if (status != CLI_CONN_OK)
			return status;
		e->forwarded[k]++;
	}
	if (!e->exit_known && e->wait_id == 0 &&
	    (status = cli_exec_push(e, "proc.wait", cli_exec_pack_id_cb,
	         &e->wait_id, cause)) != CLI_CONN_OK)
		return status;
	if (cli_exec_ack_due(e)) {
		status = cli_exec_push(
		    e, "proc.ack", cli_exec_pack_ack_cb, &ack_id, cause);
		if (status != CLI_CONN_OK)
			return status;
		for (k = 0; k < CLI_EXEC_NOUT; k++)
			e->out[k].acked = e->out[k].next;
	}
	if (e->input_id != 0 || e->in_done)
		return CLI_CONN_OK;
	if (e->inlen > 0 && clock_mono_ms() >= e->retry_at)
		return cli_exec_push(e, "proc.input", cli_exec_pack_input_cb,
		    &e->input_id, cause);
	if (e->inlen == 0 && e->in_eof && e->close_id == 0)
		return cli_exec_push(e, "proc.close_stdin", cli_exec_pack_id_cb,
		    &e->close_id, cause);
	return CLI_CONN_OK;
}

/* How long the connection may be waited on before stdin's next turn. */
static int
cli_exec_slice(void *arg)
{
	struct cli_exec *e = arg;
	uint64_t now = clock_mono_ms();

	if (e->in_eof || e->input_id != 0)
		return CLI_EXEC_SLICE_QUIET_MS;
	if (e->inlen > 0)
		return e->retry_at > now ? (int)(e->retry_at - now) : 0;
	if (now - e->read_at < CLI_EXEC_TYPING_MS)
		return CLI_EXEC_SLICE_MS;
	return CLI_EXEC_SLICE_IDLE_MS;
}

/* ---- connecting ---- */

/* Attaches the connection again, from each stream's next (the next flush
 * asks for the exit on it). */
static int
cli_exec_attach(struct cli_exec *e, char **cause)
{
	const struct proto_msg *resp;
	int status, i;

	status = cli_conn_call(e->conn, "proc.attach", cli_exec_pack_attach_cb,
	    e, e->cli->timeout_ms, &resp, cause);
	/* berthd takes the offsets asked for as acknowledged. */
	for (i = 0; status == CLI_CONN_OK && i < CLI_EXEC_NOUT; i++)
		e->out[i].acked = e->out[i].next;
	return status;
}

/* The connection is lost, and with it every answer not yet read. An
 * unanswered chunk of stdin is sent again at its offset: berthd skips
 * what of it it took. A signal is sent again: twice is better than
 * never. */
static void
cli_exec_lost(struct cli_exec *e)
{
	cli_conn_forget(&e->conn);
	if (e->signal_id != 0)
		e->forwarded[e->signal_sent]--;
	e->input_id = e->close_id = e->signal_id = e->wait_id = 0;
}

/* A try at mending the run: a new connection, attached again. */
static int
cli_exec_retry_cb(void *arg, char **cause)
{
	struct cli_exec *e = arg;
	int status;

	if ((status = cli_open(e->cli, &e->conn, cause)) != CLI_CONN_OK) {
		e->conn = NULL;
		return status;
	}
	if ((status = cli_exec_attach(e, cause)) != CLI_CONN_OK)
		cli_conn_forget(&e->conn);
	return status;
}

/* After a lost connection (why says how; taken): attached again, each
 * stream from its next, or a failure that retrying cannot mend. */
static int
cli_exec_reconnect(struct cli_exec *e, char *why, char **cause)
{
	struct cli_xfer_outage o = {
	    .quiet = true, .retry = cli_exec_retry_cb, .arg = e};
	int status;

	status = cli_xfer_mend(e->cli, &o, why, cause);
	if (status == CLI_CONN_OK && o.tries > 1)
		cli_print_warn("reconnected; the output resumes at stdout "
		               "%" PRIu64 ", stderr %" PRIu64,
		    e->out[CLI_EXEC_STDOUT].next, e->out[CLI_EXEC_STDERR].next);
	return status;
}

/* Starts the command on a new connection and attaches to its output. */
static int
cli_exec_start(struct cli_exec *e, char **cause)
{
	const struct proto_msg *resp;
	int status, i;

	status = cli_open(e->cli, &e->conn, cause);
	if (status != CLI_CONN_OK) {
		e->conn = NULL;
		return status;
	}
	status = cli_conn_call(e->conn, "proc.start", cli_exec_pack_start_cb, e,
	    e->cli->timeout_ms, &resp, cause);
	if (status != CLI_CONN_OK)
		return status;
	if (proto_arg_str(resp->result, "id", e->id, sizeof e->id) != 1) {
		*cause = xstrdup("proc.start answered without an id");
		return CLI_CONN_PROTOCOL;
	}
	for (i = 0; i < CLI_EXEC_NOUT; i++)
		e->out[i].stream =
		    xasprintf("proc/%s/%s", e->id, cli_exec_names[i]);
	return CLI_CONN_OK;
}

/* ---- the run ---- */

static int
cli_exec_fail(struct cli_exec *e, char *cause)
{
	cli_conn_forget(&e->conn);
	if (e->id[0] != '\0' && !e->exit_known)
		cli_print_warn(
		    "%s (the command, process %s, runs on)", cause, e->id);
	else
		cli_print_warn("%s", cause);
	free(cause);
	return CLI_EXIT_EXEC_BERTH;
}

static int
cli_exec_finish(struct cli_exec *e)
{
	cli_conn_forget(&e->conn);
	if (e->timed_out) {
		cli_print_warn("timed out after %g s", e->limit_s);
		return CLI_EXIT_EXEC_TIMEOUT;
	}
	return e->exit_status;
}

static void
cli_exec_pack_sigpipe_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_exec *e = ctx;

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "id", e->id);
	proto_pack_kv_u64(pk, "signal", SIGPIPE);
}

/*
 * Nobody reads our output any more (berth exec ... | head -1): the
 * command gets SIGPIPE, as it would writing to that pipe itself, and
 * berth dies of it too, as a member of a local pipeline does, without
 * waiting for the command's end.
 */
static int
cli_exec_broken(struct cli_exec *e)
{
	const struct proto_msg *resp;
	char *cause;

	if (cli_conn_request(e->conn, "proc.signal", cli_exec_pack_sigpipe_cb,
	        e, e->cli->timeout_ms, &resp, &cause) != CLI_CONN_OK)
		free(cause);
	cli_conn_forget(&e->conn);
	return CLI_EXIT_SIGNAL + SIGPIPE;
}

static const struct cli_xfer_talk cli_exec_talk = {
    .flush = cli_exec_flush,
    .slice = cli_exec_slice,
    .handle = cli_exec_handle,
};

/*
 * The command's life: stdin to it, its output to ours, signals caught to
 * its process group, until its exit is known and both streams have
 * ended, or a failure that reconnecting cannot mend.
 */
static int
cli_exec_loop(struct cli_exec *e)
{
	char *cause;
	int status;

	while (!cli_exec_ended(e)) {
		cli_exec_read(e);
		status = cli_xfer_turn(e->conn, &cli_exec_talk, e, &cause);
		if (status == CLI_CONN_OK && e->broken)
			return cli_exec_broken(e);
		if (status == CLI_CONN_OK)
			continue;
		if (status != CLI_CONN_LOST)
			return cli_exec_fail(e, cause);
		cli_exec_lost(e);
		if ((status = cli_exec_reconnect(e, cause, &cause)) !=
		    CLI_CONN_OK)
			return cli_exec_fail(e, cause);
	}
	return cli_exec_finish(e);
}

static int
cli_exec_run(struct cli *cli, int argc, char **argv)
{
	struct cli_exec *e = xcalloc(1, sizeof *e);
	char *cause;
	int status, i;

	e->cli = cli;
	e->rid = CLI_CONN_RAW_ID;
	e->out[CLI_EXEC_STDOUT].fd = STDOUT_FILENO;
	e->out[CLI_EXEC_STDERR].fd = STDERR_FILENO;
	if ((status = cli_exec_args(e, argc, argv)) != -1) {
		free(e);
		return status;
	}
	if (!e->pipe_in)
		cli_exec_in_gone(e);
	/* From here a signal goes to the command, once it has an id. */
	cli_exec_signals();
	if ((status = cli_exec_start(e, &cause)) != CLI_CONN_OK)
		status = cli_exec_fail(e, cause);
	else
		status = cli_exec_loop(e);
	for (i = 0; i < CLI_EXEC_NOUT; i++)
		free(e->out[i].stream);
	free(e);
	return status;
}

const struct cli_cmd_entry cli_exec_entry = {
    .name = "exec",
    .usage = "[OPTIONS] [--] CMD [ARGS...]",
    .summary = "run CMD in the sandbox, its stdout, stderr and\n"
               "exit status passed through (128 + N for signal\n"
               "N); --cwd DIR, --env NAME=VALUE, --user USER,\n"
               "--tag TAG; --stdin passes stdin (else it is\n"
               "closed); --timeout SEC kills it: status 124;\n"
               "--limit NAME=NUMBER bounds it (cpu_millis,\n"
               "memory_bytes, max_processes, open_files);\n"
               "berth's own failures: status 125",
    .synopsis = "exec [--cwd DIR] [--env NAME=VALUE]... [--user USER]\n"
                "             [--timeout SEC] [--tag TAG] [--stdin]\n"
                "             [--limit NAME=NUMBER]... [--] CMD [ARGS...]",
    .exec = cli_exec_run,
};
