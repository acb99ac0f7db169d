/* workspace: workspace.prepare (see workspace.h). */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>

#include "catalog.h"
#include "clock.h"
#include "disk.h"
#include "events.h"
#include "inflight.h"
#include "log.h"
#include "workspace.h"
#include "wsbranch.h"
#include "wscred.h"
#include "wsjob.h"
#include "wsreport.h"
#include "wsurl.h"
#include "xmalloc.h"

#define WORKSPACE_FILES_MAX 100
/* workspace.progress at most about ten times a second, and at each new
 * phase and its end: a client sees where each phase began and that it
 * finished. */
#define WORKSPACE_PROGRESS_MS 100

/* One prepare under way. The request's credential is held until its
 * helper's run takes it (and wipes it when the helper ends). */
struct workspace_job {
	uint64_t serial, id; /* who asked, and the request to answer */
	char *dir, *repo;
	struct wscred *cred; /* NULL: none, or the run's */
	struct wsjob *run;   /* the helper's; NULL: not started */
	enum wsreport_conflict conflict;
	uint64_t dirty; /* conflict dirty: how many changes */
	char *files[WORKSPACE_FILES_MAX];
	size_t nfiles;
	char commit[41];
	char *branch; /* done's, or the request's */
	char *reason; /* failed's */
	bool cloned;
	uint64_t started, last_progress, last_objects;
	const char *last_phase;
	const struct config_runtime *rt;
	LIST_ENTRY(workspace_job) entry;
};

static struct event_base *workspace_base;
static const struct config *workspace_cfg;
static LIST_HEAD(, workspace_job) workspace_jobs = LIST_HEAD_INITIALIZER(
    workspace_jobs);

void
workspace_init(struct event_base *base, const struct config *cfg)
{
	workspace_base = base;
	workspace_cfg = cfg;
}

static void
workspace_free(struct workspace_job *j)
{
	size_t i;

	wscred_free(j->cred);
	wsjob_free(j->run);
	for (i = 0; i < j->nfiles; i++)
		free(j->files[i]);
	free(j->dir);
	free(j->repo);
	free(j->branch);
	free(j->reason);
	inflight_end(j->serial, j->id);
	free(j);
}

static void
workspace_emit_progress(struct workspace_job *j, const struct wsreport *r)
{
	uint64_t now = clock_mono_ms();
	msgpack_packer *pk;

	bool finished = r->total > 0 && r->objects == r->total &&
	    j->last_objects != r->objects;

	if (r->phase == j->last_phase && !finished &&
	    now - j->last_progress < WORKSPACE_PROGRESS_MS)
		return;
	j->last_phase = r->phase;
	j->last_progress = now;
	j->last_objects = r->objects;
	pk = events_begin(EV_WORKSPACE_PROGRESS);
	msgpack_pack_map(pk, 5);
	proto_pack_kv_str(pk, "dir", j->dir);
	proto_pack_kv_str(pk, "phase", r->phase);
	proto_pack_kv_u64(pk, "objects", r->objects);
	proto_pack_kv_u64(pk, "total", r->total);
	proto_pack_kv_u64(pk, "bytes", r->bytes);
	events_commit();
}

/* One report line of the helper. */
static enum wsjob_answer
workspace_report(void *arg, const char *line, size_t len)
{
	struct workspace_job *j = arg;
	struct wsreport r;

	if (wsreport_parse(line, len, &r) < 0)
		return WSJOB_BROKEN;
	switch (r.kind) {
	case WSREPORT_PROGRESS: workspace_emit_progress(j, &r); break;
	case WSREPORT_DIRTY:
		if (j->nfiles < WORKSPACE_FILES_MAX)
			j->files[j->nfiles++] = xstrndup(r.text, r.textlen);
		break;
	case WSREPORT_CONFLICT:
		j->conflict = r.conflict;
		j->dirty = r.count;
		return WSJOB_CONFLICT;
	case WSREPORT_FAILED:
		j->reason = wsjob_redact(j->run, r.text, r.textlen);
		return WSJOB_FAILED;
	case WSREPORT_DONE:
		memcpy(j->commit, r.commit, sizeof j->commit);
		j->cloned = r.cloned;
		free(j->branch);
		j->branch = xstrndup(r.text, r.textlen);
		return WSJOB_DONE;
	}
	return WSJOB_NONE;
}

static void
workspace_pack_files(msgpack_packer *pk, const struct workspace_job *j)
{
	size_t i;

	msgpack_pack_array(pk, j->nfiles);
	for (i = 0; i < j->nfiles; i++)
		proto_pack_str(pk, j->files[i]);
}

