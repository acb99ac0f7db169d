/* task: task runs (see task.h). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "catalog.h"
#include "child.h"
#include "clock.h"
#include "enforce.h"
#include "events.h"
#include "launch.h"
#include "limit.h"
#include "log.h"
#include "proc.h"
#include "rand.h"
#include "runtime_version.h"
#include "secrets.h"
#include "task.h"
#include "task_deliver.h"
#include "task_req.h"
#include "taskout.h"
#include "taskrec.h"
#include "xmalloc.h"

/* The agent's two streams, then one per check. */
enum { TASK_OUT_AGENT, TASK_OUT_STDERR, TASK_NOUT };

struct task {
	struct taskrec rec;
	const struct config_runtime *rt; /* NULL: no longer in the config */
	char **env;                      /* KEY=VALUE, wiped at the end */
	struct limit_set limits;
	struct enforce lim;
	struct taskout *out[TASK_NOUT];
	struct taskout *chk[TASKREC_CHECKS_MAX];
	int phase; /* the check running, or -1: the agent */
	char proc[PROC_ID_LEN + 1];
	pid_t pid;
	bool alive; /* a process of the task is there: spawned, not reaped */
	bool timed_out;
	struct event *timer;
	uint64_t started_mono;
	struct task *next; /* oldest first */
};

/* task.list's answer stops before it would pass this. */
#define TASK_LIST_BYTES (4u << 20)

static struct event_base *task_base;
static const struct config *task_cfg;
static char *task_dir;
static struct task *task_list;
static size_t task_count;
/* berthd is stopping: no task starts or goes on. */
static bool task_stopping;

/* ---- the list ---- */

static struct task *
task_find(const char *id)
{
	struct task *t;

	for (t = task_list; t != NULL; t = t->next)
		if (strcmp(t->rec.id, id) == 0)
			return t;
	return NULL;
}

static bool
task_live(const struct task *t)
{
	return !taskrec_state_final(t->rec.state);
}

/* The task of runtime name that runs (running or checking), or NULL. */
static struct task *
task_running_of(const char *name)
{
	struct task *t;

	for (t = task_list; t != NULL; t = t->next)
		if (strcmp(t->rec.runtime, name) == 0 &&
		    (t->rec.state == TASKREC_RUNNING ||
		        t->rec.state == TASKREC_CHECKING))
			return t;
	return NULL;
}

/* 1 for the next queued task of its runtime; 0 unless queued. */
static unsigned
task_position(const struct task *q)
{
	const struct task *t;
	unsigned n = 1;

	if (q->rec.state != TASKREC_QUEUED)
		return 0;
	for (t = task_list; t != q; t = t->next)
		if (t->rec.state == TASKREC_QUEUED &&
		    strcmp(t->rec.runtime, q->rec.runtime) == 0)
			n++;
	return n;
}

static void
task_append(struct task *t)
{
	struct task **pp = &task_list;

	while (*pp != NULL)
		pp = &(*pp)->next;
	*pp = t;
	task_count++;
}

static char *
task_path(const struct task *t, const char *file)
{
	return xasprintf("%s/%s/%s", task_dir, t->rec.id, file);
}

static void
task_free(struct task *t)
{
	size_t i;

	for (i = 0; i < TASK_NOUT; i++)
		if (t->out[i] != NULL)
			taskout_close(t->out[i]);
	for (i = 0; i < TASKREC_CHECKS_MAX; i++)
		if (t->chk[i] != NULL)
			taskout_close(t->chk[i]);
	if (t->timer != NULL)
		event_free(t->timer);
	child_strv_free(t->env);
	enforce_close(&t->lim);
	taskrec_free(&t->rec);
	free(t);
}

/* Room for one more: the oldest ended task goes, record and outputs. */
static bool
task_make_room(void)
{
	struct task **pp;

	if (task_count < TASK_KEEP_MAX)
		return true;
	for (pp = &task_list; *pp != NULL; pp = &(*pp)->next) {
		struct task *t = *pp;
		if (task_live(t))
			continue;
		*pp = t->next;
		task_count--;
		taskrec_remove(task_dir, t->rec.id);
		task_free(t);
		return true;
	}
	return false;
}

/* ---- the record ---- */

