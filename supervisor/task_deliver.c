/* task_deliver: task.deliver (see task_deliver.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "artifact.h"
#include "catalog.h"
#include "child.h"
#include "events.h"
#include "fserr.h"
#include "launch.h"
#include "log.h"
#include "task_deliver.h"
#include "wsbranch.h"
#include "wscred.h"
#include "wsreport.h"
#include "wsurl.h"
#include "xmalloc.h"

/* At most this many deliveries at once. */
#define TASK_DELIVER_JOBS_MAX 4
#define TASK_DELIVER_CRED_FD 3
#define TASK_DELIVER_DIFF_FD 4
#define TASK_DELIVER_MESSAGE_MAX 65536
#define TASK_DELIVER_AUTHOR_MAX 256
#define TASK_DELIVER_DIFFSTAT_MAX (64u << 10)
/* berth-workspace makes no larger diff (RLIMIT_FSIZE on git's). */
#define TASK_DELIVER_DIFF_MAX (1ull << 30)

enum task_deliver_end {
	TASK_DELIVER_RUNNING,
	TASK_DELIVER_DONE,
	TASK_DELIVER_FAILED,
	TASK_DELIVER_CONFLICT,
	TASK_DELIVER_BROKEN, /* the helper said something malformed */
};

/* One delivery under way: its helper, then the publication of its diff.
 * The credential is kept only to fill the helper's pipe and redact what
 * the helper reports, and is wiped when the helper ends. */
struct task_deliver_job {
	uint64_t serial, req; /* who asked, and the request to answer */
	char id[TASKREC_ID_LEN + 1];
	char branch[TASKREC_BRANCH_MAX + 1];
	char *dir, *repo; /* the workspace; where to push, or NULL */
	char *message;
	char name[TASK_DELIVER_AUTHOR_MAX + 1],
	    email[TASK_DELIVER_AUTHOR_MAX + 1];
	struct wscred *cred; /* NULL: none */
	int diff;            /* the diff's file (unlinked), or -1 */
	pid_t pid;
	int fd; /* the report pipe */
	struct event *ev;
	char line[WSREPORT_LINE_MAX + 1];
	size_t linelen;
	enum task_deliver_end end;
	enum wsreport_deliver_conflict conflict;
	char *reason; /* failed's, redacted */
	char commit[41], base[41];
	bool pushed;
	uint64_t files, insertions, deletions;
	char *diffstat; /* NUL-ended, at most TASK_DELIVER_DIFFSTAT_MAX */
	size_t ndiffstat;
	struct artifact_pub *pub; /* the diff's, while it is published */
	struct task_deliver_job *next;
};

static struct event_base *task_deliver_base;
static const struct config *task_deliver_cfg;
static task_deliver_done_fn task_deliver_done;
static struct task_deliver_job *task_deliver_jobs;

void
task_deliver_init(struct event_base *base, const struct config *cfg,
    task_deliver_done_fn done)
{
	task_deliver_base = base;
	task_deliver_cfg = cfg;
	task_deliver_done = done;
}

static void
task_deliver_wipe_cred(struct task_deliver_job *j)
{
	wscred_free(j->cred);
	j->cred = NULL;
}

static void
task_deliver_free(struct task_deliver_job *j)
{
	task_deliver_wipe_cred(j);
	if (j->pub != NULL)
		artifact_publish_cancel(j->pub);
	if (j->ev != NULL)
		event_free(j->ev);
	if (j->fd >= 0)
		close(j->fd);
	if (j->diff >= 0)
		close(j->diff);
	free(j->dir);
	free(j->repo);
	free(j->message);
	free(j->reason);
	free(j->diffstat);
	free(j);
}

static void
task_deliver_unlink(struct task_deliver_job *j)
{
	struct task_deliver_job **pp;

	for (pp = &task_deliver_jobs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			return;
		}
}

static void
task_deliver_end_job(struct task_deliver_job *j)
{
	task_deliver_unlink(j);
	task_deliver_free(j);
}

/* ---- the request ---- */

/* The string at key in m's args, or NULL if it is absent; *bad if it is
 * there and not a string. */
