/* pty: terminal sessions that outlive their viewers (see pty.h). Owns the
 * sessions, their PTY masters, rings, berth-vt children and viewers. */
#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "args.h"
#include "catalog.h"
#include "child.h"
#include "clock.h"
#include "events.h"
#include "frame.h"
#include "launch.h"
#include "log.h"
#include "pty.h"
#include "rand.h"
#include "stream.h"
#include "xmalloc.h"

#define PTY_CHUNK STREAM_CHUNK
/* Input waiting for the PTY to take it, per session. */
#define PTY_INPUT_BACKLOG (1u << 20)
/* After the process exits, how long its output may still drain. */
#define PTY_DRAIN_MS 1000
/* After SIGHUP on close, how long until SIGKILL. */
#define PTY_KILL_MS 2000
/* How long a screen snapshot from berth-vt may take. */
#define PTY_SNAPSHOT_MS 2000
#define PTY_SNAPSHOT_MAX (16u << 20)
/* Output berth-vt may lag behind before it is dropped. */
#define PTY_VT_BACKLOG (8u << 20)

struct pty_session {
	char id[PTY_ID_LEN + 1];
	char **argv;
	pid_t pid;
	int master;
	struct event *rev, *wev;
	struct evbuffer *input;
	struct stream out; /* its viewers are the session's */
	unsigned cols, rows;
	bool exited, eio, reported, closing;
	const char *close_reason; /* "closed" or "ttl", once closing */
	int status;
	uint64_t created;
	unsigned ttl;
	struct event *ttl_timer, *drain_timer, *kill_timer;
	pid_t vt_pid; /* berth-vt, 0 if none */
	int vt_in, vt_out;
	struct evbuffer *vt_queue; /* records berth-vt has not taken yet */
	struct event *vt_wev;
	/* Its limits and cgroup: its own, or its runtime's (lim). */
	struct enforce own, *lim;
	pty_exit_fn on_exit; /* told once the exit is reported */
	void *on_exit_arg;
	struct pty_session *next;
};

static struct event_base *pty_base;
static struct pty_session *pty_sessions;

void
pty_init(struct event_base *base)
{
	pty_base = base;
}

static struct pty_session *
pty_find(const char *id)
{
	struct pty_session *s;

	for (s = pty_sessions; s != NULL; s = s->next)
		if (strcmp(s->id, id) == 0 && !s->closing)
			return s;
	return NULL;
}

/* The session named by "id", or NULL after an error reply. */
static struct pty_session *
pty_arg_session(struct server_conn *c, const struct proto_msg *m)
{
	char id[PTY_ID_LEN + 2];
	struct pty_session *s;

	if (proto_arg_str(m->args, "id", id, sizeof id) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s needs \"id\" (a session id)", m->op);
		return NULL;
	}
	if ((s = pty_find(id)) == NULL)
		server_reply_error(
		    c, m->id, PROTO_E_NOT_FOUND, "no pty session \"%s\"", id);
	return s;
}

static void
pty_emit_id(const char *kind, const struct pty_session *s, const char *key,
    uint64_t val)
{
	msgpack_packer *pk = events_begin(kind);

	msgpack_pack_map(pk, key != NULL ? 2 : 1);
	proto_pack_kv_str(pk, "id", s->id);
	if (key != NULL)
		proto_pack_kv_u64(pk, key, val);
	events_commit();
}

/* ---- berth-vt: the session's terminal model ---- */

static void pty_vt_close(struct pty_session *s);

static void
pty_vt_exit_cb(pid_t pid, int status, void *arg)
{
	struct pty_session *s = arg;

	(void)status;
	if (s->vt_pid == pid) {
		log_warn("pty %s: berth-vt exited; it is rebuilt when a screen "
		         "is asked for",
		    s->id);
		s->vt_pid = 0;
		pty_vt_close(s);
	}
}

static void
pty_vt_close(struct pty_session *s)
{
	if (s->vt_wev != NULL)
		event_free(s->vt_wev);
	s->vt_wev = NULL;
	if (s->vt_queue != NULL)
		evbuffer_free(s->vt_queue);
	s->vt_queue = NULL;
	if (s->vt_in >= 0)
		close(s->vt_in);
	if (s->vt_out >= 0)
		close(s->vt_out);
	s->vt_in = s->vt_out = -1;
	if (s->vt_pid > 0) {
		child_forget(s->vt_pid);
		kill(s->vt_pid, SIGKILL);
	}
	s->vt_pid = 0;
}

