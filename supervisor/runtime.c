/* runtime: the agent runtimes' catalog and instances (see runtime.h). */
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

#include "args.h"
#include "backoff.h"
#include "catalog.h"
#include "child.h"
#include "clock.h"
#include "events.h"
#include "launch.h"
#include "log.h"
#include "pty.h"
#include "proc.h"
#include "rand.h"
#include "readiness.h"
#include "runtime.h"
#include "runtime_version.h"
#include "secrets.h"
#include "xmalloc.h"

/* A TUI session lives as long as its runtime, watched or not. */
#define RUNTIME_TTY_TTL (30u * 86400)
#define RUNTIME_PASSWORD_BYTES 16
#define RUNTIME_WAITERS_MAX 64

enum runtime_mode { RUNTIME_TUI, RUNTIME_SERVER, RUNTIME_RPC, RUNTIME_NMODES };
static const char *const runtime_mode_names[RUNTIME_NMODES] = {
    "tui", "server", "rpc"};

enum runtime_state {
	RUNTIME_STOPPED, /* never started */
	RUNTIME_STARTING,
	RUNTIME_READY,
	RUNTIME_RESTARTING, /* exited; started again after a backoff */
	RUNTIME_EXITED,
};
static const char *const runtime_state_names[] = {
    "stopped", "starting", "ready", "restarting", "exited"};

/* A request answered later (runtime.list, runtime.stop): by serial, since
 * the connection may be gone by then. */
struct runtime_waiter {
	uint64_t serial, id;
	struct runtime_waiter *next;
};

struct runtime {
	const struct config_runtime *cfg;
	struct runtime_version ver;
	enum runtime_state state;
	bool stopping;
	/* What runtime.start asked for, kept for the restarts. */
	enum runtime_mode mode;
	char workspace[4096];
	char **req_env; /* KEY=VALUE */
	bool resume;
	unsigned cols, rows, port;
	char password[2 * RUNTIME_PASSWORD_BYTES + 1]; /* "" if none */
	/* The instance. */
	pid_t pid;
	char pty[PTY_ID_LEN + 1], proc[PROC_ID_LEN + 1];
	uint64_t started, started_mono, ready_ms;
	bool was_ready; /* this instance */
	bool has_exit;
	int status;
	unsigned restarts;
	struct backoff backoff;
	struct config_service check; /* a server's probe, while it runs */
	struct readiness *probe;
	struct event *restart_timer, *kill_timer;
	struct runtime_waiter *stop_waiters;
};

static struct event_base *runtime_base;
static const struct config *runtime_conf;
static struct runtime runtime_v[CONFIG_MAX_RUNTIMES];
static size_t runtime_n;
static struct runtime_waiter *runtime_list_waiters;

static void runtime_restart_cb(evutil_socket_t fd, short what, void *arg);
static void runtime_kill_cb(evutil_socket_t fd, short what, void *arg);

void
runtime_init(struct event_base *base, const struct config *cfg)
{
	size_t i;

	runtime_base = base;
	runtime_conf = cfg;
	runtime_version_init(base);
	runtime_n = cfg->nruntimes;
	for (i = 0; i < runtime_n; i++) {
		struct runtime *rt = &runtime_v[i];
		rt->cfg = &cfg->runtimes[i];
		rt->restart_timer = evtimer_new(base, runtime_restart_cb, rt);
		rt->kill_timer = evtimer_new(base, runtime_kill_cb, rt);
	}
}

static struct runtime *
runtime_find(const char *name)
{
	size_t i;

	for (i = 0; i < runtime_n; i++)
		if (strcmp(runtime_v[i].cfg->name, name) == 0)
			return &runtime_v[i];
	return NULL;
}

/* The runtime named by "name", or NULL after an error reply. */
static struct runtime *
runtime_arg(struct server_conn *c, const struct proto_msg *m)
{
	char name[CONFIG_MAX_NAME + 2];
	struct runtime *rt;

	if (proto_arg_str(m->args, "name", name, sizeof name) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s needs \"name\" (a runtime's name)", m->op);
		return NULL;
	}
	if ((rt = runtime_find(name)) == NULL)
		server_reply_error(
		    c, m->id, PROTO_E_NOT_FOUND, "no runtime \"%s\"", name);
	return rt;
}

static bool
runtime_offers(const struct config_runtime *r, enum runtime_mode mode)
{
	switch (mode) {
	case RUNTIME_TUI: return r->has_tui;
	case RUNTIME_SERVER: return r->has_server;
	case RUNTIME_RPC: return r->has_rpc;
	case RUNTIME_NMODES: break;
	}
	return false;
}

