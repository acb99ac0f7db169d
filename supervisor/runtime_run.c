/* runtime_run: one agent runtime's instance (see runtime_run.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catalog.h"
#include "child.h"
#include "clock.h"
#include "events.h"
#include "inflight.h"
#include "launch.h"
#include "log.h"
#include "rand.h"
#include "runtime_listen.h"
#include "runtime_run.h"
#include "secrets.h"
#include "xmalloc.h"

/* How often a server whose probe passes on a port not its own is looked
 * at again (the probe says nothing new while it passes). */
#define RUNTIME_CLAIM_MS 200

/* runtime.pause answers once the freeze has settled, looked at every
 * tick (the kernel tells no settling a loop can wait on for v1), or
 * after the bound with frozen false: berthd's loop never waits for it. */
#define RUNTIME_SETTLE_TICK_MS 2
#define RUNTIME_SETTLE_MS 1000

/* A TUI session lives as long as its runtime, watched or not. */
#define RUNTIME_TTY_TTL (30u * 86400)

static const char *const runtime_mode_names[RUNTIME_RUN_NMODES] = {
    "tui", "server", "rpc"};
static const char *const runtime_state_names[] = {"stopped", "starting",
    "ready", "unready", "restarting", "exited", "failed"};

static struct event_base *runtime_base;
static const struct config *runtime_conf;
static void (*runtime_exited_hook)(void);

static void runtime_restart_cb(evutil_socket_t fd, short what, void *arg);
static void runtime_kill_cb(evutil_socket_t fd, short what, void *arg);
static void runtime_deadline_cb(evutil_socket_t fd, short what, void *arg);
static void runtime_claim_cb(evutil_socket_t fd, short what, void *arg);
static void runtime_settle_cb(evutil_socket_t fd, short what, void *arg);

void
runtime_run_setup(
    struct event_base *base, const struct config *conf, void (*exited)(void))
{
	runtime_base = base;
	runtime_conf = conf;
	runtime_exited_hook = exited;
}

void
runtime_run_init(struct runtime_run *rt, const struct config_runtime *cfg)
{
	memset(rt, 0, sizeof *rt);
	rt->cfg = cfg;
	rt->restart_timer = evtimer_new(runtime_base, runtime_restart_cb, rt);
	rt->kill_timer = evtimer_new(runtime_base, runtime_kill_cb, rt);
	rt->deadline_timer = evtimer_new(runtime_base, runtime_deadline_cb, rt);
	rt->claim_timer = evtimer_new(runtime_base, runtime_claim_cb, rt);
	rt->settle_timer = evtimer_new(runtime_base, runtime_settle_cb, rt);
}

const char *
runtime_run_mode_name(enum runtime_run_mode mode)
{
	return runtime_mode_names[mode];
}

const char *
runtime_run_state_name(enum runtime_run_state state)
{
	return runtime_state_names[state];
}

void
runtime_run_waiter_add(struct runtime_run_waiter **list, struct server_conn *c,
    const struct proto_msg *m)
{
	struct runtime_run_waiter *w = xcalloc(1, sizeof *w);

	w->serial = c->serial;
	w->id = m->id;
	w->next = *list;
	*list = w;
	inflight_add(c, m->id, inflight_cancel_serial, &w->serial);
}

void
runtime_run_waiters_free(struct runtime_run_waiter **list)
{
	struct runtime_run_waiter *w;

	while ((w = *list) != NULL) {
		*list = w->next;
		inflight_end(w->serial, w->id);
		free(w);
	}
}

bool
runtime_run_running(const struct runtime_run *rt)
{
	return rt->alive || rt->state == RUNTIME_RUN_RESTARTING;
}

/* A free loopback port: the kernel's pick, let go for the server. */
int
runtime_run_free_port(unsigned *port, char **cause)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof sin;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof sin) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
		*cause =
		    xasprintf("no free loopback port: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	*port = ntohs(sin.sin_port);
	return 0;
}

void
runtime_run_pack_where(msgpack_packer *pk, const struct runtime_run *rt)
{
	if (rt->mode == RUNTIME_RUN_TUI)
		proto_pack_kv_str(pk, "pty", rt->pty);
	else
		proto_pack_kv_str(pk, "proc", rt->proc);
	if (rt->mode == RUNTIME_RUN_SERVER)
		proto_pack_kv_u64(pk, "port", rt->port);
}