static void
pty_vt_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pty_session *s = arg;

	(void)what;
	if (evbuffer_write(s->vt_queue, fd) < 0 && errno != EAGAIN &&
	    errno != EINTR) {
		log_warn("pty %s: berth-vt: %s; dropping it", s->id,
		    strerror(errno));
		pty_vt_close(s);
		return;
	}
	if (evbuffer_get_length(s->vt_queue) > 0)
		event_add(s->vt_wev, NULL);
}

/*
 * Queues one record for berth-vt and writes what the pipe takes. The PTY
 * is never held up by its model: if berth-vt falls this far behind, it
 * is dropped (screen mode then answers unavailable).
 */
static void
pty_vt_record(struct pty_session *s, char type, const void *data, size_t len)
{
	uint8_t hdr[1 + FRAME_HDR];

	if (s->vt_pid == 0)
		return;
	hdr[0] = (uint8_t)type;
	frame_header(hdr + 1, (uint32_t)len);
	evbuffer_add(s->vt_queue, hdr, sizeof hdr);
	evbuffer_add(s->vt_queue, data, len);
	if (evbuffer_get_length(s->vt_queue) > PTY_VT_BACKLOG) {
		log_info("pty %s: berth-vt fell behind; it is rebuilt when a "
		         "screen is asked for",
		    s->id);
		pty_vt_close(s);
		return;
	}
	pty_vt_write_cb(s->vt_in, EV_WRITE, s);
}

/* Waits (up to deadline) until berth-vt has taken every queued record. */
static int
pty_vt_flush(struct pty_session *s, uint64_t deadline)
{
	struct pollfd pfd = {s->vt_in, POLLOUT, 0};
	uint64_t now;

	while (s->vt_pid != 0 && evbuffer_get_length(s->vt_queue) > 0) {
		now = clock_mono_ms();
		if (now >= deadline || poll(&pfd, 1, (int)(deadline - now)) < 0)
			return -1;
		if (evbuffer_write(s->vt_queue, s->vt_in) < 0 &&
		    errno != EAGAIN && errno != EINTR)
			return -1;
	}
	return s->vt_pid != 0 ? 0 : -1;
}

static void
pty_vt_start(struct pty_session *s)
{
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	char cols[8], rows[8], *cause = NULL;
	char *path = child_berth_program("berth-vt");
	char *argv[] = {path, cols, rows, NULL};
	int in[2], out[2];

	s->vt_in = s->vt_out = -1;
	snprintf(cols, sizeof cols, "%u", s->cols);
	snprintf(rows, sizeof rows, "%u", s->rows);
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
		log_warn("pty %s: pipe: %s", s->id, strerror(errno));
		free(path);
		return;
	}
	spec.path = path;
	spec.argv = argv;
	spec.stdout_fd = out[1];
	/* berth-vt reads its records on stdin and answers on stdout. */
	spec.extra_fd = in[0];
	spec.extra_fd_at = STDIN_FILENO;
	s->vt_pid = child_spawn(&spec, pty_vt_exit_cb, s, &cause);
	close(in[0]);
	close(out[1]);
	free(path);
	if (s->vt_pid < 0) {
		log_warn(
		    "pty %s: %s; screen mode is unavailable", s->id, cause);
		free(cause);
		s->vt_pid = 0;
		close(in[1]);
		close(out[0]);
		return;
	}
	s->vt_in = in[1];
	s->vt_out = out[0];
	fcntl(s->vt_in, F_SETFL, O_NONBLOCK);
	s->vt_queue = evbuffer_new();
	s->vt_wev = event_new(pty_base, s->vt_in, EV_WRITE, pty_vt_write_cb, s);
}

/*
 * A berth-vt that fell behind a flood, or died, is rebuilt when a screen
 * is asked for: a new one is fed what the ring still holds. A screen
 * program repaints far more often than a ring's worth of output, so the
 * picture comes out right unless the ring lost a mode switch it needed.
 */
static int
pty_vt_resync(struct pty_session *s, uint64_t deadline)
{
	const uint8_t *data;
	uint64_t at = ring_start(&s->out.ring);
	size_t n;

	pty_vt_start(s);
	while (s->vt_pid != 0 &&
	    (n = ring_read(&s->out.ring, at, PTY_CHUNK, &data, &at)) > 0) {
		pty_vt_record(s, 'D', data, n);
		if (pty_vt_flush(s, deadline) < 0)
			return -1;
		at += n;
	}
	return s->vt_pid != 0 ? 0 : -1;
}