static const msgpack_object *
task_deliver_str(const struct proto_msg *m, const char *key, bool *bad)
{
	const msgpack_object *o = proto_map_get(m->args, key);

	if (o == NULL || o->type == MSGPACK_OBJECT_NIL)
		return NULL;
	if (o->type != MSGPACK_OBJECT_STR)
		*bad = true;
	return o->type == MSGPACK_OBJECT_STR ? o : NULL;
}

/* An author's part: 1 to TASK_DELIVER_AUTHOR_MAX bytes, no control
 * byte, '<' or '>' (git would cut or mangle them in the commit). */
static bool
task_deliver_author_part(const msgpack_object *v, char *out)
{
	size_t i;

	if (v == NULL || v->type != MSGPACK_OBJECT_STR ||
	    v->via.str.size == 0 || v->via.str.size > TASK_DELIVER_AUTHOR_MAX)
		return false;
	for (i = 0; i < v->via.str.size; i++) {
		unsigned char ch = (unsigned char)v->via.str.ptr[i];

		if (ch < 0x20 || ch == 0x7f || ch == '<' || ch == '>')
			return false;
	}
	memcpy(out, v->via.str.ptr, v->via.str.size);
	out[v->via.str.size] = '\0';
	return true;
}

/* author {name, email}, or berth's own when it is absent. */
static bool
task_deliver_author(struct task_deliver_job *j, const msgpack_object *a)
{
	uint32_t i;

	if (a == NULL || a->type == MSGPACK_OBJECT_NIL) {
		snprintf(j->name, sizeof j->name, "berth");
		snprintf(j->email, sizeof j->email, "berth@localhost");
		return true;
	}
	if (a->type != MSGPACK_OBJECT_MAP)
		return false;
	for (i = 0; i < a->via.map.size; i++) {
		const msgpack_object *k = &a->via.map.ptr[i].key;

		if (k->type != MSGPACK_OBJECT_STR ||
		    !((k->via.str.size == 4 &&
		          memcmp(k->via.str.ptr, "name", 4) == 0) ||
		        (k->via.str.size == 5 &&
		            memcmp(k->via.str.ptr, "email", 5) == 0)))
			return false;
	}
	return task_deliver_author_part(proto_map_get(a, "name"), j->name) &&
	    task_deliver_author_part(proto_map_get(a, "email"), j->email);
}

/* branch, commit_message and author into j: NULL, or why not (for
 * bad_args). */
static const char *
task_deliver_commit_args(struct task_deliver_job *j, const struct proto_msg *m)
{
	const msgpack_object *b, *msg;
	bool bad = false;

	b = task_deliver_str(m, "branch", &bad);
	if (b == NULL || !wsbranch_ok(b->via.str.ptr, b->via.str.size))
		return "branch must be a new branch's name: 1 to 255 bytes of "
		       "letters, digits and -_./+, not starting with - nor "
		       "ending with . or /, no component empty, starting with "
		       ". or ending with .lock, no .., not HEAD";
	memcpy(j->branch, b->via.str.ptr, b->via.str.size);
	j->branch[b->via.str.size] = '\0';
	msg = task_deliver_str(m, "commit_message", &bad);
	if (msg == NULL || msg->via.str.size == 0 ||
	    msg->via.str.size > TASK_DELIVER_MESSAGE_MAX ||
	    memchr(msg->via.str.ptr, '\0', msg->via.str.size) != NULL)
		return "commit_message must be a string of 1 to 65536 bytes "
		       "without NUL";
	j->message = xstrndup(msg->via.str.ptr, msg->via.str.size);
	if (!task_deliver_author(j, proto_map_get(m->args, "author")))
		return "author must be {name, email}, each 1 to 256 bytes "
		       "without control bytes, < or >";
	return NULL;
}

/* push, repo and credential into j: true, or false with why (for
 * bad_args) in why[0..max). */