static void
task_sizes(struct task *t)
{
	size_t i;

	if (t->out[TASK_OUT_AGENT] != NULL)
		t->rec.agent_bytes = taskout_size(t->out[TASK_OUT_AGENT]);
	if (t->out[TASK_OUT_STDERR] != NULL)
		t->rec.stderr_bytes = taskout_size(t->out[TASK_OUT_STDERR]);
	for (i = 0; i < t->rec.nchecks; i++)
		if (t->chk[i] != NULL)
			t->rec.checks[i].bytes = taskout_size(t->chk[i]);
}

/* Writes the record; a failure is logged, the task goes on. */
static int
task_save(struct task *t)
{
	task_sizes(t);
	if (taskrec_save(task_dir, &t->rec) == 0)
		return 0;
	log_warn("task %s: cannot keep its record in %s: %s", t->rec.id,
	    task_dir, strerror(errno));
	return -1;
}

/* The map of task.show: the record and its place in the queue. */
static void
task_pack(msgpack_packer *pk, const struct task *t)
{
	unsigned pos = task_position(t);

	msgpack_pack_map(pk, TASKREC_PACK_KEYS + 1);
	taskrec_pack_keys(pk, &t->rec);
	proto_pack_str(pk, "position");
	if (pos > 0)
		msgpack_pack_unsigned_int(pk, pos);
	else
		msgpack_pack_nil(pk);
}

/* ---- events ---- */

static void
task_emit_queued(const struct task *t)
{
	msgpack_packer *pk = events_begin(EV_TASK_QUEUED);

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "id", t->rec.id);
	proto_pack_kv_str(pk, "runtime", t->rec.runtime);
	proto_pack_kv_u64(pk, "position", task_position(t));
	events_commit();
}

static void
task_emit_started(const struct task *t)
{
	msgpack_packer *pk = events_begin(EV_TASK_STARTED);

	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "id", t->rec.id);
	proto_pack_kv_str(pk, "runtime", t->rec.runtime);
	proto_pack_kv_u64(pk, "pid", (uint64_t)t->pid);
	proto_pack_kv_str(pk, "proc", t->proc);
	events_commit();
}

static void
task_emit_checking(const struct task *t)
{
	msgpack_packer *pk = events_begin(EV_TASK_CHECKING);
	const struct taskrec_check *k = &t->rec.checks[t->phase];

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "id", t->rec.id);
	proto_pack_kv_u64(pk, "check", (uint64_t)t->phase);
	proto_pack_str(pk, "argv");
	launch_pack_argv(pk, k->argv);
	events_commit();
}

static void
task_pack_str_or_nil(msgpack_packer *pk, const char *key, const char *s)
{
	proto_pack_str(pk, key);
	if (s[0] != '\0')
		proto_pack_str(pk, s);
	else
		msgpack_pack_nil(pk);
}

static void
task_emit_finished(const struct task *t)
{
	msgpack_packer *pk = events_begin(EV_TASK_FINISHED);
	const struct taskrec *r = &t->rec;

	msgpack_pack_map(pk, 7);
	proto_pack_kv_str(pk, "id", r->id);
	proto_pack_kv_str(pk, "runtime", r->runtime);
	proto_pack_kv_str(pk, "state", taskrec_state_name(r->state));
	task_pack_str_or_nil(pk, "reason", r->reason);
	proto_pack_str(pk, "failed_check");
	if (r->failed_check >= 0)
		msgpack_pack_int(pk, r->failed_check);
	else
		msgpack_pack_nil(pk);
	task_pack_str_or_nil(pk, "cancelled_by", r->cancelled_by);
	proto_pack_kv_u64(pk, "duration_ms",
	    r->started != 0 && r->finished >= r->started
	        ? r->finished - r->started
	        : 0);
	events_commit();
}

/* ---- running ---- */

static void task_start(struct task *t);
static void task_start_check(struct task *t);

static void
task_kill(struct task *t)
{
	if (t->alive && !enforce_kill(&t->lim))
		kill(-t->pid, SIGKILL);
}

/* The next queued task of t's runtime, if any, starts. */
static void
task_next(const char *runtime)
{
	struct task *t;

	if (task_stopping || task_running_of(runtime) != NULL)
		return;
	for (t = task_list; t != NULL; t = t->next)
		if (t->rec.state == TASKREC_QUEUED &&
		    strcmp(t->rec.runtime, runtime) == 0) {
			task_start(t);
			return;
		}
}

