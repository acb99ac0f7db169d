/* ws_deliver: berth-workspace deliver (see ws_deliver.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ws_deliver.h"
#include "ws_git.h"
#include "ws_secret.h"
#include "wsbranch.h"
#include "wsreport.h"
#include "xmalloc.h"

#define WSD_MESSAGE_MAX 65536
#define WSD_AUTHOR_MAX 256
#define WSD_PATH_MAX 4096
/* The diff is a file of berthd's: git may make it no larger. */
#define WSD_DIFF_MAX (1ull << 30)
/* git's --stat, at most this much of it, and of so many files. */
#define WSD_DIFFSTAT_MAX (64u << 10)
#define WSD_DIFFSTAT_FILES "600"
#define WSD_ZERO "0000000000000000000000000000000000000000"

/* Which repository a step is git's in. */
enum wsd_repo {
	WSD_NONE,      /* none: git init */
	WSD_WORKSPACE, /* the clone's (HEAD, its branches) */
	WSD_OWN,       /* berth's: the clone's files and objects, its index */
};

/* One delivery: the request (argv's strings, borrowed), the credential
 * (wiped when the run ends), the paths of the two repositories and what
 * the steps made. */
struct wsd {
	const char *self, *dir, *branch, *message, *name, *email, *repo;
	int difffd;
	struct ws_secret cred;
	char wsgit[WSD_PATH_MAX], objects[WSD_PATH_MAX];
	char tmp[WSD_PATH_MAX], gitdir[WSD_PATH_MAX + 8];
	char index[WSD_PATH_MAX + 8];
	char ref[WSBRANCH_MAX + 16];
	char base[41], tree[41], commit[41];
	bool pushed;
};

/* ---- the environment ---- */

/* What of the runtime's environment git may see: its CAs. Every other
 * GIT_* variable (GIT_DIR, GIT_CONFIG_*, GIT_EXTERNAL_DIFF, GIT_EXEC_PATH,
 * GIT_ALTERNATE_OBJECT_DIRECTORIES...) goes: the steps are berth's. */
static bool
wsd_env_kept(const char *e, size_t n)
{
	return (n == 14 && memcmp(e, "GIT_SSL_CAINFO", 14) == 0) ||
	    (n == 14 && memcmp(e, "GIT_SSL_CAPATH", 14) == 0);
}

static void
wsd_env_clean(const struct wsd *d)
{
	extern char **environ;
	const char *e, *eq;
	char *name;
	size_t i = 0, n;

	while ((e = environ[i]) != NULL) {
		eq = strchr(e, '=');
		n = eq != NULL ? (size_t)(eq - e) : strlen(e);
		if (n > 4 && memcmp(e, "GIT_", 4) == 0 && !wsd_env_kept(e, n)) {
			/* environ closes up: the same slot holds the next. */
			name = xstrndup(e, n);
			unsetenv(name);
			free(name);
			continue;
		}
		i++;
	}
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	setenv("GIT_NO_REPLACE_OBJECTS", "1", 1);
	/* git's words in the reasons and the counts berth reads. */
	setenv("LC_ALL", "C", 1);
	setenv("GIT_AUTHOR_NAME", d->name, 1);
	setenv("GIT_AUTHOR_EMAIL", d->email, 1);
	setenv("GIT_COMMITTER_NAME", d->name, 1);
	setenv("GIT_COMMITTER_EMAIL", d->email, 1);
}

/* Points git at the repository of the next step. */
static void
wsd_env_repo(const struct wsd *d, enum wsd_repo where)
{
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	unsetenv("GIT_INDEX_FILE");
	unsetenv("GIT_OBJECT_DIRECTORY");
	if (where == WSD_WORKSPACE)
		setenv("GIT_DIR", d->wsgit, 1);
	else if (where == WSD_OWN) {
		setenv("GIT_DIR", d->gitdir, 1);
		setenv("GIT_WORK_TREE", d->dir, 1);
		setenv("GIT_INDEX_FILE", d->index, 1);
		setenv("GIT_OBJECT_DIRECTORY", d->objects, 1);
	}
}

/* ---- git ---- */

/* Runs one git step in where's repository. With net, it is the push: to
 * the requested repository, with the credential. With outfd, git's
 * stdout goes there (bounded to WSD_DIFF_MAX). */
