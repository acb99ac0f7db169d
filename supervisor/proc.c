/* proc: commands run by the proc.* ops (see proc.h). Owns every process
 * record, its pipes, its two output streams and its waiters. */
#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "catalog.h"
#include "child.h"
#include "clock.h"
#include "events.h"
#include "inflight.h"
#include "launch.h"
#include "log.h"
#include "proc.h"
#include "rand.h"
#include "stream.h"
#include "xmalloc.h"

/* Input waiting for the process to take it. */
#define PROC_INPUT_BACKLOG (1u << 20)
/* After the exit, how long a grandchild may keep a pipe open. */
#define PROC_DRAIN_MS 1000
#define PROC_WAITERS_MAX 64
#define PROC_TAG_MAX 64
#define PROC_TIMEOUT_MAX (7ull * 86400 * 1000)

enum { PROC_STDOUT, PROC_STDERR, PROC_NOUT };
static const char *const proc_out_names[PROC_NOUT] = {"stdout", "stderr"};

struct proc;

/* One of the two output pipes; fd is -1 once it reached its end. */
struct proc_out {
	struct proc *p;
	int fd;
	struct event *ev;
	struct stream st;
};

/* A proc.wait not yet answered: the connection by serial, since it may
 * be gone by the time the process exits. */
struct proc_waiter {
	struct proc *p;
	uint64_t serial;
	uint64_t id;
	struct event *timer;
	struct proc_waiter *next;
};

struct proc {
	char id[PROC_ID_LEN + 1];
	char tag[PROC_TAG_MAX + 1];
	char **argv;
	pid_t pid;
	int in_fd; /* -1: stdin closed (or never a pipe) */
	bool in_pipe;
	bool in_closing;   /* close once the backlog is written */
	uint64_t in_total; /* bytes of stdin taken: the next one's offset */
	struct evbuffer *input;
	struct event *wev;
	struct proc_out out[PROC_NOUT];
	bool exited, reported, timed_out, oom_killed;
	int status;
	uint64_t started, started_mono, duration;
	uint64_t oom_before;
	unsigned ttl;
	struct event *timeout_timer, *drain_timer, *ttl_timer;
	struct proc_waiter *waiters;
	unsigned nwaiters;
	/* Its limits and cgroup: its own, or its runtime's (lim). */
	struct enforce own, *lim;
	proc_exit_fn on_exit; /* told once the exit is reported */
	void *on_exit_arg;
	proc_tap_fn tap; /* NULL: none */
	struct proc *next;
};

static struct event_base *proc_base;
static struct proc *proc_list;
static unsigned proc_count;

void
proc_init(struct event_base *base)
{
	proc_base = base;
}

static struct proc *
proc_find(const char *id)
{
	struct proc *p;

	for (p = proc_list; p != NULL; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}

/* The process named by "id", or NULL after an error reply. */
static struct proc *
proc_arg(struct server_conn *c, const struct proto_msg *m)
{
	char id[PROC_ID_LEN + 2];
	struct proc *p;

	if (proto_arg_str(m->args, "id", id, sizeof id) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s needs \"id\" (a process id)", m->op);
		return NULL;
	}
	if ((p = proc_find(id)) == NULL)
		server_reply_error(
		    c, m->id, PROTO_E_NOT_FOUND, "no process \"%s\"", id);
	return p;
}

/* ---- OOM kills, where the kernel tells ---- */

/* The oom_kill count of berthd's cgroup (v2), or UINT64_MAX if unknown.
 * A process SIGKILLed while it grew is an OOM kill if this grew too. */
static uint64_t
proc_oom_kills(void)
{
	char line[4096], path[4200];
	uint64_t n = UINT64_MAX;
	FILE *f;

	if ((f = fopen("/proc/self/cgroup", "re")) == NULL)
		return n;
	path[0] = '\0';
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(path, sizeof path,
			    "/sys/fs/cgroup%s/memory.events", line + 3);
		}
	fclose(f);
	if (path[0] == '\0' || (f = fopen(path, "re")) == NULL)
		return n;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "oom_kill %" SCNu64, &n) == 1)
			break;
	fclose(f);
	return n;
}

/* ---- the exit ---- */

static void
proc_pack_exit(msgpack_packer *pk, const struct proc *p)
{
	proto_pack_str(pk, "exit");
	if (!p->reported)
		msgpack_pack_nil(pk);
	else
		child_pack_status_map(pk, p->status);
}