/* The conflict, with the changed files if that is what it is. */
static void
workspace_reply_conflict(struct server_conn *c, const struct workspace_job *j)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char msg[512];
	bool dirty = j->conflict == WSREPORT_CONFLICT_DIRTY;

	if (j->conflict == WSREPORT_CONFLICT_ORIGIN)
		snprintf(msg, sizeof msg, "%s is a clone of another repository",
		    j->dir);
	else if (j->conflict == WSREPORT_CONFLICT_NOTREPO)
		snprintf(
		    msg, sizeof msg, "%s is neither empty nor a clone", j->dir);
	else
		snprintf(msg, sizeof msg,
		    "%s has %llu uncommitted change(s): nothing was touched",
		    j->dir, (unsigned long long)j->dirty);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	proto_pack_kv_str(&pk, "type", "response");
	proto_pack_kv_u64(&pk, "id", j->id);
	proto_pack_kv_bool(&pk, "ok", false);
	proto_pack_str(&pk, "error");
	msgpack_pack_map(&pk, dirty ? 5 : 3);
	proto_pack_kv_str(&pk, "code", PROTO_E_CONFLICT);
	proto_pack_kv_str(&pk, "message", msg);
	proto_pack_kv_str(&pk, "path", j->dir);
	if (dirty) {
		proto_pack_str(&pk, "files");
		workspace_pack_files(&pk, j);
		proto_pack_kv_u64(&pk, "more",
		    j->dirty > j->nfiles ? j->dirty - j->nfiles : 0);
	}
	server_send(c, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
}

static void
workspace_emit_failed(const struct workspace_job *j, const char *reason)
{
	msgpack_packer *pk = events_begin(EV_WORKSPACE_FAILED);

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "dir", j->dir);
	proto_pack_kv_str(pk, "reason", reason);
	events_commit();
}

static void
workspace_done(struct workspace_job *j, struct server_conn *c)
{
	msgpack_packer *pk = events_begin(EV_WORKSPACE_PREPARED);

	msgpack_pack_map(pk, 6);
	proto_pack_kv_str(pk, "dir", j->dir);
	proto_pack_kv_str(pk, "repo", j->repo);
	proto_pack_kv_str(pk, "branch", j->branch);
	proto_pack_kv_str(pk, "commit", j->commit);
	proto_pack_kv_bool(pk, "cloned", j->cloned);
	proto_pack_kv_u64(pk, "duration_ms", clock_mono_ms() - j->started);
	events_commit();
	if (c == NULL)
		return;
	pk = server_reply_begin(c, j->id);
	msgpack_pack_map(pk, 5);
	proto_pack_kv_str(pk, "dir", j->dir);
	proto_pack_kv_str(pk, "repo", j->repo);
	proto_pack_kv_str(pk, "branch", j->branch);
	proto_pack_kv_str(pk, "commit", j->commit);
	proto_pack_kv_bool(pk, "cloned", j->cloned);
	server_reply_end(c);
}

/* The helper has ended: what it reported is the answer. */
static void
workspace_finish(struct workspace_job *j, enum wsjob_answer a, const char *why)
{
	struct server_conn *c = server_conn_find(j->serial);

	if (a == WSJOB_DONE) {
		workspace_done(j, c);
		return;
	}
	if (a == WSJOB_FAILED) {
		workspace_emit_failed(j, j->reason);
		if (c != NULL)
			server_reply_error_path(c, j->id, PROTO_E_GIT_FAILED,
			    j->dir, "%s", j->reason);
		return;
	}
	if (a == WSJOB_CONFLICT) {
		workspace_emit_failed(j,
		    j->conflict == WSREPORT_CONFLICT_DIRTY
		        ? "uncommitted changes"
		        : "not a clone of this repository");
		if (c != NULL)
			workspace_reply_conflict(c, j);
		return;
	}
	workspace_emit_failed(j, why);
	if (c != NULL)
		server_reply_error_path(c, j->id, PROTO_E_INTERNAL, j->dir,
		    "%s",
		    a == WSJOB_BROKEN ? "berth-workspace's report was malformed"
		                      : why);
}

static void
workspace_exit(void *arg, enum wsjob_answer a, const char *why)
{
	struct workspace_job *j = arg;

	workspace_finish(j, a, why);
	LIST_REMOVE(j, entry);
	workspace_free(j);
}

/* Reads and checks the request into j: true, or false once the error is
 * answered. */
