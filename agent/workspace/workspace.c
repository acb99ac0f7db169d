/* berth-workspace: git for berthd as the runtime's user, reporting to
 * berthd on stdout in wsreport.h's line format. berthd parses no network
 * bytes: git does, under this program, and berthd reads only these lines.
 *
 *	berth-workspace --repo URL --dir DIR [--branch B] [--credential-fd N]
 *
 * prepares one workspace (workspace.prepare): clones an https repository
 * into a directory, or fetches and checks out a branch in an existing
 * clone.
 *
 *	berth-workspace deliver ...
 *
 * commits a workspace's files on a new branch and pushes it
 * (task.deliver; ws_deliver.h).
 *
 * The credential ("USERNAME\nPASSWORD\n") comes on fd N, a pipe berthd
 * filled and closed. Run by git with BERTH_CRED_FD set, it is git's
 * credential helper instead (ws_cred.h). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ws_cred.h"
#include "ws_deliver.h"
#include "ws_git.h"
#include "ws_progress.h"
#include "ws_secret.h"

#define WS_DIRTY_MAX 100
#define WS_PATH_MAX 4096

struct ws {
	const char *repo, *dir, *branch;
	struct ws_secret cred;
	struct ws_git git;
};

static void
ws_failed(const struct ws *w, const char *reason)
{
	ws_secret_failed(&w->cred, reason);
}

static void
ws_progress_line(void *arg, const char *line, size_t len)
{
	struct ws_progress p;

	(void)arg;
	if (ws_progress_parse(line, len, &p))
		printf("progress %s %llu %llu %llu\n", p.phase,
		    (unsigned long long)p.objects, (unsigned long long)p.total,
		    (unsigned long long)p.bytes);
	fflush(stdout);
}

/* Runs a local git step (no network, no credential, no progress). */
static int
ws_local(const struct ws *w, const char *const *args, struct ws_git_out *o)
{
	struct ws_git g = {.self = w->git.self};

	return ws_git_run(&g, w->dir, args, o);
}

/* Answers done with HEAD's commit and branch. */
static int
ws_done(const struct ws *w, bool cloned)
{
	const char *rev[] = {"rev-parse", "--verify", "HEAD", NULL};
	const char *sym[] = {"symbolic-ref", "--short", "-q", "HEAD", NULL};
	struct ws_git_out c, b;
	int rc = 1;

	if (ws_local(w, rev, &c) != 0) {
		ws_failed(w, c.reason);
		ws_git_out_free(&c);
		return 1;
	}
	if (ws_local(w, sym, &b) != 0)
		snprintf(b.out, WS_GIT_OUT_MAX, "HEAD");
	if (strlen(ws_git_out_line(&c)) == 40 &&
	    strchr(ws_git_out_line(&b), ' ') == NULL && b.out[0] != '\0' &&
	    strlen(b.out) <= 255) {
		printf("done %s %d %s\n", c.out, cloned ? 1 : 0, b.out);
		rc = 0;
	} else
		ws_failed(w, "git gave no commit or branch");
	ws_git_out_free(&c);
	ws_git_out_free(&b);
	return rc;
}

static int
ws_clone(struct ws *w)
{
	const char *args[] = {"clone", "--progress", "--branch", w->branch,
	    "--", w->repo, w->dir, NULL};
	const char *nobranch[] = {
	    "clone", "--progress", "--", w->repo, w->dir, NULL};
	struct ws_git_out o;
	int r;

	r = ws_git_run(&w->git, NULL, w->branch != NULL ? args : nobranch, &o);
	w->git.cred = NULL;
	if (r != 0) {
		ws_failed(w, o.reason);
		ws_git_out_free(&o);
		return 1;
	}
	ws_git_out_free(&o);
	return ws_done(w, true);
}

/* Reports the changes of a dirty workspace (git status -z: "XY PATH",
 * a rename's old path after it). Returns how many there are. */