/* ---- events ---- */

static void
runtime_emit_started(const struct runtime_run *rt)
{
	msgpack_packer *pk = events_begin(EV_RUNTIME_STARTED);
	bool server = rt->mode == RUNTIME_RUN_SERVER;

	msgpack_pack_map(pk, 5 + server);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_str(pk, "mode", runtime_mode_names[rt->mode]);
	proto_pack_kv_u64(pk, "pid", (uint64_t)rt->pid);
	runtime_run_pack_where(pk, rt);
	proto_pack_kv_str(pk, "workspace", rt->workspace);
	events_commit();
}

static void
runtime_emit_ready(const struct runtime_run *rt)
{
	msgpack_packer *pk = events_begin(EV_RUNTIME_READY);
	bool server = rt->mode == RUNTIME_RUN_SERVER;

	msgpack_pack_map(pk, 3 + server);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_str(pk, "mode", runtime_mode_names[rt->mode]);
	if (server)
		proto_pack_kv_u64(pk, "port", rt->port);
	proto_pack_kv_u64(pk, "ready_ms", rt->ready_ms);
	events_commit();
}

/* runtime.unready, runtime.failed: rt's reason. */
static void
runtime_emit_reason(const char *kind, const struct runtime_run *rt)
{
	msgpack_packer *pk = events_begin(kind);

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_str(pk, "mode", runtime_mode_names[rt->mode]);
	proto_pack_kv_str(pk, "reason", rt->reason);
	events_commit();
}

static void
runtime_emit_name(const char *kind, const struct runtime_run *rt)
{
	msgpack_packer *pk = events_begin(kind);

	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	events_commit();
}

/* ---- readiness of a server ---- */

static void
runtime_set_ready(struct runtime_run *rt)
{
	evtimer_del(rt->deadline_timer);
	rt->state = RUNTIME_RUN_READY;
	rt->reason[0] = '\0';
	rt->ready_since = clock_mono_ms();
	if (!rt->was_ready)
		rt->ready_ms = rt->ready_since - rt->started_mono;
	rt->was_ready = true;
	runtime_emit_ready(rt);
}

/* A server gets server_ready_timeout_ms to answer, from its spawn or from
 * the moment it stopped answering; 0 waits for ever. */
static void
runtime_arm_deadline(struct runtime_run *rt)
{
	struct timeval tv = clock_tv(rt->cfg->server_ready_timeout_ms);

	if (rt->cfg->server_ready_timeout_ms > 0)
		evtimer_add(rt->deadline_timer, &tv);
}

/* The probe passes: ready if the port's listeners are the runtime's
 * (runtime_listen.h); else looked at again, until the deadline. */
static void
runtime_claim(struct runtime_run *rt)
{
	struct timeval tv = clock_tv(RUNTIME_CLAIM_MS);
	char why[RUNTIME_RUN_REASON_MAX];

	if (!runtime_listen_owned(&rt->tree, rt->port, why, sizeof why)) {
		if (strcmp(rt->reason, why) != 0)
			log_warn("runtime %s: port %u answers, but %s",
			    rt->cfg->name, rt->port, why);
		memcpy(rt->reason, why, sizeof why);
		evtimer_add(rt->claim_timer, &tv);
		return;
	}
	log_info("runtime %s: ready on port %u", rt->cfg->name, rt->port);
	runtime_set_ready(rt);
}

static void
runtime_claim_cb(evutil_socket_t fd, short what, void *arg)
{
	struct runtime_run *rt = arg;

	(void)fd;
	(void)what;
	if (rt->probe_ok && rt->alive &&
	    (rt->state == RUNTIME_RUN_STARTING ||
	        rt->state == RUNTIME_RUN_UNREADY))
		runtime_claim(rt);
}