static bool
task_deliver_push_args(struct task_deliver_job *j, const struct proto_msg *m,
    char *why, size_t max)
{
	const msgpack_object *repo,
	    *cred = proto_map_get(m->args, "credential");
	const char *bad_url, *bad_cred;
	bool push = false, bad = false;

	if (cred != NULL && cred->type == MSGPACK_OBJECT_NIL)
		cred = NULL;

	if (proto_arg_bool(m->args, "push", &push) < 0) {
		snprintf(why, max, "push must be a boolean");
		return false;
	}
	repo = task_deliver_str(m, "repo", &bad);
	if (!push && (repo != NULL || bad || cred != NULL)) {
		snprintf(why, max, "repo and credential go with push: true");
		return false;
	}
	if (!push)
		return true;
	if (repo == NULL) {
		snprintf(why, max, "push needs repo: an https URL (a string)");
		return false;
	}
	if ((bad_url = wsurl_check(repo->via.str.ptr, repo->via.str.size)) !=
	    NULL) {
		snprintf(why, max, "repo: %s", bad_url);
		return false;
	}
	j->repo = xstrndup(repo->via.str.ptr, repo->via.str.size);
	if ((bad_cred = wscred_parse(cred, &j->cred)) != NULL) {
		snprintf(why, max, "%s", bad_cred);
		return false;
	}
	return true;
}

/* Reads and checks the request into j: true, or false once the error is
 * answered. */
static bool
task_deliver_parse(struct task_deliver_job *j, struct server_conn *c,
    const struct proto_msg *m, const struct taskrec *t,
    const struct config_runtime *rt)
{
	const char *why;
	char pwhy[256];
	bool force = false;

	if ((why = task_deliver_commit_args(j, m)) != NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", why);
		return false;
	}
	if (!task_deliver_push_args(j, m, pwhy, sizeof pwhy)) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", pwhy);
		return false;
	}
	if (proto_arg_bool(m->args, "force", &force) < 0) {
		server_reply_error(
		    c, m->id, PROTO_E_BAD_ARGS, "force must be a boolean");
		return false;
	}
	if (t->state != TASKREC_SUCCEEDED && !force) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "task %s %s: only a task that succeeded is delivered "
		    "(force: true delivers it anyway)",
		    t->id, taskrec_state_name(t->state));
		return false;
	}
	if (rt->workspace == NULL) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "runtime %s has no workspace: nothing to deliver",
		    rt->name);
		return false;
	}
	j->dir = xstrdup(rt->workspace);
	return true;
}

const char *
task_deliver_busy(const char *dir)
{
	const struct task_deliver_job *o;

	for (o = task_deliver_jobs; o != NULL; o = o->next)
		if (strcmp(o->dir, dir) == 0)
			return o->id;
	return NULL;
}

/* Whether the request must wait: too many deliveries, or one of the same
 * workspace (answered). */
static bool
task_deliver_wait(
    struct server_conn *c, const struct proto_msg *m, const char *dir)
{
	const struct task_deliver_job *o;
	const char *id = task_deliver_busy(dir);
	size_t n = 0;

	if (id != NULL) {
		server_reply_error_path(c, m->id, PROTO_E_CONFLICT, dir,
		    "%s is being delivered already (task %s)", dir, id);
		return true;
	}
	for (o = task_deliver_jobs; o != NULL; o = o->next)
		n++;
	if (n >= TASK_DELIVER_JOBS_MAX) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%d deliveries are under way: try again later",
		    TASK_DELIVER_JOBS_MAX);
		return true;
	}
	return false;
}

/* ---- the answer ---- */

/* A reply's error map for a delivery that ended without one, emitting
 * nothing: the record is unchanged. */
static void
task_deliver_reply_error(
    const struct task_deliver_job *j, const char *code, const char *msg)
{
	struct server_conn *c = server_conn_find(j->serial);

	log_info("task %s: not delivered: %s", j->id, msg);
	if (c != NULL)
		server_reply_error_path(c, j->req, code, j->dir, "%s", msg);
}

