/* cli_attach: berth pty attach, the interactive client of a terminal
 * session. It owns the terminal while it runs (raw mode, the detach key,
 * resizes, job control), sends the keys typed and writes the session's
 * output as it comes, and resumes at the exact byte after a lost
 * connection. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "cli_attach.h"
#include "cli_print.h"
#include "cli_pty.h"
#include "cli_xfer.h"
#include "clock.h"
#include "log.h"
#include "xmalloc.h"

/*
 * cli_conn cannot wake a wait on stdin, nor stdin one on the connection:
 * attach waits on each in turn, the connection at most a slice: short
 * while keys come (a key waits at most that long), longer after a pause
 * (the first key after it may wait that long), and longer still when no
 * key can come. Every timed wait on the WebSocket ends with lws spinning
 * through its last millisecond, so short slices cost CPU.
 */
#define CLI_ATTACH_SLICE_MS 10
#define CLI_ATTACH_SLICE_IDLE_MS 50
#define CLI_ATTACH_SLICE_NOKEYS_MS 200
#define CLI_ATTACH_TYPING_MS 2000
/*
 * Keys go without waiting for earlier ones to be answered while fewer
 * than CLI_ATTACH_PIPE_BYTES are unanswered; a bigger paste goes a message
 * at a time. berthd refuses a whole pty.input (unavailable) when its
 * input backlog is full: the bytes are sent again after a pause, and a
 * later message in flight could overtake them, which this keeps to
 * typing speed, where the backlog does not fill.
 */
#define CLI_ATTACH_PIPE_BYTES 4096
#define CLI_ATTACH_RETRY_MIN_MS 20
#define CLI_ATTACH_RETRY_MAX_MS 500
#define CLI_ATTACH_PENDING_MAX 16
/* A lone detach key is passed on when no second one follows this soon. */
#define CLI_ATTACH_HOLD_MS 1000
#define CLI_ATTACH_DETACH_KEY 0x1c /* Ctrl-\ */

/* ---- the terminal ---- */

/*
 * The terminal as attach found it, and as attach wants it. Signal
 * handlers restore it too, so these are plain statics; cli_attach_raw says
 * whether the terminal is in raw mode now.
 */
static struct termios cli_attach_saved;
static struct termios cli_attach_rawmode;
static volatile sig_atomic_t cli_attach_raw;
static volatile sig_atomic_t cli_attach_want_raw;
static volatile sig_atomic_t cli_attach_winch;

/* Async-signal-safe. */
static void
cli_attach_restore(void)
{
	if (cli_attach_raw) {
		tcsetattr(STDIN_FILENO, TCSADRAIN, &cli_attach_saved);
		cli_attach_raw = 0;
	}
}

static void
cli_attach_unraw(void)
{
	cli_attach_want_raw = 0;
	cli_attach_restore();
}

static void
cli_attach_winch_cb(int sig)
{
	(void)sig;
	cli_attach_winch = 1;
}