static int
wsd_git(const struct wsd *d, enum wsd_repo where, const char *const *args,
    struct ws_git_out *o, bool net, int outfd)
{
	/* The clone's files are read under berth's own rules only: no
	 * excludes or attributes file of the user's home applies. */
	const char *argv[WS_GIT_ARGS_MAX + 1] = {"-c",
	    "core.excludesFile=/dev/null", "-c",
	    "core.attributesFile=/dev/null"};
	struct ws_git g = {.self = d->self, .outfd = outfd};
	size_t n = 4, i;

	for (i = 0; args[i] != NULL && n < WS_GIT_ARGS_MAX; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (net) {
		g.repo = d->repo;
		if (d->cred.len > 0) {
			g.cred = d->cred.buf;
			g.credlen = d->cred.len;
		}
	}
	if (outfd > 0)
		g.fsize = WSD_DIFF_MAX;
	wsd_env_repo(d, where);
	return ws_git_run(&g, where == WSD_OWN ? d->dir : NULL, argv, o);
}

static bool
wsd_is_id(const char *s)
{
	return strlen(s) == 40 && strspn(s, "0123456789abcdef") == 40;
}

/* Runs a step whose answer is one object's id, into id. 0; 1 if git
 * said no with nothing more (rev-parse -q: no such object); -1 failed
 * (reported). */
static int
wsd_git_id(
    struct wsd *d, enum wsd_repo where, const char *const *args, char *id)
{
	struct ws_git_out o;
	int r = wsd_git(d, where, args, &o, false, 0);

