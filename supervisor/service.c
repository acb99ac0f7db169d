/* service: the service graph (see service.h). Owns every service, its
 * state, its timers, its probe and the order of starts and stops. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backoff.h"
#include "catalog.h"
#include "child.h"
#include "clock.h"
#include "events.h"
#include "landlock.h"
#include "log.h"
#include "readiness.h"
#include "proto.h"
#include "server.h"
#include "service.h"
#include "tree.h"
#include "xmalloc.h"

enum service_state {
	SERVICE_WAITING,  /* for its dependencies */
	SERVICE_STARTING, /* spawned, not ready yet */
	SERVICE_READY,
	SERVICE_UNREADY, /* was ready; its probe now fails */
	SERVICE_BACKOFF, /* exited; will start again */
	SERVICE_STOPPING,
	SERVICE_STOPPED,
	/* Too many exits, or a requirement failed: tried again after
	 * retry_failed_ms, if set, or with its requirement. */
	SERVICE_FAILED,
};

static const char *const service_state_names[] = {
    "waiting",
    "starting",
    "ready",
    "unready",
    "backoff",
    "stopping",
    "stopped",
    "failed",
};

#define SERVICE_REASON_MAX 256
#define SERVICE_MAX_GROUPS 64
/* How often the rest of a tree whose leader is gone is looked at, at
 * the least: a reaped orphan, the usual last of it, wakes the look at
 * once (service_orphans_cb), so this is the net under it. */
#define SERVICE_LINGER_POLL_MS 100
/* How long what SIGKILL did not end may take before berthd goes on. */
#define SERVICE_KILL_GRACE_MS 2000

struct service {
	const struct config_service *cfg;
	bool internal;
	enum service_state state;
	char reason[SERVICE_REASON_MAX];
	uint64_t since; /* wall ms of the last state change */
	pid_t pid;
	uint64_t started_at; /* monotonic ms of the last spawn */
	uint64_t ready_at;   /* monotonic ms it last became ready, 0 if not */
	uint64_t left_ready_at; /* monotonic ms it last left ready, 0 never */
	uint64_t restarts;
	bool exited; /* last_status is valid */
	int last_status;
	bool done;        /* exited 0 and not restarted: a finished one-shot */
	bool stop_wanted; /* stopped on purpose: no restart */
	bool restart_wanted;    /* service.restart: start again once stopped */
	struct backoff backoff; /* the restart delays */
	uint64_t *deaths;       /* monotonic ms of the last max_deaths exits */
	unsigned ndeaths;
	bool check_ok; /* the readiness check, as last announced */
	uint64_t check_since;
	char check_reason[SERVICE_REASON_MAX];
	char dep_failed[SERVICE_REASON_MAX]; /* fail, not stop, once down */
	/* The requirement whose failure failed it (it comes back with its
	 * retry); NULL if it failed by its own exits. */
	const struct service *failed_by;
	const struct service *dep_failed_by; /* dep_failed's requirement */
	struct event *timer; /* the restart delay, or the SIGKILL deadline */
	/* The processes it started (tree.h). Once the leader has exited, the
	 * service lingers in "stopping" until the rest of them are gone too:
	 * nothing of one run outlives it into the next. */
	struct tree tree;
	char run[TREE_RUN_MAX]; /* TREE_RUN_ENV=NAME:SERIAL of this run */
	bool lingering;     /* the leader is gone, the rest is being ended */
	int linger_status;  /* the leader's, for when the rest is gone */
	bool stop_sent;     /* the tree had the stop signal */
	uint64_t killed_at; /* monotonic ms of the SIGKILL, 0 if none */
	struct event *poll; /* looks at a lingering tree */
	struct readiness *probe;
	struct service *next;
};

static struct event_base *service_base;
static const struct config *service_config;
static struct service *service_list;
static void (*service_main_exit)(int);
static void (*service_done)(void);
static bool service_stopping_all;
static uint64_t service_runs; /* spawns so far, for the run tags */

static void service_schedule(void);
static void service_shutdown_step(void);
static void service_timer_cb(evutil_socket_t, short, void *);
static void service_exit_cb(pid_t, int, void *);
static void service_probe_cb(void *, bool, const char *);
static void service_poll_cb(evutil_socket_t, short, void *);

static bool
service_active(const struct service *s)
{
	return s->state == SERVICE_STARTING || s->state == SERVICE_READY ||
	    s->state == SERVICE_UNREADY || s->state == SERVICE_STOPPING;
}

static void
service_emit_name(const char *kind, const struct service *s)
{
	msgpack_packer *pk = events_begin(kind);

	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "name", s->cfg->name);
	events_commit();
}

static void
service_emit_reason(const char *kind, const struct service *s)
{
	msgpack_packer *pk = events_begin(kind);

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "name", s->cfg->name);
	proto_pack_kv_str(pk, "reason", s->reason);
	events_commit();
}

/* Announces the readiness check when its verdict changes, or the reason
 * of a failing one does: /readyz must never show a stale reason. */
static void
service_update_check(struct service *s)
{
	bool ok = s->state == SERVICE_READY;
	msgpack_packer *pk;

	if (s->internal || !s->cfg->required)
		return;
	if (ok == s->check_ok &&
	    (ok || strcmp(s->reason, s->check_reason) == 0))
		return;
	if (ok != s->check_ok)
		s->check_since = proto_now_ms();
	s->check_ok = ok;
	snprintf(
	    s->check_reason, sizeof s->check_reason, "%s", ok ? "" : s->reason);
	pk = events_begin(EV_CHECK_CHANGED);
	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "name", s->cfg->name);
	proto_pack_kv_bool(pk, "ok", ok);
	proto_pack_kv_str(pk, "reason", s->check_reason);
	events_commit();
}

static void __attribute__((format(printf, 3, 4)))
service_set(struct service *s, enum service_state st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->reason, sizeof s->reason, fmt, ap);
	va_end(ap);
	if (st != s->state)
		s->since = proto_now_ms();
	if (s->state == SERVICE_READY && st != SERVICE_READY)
		s->left_ready_at = clock_mono_ms();
	s->state = st;
	service_update_check(s);
}