/* t ends in state, with why (NULL: none). */
static void
task_finish(struct task *t, enum taskrec_state state, const char *why)
{
	size_t i;

	t->rec.state = state;
	t->rec.finished = proto_now_ms();
	snprintf(
	    t->rec.reason, sizeof t->rec.reason, "%s", why != NULL ? why : "");
	if (t->timer != NULL)
		evtimer_del(t->timer);
	/* No process of the task outlives it: what the agent left in its
	 * group goes with it (its process group, where it has none). */
	if (!(t->lim.open && enforce_kill(&t->lim)) && t->alive)
		kill(-t->pid, SIGKILL);
	enforce_close(&t->lim);
	for (i = 0; i < TASK_NOUT; i++)
		if (t->out[i] != NULL)
			taskout_end(t->out[i]);
	for (i = 0; i < t->rec.nchecks; i++)
		if (t->chk[i] != NULL)
			taskout_end(t->chk[i]);
	child_strv_free(t->env);
	t->env = NULL;
	task_save(t);
	log_info("task %s: %s%s%s", t->rec.id, taskrec_state_name(state),
	    why != NULL ? ": " : "", why != NULL ? why : "");
	task_emit_finished(t);
	task_next(t->rec.runtime);
}

static void
task_exit_of(struct taskrec_exit *e, int status)
{
	e->has = true;
	e->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	e->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* "exited with status N" / "was killed by signal N", into buf. */
static void
task_exit_words(const struct taskrec_exit *e, char *buf, size_t max)
{
	if (e->signal != 0)
		snprintf(buf, max, "was killed by signal %d", e->signal);
	else
		snprintf(buf, max, "exited with status %d", e->code);
}

static bool
task_exit_ok(const struct taskrec_exit *e)
{
	return e->has && e->signal == 0 && e->code == 0;
}

/* The first check that did not pass, with why in buf; -1 if all did. */
static int
task_failed_check(const struct task *t, char *buf, size_t max)
{
	char how[64];
	size_t i;

	for (i = 0; i < t->rec.nchecks; i++) {
		const struct taskrec_check *k = &t->rec.checks[i];
		if (task_exit_ok(&k->exit))
			continue;
		task_exit_words(&k->exit, how, sizeof how);
		snprintf(buf, max, "check %zu (%s) %s", i, k->argv[0], how);
		return (int)i;
	}
	return -1;
}

/* An end that was not the process's own: cancelled or timed out. */
static bool
task_ended_by_berth(struct task *t)
{
	if (t->rec.cancelled_by[0] != '\0') {
		task_finish(t, TASKREC_CANCELLED, NULL);
		return true;
	}
	if (t->timed_out) {
		task_finish(t, TASKREC_TIMED_OUT, "the timeout passed");
		return true;
	}
	return false;
}

static void
task_agent_exited(struct task *t, int status)
{
	char why[TASKREC_REASON_MAX], how[64];

	task_exit_of(&t->rec.agent, status);
	taskout_end(t->out[TASK_OUT_AGENT]);
	taskout_end(t->out[TASK_OUT_STDERR]);
	if (task_ended_by_berth(t))
		return;
	if (!task_exit_ok(&t->rec.agent)) {
		task_exit_words(&t->rec.agent, how, sizeof how);
		snprintf(why, sizeof why, "the agent %s", how);
		task_finish(t, TASKREC_FAILED, why);
		return;
	}
	if (t->rec.nchecks == 0) {
		task_finish(t, TASKREC_SUCCEEDED, NULL);
		return;
	}
	/* The checks see the workspace as the agent left it, with none of
	 * its processes still at work in it. */
	enforce_kill(&t->lim);
	t->phase = 0;
	t->rec.state = TASKREC_CHECKING;
	task_start_check(t);
}

static void
task_check_exited(struct task *t, int status)
{
	struct taskrec_check *k = &t->rec.checks[t->phase];
	char why[TASKREC_REASON_MAX];

	task_exit_of(&k->exit, status);
	k->finished = proto_now_ms();
	taskout_end(t->chk[t->phase]);
	if (task_ended_by_berth(t))
		return;
	if ((size_t)++t->phase < t->rec.nchecks) {
		task_start_check(t);
		return;
	}
	t->rec.failed_check = task_failed_check(t, why, sizeof why);
	if (t->rec.failed_check >= 0)
		task_finish(t, TASKREC_FAILED, why);
	else
		task_finish(t, TASKREC_SUCCEEDED, NULL);
}

static void
task_exit_cb(const char *id, pid_t pid, int status, void *arg)
{
	struct task *t = arg;

	(void)id;
	(void)pid;
	t->alive = false;
	if (task_stopping)
		return;
	if (t->phase < 0)
		task_agent_exited(t, status);
	else
		task_check_exited(t, status);
}

static void
task_tap_cb(int stream, const void *data, size_t len, void *arg)
{
	struct task *t = arg;

	if (t->phase < 0)
		taskout_write(
		    t->out[stream == 0 ? TASK_OUT_AGENT : TASK_OUT_STDERR],
		    data, len);
	else
		taskout_write(t->chk[t->phase], data, len);
}

static void
task_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct task *t = arg;

	(void)fd;
	(void)what;
	log_info("task %s: its timeout of %" PRIu32 " s passed; killing all "
	         "its processes",
	    t->rec.id, t->rec.timeout_s);
	t->timed_out = true;
	task_kill(t);
}