/* A signal that ends the run: the terminal first, then the default. */
static void
cli_attach_die_cb(int sig)
{
	cli_attach_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Continued: raw again, and the window may have changed meanwhile. */
static void
cli_attach_cont_cb(int sig)
{
	int saved = errno;

	(void)sig;
	if (cli_attach_want_raw &&
	    tcsetattr(STDIN_FILENO, TCSADRAIN, &cli_attach_rawmode) == 0)
		cli_attach_raw = 1;
	cli_attach_winch = 1;
	errno = saved;
}

/* Stopped: the shell gets its terminal back as it was. The stop may not
 * happen (an orphaned process group ignores it): raw again either way
 * once raise returns. */
static void
cli_attach_stop_cb(int sig)
{
	int saved = errno;
	sigset_t set;

	cli_attach_restore();
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	signal(sig, cli_attach_stop_cb);
	errno = saved;
	cli_attach_cont_cb(sig);
}

static void
cli_attach_signals(void)
{
	static const int die[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGPIPE};
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = cli_attach_winch_cb;
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = cli_attach_cont_cb;
	sigaction(SIGCONT, &sa, NULL);
	sa.sa_handler = cli_attach_stop_cb;
	sigaction(SIGTSTP, &sa, NULL);
	sa.sa_handler = cli_attach_die_cb;
	for (i = 0; i < sizeof die / sizeof die[0]; i++)
		sigaction(die[i], &sa, NULL);
	atexit(cli_attach_unraw);
}

/* Raw mode: every byte goes to the session, Ctrl-C included, and the
 * session's output reaches the screen untranslated. */
static int
cli_attach_enraw(char **cause)
{
	if (tcgetattr(STDIN_FILENO, &cli_attach_saved) != 0) {
		*cause = xasprintf(
		    "cannot read the terminal's modes: %s", strerror(errno));
		return -1;
	}
	cli_attach_rawmode = cli_attach_saved;
	cfmakeraw(&cli_attach_rawmode);
	cli_attach_rawmode.c_cc[VMIN] = 1;
	cli_attach_rawmode.c_cc[VTIME] = 0;
	cli_attach_want_raw = 1;
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &cli_attach_rawmode) != 0) {
		cli_attach_want_raw = 0;
		*cause = xasprintf(
		    "cannot set the terminal's modes: %s", strerror(errno));
		return -1;
	}
	cli_attach_raw = 1;
	return 0;
}

/* A line of our own on stderr: in raw mode a newline does not return the
 * carriage, so the line ends with both. */
static void cli_attach_note(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void
cli_attach_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(cli_attach_raw ? "\r\n" : "\n", stderr);
}

static int
cli_attach_write(const void *buf, size_t len, char **cause)
{
	if (cli_xfer_write(STDOUT_FILENO, buf, len) == 0)
		return CLI_CONN_OK;
	*cause = xasprintf("cannot write the output: %s", strerror(errno));
	return CLI_CONN_ANSWERED;
}

/* ---- attach ---- */

enum cli_attach_req {
	CLI_ATTACH_REQ_INPUT,
	CLI_ATTACH_REQ_RESIZE,
	CLI_ATTACH_REQ_LIST,
};

/*
 * One attachment, across reconnections. next is the offset of the first
 * byte not yet written to stdout: every attachment after the first asks
 * for from_offset = next, so the output goes on with no gap and no
 * duplicate. Requests sent without waiting (input, resize, list) are
 * answered in order, so pend is a queue. Allocated and freed by
 * cli_attach_run; owns conn and stream.
 */
struct cli_attach {
	struct cli *cli;
	const char *id;
	char *stream; /* "pty/ID", as data messages name it */
	bool from_set;
	uint64_t from;
	bool screen;
	bool readonly;
	int key;  /* the detach key, or -1 for none */
	bool tty; /* stdin is a terminal */

	struct cli_conn *conn;
	bool started; /* next is known */
	uint64_t next;
	uint64_t rid; /* the id of the next request sent without waiting */
	struct {
		uint64_t id;
		enum cli_attach_req req;
		uint8_t *data; /* pty.input: a copy, to send again if refused */
		size_t len;
	} pend[CLI_ATTACH_PENDING_MAX];
	size_t phead;
	size_t npend;
	size_t unanswered; /* bytes of pty.input in flight */

	/* Keys not yet sent: at most CLI_PTY_INPUT_MAX read (a held detach
	 * key included), and refused ones put back in front of them (the
	 * first requeued bytes), at most CLI_PTY_INPUT_MAX as well. */
	uint8_t in[2 * CLI_PTY_INPUT_MAX + 1];
	size_t inlen;
	size_t requeued;
	uint64_t retry_at; /* no input before this, after a refusal */
	int retry_ms;
	bool in_eof;
	bool held; /* one detach key was pressed: a second detaches */
	uint64_t held_at;
	uint64_t typed_at; /* when stdin last had something */
	bool detach;

	/* The end: the session exited (from an event or attach's state);
	 * its exit and final end offset come from the event or pty.list. */
	bool exited;
	bool exit_known;
	int exit_status;
	int exit_signal;  /* 0 for an exit code */
	char *exit_words; /* "SIGKILL (core)" */
	bool listed;      /* a pty.list is on its way */
	bool end_known;
	uint64_t end;
	uint64_t end_deadline;
	bool closed;
};