static void
proc_pack_wait(msgpack_packer *pk, const struct proc *p)
{
	msgpack_pack_map(pk, 7);
	proto_pack_kv_str(pk, "id", p->id);
	proto_pack_kv_str(pk, "state", p->reported ? "exited" : "running");
	proc_pack_exit(pk, p);
	proto_pack_kv_bool(pk, "timed_out", p->timed_out);
	proto_pack_kv_bool(pk, "oom_killed", p->oom_killed);
	proto_pack_kv_u64(pk, "stdout_bytes", p->out[PROC_STDOUT].st.ring.end);
	proto_pack_kv_u64(pk, "stderr_bytes", p->out[PROC_STDERR].st.ring.end);
}

static void
proc_waiter_free(struct proc_waiter *w)
{
	struct proc_waiter **pp;

	for (pp = &w->p->waiters; *pp != w; pp = &(*pp)->next)
		;
	*pp = w->next;
	w->p->nwaiters--;
	inflight_end(w->serial, w->id);
	event_free(w->timer);
	free(w);
}

/* request.cancel of a proc.wait: the wait ends unanswered; the command
 * runs on. */
static void
proc_waiter_cancel(void *arg, uint64_t serial, uint64_t id)
{
	(void)serial;
	(void)id;
	proc_waiter_free(arg);
}

/* Answers w (if its connection is still there) and frees it. */
static void
proc_waiter_answer(struct proc_waiter *w)
{
	struct server_conn *c = server_conn_find(w->serial);

	if (c != NULL) {
		proc_pack_wait(server_reply_begin(c, w->id), w->p);
		server_reply_end(c);
	}
	proc_waiter_free(w);
}

static void
proc_wait_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	proc_waiter_answer(arg);
}

static void proc_ttl_cb(evutil_socket_t fd, short what, void *arg);

/* The exit is known and both streams ended (or were cut after the drain):
 * journal it, answer the waiters, start the TTL. */
static void
proc_report(struct proc *p)
{
	struct timeval tv = clock_tv((uint64_t)p->ttl * 1000);
	msgpack_packer *pk;
	uint64_t oom;
	int own;

	if (p->reported || !p->exited || p->out[PROC_STDOUT].fd >= 0 ||
	    p->out[PROC_STDERR].fd >= 0)
		return;
	p->reported = true;
	evtimer_del(p->drain_timer);
	evtimer_del(p->timeout_timer);
	if ((own = enforce_oom_killed(p->lim)) >= 0)
		p->oom_killed = own == 1;
	else if (WIFSIGNALED(p->status) && WTERMSIG(p->status) == SIGKILL &&
	    !p->timed_out && p->oom_before != UINT64_MAX &&
	    (oom = proc_oom_kills()) != UINT64_MAX && oom > p->oom_before)
		p->oom_killed = true;
	/* A daemon it left keeps the group (and its limits) until it is
	 * gone or the record is. */
	if (p->lim == &p->own && !enforce_populated(p->lim))
		enforce_close(p->lim);
	pk = events_begin(EV_PROC_EXITED);
	msgpack_pack_map(pk, 7 + child_status_keys(p->status));
	proto_pack_kv_str(pk, "id", p->id);
	proto_pack_kv_u64(pk, "pid", (uint64_t)p->pid);
	child_pack_status(pk, p->status);
	proto_pack_kv_bool(pk, "timed_out", p->timed_out);
	proto_pack_kv_bool(pk, "oom_killed", p->oom_killed);
	proto_pack_kv_u64(pk, "stdout_bytes", p->out[PROC_STDOUT].st.ring.end);
	proto_pack_kv_u64(pk, "stderr_bytes", p->out[PROC_STDERR].st.ring.end);
	proto_pack_kv_u64(pk, "duration_ms", p->duration);
	events_commit();
	if (p->on_exit != NULL)
		p->on_exit(p->id, p->pid, p->status, p->on_exit_arg);
	while (p->waiters != NULL)
		proc_waiter_answer(p->waiters);
	evtimer_add(p->ttl_timer, &tv);
}

static void
proc_out_close(struct proc_out *o)
{
	if (o->fd < 0)
		return;
	event_del(o->ev);
	close(o->fd);
	o->fd = -1;
	stream_end(&o->st);
}