static bool
runtime_running(const struct runtime *rt)
{
	return rt->state == RUNTIME_STARTING || rt->state == RUNTIME_READY ||
	    rt->state == RUNTIME_RESTARTING;
}

static void
runtime_waiter_add(struct runtime_waiter **list, struct server_conn *c,
    const struct proto_msg *m)
{
	struct runtime_waiter *w = xcalloc(1, sizeof *w);

	w->serial = c->serial;
	w->id = m->id;
	w->next = *list;
	*list = w;
}

static void
runtime_waiters_free(struct runtime_waiter **list)
{
	struct runtime_waiter *w;

	while ((w = *list) != NULL) {
		*list = w->next;
		free(w);
	}
}

/* ---- packing ---- */

static void
runtime_pack_str_or_nil(msgpack_packer *pk, const char *key, const char *val)
{
	proto_pack_str(pk, key);
	if (val != NULL && val[0] != '\0')
		proto_pack_str(pk, val);
	else
		msgpack_pack_nil(pk);
}

/*
 * runtime.status's answer. The server's password only to the one who asks
 * for this runtime (start, status), never in a list or an event.
 */
static void
runtime_pack_status(msgpack_packer *pk, const struct runtime *rt, bool secret)
{
	if (rt->state == RUNTIME_STOPPED) {
		msgpack_pack_map(pk, 2);
		proto_pack_kv_str(pk, "name", rt->cfg->name);
		proto_pack_kv_str(pk, "state", "stopped");
		return;
	}
	msgpack_pack_map(pk, 13);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_str(pk, "mode", runtime_mode_names[rt->mode]);
	proto_pack_kv_str(pk, "state", runtime_state_names[rt->state]);
	proto_pack_kv_u64(pk, "pid", (uint64_t)rt->pid);
	proto_pack_kv_str(pk, "workspace", rt->workspace);
	runtime_pack_str_or_nil(
	    pk, "pty", rt->mode == RUNTIME_TUI ? rt->pty : NULL);
	runtime_pack_str_or_nil(
	    pk, "proc", rt->mode != RUNTIME_TUI ? rt->proc : NULL);
	proto_pack_str(pk, "port");
	if (rt->mode == RUNTIME_SERVER)
		msgpack_pack_uint64(pk, rt->port);
	else
		msgpack_pack_nil(pk);
	runtime_pack_str_or_nil(pk, "password", secret ? rt->password : NULL);
	proto_pack_kv_u64(pk, "started", rt->started);
	proto_pack_str(pk, "ready_ms");
	if (rt->was_ready)
		msgpack_pack_uint64(pk, rt->ready_ms);
	else
		msgpack_pack_nil(pk);
	proto_pack_str(pk, "exit");
	if (rt->has_exit)
		child_pack_status_map(pk, rt->status);
	else
		msgpack_pack_nil(pk);
	proto_pack_kv_u64(pk, "restarts", rt->restarts);
}

static void
runtime_pack_entry(msgpack_packer *pk, const struct runtime *rt)
{
	const struct config_runtime *r = rt->cfg;
	const struct runtime_version *v = &rt->ver;
	unsigned nmodes = 0, i;

	for (i = 0; i < RUNTIME_NMODES; i++)
		nmodes += runtime_offers(r, (enum runtime_mode)i);
	msgpack_pack_map(pk, 12);
	proto_pack_kv_str(pk, "name", r->name);
	proto_pack_kv_str(
	    pk, "state", v->available ? "available" : "unavailable");
	runtime_pack_str_or_nil(pk, "reason", v->available ? NULL : v->reason);
	runtime_pack_str_or_nil(pk, "version", v->version);
	runtime_pack_str_or_nil(pk, "program", v->program);
	proto_pack_str(pk, "modes");
	msgpack_pack_array(pk, nmodes);
	for (i = 0; i < RUNTIME_NMODES; i++)
		if (runtime_offers(r, (enum runtime_mode)i))
			proto_pack_str(pk, runtime_mode_names[i]);
	proto_pack_kv_str(pk, "resume", r->has_resume ? "session" : "replay");
	proto_pack_kv_bool(pk, "tasks", r->tasks);
	proto_pack_kv_str(
	    pk, "busy", r->busy == CONFIG_BUSY_QUEUE ? "queue" : "reject");
	proto_pack_kv_str(pk, "user", r->user);
	proto_pack_kv_str(pk, "workspace", r->workspace);
	proto_pack_str(pk, "running");
	if (rt->state == RUNTIME_STOPPED)
		msgpack_pack_nil(pk);
	else
		runtime_pack_status(pk, rt, false);
}