static void
runtime_probe_cb(void *arg, bool ok, const char *reason)
{
	struct runtime_run *rt = arg;

	rt->probe_ok = ok;
	if (ok &&
	    (rt->state == RUNTIME_RUN_STARTING ||
	        rt->state == RUNTIME_RUN_UNREADY)) {
		runtime_claim(rt);
		return;
	}
	if (ok)
		return;
	evtimer_del(rt->claim_timer);
	/* Kept for the failure's message, should it come to that. */
	snprintf(rt->reason, sizeof rt->reason, "%s", reason);
	if (rt->state != RUNTIME_RUN_READY)
		return;
	log_warn("runtime %s: its port stopped answering: %s", rt->cfg->name,
	    reason);
	rt->state = RUNTIME_RUN_UNREADY;
	rt->ready_since = 0;
	runtime_emit_reason(EV_RUNTIME_UNREADY, rt);
	runtime_arm_deadline(rt);
}

static void
runtime_probe_end(struct runtime_run *rt)
{
	evtimer_del(rt->claim_timer);
	rt->probe_ok = false;
	if (rt->probe == NULL)
		return;
	readiness_stop(rt->probe);
	readiness_free(rt->probe);
	rt->probe = NULL;
	config_service_clear(&rt->check);
}

/* "{port}" in s replaced by port; the caller frees the result. */
static char *
runtime_fill_port(const char *s, unsigned port)
{
	const char *at = strstr(s, "{port}");
	char *head, *rest, *out;

	if (at == NULL)
		return xstrdup(s);
	head = xstrndup(s, (size_t)(at - s));
	rest = runtime_fill_port(at + 6, port);
	out = xasprintf("%s%u%s", head, port, rest);
	free(head);
	free(rest);
	return out;
}

static int
runtime_probe_start(struct runtime_run *rt, char **cause)
{
	const char *line = rt->cfg->server_ready != NULL
	    ? rt->cfg->server_ready
	    : "tcp 127.0.0.1:{port}";
	char *ready = runtime_fill_port(line, rt->port);
	int r = config_runtime_check(rt->cfg, ready, &rt->check, cause);

	free(ready);
	if (r < 0)
		return -1;
	rt->probe = readiness_new(
	    runtime_base, &rt->check, runtime_conf, runtime_probe_cb, rt);
	readiness_start(rt->probe, true);
	runtime_arm_deadline(rt);
	return 0;
}

/* SIGTERM to rt's tree (its group first), SIGKILL to what is left of
 * the tree after its stop_timeout_ms, whether the leader is gone or not. */
static void
runtime_signal_stop(struct runtime_run *rt)
{
	struct timeval tv = clock_tv(rt->cfg->stop_timeout_ms);

	if (evtimer_pending(rt->kill_timer, NULL))
		return;
	/* A frozen process would not see the SIGTERM until thawed. */
	if (rt->paused)
		runtime_run_pause(rt, false, NULL, NULL);
	kill(-rt->pid, SIGTERM);
	tree_scan(&rt->tree);
	tree_signal(&rt->tree, SIGTERM, true);
	evtimer_add(rt->kill_timer, &tv);
}

/* SIGKILL to every process left of rt: its cgroup, and its tree (what
 * holds without one); how many the tree reached. */
static size_t
runtime_kill_tree(struct runtime_run *rt)
{
	enforce_kill(&rt->lim);
	rt->paused = false;
	if (rt->alive)
		kill(-rt->pid, SIGKILL);
	tree_scan(&rt->tree);
	return tree_signal(&rt->tree, SIGKILL, false);
}

/* What is left of rt once it is over for good: its cgroup goes when
 * empty. */
static void
runtime_release(struct runtime_run *rt)
{
	if (!rt->alive && rt->state != RUNTIME_RUN_RESTARTING &&
	    !enforce_populated(&rt->lim))
		enforce_close(&rt->lim);
}

static void
runtime_emit_paused(const struct runtime_run *rt, bool paused)
{
	msgpack_packer *pk =
	    events_begin(paused ? EV_RUNTIME_PAUSED : EV_RUNTIME_RESUMED);

	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	events_commit();
}

void
runtime_run_fresh(struct runtime_run *rt)
{
	if (!rt->lim.open)
		return;
	enforce_kill(&rt->lim);
	enforce_close(&rt->lim);
}