/* An orphan was reaped: a lingering tree may be empty now. Looked at
 * from the loop, once however many were reaped. */
static void
service_orphans_cb(void)
{
	struct service *s;

	for (s = service_list; s != NULL; s = s->next)
		if (s->lingering)
			event_active(s->poll, EV_TIMEOUT, 1);
}

void
service_init(struct event_base *base, const struct config *cfg,
    void (*on_main_exit)(int))
{
	service_base = base;
	service_config = cfg;
	service_main_exit = on_main_exit;
	child_on_orphans(service_orphans_cb);
}

struct service *
service_add(const struct config_service *cfg, bool internal)
{
	struct service *s = xcalloc(1, sizeof *s), **tail;

	s->cfg = cfg;
	s->internal = internal;
	backoff_init(&s->backoff, cfg->backoff_min_ms, cfg->backoff_max_ms);
	s->deaths =
	    xcalloc(cfg->max_deaths ? cfg->max_deaths : 1, sizeof *s->deaths);
	s->timer = evtimer_new(service_base, service_timer_cb, s);
	s->poll = evtimer_new(service_base, service_poll_cb, s);
	s->probe = readiness_new(
	    service_base, cfg, service_config, service_probe_cb, s);
	s->state = SERVICE_WAITING;
	s->since = s->check_since = proto_now_ms();
	snprintf(s->reason, sizeof s->reason, "not started");
	for (tail = &service_list; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = s;
	return s;
}

struct service *
service_find(const char *name)
{
	struct service *s;

	for (s = service_list; s != NULL; s = s->next)
		if (strcmp(s->cfg->name, name) == 0)
			return s;
	return NULL;
}

/* The environment of a service: berthd's, then where berthd listens and
 * keeps its state (so berth's own programs find them), the user's
 * identity, the service's env lines, the probe's, and the run's tag (by
 * which a daemon it forks off is still known as its own, tree.h). The
 * caller frees it with child_strv_free. */
static char **
service_environ(const struct service *s, const struct passwd *pw,
    const char *extra, char *const *fds, size_t nfds)
{
	char *add[CONFIG_MAX_ENV + 7 + CHILD_MAX_HANDED];
	char *ident[3] = {NULL, NULL, NULL}, **env;
	char *sock, *state;
	size_t nadd = 0, i;

	sock = xasprintf("BERTH_SOCKET=%s", service_config->socket);
	add[nadd++] = sock;
	state = xasprintf("BERTH_STATE_DIR=%s", service_config->state_dir);
	add[nadd++] = state;
	if (pw != NULL) {
		ident[0] = xasprintf("HOME=%s", pw->pw_dir);
		ident[1] = xasprintf("USER=%s", pw->pw_name);
		ident[2] = xasprintf("LOGNAME=%s", pw->pw_name);
		for (i = 0; i < 3; i++)
			add[nadd++] = ident[i];
	}
	for (i = 0; i < s->cfg->env.n; i++)
		add[nadd++] = s->cfg->env.v[i];
	if (extra != NULL)
		add[nadd++] = (char *)extra;
	for (i = 0; i < nfds; i++)
		add[nadd++] = fds[i];
	/* Last: no env line of the service's own replaces it. */
	add[nadd++] = (char *)s->run;
	env = child_environ(add, nadd);
	for (i = 0; i < 3; i++)
		free(ident[i]);
	free(sock);
	free(state);
	return env;
}

/* Resolves user and group into spec. -1 with cause if either is unknown. */
static int
service_identity(const struct service *s, struct child_spec *spec,
    gid_t *groups, struct passwd **pwp, char **cause)
{
	struct passwd *pw = NULL;
	struct group *gr;
	int ngroups = SERVICE_MAX_GROUPS;

	*pwp = NULL;
	if (s->cfg->confine) {
		spec->confine = spec->set_ids = true;
		spec->uid = s->cfg->uid;
		spec->gid = groups[0] = s->cfg->gid;
		spec->groups = groups;
		spec->ngroups = 1;
		return 0;
	}
	if (s->cfg->user == NULL && s->cfg->group == NULL)
		return 0;
	spec->set_ids = true;
	spec->uid = getuid();
	spec->gid = getgid();
	if (s->cfg->user != NULL) {
		pw = getpwnam(s->cfg->user);
		if (pw == NULL) {
			*cause = xasprintf("unknown user \"%s\"", s->cfg->user);
			return -1;
		}
		spec->uid = pw->pw_uid;
		spec->gid = pw->pw_gid;
	}
	if (s->cfg->group != NULL) {
		gr = getgrnam(s->cfg->group);
		if (gr == NULL) {
			*cause =
			    xasprintf("unknown group \"%s\"", s->cfg->group);
			return -1;
		}
		spec->gid = gr->gr_gid;
	}
	if (pw != NULL &&
	    getgrouplist(pw->pw_name, spec->gid, groups, &ngroups) >= 0)
		spec->ngroups = (size_t)ngroups;
	else {
		groups[0] = spec->gid;
		spec->ngroups = 1;
	}
	spec->groups = groups;
	*pwp = pw;
	return 0;
}

/* berth-desktop's connections to berthd, each named in its environment:
 * one for check.report, one for serving the desktop ops. */
static const char *const service_conn_env[CHILD_MAX_HANDED] = {
    "BERTH_REPORT_FD", "BERTH_SERVE_FD"};

/* For berth-desktop (desktop_check): a socketpair per connection, berthd's
 * end adopted by the server as a connection limited to the desktop's ops,
 * the other handed to the child at a number clear of its notify fd, and
 * named in fds[] ("BERTH_REPORT_FD=3"; the caller frees those). Returns 0
 * or -1 with cause; what was made stays in spec for service_conns_done. */
static int
service_conns(
    const struct service *s, struct child_spec *spec, char **fds, char **cause)
{
	uid_t uid = spec->set_ids ? spec->uid : getuid();
	int sv[2], at = 3;
	char peer[64];
	size_t i;

	for (i = 0; i < CHILD_MAX_HANDED; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) !=
		    0) {
			*cause = xasprintf("socketpair: %s", strerror(errno));
			return -1;
		}
		snprintf(peer, sizeof peer, "service %s", s->cfg->name);
		if (server_adopt(sv[0], uid, s->cfg->desktop_check, peer,
		        cause) == NULL) {
			close(sv[1]);
			return -1;
		}
		if (s->cfg->probe == CONFIG_PROBE_NOTIFY_FD &&
		    at == s->cfg->notify_fd)
			at++;
		spec->hand[spec->nhand++] = (struct child_handed){sv[1], at};
		fds[i] = xasprintf("%s=%d", service_conn_env[i], at);
		at++;
	}
	return 0;
}

