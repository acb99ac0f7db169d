/* task_deliver: task.deliver (see task_deliver.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifact.h"
#include "catalog.h"
#include "events.h"
#include "fserr.h"
#include "inflight.h"
#include "log.h"
#include "task_deliver.h"
#include "wsbranch.h"
#include "wscred.h"
#include "wsjob.h"
#include "wsreport.h"
#include "wsurl.h"
#include "xmalloc.h"

/* At most this many deliveries at once. */
#define TASK_DELIVER_JOBS_MAX 4
#define TASK_DELIVER_MESSAGE_MAX 65536
#define TASK_DELIVER_AUTHOR_MAX 256
#define TASK_DELIVER_DIFFSTAT_MAX (64u << 10)
/* berth-workspace makes no larger diff (RLIMIT_FSIZE on git's). */
#define TASK_DELIVER_DIFF_MAX (1ull << 30)

/* One delivery under way: its helper, then the publication of its diff.
 * The request's credential is held until the helper's run takes it (and
 * wipes it when the helper ends). */
struct task_deliver_job {
	uint64_t serial, req; /* who asked, and the request to answer */
	char id[TASKREC_ID_LEN + 1];
	char branch[TASKREC_BRANCH_MAX + 1];
	char *dir, *repo; /* the workspace; where to push, or NULL */
	char *message;
	char name[TASK_DELIVER_AUTHOR_MAX + 1],
	    email[TASK_DELIVER_AUTHOR_MAX + 1];
	struct wscred *cred; /* NULL: none, or the run's */
	struct wsjob *run;   /* the helper's, until it ends */
	int diff;            /* the diff's file (unlinked), or -1 */
	enum wsreport_deliver_conflict conflict;
	char *reason; /* failed's, redacted */
	char commit[41], base[41];
	bool pushed;
	uint64_t files, insertions, deletions;
	char *diffstat; /* NUL-ended, at most TASK_DELIVER_DIFFSTAT_MAX */
	size_t ndiffstat;
	struct artifact_pub *pub; /* the diff's, while it is published */
	LIST_ENTRY(task_deliver_job) entry;
};

static struct event_base *task_deliver_base;
static const struct config *task_deliver_cfg;
static task_deliver_done_fn task_deliver_done;
static LIST_HEAD(, task_deliver_job) task_deliver_jobs = LIST_HEAD_INITIALIZER(
    task_deliver_jobs);

void
task_deliver_init(struct event_base *base, const struct config *cfg,
    task_deliver_done_fn done)
{
	task_deliver_base = base;
	task_deliver_cfg = cfg;
	task_deliver_done = done;
}

static void
task_deliver_free(struct task_deliver_job *j)
{
	wscred_free(j->cred);
	wsjob_free(j->run);
	if (j->pub != NULL)
		artifact_publish_cancel(j->pub);
	if (j->diff >= 0)
		close(j->diff);
	free(j->dir);
	free(j->repo);
	free(j->message);
	free(j->reason);
	free(j->diffstat);
	inflight_end(j->serial, j->req);
	free(j);
}