/* The launch of argv (taken) for t: the runtime's user, workspace and
 * environment with the request's env and the secrets it names. */
static int
task_launch(struct task *t, char **argv, struct launch *l, char **cause)
{
	const struct config_runtime *r = t->rt;
	char *none[] = {NULL};
	char *const *extra[2] = {
	    r->env.v != NULL ? r->env.v : none, t->env != NULL ? t->env : none};
	struct secrets_grant grant;
	struct launch_user_req req = {.argv = argv,
	    .user = r->user,
	    .group = r->group,
	    .cwd = r->workspace,
	    .extra = extra,
	    .nextra = 2,
	    .grant = &grant};

	secrets_grant_set(r->secrets.v, r->secrets.n, &grant);
	return launch_user(l, &req, cause);
}

/* Spawns argv (taken) as t's process, stdin input (NULL: closed). */
static int
task_spawn(struct task *t, char **argv, const char *input, char **cause)
{
	char target[TASKREC_ID_LEN + 8];
	struct launch l;
	int rc;

	if (task_launch(t, argv, &l, cause) < 0)
		return -1;
	if (!t->lim.open)
		enforce_open(
		    &t->lim, "task", t->rec.id, &t->limits, l.uid == 0, l.uid);
	l.enforce = &t->lim;
	rc = proc_start_tapped(&l, input, input != NULL ? strlen(input) : 0,
	    task_tap_cb, task_exit_cb, t, t->proc, &t->pid, cause);
	if (rc == 0) {
		snprintf(target, sizeof target, "task/%s", t->rec.id);
		secrets_grant_emit(&l.grant, target);
		t->alive = true;
	}
	launch_free(&l);
	return rc;
}

/* The runtime's program with its task arguments, {prompt} filled in;
 * *stdin_prompt says whether the prompt goes to stdin instead. */
static char **
task_agent_argv(const struct task *t, const char *program, bool *stdin_prompt)
{
	const struct config_list *a = &t->rt->task_args;
	char **argv = xcalloc(a->n + 2, sizeof *argv);
	size_t i;

	*stdin_prompt = true;
	argv[0] = xstrdup(program);
	for (i = 0; i < a->n; i++) {
		if (strcmp(a->v[i], "{prompt}") == 0) {
			argv[i + 1] = xstrdup(t->rec.prompt);
			*stdin_prompt = false;
		} else
			argv[i + 1] = xstrdup(a->v[i]);
	}
	return argv;
}

static struct taskout *
task_out_new(struct task *t, const char *file, const char *stream)
{
	char *path = task_path(t, file), name[PROTO_MAX_NAME + 1];
	struct taskout *o;

	snprintf(name, sizeof name, "task/%s/%s", t->rec.id, stream);
	if ((o = taskout_open(path, name, true)) == NULL)
		log_warn("task %s: cannot create %s: %s", t->rec.id, path,
		    strerror(errno));
	free(path);
	return o;
}

/* Every stream of t, there from task.run on, so that a client may
 * follow a queued task, or a check that has not started. 0, or -1 with
 * errno. */