/* Reads one snapshot answer: u32 length + bytes. NULL on failure. */
static uint8_t *
pty_vt_snapshot(struct pty_session *s, size_t *len)
{
	uint64_t deadline = clock_mono_ms() + PTY_SNAPSHOT_MS;
	struct pollfd pfd = {0, POLLIN, 0};
	uint8_t hdr[FRAME_HDR], *buf = NULL;
	size_t have = 0, want = FRAME_HDR;
	ssize_t n;

	if (s->vt_pid == 0 && pty_vt_resync(s, deadline) < 0)
		goto fail;
	pty_vt_record(s, 'S', "", 0);
	if (pty_vt_flush(s, deadline) < 0)
		goto fail;
	pfd.fd = s->vt_out;
	while (have < want) {
		uint64_t now = clock_mono_ms();
		if (now >= deadline ||
		    poll(&pfd, 1, (int)(deadline - now)) <= 0)
			goto fail;
		n = read(s->vt_out,
		    buf == NULL ? hdr + have : buf + have - FRAME_HDR,
		    buf == NULL ? FRAME_HDR - have : want - have);
		if (n <= 0)
			goto fail;
		have += (size_t)n;
		if (buf == NULL && have == FRAME_HDR) {
			want = FRAME_HDR + frame_length(hdr);
			if (want - FRAME_HDR > PTY_SNAPSHOT_MAX)
				goto fail;
			buf = xmalloc(want - FRAME_HDR + 1);
		}
	}
	*len = want - FRAME_HDR;
	return buf;
fail:
	log_warn("pty %s: no screen from berth-vt", s->id);
	free(buf);
	pty_vt_close(s);
	return NULL;
}

/* ---- viewers ---- */

static void pty_close_session(struct pty_session *s, const char *reason);

static void
pty_ttl_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pty_close_session(arg, "ttl");
}

static void
pty_arm_ttl(struct pty_session *s)
{
	struct timeval tv = clock_tv((uint64_t)s->ttl * 1000);

	if (s->out.nviewers == 0 && !s->closing)
		evtimer_add(s->ttl_timer, &tv);
}

static void
pty_viewers_cb(struct stream *st, int delta, void *arg)
{
	struct pty_session *s = arg;

	(void)st;
	if (delta > 0) {
		evtimer_del(s->ttl_timer);
		return;
	}
	pty_emit_id(EV_PTY_DETACHED, s, "viewers", s->out.nviewers);
	pty_arm_ttl(s);
}

/* What reaches the ring (redacted, if asked) is what berth-vt models. */
static void
pty_bytes_cb(struct stream *st, const void *data, size_t len, void *arg)
{
	(void)st;
	pty_vt_record(arg, 'D', data, len);
}

/* ---- the PTY itself ---- */

static void
pty_report_exit(struct pty_session *s)
{
	msgpack_packer *pk;

	if (s->reported || !s->exited)
		return;
	s->reported = true;
	evtimer_del(s->drain_timer);
	pk = events_begin(EV_PTY_EXITED);
	msgpack_pack_map(pk, 2 + child_status_keys(s->status));
	proto_pack_kv_str(pk, "id", s->id);
	proto_pack_kv_u64(pk, "pid", (uint64_t)s->pid);
	child_pack_status(pk, s->status);
	events_commit();
	if (s->on_exit != NULL)
		s->on_exit(s->id, s->pid, s->status, s->on_exit_arg);
	if (s->closing)
		pty_close_session(s, s->close_reason);
}

static void
pty_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pty_session *s = arg;
	uint8_t buf[PTY_CHUNK];
	ssize_t n;

	(void)what;
	n = read(fd, buf, sizeof buf);
	if (n > 0) {
		stream_write(&s->out, buf, (size_t)n);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* EIO: the last slave is closed; everything written has been read. */
	s->eio = true;
	event_del(s->rev);
	stream_end(&s->out);
	if (s->exited)
		pty_report_exit(s);
}

static void
pty_drain_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	/* A grandchild still holds the slave: report the exit anyway. */
	pty_report_exit(arg);
}