static void
task_deliver_pack_result(msgpack_packer *pk, const struct task_deliver_job *j,
    const struct artifact_done *d)
{
	msgpack_pack_map(pk, 8);
	proto_pack_kv_str(pk, "id", j->id);
	proto_pack_kv_str(pk, "branch", j->branch);
	proto_pack_kv_str(pk, "commit", j->commit);
	proto_pack_kv_str(pk, "base", j->base);
	proto_pack_kv_bool(pk, "pushed", j->pushed);
	proto_pack_str(pk, "stat");
	msgpack_pack_map(pk, 3);
	proto_pack_kv_u64(pk, "files", j->files);
	proto_pack_kv_u64(pk, "insertions", j->insertions);
	proto_pack_kv_u64(pk, "deletions", j->deletions);
	proto_pack_kv_str(
	    pk, "diffstat", j->diffstat != NULL ? j->diffstat : "");
	proto_pack_str(pk, "diff");
	artifact_pack_done(pk, d);
}

/* The diff is published: the record learns of the delivery, the journal
 * tells it, the request is answered. */
static void
task_deliver_published(void *arg, const struct artifact_done *d)
{
	struct task_deliver_job *j = arg;
	struct taskrec_delivery rec = {.done = true, .pushed = j->pushed};
	struct server_conn *c = server_conn_find(j->serial);
	msgpack_packer *pk;
	char msg[512];

	j->pub = NULL;
	if (d->err != 0) {
		snprintf(msg, sizeof msg,
		    "branch %s (commit %s) was made, but its diff could not "
		    "be published: %s %s: %s",
		    j->branch, j->commit, d->what, d->path, strerror(d->err));
		task_deliver_reply_error(j, fserr_code(d->err), msg);
		task_deliver_end_job(j);
		return;
	}
	snprintf(rec.branch, sizeof rec.branch, "%s", j->branch);
	memcpy(rec.commit, j->commit, sizeof rec.commit);
	memcpy(rec.base, j->base, sizeof rec.base);
	snprintf(rec.diff, sizeof rec.diff, "%s", d->id);
	rec.at = proto_now_ms();
	task_deliver_done(j->id, &rec);
	pk = events_begin(EV_TASK_DELIVERED);
	msgpack_pack_map(pk, 5);
	proto_pack_kv_str(pk, "id", j->id);
	proto_pack_kv_str(pk, "branch", j->branch);
	proto_pack_kv_str(pk, "commit", j->commit);
	proto_pack_kv_bool(pk, "pushed", j->pushed);
	proto_pack_kv_str(pk, "diff", d->id);
	events_commit();
	log_info("task %s delivered as %s (commit %s%s)", j->id, j->branch,
	    j->commit, j->pushed ? ", pushed" : "");
	if (c != NULL) {
		task_deliver_pack_result(server_reply_begin(c, j->req), j, d);
		server_reply_end(c);
	}
	task_deliver_end_job(j);
}

/* The helper committed: its diff goes to the artifact store. */
static void
task_deliver_publish(struct task_deliver_job *j)
{
	char name[TASKREC_ID_LEN + 16], label[TASKREC_ID_LEN + 32], msg[512];
	struct stat st;
	int fd = j->diff;

	snprintf(name, sizeof name, "task-%s.diff", j->id);
	snprintf(label, sizeof label, "the diff of task %s", j->id);
	if (fstat(fd, &st) == 0 &&
	    (uint64_t)st.st_size > TASK_DELIVER_DIFF_MAX) {
		snprintf(msg, sizeof msg,
		    "branch %s (commit %s) was made, but its diff is over "
		    "1 GiB: not published",
		    j->branch, j->commit);
		task_deliver_reply_error(j, PROTO_E_INTERNAL, msg);
		task_deliver_end_job(j);
		return;
	}
	j->diff = -1;
	j->pub = artifact_publish_fd(
	    fd, name, "text/x-diff", label, task_deliver_published, j);
	if (j->pub == NULL) {
		snprintf(msg, sizeof msg,
		    "branch %s (commit %s) was made, but its diff could not "
		    "be published: %s",
		    j->branch, j->commit, strerror(errno));
		task_deliver_reply_error(j, fserr_code(errno), msg);
		task_deliver_end_job(j);
	}
}

