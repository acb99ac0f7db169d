/* runtime: the agent runtimes' catalog and the runtime.* ops (see runtime.h;
 * each instance is runtime_run's). */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "base64.h"
#include "child.h"
#include "disk.h"
#include "inflight.h"
#include "launch.h"
#include "log.h"
#include "rand.h"
#include "runtime.h"
#include "runtime_run.h"
#include "runtime_version.h"
#include "xmalloc.h"

#define RUNTIME_WAITERS_MAX 64

static struct runtime_run runtime_v[CONFIG_MAX_RUNTIMES];
static size_t runtime_n;
static struct runtime_run_waiter *runtime_list_waiters;
/* Set while berthd shuts down: told once no runtime runs. */
static void (*runtime_all_stopped)(void);

static bool
runtime_any_running(void)
{
	size_t i;

	for (i = 0; i < runtime_n; i++)
		if (runtime_run_running(&runtime_v[i]))
			return true;
	return false;
}

static void
runtime_exited_cb(void)
{
	void (*done)(void) = runtime_all_stopped;

	if (done == NULL || runtime_any_running())
		return;
	runtime_all_stopped = NULL;
	done();
}

void
runtime_init(struct event_base *base, const struct config *cfg)
{
	size_t i;

	runtime_version_init(base);
	runtime_run_setup(base, cfg, runtime_exited_cb);
	runtime_n = cfg->nruntimes;
	for (i = 0; i < runtime_n; i++)
		runtime_run_init(&runtime_v[i], &cfg->runtimes[i]);
}

/* The workspace a disk limit bounds, or NULL. */
static const char *
runtime_disk_dir(const struct runtime_run *rt)
{
	return rt->limits.v[LIMIT_DISK] != 0 && rt->workspace[0] != '\0'
	    ? rt->workspace
	    : NULL;
}

static struct runtime_run *
runtime_find(const char *name)
{
	size_t i;

	for (i = 0; i < runtime_n; i++)
		if (strcmp(runtime_v[i].cfg->name, name) == 0)
			return &runtime_v[i];
	return NULL;
}