/* Every runtime.pause waiting is answered {frozen}. */
static void
runtime_pause_answer(struct runtime_run *rt, bool frozen)
{
	struct runtime_run_waiter *w;
	struct server_conn *c;
	msgpack_packer *pk;

	evtimer_del(rt->settle_timer);
	for (w = rt->pause_waiters; w != NULL; w = w->next)
		if ((c = server_conn_find(w->serial)) != NULL) {
			pk = server_reply_begin(c, w->id);
			msgpack_pack_map(pk, 1);
			proto_pack_kv_bool(pk, "frozen", frozen);
			server_reply_end(c);
		}
	runtime_run_waiters_free(&rt->pause_waiters);
}

static void
runtime_settle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct runtime_run *rt = arg;
	struct timeval tv = clock_tv(RUNTIME_SETTLE_TICK_MS);
	bool frozen = rt->paused && enforce_frozen(&rt->lim);

	(void)fd;
	(void)what;
	if (frozen || !rt->paused || clock_mono_ms() >= rt->settle_deadline) {
		if (!frozen && rt->paused)
			log_warn("runtime %s: a process is not frozen yet "
			         "after %d ms; the pause holds",
			    rt->cfg->name, RUNTIME_SETTLE_MS);
		runtime_pause_answer(rt, frozen);
		return;
	}
	evtimer_add(rt->settle_timer, &tv);
}

void
runtime_run_pause_wait(
    struct runtime_run *rt, struct server_conn *c, const struct proto_msg *m)
{
	runtime_run_waiter_add(&rt->pause_waiters, c, m);
	if (evtimer_pending(rt->settle_timer, NULL))
		return;
	rt->settle_deadline = clock_mono_ms() + RUNTIME_SETTLE_MS;
	runtime_settle_cb(-1, 0, rt);
}

int
runtime_run_pause(
    struct runtime_run *rt, bool pause, const char **code, const char **why)
{
	const char *w = NULL;

	if (!rt->alive || rt->paused == pause) {
		if (code != NULL) {
			*code = PROTO_E_CONFLICT;
			*why = !rt->alive ? "is not running"
			    : pause       ? "is paused already"
			                  : "is not paused";
		}
		return -1;
	}
	if (enforce_freeze(&rt->lim, pause, &w) < 0) {
		if (code != NULL) {
			*code = PROTO_E_UNAVAILABLE;
			*why = w;
		}
		return -1;
	}
	rt->paused = pause;
	if (!pause)
		runtime_pause_answer(rt, false);
	log_info("runtime %s: %s", rt->cfg->name, pause ? "paused" : "resumed");
	runtime_emit_paused(rt, pause);
	return 0;
}

/* The deadline passed with the port unanswered: the instance has failed,
 * and is stopped; its exit is handled as any (the restart policy counts
 * it a failure). */
static void
runtime_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct runtime_run *rt = arg;
	char why[RUNTIME_RUN_REASON_MAX];

	(void)fd;
	(void)what;
	if (!rt->alive ||
	    (rt->state != RUNTIME_RUN_STARTING &&
	        rt->state != RUNTIME_RUN_UNREADY))
		return;
	/* The probe's last word, cut to leave room for what came before. */
	snprintf(why, sizeof why, "port %u %s %u ms%s%.160s", rt->port,
	    rt->state == RUNTIME_RUN_STARTING ? "not ready within"
	                                      : "unready for",
	    rt->cfg->server_ready_timeout_ms, rt->reason[0] != '\0' ? ": " : "",
	    rt->reason);
	snprintf(rt->reason, sizeof rt->reason, "%s", why);
	log_warn("runtime %s: failed: %s; stopping pid %ld", rt->cfg->name,
	    rt->reason, (long)rt->pid);
	runtime_probe_end(rt);
	rt->failed = true;
	rt->state = RUNTIME_RUN_FAILED;
	runtime_emit_reason(EV_RUNTIME_FAILED, rt);
	runtime_signal_stop(rt);
}

/* ---- spawning ---- */

static void runtime_exited(struct runtime_run *rt, int status);

static void
runtime_pty_exit_cb(const char *id, pid_t pid, int status, void *arg)
{
	(void)id;
	(void)pid;
	runtime_exited(arg, status);
}