static int
task_outs_new(struct task *t)
{
	char file[32], stream[32];
	size_t i;

	if ((t->out[TASK_OUT_AGENT] = task_out_new(t, "agent.out", "agent")) ==
	        NULL ||
	    (t->out[TASK_OUT_STDERR] =
	            task_out_new(t, "agent.err", "stderr")) == NULL)
		return -1;
	for (i = 0; i < t->rec.nchecks; i++) {
		snprintf(file, sizeof file, "check-%zu.out", i);
		snprintf(stream, sizeof stream, "check/%zu", i);
		if ((t->chk[i] = task_out_new(t, file, stream)) == NULL)
			return -1;
	}
	return 0;
}

static void
task_arm_timeout(struct task *t)
{
	struct timeval tv = clock_tv((uint64_t)t->rec.timeout_s * 1000);

	if (t->rec.timeout_s == 0)
		return;
	t->timer = evtimer_new(task_base, task_timeout_cb, t);
	evtimer_add(t->timer, &tv);
}

static void
task_start(struct task *t)
{
	char *program, *cause = NULL, why[TASKREC_REASON_MAX], **argv;
	bool stdin_prompt;
	int rc = -1;
	struct stat st;

	t->rec.state = TASKREC_RUNNING;
	t->rec.started = proto_now_ms();
	t->started_mono = clock_mono_ms();
	t->phase = -1;
	if ((program = runtime_program_find(t->rt->command, &st, &cause)) !=
	    NULL) {
		argv = task_agent_argv(t, program, &stdin_prompt);
		free(program);
		rc = task_spawn(
		    t, argv, stdin_prompt ? t->rec.prompt : NULL, &cause);
	}
	if (program == NULL || rc < 0) {
		snprintf(why, sizeof why, "the agent cannot start: %s", cause);
		free(cause);
		task_finish(t, TASKREC_FAILED, why);
		return;
	}
	task_arm_timeout(t);
	task_save(t);
	log_info("task %s: runtime %s, pid %ld", t->rec.id, t->rec.runtime,
	    (long)t->pid);
	task_emit_started(t);
}

static void
task_start_check(struct task *t)
{
	struct taskrec_check *k = &t->rec.checks[t->phase];
	char *cause = NULL, **argv;
	size_t i;

	k->ran = true;
	k->started = proto_now_ms();
	task_save(t);
	task_emit_checking(t);
	argv = xcalloc(k->argc + 1, sizeof *argv);
	for (i = 0; i < k->argc; i++)
		argv[i] = xstrdup(k->argv[i]);
	if (task_spawn(t, argv, NULL, &cause) < 0) {
		/* As a shell says of a program it cannot run. */
		taskout_write(t->chk[t->phase], cause, strlen(cause));
		taskout_write(t->chk[t->phase], "\n", 1);
		free(cause);
		task_check_exited(t, 127 << 8);
	}
}

/* ---- task.run ---- */

/* The whole request into a new task; NULL after a reply. */
static struct task *
task_parse(struct server_conn *c, const struct proto_msg *m)
{
	struct task *t = xcalloc(1, sizeof *t);
	struct task_req q;
	char why[TASK_REQ_WHY_MAX];
	const char *code;
	int rc;

	taskrec_init(&t->rec);
	t->phase = -1;
	rc = task_req_parse(
	    m->args, task_cfg, &t->rec, &q, &code, why, sizeof why);
	t->rt = q.rt;
	t->env = q.env;
	t->limits = q.limits;
	if (rc < 0) {
		server_reply_error(c, m->id, code, "%s", why);
		task_free(t);
		return NULL;
	}
	return t;
}

static void
task_reply_busy(
    struct server_conn *c, const struct proto_msg *m, const struct task *b)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char msg[128];

	snprintf(msg, sizeof msg, "runtime %s is busy with task %s",
	    b->rec.runtime, b->rec.id);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	proto_pack_kv_str(&pk, "code", PROTO_E_CONFLICT);
	proto_pack_kv_str(&pk, "message", msg);
	proto_pack_kv_str(&pk, "task", b->rec.id);
	server_reply_packed(c, m->id, false, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
}