/* Closes berthd's copies of the ends handed to the child. */
static void
service_conns_done(struct child_spec *spec, char **fds)
{
	size_t i;

	for (i = 0; i < spec->nhand; i++)
		close(spec->hand[i].fd);
	for (i = 0; i < CHILD_MAX_HANDED; i++)
		free(fds[i]);
}

static void
service_emit_started(const struct service *s)
{
	msgpack_packer *pk = events_begin(EV_SERVICE_STARTED);

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "name", s->cfg->name);
	proto_pack_kv_u64(pk, "pid", (uint64_t)s->pid);
	events_commit();
}

static void service_after_exit(struct service *s, int status, const char *why);

/* The Landlock scope s asks for, if the kernel has it. Without it s still
 * starts: the log says what is exposed. */
static void
service_scope(const struct service *s, struct child_spec *spec)
{
	if ((s->cfg->scope & CONFIG_SCOPE_ABSTRACT_UNIX) == 0)
		return;
	if (landlock_abi() >= LANDLOCK_ABI_SCOPE) {
		spec->scope_abstract_unix = true;
		return;
	}
	log_warn("service %s: this kernel's Landlock (ABI %d, scopes need %d) "
	         "cannot keep it from abstract Unix sockets; started unscoped: "
	         "a user who binds an X display's abstract name "
	         "(@/tmp/.X11-unix/XN) while it is free receives its X "
	         "connection and its cookie",
	    s->cfg->name, landlock_abi(), LANDLOCK_ABI_SCOPE);
}

/* Spawns s now. A spawn that fails counts as an exit with status 127. */
/* berth's own processes, the gateway and berth-desktop, are the last
 * the OOM killer takes after berthd: an agent that eats the memory loses
 * its own processes, not the sandbox's door or its desktop. Lowering a
 * score needs CAP_SYS_RESOURCE; without it the log says so. */
#define SERVICE_OWN_OOM_ADJ "-900\n"

static void
service_protect(const struct service *s)
{
	char path[64];
	int fd, err = 0;

	if (!s->cfg->confine && s->cfg->desktop_check == NULL)
		return;
	snprintf(path, sizeof path, "/proc/%ld/oom_score_adj", (long)s->pid);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		err = errno;
	else {
		if (write(fd, SERVICE_OWN_OOM_ADJ,
		        strlen(SERVICE_OWN_OOM_ADJ)) < 0)
			err = errno;
		close(fd);
	}
	if (err != 0)
		log_warn("service %s: cannot lower its oom_score_adj (%s): "
		         "the OOM killer may take it before an agent's "
		         "processes",
		    s->cfg->name, strerror(err));
}

static void
service_spawn(struct service *s)
{
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	gid_t groups[SERVICE_MAX_GROUPS];
	const char *probe_env = NULL;
	struct passwd *pw;
	char *cause = NULL, **env = NULL, *path;
	char *fds[CHILD_MAX_HANDED] = {NULL, NULL};
	size_t nfds = s->cfg->desktop_check != NULL ? CHILD_MAX_HANDED : 0;

	if (s->cfg->check) {
		/* Nothing to run: the probe is the whole of it. */
		service_set(s, SERVICE_STARTING, "checking");
		s->started_at = clock_mono_ms();
		s->ready_at = 0;
		readiness_start(s->probe, true);
		return;
	}
	service_set(s, SERVICE_STARTING, "starting");
	service_emit_name(EV_SERVICE_STARTING, s);
	/* berth's own programs live beside berthd or in its libexec
	 * directory, not in PATH. */
	path = strncmp(s->cfg->argv[0], "berth-", 6) == 0
	    ? child_berth_program(s->cfg->argv[0])
	    : NULL;
	spec.path = path != NULL ? path : s->cfg->argv[0];
	spec.argv = s->cfg->argv;
	spec.cwd = s->cfg->cwd;
	service_scope(s, &spec);
	if (service_identity(s, &spec, groups, &pw, &cause) == 0 &&
	    (nfds == 0 || service_conns(s, &spec, fds, &cause) == 0) &&
	    readiness_prepare(s->probe, &spec, &probe_env, &cause) == 0) {
		snprintf(s->run, sizeof s->run, "%s=%s:%" PRIu64, TREE_RUN_ENV,
		    s->cfg->name, ++service_runs);
		env = service_environ(s, pw, probe_env, fds, nfds);
		spec.envp = env;
		s->pid = child_spawn(&spec, service_exit_cb, s, &cause);
	} else
		s->pid = -1;
	service_conns_done(&spec, fds);
	child_strv_free(env);
	free(path);
	s->started_at = clock_mono_ms();
	s->ready_at = 0;
	if (s->pid < 0) {
		s->pid = 0;
		readiness_start(s->probe, false);
		log_warn("service %s: %s", s->cfg->name, cause);
		service_after_exit(s, 127 << 8, cause);
		free(cause);
		return;
	}
	service_protect(s);
	tree_init(&s->tree, s->pid, s->run);
	s->stop_sent = false;
	s->killed_at = 0;
	log_info("service %s started, pid %ld", s->cfg->name, (long)s->pid);
	service_emit_started(s);
	readiness_start(s->probe, true);
}