/* The runtime named by "name", or NULL after an error reply. */
static struct runtime_run *
runtime_arg(struct server_conn *c, const struct proto_msg *m)
{
	char name[CONFIG_MAX_NAME + 2];
	struct runtime_run *rt;

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
runtime_offers(const struct config_runtime *r, enum runtime_run_mode mode)
{
	switch (mode) {
	case RUNTIME_RUN_TUI: return r->has_tui;
	case RUNTIME_RUN_SERVER: return r->has_server;
	case RUNTIME_RUN_RPC: return r->has_rpc;
	case RUNTIME_RUN_NMODES: break;
	}
	return false;
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
runtime_pack_status(
    msgpack_packer *pk, const struct runtime_run *rt, bool secret)
{
	bool server = rt->mode == RUNTIME_RUN_SERVER;
	bool password = server && secret && rt->password[0] != '\0';
	bool reason =
	    rt->state == RUNTIME_RUN_UNREADY || rt->state == RUNTIME_RUN_FAILED;

	if (rt->state == RUNTIME_RUN_STOPPED) {
		msgpack_pack_map(pk, 2);
		proto_pack_kv_str(pk, "name", rt->cfg->name);
		proto_pack_kv_str(pk, "state", "stopped");
		return;
	}
	msgpack_pack_map(pk, 12 + server + password + reason);
	proto_pack_kv_str(pk, "name", rt->cfg->name);
	proto_pack_kv_str(pk, "mode", runtime_run_mode_name(rt->mode));
	proto_pack_kv_str(pk, "state", runtime_run_state_name(rt->state));
	if (reason)
		proto_pack_kv_str(pk, "reason", rt->reason);
	proto_pack_kv_u64(pk, "pid", (uint64_t)rt->pid);
	proto_pack_kv_str(pk, "workspace", rt->workspace);
	runtime_run_pack_where(pk, rt);
	if (password)
		proto_pack_kv_str(pk, "password", rt->password);
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
	proto_pack_kv_bool(pk, "paused", rt->paused);
	proto_pack_str(pk, "limits");
	enforce_pack(pk, &rt->lim, runtime_disk_dir(rt));
}

static void
runtime_pack_entry(msgpack_packer *pk, const struct runtime_run *rt)
{
	const struct config_runtime *r = rt->cfg;
	const struct runtime_version *v = &rt->ver;
	unsigned nmodes = 0, i;

	for (i = 0; i < RUNTIME_RUN_NMODES; i++)
		nmodes += runtime_offers(r, (enum runtime_run_mode)i);
	msgpack_pack_map(pk, 12);
	proto_pack_kv_str(pk, "name", r->name);
	proto_pack_kv_str(
	    pk, "state", v->available ? "available" : "unavailable");
	runtime_pack_str_or_nil(pk, "reason", v->available ? NULL : v->reason);
	runtime_pack_str_or_nil(pk, "version", v->version);
	runtime_pack_str_or_nil(pk, "program", v->program);
	proto_pack_str(pk, "modes");
	msgpack_pack_array(pk, nmodes);
	for (i = 0; i < RUNTIME_RUN_NMODES; i++)
		if (runtime_offers(r, (enum runtime_run_mode)i))
			proto_pack_str(pk,
			    runtime_run_mode_name((enum runtime_run_mode)i));
	proto_pack_kv_str(pk, "resume", r->has_resume ? "session" : "replay");
	proto_pack_kv_bool(pk, "tasks", r->has_task);
	proto_pack_kv_str(
	    pk, "busy", r->busy == CONFIG_BUSY_QUEUE ? "queue" : "reject");
	proto_pack_kv_str(pk, "user", r->user);
	proto_pack_kv_str(pk, "workspace", r->workspace);
	proto_pack_str(pk, "running");
	if (rt->state == RUNTIME_RUN_STOPPED)
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
	struct runtime_run_waiter *w, *list;
	struct server_conn *c;

	(void)arg;
	if (runtime_detecting())
		return;
	list = runtime_list_waiters;
	runtime_list_waiters = NULL;
	for (w = list; w != NULL; w = w->next)
		if ((c = server_conn_find(w->serial)) != NULL)
			runtime_list_answer(c, w->id);
	runtime_run_waiters_free(&list);
}

void
runtime_op_list(struct server_conn *c, const struct proto_msg *m)
{
	unsigned nwaiting = 0;
	struct runtime_run_waiter *w;
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
	runtime_run_waiter_add(&runtime_list_waiters, c, m);
}

/* ---- the ops ---- */

static int
runtime_arg_mode(struct server_conn *c, const struct proto_msg *m,
    const struct runtime_run *rt, enum runtime_run_mode *mode)
{
	const struct config_runtime *r = rt->cfg;
	char name[16] = "", offered[32] = "";
	unsigned i;

	for (i = 0; i < RUNTIME_RUN_NMODES; i++)
		if (runtime_offers(r, (enum runtime_run_mode)i))
			snprintf(offered + strlen(offered),
			    sizeof offered - strlen(offered), "%s%s",
			    offered[0] != '\0' ? ", " : "",
			    runtime_run_mode_name((enum runtime_run_mode)i));
	if (proto_arg_str(m->args, "mode", name, sizeof name) < 0)
		name[0] = '\0';
	for (i = 0; i < RUNTIME_RUN_NMODES; i++)
		if (strcmp(name,
		        runtime_run_mode_name((enum runtime_run_mode)i)) == 0 &&
		    runtime_offers(r, (enum runtime_run_mode)i)) {
			*mode = (enum runtime_run_mode)i;
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
    struct runtime_run *rt, char *ws, size_t len)
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
    struct runtime_run *rt, enum runtime_run_mode mode, char **cause)
{
	uint64_t cols = 80, rows = 24, port = 1;
	bool has_port = proto_map_get(m->args, "port") != NULL;
	const msgpack_object *e = proto_map_get(m->args, "env");
	const char *why = NULL;
	bool resume = false;
	char **env, lwhy[LIMIT_WHY_MAX];
	struct limit_set limits;

	if (limit_parse(proto_map_get(m->args, "limits"), true, &limits, lwhy) <
	    0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", lwhy);
		return -1;
	}
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
	if (mode == RUNTIME_RUN_SERVER && !has_port &&
	    runtime_run_free_port(&rt->port, cause) < 0) {
		child_strv_free(env);
		return -1;
	}
	child_strv_free(rt->req_env);
	rt->req_env = env;
	rt->limits = rt->cfg->limits;
	limit_merge(&rt->limits, &limits);
	rt->mode = mode;
	rt->resume = resume;
	rt->cols = (unsigned)cols;
	rt->rows = (unsigned)rows;
	if (has_port)
		rt->port = (unsigned)port;
	return 0;
}

static void
runtime_new_password(struct runtime_run *rt)
{
	rt->password[0] = '\0';
	if (rt->mode == RUNTIME_RUN_SERVER &&
	    rt->cfg->server_password_env != NULL)
		rand_hex(rt->password, RUNTIME_RUN_PASSWORD_BYTES);
}

static void
runtime_reply_status(struct server_conn *c, const struct proto_msg *m,
    const struct runtime_run *rt)
{
	runtime_pack_status(server_reply_begin(c, m->id), rt, true);
	server_reply_end(c);
}

/* Spawns rt and answers request id of c, unless c is NULL (the start
 * was cancelled while it waited: the runtime starts all the same). */
static void
runtime_start_spawn(struct server_conn *c, uint64_t id, struct runtime_run *rt)
{
	char *cause = NULL;

	if (runtime_run_spawn(rt, &cause) < 0) {
		if (c != NULL)
			server_reply_error(c, id, PROTO_E_UNAVAILABLE,
			    "runtime %s: %s", rt->cfg->name, cause);
		else
			log_warn("runtime %s: %s", rt->cfg->name, cause);
		free(cause);
		return;
	}
	if (c == NULL)
		return;
	runtime_pack_status(server_reply_begin(c, id), rt, true);
	server_reply_end(c);
}

/* A start waiting for its workspace's disk (disk.h): by serial, since the
 * connection may be gone by then. */
struct runtime_disk_wait {
	struct runtime_run *rt;
	uint64_t serial, id;
	bool cancelled; /* request.cancel let go of the answer */
};

/* request.cancel of a start waiting for its disk: the runtime still
 * starts, unanswered. The serial goes too, so that the end of the wait
 * ends no later request the client sends under the same id. */
static void
runtime_disk_cancel(void *arg, uint64_t serial, uint64_t id)
{
	struct runtime_disk_wait *w = arg;

	(void)serial;
	(void)id;
	w->cancelled = true;
	w->serial = 0;
}

static void
runtime_disk_done(int ok, const char *why, void *arg)
{
	struct runtime_disk_wait *w = arg;
	struct runtime_run *rt = w->rt;
	struct server_conn *c = server_conn_find(w->serial);
	const char *how;
	uint64_t used, size;

	rt->preparing = false;
	inflight_end(w->serial, w->id);
	if (ok != 0 && strncmp(why, "conflict: ", 10) == 0) {
		/* Bounded to more already: a smaller bound would lose files. */
		if (c != NULL)
			server_reply_error(c, w->id, PROTO_E_CONFLICT,
			    "runtime %s: %s", rt->cfg->name, why + 10);
		free(w);
		return;
	}
	rt->disk_enforced =
	    ok == 0 && disk_status(rt->workspace, &how, &used, &size);
	if (rt->disk_enforced)
		snprintf(rt->disk_how, sizeof rt->disk_how, "%s", how);
	else if (ok == 0)
		snprintf(rt->disk_how, sizeof rt->disk_how,
		    "unavailable: the bound is gone");
	else
		snprintf(
		    rt->disk_how, sizeof rt->disk_how, "unavailable: %s", why);
	if (ok != 0)
		log_warn("runtime %s: its workspace is not bounded: %s",
		    rt->cfg->name, why);
	if (c != NULL || w->cancelled)
		runtime_start_spawn(c, w->id, rt);
	else
		log_info("runtime %s: not started: its client is gone",
		    rt->cfg->name);
	free(w);
}

/* Bounds the workspace first, then spawns: the limit holds from the
 * first byte the runtime writes. */
static void
runtime_start_disk(
    struct server_conn *c, const struct proto_msg *m, struct runtime_run *rt)
{
	struct runtime_disk_wait *w = xcalloc(1, sizeof *w);
	struct passwd *pw = getpwnam(rt->cfg->user);

	if (pw == NULL) {
		server_reply_error(c, m->id, PROTO_E_INTERNAL,
		    "runtime %s: unknown user %s", rt->cfg->name,
		    rt->cfg->user);
		free(w);
		return;
	}
	w->rt = rt;
	w->serial = c->serial;
	w->id = m->id;
	rt->preparing = true;
	inflight_add(c, m->id, runtime_disk_cancel, w);
	disk_ensure(rt->workspace, rt->limits.v[LIMIT_DISK], pw->pw_uid,
	    pw->pw_gid, runtime_disk_done, w);
}

void
runtime_op_start(struct server_conn *c, const struct proto_msg *m)
{
	struct runtime_run *rt = runtime_arg(c, m);
	char ws[sizeof rt->workspace], *cause = NULL;
	enum runtime_run_mode mode;

	if (rt == NULL || runtime_arg_mode(c, m, rt, &mode) < 0)
		return;
	if (rt->preparing) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "runtime %s is starting already (its workspace's disk is "
		    "being prepared)",
		    rt->cfg->name);
		return;
	}
	if (runtime_run_running(rt)) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "runtime %s is running already (mode %s, pid %ld)",
		    rt->cfg->name, runtime_run_mode_name(rt->mode),
		    (long)rt->pid);
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
	runtime_run_fresh(rt);
	if (rt->limits.v[LIMIT_DISK] != 0) {
		runtime_start_disk(c, m, rt);
		return;
	}
	runtime_start_spawn(c, m->id, rt);
}