static void
cli_attach_pack_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_attach *a = ctx;
	bool from = a->started || a->from_set;

	msgpack_pack_map(pk, 3 + from);
	proto_pack_kv_str(pk, "id", a->id);
	proto_pack_kv_bool(pk, "readonly", a->readonly);
	/* The screen only the first time: after a reconnection the bytes
	 * from next on redraw it exactly. */
	proto_pack_kv_str(
	    pk, "mode", !a->started && a->screen ? "screen" : "bytes");
	if (from)
		proto_pack_kv_u64(
		    pk, "from_offset", a->started ? a->next : a->from);
}

/* Sends a request without waiting for its answer. For pty.input, ctx
 * is the struct cli_pty_args whose data is kept until the answer. */
static int
cli_attach_push(struct cli_attach *a, const char *op, enum cli_attach_req req,
    cli_conn_pack_cb pack, void *ctx, char **cause)
{
	struct cli_pty_args *args = ctx;
	size_t slot;
	int status;

	if (a->npend == CLI_ATTACH_PENDING_MAX)
		log_fatal("%s: too many requests in flight", __func__);
	status = cli_conn_push(a->conn, a->rid, op, pack, ctx, cause);
	if (status != CLI_CONN_OK)
		return status;
	slot = (a->phead + a->npend++) % CLI_ATTACH_PENDING_MAX;
	a->pend[slot].id = a->rid++;
	a->pend[slot].req = req;
	a->pend[slot].data = NULL;
	a->pend[slot].len = 0;
	if (req == CLI_ATTACH_REQ_INPUT) {
		a->pend[slot].data = xmalloc(args->len);
		memcpy(a->pend[slot].data, args->data, args->len);
		a->pend[slot].len = args->len;
		a->unanswered += args->len;
	}
	return CLI_CONN_OK;
}

/* The requests in flight on a lost connection: whether their input
 * arrived cannot be known, so it is not sent twice. */
static void
cli_attach_forget(struct cli_attach *a)
{
	while (a->npend > 0) {
		free(a->pend[a->phead].data);
		a->phead = (a->phead + 1) % CLI_ATTACH_PENDING_MAX;
		a->npend--;
	}
	a->phead = 0;
	a->unanswered = 0;
	a->listed = false;
}

/* The exit is known but not yet the end of the output: pty.list says
 * where the output ends, once the session has exited. */
static int
cli_attach_ask_end(struct cli_attach *a, char **cause)
{
	int status;

	/* With the queue full, the next message handled asks again. */
	if (!a->exited || a->end_known || a->listed || a->conn == NULL ||
	    a->npend == CLI_ATTACH_PENDING_MAX)
		return CLI_CONN_OK;
	status = cli_attach_push(
	    a, "pty.list", CLI_ATTACH_REQ_LIST, NULL, NULL, cause);
	if (status == CLI_CONN_OK)
		a->listed = true;
	return status;
}

static void
cli_attach_set_exit(struct cli_attach *a, const msgpack_object *e)
{
	if (a->exit_known)
		return;
	a->exit_signal = cli_exit_status(e, &a->exit_status);
	if ((a->exit_known = a->exit_signal >= 0))
		a->exit_words = cli_print_exit(e);
}

/* The attach response: where the output starts, and maybe a screen to
 * draw first. */
static int
cli_attach_started(struct cli_attach *a, const msgpack_object *r, char **cause)
{
	const msgpack_object *screen = proto_map_get(r, "screen");
	uint64_t offset, lost = 0;
	char state[16] = "";
	int status;

	if (proto_arg_u64(r, "offset", &offset) != 1) {
		*cause = xstrdup("pty.attach answered without an offset");
		return CLI_CONN_PROTOCOL;
	}
	proto_arg_u64(r, "lost", &lost);
	proto_arg_str(r, "state", state, sizeof state);
	if (lost > 0)
		cli_attach_note("[lost %" PRIu64 " bytes]", lost);
	if (!a->started && screen != NULL &&
	    screen->type == MSGPACK_OBJECT_BIN &&
	    (status = cli_attach_write(screen->via.bin.ptr,
	         screen->via.bin.size, cause)) != CLI_CONN_OK)
		return status;
	if (!a->started || offset > a->next)
		a->next = offset;
	a->started = true;
	if (strcmp(state, "exited") == 0)
		a->exited = true;
	return cli_attach_ask_end(a, cause);
}