/* Whether dep lets a dependent start: ready, or a finished one-shot. */
static bool
service_dep_ok(const struct service *dep)
{
	return dep->state == SERVICE_READY || dep->state == SERVICE_UNREADY ||
	    dep->done;
}

/* Whether s waits for dep (of its after list if after, else of
 * requires) to start: dep is not ready and will come, or may. */
static bool
service_waits_for(const struct service *dep, bool after)
{
	return !service_dep_ok(dep) && dep->state != SERVICE_FAILED &&
	    !(after && dep->state == SERVICE_STOPPED);
}

/* Checks s's dependencies: 1 all met, 0 still waiting (reason set), -1 a
 * requirement failed (reason set, *failed the requirement). */
static int
service_deps(
    struct service *s, char *why, size_t len, const struct service **failed)
{
	const struct config_list *lists[2] = {
	    &s->cfg->requires, &s->cfg->after};
	struct service *dep;
	size_t l, i;

	for (l = 0; l < 2; l++)
		for (i = 0; i < lists[l]->n; i++) {
			dep = service_find(lists[l]->v[i]);
			if (dep == NULL || service_dep_ok(dep))
				continue;
			/* An "after" whose service will not come is no reason
			 * to wait; a requirement that failed fails us. */
			if (dep->state == SERVICE_FAILED && l == 0) {
				snprintf(why, len, "requires %s, which failed",
				    dep->cfg->name);
				*failed = dep;
				return -1;
			}
			if (!service_waits_for(dep, l == 1))
				continue;
			snprintf(why, len, "waiting for %s", dep->cfg->name);
			return 0;
		}
	return 1;
}

static void service_signal_stop(struct service *s);

/* The delay of a failed service's retry; 0: none of its own (never, or
 * with the requirement that failed it). */
static unsigned
service_retry_ms(const struct service *s)
{
	return s->failed_by == NULL ? s->cfg->retry_failed_ms : 0;
}

static void
service_emit_failed(const struct service *s)
{
	msgpack_packer *pk = events_begin(EV_SERVICE_FAILED);

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "name", s->cfg->name);
	proto_pack_kv_str(pk, "reason", s->reason);
	proto_pack_kv_u64(pk, "retry_ms", service_retry_ms(s));
	events_commit();
}

/* Fails s (by its own exits if by is NULL, else because it requires by,
 * which failed), and with it every service that requires it: a waiting
 * or backing-off one at once, a running one once it has stopped. A
 * failure of its own is tried again after retry_failed_ms. */
static void
service_fail(struct service *s, const char *reason, const struct service *by)
{
	char why[SERVICE_REASON_MAX];
	struct service *o;
	struct timeval tv;
	size_t i;

	evtimer_del(s->timer);
	s->failed_by = by;
	service_set(s, SERVICE_FAILED, "%s", reason);
	log_warn("service %s failed: %s", s->cfg->name, reason);
	service_emit_failed(s);
	if (service_retry_ms(s) != 0 && !service_stopping_all) {
		tv = clock_tv(service_retry_ms(s));
		evtimer_add(s->timer, &tv);
	}
	snprintf(why, sizeof why, "requires %s, which failed", s->cfg->name);
	for (o = service_list; o != NULL; o = o->next) {
		if (o->state == SERVICE_FAILED || o->state == SERVICE_STOPPED)
			continue;
		for (i = 0; i < o->cfg->requires.n; i++)
			if (strcmp(o->cfg->requires.v[i], s->cfg->name) == 0)
				break;
		if (i == o->cfg->requires.n)
			continue;
		if (o->state == SERVICE_WAITING || o->state == SERVICE_BACKOFF)
			service_fail(o, why, s);
		else {
			snprintf(
			    o->dep_failed, sizeof o->dep_failed, "%s", why);
			o->dep_failed_by = s;
			service_signal_stop(o);
		}
	}
}

/* Starts every waiting service whose dependencies are met. A start can
 * fail at once and change what others wait for, so loop until still. */
static void
service_schedule(void)
{
	char why[SERVICE_REASON_MAX];
	const struct service *failed = NULL;
	struct service *s;
	bool again = true;

	if (service_stopping_all)
		return;
	while (again) {
		again = false;
		for (s = service_list; s != NULL; s = s->next) {
			if (s->state != SERVICE_WAITING)
				continue;
			switch (service_deps(s, why, sizeof why, &failed)) {
			case 1:
				service_spawn(s);
				again = true;
				break;
			case -1:
				service_fail(s, why, failed);
				again = true;
				break;
			default:
				if (strcmp(why, s->reason) != 0)
					service_set(
					    s, SERVICE_WAITING, "%s", why);
				break;
			}
		}
	}
}

void
service_start_all(void)
{
	service_schedule();
}

static void
service_probe_cb(void *arg, bool ok, const char *reason)
{
	struct service *s = arg;

	if (ok) {
		if (s->state != SERVICE_STARTING && s->state != SERVICE_UNREADY)
			return;
		s->ready_at = clock_mono_ms();
		log_info("service %s ready", s->cfg->name);
		/* The service's own event first, then the check's verdict. */
		service_emit_name(EV_SERVICE_READY, s);
		service_set(s, SERVICE_READY, "%s", "");
		service_schedule();
		return;
	}
	if (s->state == SERVICE_STARTING) {
		/* Not ready yet is no news, but /readyz shows why. */
		service_set(s, SERVICE_STARTING, "starting: %s", reason);
		return;
	}
	if (s->state != SERVICE_READY &&
	    !(s->state == SERVICE_UNREADY && strcmp(s->reason, reason) != 0))
		return;
	s->ready_at = 0;
	snprintf(s->reason, sizeof s->reason, "%s", reason);
	log_warn("service %s unready: %s", s->cfg->name, reason);
	service_emit_reason(EV_SERVICE_UNREADY, s);
	service_set(s, SERVICE_UNREADY, "%s", reason);
}