static bool
workspace_parse(struct workspace_job *j, struct server_conn *c,
    const struct proto_msg *m, const struct config_runtime **rt)
{
	char name[CONFIG_MAX_NAME + 1] = "", branch[WSBRANCH_MAX + 1];
	char dir[4096] = "";
	const msgpack_object *repo = proto_map_get(m->args, "repo");
	const char *why;
	int hb;

	if (proto_arg_str(m->args, "runtime", name, sizeof name) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "workspace.prepare needs \"runtime\": a runtime's name");
		return false;
	}
	if ((*rt = config_runtime_find(workspace_cfg, name)) == NULL) {
		server_reply_error(
		    c, m->id, PROTO_E_NOT_FOUND, "no runtime \"%s\"", name);
		return false;
	}
	if (repo == NULL || repo->type != MSGPACK_OBJECT_STR) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "repo must be an https URL (a string)");
		return false;
	}
	if ((why = wsurl_check(repo->via.str.ptr, repo->via.str.size)) !=
	    NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "repo: %s", why);
		return false;
	}
	hb = proto_arg_str(m->args, "branch", branch, sizeof branch);
	if (hb < 0 || (hb > 0 && !wsbranch_ok(branch, strlen(branch)))) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "branch must be a branch name (letters, digits, -_./+)");
		return false;
	}
	if (proto_arg_str(m->args, "dir", dir, sizeof dir) < 0 ||
	    (dir[0] == '\0' && (*rt)->workspace == NULL)) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "dir must be an absolute path (the runtime has no "
		    "workspace to default to)");
		return false;
	}
	j->dir = xstrdup(dir[0] != '\0' ? dir : (*rt)->workspace);
	if (j->dir[0] != '/') {
		server_reply_error(
		    c, m->id, PROTO_E_BAD_ARGS, "dir must be an absolute path");
		return false;
	}
	if ((why = wscred_parse(
	         proto_map_get(m->args, "credential"), &j->cred)) != NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", why);
		return false;
	}
	j->repo = xstrndup(repo->via.str.ptr, repo->via.str.size);
	j->branch = hb > 0 ? xstrdup(branch) : NULL;
	return true;
}

static bool
workspace_busy(struct server_conn *c, const struct proto_msg *m,
    const struct workspace_job *j)
{
	const struct workspace_job *o;
	size_t n = 0;

	for (o = LIST_FIRST(&workspace_jobs); o != NULL;
	     o = LIST_NEXT(o, entry), n++)
		if (strcmp(o->dir, j->dir) == 0) {
			server_reply_error_path(c, m->id, PROTO_E_CONFLICT,
			    j->dir, "%s is being prepared already", j->dir);
			return true;
		}
	if (n >= WORKSPACE_JOBS_MAX) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%d workspaces are being prepared: try again later",
		    WORKSPACE_JOBS_MAX);
		return true;
	}
	return false;
}

/* Starts j's helper; a failure is answered, and j goes. */
static void
workspace_begin(struct workspace_job *j)
{
	const char *args[7] = {"--repo", j->repo, "--dir", j->dir};
	char *label = xasprintf("workspace %s", j->dir), *why = NULL;
	struct wsjob_spec s = {.base = workspace_base,
	    .label = label,
	    .args = args,
	    .rt = j->rt,
	    .cred = j->cred,
	    .hand_fd = -1,
	    .line = workspace_report,
	    .exit = workspace_exit,
	    .arg = j};
	struct server_conn *c;

	if (j->branch != NULL) {
		args[4] = "--branch";
		args[5] = j->branch;
	}
	j->cred = NULL;
	j->run = wsjob_start(&s, &why);
	free(label);
	if (j->run != NULL)
		return;
	if ((c = server_conn_find(j->serial)) != NULL)
		server_reply_error_path(
		    c, j->id, PROTO_E_INTERNAL, j->dir, "%s", why);
	free(why);
	LIST_REMOVE(j, entry);
	workspace_free(j);
}

static void
workspace_disk_done(int ok, const char *why, void *arg)
{
	struct workspace_job *j = arg;

	if (ok != 0)
		log_warn(
		    "workspace %s: not bounded to disk_bytes: %s", j->dir, why);
	workspace_begin(j);
}

/* A runtime's own workspace with a disk limit is bounded before the
 * clone, so that the limit holds from its first byte. Returns whether
 * the bound is under way (workspace_begin follows). */
static bool
workspace_bound(struct workspace_job *j)
{
	const struct config_runtime *r = j->rt;
	struct passwd *pw;
	struct stat st;

	if (r->limits.v[LIMIT_DISK] == 0 || r->workspace == NULL ||
	    strcmp(j->dir, r->workspace) != 0 || stat(j->dir, &st) != 0 ||
	    !S_ISDIR(st.st_mode) || (pw = getpwnam(r->user)) == NULL)
		return false;
	disk_ensure(j->dir, r->limits.v[LIMIT_DISK], pw->pw_uid, pw->pw_gid,
	    workspace_disk_done, j);
	return true;
}

void
workspace_op_prepare(struct server_conn *c, const struct proto_msg *m)
{
	struct workspace_job *j = xcalloc(1, sizeof *j);
	const struct config_runtime *rt = NULL;
	bool ok;

	ok = workspace_parse(j, c, m, &rt);
	wscred_wipe_object(proto_map_get(m->args, "credential"));
	if (!ok || workspace_busy(c, m, j)) {
		workspace_free(j);
		return;
	}
	j->serial = c->serial;
	j->id = m->id;
	j->started = clock_mono_ms();
	j->rt = rt;
	LIST_INSERT_HEAD(&workspace_jobs, j, entry);
	inflight_add(c, m->id, inflight_cancel_serial, &j->serial);
	if (!workspace_bound(j))
		workspace_begin(j);
}

void
workspace_shutdown(void)
{
	struct workspace_job *j;

	while ((j = LIST_FIRST(&workspace_jobs)) != NULL) {
		LIST_REMOVE(j, entry);
		workspace_free(j);
	}
}