/* A request answered before anything else goes: an error answer is a
 * failure (CLI_CONN_ANSWERED). */
static int
cli_attach_call(struct cli_attach *a, const char *op, cli_conn_pack_cb pack,
    void *ctx, const struct proto_msg **respp, char **cause)
{
	return cli_conn_call(
	    a->conn, op, pack, ctx, a->cli->timeout_ms, respp, cause);
}

/* Connects, subscribes to the events (live ones: an exit that came
 * before is attach's state), sizes the session to the terminal and
 * attaches from next. Answers in between wait in cli_conn, in order. */
static int
cli_attach_connect(struct cli_attach *a, char **cause)
{
	struct cli_pty_args args = {.id = a->id};
	const struct proto_msg *resp;
	int status;

	status = cli_open(a->cli, &a->conn, cause);
	if (status != CLI_CONN_OK) {
		a->conn = NULL;
		return status;
	}
	cli_attach_forget(a);
	status =
	    cli_attach_call(a, "events.subscribe", NULL, NULL, &resp, cause);
	cli_attach_winch = 0;
	if (status == CLI_CONN_OK && a->tty && !a->readonly &&
	    cli_pty_winsize(&args.cols, &args.rows))
		status = cli_attach_call(a, "pty.resize",
		    cli_pty_pack_resize_cb, &args, &resp, cause);
	if (status == CLI_CONN_OK)
		status = cli_attach_call(
		    a, "pty.attach", cli_attach_pack_cb, a, &resp, cause);
	if (status == CLI_CONN_OK)
		status = cli_attach_started(a, resp->result, cause);
	if (status != CLI_CONN_OK) {
		cli_conn_forget(&a->conn);
	}
	return status;
}

/* Keys on their way to the session; the detach key pressed twice in a
 * row detaches, pressed once it is passed on with what follows. */
static void
cli_attach_keys(struct cli_attach *a, const uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len && !a->detach; i++) {
		if (a->tty && a->key >= 0 && buf[i] == a->key) {
			if (a->held)
				a->detach = true;
			a->held = true;
			a->held_at = clock_mono_ms();
			continue;
		}
		if (a->held && !a->readonly)
			a->in[a->inlen++] = (uint8_t)a->key;
		a->held = false;
		if (!a->readonly)
			a->in[a->inlen++] = buf[i];
	}
}

/* Reads what stdin has, waiting up to ms for it (0: not at all). */
static void
cli_attach_read(struct cli_attach *a, int ms)
{
	struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
	uint8_t buf[CLI_PTY_INPUT_MAX];
	size_t room;
	ssize_t n;

	/* One byte of room for a held detach key that the read passes on. */
	room = a->inlen + 1 < CLI_PTY_INPUT_MAX
	    ? CLI_PTY_INPUT_MAX - a->inlen - 1
	    : 0;
	if (a->in_eof || room == 0) {
		if (ms > 0)
			poll(NULL, 0, ms);
		return;
	}
	if (poll(&pfd, 1, ms) <= 0)
		return;
	n = read(STDIN_FILENO, buf, room);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* Output goes on; keys cannot come any more. */
		a->in_eof = true;
		return;
	}
	a->typed_at = clock_mono_ms();
	cli_attach_keys(a, buf, (size_t)n);
}

/* Sends what is due: a resize after SIGWINCH, and the keys read, as far
 * as CLI_ATTACH_PIPE_BYTES and a pause after a refusal let them. */
