/* workspace: workspace.prepare (see workspace.h). */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "catalog.h"
#include "child.h"
#include "clock.h"
#include "disk.h"
#include "events.h"
#include "launch.h"
#include "log.h"
#include "redact.h"
#include "workspace.h"
#include "wsreport.h"
#include "wsurl.h"
#include "xmalloc.h"

#define WORKSPACE_CRED_FD 3
#define WORKSPACE_USERNAME_MAX 256
#define WORKSPACE_PASSWORD_MAX 1024
#define WORKSPACE_FILES_MAX 100
/* workspace.progress at most about ten times a second, and at each new
 * phase and its end: a client sees where each phase began and that it
 * finished. */
#define WORKSPACE_PROGRESS_MS 100

enum workspace_end {
	WORKSPACE_RUNNING,
	WORKSPACE_DONE,
	WORKSPACE_FAILED,
	WORKSPACE_CONFLICT,
	WORKSPACE_BROKEN, /* the helper said something malformed */
};

/* A credential's two parts, in a mapping of their own kept as secrets.c
 * keeps values: locked against swap, out of core dumps, and zeros in a
 * child between fork and exec. */
struct workspace_cred {
	char username[WORKSPACE_USERNAME_MAX + 1];
	char password[WORKSPACE_PASSWORD_MAX + 1];
};

/* One prepare under way. The credential is kept only to fill the
 * helper's pipe and redact what the helper reports, and is wiped and
 * unmapped when the helper ends. */
struct workspace_job {
	uint64_t serial, id; /* who asked, and the request to answer */
	char *dir, *repo;
	struct workspace_cred *cred; /* NULL: none */
	pid_t pid;
	int fd;
	struct event *ev;
	char line[WSREPORT_LINE_MAX + 1];
	size_t linelen;
	enum workspace_end end;
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
	struct workspace_job *next;
};

static struct event_base *workspace_base;
static const struct config *workspace_cfg;
static struct workspace_job *workspace_jobs;

void
workspace_init(struct event_base *base, const struct config *cfg)
{
	workspace_base = base;
	workspace_cfg = cfg;
}

/* A locked, undumpable mapping for one credential; NULL if there is no
 * memory for it. */
static struct workspace_cred *
workspace_cred_new(void)
{
	struct workspace_cred *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return NULL;
	/* The system call itself: the sanitizers' mlock() does nothing. */
	if (syscall(SYS_mlock, c, sizeof *c) != 0)
		log_warn("cannot lock a credential's memory (%s): it may be "
		         "swapped out",
		    strerror(errno));
	madvise(c, sizeof *c, MADV_DONTDUMP);
	madvise(c, sizeof *c, MADV_WIPEONFORK);
	return c;
}

static void
workspace_wipe_cred(struct workspace_job *j)
{
	if (j->cred == NULL)
		return;
	explicit_bzero(j->cred, sizeof *j->cred);
	munmap(j->cred, sizeof *j->cred);
	j->cred = NULL;
}

static void
workspace_free(struct workspace_job *j)
{
	size_t i;

	workspace_wipe_cred(j);
	if (j->ev != NULL)
		event_free(j->ev);
	if (j->fd >= 0)
		close(j->fd);
	for (i = 0; i < j->nfiles; i++)
		free(j->files[i]);
	free(j->dir);
	free(j->repo);
	free(j->branch);
	free(j->reason);
	free(j);
}

static void
workspace_unlink(struct workspace_job *j)
{
	struct workspace_job **pp;

	for (pp = &workspace_jobs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			return;
		}
}

/* Collects redact_feed's output into a string. */
struct workspace_buf {
	char *p;
	size_t len, cap;
};