/* ---- runtime.list ---- */

static void
runtime_list_answer(struct server_conn *c, uint64_t id)
{
	msgpack_packer *pk = server_reply_begin(c, id);
	size_t i;

	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "runtimes");
	msgpack_pack_array(pk, runtime_n);
	for (i = 0; i < runtime_n; i++)
		runtime_pack_entry(pk, &runtime_v[i]);
	server_reply_end(c);
}

static bool
runtime_detecting(void)
{
	size_t i;

	for (i = 0; i < runtime_n; i++)
		if (runtime_version_busy(&runtime_v[i].ver))
			return true;
	return false;
}

/* A detection ended: once none runs, every waiting list is answered. */
static void
runtime_version_done(void *arg)
{
	struct runtime_waiter *w, *list;
	struct server_conn *c;

	(void)arg;
	if (runtime_detecting())
		return;
	list = runtime_list_waiters;
	runtime_list_waiters = NULL;
	for (w = list; w != NULL; w = w->next)
		if ((c = server_conn_find(w->serial)) != NULL)
			runtime_list_answer(c, w->id);
	runtime_waiters_free(&list);
}

void
runtime_op_list(struct server_conn *c, const struct proto_msg *m)
{
	unsigned nwaiting = 0;
	struct runtime_waiter *w;
	size_t i;

	for (w = runtime_list_waiters; w != NULL; w = w->next)
		nwaiting++;
	if (nwaiting >= RUNTIME_WAITERS_MAX) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%d runtime.list requests wait already",
		    RUNTIME_WAITERS_MAX);
		return;
	}
	for (i = 0; i < runtime_n; i++)
		runtime_version_check(&runtime_v[i].ver, runtime_v[i].cfg,
		    runtime_version_done, NULL);
	if (!runtime_detecting()) {
		runtime_list_answer(c, m->id);
		return;
	}
	runtime_waiter_add(&runtime_list_waiters, c, m);
}

/* ---- events ---- */

static void
runtime_emit_started(const struct runtime *rt)
{
	msgpack_packer *pk = events_begin(EV_RUNTIME_STARTED);

	msgpack_pack_map(pk, 6);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_str(pk, "mode", runtime_mode_names[rt->mode]);
	proto_pack_kv_u64(pk, "pid", (uint64_t)rt->pid);
	if (rt->mode == RUNTIME_TUI)
		proto_pack_kv_str(pk, "pty", rt->pty);
	else
		proto_pack_kv_str(pk, "proc", rt->proc);
	proto_pack_str(pk, "port");
	if (rt->mode == RUNTIME_SERVER)
		msgpack_pack_uint64(pk, rt->port);
	else
		msgpack_pack_nil(pk);
	proto_pack_kv_str(pk, "workspace", rt->workspace);
	events_commit();
}

static void
runtime_emit_ready(const struct runtime *rt)
{
	msgpack_packer *pk = events_begin(EV_RUNTIME_READY);

	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_str(pk, "mode", runtime_mode_names[rt->mode]);
	proto_pack_str(pk, "port");
	if (rt->mode == RUNTIME_SERVER)
		msgpack_pack_uint64(pk, rt->port);
	else
		msgpack_pack_nil(pk);
	proto_pack_kv_u64(pk, "ready_ms", rt->ready_ms);
	events_commit();
}

static void
runtime_emit_name(const char *kind, const struct runtime *rt)
{
	msgpack_packer *pk = events_begin(kind);

	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	events_commit();
}

/* ---- readiness of a server ---- */

static void
runtime_set_ready(struct runtime *rt)
{
	rt->state = RUNTIME_READY;
	rt->was_ready = true;
	rt->ready_ms = clock_mono_ms() - rt->started_mono;
	runtime_emit_ready(rt);
}

static void
runtime_probe_cb(void *arg, bool ok, const char *reason)
{
	struct runtime *rt = arg;

	if (ok && rt->state == RUNTIME_STARTING) {
		log_info(
		    "runtime %s: ready on port %u", rt->cfg->name, rt->port);
		runtime_set_ready(rt);
	} else if (!ok && rt->state == RUNTIME_READY)
		log_warn("runtime %s: its port stopped answering: %s",
		    rt->cfg->name, reason);
}

