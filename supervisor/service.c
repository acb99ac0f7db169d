/* service: supervised processes (see service.h). Owns the list of
 * services, their restart timers and their states. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "catalog.h"
#include "child.h"
#include "clock.h"
#include "events.h"
#include "log.h"
#include "proto.h"
#include "service.h"
#include "xmalloc.h"

enum service_state {
	SERVICE_RUNNING,
	SERVICE_BACKOFF,
	SERVICE_STOPPING,
	SERVICE_STOPPED,
	SERVICE_FAILED,
};

static const char *const service_state_names[] = {
    "running",
    "backoff",
    "stopping",
    "stopped",
    "failed",
};

struct service {
	char *name;
	char *path;
	char **argv;
	enum config_restart restart;
	unsigned backoff_min_ms, backoff_max_ms, backoff_ms;
	enum service_state state;
	pid_t pid;
	uint64_t since;      /* wall ms of the last state change */
	uint64_t started_at; /* monotonic ms of the last spawn */
	uint64_t restarts;
	bool exited; /* last_status is valid */
	int last_status;
	struct event *timer; /* restart delay, or SIGKILL deadline */
	struct service *next;
};

static struct event_base *service_base;
static struct service *service_list;
static void (*service_stopped_cb)(void);
static bool service_shutting_down;

static void
service_set_state(struct service *s, enum service_state st)
{
	s->state = st;
	s->since = proto_now_ms();
}

static void service_timer_cb(evutil_socket_t, short, void *);
static void service_exit_cb(pid_t, int, void *);

void
service_init(struct event_base *base)
{
	service_base = base;
}

struct service *
service_add(const char *name, const char *path, char *const argv[],
    enum config_restart restart, unsigned backoff_min_ms,
    unsigned backoff_max_ms)
{
	struct service *s = xcalloc(1, sizeof *s), **tail;
	size_t n = 0, i;

	while (argv[n] != NULL)
		n++;
	s->name = xstrdup(name);
	s->path = xstrdup(path);
	s->argv = xcalloc(n + 1, sizeof *s->argv);
	for (i = 0; i < n; i++)
		s->argv[i] = xstrdup(argv[i]);
	s->restart = restart;
	s->backoff_min_ms = backoff_min_ms;
	s->backoff_max_ms = backoff_max_ms;
	s->backoff_ms = backoff_min_ms;
	s->timer = evtimer_new(service_base, service_timer_cb, s);
	service_set_state(s, SERVICE_STOPPED);
	for (tail = &service_list; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = s;
	return s;
}

static void
service_emit_started(struct service *s)
{
	msgpack_packer *pk = events_begin(EV_SERVICE_STARTED);

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "name", s->name);
	proto_pack_kv_u64(pk, "pid", (uint64_t)s->pid);
	events_commit();
}

static void
service_emit_exited(struct service *s, pid_t pid, int status)
{
	msgpack_packer *pk = events_begin(EV_SERVICE_EXITED);

	msgpack_pack_map(pk, WIFSIGNALED(status) ? 4 : 3);
	proto_pack_kv_str(pk, "name", s->name);
	proto_pack_kv_u64(pk, "pid", (uint64_t)pid);
	if (WIFSIGNALED(status)) {
		proto_pack_kv_i64(pk, "signal", WTERMSIG(status));
		proto_pack_kv_bool(pk, "core", WCOREDUMP(status));
	} else
		proto_pack_kv_i64(pk, "code", WEXITSTATUS(status));
	events_commit();
}

static void
service_emit_restarting(struct service *s)
{
	msgpack_packer *pk = events_begin(EV_SERVICE_RESTARTING);

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "name", s->name);
	proto_pack_kv_u64(pk, "delay_ms", s->backoff_ms);
	proto_pack_kv_u64(pk, "restarts", s->restarts);
	events_commit();
}

static bool
service_wants_restart(const struct service *s, int status)
{
	if (service_shutting_down)
		return false;
	switch (s->restart) {
	case CONFIG_RESTART_ALWAYS: return true;
	case CONFIG_RESTART_ON_FAILURE:
		return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	case CONFIG_RESTART_NEVER: break;
	}
	return false;
}

/* Schedules the next start after the current backoff, then doubles it. */
static void
service_schedule_restart(struct service *s)
{
	struct timeval tv = {
	    s->backoff_ms / 1000, (suseconds_t)(s->backoff_ms % 1000) * 1000};

	service_set_state(s, SERVICE_BACKOFF);
	service_emit_restarting(s);
	evtimer_add(s->timer, &tv);
	s->backoff_ms = s->backoff_ms * 2 > s->backoff_max_ms
	    ? s->backoff_max_ms
	    : s->backoff_ms * 2;
	if (s->backoff_ms == 0)
		s->backoff_ms = 1;
}