static void
workspace_buf_out(void *arg, const void *data, size_t len)
{
	struct workspace_buf *b = arg;

	if (b->len + len + 1 > b->cap) {
		b->cap = (b->len + len + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
}

/* s[0..n) with the credential's parts redacted; the caller frees it. */
static char *
workspace_redact(const struct workspace_job *j, const char *s, size_t n)
{
	struct redact_secret v[2];
	struct redact_set set = {v, 0, 0};
	struct workspace_buf b = {xstrdup(""), 0, 1};
	struct redact *r = redact_new();

	if (j->cred != NULL) {
		v[set.n++] = (struct redact_secret){"credential",
		    (const uint8_t *)j->cred->password,
		    strlen(j->cred->password)};
		v[set.n++] = (struct redact_secret){"credential",
		    (const uint8_t *)j->cred->username,
		    strlen(j->cred->username)};
		for (size_t i = 0; i < set.n; i++)
			if (v[i].len >= REDACT_MIN && v[i].len > set.maxlen)
				set.maxlen = v[i].len;
	}
	redact_feed(r, &set, s, n, workspace_buf_out, &b);
	redact_flush(r, &set, workspace_buf_out, &b);
	redact_free(r);
	return b.p;
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

static void
workspace_kill(struct workspace_job *j)
{
	if (j->pid > 0)
		kill(-j->pid, SIGKILL);
}

/* The helper said something it never says (after its answer, or not in
 * the format): nothing more it says is believed. */
static void
workspace_broken(struct workspace_job *j, size_t len)
{
	if (j->end != WORKSPACE_BROKEN)
		log_warn("workspace %s: berth-workspace said something "
		         "malformed (%zu bytes)",
		    j->dir, len);
	j->end = WORKSPACE_BROKEN;
	workspace_kill(j);
}

/* One report line of the helper. */
static void
workspace_report(struct workspace_job *j, const char *line, size_t len)
{
	struct wsreport r;

	if (j->end != WORKSPACE_RUNNING || wsreport_parse(line, len, &r) < 0) {
		workspace_broken(j, len);
		return;
	}
	switch (r.kind) {
	case WSREPORT_PROGRESS: workspace_emit_progress(j, &r); break;
	case WSREPORT_DIRTY:
		if (j->nfiles < WORKSPACE_FILES_MAX)
			j->files[j->nfiles++] = xstrndup(r.text, r.textlen);
		break;
	case WSREPORT_CONFLICT:
		j->end = WORKSPACE_CONFLICT;
		j->conflict = r.conflict;
		j->dirty = r.count;
		break;
	case WSREPORT_FAILED:
		j->end = WORKSPACE_FAILED;
		j->reason = workspace_redact(j, r.text, r.textlen);
		break;
	case WSREPORT_DONE:
		j->end = WORKSPACE_DONE;
		memcpy(j->commit, r.commit, sizeof j->commit);
		j->cloned = r.cloned;
		free(j->branch);
		j->branch = xstrndup(r.text, r.textlen);
		break;
	}
}

/* Reads what the helper wrote; false once its pipe ended. */
static bool
workspace_read(struct workspace_job *j)
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
			workspace_report(j, j->line, (size_t)(nl - j->line));
			j->linelen -= (size_t)(nl + 1 - j->line);
			memmove(j->line, nl + 1, j->linelen);
		}
		if (j->linelen == sizeof j->line - 1) {
			workspace_broken(j, j->linelen);
			j->linelen = 0;
		}
	}
}

static void
workspace_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct workspace_job *j = arg;

	(void)fd;
	(void)what;
	if (!workspace_read(j)) {
		event_del(j->ev);
		close(j->fd);
		j->fd = -1;
	}
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
workspace_finish(struct workspace_job *j, int status)
{
	struct server_conn *c = server_conn_find(j->serial);
	char why[128];

	if (j->end == WORKSPACE_DONE && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0) {
		workspace_done(j, c);
		return;
	}
	if (j->end == WORKSPACE_FAILED) {
		workspace_emit_failed(j, j->reason);
		if (c != NULL)
			server_reply_error_path(c, j->id, PROTO_E_GIT_FAILED,
			    j->dir, "%s", j->reason);
		return;
	}
	if (j->end == WORKSPACE_CONFLICT) {
		workspace_emit_failed(j,
		    j->conflict == WSREPORT_CONFLICT_DIRTY
		        ? "uncommitted changes"
		        : "not a clone of this repository");
		if (c != NULL)
			workspace_reply_conflict(c, j);
		return;
	}
	if (WIFSIGNALED(status))
		snprintf(why, sizeof why,
		    "berth-workspace was killed by signal %d",
		    WTERMSIG(status));
	else
		snprintf(why, sizeof why,
		    "berth-workspace ended without an answer (code %d)",
		    WEXITSTATUS(status));
	workspace_emit_failed(j, why);
	if (c != NULL)
		server_reply_error_path(c, j->id, PROTO_E_INTERNAL, j->dir,
		    "%s",
		    j->end == WORKSPACE_BROKEN
		        ? "berth-workspace's report was malformed"
		        : why);
}

static void
workspace_exit_cb(pid_t pid, int status, void *arg)
{
	struct workspace_job *j = arg;

	(void)pid;
	j->pid = 0;
	/* Whatever it wrote is in the pipe by now. */
	if (j->fd >= 0)
		workspace_read(j);
	if (j->linelen > 0 && j->end == WORKSPACE_RUNNING)
		j->end = WORKSPACE_BROKEN;
	workspace_wipe_cred(j);
	workspace_finish(j, status);
	workspace_unlink(j);
	workspace_free(j);
}