static void
service_emit_exited(const struct service *s, pid_t pid, int status)
{
	msgpack_packer *pk = events_begin(EV_SERVICE_EXITED);

	msgpack_pack_map(pk, 2 + child_status_keys(status));
	proto_pack_kv_str(pk, "name", s->cfg->name);
	proto_pack_kv_u64(pk, "pid", (uint64_t)pid);
	child_pack_status(pk, status);
	events_commit();
}

bool
service_exit_ok(const struct service *s, int status)
{
	return WIFEXITED(status) && config_exit_ok(s->cfg, WEXITSTATUS(status));
}

static bool
service_policy_restarts(const struct service *s, int status)
{
	switch (s->cfg->restart) {
	case CONFIG_RESTART_ALWAYS: return true;
	case CONFIG_RESTART_ON_FAILURE: return !service_exit_ok(s, status);
	case CONFIG_RESTART_NEVER: break;
	}
	return false;
}

/* Records an exit; true if that makes max_deaths within the window. */
static bool
service_too_many_deaths(struct service *s)
{
	unsigned max = s->cfg->max_deaths;
	uint64_t now = clock_mono_ms();

	if (max == 0)
		return false;
	if (s->ndeaths == max) {
		memmove(
		    s->deaths, s->deaths + 1, (max - 1) * sizeof *s->deaths);
		s->ndeaths--;
	}
	s->deaths[s->ndeaths++] = now;
	return s->ndeaths == max &&
	    now - s->deaths[0] <= s->cfg->death_window_ms;
}

/* service.restarting: after delay_ms; dep, if not NULL, the dependency
 * whose going away excused the exit; retry, a failed service tried
 * again. */
static void
service_emit_restarting(const struct service *s, unsigned delay_ms,
    const struct service *dep, bool retry)
{
	msgpack_packer *pk = events_begin(EV_SERVICE_RESTARTING);

	msgpack_pack_map(pk, 3 + (dep != NULL) + retry);
	proto_pack_kv_str(pk, "name", s->cfg->name);
	proto_pack_kv_u64(pk, "delay_ms", delay_ms);
	proto_pack_kv_u64(pk, "restarts", s->restarts);
	if (dep != NULL)
		proto_pack_kv_str(pk, "dependency", dep->cfg->name);
	if (retry)
		proto_pack_kv_bool(pk, "retry", true);
	events_commit();
}

static void
service_schedule_restart(struct service *s, const char *exit_desc)
{
	unsigned delay_ms = backoff_next(&s->backoff);
	struct timeval tv = clock_tv(delay_ms);

	s->restarts++;
	service_set(
	    s, SERVICE_BACKOFF, "%s; restarting in %u ms", exit_desc, delay_ms);
	service_emit_restarting(s, delay_ms, NULL, false);
	evtimer_add(s->timer, &tv);
}

/* Whether s's leader has exited and is not reaped yet. The X server and
 * its clients die together; when a client's exit is handled first, the
 * server's death is already known to the kernel, if not to berthd: the
 * exit is still the server's doing. WNOWAIT leaves it to be reaped. */
static bool
service_leader_exited(const struct service *s)
{
	siginfo_t si;

	if (s->pid <= 0)
		return false;
	memset(&si, 0, sizeof si);
	return waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) ==
	    0 &&
	    si.si_pid == s->pid;
}

/* The dependency whose going away explains s's exit, or NULL: one of its
 * after/requires targets left ready since s last started, is not ready
 * now and will be waited for, or has died unreaped. Such an exit is not
 * s's own fault, and it excuses one exit per departure: s starts again
 * only once that target is back, which a next run must then outlive. */
static const struct service *
service_dep_gone(const struct service *s)
{
	const struct config_list *lists[2] = {
	    &s->cfg->requires, &s->cfg->after};
	const struct service *dep;
	size_t l, i;

	for (l = 0; l < 2; l++)
		for (i = 0; i < lists[l]->n; i++) {
			dep = service_find(lists[l]->v[i]);
			if (dep == NULL || dep == s)
				continue;
			if (dep->left_ready_at != 0 &&
			    dep->left_ready_at >= s->started_at)
				return dep;
			if (service_waits_for(dep, l == 1) ||
			    service_leader_exited(dep))
				return dep;
		}
	return NULL;
}

/* An exit dep's going away caused: not counted toward max_deaths, no
 * step of the backoff; s waits for dep, and starts the moment its
 * dependencies are ready, as at boot. */
static void
service_wait_dep(
    struct service *s, const char *exit_desc, const struct service *dep)
{
	s->restarts++;
	log_info("service %s %s after %s went away: not counted", s->cfg->name,
	    exit_desc, dep->cfg->name);
	service_set(s, SERVICE_WAITING, "%s after %s went away (not counted)",
	    exit_desc, dep->cfg->name);
	service_emit_restarting(s, 0, dep, false);
	service_schedule();
}