static int
cli_attach_flush(void *arg, char **cause)
{
	struct cli_attach *a = arg;
	struct cli_pty_args args = {.id = a->id};
	int status;

	if (a->held && clock_mono_ms() - a->held_at >= CLI_ATTACH_HOLD_MS) {
		a->held = false;
		if (!a->readonly)
			a->in[a->inlen++] = (uint8_t)a->key;
	}
	if (cli_attach_winch && a->npend < CLI_ATTACH_PENDING_MAX) {
		cli_attach_winch = 0;
		if (a->tty && !a->readonly &&
		    cli_pty_winsize(&args.cols, &args.rows) &&
		    (status = cli_attach_push(a, "pty.resize",
		         CLI_ATTACH_REQ_RESIZE, cli_pty_pack_resize_cb, &args,
		         cause)) != CLI_CONN_OK)
			return status;
	}
	args.data = a->in;
	args.len = a->inlen > CLI_PTY_INPUT_MAX ? CLI_PTY_INPUT_MAX : a->inlen;
	if (a->inlen == 0 || a->npend == CLI_ATTACH_PENDING_MAX ||
	    clock_mono_ms() < a->retry_at ||
	    (a->unanswered > 0 &&
	        a->unanswered + args.len > CLI_ATTACH_PIPE_BYTES))
		return CLI_CONN_OK;
	status = cli_attach_push(a, "pty.input", CLI_ATTACH_REQ_INPUT,
	    cli_pty_pack_input_cb, &args, cause);
	if (status != CLI_CONN_OK)
		return status;
	a->inlen -= args.len;
	memmove(a->in, a->in + args.len, a->inlen);
	a->requeued -= a->requeued < args.len ? a->requeued : args.len;
	return CLI_CONN_OK;
}

/* A refused pty.input goes back in front of the keys not yet sent, after
 * those refused before it, and waits a while. */
static void
cli_attach_requeue(struct cli_attach *a, const uint8_t *data, size_t len)
{
	if (a->inlen + len > sizeof a->in)
		log_fatal("%s: %zu bytes over", __func__, a->inlen + len);
	memmove(a->in + a->requeued + len, a->in + a->requeued,
	    a->inlen - a->requeued);
	memcpy(a->in + a->requeued, data, len);
	a->inlen += len;
	a->requeued += len;
	a->retry_ms =
	    a->retry_ms == 0 ? CLI_ATTACH_RETRY_MIN_MS : a->retry_ms * 2;
	if (a->retry_ms > CLI_ATTACH_RETRY_MAX_MS)
		a->retry_ms = CLI_ATTACH_RETRY_MAX_MS;
	a->retry_at = clock_mono_ms() + (uint64_t)a->retry_ms;
}

/* One data message: the part past next goes to stdout. A jump forward is
 * output the ring overwrote before this viewer read it. */
static int
cli_attach_data(struct cli_attach *a, const struct proto_msg *m, char **cause)
{
	uint64_t skip;

	if (strcmp(m->stream, a->stream) != 0 ||
	    m->offset + m->nbytes <= a->next)
		return CLI_CONN_OK;
	if (m->offset > a->next) {
		cli_attach_note(
		    "[lost %" PRIu64 " bytes]", m->offset - a->next);
		a->next = m->offset;
	}
	skip = a->next - m->offset;
	a->next = m->offset + m->nbytes;
	return cli_attach_write(
	    (const uint8_t *)m->bytes + skip, m->nbytes - skip, cause);
}

static void
cli_attach_event(struct cli_attach *a, const struct proto_msg *m)
{
	char id[CLI_PTY_ID_MAX + 1];

	if (proto_arg_str(m->data, "id", id, sizeof id) != 1 ||
	    strcmp(id, a->id) != 0)
		return;
	if (strcmp(m->kind, "pty.exited") == 0) {
		a->exited = true;
		cli_attach_set_exit(a, m->data);
	} else if (strcmp(m->kind, "pty.closed") == 0)
		a->closed = true;
}