/* Whether s is a branch name berth passes to git: no option, no
 * revision syntax, nothing git's check-ref-format refuses. */
static bool
workspace_branch_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > WSREPORT_BRANCH_MAX || s[0] == '-' || s[0] == '/' ||
	    s[n - 1] == '/' || s[n - 1] == '.' || strstr(s, "..") != NULL ||
	    strstr(s, "//") != NULL || strstr(s, "@{") != NULL ||
	    (n >= 5 && strcmp(s + n - 5, ".lock") == 0))
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= 'A' && s[i] <= 'Z') ||
		        (s[i] >= '0' && s[i] <= '9') ||
		        strchr("-_./+", s[i]) != NULL))
			return false;
	return true;
}

/* Wipes a request's string values in place: the credential's. */
static void
workspace_wipe_object(const msgpack_object *o)
{
	uint32_t i;

	if (o == NULL || o->type != MSGPACK_OBJECT_MAP)
		return;
	for (i = 0; i < o->via.map.size; i++)
		if (o->via.map.ptr[i].val.type == MSGPACK_OBJECT_STR)
			explicit_bzero(
			    (void *)o->via.map.ptr[i].val.via.str.ptr,
			    o->via.map.ptr[i].val.via.str.size);
}

/* A credential part: 1 to max bytes, no NUL or line end (the pipe's
 * format is a line each). */
static bool
workspace_cred_part(const msgpack_object *v, char *out, size_t max)
{
	if (v->type != MSGPACK_OBJECT_STR || v->via.str.size == 0 ||
	    v->via.str.size > max ||
	    memchr(v->via.str.ptr, '\0', v->via.str.size) != NULL ||
	    memchr(v->via.str.ptr, '\n', v->via.str.size) != NULL ||
	    memchr(v->via.str.ptr, '\r', v->via.str.size) != NULL)
		return false;
	memcpy(out, v->via.str.ptr, v->via.str.size);
	out[v->via.str.size] = '\0';
	return true;
}

/* Reads credential {username?, password} into j; NULL or why not (a
 * message that quotes nothing of it). */
static const char *
workspace_cred(struct workspace_job *j, const msgpack_object *o)
{
	const msgpack_object *u, *p;
	uint32_t i;

	if (o == NULL)
		return NULL;
	if (o->type != MSGPACK_OBJECT_MAP)
		return "credential must be a map {username?, password}";
	for (i = 0; i < o->via.map.size; i++) {
		const msgpack_object *k = &o->via.map.ptr[i].key;
		if (k->type != MSGPACK_OBJECT_STR ||
		    !((k->via.str.size == 8 &&
		          memcmp(k->via.str.ptr, "username", 8) == 0) ||
		        (k->via.str.size == 8 &&
		            memcmp(k->via.str.ptr, "password", 8) == 0)))
			return "credential takes only username and password";
	}
	u = proto_map_get(o, "username");
	p = proto_map_get(o, "password");
	if ((j->cred = workspace_cred_new()) == NULL)
		return "no memory for the credential";
	if (p == NULL ||
	    !workspace_cred_part(p, j->cred->password, WORKSPACE_PASSWORD_MAX))
		return "credential's password must be 1 to 1024 bytes without "
		       "NUL or line ends";
	if (u != NULL &&
	    !workspace_cred_part(u, j->cred->username, WORKSPACE_USERNAME_MAX))
		return "credential's username must be 1 to 256 bytes without "
		       "NUL or line ends";
	if (u == NULL)
		snprintf(j->cred->username, sizeof j->cred->username, "git");
	return NULL;
}

/* Reads and checks the request into j: true, or false once the error is
 * answered. */