/* The program and its mode's arguments, then resume's if asked. */
static char **
runtime_argv(const struct runtime_run *rt, const char *program)
{
	const struct config_runtime *r = rt->cfg;
	const struct config_list *mode = rt->mode == RUNTIME_RUN_TUI
	    ? &r->tui_args
	    : rt->mode == RUNTIME_RUN_SERVER ? &r->server_args
	                                     : &r->rpc_args;
	size_t n = 1, i;
	char **argv =
	    xcalloc(1 + mode->n + (rt->resume ? r->resume_args.n : 0) + 1,
	        sizeof *argv);

	argv[0] = xstrdup(program);
	for (i = 0; i < mode->n; i++)
		argv[n++] = runtime_fill_port(mode->v[i], rt->port);
	for (i = 0; rt->resume && i < r->resume_args.n; i++)
		argv[n++] = xstrdup(r->resume_args.v[i]);
	return argv;
}

/* Builds the launch of rt as it was asked for: its user, its workspace,
 * the clean environment with its env, the request's, the server's
 * password and the secrets it names. */
static int
runtime_launch(
    struct runtime_run *rt, const char *program, struct launch *l, char **cause)
{
	const struct config_runtime *r = rt->cfg;
	char *none[] = {NULL}, *pass[2] = {NULL, NULL};
	char *const *extra[3] = {r->env.v != NULL ? r->env.v : none,
	    rt->req_env != NULL ? rt->req_env : none, pass};
	struct secrets_grant grant;
	struct launch_user_req req = {.user = r->user,
	    .group = r->group,
	    .cwd = rt->workspace,
	    .term = rt->mode == RUNTIME_RUN_TUI ? "xterm-256color" : NULL,
	    .extra = extra,
	    .nextra = 3,
	    .grant = &grant};
	int rc;

	if (rt->password[0] != '\0')
		pass[0] =
		    xasprintf("%s=%s", r->server_password_env, rt->password);
	secrets_grant_set(r->secrets.v, r->secrets.n, &grant);
	req.argv = runtime_argv(rt, program);
	rc = launch_user(l, &req, cause);
	if (pass[0] != NULL) {
		explicit_bzero(pass[0], strlen(pass[0]));
		free(pass[0]);
	}
	return rc;
}

static void
runtime_proc_exit_cb(const char *id, pid_t pid, int status, void *arg)
{
	(void)id;
	(void)pid;
	runtime_exited(arg, status);
}

/* The last instance's terminal stays readable (its last screen, replayed)
 * until the next instance is there: then it is closed, so that sessions
 * do not pile up one per start. */
static void
runtime_close_last_pty(struct runtime_run *rt, const char *last)
{
	if (last[0] == '\0' ||
	    (rt->mode == RUNTIME_RUN_TUI && strcmp(last, rt->pty) == 0))
		return;
	pty_close(last, "replaced");
	if (rt->mode != RUNTIME_RUN_TUI)
		rt->pty[0] = '\0';
}