static size_t
ws_dirty(const struct ws *w, const struct ws_git_out *o)
{
	char t[WS_PATH_MAX + 1];
	const char *p = o->out, *end = o->out + o->outlen;
	size_t n = 0, len;
	bool rename;

	while (p + 3 < end) {
		rename = p[0] == 'R' || p[0] == 'C';
		len = strnlen(p + 3, (size_t)(end - p - 3));
		if (n < WS_DIRTY_MAX &&
		    ws_secret_tame(&w->cred, p + 3, len, t, WS_PATH_MAX) > 0)
			printf("dirty %s\n", t);
		n++;
		p += 3 + len + 1;
		if (rename && p < end)
			p += strnlen(p, (size_t)(end - p)) + 1;
	}
	return n;
}

/* The branch to check out: the request's, else the remote's HEAD as
 * the clone recorded it, else the current one. */
static char *
ws_branch(const struct ws *w)
{
	const char *rhead[] = {
	    "symbolic-ref", "--short", "-q", "refs/remotes/origin/HEAD", NULL};
	struct ws_git_out o;
	char *b = NULL;

	if (w->branch != NULL)
		return strdup(w->branch);
	if (ws_local(w, rhead, &o) == 0 &&
	    strncmp(ws_git_out_line(&o), "origin/", 7) == 0)
		b = strdup(o.out + 7);
	ws_git_out_free(&o);
	return b;
}

/* Whether the workspace's config makes git talk to another URL than the
 * requested one (url.<base>.insteadOf, remote.<url>.url), reported: no
 * fetch then. The credential helper refuses another host or path anyway;
 * this says so before anything goes out. */
static bool
ws_rewritten(const struct ws *w)
{
	const char *geturl[] = {"ls-remote", "--get-url", w->repo, NULL};
	struct ws_git_out o;
	bool other;

	other = ws_local(w, geturl, &o) != 0 ||
	    strcmp(ws_git_out_line(&o), w->repo) != 0;
	ws_git_out_free(&o);
	if (other)
		ws_failed(w,
		    "the workspace's git config sends the repository's "
		    "URL elsewhere (url.<base>.insteadOf or "
		    "remote.<url>.url): nothing was fetched");
	return other;
}

static int
ws_update(struct ws *w)
{
	const char *url[] = {"config", "--get", "remote.origin.url", NULL};
	const char *status[] = {
	    "status", "--porcelain=v1", "-z", "--untracked-files=normal", NULL};
	/* The requested URL, not "origin": no remote.origin.* of the
	 * workspace's config applies. */
	const char *fetch[] = {"fetch", "--progress", "--prune",
	    "--no-recurse-submodules", w->repo,
	    "+refs/heads/*:refs/remotes/origin/*", NULL};
	struct ws_git_out o;
	char *branch, ff[300];
	size_t n;
	int r;

	if (ws_local(w, url, &o) != 0 ||
	    strcmp(ws_git_out_line(&o), w->repo) != 0) {
		printf("conflict origin\n");
		ws_git_out_free(&o);
		return 1;
	}
	ws_git_out_free(&o);
	if (ws_rewritten(w))
		return 1;
	if (ws_local(w, status, &o) != 0) {
		ws_failed(w, o.reason);
		ws_git_out_free(&o);
		return 1;
	}
	n = ws_dirty(w, &o);
	ws_git_out_free(&o);
	if (n > 0) {
		printf("conflict dirty %zu\n", n);
		return 1;
	}
	r = ws_git_run(&w->git, w->dir, fetch, &o);
	w->git.cred = NULL;
	if (r != 0) {
		ws_failed(w, o.reason);
		ws_git_out_free(&o);
		return 1;
	}
	ws_git_out_free(&o);
	if ((branch = ws_branch(w)) != NULL) {
		const char *co[] = {"switch", "-q", branch, NULL};
		const char *merge[] = {"merge", "--ff-only", "-q", ff, NULL};
		snprintf(ff, sizeof ff, "refs/remotes/origin/%s", branch);
		r = ws_local(w, co, &o);
		if (r == 0) {
			ws_git_out_free(&o);
			r = ws_local(w, merge, &o);
		}
		free(branch);
		if (r != 0) {
			ws_failed(w, o.reason);
			ws_git_out_free(&o);
			return 1;
		}
		ws_git_out_free(&o);
	}
	return ws_done(w, false);
}