static void
pty_exit_cb(pid_t pid, int status, void *arg)
{
	struct pty_session *s = arg;
	struct timeval tv = clock_tv(PTY_DRAIN_MS);

	(void)pid;
	s->exited = true;
	s->status = status;
	if (s->eio)
		pty_report_exit(s);
	else
		evtimer_add(s->drain_timer, &tv);
}

static void
pty_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pty_session *s = arg;

	(void)what;
	if (evbuffer_write(s->input, fd) < 0 && errno != EAGAIN) {
		evbuffer_drain(s->input, evbuffer_get_length(s->input));
		return;
	}
	if (evbuffer_get_length(s->input) > 0)
		event_add(s->wev, NULL);
}

/* SIGKILL to every process of s: by its cgroup, else its group. */
static void
pty_kill(struct pty_session *s)
{
	if (!enforce_kill(s->lim) && !s->exited)
		kill(-s->pid, SIGKILL);
}

static void
pty_kill_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pty_kill(arg);
}

static void
pty_free(struct pty_session *s)
{
	struct pty_session **pp;

	for (pp = &pty_sessions; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	stream_free(&s->out);
	if (!s->exited)
		child_forget(s->pid);
	pty_vt_close(s);
	event_free(s->rev);
	event_free(s->wev);
	event_free(s->ttl_timer);
	event_free(s->drain_timer);
	event_free(s->kill_timer);
	evbuffer_free(s->input);
	close(s->master);
	child_strv_free(s->argv);
	/* A closed session takes what it started with it. */
	if (s->closing && s->lim == &s->own)
		enforce_kill(&s->own);
	enforce_close(&s->own);
	free(s);
}

/* Ends a session: its process gets SIGHUP (SIGKILL later); the session
 * goes once the exit is reported, with the reason of the first close. */
static void
pty_close_session(struct pty_session *s, const char *reason)
{
	struct timeval tv = clock_tv(PTY_KILL_MS);
	msgpack_packer *pk;

	if (s->close_reason == NULL)
		s->close_reason = reason;
	if (!s->reported) {
		if (!s->closing) {
			s->closing = true;
			kill(-s->pid, SIGHUP);
			evtimer_add(s->kill_timer, &tv);
		}
		return;
	}
	pk = events_begin(EV_PTY_CLOSED);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "id", s->id);
	proto_pack_kv_str(pk, "reason", s->close_reason);
	events_commit();
	pty_free(s);
}

static void
pty_set_size(struct pty_session *s, unsigned cols, unsigned rows)
{
	struct winsize ws = {(unsigned short)rows, (unsigned short)cols, 0, 0};
	uint8_t z[4] = {(uint8_t)(cols >> 8), (uint8_t)cols,
	    (uint8_t)(rows >> 8), (uint8_t)rows};

	s->cols = cols;
	s->rows = rows;
	ioctl(s->master, TIOCSWINSZ, &ws);
	pty_vt_record(s, 'Z', z, sizeof z);
}

/* ---- ops ---- */

/* Opens the master and spawns l's program on its slave. */
static int
pty_spawn(struct pty_session *s, const struct launch *l, char **cause)
{
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	int slave;
	char *name;

	s->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (s->master < 0 || grantpt(s->master) != 0 ||
	    unlockpt(s->master) != 0 || (name = ptsname(s->master)) == NULL) {
		*cause = xasprintf("cannot open a pty: %s", strerror(errno));
		return -1;
	}
	slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0) {
		*cause = xasprintf("cannot open %s: %s", name, strerror(errno));
		return -1;
	}
	if (l->enforce != NULL)
		s->lim = l->enforce;
	else
		enforce_open(&s->own, "pty", s->id, &l->limits,
		    !l->has_user || l->uid == 0, l->uid);
	launch_spec(l, &spec);
	enforce_spec(s->lim, &spec);
	spec.use_tty = true;
	spec.tty_fd = slave;
	pty_set_size(s, s->cols, s->rows);
	s->pid = child_spawn(&spec, pty_exit_cb, s, cause);
	enforce_spawned(s->lim);
	close(slave);
	return s->pid < 0 ? -1 : 0;
}