static void
proc_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc_out *o = arg;
	uint8_t buf[STREAM_CHUNK];
	ssize_t n;

	(void)what;
	/* Paced: a viewer is a ring's half behind; the process waits. */
	if (!stream_wants(&o->st)) {
		event_del(o->ev);
		return;
	}
	n = read(fd, buf, sizeof buf);
	if (n > 0) {
		stream_write(&o->st, buf, (size_t)n);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	proc_out_close(o);
	proc_report(o->p);
}

static void
proc_room_cb(struct stream *st, void *arg)
{
	struct proc_out *o = arg;

	(void)st;
	if (o->fd >= 0)
		event_add(o->ev, NULL);
}

static void
proc_drain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;
	struct timeval tv = clock_tv(PROC_DRAIN_MS);
	bool waiting = false;
	int i;

	(void)fd;
	(void)what;
	/* A pipe still open a while after the exit is held by a grandchild:
	 * cut it, unless its bytes only wait for a viewer to catch up. */
	for (i = 0; i < PROC_NOUT; i++) {
		if (p->out[i].fd >= 0 && p->out[i].st.stalled)
			waiting = true;
		else
			proc_out_close(&p->out[i]);
	}
	if (waiting)
		evtimer_add(p->drain_timer, &tv);
	proc_report(p);
}

static void
proc_in_close(struct proc *p)
{
	if (p->in_fd < 0)
		return;
	if (p->wev != NULL)
		event_del(p->wev);
	close(p->in_fd);
	p->in_fd = -1;
	evbuffer_drain(p->input, evbuffer_get_length(p->input));
}

static void
proc_exit_cb(pid_t pid, int status, void *arg)
{
	struct proc *p = arg;
	struct timeval tv = clock_tv(PROC_DRAIN_MS);
	int i;

	(void)pid;
	p->exited = true;
	p->status = status;
	p->duration = clock_mono_ms() - p->started_mono;
	proc_in_close(p);
	for (i = 0; i < PROC_NOUT; i++)
		stream_writer_gone(&p->out[i].st);
	evtimer_add(p->drain_timer, &tv);
	proc_report(p);
}

/* SIGKILL to every process of p: by its cgroup, else its group. */
static void
proc_kill(struct proc *p)
{
	if (!enforce_kill(p->lim))
		kill(-p->pid, SIGKILL);
}

static void
proc_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;

	(void)fd;
	(void)what;
	if (p->exited)
		return;
	p->timed_out = true;
	log_info("proc %s: timed out; killing all its processes", p->id);
	proc_kill(p);
}

/* ---- freeing ---- */

static void
proc_free(struct proc *p)
{
	struct proc **pp;
	int i;

	for (pp = &proc_list; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			proc_count--;
			break;
		}
	while (p->waiters != NULL)
		proc_waiter_free(p->waiters);
	if (!p->exited && p->pid > 0)
		child_forget(p->pid);
	proc_in_close(p);
	for (i = 0; i < PROC_NOUT; i++) {
		if (p->out[i].fd >= 0)
			close(p->out[i].fd);
		if (p->out[i].ev != NULL)
			event_free(p->out[i].ev);
		stream_free(&p->out[i].st);
	}
	if (p->wev != NULL)
		event_free(p->wev);
	evbuffer_free(p->input);
	event_free(p->timeout_timer);
	event_free(p->drain_timer);
	event_free(p->ttl_timer);
	child_strv_free(p->argv);
	enforce_close(&p->own);
	free(p);
}

static void
proc_ttl_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;
	struct timeval tv = clock_tv(1000);

	(void)fd;
	(void)what;
	/* Someone still reads it: keep it until they are done. */
	if (p->out[PROC_STDOUT].st.nviewers + p->out[PROC_STDERR].st.nviewers >
	    0) {
		evtimer_add(p->ttl_timer, &tv);
		return;
	}
	proc_free(p);
}

/* Room for one more record: forgets the oldest exited process that no
 * one reads if the table is full. Returns false if all are running. */