/* Reports that dir cannot be looked at, and why. */
static int
ws_unreadable(const struct ws *w)
{
	char why[WS_PATH_MAX + 128];

	snprintf(
	    why, sizeof why, "cannot read %s: %s", w->dir, strerror(errno));
	ws_failed(w, why);
	return -1;
}

/* What is at dir (a symlink to a directory is the directory: the user may
 * follow it): 0 nothing or an empty directory, 1 a clone, 2 something
 * else; -1 if it cannot be told (reported). */
static int
ws_what(const struct ws *w)
{
	char git[WS_PATH_MAX + 8];
	struct dirent *d;
	struct stat st;
	DIR *dp;
	int n = 0;

	if (stat(w->dir, &st) != 0)
		return errno == ENOENT ? 0 : ws_unreadable(w);
	if (!S_ISDIR(st.st_mode))
		return 2;
	snprintf(git, sizeof git, "%s/.git", w->dir);
	if (lstat(git, &st) == 0 && S_ISDIR(st.st_mode))
		return 1;
	if ((dp = opendir(w->dir)) == NULL)
		return ws_unreadable(w);
	while ((d = readdir(dp)) != NULL)
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
			n++;
	closedir(dp);
	return n == 0 ? 0 : 2;
}

/* Reads the credential from fd, which berthd closed after writing. */
static int
ws_read_cred(struct ws *w, int fd)
{
	if (ws_secret_read(&w->cred, fd) != 0)
		return -1;
	w->git.cred = w->cred.buf;
	w->git.credlen = w->cred.len;
	return 0;
}

static int
ws_usage(void)
{
	fprintf(stderr,
	    "usage: berth-workspace --repo URL --dir DIR "
	    "[--branch B] [--credential-fd N]\n"
	    "       berth-workspace deliver --dir DIR --branch B ...\n");
	return 2;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {{"repo", 1, NULL, 'r'},
	    {"dir", 1, NULL, 'd'}, {"branch", 1, NULL, 'b'},
	    {"credential-fd", 1, NULL, 'c'}, {NULL, 0, NULL, 0}};
	static struct ws w;
	int c, credfd = -1, rc;

	if (ws_cred_wanted(argc, argv))
		return ws_cred_main(argv[1]);
	if (argc > 1 && strcmp(argv[1], "deliver") == 0)
		return ws_deliver_main(argc - 1, argv + 1, argv[0]);
	/* The credential is in this memory: out of the reach of the user's
	 * other processes (ptrace, /proc/PID/mem) and of any core file. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	mlock(&w, sizeof w);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
		switch (c) {
		case 'r': w.repo = optarg; break;
		case 'd': w.dir = optarg; break;
		case 'b': w.branch = optarg; break;
		case 'c': credfd = atoi(optarg); break;
		default: return ws_usage();
		}
	if (w.repo == NULL || w.dir == NULL || w.dir[0] != '/')
		return ws_usage();
	w.git.self = argv[0];
	w.git.repo = w.repo;
	w.git.line = ws_progress_line;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (credfd >= 0 && ws_read_cred(&w, credfd) != 0) {
		ws_failed(&w, "the credential did not arrive whole");
		return 1;
	}
	switch (ws_what(&w)) {
	case 0: rc = ws_clone(&w); break;
	case 1: rc = ws_update(&w); break;
	case 2:
		printf("conflict notrepo\n");
		rc = 1;
		break;
	default: rc = 1; break;
	}
	ws_secret_wipe(&w.cred);
	return rc;
}