static void
task_deliver_conflict(const struct task_deliver_job *j)
{
	char msg[512];

	switch (j->conflict) {
	case WSREPORT_DELIVER_NOTREPO:
		snprintf(msg, sizeof msg, "%s is not a git clone", j->dir);
		break;
	case WSREPORT_DELIVER_NOHEAD:
		snprintf(msg, sizeof msg,
		    "%s has no commit at HEAD to deliver on", j->dir);
		break;
	case WSREPORT_DELIVER_EXISTS:
		snprintf(msg, sizeof msg, "branch %s exists already in %s",
		    j->branch, j->dir);
		break;
	case WSREPORT_DELIVER_NOCHANGE:
		snprintf(msg, sizeof msg,
		    "nothing to deliver: %s is as "
		    "its HEAD commit has it",
		    j->dir);
		break;
	}
	task_deliver_reply_error(j, PROTO_E_CONFLICT, msg);
}

/* The helper has ended: what it reported is the answer. */
static void
task_deliver_finish(struct task_deliver_job *j, int status)
{
	char why[128];

	if (j->end == TASK_DELIVER_DONE && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0) {
		task_deliver_publish(j);
		return;
	}
	if (j->end == TASK_DELIVER_FAILED)
		task_deliver_reply_error(j, PROTO_E_GIT_FAILED, j->reason);
	else if (j->end == TASK_DELIVER_CONFLICT)
		task_deliver_conflict(j);
	else if (j->end == TASK_DELIVER_BROKEN)
		task_deliver_reply_error(j, PROTO_E_INTERNAL,
		    "berth-workspace's report was malformed");
	else {
		if (WIFSIGNALED(status))
			snprintf(why, sizeof why,
			    "berth-workspace was killed by signal %d",
			    WTERMSIG(status));
		else
			snprintf(why, sizeof why,
			    "berth-workspace ended without an answer (code %d)",
			    WEXITSTATUS(status));
		task_deliver_reply_error(j, PROTO_E_INTERNAL, why);
	}
	task_deliver_end_job(j);
}

/* ---- the helper ---- */

static void
task_deliver_kill(struct task_deliver_job *j)
{
	if (j->pid > 0)
		kill(-j->pid, SIGKILL);
}

/* The helper said something it never says (after its answer, or not in
 * the format): nothing more it says is believed. */
static void
task_deliver_broken(struct task_deliver_job *j, size_t len)
{
	if (j->end != TASK_DELIVER_BROKEN)
		log_warn("task %s: berth-workspace said something malformed "
		         "(%zu bytes)",
		    j->id, len);
	j->end = TASK_DELIVER_BROKEN;
	task_deliver_kill(j);
}

/* A line of git's --stat, kept while the whole stays within its limit. */
static void
task_deliver_diffstat(struct task_deliver_job *j, const char *text, size_t len)
{
	if (j->ndiffstat + len + 1 > TASK_DELIVER_DIFFSTAT_MAX)
		return;
	j->diffstat = xrealloc(j->diffstat, j->ndiffstat + len + 2);
	memcpy(j->diffstat + j->ndiffstat, text, len);
	j->ndiffstat += len;
	j->diffstat[j->ndiffstat++] = '\n';
	j->diffstat[j->ndiffstat] = '\0';
}

/* One report line of the helper. */
static void
task_deliver_report(struct task_deliver_job *j, const char *line, size_t len)
{
	struct wsreport_deliver r;

	if (j->end != TASK_DELIVER_RUNNING ||
	    wsreport_deliver_parse(line, len, &r) < 0) {
		task_deliver_broken(j, len);
		return;
	}
	switch (r.kind) {
	case WSREPORT_DELIVER_CONFLICT:
		j->end = TASK_DELIVER_CONFLICT;
		j->conflict = r.conflict;
		break;
	case WSREPORT_DELIVER_FAILED:
		j->end = TASK_DELIVER_FAILED;
		j->reason = wscred_redact(j->cred, r.text, r.textlen);
		break;
	case WSREPORT_DELIVER_STAT:
		j->files = r.files;
		j->insertions = r.insertions;
		j->deletions = r.deletions;
		break;
	case WSREPORT_DELIVER_DIFFSTAT:
		task_deliver_diffstat(j, r.text, r.textlen);
		break;
	case WSREPORT_DELIVER_DELIVERED:
		j->end = TASK_DELIVER_DONE;
		memcpy(j->commit, r.commit, sizeof j->commit);
		memcpy(j->base, r.base, sizeof j->base);
		j->pushed = r.pushed;
		break;
	}
}