void
task_op_run(struct server_conn *c, const struct proto_msg *m)
{
	struct task *t = task_parse(c, m), *busy;
	const char *delivering;
	msgpack_packer *pk;

	if (t == NULL)
		return;
	if ((delivering = task_deliver_busy(t->rt->workspace)) != NULL) {
		server_reply_error_path(c, m->id, PROTO_E_CONFLICT,
		    t->rt->workspace,
		    "%s is being delivered (task %s): a task would change it "
		    "under the commit",
		    t->rt->workspace, delivering);
		task_free(t);
		return;
	}
	busy = task_running_of(t->rec.runtime);
	if (busy != NULL && t->rt->busy == CONFIG_BUSY_REJECT) {
		task_reply_busy(c, m, busy);
		task_free(t);
		return;
	}
	if (!task_make_room()) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%d tasks are kept and none has ended", TASK_KEEP_MAX);
		task_free(t);
		return;
	}
	do
		rand_hex(t->rec.id, TASKREC_ID_LEN / 2);
	while (task_find(t->rec.id) != NULL);
	t->rec.created = proto_now_ms();
	t->rec.state = TASKREC_QUEUED;
	if (task_save(t) < 0 || task_outs_new(t) < 0) {
		server_reply_error_path(c, m->id, PROTO_E_IO, task_dir,
		    "the task cannot be kept in %s: %s", task_dir,
		    strerror(errno));
		taskrec_remove(task_dir, t->rec.id);
		task_free(t);
		return;
	}
	task_append(t);
	if (busy != NULL)
		task_emit_queued(t);
	else
		task_start(t);
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "id", t->rec.id);
	proto_pack_kv_str(pk, "state", taskrec_state_name(t->rec.state));
	proto_pack_str(pk, "position");
	if (t->rec.state == TASKREC_QUEUED)
		msgpack_pack_unsigned_int(pk, task_position(t));
	else
		msgpack_pack_nil(pk);
	server_reply_end(c);
}

/* ---- show, list, attach, cancel, deliver ---- */

/* The task the request names by "id"; NULL after a reply. */
static struct task *
task_arg(struct server_conn *c, const struct proto_msg *m)
{
	char id[TASKREC_ID_LEN + 2];
	struct task *t;
	size_t i;

	if (proto_arg_str(m->args, "id", id, sizeof id) != 1 ||
	    strlen(id) != TASKREC_ID_LEN) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "\"id\" must be a task's id: %d hex digits",
		    TASKREC_ID_LEN);
		return NULL;
	}
	for (i = 0; i < TASKREC_ID_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		        (id[i] >= 'a' && id[i] <= 'f'))) {
			server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
			    "\"id\" must be a task's id: %d hex digits",
			    TASKREC_ID_LEN);
			return NULL;
		}
	if ((t = task_find(id)) == NULL)
		server_reply_error(
		    c, m->id, PROTO_E_NOT_FOUND, "no task %s", id);
	return t;
}

void
task_op_show(struct server_conn *c, const struct proto_msg *m)
{
	struct task *t = task_arg(c, m);

	if (t == NULL)
		return;
	task_sizes(t);
	task_pack(server_reply_begin(c, m->id), t);
	server_reply_end(c);
}

/* Whether t is one task.list asked for. */
static bool
task_listed(const struct task *t, const char *runtime, const char *state)
{
	return (runtime[0] == '\0' || strcmp(runtime, t->rec.runtime) == 0) &&
	    (state[0] == '\0' ||
	        strcmp(state, taskrec_state_name(t->rec.state)) == 0);
}

void
task_op_list(struct server_conn *c, const struct proto_msg *m)
{
	char runtime[CONFIG_MAX_NAME + 1] = "", state[16] = "";
	struct task *t, **v;
	size_t n = 0, i, kept = 0;
	msgpack_sbuffer sb;
	msgpack_packer pk, *out;

	if (proto_arg_str(m->args, "runtime", runtime, sizeof runtime) < 0 ||
	    proto_arg_str(m->args, "state", state, sizeof state) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "runtime and state, if given, must be names");
		return;
	}
	v = xcalloc(task_count + 1, sizeof *v);
	for (t = task_list; t != NULL; t = t->next)
		if (task_listed(t, runtime, state))
			v[n++] = t;
	/* Newest first, while the answer stays well within a message. */
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	for (i = n; i > 0; i--) {
		size_t before = sb.size;
		task_sizes(v[i - 1]);
		task_pack(&pk, v[i - 1]);
		if (sb.size > TASK_LIST_BYTES) {
			sb.size = before;
			break;
		}
		kept++;
	}
	out = server_reply_begin(c, m->id);
	msgpack_pack_map(out, 2);
	proto_pack_str(out, "tasks");
	msgpack_pack_array(out, kept);
	out->callback(out->data, sb.data, sb.size);
	proto_pack_kv_bool(out, "truncated", kept < n);
	server_reply_end(c);
	msgpack_sbuffer_destroy(&sb);
	free(v);
}