/* pty.list's answer: the session's exit and where its output ends. */
static void
cli_attach_listed(struct cli_attach *a, const msgpack_object *result)
{
	const msgpack_object *list = proto_map_get(result, "sessions"), *s;
	char id[CLI_PTY_ID_MAX + 1], state[16];
	uint32_t i;

	a->listed = false;
	a->end_known = true;
	a->end = a->next;
	a->end_deadline = clock_mono_ms() + (uint64_t)a->cli->timeout_ms;
	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY)
		return;
	for (i = 0; i < list->via.array.size; i++) {
		s = &list->via.array.ptr[i];
		if (proto_arg_str(s, "id", id, sizeof id) != 1 ||
		    strcmp(id, a->id) != 0)
			continue;
		state[0] = '\0';
		proto_arg_str(s, "state", state, sizeof state);
		if (strcmp(state, "exited") != 0) {
			/* Not yet (it cannot be, after the event): ask again
			 * when the event comes. */
			a->end_known = false;
			return;
		}
		proto_arg_u64(s, "bytes", &a->end);
		cli_attach_set_exit(a, proto_map_get(s, "exit"));
	}
}

/* The answer to the oldest request sent without waiting. */
static int
cli_attach_answer(struct cli_attach *a, const struct proto_msg *m, char **cause)
{
	enum cli_attach_req req;
	uint8_t *data;
	size_t len;

	if (a->npend == 0 || a->pend[a->phead].id != m->id)
		return CLI_CONN_OK;
	req = a->pend[a->phead].req;
	data = a->pend[a->phead].data;
	len = a->pend[a->phead].len;
	a->phead = (a->phead + 1) % CLI_ATTACH_PENDING_MAX;
	a->npend--;
	a->unanswered -= len;
	if (req == CLI_ATTACH_REQ_INPUT && !m->ok &&
	    strcmp(m->err_code, PROTO_E_UNAVAILABLE) == 0)
		cli_attach_requeue(a, data, len);
	else if (req == CLI_ATTACH_REQ_INPUT && m->ok)
		a->retry_ms = 0;
	free(data);
	if (m->ok) {
		if (req == CLI_ATTACH_REQ_LIST)
			cli_attach_listed(a, m->result);
		return CLI_CONN_OK;
	}
	/* Refused for now, or too late: the session has exited. */
	if (req == CLI_ATTACH_REQ_INPUT &&
	    (strcmp(m->err_code, PROTO_E_UNAVAILABLE) == 0 ||
	        strcmp(m->err_code, PROTO_E_CONFLICT) == 0))
		return CLI_CONN_OK;
	/* The session is gone: nothing more to show or to send. */
	if (strcmp(m->err_code, PROTO_E_NOT_FOUND) == 0)
		return cli_conn_refused(m, cause);
	cli_attach_note("berth: %s: %s: %s",
	    req == CLI_ATTACH_REQ_INPUT      ? "pty.input"
	        : req == CLI_ATTACH_REQ_LIST ? "pty.list"
	                                     : "pty.resize",
	    m->err_code, m->err_message);
	if (req == CLI_ATTACH_REQ_LIST)
		cli_attach_listed(a, NULL);
	return CLI_CONN_OK;
}

static int
cli_attach_handle(void *arg, const struct proto_msg *m, char **cause)
{
	struct cli_attach *a = arg;
	switch (m->type) {
	case PROTO_DATA: return cli_attach_data(a, m, cause);
	case PROTO_EVENT: cli_attach_event(a, m); break;
	case PROTO_RESPONSE: return cli_attach_answer(a, m, cause);
	case PROTO_REQUEST: break;
	}
	return cli_attach_ask_end(a, cause);
}

/* The session has exited and all its output is out (or the wait for the
 * rest has run out, or the session is gone). */
static bool
cli_attach_ended(struct cli_attach *a)
{
	/* Closed: no more output will come. */
	if (a->closed)
		return true;
	return a->exited && a->end_known &&
	    (a->next >= a->end || clock_mono_ms() >= a->end_deadline);
}

static int
cli_attach_retry_cb(void *arg, char **cause)
{
	return cli_attach_connect(arg, cause);
}

/* Between tries the keys typed are read, to be sent once attached, and
 * the detach key ends the outage. */
static int
cli_attach_pause_cb(void *arg, int ms)
{
	struct cli_attach *a = arg;
	uint64_t until = clock_mono_ms() + (uint64_t)ms;

	while (!a->detach && clock_mono_ms() < until)
		cli_attach_read(a, (int)(until - clock_mono_ms()));
	return a->detach ? CLI_CONN_INTERRUPTED : CLI_CONN_OK;
}