/* Reads what the helper wrote; false once its pipe ended. */
static bool
task_deliver_read(struct task_deliver_job *j)
{
	char *nl;
	ssize_t n;

	for (;;) {
		n = read(j->fd, j->line + j->linelen,
		    sizeof j->line - 1 - j->linelen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		j->linelen += (size_t)n;
		while ((nl = memchr(j->line, '\n', j->linelen)) != NULL) {
			task_deliver_report(j, j->line, (size_t)(nl - j->line));
			j->linelen -= (size_t)(nl + 1 - j->line);
			memmove(j->line, nl + 1, j->linelen);
		}
		if (j->linelen == sizeof j->line - 1) {
			task_deliver_broken(j, j->linelen);
			j->linelen = 0;
		}
	}
}

static void
task_deliver_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct task_deliver_job *j = arg;

	(void)fd;
	(void)what;
	if (!task_deliver_read(j)) {
		event_del(j->ev);
		close(j->fd);
		j->fd = -1;
	}
}

static void
task_deliver_exit_cb(pid_t pid, int status, void *arg)
{
	struct task_deliver_job *j = arg;

	(void)pid;
	j->pid = 0;
	/* Whatever it wrote is in the pipe by now. */
	if (j->fd >= 0)
		task_deliver_read(j);
	if (j->linelen > 0 && j->end == TASK_DELIVER_RUNNING)
		j->end = TASK_DELIVER_BROKEN;
	task_deliver_wipe_cred(j);
	task_deliver_finish(j, status);
}

/* berth-workspace deliver's argv, for launch_user (which takes it). */
static char **
task_deliver_argv(const struct task_deliver_job *j)
{
	char **argv = xcalloc(22, sizeof *argv);
	size_t n = 0;

	argv[n++] = child_berth_program("berth-workspace");
	argv[n++] = xstrdup("deliver");
	argv[n++] = xstrdup("--dir");
	argv[n++] = xstrdup(j->dir);
	argv[n++] = xstrdup("--branch");
	argv[n++] = xstrdup(j->branch);
	argv[n++] = xstrdup("--message");
	argv[n++] = xstrdup(j->message);
	argv[n++] = xstrdup("--author-name");
	argv[n++] = xstrdup(j->name);
	argv[n++] = xstrdup("--author-email");
	argv[n++] = xstrdup(j->email);
	argv[n++] = xstrdup("--diff-fd");
	argv[n++] = xasprintf("%d", TASK_DELIVER_DIFF_FD);
	if (j->repo != NULL) {
		argv[n++] = xstrdup("--push");
		argv[n++] = xstrdup(j->repo);
	}
	if (j->cred != NULL) {
		argv[n++] = xstrdup("--credential-fd");
		argv[n++] = xasprintf("%d", TASK_DELIVER_CRED_FD);
	}
	return argv;
}

/* The file the diff goes to: berthd's, in its state directory, 0600,
 * and unlinked at once, so that no one has a path to it; the helper
 * gets an fd. Returns it, or -1 with errno. */
static int
task_deliver_diff_file(void)
{
	char *path =
	    xasprintf("%s/.task-diff-XXXXXX", task_deliver_cfg->state_dir);
	int fd = mkostemp(path, O_CLOEXEC), err = errno;

	if (fd >= 0)
		unlink(path);
	free(path);
	errno = err;
	return fd;
}

/* git's system and global config files unread: berth's steps are
 * berth's (berth-workspace deliver ignores the runtime's say too). */
static char *const task_deliver_git_env[] = {
    "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", NULL};