static void
runtime_probe_end(struct runtime *rt)
{
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
runtime_probe_start(struct runtime *rt, char **cause)
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
	return 0;
}

/* A free loopback port: the kernel's pick, let go for the server. */
static int
runtime_free_port(unsigned *port, char **cause)
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

/* ---- spawning ---- */

static void runtime_exited(struct runtime *rt, int status);

static void
runtime_pty_exit_cb(const char *id, pid_t pid, int status, void *arg)
{
	(void)id;
	(void)pid;
	runtime_exited(arg, status);
}

/* The program and its mode's arguments, then resume's if asked. */
static char **
runtime_argv(const struct runtime *rt, const char *program)
{
	const struct config_runtime *r = rt->cfg;
	const struct config_list *mode = rt->mode == RUNTIME_TUI ? &r->tui_args
	    : rt->mode == RUNTIME_SERVER ? &r->server_args
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
    struct runtime *rt, const char *program, struct launch *l, char **cause)
{
	const struct config_runtime *r = rt->cfg;
	char *none[] = {NULL}, *pass[2] = {NULL, NULL};
	char *const *extra[3] = {r->env.v != NULL ? r->env.v : none,
	    rt->req_env != NULL ? rt->req_env : none, pass};
	struct secrets_grant grant;
	struct launch_user_req req = {.user = r->user,
	    .group = r->group,
	    .cwd = rt->workspace,
	    .term = rt->mode == RUNTIME_TUI ? "xterm-256color" : NULL,
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

/* Starts rt's process as asked for; on failure, *cause. */
static int
runtime_spawn(struct runtime *rt, char **cause)
{
	struct pty_opts o = {.cols = rt->cols,
	    .rows = rt->rows,
	    .ttl = RUNTIME_TTY_TTL,
	    .ring = PTY_RING_DEFAULT,
	    .on_exit = runtime_pty_exit_cb,
	    .on_exit_arg = rt};
	char *program, target[CONFIG_MAX_NAME + 16];
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
	rt->started = proto_now_ms();
	rt->started_mono = clock_mono_ms();
	if (rt->mode == RUNTIME_TUI)
		rc = pty_open_launch(&l, &o, rt->pty, &rt->pid, cause);
	else
		rc = proc_start_launch(&l, rt->mode == RUNTIME_RPC,
		    runtime_proc_exit_cb, rt, rt->proc, &rt->pid, cause);
	if (rc == 0) {
		snprintf(target, sizeof target, "runtime/%s", rt->cfg->name);
		secrets_grant_emit(&l.grant, target);
	}
	launch_free(&l);
	if (rc < 0)
		return -1;
	rt->state = RUNTIME_STARTING;
	rt->has_exit = rt->was_ready = false;
	rt->ready_ms = 0;
	log_info("runtime %s: %s mode, pid %ld", rt->cfg->name,
	    runtime_mode_names[rt->mode], (long)rt->pid);
	runtime_emit_started(rt);
	if (rt->mode != RUNTIME_SERVER)
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
runtime_emit_exited(const struct runtime *rt)
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
runtime_emit_restarting(const struct runtime *rt, unsigned delay_ms)
{
	msgpack_packer *pk = events_begin(EV_RUNTIME_RESTARTING);

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_u64(pk, "delay_ms", delay_ms);
	proto_pack_kv_u64(pk, "restarts", rt->restarts);
	events_commit();
}

static bool
runtime_should_restart(const struct runtime *rt)
{
	switch (rt->cfg->restart) {
	case CONFIG_RESTART_ALWAYS: return true;
	case CONFIG_RESTART_ON_FAILURE:
		return !WIFEXITED(rt->status) || WEXITSTATUS(rt->status) != 0;
	case CONFIG_RESTART_NEVER: break;
	}
	return false;
}

/* runtime.stop is done: runtime.stopped, and every stop answered. */
static void
runtime_stopped(struct runtime *rt)
{
	struct runtime_waiter *w;
	struct server_conn *c;

	rt->stopping = false;
	evtimer_del(rt->kill_timer);
	runtime_emit_name(EV_RUNTIME_STOPPED, rt);
	for (w = rt->stop_waiters; w != NULL; w = w->next)
		if ((c = server_conn_find(w->serial)) != NULL)
			server_reply_empty(c, w->id);
	runtime_waiters_free(&rt->stop_waiters);
}

static void
runtime_exited(struct runtime *rt, int status)
{
	struct timeval tv;
	unsigned delay;

	runtime_probe_end(rt);
	rt->status = status;
	rt->has_exit = true;
	rt->state = RUNTIME_EXITED;
	log_info("runtime %s: pid %ld exited (status %d)", rt->cfg->name,
	    (long)rt->pid, status);
	runtime_emit_exited(rt);
	if (rt->stopping) {
		runtime_stopped(rt);
		return;
	}
	if (!runtime_should_restart(rt))
		return;
	delay = backoff_next(&rt->backoff);
	rt->restarts++;
	rt->state = RUNTIME_RESTARTING;
	runtime_emit_restarting(rt, delay);
	tv = clock_tv(delay);
	evtimer_add(rt->restart_timer, &tv);
}

static void
runtime_restart_cb(evutil_socket_t fd, short what, void *arg)
{
	struct runtime *rt = arg;
	char *cause = NULL;

	(void)fd;
	(void)what;
	if (rt->state != RUNTIME_RESTARTING)
		return;
	if (runtime_spawn(rt, &cause) < 0) {
		log_warn("runtime %s: not restarted: %s", rt->cfg->name, cause);
		free(cause);
		rt->state = RUNTIME_EXITED;
	}
}

static void
runtime_kill_cb(evutil_socket_t fd, short what, void *arg)
{
	struct runtime *rt = arg;

	(void)fd;
	(void)what;
	if (rt->state == RUNTIME_STARTING || rt->state == RUNTIME_READY) {
		log_info("runtime %s: did not stop in %u ms; killing its group",
		    rt->cfg->name, rt->cfg->stop_timeout_ms);
		kill(-rt->pid, SIGKILL);
	}
}

/* ---- the ops ---- */

static int
runtime_arg_mode(struct server_conn *c, const struct proto_msg *m,
    const struct runtime *rt, enum runtime_mode *mode)
{
	const struct config_runtime *r = rt->cfg;
	char name[16] = "", offered[32] = "";
	unsigned i;

	for (i = 0; i < RUNTIME_NMODES; i++)
		if (runtime_offers(r, (enum runtime_mode)i))
			snprintf(offered + strlen(offered),
			    sizeof offered - strlen(offered), "%s%s",
			    offered[0] != '\0' ? ", " : "",
			    runtime_mode_names[i]);
	if (proto_arg_str(m->args, "mode", name, sizeof name) < 0)
		name[0] = '\0';
	for (i = 0; i < RUNTIME_NMODES; i++)
		if (strcmp(name, runtime_mode_names[i]) == 0 &&
		    runtime_offers(r, (enum runtime_mode)i)) {
			*mode = (enum runtime_mode)i;
			return 0;
		}
	server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
	    "runtime %s offers the modes %s; \"mode\" must be one of them",
	    r->name, offered);
	return -1;
}

/* workspace: the request's or the runtime's, an existing directory. */
static int
runtime_arg_workspace(struct server_conn *c, const struct proto_msg *m,
    struct runtime *rt, char *ws, size_t len)
{
	struct stat st;