static bool
workspace_parse(struct workspace_job *j, struct server_conn *c,
    const struct proto_msg *m, const struct config_runtime **rt)
{
	char name[CONFIG_MAX_NAME + 1] = "", branch[WSREPORT_BRANCH_MAX + 1];
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
	if (hb < 0 || (hb > 0 && !workspace_branch_ok(branch))) {
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
	if ((why = workspace_cred(j, proto_map_get(m->args, "credential"))) !=
	    NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", why);
		return false;
	}
	j->repo = xstrndup(repo->via.str.ptr, repo->via.str.size);
	j->branch = hb > 0 ? xstrdup(branch) : NULL;
	return true;
}

/* git kept from the system's and the user's own config files: berth's
 * steps are berth's (the runtime's env may still name others). */
static char *const workspace_git_env[] = {
    "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", NULL};

/* berth-workspace's argv, for launch_user (which takes it). */
static char **
workspace_argv(const struct workspace_job *j)
{
	char **argv = xcalloc(10, sizeof *argv);
	size_t n = 0;

	argv[n++] = child_berth_program("berth-workspace");
	argv[n++] = xstrdup("--repo");
	argv[n++] = xstrdup(j->repo);
	argv[n++] = xstrdup("--dir");
	argv[n++] = xstrdup(j->dir);
	if (j->branch != NULL) {
		argv[n++] = xstrdup("--branch");
		argv[n++] = xstrdup(j->branch);
	}
	if (j->cred != NULL) {
		argv[n++] = xstrdup("--credential-fd");
		argv[n++] = xasprintf("%d", WORKSPACE_CRED_FD);
	}
	return argv;
}

/* The credential on a pipe, filled and closed: its read end, or -1.
 * Written from its locked mapping, with no copy on the way. */
static int
workspace_cred_pipe(const struct workspace_job *j)
{
	struct iovec iov[4] = {{j->cred->username, strlen(j->cred->username)},
	    {"\n", 1}, {j->cred->password, strlen(j->cred->password)},
	    {"\n", 1}};
	size_t n = iov[0].iov_len + iov[2].iov_len + 2;
	int p[2];
	bool ok;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	/* A pipe holds far more than a credential: one write, whole. */
	ok = writev(p[1], iov, 4) == (ssize_t)n;
	close(p[1]);
	if (!ok) {
		close(p[0]);
		return -1;
	}
	return p[0];
}

/* Starts berth-workspace as the runtime's user (its groups, a clean
 * environment plus the runtime's env, confined). NULL, or why not. */
static const char *
workspace_spawn(
    struct workspace_job *j, const struct config_runtime *rt, char **cause)
{
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	char *const *const extra[] = {workspace_git_env, rt->env.v};
	struct secrets_grant none = {0};
	struct launch_user_req req = {.argv = workspace_argv(j),
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
	if (j->cred != NULL && (cred = workspace_cred_pipe(j)) < 0) {
		close(out[0]);
		close(out[1]);
		launch_free(&l);
		return "cannot make a pipe";
	}
	launch_spec(&l, &spec);
	spec.stdout_fd = out[1];
	spec.extra_fd = cred;
	spec.extra_fd_at = WORKSPACE_CRED_FD;
	j->pid = child_spawn(&spec, workspace_exit_cb, j, cause);
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
	j->ev = event_new(
	    workspace_base, j->fd, EV_READ | EV_PERSIST, workspace_read_cb, j);
	event_add(j->ev, NULL);
	return NULL;
}

static bool
workspace_busy(struct server_conn *c, const struct proto_msg *m,
    const struct workspace_job *j)
{
	const struct workspace_job *o;
	size_t n = 0;

	for (o = workspace_jobs; o != NULL; o = o->next, n++)
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

/* Spawns j's helper; a failure is answered, and j goes. */
static void
workspace_begin(struct workspace_job *j)
{
	struct server_conn *c = server_conn_find(j->serial);
	const char *why;
	char *cause = NULL;

	if ((why = workspace_spawn(j, j->rt, &cause)) == NULL)
		return;
	log_warn("workspace %s: %s%s%s", j->dir, why, cause != NULL ? ": " : "",
	    cause != NULL ? cause : "");
	if (c != NULL)
		server_reply_error_path(c, j->id, PROTO_E_INTERNAL, j->dir,
		    "%s%s%s", why, cause != NULL ? ": " : "",
		    cause != NULL ? cause : "");
	free(cause);
	workspace_unlink(j);
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

	j->fd = -1;
	ok = workspace_parse(j, c, m, &rt);
	workspace_wipe_object(proto_map_get(m->args, "credential"));
	if (!ok || workspace_busy(c, m, j)) {
		workspace_free(j);
		return;
	}
	j->serial = c->serial;
	j->id = m->id;
	j->started = clock_mono_ms();
	j->rt = rt;
	j->next = workspace_jobs;
	workspace_jobs = j;
	if (!workspace_bound(j))
		workspace_begin(j);
}

void
workspace_shutdown(void)
{
	struct workspace_job *j;

	while ((j = workspace_jobs) != NULL) {
		workspace_jobs = j->next;
		if (j->pid > 0) {
			child_forget(j->pid);
			workspace_kill(j);
		}
		workspace_free(j);
	}
}