	if (r == 0 && wsd_is_id(ws_git_out_line(&o))) {
		memcpy(id, o.out, 41);
		ws_git_out_free(&o);
		return 0;
	}
	if (r == 0)
		ws_secret_failed(&d->cred, "git gave no object id");
	else if (o.silent && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 1)
		r = 1;
	else
		ws_secret_failed(&d->cred, o.reason);
	ws_git_out_free(&o);
	return r == 0 ? -1 : r;
}

/* Runs a step that answers with its exit status only: 0, or -1 failed
 * (reported). */
static int
wsd_git_do(struct wsd *d, enum wsd_repo where, const char *const *args)
{
	struct ws_git_out o;
	int r = wsd_git(d, where, args, &o, false, 0);

	if (r != 0)
		ws_secret_failed(&d->cred, o.reason);
	ws_git_out_free(&o);
	return r;
}

/* ---- the steps ---- */

/* The clone's HEAD commit: 0, or -1 reported (a conflict if HEAD is no
 * commit). hooks and fsmonitor are off in every step (ws_git). */
static int
wsd_base(struct wsd *d)
{
	const char *args[] = {
	    "rev-parse", "-q", "--verify", "HEAD^{commit}", NULL};
	struct stat st;
	int r;

	if (lstat(d->wsgit, &st) != 0 || !S_ISDIR(st.st_mode)) {
		printf("conflict notrepo\n");
		return -1;
	}
	if ((r = wsd_git_id(d, WSD_WORKSPACE, args, d->base)) == 1)
		printf("conflict nohead\n");
	return r == 0 ? 0 : -1;
}

/* Whether the branch exists in the clone: 1, 0, or -1 reported. */
static int
wsd_exists(struct wsd *d)
{
	const char *args[] = {"show-ref", "--verify", "-q", d->ref, NULL};
	struct ws_git_out o;
	int r = wsd_git(d, WSD_WORKSPACE, args, &o, false, 0);

	if (r != 0 &&
	    !(o.silent && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 1)) {
		ws_secret_failed(&d->cred, o.reason);
		ws_git_out_free(&o);
		return -1;
	}
	ws_git_out_free(&o);
	return r == 0 ? 1 : 0;
}

/* berth's own git directory, made fresh in a temporary directory with
 * no template: no config but git's defaults, no hook, no info/exclude,
 * no info/attributes. */
static int
wsd_own(struct wsd *d)
{
	const char *tmpdir = getenv("TMPDIR");
	char why[WSD_PATH_MAX + 128];
	const char *init[] = {
	    "init", "-q", "--bare", "--template=", d->gitdir, NULL};

	if (tmpdir == NULL || tmpdir[0] != '/' ||
	    strlen(tmpdir) > WSD_PATH_MAX - 64)
		tmpdir = "/tmp";
	snprintf(d->tmp, sizeof d->tmp, "%s/berth-deliver.XXXXXX", tmpdir);
	if (mkdtemp(d->tmp) == NULL) {
		snprintf(why, sizeof why, "cannot make a directory in %s: %s",
		    tmpdir, strerror(errno));
		d->tmp[0] = '\0';
		ws_secret_failed(&d->cred, why);
		return -1;
	}
	snprintf(d->gitdir, sizeof d->gitdir, "%s/git", d->tmp);
	snprintf(d->index, sizeof d->index, "%s/index", d->tmp);
	return wsd_git_do(d, WSD_NONE, init);
}

/* The clone's files as a tree: the base's tree read into berth's index
 * (none of the clone's index's flags: no file is assumed unchanged or
 * skipped), every file added as git add takes it (the project's own
 * .gitignore and .gitattributes files in the tree apply; .git is never
 * a file of it), the tree written. 0; 1 when it is the base's (a
 * conflict, reported); -1 failed (reported). */
static int
wsd_tree(struct wsd *d)
{
	const char *read[] = {"read-tree", d->base, NULL};
	const char *add[] = {"add", "-A", NULL};
	const char *write[] = {"write-tree", NULL};
	char spec[64], basetree[41];
	const char *peel[] = {"rev-parse", "--verify", spec, NULL};

	snprintf(spec, sizeof spec, "%s^{tree}", d->base);
	if (wsd_git_do(d, WSD_OWN, read) != 0 ||
	    wsd_git_do(d, WSD_OWN, add) != 0 ||
	    wsd_git_id(d, WSD_OWN, write, d->tree) != 0 ||
	    wsd_git_id(d, WSD_OWN, peel, basetree) != 0)
		return -1;
	if (strcmp(d->tree, basetree) == 0) {
		printf("conflict nochange\n");
		return 1;
	}
	return 0;
}

static int
wsd_commit(struct wsd *d)
{
	const char *args[] = {
	    "commit-tree", d->tree, "-p", d->base, "-m", d->message, NULL};

	return wsd_git_id(d, WSD_OWN, args, d->commit) == 0 ? 0 : -1;
}

/* The count after word in s (" 3 files changed, 10 insertions(+)"): 0
 * where git leaves the part out. */
static unsigned long long
wsd_count(const char *s, const char *word)
{
	const char *w = strstr(s, word), *p;

	if (w == NULL)
		return 0;
	for (p = w; p > s && p[-1] == ' '; p--)
		;
	while (p > s && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return strtoull(p, NULL, 10);
}

/* stat: git diff --shortstat's counts (its words are C's: LC_ALL). */
static int
wsd_stat(struct wsd *d)
{
	const char *args[] = {"diff", "--shortstat", "--find-renames",
	    "--no-ext-diff", "--no-textconv", d->base, d->commit, "--", NULL};
	struct ws_git_out o;

	if (wsd_git(d, WSD_OWN, args, &o, false, 0) != 0) {
		ws_secret_failed(&d->cred, o.reason);
		ws_git_out_free(&o);
		return -1;
	}
	printf("stat %llu %llu %llu\n", wsd_count(o.out, " file"),
	    wsd_count(o.out, " insertion"), wsd_count(o.out, " deletion"));
	ws_git_out_free(&o);
	return 0;
}

/* diffstat: git's --stat, a report line each, at most WSD_DIFFSTAT_MAX
 * bytes of them, cut at a line's end. */
static int
wsd_diffstat(struct wsd *d)
{
	const char *args[] = {"diff", "--stat=80",
	    "--stat-count=" WSD_DIFFSTAT_FILES, "--find-renames", "--no-color",
	    "--no-ext-diff", "--no-textconv", d->base, d->commit, "--", NULL};
	char line[WSREPORT_DIFFSTAT_LINE_MAX + 1];
	struct ws_git_out o;
	const char *p, *nl, *end;
	size_t sent = 0, n;

	if (wsd_git(d, WSD_OWN, args, &o, false, 0) != 0) {
		ws_secret_failed(&d->cred, o.reason);
		ws_git_out_free(&o);
		return -1;
	}
	end = o.out + o.outlen;
	for (p = o.out; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		n = ws_secret_tame(&d->cred, p, (size_t)(nl - p), line,
		    WSREPORT_DIFFSTAT_LINE_MAX);
		if (n == 0)
			continue;
		if (sent + n + 1 > WSD_DIFFSTAT_MAX)
			break;
		printf("diffstat %s\n", line);
		sent += n + 1;
	}
	ws_git_out_free(&o);
	return 0;
}

/* The full diff, one that git apply takes (binary files too), to
 * berthd's file. */
static int
wsd_diff(struct wsd *d)
{
	const char *args[] = {"diff", "--binary", "--full-index",
	    "--find-renames", "--no-color", "--no-ext-diff", "--no-textconv",
	    "--src-prefix=a/", "--dst-prefix=b/", d->base, d->commit, "--",
	    NULL};
	struct ws_git_out o;
	int r = wsd_git(d, WSD_OWN, args, &o, false, d->difffd);

	if (r != 0 && WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGXFSZ)
		ws_secret_failed(&d->cred, "the diff is larger than 1 GiB");
	else if (r != 0)
		ws_secret_failed(&d->cred, o.reason);
	ws_git_out_free(&o);
	return r;
}

/* The branch, created in the clone: never over one that exists (the
 * zero id as its old value). 0, or -1 reported. */
static int
wsd_branch(struct wsd *d)
{
	const char *args[] = {"update-ref", "-m", "berth: task delivered",
	    d->ref, d->commit, WSD_ZERO, NULL};
	struct ws_git_out o;
	int r = wsd_git(d, WSD_WORKSPACE, args, &o, false, 0);

	if (r == 0) {
		ws_git_out_free(&o);
		return 0;
	}
	/* Made meanwhile: the same conflict as one found before. */
	if (strstr(o.reason, "reference already exists") != NULL)
		printf("conflict exists\n");
	else
		ws_secret_failed(&d->cred, o.reason);
	ws_git_out_free(&o);
	return -1;
}

/* Why git push --porcelain says a ref was refused ("!\tSRC:DST\tSUMMARY"),
 * into why; false if it says none. */
static bool
wsd_push_refused(const struct ws_git_out *o, char *why, size_t max)
{
	const char *p = o->out, *end = o->out + o->outlen, *nl, *tab;

	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (nl - p < 2 || p[0] != '!' || p[1] != '\t' ||
		    (tab = memchr(p + 2, '\t', (size_t)(nl - p - 2))) == NULL)
			continue;
		snprintf(why, max, "the repository refused the branch: %.*s",
		    (int)(nl - tab - 1), tab + 1);
		return true;
	}
	return false;
}

/* The push: the commit as a new branch of the requested repository,
 * from berth's own git directory. The lease with no value makes it a
 * creation only: a branch the remote has already, even one the commit
 * would fast-forward, is refused. A push that fails removes the branch
 * it was to publish: the delivery did not happen. */
static int
wsd_push(struct wsd *d)
{
	char lease[WSBRANCH_MAX + 64], spec[WSBRANCH_MAX + 64];
	char why[WS_GIT_REASON_MAX + 64];
	const char *args[] = {"push", "--porcelain", "--no-verify",
	    "--recurse-submodules=no", lease, "--", d->repo, spec, NULL};
	const char *undo[] = {"update-ref", "-d", d->ref, d->commit, NULL};
	struct ws_git_out o;

	snprintf(lease, sizeof lease, "--force-with-lease=%s:", d->ref);
	snprintf(spec, sizeof spec, "%s:%s", d->commit, d->ref);
	if (wsd_git(d, WSD_OWN, args, &o, true, 0) == 0) {
		ws_git_out_free(&o);
		d->pushed = true;
		return 0;
	}
	if (!wsd_push_refused(&o, why, sizeof why))
		snprintf(why, sizeof why, "%s", o.reason);
	ws_git_out_free(&o);
	if (wsd_git_do(d, WSD_WORKSPACE, undo) != 0)
		return -1;
	ws_secret_failed(&d->cred, why);
	return -1;
}

static int
wsd_deliver(struct wsd *d)
{
	int r;

	if (wsd_base(d) != 0)
		return 1;
	if ((r = wsd_exists(d)) != 0) {
		if (r > 0)
			printf("conflict exists\n");
		return 1;
	}
	if (wsd_own(d) != 0 || wsd_tree(d) != 0 || wsd_commit(d) != 0 ||
	    wsd_stat(d) != 0 || wsd_diffstat(d) != 0 || wsd_diff(d) != 0 ||
	    wsd_branch(d) != 0 || (d->repo != NULL && wsd_push(d) != 0))
		return 1;
	printf("delivered %s %s %d\n", d->commit, d->base, d->pushed ? 1 : 0);
	return 0;
}

/* ---- the run ---- */

static int
wsd_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) != 0)
		fprintf(stderr, "berth-workspace: cannot remove %s: %s\n", path,
		    strerror(errno));
	return 0;
}