/* What happens after s's process is gone, or never came (why says why). */
static void
service_after_exit(struct service *s, int status, const char *why)
{
	char desc[SERVICE_REASON_MAX];
	const struct service *dep;
	bool again;

	s->exited = true;
	s->last_status = status;
	s->done = false;
	evtimer_del(s->timer);
	if (why != NULL)
		snprintf(desc, sizeof desc, "%s", why);
	else if (WIFSIGNALED(status))
		snprintf(
		    desc, sizeof desc, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(desc, sizeof desc, "exited with status %d",
		    WEXITSTATUS(status));
	if (s->ready_at != 0 &&
	    clock_mono_ms() - s->ready_at >= s->cfg->backoff_reset_ms)
		backoff_reset(&s->backoff);
	s->ready_at = 0;
	if (s->dep_failed[0] != '\0' && !service_stopping_all) {
		s->stop_wanted = s->restart_wanted = false;
		snprintf(desc, sizeof desc, "%s", s->dep_failed);
		s->dep_failed[0] = '\0';
		service_fail(s, desc, s->dep_failed_by);
		service_schedule();
		return;
	}
	if (s->stop_wanted || s->restart_wanted || service_stopping_all) {
		again = s->restart_wanted && !service_stopping_all;
		s->stop_wanted = s->restart_wanted = false;
		service_set(s, again ? SERVICE_WAITING : SERVICE_STOPPED, "%s",
		    again ? "restarting" : "stopped");
		/* A stopped "after" dependency is no longer waited for. */
		service_schedule();
		service_shutdown_step();
		return;
	}
	if (service_policy_restarts(s, status) &&
	    (dep = service_dep_gone(s)) != NULL) {
		service_wait_dep(s, desc, dep);
		return;
	}
	if (service_too_many_deaths(s)) {
		snprintf(desc + strlen(desc), sizeof desc - strlen(desc),
		    " (%u exits within %u ms)", s->cfg->max_deaths,
		    s->cfg->death_window_ms);
		service_fail(s, desc, NULL);
	} else if (service_policy_restarts(s, status)) {
		service_schedule_restart(s, desc);
		return;
	} else {
		s->done = service_exit_ok(s, status);
		service_set(s, SERVICE_STOPPED, "%s", desc);
	}
	if (s->cfg->main && service_main_exit != NULL)
		service_main_exit(status);
	service_schedule();
}

/* Sends the stop signal to s's whole tree: its group at once (what it
 * forks meanwhile goes too), and those that left the group one by one. */
static void
service_send_stop(struct service *s)
{
	struct timeval tv = clock_tv(s->cfg->stop_timeout_ms);
	pid_t leader = s->tree.leader;

	tree_scan(&s->tree);
	if (kill(-leader, s->cfg->stop_signal) != 0 && s->pid > 0)
		kill(s->pid, s->cfg->stop_signal);
	tree_signal(&s->tree, s->cfg->stop_signal, true);
	s->stop_sent = true;
	evtimer_add(s->timer, &tv);
}

static void
service_emit_killed(const struct service *s, size_t n)
{
	msgpack_packer *pk = events_begin(EV_SERVICE_KILLED);

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "name", s->cfg->name);
	proto_pack_kv_u64(pk, "count", n);
	events_commit();
}

/* The stop timeout passed: SIGKILL to whatever of the tree is left,
 * leader or not, counted for the log and the event. */
static void
service_kill(struct service *s)
{
	size_t n;

	tree_scan(&s->tree);
	n = tree_signal(&s->tree, SIGKILL, false);
	kill(-s->tree.leader, SIGKILL);
	s->killed_at = clock_mono_ms();
	if (n == 0)
		return;
	log_warn("service %s did not stop in %u ms: SIGKILL to %zu "
	         "process%s",
	    s->cfg->name, s->cfg->stop_timeout_ms, n, n == 1 ? "" : "es");
	service_emit_killed(s, n);
}

static void
service_poll(struct service *s)
{
	struct timeval tv = clock_tv(SERVICE_LINGER_POLL_MS);

	evtimer_add(s->poll, &tv);
}

/* Members born after the stop signal (or the SIGKILL) get it too: each
 * process of the tree is told once. */
static void
service_signal_late(struct service *s)
{
	tree_signal_new(
	    &s->tree, s->killed_at != 0 ? SIGKILL : s->cfg->stop_signal);
}

/* The leader of s has exited. If processes of its tree are left, s
 * lingers: they get the stop signal (unless a stop sent it already, whose
 * deadline still stands) and SIGKILL at the deadline, and s goes on from
 * the leader's exit only once they are gone. Returns whether s lingers. */
static bool
service_linger(struct service *s, int status)
{
	size_t n = tree_scan(&s->tree);

	if (n == 0)
		return false;
	s->lingering = true;
	s->linger_status = status;
	if (s->state != SERVICE_STOPPING)
		service_set(s, SERVICE_STOPPING,
		    "its leader exited; ending the %zu process%s left", n,
		    n == 1 ? "" : "es");
	if (!s->stop_sent) {
		log_info("service %s: ending the %zu process%s its leader "
		         "left",
		    s->cfg->name, n, n == 1 ? "" : "es");
		service_send_stop(s);
	} else
		service_signal_late(s);
	service_poll(s);
	return true;
}

/* Whether a lingering tree is done: gone, or what is left survived
 * SIGKILL for SERVICE_KILL_GRACE_MS (a process stuck in the kernel; the
 * log says so, and s goes on without it). */
static bool
service_linger_over(struct service *s)
{
	size_t n = tree_scan(&s->tree);

	if (n == 0)
		return true;
	if (s->killed_at == 0 ||
	    clock_mono_ms() - s->killed_at < SERVICE_KILL_GRACE_MS)
		return false;
	log_warn("service %s: %zu process%s survived SIGKILL for %d ms; going "
	         "on without them",
	    s->cfg->name, n, n == 1 ? "" : "es", SERVICE_KILL_GRACE_MS);
	return true;
}

static void
service_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct service *s = arg;

	(void)fd;
	(void)what;
	if (!s->lingering)
		return;
	if (!service_linger_over(s)) {
		service_signal_late(s);
		service_poll(s);
		return;
	}
	s->lingering = false;
	evtimer_del(s->poll);
	tree_free(&s->tree);
	service_after_exit(s, s->linger_status, NULL);
}

static void
service_exit_cb(pid_t pid, int status, void *arg)
{
	struct service *s = arg;

	s->pid = 0;
	readiness_stop(s->probe);
	if (WIFSIGNALED(status))
		log_info("service %s (pid %ld) killed by signal %d",
		    s->cfg->name, (long)pid, WTERMSIG(status));
	else
		log_info("service %s (pid %ld) exited with status %d",
		    s->cfg->name, (long)pid, WEXITSTATUS(status));
	service_emit_exited(s, pid, status);
	if (service_linger(s, status))
		return;
	tree_free(&s->tree);
	service_after_exit(s, status, NULL);
}