static bool
proc_make_room(void)
{
	struct proc *p, *oldest = NULL;

	if (proc_count < PROC_MAX)
		return true;
	for (p = proc_list; p != NULL; p = p->next)
		if (p->reported &&
		    p->out[PROC_STDOUT].st.nviewers +
		            p->out[PROC_STDERR].st.nviewers ==
		        0)
			oldest = p; /* the list is newest first */
	if (oldest == NULL)
		return false;
	proc_free(oldest);
	return true;
}

/* ---- starting ---- */

static void
proc_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;

	(void)what;
	if (evbuffer_write(p->input, fd) < 0 && errno != EAGAIN &&
	    errno != EINTR) {
		/* EPIPE: the process closed its stdin; what is left is moot. */
		proc_in_close(p);
		return;
	}
	if (evbuffer_get_length(p->input) > 0)
		event_add(p->wev, NULL);
	else if (p->in_closing)
		proc_in_close(p);
}

struct proc_opts {
	bool pipe_in, redact, attach, ack;
	uint64_t timeout, ring, ttl;
	char tag[PROC_TAG_MAX + 1];
};

/* Reads the options beside the program's; -1 after an error reply. */
static int
proc_parse_opts(
    struct server_conn *c, const struct proto_msg *m, struct proc_opts *o)
{
	char in[16] = "closed";

	memset(o, 0, sizeof *o);
	o->ring = PROC_RING_DEFAULT;
	o->ttl = 3600;
	if (proto_arg_str(m->args, "stdin", in, sizeof in) < 0 ||
	    (strcmp(in, "closed") != 0 && strcmp(in, "pipe") != 0)) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "stdin must be \"closed\" or \"pipe\"");
		return -1;
	}
	o->pipe_in = strcmp(in, "pipe") == 0;
	if (proto_arg_str(m->args, "tag", o->tag, sizeof o->tag) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "tag must be a string of at most %d bytes", PROC_TAG_MAX);
		return -1;
	}
	if (args_range(c, m, "timeout_ms", 0, PROC_TIMEOUT_MAX, &o->timeout) <
	        0 ||
	    args_range(c, m, "ring", PROC_RING_MIN, PROC_RING_MAX, &o->ring) <
	        0 ||
	    args_range(c, m, "ttl", 1, 30 * 86400, &o->ttl) < 0 ||
	    args_flag(c, m, "redact", &o->redact) < 0 ||
	    args_flag(c, m, "attach", &o->attach) < 0 ||
	    args_flag(c, m, "ack", &o->ack) < 0)
		return -1;
	return 0;
}

static struct proc *
proc_new(const struct proc_opts *o)
{
	struct proc *p = xcalloc(1, sizeof *p);
	char name[PROTO_MAX_NAME + 1];
	int i;

	do
		rand_hex(p->id, PROC_ID_LEN / 2);
	while (proc_find(p->id) != NULL);
	snprintf(p->tag, sizeof p->tag, "%s", o->tag);
	p->in_fd = -1;
	p->lim = &p->own;
	p->ttl = (unsigned)o->ttl;
	p->input = evbuffer_new();
	for (i = 0; i < PROC_NOUT; i++) {
		p->out[i].p = p;
		p->out[i].fd = -1;
		snprintf(
		    name, sizeof name, "proc/%s/%s", p->id, proc_out_names[i]);
		stream_init(&p->out[i].st, name, (size_t)o->ring, true,
		    o->redact, &p->out[i]);
		p->out[i].st.on_room = proc_room_cb;
	}
	p->timeout_timer = evtimer_new(proc_base, proc_timeout_cb, p);
	p->drain_timer = evtimer_new(proc_base, proc_drain_cb, p);
	p->ttl_timer = evtimer_new(proc_base, proc_ttl_cb, p);
	return p;
}