/* After a lost connection (why says how; taken): a viewer tries until
 * attached again, or a failure for good (the token, an error answer), or
 * the detach key, which the loop then sees. */
static int
cli_attach_reconnect(struct cli_attach *a, char *why, char **cause)
{
	struct cli_xfer_outage o = {.forever = true,
	    .retry = cli_attach_retry_cb,
	    .pause = cli_attach_pause_cb,
	    .arg = a};
	int status;

	cli_attach_note("berth: %s; reconnecting", why);
	status = cli_xfer_mend(a->cli, &o, why, cause);
	if (status == CLI_CONN_OK)
		cli_attach_note(
		    "[reattached to %s at offset %" PRIu64 "]", a->id, a->next);
	else if (a->detach) {
		free(*cause);
		status = CLI_CONN_OK;
	}
	return status;
}

static int
cli_attach_detach(struct cli_attach *a)
{
	struct cli_pty_args args = {.id = a->id};
	const struct proto_msg *resp;
	char *cause = NULL;

	/* Keys typed before the detach key still go. */
	if (a->conn != NULL && a->inlen > 0 &&
	    a->npend < CLI_ATTACH_PENDING_MAX) {
		args.data = a->in;
		args.len =
		    a->inlen > CLI_PTY_INPUT_MAX ? CLI_PTY_INPUT_MAX : a->inlen;
		if (cli_attach_push(a, "pty.input", CLI_ATTACH_REQ_INPUT,
		        cli_pty_pack_input_cb, &args, &cause) != CLI_CONN_OK)
			free(cause);
		cause = NULL;
	}
	if (a->conn != NULL &&
	    cli_conn_request(a->conn, "pty.detach", cli_pty_pack_id_cb, &args,
	        a->cli->timeout_ms, &resp, &cause) != CLI_CONN_OK)
		free(cause);
	cli_conn_forget(&a->conn);
	cli_attach_unraw();
	fprintf(stderr, "[detached from %s]\n", a->id);
	return CLI_EXIT_OK;
}

static int
cli_attach_finish(struct cli_attach *a)
{
	cli_conn_forget(&a->conn);
	cli_attach_unraw();
	if (!a->exit_known) {
		fprintf(stderr, "[%s %s]\n", a->id,
		    a->closed ? "was closed" : "exited");
		return CLI_EXIT_FAILED;
	}
	if (a->exit_signal > 0)
		fprintf(stderr, "[%s exited with status %d (%s)]\n", a->id,
		    a->exit_status, a->exit_words);
	else
		fprintf(stderr, "[%s exited with status %d]\n", a->id,
		    a->exit_status);
	return a->exit_status;
}

static int
cli_attach_fail(struct cli_attach *a, int status, char *cause)
{
	cli_conn_forget(&a->conn);
	cli_attach_unraw();
	return cli_fail(status, cause);
}

/* How long the connection may be waited on before stdin's next turn. */
static int
cli_attach_slice(void *arg)
{
	struct cli_attach *a = arg;
	if (a->in_eof)
		return CLI_ATTACH_SLICE_NOKEYS_MS;
	if (a->held || a->inlen > 0 ||
	    clock_mono_ms() - a->typed_at < CLI_ATTACH_TYPING_MS)
		return CLI_ATTACH_SLICE_MS;
	return CLI_ATTACH_SLICE_IDLE_MS;
}

static const struct cli_xfer_talk cli_attach_talk = {
    .flush = cli_attach_flush,
    .slice = cli_attach_slice,
    .handle = cli_attach_handle,
};

/*
 * The attachment's life: keys to the session, output to stdout, until
 * the detach key, the session's exit, or a failure that reconnecting
 * cannot mend. The connection wakes no wait on stdin, so the two take
 * turns: stdin is looked at without waiting, then the connection is
 * waited on for a slice at most. Output is written as it arrives.
 */