/* A new session, not yet running: its id, ring and timers. */
static struct pty_session *
pty_new(unsigned cols, unsigned rows, unsigned ttl, size_t ringsz, bool redact)
{
	struct pty_session *s = xcalloc(1, sizeof *s);
	char name[PTY_ID_LEN + 8];

	rand_hex(s->id, PTY_ID_LEN / 2);
	s->cols = cols;
	s->rows = rows;
	s->ttl = ttl;
	s->created = proto_now_ms();
	s->master = s->vt_in = s->vt_out = -1;
	s->lim = &s->own;
	snprintf(name, sizeof name, "pty/%s", s->id);
	stream_init(&s->out, name, ringsz, false, redact, s);
	s->out.on_viewers = pty_viewers_cb;
	s->out.on_bytes = pty_bytes_cb;
	s->input = evbuffer_new();
	s->ttl_timer = evtimer_new(pty_base, pty_ttl_cb, s);
	s->drain_timer = evtimer_new(pty_base, pty_drain_cb, s);
	s->kill_timer = evtimer_new(pty_base, pty_kill_cb, s);
	return s;
}

/* Spawns l's program in a new session; its argv becomes the session's.
 * NULL with *cause if it cannot start. */
static struct pty_session *
pty_start(struct launch *l, const struct pty_opts *o, char **cause)
{
	struct pty_session *s;
	msgpack_packer *pk;

	s = pty_new(o->cols, o->rows, o->ttl, o->ring, o->redact);
	if (pty_spawn(s, l, cause) < 0) {
		s->exited = true;
		s->argv = xcalloc(1, sizeof *s->argv);
		s->rev = event_new(pty_base, -1, 0, pty_read_cb, s);
		s->wev = event_new(pty_base, -1, 0, pty_write_cb, s);
		pty_free(s);
		return NULL;
	}
	s->argv = l->argv;
	l->argv = NULL;
	s->on_exit = o->on_exit;
	s->on_exit_arg = o->on_exit_arg;
	s->rev = event_new(
	    pty_base, s->master, EV_READ | EV_PERSIST, pty_read_cb, s);
	s->wev = event_new(pty_base, s->master, EV_WRITE, pty_write_cb, s);
	event_add(s->rev, NULL);
	pty_vt_start(s);
	s->next = pty_sessions;
	pty_sessions = s;
	pty_arm_ttl(s);
	log_info("pty %s: %s, pid %ld", s->id, s->argv[0], (long)s->pid);

	pk = events_begin(EV_PTY_OPENED);
	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "id", s->id);
	proto_pack_kv_u64(pk, "pid", (uint64_t)s->pid);
	proto_pack_str(pk, "command");
	launch_pack_argv(pk, s->argv);
	events_commit();
	return s;
}

int
pty_open_launch(struct launch *l, const struct pty_opts *o,
    char id[PTY_ID_LEN + 1], pid_t *pid, char **cause)
{
	struct pty_session *s = pty_start(l, o, cause);

	if (s == NULL)
		return -1;
	memcpy(id, s->id, PTY_ID_LEN + 1);
	*pid = s->pid;
	return 0;
}

void
pty_op_open(struct server_conn *c, const struct proto_msg *m)
{
	uint64_t cols = 80, rows = 24, ttl = 3600, ringsz = PTY_RING_DEFAULT;
	char *cause = NULL, target[PTY_ID_LEN + 8];
	struct pty_opts o = {0};
	struct pty_session *s;
	struct launch l;
	msgpack_packer *pk;

	if (args_range(c, m, "cols", 1, PTY_SIZE_MAX, &cols) < 0 ||
	    args_range(c, m, "rows", 1, PTY_SIZE_MAX, &rows) < 0 ||
	    args_range(c, m, "ttl_detached", 1, 30 * 86400, &ttl) < 0 ||
	    args_range(c, m, "ring", PTY_RING_MIN, PTY_RING_MAX, &ringsz) < 0)
		return;
	if (args_flag(c, m, "redact", &o.redact) < 0)
		return;
	if (launch_parse(&l, c, m, LAUNCH_TERMINAL, "xterm-256color") < 0)
		return;
	o.cols = (unsigned)cols;
	o.rows = (unsigned)rows;
	o.ttl = (unsigned)ttl;
	o.ring = (size_t)ringsz;
	if ((s = pty_start(&l, &o, &cause)) == NULL) {
		launch_free(&l);
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", cause);
		free(cause);
		return;
	}
	snprintf(target, sizeof target, "pty/%s", s->id);
	secrets_grant_emit(&l.grant, target);
	launch_free(&l);

	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "id", s->id);
	proto_pack_kv_u64(pk, "pid", (uint64_t)s->pid);
	proto_pack_kv_u64(pk, "cols", s->cols);
	proto_pack_kv_u64(pk, "rows", s->rows);
	server_reply_end(c);
}