/* Spawns l's program with pipes for stdout and stderr (and stdin). */
static int
proc_spawn(struct proc *p, const struct launch *l, bool pipe_in, char **cause)
{
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	int fds[PROC_NOUT][2] = {{-1, -1}, {-1, -1}}, in[2] = {-1, -1};
	int i, rc = -1;

	for (i = 0; i < PROC_NOUT; i++)
		if (pipe2(fds[i], O_CLOEXEC) != 0)
			goto out;
	if (pipe_in && pipe2(in, O_CLOEXEC) != 0)
		goto out;
	if (l->enforce != NULL)
		p->lim = l->enforce;
	else
		enforce_open(&p->own, "proc", p->id, &l->limits,
		    !l->has_user || l->uid == 0, l->uid);
	launch_spec(l, &spec);
	enforce_spec(p->lim, &spec);
	spec.set_stdio = true;
	spec.stdin_fd = in[0];
	spec.stdout_fd = fds[PROC_STDOUT][1];
	spec.stderr_fd = fds[PROC_STDERR][1];
	p->oom_before = proc_oom_kills();
	p->pid = child_spawn(&spec, proc_exit_cb, p, cause);
	enforce_spawned(p->lim);
	if (p->pid < 0)
		goto fail;
	for (i = 0; i < PROC_NOUT; i++) {
		p->out[i].fd = fds[i][0];
		fds[i][0] = -1;
		fcntl(p->out[i].fd, F_SETFL, O_NONBLOCK);
	}
	if (pipe_in) {
		p->in_fd = in[1];
		p->in_pipe = true;
		in[1] = -1;
		fcntl(p->in_fd, F_SETFL, O_NONBLOCK);
	}
	rc = 0;
	goto done;
out:
	*cause = xasprintf("pipe: %s", strerror(errno));
fail:
	p->pid = 0;
done:
	for (i = 0; i < PROC_NOUT; i++) {
		if (fds[i][0] >= 0)
			close(fds[i][0]);
		if (fds[i][1] >= 0)
			close(fds[i][1]);
	}
	if (in[0] >= 0)
		close(in[0]);
	if (in[1] >= 0)
		close(in[1]);
	return rc;
}

/* What names a process everywhere: 4 keys of a map. */
static void
proc_pack_ident(msgpack_packer *pk, const struct proc *p)
{
	proto_pack_kv_str(pk, "id", p->id);
	proto_pack_kv_u64(pk, "pid", (uint64_t)p->pid);
	proto_pack_str(pk, "command");
	launch_pack_argv(pk, p->argv);
	proto_pack_kv_str(pk, "tag", p->tag);
}

static void
proc_emit_started(const struct proc *p)
{
	msgpack_packer *pk = events_begin(EV_PROC_STARTED);

	msgpack_pack_map(pk, 4);
	proc_pack_ident(pk, p);
	events_commit();
}

/* Events and timers of a process that has just started. */
static void
proc_arm(struct proc *p, const struct proc_opts *o)
{
	struct timeval tv = clock_tv(o->timeout);
	int i;

	for (i = 0; i < PROC_NOUT; i++) {
		p->out[i].ev = event_new(proc_base, p->out[i].fd,
		    EV_READ | EV_PERSIST, proc_read_cb, &p->out[i]);
		event_add(p->out[i].ev, NULL);
	}
	p->wev = event_new(proc_base, p->in_fd, EV_WRITE, proc_write_cb, p);
	if (o->timeout > 0)
		evtimer_add(p->timeout_timer, &tv);
}

/* Spawns l's program (taking its argv), arms it and journals
 * proc.started. NULL with *cause if it cannot start. */
static struct proc *
proc_launch(struct launch *l, const struct proc_opts *o, char **cause)
{
	struct proc *p = proc_new(o);

	p->started = proto_now_ms();
	p->started_mono = clock_mono_ms();
	if (proc_spawn(p, l, o->pipe_in, cause) < 0) {
		p->exited = true;
		proc_free(p);
		return NULL;
	}
	p->argv = l->argv;
	l->argv = NULL;
	proc_arm(p, o);
	p->next = proc_list;
	proc_list = p;
	proc_count++;
	log_info("proc %s: %s, pid %ld", p->id, p->argv[0], (long)p->pid);
	proc_emit_started(p);
	return p;
}

/* A command berthd starts of its own accord, told to cb at its end. */
static struct proc *
proc_start_own(struct launch *l, const struct proc_opts *o, proc_exit_fn cb,
    void *arg, char id[PROC_ID_LEN + 1], pid_t *pid, char **cause)
{
	struct proc *p;

	if (!proc_make_room()) {
		*cause =
		    xasprintf("%d processes are running already", PROC_MAX);
		return NULL;
	}
	if ((p = proc_launch(l, o, cause)) == NULL)
		return NULL;
	p->on_exit = cb;
	p->on_exit_arg = arg;
	memcpy(id, p->id, PROC_ID_LEN + 1);
	*pid = p->pid;
	return p;
}