static int
cli_attach_loop(struct cli_attach *a)
{
	char *cause;
	int status;

	for (;;) {
		if (a->detach)
			return cli_attach_detach(a);
		if (cli_attach_ended(a))
			return cli_attach_finish(a);
		cli_attach_read(a, 0);
		if (a->detach)
			continue;
		status = cli_xfer_turn(a->conn, &cli_attach_talk, a, &cause);
		if (status == CLI_CONN_OK)
			continue;
		if (status != CLI_CONN_LOST)
			return cli_attach_fail(a, status, cause);
		cli_conn_forget(&a->conn);
		if ((status = cli_attach_reconnect(a, cause, &cause)) !=
		    CLI_CONN_OK)
			return cli_attach_fail(a, status, cause);
	}
}

/* KEY: "^X" (Ctrl-X; "^?" is DEL), one character, or "none". */
static int
cli_attach_parse_key(struct cli *cli, const char *arg, int *key)
{
	if (strcmp(arg, "none") == 0)
		*key = -1;
	else if (arg[0] == '^' && arg[1] == '?' && arg[2] == '\0')
		*key = 0x7f;
	else if (arg[0] == '^' && arg[1] >= '@' && arg[1] <= '~' &&
	    arg[2] == '\0')
		*key = arg[1] & 0x1f;
	else if (arg[0] != '\0' && arg[1] == '\0')
		*key = (unsigned char)arg[0];
	else
		return cli_usage(cli,
		    "--detach-key wants ^X, one character or none: %s", arg);
	return CLI_EXIT_OK;
}

static int
cli_attach_args(struct cli_attach *a, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"from", required_argument, NULL, 'f'},
	    {"screen", no_argument, NULL, 'S'},
	    {"read-only", no_argument, NULL, 'R'},
	    {"detach-key", required_argument, NULL, 'k'},
	    {NULL, 0, NULL, 0},
	};
	struct cli *cli = a->cli;
	char *word;
	int c, status = CLI_EXIT_OK;

	while (status == CLI_EXIT_OK &&
	    (c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case 'f':
			status = cli_pty_uint(
			    cli, "--from", optarg, 0, INT64_MAX, &a->from);
			a->from_set = true;
			break;
		case 'S': a->screen = true; break;
		case 'R': a->readonly = true; break;
		case 'k':
			status = cli_attach_parse_key(cli, optarg, &a->key);
			break;
		case CLI_WORD:
			if (a->id != NULL)
				return cli_usage(
				    cli, "too many arguments: %s", word);
			a->id = word;
			break;
		}
	}
	if (status != CLI_EXIT_OK)
		return status;
	if (a->id == NULL)
		return cli_usage(cli, "attach wants a session id");
	if (a->from_set && a->screen)
		return cli_usage(cli, "--from and --screen exclude each other");
	if ((status = cli_pty_id(cli, a->id)) != CLI_EXIT_OK)
		return status;
	return cli_ready(cli);
}

static int
cli_attach_run(struct cli *cli, int argc, char **argv)
{
	struct cli_attach *a = xcalloc(1, sizeof *a);
	char *cause;
	int status;

	a->cli = cli;
	a->key = CLI_ATTACH_DETACH_KEY;
	a->rid = CLI_CONN_RAW_ID;
	if ((status = cli_attach_args(a, argc, argv)) != CLI_EXIT_OK) {
		free(a);
		return status;
	}
	a->stream = xasprintf("pty/%s", a->id);
	a->tty = isatty(STDIN_FILENO);
	/* A viewer that is not a terminal has no keys to read. */
	a->in_eof = a->readonly && !a->tty;
	cli_attach_signals();
	if ((status = cli_attach_connect(a, &cause)) != CLI_CONN_OK)
		status = cli_attach_fail(a, status, cause);
	else if (a->tty && cli_attach_enraw(&cause) != 0)
		status = cli_attach_fail(a, CLI_CONN_ANSWERED, cause);
	else
		status = cli_attach_loop(a);
	cli_attach_forget(a);
	free(a->exit_words);
	free(a->stream);
	free(a);
	return status;
}

const struct cli_cmd_entry cli_attach_entry = {
    .name = "attach",
    .usage = "ID [--from OFFSET | --screen] [--read-only] "
             "[--detach-key KEY]",
    .exec = cli_attach_run,
};