/* The stream "agent", "stderr" or "check/N" of t, opened from its file
 * if t has ended; NULL (and *missing) if it does not exist (yet). */
static struct taskout *
task_stream(struct task *t, const char *stream)
{
	struct taskout **slot;
	char file[32], name[PROTO_MAX_NAME + 1], *path, *end;
	unsigned long n = 0;

	if (strcmp(stream, "agent") == 0) {
		slot = &t->out[TASK_OUT_AGENT];
		snprintf(file, sizeof file, "agent.out");
	} else if (strcmp(stream, "stderr") == 0) {
		slot = &t->out[TASK_OUT_STDERR];
		snprintf(file, sizeof file, "agent.err");
	} else if (strncmp(stream, "check/", 6) == 0 && stream[6] >= '0' &&
	    stream[6] <= '9' &&
	    (n = strtoul(stream + 6, &end, 10), *end == '\0') &&
	    n < t->rec.nchecks) {
		slot = &t->chk[n];
		snprintf(file, sizeof file, "check-%lu.out", n);
	} else
		return NULL;
	if (*slot != NULL)
		return *slot;
	/* An ended task's streams are read from their files. */
	path = task_path(t, file);
	snprintf(name, sizeof name, "task/%s/%s", t->rec.id, stream);
	*slot = taskout_open(path, name, false);
	if (*slot == NULL)
		log_warn("task %s: cannot read %s: %s", t->rec.id, path,
		    strerror(errno));
	free(path);
	return *slot;
}

void
task_op_attach(struct server_conn *c, const struct proto_msg *m)
{
	char stream[32] = "agent";
	uint64_t from = 0;
	struct taskout *o;
	msgpack_packer *pk;
	struct task *t;

	if ((t = task_arg(c, m)) == NULL)
		return;
	if (proto_arg_str(m->args, "stream", stream, sizeof stream) < 0 ||
	    proto_arg_u64(m->args, "from_offset", &from) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "stream must be agent, stderr or check/N, and from_offset "
		    "an offset");
		return;
	}
	if ((o = task_stream(t, stream)) == NULL) {
		server_reply_error(c, m->id, PROTO_E_NOT_FOUND,
		    "task %s has no stream %s (yet)", t->rec.id, stream);
		return;
	}
	if (taskout_attach(o, c, from) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "from_offset %" PRIu64 " is past the end of %s (%" PRIu64
		    " bytes)",
		    from, taskout_name(o), taskout_size(o));
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 6);
	proto_pack_kv_str(pk, "id", t->rec.id);
	proto_pack_kv_str(pk, "state", taskrec_state_name(t->rec.state));
	proto_pack_kv_str(pk, "stream", stream);
	proto_pack_kv_u64(pk, "offset", from);
	proto_pack_kv_u64(pk, "end", taskout_size(o));
	proto_pack_kv_bool(pk, "ended", taskout_ended(o));
	server_reply_end(c);
	taskout_pump(o);
}

const struct enforce *
task_enforce(const char *id)
{
	struct task *t = task_find(id);

	/* A group is the task's from its agent's spawn on. */
	return t != NULL && t->lim.name[0] != '\0' ? &t->lim : NULL;
}

void
task_op_cancel(struct server_conn *c, const struct proto_msg *m)
{
	struct task *t = task_arg(c, m);

	if (t == NULL)
		return;
	if (!task_live(t)) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "task %s has ended: %s", t->rec.id,
		    taskrec_state_name(t->rec.state));
		return;
	}
	if (t->rec.cancelled_by[0] == '\0')
		snprintf(t->rec.cancelled_by, sizeof t->rec.cancelled_by, "%s",
		    c->remote ? "the backend" : "root on the Unix socket");
	log_info("task %s: cancelled by %s", t->rec.id, t->rec.cancelled_by);
	if (t->rec.state == TASKREC_QUEUED || !t->alive)
		task_finish(t, TASKREC_CANCELLED, NULL);
	else
		task_kill(t);
	server_reply_empty(c, m->id);
}

static void
task_delivered(const char *id, const struct taskrec_delivery *d)
{
	struct task *t = task_find(id);

	if (t == NULL)
		return;
	t->rec.delivery = *d;
	task_save(t);
}