int
proc_start_launch(struct launch *l, bool pipe_in, proc_exit_fn cb, void *arg,
    char id[PROC_ID_LEN + 1], pid_t *pid, char **cause)
{
	/* Its record outlives its exit for as long as proc.start's may. */
	struct proc_opts o = {
	    .pipe_in = pipe_in, .ring = PROC_RING_DEFAULT, .ttl = 3600};

	return proc_start_own(l, &o, cb, arg, id, pid, cause) != NULL ? 0 : -1;
}

static void
proc_tap_cb(struct stream *st, const void *data, size_t len, void *arg)
{
	struct proc_out *o = arg;
	struct proc *p = o->p;

	(void)st;
	p->tap((int)(o - p->out), data, len, p->on_exit_arg);
}

int
proc_start_tapped(struct launch *l, const void *input, size_t inlen,
    proc_tap_fn tap, proc_exit_fn cb, void *arg, char id[PROC_ID_LEN + 1],
    pid_t *pid, char **cause)
{
	struct proc_opts o = {.pipe_in = input != NULL,
	    .redact = true,
	    .ring = PROC_RING_MIN,
	    .ttl = 3600};
	struct proc *p;
	int i;

	if ((p = proc_start_own(l, &o, cb, arg, id, pid, cause)) == NULL)
		return -1;
	/* Nothing was read yet: the loop has not run since the spawn. */
	p->tap = tap;
	for (i = 0; i < PROC_NOUT; i++)
		p->out[i].st.on_bytes = proc_tap_cb;
	if (input != NULL) {
		evbuffer_add(p->input, input, inlen);
		p->in_closing = true;
		proc_write_cb(p->in_fd, EV_WRITE, p);
	}
	return 0;
}

void
proc_op_start(struct server_conn *c, const struct proto_msg *m)
{
	char *cause = NULL, target[PROTO_MAX_NAME + 1];
	struct stream_viewer *v[PROC_NOUT] = {NULL, NULL};
	uint64_t lost;
	struct proc_opts o;
	int i;
	struct launch l;
	struct proc *p;
	msgpack_packer *pk;

	if (proc_parse_opts(c, m, &o) < 0)
		return;
	if (!proc_make_room()) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%d processes are running already", PROC_MAX);
		return;
	}
	if (launch_parse(&l, c, m, LAUNCH_COMMAND, NULL) < 0)
		return;
	if ((p = proc_launch(&l, &o, &cause)) == NULL) {
		launch_free(&l);
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", cause);
		free(cause);
		return;
	}
	/* Attached before the loop reads a byte: nothing can be lost. */
	for (i = 0; o.attach && i < PROC_NOUT; i++) {
		v[i] = stream_attach(&p->out[i].st, c, 0, &lost);
		v[i]->acks = o.ack;
	}
	snprintf(target, sizeof target, "proc/%s", p->id);
	secrets_grant_emit(&l.grant, target);
	launch_free(&l);

	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "id", p->id);
	proto_pack_kv_u64(pk, "pid", (uint64_t)p->pid);
	server_reply_end(c);
	for (i = 0; o.attach && i < PROC_NOUT; i++)
		stream_viewer_pump(v[i]);
}

/* ---- reading ---- */

/* from_offset: one offset for both streams, or {stdout, stderr}. */
static int
proc_arg_offsets(const msgpack_object *args, uint64_t from[PROC_NOUT])
{
	const msgpack_object *o = proto_map_get(args, "from_offset");
	int i;

	from[PROC_STDOUT] = from[PROC_STDERR] = 0;
	if (o == NULL || o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		from[PROC_STDOUT] = from[PROC_STDERR] = o->via.u64;
		return 0;
	}
	if (o->type != MSGPACK_OBJECT_MAP)
		return -1;
	for (i = 0; i < PROC_NOUT; i++)
		if (proto_arg_u64(o, proc_out_names[i], &from[i]) < 0)
			return -1;
	return 0;
}