void
pty_op_attach(struct server_conn *c, const struct proto_msg *m)
{
	char mode[16] = "bytes";
	struct pty_session *s = pty_arg_session(c, m);
	struct stream_viewer *v;
	uint64_t from, lost = 0;
	uint8_t *screen = NULL;
	size_t screen_len = 0;
	bool readonly = false;
	msgpack_packer *pk;

	if (s == NULL)
		return;
	from = s->out.ring.end;
	if (proto_arg_u64(m->args, "from_offset", &from) < 0 ||
	    proto_arg_str(m->args, "mode", mode, sizeof mode) < 0 ||
	    proto_arg_bool(m->args, "readonly", &readonly) < 0 ||
	    (strcmp(mode, "bytes") != 0 && strcmp(mode, "screen") != 0)) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "pty.attach takes from_offset (an integer), mode "
		    "(\"bytes\" "
		    "or \"screen\") and readonly (a boolean)");
		return;
	}
	if (from > s->out.ring.end) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "from_offset %llu is past the end of the output (%llu)",
		    (unsigned long long)from,
		    (unsigned long long)s->out.ring.end);
		return;
	}
	if (strcmp(mode, "screen") == 0) {
		if ((screen = pty_vt_snapshot(s, &screen_len)) == NULL) {
			server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
			    "the screen of pty %s cannot be drawn", s->id);
			return;
		}
		from = s->out.ring.end;
	}
	v = stream_attach(&s->out, c, from, &lost);
	from = v->offset;
	v->readonly = readonly;
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, screen != NULL ? 8 : 7);
	proto_pack_kv_str(pk, "id", s->id);
	proto_pack_kv_u64(pk, "offset", from);
	proto_pack_kv_u64(pk, "lost", lost);
	proto_pack_kv_u64(pk, "end", s->out.ring.end);
	proto_pack_kv_u64(pk, "cols", s->cols);
	proto_pack_kv_u64(pk, "rows", s->rows);
	proto_pack_kv_str(pk, "state", s->reported ? "exited" : "running");
	if (screen != NULL) {
		proto_pack_str(pk, "screen");
		msgpack_pack_bin(pk, screen_len);
		msgpack_pack_bin_body(pk, screen, screen_len);
	}
	server_reply_end(c);
	free(screen);
	pty_emit_id(EV_PTY_ATTACHED, s, "viewers", s->out.nviewers);
	stream_viewer_pump(v);
}

void
pty_op_detach(struct server_conn *c, const struct proto_msg *m)
{
	struct pty_session *s = pty_arg_session(c, m);
	struct stream_viewer *v;

	if (s == NULL)
		return;
	if ((v = stream_viewer_of(&s->out, c)) != NULL)
		stream_detach(v);
	server_reply_empty(c, m->id);
}

/* Whether c may write to s: not if c attached to it read-only. */
static bool
pty_may_write(
    struct pty_session *s, struct server_conn *c, const struct proto_msg *m)
{
	struct stream_viewer *v = stream_viewer_of(&s->out, c);

	if (v != NULL && v->readonly) {
		server_reply_error(c, m->id, PROTO_E_FORBIDDEN,
		    "this connection attached to pty %s read-only", s->id);
		return false;
	}
	return true;
}

void
pty_op_input(struct server_conn *c, const struct proto_msg *m)
{
	struct pty_session *s = pty_arg_session(c, m);
	const msgpack_object *d;

	if (s == NULL || !pty_may_write(s, c, m))
		return;
	d = proto_map_get(m->args, "data");
	if (d == NULL || d->type != MSGPACK_OBJECT_BIN ||
	    d->via.bin.size > PTY_INPUT_MAX) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "pty.input needs \"data\" (bin, at most %u bytes)",
		    PTY_INPUT_MAX);
		return;
	}
	if (s->reported) {
		server_reply_error(
		    c, m->id, PROTO_E_CONFLICT, "pty %s has exited", s->id);
		return;
	}
	if (evbuffer_get_length(s->input) + d->via.bin.size >
	    PTY_INPUT_BACKLOG) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "pty %s is not reading its input", s->id);
		return;
	}
	evbuffer_add(s->input, d->via.bin.ptr, d->via.bin.size);
	pty_write_cb(s->master, EV_WRITE, s);
	server_reply_empty(c, m->id);
}