/* A fresh start, as at boot or service.start: no exit counted, the
 * backoff at its floor; it starts once its dependencies are ready. */
static void
service_revive(struct service *s, const char *reason)
{
	evtimer_del(s->timer);
	s->ndeaths = 0;
	s->done = false;
	s->dep_failed[0] = '\0';
	s->failed_by = s->dep_failed_by = NULL;
	backoff_reset(&s->backoff);
	service_set(s, SERVICE_WAITING, "%s", reason);
}

/* s, failed, is tried again: and with it what failed because it
 * requires s. */
static void
service_retry_one(struct service *s, const char *reason)
{
	struct service *o;

	s->restarts++;
	log_info("service %s: %s", s->cfg->name, reason);
	service_emit_restarting(s, 0, NULL, true);
	service_revive(s, reason);
	for (o = service_list; o != NULL; o = o->next)
		if (o->state == SERVICE_FAILED && o->failed_by == s)
			service_retry_one(
			    o, "tried again with what it requires");
}

/* retry_failed_ms after s failed by its own exits. */
static void
service_retry(struct service *s)
{
	char why[SERVICE_REASON_MAX];

	snprintf(why, sizeof why, "tried again %u ms after it failed",
	    s->cfg->retry_failed_ms);
	service_retry_one(s, why);
	service_schedule();
}

static void
service_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct service *s = arg;

	(void)fd;
	(void)what;
	if (s->state == SERVICE_BACKOFF) {
		/* Straight on to starting (or waiting, with its reason): no
		 * verdict of its own to announce in between. */
		s->state = SERVICE_WAITING;
		s->since = proto_now_ms();
		service_schedule();
	} else if (s->state == SERVICE_STOPPING && (s->pid > 0 || s->lingering))
		service_kill(s);
	else if (s->state == SERVICE_FAILED && !service_stopping_all)
		service_retry(s);
}

static void
service_shutdown_step_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	service_shutdown_step();
}

/* A check has no process: it stops at once, and starts again at once if
 * service.restart asked for that. During shutdown no exit will come to
 * take the next step, so the check's stop takes it, from the loop (the
 * current step is still running). */
static void
service_stop_check(struct service *s)
{
	readiness_stop(s->probe);
	service_set(s, SERVICE_STOPPED, "stopped");
	if (service_stopping_all)
		event_base_once(service_base, -1, EV_TIMEOUT,
		    service_shutdown_step_cb, NULL, NULL);
	else if (s->restart_wanted) {
		s->restart_wanted = false;
		service_set(s, SERVICE_WAITING, "starting");
		service_schedule();
	}
}

/* Sends s's tree its stop signal and arms the SIGKILL deadline. Not
 * running: stopped now. */
static void
service_signal_stop(struct service *s)
{
	/* Its deadline stands. Lingering after its leader: no restart once
	 * the rest is gone. */
	if (s->state == SERVICE_STOPPING) {
		s->stop_wanted = true;
		return;
	}
	evtimer_del(s->timer);
	if (!service_active(s)) {
		if (s->state != SERVICE_FAILED)
			service_set(s, SERVICE_STOPPED, "stopped");
		return;
	}
	if (s->cfg->check) {
		service_stop_check(s);
		return;
	}
	s->stop_wanted = true;
	readiness_stop(s->probe);
	service_set(s, SERVICE_STOPPING, "stopping");
	service_send_stop(s);
}

/* Whether an active service still depends on s. */
static bool
service_needed(const struct service *s)
{
	const struct service *o;
	size_t i;

	for (o = service_list; o != NULL; o = o->next) {
		if (o == s || !service_active(o))
			continue;
		for (i = 0; i < o->cfg->after.n; i++)
			if (strcmp(o->cfg->after.v[i], s->cfg->name) == 0)
				return true;
		for (i = 0; i < o->cfg->requires.n; i++)
			if (strcmp(o->cfg->requires.v[i], s->cfg->name) == 0)
				return true;
	}
	return false;
}

/* One round of the ordered shutdown: stop what nothing depends on any
 * more (berth's own service last); finish when nothing runs. */
static void
service_shutdown_step(void)
{
	struct service *s;
	bool others = false, any = false;
	void (*done)(void);

	if (!service_stopping_all)
		return;
	for (s = service_list; s != NULL; s = s->next)
		if (!s->internal && service_active(s))
			others = true;
	for (s = service_list; s != NULL; s = s->next) {
		if (!service_active(s) && s->state != SERVICE_STOPPED &&
		    s->state != SERVICE_FAILED)
			service_signal_stop(s);
		if (service_active(s) && s->state != SERVICE_STOPPING &&
		    !service_needed(s) && (!s->internal || !others))
			service_signal_stop(s);
		/* Counted after the stop: a check is gone at once. */
		if (service_active(s))
			any = true;
	}
	if (!any && service_done != NULL) {
		done = service_done;
		service_done = NULL;
		done();
	}
}

void
service_shutdown(void (*done)(void))
{
	service_stopping_all = true;
	service_done = done;
	service_shutdown_step();
}

int
service_start(struct service *s, const char **code, char **cause)
{
	if (service_stopping_all) {
		*code = PROTO_E_CONFLICT;
		*cause = xstrdup("berthd is shutting down");
		return -1;
	}
	if (s->state == SERVICE_STOPPING) {
		s->restart_wanted = true;
		return 0;
	}
	if (s->state == SERVICE_STOPPED || s->state == SERVICE_FAILED ||
	    s->state == SERVICE_BACKOFF) {
		service_revive(s, "starting");
		service_schedule();
	}
	return 0;
}

int
service_stop(struct service *s, const char **code, char **cause)
{
	if (s->internal) {
		*code = PROTO_E_FORBIDDEN;
		*cause = xasprintf(
		    "%s is berth's own; restart it instead", s->cfg->name);
		return -1;
	}
	s->restart_wanted = false;
	service_signal_stop(s);
	return 0;
}