void
runtime_op_stop(struct server_conn *c, const struct proto_msg *m)
{
	struct runtime_run *rt = runtime_arg(c, m);

	if (rt != NULL)
		runtime_run_stop(rt, c, m);
}

static void
runtime_pause_op(struct server_conn *c, const struct proto_msg *m, bool pause)
{
	struct runtime_run *rt = runtime_arg(c, m);
	const char *code, *why;

	if (rt == NULL)
		return;
	if (runtime_run_pause(rt, pause, &code, &why) < 0) {
		server_reply_error(
		    c, m->id, code, "runtime %s %s", rt->cfg->name, why);
		return;
	}
	if (pause)
		runtime_run_pause_wait(rt, c, m);
	else
		server_reply_empty(c, m->id);
}

void
runtime_op_pause(struct server_conn *c, const struct proto_msg *m)
{
	runtime_pause_op(c, m, true);
}

void
runtime_op_resume(struct server_conn *c, const struct proto_msg *m)
{
	runtime_pause_op(c, m, false);
}

const struct enforce *
runtime_enforce(const char *name, const char **disk)
{
	struct runtime_run *rt = runtime_find(name);

	if (rt == NULL || rt->state == RUNTIME_RUN_STOPPED)
		return NULL;
	*disk = runtime_disk_dir(rt);
	return &rt->lim;
}