void
proc_op_attach(struct server_conn *c, const struct proto_msg *m)
{
	struct proc *p = proc_arg(c, m);
	struct stream_viewer *v[PROC_NOUT];
	uint64_t from[PROC_NOUT], lost[PROC_NOUT];
	msgpack_packer *pk;
	bool ack = false;
	int i;

	if (p == NULL || args_flag(c, m, "ack", &ack) < 0)
		return;
	if (proc_arg_offsets(m->args, from) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "from_offset must be an integer or {stdout, stderr}");
		return;
	}
	for (i = 0; i < PROC_NOUT; i++)
		if (from[i] > p->out[i].st.ring.end) {
			server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
			    "from_offset %" PRIu64 " is past the end of %s "
			    "(%" PRIu64 ")",
			    from[i], proc_out_names[i], p->out[i].st.ring.end);
			return;
		}
	for (i = 0; i < PROC_NOUT; i++) {
		v[i] = stream_attach(&p->out[i].st, c, from[i], &lost[i]);
		v[i]->acks = ack;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 2 + PROC_NOUT);
	proto_pack_kv_str(pk, "id", p->id);
	proto_pack_kv_str(pk, "state", p->reported ? "exited" : "running");
	for (i = 0; i < PROC_NOUT; i++) {
		proto_pack_str(pk, proc_out_names[i]);
		msgpack_pack_map(pk, 3);
		proto_pack_kv_u64(pk, "offset", v[i]->offset);
		proto_pack_kv_u64(pk, "lost", lost[i]);
		proto_pack_kv_u64(pk, "end", p->out[i].st.ring.end);
	}
	server_reply_end(c);
	for (i = 0; i < PROC_NOUT; i++)
		stream_viewer_pump(v[i]);
}

void
proc_op_ack(struct server_conn *c, const struct proto_msg *m)
{
	struct proc *p = proc_arg(c, m);
	struct stream_viewer *v;
	uint64_t at;
	int i, r;

	if (p == NULL)
		return;
	for (i = 0; i < PROC_NOUT; i++) {
		if ((r = proto_arg_u64(m->args, proc_out_names[i], &at)) == 0)
			continue;
		v = stream_viewer_of(&p->out[i].st, c);
		if (r < 0 || (v != NULL && at > v->offset)) {
			server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
			    "%s must be an offset this connection was sent",
			    proc_out_names[i]);
			return;
		}
		if (v == NULL || !v->acks) {
			server_reply_error(c, m->id, PROTO_E_CONFLICT,
			    "this connection is not attached to process %s "
			    "with ack",
			    p->id);
			return;
		}
		stream_ack(v, at);
	}
	server_reply_empty(c, m->id);
}

void
proc_op_detach(struct server_conn *c, const struct proto_msg *m)
{
	struct proc *p = proc_arg(c, m);
	struct stream_viewer *v;
	int i;

	if (p == NULL)
		return;
	for (i = 0; i < PROC_NOUT; i++)
		if ((v = stream_viewer_of(&p->out[i].st, c)) != NULL)
			stream_detach(v);
	server_reply_empty(c, m->id);
}

/* ---- stdin and signals ---- */

/* p's stdin, or NULL after a conflict reply. */
static struct proc *
proc_arg_stdin(struct server_conn *c, const struct proto_msg *m)
{
	struct proc *p = proc_arg(c, m);

	if (p == NULL)
		return NULL;
	if (!p->in_pipe) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "process %s was started with stdin closed", p->id);
		return NULL;
	}
	if (p->in_fd < 0 || p->in_closing) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "the stdin of process %s is closed", p->id);
		return NULL;
	}
	return p;
}

void
proc_op_input(struct server_conn *c, const struct proto_msg *m)
{
	const msgpack_object *d = proto_map_get(m->args, "data");
	uint64_t at = UINT64_MAX, skip = 0;
	msgpack_packer *pk;
	struct proc *p;

	if (d == NULL || d->type != MSGPACK_OBJECT_BIN ||
	    d->via.bin.size > PROC_INPUT_MAX ||
	    proto_arg_u64(m->args, "offset", &at) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "proc.input needs \"id\" and \"data\" (bin, at most %u "
		    "bytes), and takes \"offset\"",
		    PROC_INPUT_MAX);
		return;
	}
	if ((p = proc_arg_stdin(c, m)) == NULL)
		return;
	/* With an offset, input sent again after a lost answer is taken
	 * once: what berthd has already is skipped. */
	if (at != UINT64_MAX) {
		if (at > p->in_total) {
			server_reply_error(c, m->id, PROTO_E_CONFLICT,
			    "process %s has taken %" PRIu64 " bytes of stdin; "
			    "this input starts at %" PRIu64,
			    p->id, p->in_total, at);
			return;
		}
		skip = p->in_total - at;
		if (skip > d->via.bin.size)
			skip = d->via.bin.size;
	}
	if (evbuffer_get_length(p->input) + d->via.bin.size - skip >
	    PROC_INPUT_BACKLOG) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "process %s is not reading its stdin", p->id);
		return;
	}
	evbuffer_add(p->input, d->via.bin.ptr + skip, d->via.bin.size - skip);
	p->in_total += d->via.bin.size - skip;
	if (evbuffer_get_length(p->input) > 0)
		proc_write_cb(p->in_fd, EV_WRITE, p);
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 1);
	proto_pack_kv_u64(pk, "stdin_bytes", p->in_total);
	server_reply_end(c);
}