int
runtime_run_spawn(struct runtime_run *rt, char **cause)
{
	struct pty_opts o = {.cols = rt->cols,
	    .rows = rt->rows,
	    .ttl = RUNTIME_TTY_TTL,
	    .ring = PTY_RING_DEFAULT,
	    .on_exit = runtime_pty_exit_cb,
	    .on_exit_arg = rt};
	char *program, target[CONFIG_MAX_NAME + 16], last_pty[PTY_ID_LEN + 1];
	struct launch l;
	struct stat st;
	int rc;

	if ((program = runtime_program_find(rt->cfg->command, &st, cause)) ==
	    NULL)
		return -1;
	rc = runtime_launch(rt, program, &l, cause);
	free(program);
	if (rc < 0)
		return -1;
	if (!rt->lim.open) {
		enforce_open(&rt->lim, "runtime", rt->cfg->name, &rt->limits,
		    l.uid == 0, l.uid);
		if (rt->limits.v[LIMIT_DISK] != 0)
			enforce_disk(&rt->lim, rt->disk_enforced, rt->disk_how);
	} else
		/* What the last instance left must not share the new one's
		 * group (a port it holds, a limit it eats into). */
		enforce_kill(&rt->lim);
	l.enforce = &rt->lim;
	rt->started = proto_now_ms();
	rt->started_mono = clock_mono_ms();
	memcpy(last_pty, rt->pty, sizeof last_pty);
	if (rt->mode == RUNTIME_RUN_TUI)
		rc = pty_open_launch(&l, &o, rt->pty, &rt->pid, cause);
	else
		rc = proc_start_launch(&l, rt->mode == RUNTIME_RUN_RPC,
		    runtime_proc_exit_cb, rt, rt->proc, &rt->pid, cause);
	if (rc == 0) {
		snprintf(target, sizeof target, "runtime/%s", rt->cfg->name);
		secrets_grant_emit(&l.grant, target);
	}
	launch_free(&l);
	if (rc < 0) {
		memcpy(rt->pty, last_pty, sizeof last_pty);
		return -1;
	}
	runtime_close_last_pty(rt, last_pty);
	/* What a stopped instance left is ended now, not by a timer that
	 * would find the new one's tree. */
	if (evtimer_pending(rt->kill_timer, NULL)) {
		evtimer_del(rt->kill_timer);
		runtime_kill_tree(rt);
	}
	tree_free(&rt->tree);
	tree_init(&rt->tree, rt->pid, NULL);
	rt->state = RUNTIME_RUN_STARTING;
	rt->alive = true;
	rt->has_exit = rt->was_ready = rt->failed = false;
	rt->ready_ms = rt->ready_since = 0;
	rt->reason[0] = '\0';
	log_info("runtime %s: %s mode, pid %ld", rt->cfg->name,
	    runtime_mode_names[rt->mode], (long)rt->pid);
	runtime_emit_started(rt);
	if (rt->mode != RUNTIME_RUN_SERVER)
		runtime_set_ready(rt);
	else if (runtime_probe_start(rt, cause) < 0) {
		/* The config checked the line: only a bug gets here. */
		log_warn("runtime %s: no readiness probe: %s", rt->cfg->name,
		    *cause);
		free(*cause);
		*cause = NULL;
	}
	return 0;
}

/* ---- exits, restarts and stops ---- */

static void
runtime_emit_exited(const struct runtime_run *rt)
{
	msgpack_packer *pk = events_begin(EV_RUNTIME_EXITED);

	msgpack_pack_map(pk, 3 + child_status_keys(rt->status));
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_str(pk, "mode", runtime_mode_names[rt->mode]);
	proto_pack_kv_u64(pk, "pid", (uint64_t)rt->pid);
	child_pack_status(pk, rt->status);
	events_commit();
}

static void
runtime_emit_restarting(const struct runtime_run *rt, unsigned delay_ms)
{
	msgpack_packer *pk = events_begin(EV_RUNTIME_RESTARTING);

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_u64(pk, "delay_ms", delay_ms);
	proto_pack_kv_u64(pk, "restarts", rt->restarts);
	events_commit();
}

static bool
runtime_should_restart(const struct runtime_run *rt)
{
	switch (rt->cfg->restart) {
	case CONFIG_RESTART_ALWAYS: return true;
	case CONFIG_RESTART_ON_FAILURE:
		return rt->failed || !WIFEXITED(rt->status) ||
		    WEXITSTATUS(rt->status) != 0;
	case CONFIG_RESTART_NEVER: break;
	}
	return false;
}

/* runtime.stop is done: runtime.stopped, and every stop answered. */
static void
runtime_stopped(struct runtime_run *rt)
{
	struct runtime_run_waiter *w;
	struct server_conn *c;

	rt->stopping = false;
	runtime_emit_name(EV_RUNTIME_STOPPED, rt);
	for (w = rt->stop_waiters; w != NULL; w = w->next)
		if ((c = server_conn_find(w->serial)) != NULL)
			server_reply_empty(c, w->id);
	runtime_run_waiters_free(&rt->stop_waiters);
}

static void runtime_schedule_restart(struct runtime_run *rt);