	snprintf(ws, len, "%s", rt->cfg->workspace);
	if (proto_arg_str(m->args, "workspace", ws, len) < 0 || ws[0] != '/') {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "workspace must be an absolute path (at most %zu bytes)",
		    len - 1);
		return -1;
	}
	if (stat(ws, &st) != 0 || !S_ISDIR(st.st_mode)) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "workspace %s is not an existing directory", ws);
		return -1;
	}
	return 0;
}

/* Everything runtime.start takes beside name and mode, into rt. */
static int
runtime_arg_rest(struct server_conn *c, const struct proto_msg *m,
    struct runtime *rt, enum runtime_mode mode, char **cause)
{
	uint64_t cols = 80, rows = 24, port = 1;
	bool has_port = proto_map_get(m->args, "port") != NULL;
	const msgpack_object *e = proto_map_get(m->args, "env");
	const char *why = NULL;
	bool resume = false;
	char **env;

	if (args_range(c, m, "cols", 1, PTY_SIZE_MAX, &cols) < 0 ||
	    args_range(c, m, "rows", 1, PTY_SIZE_MAX, &rows) < 0 ||
	    (has_port && args_range(c, m, "port", 1, 65535, &port) < 0) ||
	    args_flag(c, m, "resume", &resume) < 0)
		return -1;
	if (resume && !rt->cfg->has_resume) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "runtime %s cannot resume a session of its own (its "
		    "terminal is replayed instead)",
		    rt->cfg->name);
		return -1;
	}
	if (e != NULL && e->type == MSGPACK_OBJECT_NIL)
		e = NULL;
	if ((env = launch_env_list(e, &why)) == NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", why);
		return -1;
	}
	if (mode == RUNTIME_SERVER && !has_port &&
	    runtime_free_port(&rt->port, cause) < 0) {
		child_strv_free(env);
		return -1;
	}
	child_strv_free(rt->req_env);
	rt->req_env = env;
	rt->mode = mode;
	rt->resume = resume;
	rt->cols = (unsigned)cols;
	rt->rows = (unsigned)rows;
	if (has_port)
		rt->port = (unsigned)port;
	return 0;
}