/* An author's name or e-mail address as git writes it in the commit:
 * 1 to WSD_AUTHOR_MAX bytes, no control byte, '<' or '>'. */
static bool
wsd_author_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > WSD_AUTHOR_MAX)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == '<' ||
		    s[i] == '>')
			return false;
	return true;
}

/* What berthd checked, checked again before any git runs: NULL, or why
 * not. */
static const char *
wsd_args_ok(const struct wsd *d)
{
	size_t n = strlen(d->message);

	if (!wsbranch_ok(d->branch, strlen(d->branch)))
		return "the branch is not a name berth gives git";
	if (n == 0 || n > WSD_MESSAGE_MAX)
		return "the commit message must be 1 to 65536 bytes";
	if (!wsd_author_ok(d->name) || !wsd_author_ok(d->email))
		return "the author's name and e-mail must be 1 to 256 bytes "
		       "without control bytes, < or >";
	if (d->repo != NULL && strncmp(d->repo, "https://", 8) != 0)
		return "the repository to push to must be an https URL";
	if (strlen(d->dir) > WSD_PATH_MAX - 32)
		return "the directory's path is too long";
	return NULL;
}

static int
wsd_usage(void)
{
	fprintf(stderr,
	    "usage: berth-workspace deliver --dir DIR --branch B --message M "
	    "--author-name N --author-email E --diff-fd N "
	    "[--push URL [--credential-fd N]]\n");
	return 2;
}