/* Starts berth-workspace deliver as the runtime's user (its groups, a
 * clean environment plus the runtime's env, confined). NULL, or why
 * not. */
static const char *
task_deliver_spawn(
    struct task_deliver_job *j, const struct config_runtime *rt, char **cause)
{
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	char *const *const extra[] = {task_deliver_git_env, rt->env.v};
	struct secrets_grant none = {0};
	struct launch_user_req req = {.argv = task_deliver_argv(j),
	    .user = rt->user,
	    .group = rt->group,
	    .cwd = "/",
	    .extra = extra,
	    .nextra = rt->env.v != NULL ? 2 : 1,
	    .grant = &none};
	struct launch l;
	int out[2], cred = -1;

	if (launch_user(&l, &req, cause) < 0)
		return "the runtime's user cannot run it";
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) != 0) {
		launch_free(&l);
		return "cannot make a pipe";
	}
	if (j->cred != NULL && (cred = wscred_pipe(j->cred)) < 0) {
		close(out[0]);
		close(out[1]);
		launch_free(&l);
		return "cannot make a pipe";
	}
	launch_spec(&l, &spec);
	spec.stdout_fd = out[1];
	spec.extra_fd = cred;
	spec.extra_fd_at = TASK_DELIVER_CRED_FD;
	spec.hand[0] = (struct child_handed){j->diff, TASK_DELIVER_DIFF_FD};
	spec.nhand = 1;
	j->pid = child_spawn(&spec, task_deliver_exit_cb, j, cause);
	launch_free(&l);
	close(out[1]);
	if (cred >= 0)
		close(cred);
	if (j->pid < 0) {
		j->pid = 0;
		close(out[0]);
		return "cannot start berth-workspace";
	}
	j->fd = out[0];
	j->ev = event_new(task_deliver_base, j->fd, EV_READ | EV_PERSIST,
	    task_deliver_read_cb, j);
	event_add(j->ev, NULL);
	return NULL;
}

/* Makes the diff's file and spawns the helper: true, or false once the
 * error is answered. */
static bool
task_deliver_begin(struct task_deliver_job *j, struct server_conn *c,
    const struct config_runtime *rt)
{
	const char *why;
	char *cause = NULL;

	if ((j->diff = task_deliver_diff_file()) < 0) {
		fserr_reply(c, j->req, errno, "cannot create a file in",
		    task_deliver_cfg->state_dir);
		return false;
	}
	if ((why = task_deliver_spawn(j, rt, &cause)) == NULL)
		return true;
	log_warn("task %s: %s%s%s", j->id, why, cause != NULL ? ": " : "",
	    cause != NULL ? cause : "");
	server_reply_error_path(c, j->req, PROTO_E_INTERNAL, j->dir, "%s%s%s",
	    why, cause != NULL ? ": " : "", cause != NULL ? cause : "");
	free(cause);
	return false;
}

void
task_deliver_op(struct server_conn *c, const struct proto_msg *m,
    const struct taskrec *t, const struct config_runtime *rt)
{
	struct task_deliver_job *j = xcalloc(1, sizeof *j);
	bool ok;

	j->fd = j->diff = -1;
	j->serial = c->serial;
	j->req = m->id;
	snprintf(j->id, sizeof j->id, "%s", t->id);
	ok = task_deliver_parse(j, c, m, t, rt);
	wscred_wipe_object(proto_map_get(m->args, "credential"));
	if (!ok || task_deliver_wait(c, m, j->dir) ||
	    !task_deliver_begin(j, c, rt)) {
		task_deliver_free(j);
		return;
	}
	j->next = task_deliver_jobs;
	task_deliver_jobs = j;
}

void
task_deliver_shutdown(void)
{
	struct task_deliver_job *j;

	while ((j = task_deliver_jobs) != NULL) {
		task_deliver_jobs = j->next;
		if (j->pid > 0) {
			child_forget(j->pid);
			task_deliver_kill(j);
		}
		task_deliver_reply_error(j, PROTO_E_UNAVAILABLE,
		    "berthd stopped before the "
		    "delivery ended");
		task_deliver_free(j);
	}
}