int
service_restart(struct service *s, const char **code, char **cause)
{
	if (!service_active(s))
		return service_start(s, code, cause);
	if (service_stopping_all) {
		*code = PROTO_E_CONFLICT;
		*cause = xstrdup("berthd is shutting down");
		return -1;
	}
	s->restart_wanted = true;
	service_signal_stop(s);
	return 0;
}

/* Sends sig to the process group of s; -1 if it has none. */
static int
service_kill_group(const struct service *s, int sig)
{
	if (s->pid <= 0 && !s->lingering)
		return -1;
	if (kill(-s->tree.leader, sig) == 0)
		return 0;
	return s->pid > 0 ? kill(s->pid, sig) : -1;
}

int
service_signal(struct service *s, int sig, const char **code, char **cause)
{
	if (s->internal) {
		*code = PROTO_E_FORBIDDEN;
		*cause = xasprintf("%s is berth's own", s->cfg->name);
		return -1;
	}
	if (s->cfg->check) {
		*code = PROTO_E_CONFLICT;
		*cause =
		    xasprintf("%s is a check: it has no process", s->cfg->name);
		return -1;
	}
	if (service_kill_group(s, sig) != 0) {
		*code = PROTO_E_CONFLICT;
		*cause = xasprintf("%s is not running (%s)", s->cfg->name,
		    service_state_names[s->state]);
		return -1;
	}
	log_info(
	    "service %s: signal %d to its process group", s->cfg->name, sig);
	return 0;
}

size_t
service_forward(int sig)
{
	struct service *s, *main = NULL;
	size_t n = 0;
	bool asked = false;

	for (s = service_list; s != NULL; s = s->next) {
		if (s->cfg->main)
			main = s;
		if (!s->cfg->forward)
			continue;
		asked = true;
		if (service_kill_group(s, sig) == 0)
			n++;
	}
	if (!asked && main != NULL && service_kill_group(main, sig) == 0)
		n++;
	return n;
}

int
service_report(struct service *s, bool ok, const char *reason)
{
	return readiness_report(s->probe, ok, reason);
}

bool
service_last_exit(const struct service *s, int *status)
{
	*status = s->last_status;
	return s->exited;
}

static void
service_pack_exit(msgpack_packer *pk, const struct service *s)
{
	if (!s->exited)
		msgpack_pack_nil(pk);
	else
		child_pack_status_map(pk, s->last_status);
}

/* The fields every view of a service has; n more follow in the map. */
static void
service_pack_head(msgpack_packer *pk, const struct service *s, size_t more)
{
	msgpack_pack_map(pk, 10 + more);
	proto_pack_kv_str(pk, "name", s->cfg->name);
	proto_pack_kv_str(pk, "kind", s->cfg->check ? "check" : "service");
	proto_pack_kv_str(pk, "state", service_state_names[s->state]);
	proto_pack_kv_str(pk, "reason", s->reason);
	proto_pack_kv_u64(pk, "pid", s->pid > 0 ? (uint64_t)s->pid : 0);
	proto_pack_kv_u64(pk, "since", s->since);
	proto_pack_kv_u64(
	    pk, "uptime_ms", s->pid > 0 ? clock_mono_ms() - s->started_at : 0);
	proto_pack_kv_u64(pk, "restarts", s->restarts);
	proto_pack_kv_bool(pk, "required", !s->internal && s->cfg->required);
	proto_pack_str(pk, "last_exit");
	service_pack_exit(pk, s);
}

void
service_pack_list(msgpack_packer *pk)
{
	const struct service *s;
	size_t n = 0;

	for (s = service_list; s != NULL; s = s->next)
		n++;
	msgpack_pack_array(pk, n);
	for (s = service_list; s != NULL; s = s->next)
		service_pack_head(pk, s, 0);
}

static void
service_pack_strings(
    msgpack_packer *pk, const char *key, char *const *v, size_t n)
{
	size_t i;

	proto_pack_str(pk, key);
	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++)
		proto_pack_str(pk, v[i]);
}

void
service_pack_status(msgpack_packer *pk, const struct service *s)
{
	size_t argc = 0;

	while (s->cfg->argv != NULL && s->cfg->argv[argc] != NULL)
		argc++;
	service_pack_head(pk, s, 6);
	service_pack_strings(pk, "command", s->cfg->argv, argc);
	service_pack_strings(pk, "after", s->cfg->after.v, s->cfg->after.n);
	service_pack_strings(
	    pk, "requires", s->cfg->requires.v, s->cfg->requires.n);
	proto_pack_kv_str(pk, "probe", config_probe_name(s->cfg->probe));
	proto_pack_kv_str(pk, "restart_policy",
	    s->cfg->restart == CONFIG_RESTART_ALWAYS           ? "always"
	        : s->cfg->restart == CONFIG_RESTART_ON_FAILURE ? "on-failure"
	                                                       : "never");
	proto_pack_kv_bool(pk, "main", s->cfg->main);
}

void
service_pack_checks(msgpack_packer *pk)
{
	const struct service *s;
	size_t n = 0;

	for (s = service_list; s != NULL; s = s->next)
		if (!s->internal && s->cfg->required)
			n++;
	msgpack_pack_map(pk, n);
	for (s = service_list; s != NULL; s = s->next) {
		if (s->internal || !s->cfg->required)
			continue;
		proto_pack_str(pk, s->cfg->name);
		msgpack_pack_map(pk, 3);
		proto_pack_kv_bool(pk, "ok", s->state == SERVICE_READY);
		proto_pack_kv_str(
		    pk, "reason", s->state == SERVICE_READY ? "" : s->reason);
		proto_pack_kv_u64(pk, "since", s->check_since);
	}
}

void
service_free_all(void)
{
	struct service *s, *next;

	for (s = service_list; s != NULL; s = next) {
		next = s->next;
		if (s->pid > 0)
			child_forget(s->pid);
		readiness_free(s->probe);
		event_free(s->timer);
		event_free(s->poll);
		tree_free(&s->tree);
		free(s->deaths);
		free(s);
	}
	service_list = NULL;
}