/* Reads the options into d: 0, or -1 (usage). */
static int
wsd_options(struct wsd *d, int argc, char **argv, int *credfd)
{
	static const struct option opts[] = {{"dir", 1, NULL, 'd'},
	    {"branch", 1, NULL, 'b'}, {"message", 1, NULL, 'm'},
	    {"author-name", 1, NULL, 'n'}, {"author-email", 1, NULL, 'e'},
	    {"diff-fd", 1, NULL, 'f'}, {"push", 1, NULL, 'p'},
	    {"credential-fd", 1, NULL, 'c'}, {NULL, 0, NULL, 0}};
	int c;

	d->difffd = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
		switch (c) {
		case 'd': d->dir = optarg; break;
		case 'b': d->branch = optarg; break;
		case 'm': d->message = optarg; break;
		case 'n': d->name = optarg; break;
		case 'e': d->email = optarg; break;
		case 'f': d->difffd = atoi(optarg); break;
		case 'p': d->repo = optarg; break;
		case 'c': *credfd = atoi(optarg); break;
		default: return -1;
		}
	if (optind != argc || d->dir == NULL || d->dir[0] != '/' ||
	    d->branch == NULL || d->message == NULL || d->name == NULL ||
	    d->email == NULL || d->difffd <= 2 ||
	    (*credfd >= 0 && d->repo == NULL))
		return -1;
	return 0;
}

int
ws_deliver_main(int argc, char **argv, const char *self)
{
	/* The credential is in this memory: out of the reach of the user's
	 * other processes (ptrace, /proc/PID/mem) and of any core file. */
	static struct wsd d;
	const char *why;
	int credfd = -1, rc;

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	mlock(&d, sizeof d);
	d.self = self;
	if (wsd_options(&d, argc, argv, &credfd) != 0)
		return wsd_usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (credfd >= 0 && ws_secret_read(&d.cred, credfd) != 0) {
		ws_secret_failed(
		    &d.cred, "the credential did not arrive whole");
		return 1;
	}
	if ((why = wsd_args_ok(&d)) != NULL) {
		ws_secret_failed(&d.cred, why);
		ws_secret_wipe(&d.cred);
		return 1;
	}
	/* Only git's stdout is to have it, and only for the diff. */
	fcntl(d.difffd, F_SETFD, FD_CLOEXEC);
	snprintf(d.wsgit, sizeof d.wsgit, "%s/.git", d.dir);
	snprintf(d.objects, sizeof d.objects, "%s/.git/objects", d.dir);
	snprintf(d.ref, sizeof d.ref, "refs/heads/%s", d.branch);
	wsd_env_clean(&d);
	rc = wsd_deliver(&d);
	if (d.tmp[0] != '\0')
		nftw(d.tmp, wsd_rm, 16, FTW_DEPTH | FTW_PHYS);
	ws_secret_wipe(&d.cred);
	return rc;
}