static void
task_deliver_end_job(struct task_deliver_job *j)
{
	LIST_REMOVE(j, entry);
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

	for (o = LIST_FIRST(&task_deliver_jobs); o != NULL;
	     o = LIST_NEXT(o, entry))
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
	for (o = LIST_FIRST(&task_deliver_jobs); o != NULL;
	     o = LIST_NEXT(o, entry))
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
task_deliver_finish(
    struct task_deliver_job *j, enum wsjob_answer a, const char *why)
{
	if (a == WSJOB_DONE) {
		task_deliver_publish(j);
		return;
	}
	if (a == WSJOB_FAILED)
		task_deliver_reply_error(j, PROTO_E_GIT_FAILED, j->reason);
	else if (a == WSJOB_CONFLICT)
		task_deliver_conflict(j);
	else if (a == WSJOB_BROKEN)
		task_deliver_reply_error(j, PROTO_E_INTERNAL,
		    "berth-workspace's report was malformed");
	else
		task_deliver_reply_error(j, PROTO_E_INTERNAL, why);
	task_deliver_end_job(j);
}

/* ---- the helper ---- */

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
static enum wsjob_answer
task_deliver_report(void *arg, const char *line, size_t len)
{
	struct task_deliver_job *j = arg;
	struct wsreport_deliver r;

	if (wsreport_deliver_parse(line, len, &r) < 0)
		return WSJOB_BROKEN;
	switch (r.kind) {
	case WSREPORT_DELIVER_CONFLICT:
		j->conflict = r.conflict;
		return WSJOB_CONFLICT;
	case WSREPORT_DELIVER_FAILED:
		j->reason = wsjob_redact(j->run, r.text, r.textlen);
		return WSJOB_FAILED;
	case WSREPORT_DELIVER_STAT:
		j->files = r.files;
		j->insertions = r.insertions;
		j->deletions = r.deletions;
		break;
	case WSREPORT_DELIVER_DIFFSTAT:
		task_deliver_diffstat(j, r.text, r.textlen);
		break;
	case WSREPORT_DELIVER_DELIVERED:
		memcpy(j->commit, r.commit, sizeof j->commit);
		memcpy(j->base, r.base, sizeof j->base);
		j->pushed = r.pushed;
		return WSJOB_DONE;
	}
	return WSJOB_NONE;
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

static void
task_deliver_exit(void *arg, enum wsjob_answer a, const char *why)
{
	struct task_deliver_job *j = arg;

	wsjob_free(j->run);
	j->run = NULL;
	task_deliver_finish(j, a, why);
}

/* Makes the diff's file and starts berth-workspace deliver: true, or
 * false once the error is answered. */
static bool
task_deliver_begin(struct task_deliver_job *j, struct server_conn *c,
    const struct config_runtime *rt)
{
	char diff_fd[16], label[TASKREC_ID_LEN + 8], *why = NULL;
	const char *args[16] = {"deliver", "--dir", j->dir, "--branch",
	    j->branch, "--message", j->message, "--author-name", j->name,
	    "--author-email", j->email, "--diff-fd", diff_fd};
	struct wsjob_spec s = {.base = task_deliver_base,
	    .label = label,
	    .args = args,
	    .rt = rt,
	    .cred = j->cred,
	    .line = task_deliver_report,
	    .exit = task_deliver_exit,
	    .arg = j};

	if ((j->diff = task_deliver_diff_file()) < 0) {
		fserr_reply(c, j->req, errno, "cannot create a file in",
		    task_deliver_cfg->state_dir);
		return false;
	}
	snprintf(diff_fd, sizeof diff_fd, "%d", WSJOB_HAND_FD);
	snprintf(label, sizeof label, "task %s", j->id);
	if (j->repo != NULL) {
		args[13] = "--push";
		args[14] = j->repo;
	}
	s.hand_fd = j->diff;
	j->cred = NULL;
	if ((j->run = wsjob_start(&s, &why)) != NULL)
		return true;
	server_reply_error_path(c, j->req, PROTO_E_INTERNAL, j->dir, "%s", why);
	free(why);
	return false;
}

void
task_deliver_op(struct server_conn *c, const struct proto_msg *m,
    const struct taskrec *t, const struct config_runtime *rt)
{
	struct task_deliver_job *j = xcalloc(1, sizeof *j);
	bool ok;

	j->diff = -1;
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
	LIST_INSERT_HEAD(&task_deliver_jobs, j, entry);
	inflight_add(c, m->id, inflight_cancel_serial, &j->serial);
}

void
task_deliver_shutdown(void)
{
	struct task_deliver_job *j;

	while ((j = LIST_FIRST(&task_deliver_jobs)) != NULL) {
		LIST_REMOVE(j, entry);
		task_deliver_reply_error(j, PROTO_E_UNAVAILABLE,
		    "berthd stopped before the "
		    "delivery ended");
		task_deliver_free(j);
	}
}