static void
runtime_new_password(struct runtime *rt)
{
	rt->password[0] = '\0';
	if (rt->mode == RUNTIME_SERVER && rt->cfg->server_password_env != NULL)
		rand_hex(rt->password, RUNTIME_PASSWORD_BYTES);
}

static void
runtime_reply_status(
    struct server_conn *c, const struct proto_msg *m, const struct runtime *rt)
{
	runtime_pack_status(server_reply_begin(c, m->id), rt, true);
	server_reply_end(c);
}

void
runtime_op_start(struct server_conn *c, const struct proto_msg *m)
{
	struct runtime *rt = runtime_arg(c, m);
	char ws[sizeof rt->workspace], *cause = NULL;
	enum runtime_mode mode;

	if (rt == NULL || runtime_arg_mode(c, m, rt, &mode) < 0)
		return;
	if (runtime_running(rt)) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "runtime %s is running already (mode %s, pid %ld)",
		    rt->cfg->name, runtime_mode_names[rt->mode], (long)rt->pid);
		return;
	}
	if (runtime_arg_workspace(c, m, rt, ws, sizeof ws) < 0)
		return;
	if (runtime_arg_rest(c, m, rt, mode, &cause) < 0) {
		if (cause != NULL)
			server_reply_error(
			    c, m->id, PROTO_E_INTERNAL, "%s", cause);
		free(cause);
		return;
	}
	memcpy(rt->workspace, ws, sizeof ws);
	runtime_new_password(rt);
	rt->restarts = 0;
	backoff_init(
	    &rt->backoff, rt->cfg->backoff_min_ms, rt->cfg->backoff_max_ms);
	if (runtime_spawn(rt, &cause) < 0) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "runtime %s: %s", rt->cfg->name, cause);
		free(cause);
		return;
	}
	runtime_reply_status(c, m, rt);
}

void
runtime_op_stop(struct server_conn *c, const struct proto_msg *m)
{
	struct runtime *rt = runtime_arg(c, m);
	struct timeval tv;

	if (rt == NULL)
		return;
	if (rt->state == RUNTIME_RESTARTING) {
		evtimer_del(rt->restart_timer);
		rt->state = RUNTIME_EXITED;
		runtime_stopped(rt);
		server_reply_empty(c, m->id);
		return;
	}
	if (!runtime_running(rt)) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "runtime %s is not running", rt->cfg->name);
		return;
	}
	runtime_waiter_add(&rt->stop_waiters, c, m);
	if (rt->stopping)
		return;
	rt->stopping = true;
	log_info("runtime %s: stopping pid %ld", rt->cfg->name, (long)rt->pid);
	kill(-rt->pid, SIGTERM);
	tv = clock_tv(rt->cfg->stop_timeout_ms);
	evtimer_add(rt->kill_timer, &tv);
}

void
runtime_op_status(struct server_conn *c, const struct proto_msg *m)
{
	struct runtime *rt = runtime_arg(c, m);

	if (rt != NULL)
		runtime_reply_status(c, m, rt);
}

void
runtime_shutdown(void)
{
	size_t i;

	for (i = 0; i < runtime_n; i++) {
		struct runtime *rt = &runtime_v[i];
		runtime_version_clear(&rt->ver);
		runtime_probe_end(rt);
		event_free(rt->restart_timer);
		event_free(rt->kill_timer);
		runtime_waiters_free(&rt->stop_waiters);
		child_strv_free(rt->req_env);
		explicit_bzero(rt->password, sizeof rt->password);
		memset(rt, 0, sizeof *rt);
	}
	runtime_waiters_free(&runtime_list_waiters);
	runtime_n = 0;
}