void
proc_op_close_stdin(struct server_conn *c, const struct proto_msg *m)
{
	struct proc *p = proc_arg_stdin(c, m);

	if (p == NULL)
		return;
	/* What was sent before still reaches the process, then EOF. */
	if (evbuffer_get_length(p->input) > 0)
		p->in_closing = true;
	else
		proc_in_close(p);
	server_reply_empty(c, m->id);
}

void
proc_op_signal(struct server_conn *c, const struct proto_msg *m)
{
	struct proc *p = proc_arg(c, m);
	int sig;

	if (p == NULL || args_signal(c, m, &sig) < 0)
		return;
	if (p->exited) {
		server_reply_error(
		    c, m->id, PROTO_E_CONFLICT, "process %s has exited", p->id);
		return;
	}
	if (sig == SIGKILL)
		proc_kill(p);
	else
		kill(-p->pid, sig);
	server_reply_empty(c, m->id);
}

/* ---- waiting and listing ---- */

void
proc_op_wait(struct server_conn *c, const struct proto_msg *m)
{
	struct proc *p = proc_arg(c, m);
	struct proc_waiter *w;
	struct timeval tv;
	uint64_t timeout = 0;

	if (p == NULL ||
	    args_range(c, m, "timeout_ms", 0, PROC_TIMEOUT_MAX, &timeout) < 0)
		return;
	if (p->reported) {
		proc_pack_wait(server_reply_begin(c, m->id), p);
		server_reply_end(c);
		return;
	}
	if (p->nwaiters >= PROC_WAITERS_MAX) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%d waits on process %s already", PROC_WAITERS_MAX, p->id);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->p = p;
	w->serial = c->serial;
	w->id = m->id;
	w->timer = evtimer_new(proc_base, proc_wait_timer_cb, w);
	if (timeout > 0) {
		tv = clock_tv(timeout);
		evtimer_add(w->timer, &tv);
	}
	w->next = p->waiters;
	p->waiters = w;
	p->nwaiters++;
	inflight_add(c, m->id, proc_waiter_cancel, w);
}

void
proc_op_list(struct server_conn *c, const struct proto_msg *m)
{
	msgpack_packer *pk = server_reply_begin(c, m->id);
	struct proc *p;

	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "procs");
	msgpack_pack_array(pk, proc_count);
	for (p = proc_list; p != NULL; p = p->next) {
		msgpack_pack_map(pk, 12);
		proc_pack_ident(pk, p);
		proto_pack_str(pk, "limits");
		enforce_pack(pk, p->lim, NULL);
		proto_pack_kv_u64(pk, "stdin_bytes", p->in_total);
		proto_pack_kv_str(
		    pk, "state", p->reported ? "exited" : "running");
		proc_pack_exit(pk, p);
		proto_pack_kv_bool(pk, "timed_out", p->timed_out);
		proto_pack_kv_u64(pk, "started", p->started);
		proto_pack_kv_u64(
		    pk, "stdout_bytes", p->out[PROC_STDOUT].st.ring.end);
		proto_pack_kv_u64(
		    pk, "stderr_bytes", p->out[PROC_STDERR].st.ring.end);
	}
	server_reply_end(c);
}

const struct enforce *
proc_enforce(const char *id)
{
	struct proc *p = proc_find(id);

	return p != NULL ? p->lim : NULL;
}

void
proc_shutdown(void)
{
	struct proc *p;

	for (p = proc_list; p != NULL; p = p->next)
		if (!p->exited)
			proc_kill(p);
	while (proc_list != NULL)
		proc_free(proc_list);
}