/* The live task of runtime name (queued, running or checking), or NULL. */
static struct task *
task_live_of(const char *name)
{
	struct task *t;

	for (t = task_list; t != NULL; t = t->next)
		if (task_live(t) && strcmp(t->rec.runtime, name) == 0)
			return t;
	return NULL;
}

void
task_op_deliver(struct server_conn *c, const struct proto_msg *m)
{
	struct task *t = task_arg(c, m), *busy;

	if (t == NULL)
		return;
	if (task_live(t)) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "task %s is %s: only a task that has ended is delivered",
		    t->rec.id, taskrec_state_name(t->rec.state));
		return;
	}
	if (t->rt == NULL) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "runtime %s is no longer in the config", t->rec.runtime);
		return;
	}
	/* The workspace must hold still while it is committed. */
	if ((busy = task_live_of(t->rec.runtime)) != NULL) {
		task_reply_busy(c, m, busy);
		return;
	}
	task_deliver_op(c, m, &t->rec, t->rt);
}

/* ---- loading, setup ---- */

/* t was queued or running when berthd stopped (or died): it says so,
 * and none of its processes is left. */
static void
task_interrupt(struct task *t, const char *when)
{
	char why[TASKREC_REASON_MAX];

	snprintf(why, sizeof why, "berthd %s %s", when,
	    t->rec.state == TASKREC_QUEUED ? "before it ran" : "while it ran");
	task_finish(t, TASKREC_INTERRUPTED, why);
}

void
task_stop_all(void)
{
	struct task *t;

	task_stopping = true;
	for (t = task_list; t != NULL; t = t->next)
		if (task_live(t))
			task_interrupt(t, "stopped");
}

/* The size of a file of t's, or keep (as the record said) if it has
 * none. */
static uint64_t
task_file_size(const struct task *t, const char *file, uint64_t keep)
{
	char *path = task_path(t, file);
	struct stat st;

	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		keep = (uint64_t)st.st_size;
	free(path);
	return keep;
}

/* A task a berthd before this one left: ended, or interrupted now, with
 * the sizes of what its outputs hold (more than its record says, if
 * berthd died between two writes of it). */
static void
task_adopt(struct taskrec *r)
{
	struct task *t = xcalloc(1, sizeof *t);
	char file[32];
	size_t i;

	t->rec = *r;
	t->phase = -1;
	t->rt = config_runtime_find(task_cfg, r->runtime);
	if (task_live(t)) {
		t->rec.agent_bytes =
		    task_file_size(t, "agent.out", t->rec.agent_bytes);
		t->rec.stderr_bytes =
		    task_file_size(t, "agent.err", t->rec.stderr_bytes);
		for (i = 0; i < t->rec.nchecks; i++) {
			snprintf(file, sizeof file, "check-%zu.out", i);
			if (t->rec.checks[i].ran)
				t->rec.checks[i].bytes = task_file_size(
				    t, file, t->rec.checks[i].bytes);
		}
		task_interrupt(t, "restarted");
	}
	task_append(t);
}

void
task_init(struct event_base *base, const struct config *cfg)
{
	struct taskrec *recs = NULL;
	size_t n = 0, i;

	task_base = base;
	task_cfg = cfg;
	task_dir = xasprintf("%s/tasks", cfg->state_dir);
	if (mkdir(task_dir, 0700) != 0 && errno != EEXIST)
		log_warn("cannot make %s: %s", task_dir, strerror(errno));
	if (taskrec_load_all(task_dir, &recs, &n) < 0)
		log_warn("cannot read the tasks in %s: %s", task_dir,
		    strerror(errno));
	for (i = 0; i < n; i++)
		task_adopt(&recs[i]);
	free(recs);
	while (task_count > TASK_KEEP_MAX && task_make_room())
		;
	if (n > 0)
		log_info("%zu task(s) kept in %s", n, task_dir);
	task_deliver_init(base, cfg, task_delivered);
}

void
task_shutdown(void)
{
	struct task *t;

	task_deliver_shutdown();
	while ((t = task_list) != NULL) {
		task_list = t->next;
		/* Each has ended, or task_stop_all interrupted it. */
		if (t->timer != NULL)
			evtimer_del(t->timer);
		task_free(t);
	}
	task_count = 0;
	free(task_dir);
	task_dir = NULL;
}