static void
runtime_exited(struct runtime_run *rt, int status)
{
	runtime_probe_end(rt);
	evtimer_del(rt->deadline_timer);
	/* Killed while frozen: what joins the group next must not start
	 * frozen. */
	if (rt->paused)
		runtime_run_pause(rt, false, NULL, NULL);
	rt->alive = false;
	/* A stop in progress still ends what the leader left of its tree at
	 * the stop timeout. */
	if (tree_scan(&rt->tree) == 0 && !enforce_populated(&rt->lim))
		evtimer_del(rt->kill_timer);
	rt->status = status;
	rt->has_exit = true;
	rt->state = rt->failed ? RUNTIME_RUN_FAILED : RUNTIME_RUN_EXITED;
	/* As a service's: a runtime that was ready long enough earned a
	 * fresh start of its backoff. */
	if (rt->ready_since != 0 &&
	    clock_mono_ms() - rt->ready_since >= rt->cfg->backoff_reset_ms)
		backoff_reset(&rt->backoff);
	rt->ready_since = 0;
	log_info("runtime %s: pid %ld exited (status %d)", rt->cfg->name,
	    (long)rt->pid, status);
	runtime_emit_exited(rt);
	if (rt->stopping)
		runtime_stopped(rt);
	else if (runtime_should_restart(rt))
		runtime_schedule_restart(rt);
	runtime_release(rt);
	runtime_exited_hook();
}

static void
runtime_schedule_restart(struct runtime_run *rt)
{
	struct timeval tv;
	unsigned delay;

	delay = backoff_next(&rt->backoff);
	rt->restarts++;
	rt->state = RUNTIME_RUN_RESTARTING;
	runtime_emit_restarting(rt, delay);
	tv = clock_tv(delay);
	evtimer_add(rt->restart_timer, &tv);
}

static void
runtime_restart_cb(evutil_socket_t fd, short what, void *arg)
{
	struct runtime_run *rt = arg;
	char *cause = NULL;

	(void)fd;
	(void)what;
	if (rt->state != RUNTIME_RUN_RESTARTING)
		return;
	if (runtime_run_spawn(rt, &cause) < 0) {
		log_warn("runtime %s: not restarted: %s", rt->cfg->name, cause);
		snprintf(
		    rt->reason, sizeof rt->reason, "not restarted: %s", cause);
		free(cause);
		rt->state = RUNTIME_RUN_FAILED;
		runtime_emit_reason(EV_RUNTIME_FAILED, rt);
	}
}

static void
runtime_kill_cb(evutil_socket_t fd, short what, void *arg)
{
	struct runtime_run *rt = arg;
	size_t n;

	(void)fd;
	(void)what;
	n = runtime_kill_tree(rt);
	if (n > 0)
		log_info("runtime %s: %zu processes did not stop in %u ms; "
		         "killed",
		    rt->cfg->name, n, rt->cfg->stop_timeout_ms);
	runtime_release(rt);
}

void
runtime_run_stop(
    struct runtime_run *rt, struct server_conn *c, const struct proto_msg *m)
{
	if (rt->state == RUNTIME_RUN_RESTARTING) {
		evtimer_del(rt->restart_timer);
		rt->state = RUNTIME_RUN_EXITED;
		enforce_kill(&rt->lim);
		runtime_release(rt);
		runtime_stopped(rt);
		server_reply_empty(c, m->id);
		return;
	}
	if (!runtime_run_running(rt)) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "runtime %s is not running", rt->cfg->name);
		return;
	}
	runtime_run_waiter_add(&rt->stop_waiters, c, m);
	if (rt->stopping)
		return;
	rt->stopping = true;
	log_info("runtime %s: stopping pid %ld", rt->cfg->name, (long)rt->pid);
	runtime_signal_stop(rt);
}

void
runtime_run_terminate(struct runtime_run *rt)
{
	evtimer_del(rt->restart_timer);
	if (rt->state == RUNTIME_RUN_RESTARTING)
		rt->state = RUNTIME_RUN_EXITED;
	if (!rt->alive)
		return;
	rt->stopping = true;
	runtime_signal_stop(rt);
}

void
runtime_run_free(struct runtime_run *rt)
{
	runtime_version_clear(&rt->ver);
	runtime_probe_end(rt);
	event_free(rt->restart_timer);
	event_free(rt->kill_timer);
	event_free(rt->deadline_timer);
	event_free(rt->claim_timer);
	event_free(rt->settle_timer);
	runtime_run_waiters_free(&rt->stop_waiters);
	runtime_run_waiters_free(&rt->pause_waiters);
	tree_free(&rt->tree);
	enforce_close(&rt->lim);
	child_strv_free(rt->req_env);
	explicit_bzero(rt->password, sizeof rt->password);
	memset(rt, 0, sizeof *rt);
}