void
pty_op_resize(struct server_conn *c, const struct proto_msg *m)
{
	struct pty_session *s = pty_arg_session(c, m);
	uint64_t cols = 0, rows = 0;

	if (s == NULL || !pty_may_write(s, c, m))
		return;
	if (proto_arg_u64(m->args, "cols", &cols) <= 0 ||
	    proto_arg_u64(m->args, "rows", &rows) <= 0 || cols < 1 ||
	    rows < 1 || cols > PTY_SIZE_MAX || rows > PTY_SIZE_MAX) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "pty.resize needs cols and rows in 1-%d", PTY_SIZE_MAX);
		return;
	}
	if (s->reported) {
		server_reply_error(
		    c, m->id, PROTO_E_CONFLICT, "pty %s has exited", s->id);
		return;
	}
	pty_set_size(s, (unsigned)cols, (unsigned)rows);
	server_reply_empty(c, m->id);
}

void
pty_op_signal(struct server_conn *c, const struct proto_msg *m)
{
	struct pty_session *s = pty_arg_session(c, m);
	pid_t pgrp;
	int sig;

	if (s == NULL || !pty_may_write(s, c, m) || args_signal(c, m, &sig) < 0)
		return;
	if (s->reported) {
		server_reply_error(
		    c, m->id, PROTO_E_CONFLICT, "pty %s has exited", s->id);
		return;
	}
	/* The foreground job, as Ctrl-C at a terminal would reach it. */
	pgrp = tcgetpgrp(s->master);
	if (pgrp <= 0 || kill(-pgrp, sig) != 0)
		kill(-s->pid, sig);
	server_reply_empty(c, m->id);
}

void
pty_op_close(struct server_conn *c, const struct proto_msg *m)
{
	struct pty_session *s = pty_arg_session(c, m);

	if (s == NULL)
		return;
	server_reply_empty(c, m->id);
	pty_close_session(s, "closed");
}

int
pty_close(const char *id, const char *reason)
{
	struct pty_session *s = pty_find(id);

	if (s == NULL)
		return -1;
	pty_close_session(s, reason);
	return 0;
}

void
pty_op_list(struct server_conn *c, const struct proto_msg *m)
{
	msgpack_packer *pk = server_reply_begin(c, m->id);
	struct pty_session *s;
	size_t n = 0;

	for (s = pty_sessions; s != NULL; s = s->next)
		if (!s->closing)
			n++;
	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "sessions");
	msgpack_pack_array(pk, n);
	for (s = pty_sessions; s != NULL; s = s->next) {
		if (s->closing)
			continue;
		msgpack_pack_map(pk, 12);
		proto_pack_kv_str(pk, "id", s->id);
		proto_pack_str(pk, "limits");
		enforce_pack(pk, s->lim, NULL);
		proto_pack_str(pk, "command");
		launch_pack_argv(pk, s->argv);
		proto_pack_kv_u64(pk, "pid", (uint64_t)s->pid);
		proto_pack_kv_u64(pk, "cols", s->cols);
		proto_pack_kv_u64(pk, "rows", s->rows);
		proto_pack_kv_u64(pk, "viewers", s->out.nviewers);
		proto_pack_kv_u64(pk, "bytes", s->out.ring.end);
		proto_pack_kv_str(
		    pk, "state", s->reported ? "exited" : "running");
		proto_pack_str(pk, "exit");
		if (!s->reported)
			msgpack_pack_nil(pk);
		else
			child_pack_status_map(pk, s->status);
		proto_pack_kv_u64(pk, "created", s->created);
		proto_pack_kv_u64(pk, "ttl_detached", s->ttl);
	}
	server_reply_end(c);
	(void)m;
}

const struct enforce *
pty_enforce(const char *id)
{
	struct pty_session *s = pty_find(id);

	return s != NULL ? s->lim : NULL;
}

bool
pty_exists(const char *id)
{
	return pty_find(id) != NULL;
}

void
pty_shutdown(void)
{
	struct pty_session *s;

	for (s = pty_sessions; s != NULL; s = s->next)
		if (!s->exited)
			kill(-s->pid, SIGHUP);
	while (pty_sessions != NULL)
		pty_free(pty_sessions);
}