int
runtime_server_offered(const char *name)
{
	struct runtime_run *rt = runtime_find(name);

	return rt == NULL ? -1 : rt->cfg->has_server;
}

int
runtime_server_auth(const char *name, unsigned *port, char *auth, size_t size)
{
	struct runtime_run *rt = runtime_find(name);
	char userpass[CONFIG_MAX_NAME + sizeof rt->password + 2];
	int n;

	if (rt == NULL || !rt->alive || rt->mode != RUNTIME_RUN_SERVER ||
	    rt->port == 0)
		return -1;
	*port = rt->port;
	auth[0] = '\0';
	if (rt->password[0] == '\0')
		return 0;
	n = snprintf(userpass, sizeof userpass, "%s:%s",
	    rt->cfg->server_user != NULL ? rt->cfg->server_user : rt->cfg->name,
	    rt->password);
	if (n < 0 || (size_t)n >= sizeof userpass ||
	    size < 6 + BASE64_SIZE((size_t)n)) {
		explicit_bzero(userpass, sizeof userpass);
		return -1;
	}
	memcpy(auth, "Basic ", 6);
	base64_encode(userpass, (size_t)n, auth + 6);
	explicit_bzero(userpass, sizeof userpass);
	return 0;
}

void
runtime_op_status(struct server_conn *c, const struct proto_msg *m)
{
	struct runtime_run *rt = runtime_arg(c, m);

	if (rt != NULL)
		runtime_reply_status(c, m, rt);
}

void
runtime_stop_all(void (*done)(void))
{
	size_t i;

	for (i = 0; i < runtime_n; i++)
		runtime_run_terminate(&runtime_v[i]);
	runtime_all_stopped = done;
	runtime_exited_cb();
}

void
runtime_shutdown(void)
{
	size_t i;

	for (i = 0; i < runtime_n; i++)
		runtime_run_free(&runtime_v[i]);
	runtime_run_waiters_free(&runtime_list_waiters);
	runtime_n = 0;
}