static void
service_start(struct service *s)
{
	char *cause = NULL;
	pid_t pid;

	pid = child_spawn(s->path, s->argv, service_exit_cb, s, &cause);
	s->started_at = clock_mono_ms();
	if (pid < 0) {
		log_warn("service %s: %s", s->name, cause);
		free(cause);
		s->exited = true;
		s->last_status = 127 << 8;
		if (service_wants_restart(s, s->last_status)) {
			s->restarts++;
			service_schedule_restart(s);
		} else
			service_set_state(s, SERVICE_FAILED);
		return;
	}
	s->pid = pid;
	service_set_state(s, SERVICE_RUNNING);
	log_info("service %s started, pid %ld", s->name, (long)pid);
	service_emit_started(s);
}

static bool
service_all_stopped(void)
{
	struct service *s;

	for (s = service_list; s != NULL; s = s->next)
		if (s->state == SERVICE_RUNNING || s->state == SERVICE_STOPPING)
			return false;
	return true;
}

static void
service_exit_cb(pid_t pid, int status, void *arg)
{
	struct service *s = arg;

	s->pid = 0;
	s->exited = true;
	s->last_status = status;
	if (WIFSIGNALED(status))
		log_info("service %s (pid %ld) killed by signal %d", s->name,
		    (long)pid, WTERMSIG(status));
	else
		log_info("service %s (pid %ld) exited with status %d", s->name,
		    (long)pid, WEXITSTATUS(status));
	service_emit_exited(s, pid, status);
	evtimer_del(s->timer);
	if (clock_mono_ms() - s->started_at >= SERVICE_STABLE_MS)
		s->backoff_ms = s->backoff_min_ms;
	if (service_wants_restart(s, status)) {
		s->restarts++;
		service_schedule_restart(s);
	} else
		service_set_state(s, SERVICE_STOPPED);
	if (service_shutting_down && service_stopped_cb != NULL &&
	    service_all_stopped()) {
		void (*done)(void) = service_stopped_cb;
		service_stopped_cb = NULL;
		done();
	}
}

static void
service_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct service *s = arg;

	(void)fd;
	(void)what;
	if (s->state == SERVICE_BACKOFF)
		service_start(s);
	else if (s->state == SERVICE_STOPPING && s->pid > 0) {
		log_warn("service %s did not stop in %d ms: SIGKILL", s->name,
		    SERVICE_STOP_TIMEOUT_MS);
		kill(-s->pid, SIGKILL);
	}
}

void
service_start_all(void)
{
	struct service *s;

	for (s = service_list; s != NULL; s = s->next)
		service_start(s);
}

void
service_stop_all(void (*done)(void))
{
	struct timeval tv = {SERVICE_STOP_TIMEOUT_MS / 1000,
	    (SERVICE_STOP_TIMEOUT_MS % 1000) * 1000};
	struct service *s;

	service_shutting_down = true;
	for (s = service_list; s != NULL; s = s->next) {
		evtimer_del(s->timer);
		if (s->state != SERVICE_RUNNING) {
			if (s->state == SERVICE_BACKOFF)
				service_set_state(s, SERVICE_STOPPED);
			continue;
		}
		service_set_state(s, SERVICE_STOPPING);
		/* The group: whatever the service started goes with it. */
		kill(-s->pid, SIGTERM);
		evtimer_add(s->timer, &tv);
	}
	if (service_all_stopped())
		done();
	else
		service_stopped_cb = done;
}

static void
service_pack_one(msgpack_packer *pk, const struct service *s)
{
	msgpack_pack_map(pk, 7);
	proto_pack_kv_str(pk, "name", s->name);
	proto_pack_kv_str(pk, "state", service_state_names[s->state]);
	proto_pack_kv_u64(pk, "pid", (uint64_t)s->pid);
	proto_pack_kv_u64(pk, "since", s->since);
	proto_pack_kv_u64(pk, "uptime_ms",
	    s->state == SERVICE_RUNNING ? clock_mono_ms() - s->started_at : 0);
	proto_pack_kv_u64(pk, "restarts", s->restarts);
	proto_pack_str(pk, "last_exit");
	if (!s->exited)
		msgpack_pack_nil(pk);
	else if (WIFSIGNALED(s->last_status)) {
		msgpack_pack_map(pk, 2);
		proto_pack_kv_i64(pk, "signal", WTERMSIG(s->last_status));
		proto_pack_kv_bool(pk, "core", WCOREDUMP(s->last_status));
	} else {
		msgpack_pack_map(pk, 1);
		proto_pack_kv_i64(pk, "code", WEXITSTATUS(s->last_status));
	}
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
		service_pack_one(pk, s);
}

void
service_free_all(void)
{
	struct service *s, *next;
	size_t i;

	for (s = service_list; s != NULL; s = next) {
		next = s->next;
		if (s->pid > 0)
			child_forget(s->pid);
		event_free(s->timer);
		for (i = 0; s->argv[i] != NULL; i++)
			free(s->argv[i]);
		free(s->argv);
		free(s->name);
		free(s->path);
		free(s);
	}
	service_list = NULL;
}
