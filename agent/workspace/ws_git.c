/* ws_git: one git command (see ws_git.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ws_cred.h"
#include "ws_git.h"
#include "xmalloc.h"

#define WS_GIT_LINE_MAX WS_GIT_REASON_MAX

/* What berth's own git steps run with, whatever the workspace's config
 * says (the command line is read after every file, so it wins): no
 * credential helper may keep the credential, and git asks berth's for it
 * with the repository's path too; no askpass, transport but https, hook,
 * fsmonitor, submodule or background gc of the workspace runs while the
 * credential's pipe is open; TLS is verified and curl resolves names
 * itself; and a transfer that stalls (under a byte a second for a
 * minute) ends instead of holding the prepare forever. */
static const char *const ws_git_fixed[] = {"-c", "credential.helper=", "-c",
    "credential.useHttpPath=true", "-c", "core.askPass=", "-c",
    "protocol.allow=never", "-c", "protocol.https.allow=always", "-c",
    "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c",
    "fetch.recurseSubmodules=false", "-c", "submodule.recurse=false", "-c",
    "gc.auto=0", "-c", "maintenance.auto=false", "-c", "http.sslVerify=true",
    "-c", "http.followRedirects=initial", "-c", "http.curloptResolve=", "-c",
    "http.lowSpeedLimit=1", "-c", "http.lowSpeedTime=60"};
#define WS_GIT_NFIXED (sizeof ws_git_fixed / sizeof *ws_git_fixed)

/* The values of the repository's own settings, given to git through its
 * environment (--config-env): a URL may hold '=', where -c would cut. */
#define WS_GIT_ENV_TRUE "BERTH_GIT_TRUE"
#define WS_GIT_ENV_EMPTY "BERTH_GIT_EMPTY"
#define WS_GIT_ENV_INITIAL "BERTH_GIT_INITIAL"
#define WS_GIT_ENV_CAINFO "BERTH_GIT_CAINFO"
/* Where Debian's libcurl finds its CAs when nothing names others. */
#define WS_GIT_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
/* At most this many settings for the repository's URL. */
#define WS_GIT_URL_OPTS 8

/* The proxy variable git would take for https, in git's order; NULL:
 * none. */
static const char *
ws_git_proxy_var(void)
{
	static const char *const vars[] = {
	    "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
	size_t i;

	for (i = 0; i < sizeof vars / sizeof *vars; i++)
		if (getenv(vars[i]) != NULL)
			return vars[i];
	return NULL;
}

/* Settings for the repository's URL itself, into opts (each the caller
 * frees): a workspace's http.<url>.* can be no more specific for it, and
 * at equal match the later one, the command line's, wins. The CAs and the
 * proxy are the runtime's env's (GIT_SSL_CAINFO and GIT_SSL_CAPATH win
 * over any file anyway), else the system's and none. Returns how many. */
static size_t
ws_git_url_opts(const char *repo, char **opts)
{
	const char *proxy = ws_git_proxy_var();
	size_t n = 0;

	if (proxy == NULL)
		proxy = WS_GIT_ENV_EMPTY;
	opts[n++] =
	    xasprintf("--config-env=http.%s.sslVerify=" WS_GIT_ENV_TRUE, repo);
	opts[n++] = xasprintf(
	    "--config-env=http.%s.followRedirects=" WS_GIT_ENV_INITIAL, repo);
	opts[n++] = xasprintf(
	    "--config-env=http.%s.curloptResolve=" WS_GIT_ENV_EMPTY, repo);
	opts[n++] = xasprintf("--config-env=http.%s.proxy=%s", repo, proxy);
	opts[n++] = xasprintf("--config-env=remote.%s.proxy=%s", repo, proxy);
	opts[n++] = xasprintf("--config-env=remote.origin.proxy=%s", proxy);
	if (getenv("GIT_SSL_CAINFO") == NULL &&
	    access(WS_GIT_CA_BUNDLE, R_OK) == 0)
		opts[n++] = xasprintf(
		    "--config-env=http.%s.sslCAInfo=" WS_GIT_ENV_CAINFO, repo);
	if (getenv("GIT_SSL_CAPATH") == NULL)
		opts[n++] = xasprintf(
		    "--config-env=http.%s.sslCAPath=" WS_GIT_ENV_EMPTY, repo);
	return n;
}

/* stderr being read: the line so far, and the last line that says why. */
struct ws_git_err {
	const struct ws_git *g;
	struct ws_git_out *out;
	char line[WS_GIT_LINE_MAX];
	size_t len;
	bool refused; /* the reason is the credential helper's refusal */
};

static void
ws_git_err_line(struct ws_git_err *e)
{
	size_t n = e->len, klen = strlen(WS_CRED_REFUSED);

	e->len = 0;
	if (n == 0)
		return;
	/* git's own "could not read Username" follows: the refusal is why. */
	if (!e->refused && n > klen &&
	    memcmp(e->line, WS_CRED_REFUSED, klen) == 0) {
		e->refused = true;
		n -= klen;
		if (n > WS_GIT_REASON_MAX)
			n = WS_GIT_REASON_MAX;
		memcpy(e->out->reason, e->line + klen, n);
		e->out->reason[n] = '\0';
		return;
	}
	if (!e->refused &&
	    ((n > 7 && memcmp(e->line, "fatal: ", 7) == 0) ||
	        (n > 7 && memcmp(e->line, "error: ", 7) == 0))) {
		if (n > WS_GIT_REASON_MAX)
			n = WS_GIT_REASON_MAX;
		memcpy(e->out->reason, e->line, n);
		e->out->reason[n] = '\0';
	}
	if (e->g->line != NULL)
		e->g->line(e->g->arg, e->line, n);
}

static void
ws_git_err_feed(struct ws_git_err *e, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] == '\n' || p[i] == '\r')
			ws_git_err_line(e);
		else if (e->len < sizeof e->line)
			e->line[e->len++] = p[i];
	}
}

static void
ws_git_out_feed(struct ws_git_out *out, const char *p, size_t n)
{
	if (n > WS_GIT_OUT_MAX - out->outlen)
		n = WS_GIT_OUT_MAX - out->outlen;
	memcpy(out->out + out->outlen, p, n);
	out->outlen += n;
	out->out[out->outlen] = '\0';
}

/* The cred pipe for one command: its read end, or -1. */
static int
ws_git_cred_pipe(const struct ws_git *g)
{
	int p[2];

	if (g->cred == NULL)
		return -1;
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	/* A pipe holds far more than a credential: this never blocks. */
	if (write(p[1], g->cred, g->credlen) != (ssize_t)g->credlen) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	close(p[1]);
	return p[0];
}

static void __attribute__((noreturn)) ws_git_child(const struct ws_git *g,
    const char *dir, const char *const *argv, int out, int err, int cred)
{
	struct rlimit fsize = {g->fsize, g->fsize};
	char fdnum[16];
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (null < 0 || dup2(null, 0) < 0 ||
	    dup2(g->outfd > 2 ? g->outfd : out, 1) < 0 || dup2(err, 2) < 0)
		_exit(127);
	if (g->fsize > 0 && setrlimit(RLIMIT_FSIZE, &fsize) != 0)
		_exit(127);
	if (cred >= 0) {
		/* dup2 onto itself would keep close-on-exec: clear it. */
		if (dup2(cred, WS_GIT_CRED_FD) < 0 ||
		    fcntl(WS_GIT_CRED_FD, F_SETFD, 0) < 0)
			_exit(127);
		snprintf(fdnum, sizeof fdnum, "%d", WS_GIT_CRED_FD);
		setenv("BERTH_CRED_FD", fdnum, 1);
		setenv("BERTH_CRED_URL", g->repo, 1);
	} else {
		unsetenv("BERTH_CRED_FD");
		unsetenv("BERTH_CRED_URL");
	}
	setenv(WS_GIT_ENV_TRUE, "true", 1);
	setenv(WS_GIT_ENV_EMPTY, "", 1);
	setenv(WS_GIT_ENV_INITIAL, "initial", 1);
	setenv(WS_GIT_ENV_CAINFO, WS_GIT_CA_BUNDLE, 1);
	unsetenv("GIT_ASKPASS");
	unsetenv("SSH_ASKPASS");
	setenv("GIT_TERMINAL_PROMPT", "0", 1);
	if (dir != NULL && chdir(dir) != 0) {
		dprintf(
		    2, "fatal: cannot enter %s: %s\n", dir, strerror(errno));
		_exit(128);
	}
	execv("/usr/bin/git", (char *const *)argv);
	dprintf(2, "fatal: cannot run git: %s\n", strerror(errno));
	_exit(127);
}

/* Reads stdout and stderr until both end. */
static void
ws_git_pump(struct ws_git_err *e, int out, int err)
{
	struct pollfd pf[2] = {
	    {.fd = out, .events = POLLIN}, {.fd = err, .events = POLLIN}};
	char buf[8192];
	ssize_t n;
	int i;

	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || pf[i].revents == 0)
				continue;
			n = read(pf[i].fd, buf, sizeof buf);
			if (n <= 0) {
				if (n < 0 && errno == EINTR)
					continue;
				close(pf[i].fd);
				pf[i].fd = -1;
			} else if (i == 0)
				ws_git_out_feed(e->out, buf, (size_t)n);
			else
				ws_git_err_feed(e, buf, (size_t)n);
		}
	}
	ws_git_err_line(e);
}

static void
ws_git_reason(struct ws_git_out *out, const char *const *args)
{
	if (out->reason[0] != '\0')
		return;
	out->silent = true;
	if (WIFEXITED(out->status))
		snprintf(out->reason, sizeof out->reason,
		    "git %s exited with code %d", args[0],
		    WEXITSTATUS(out->status));
	else
		snprintf(out->reason, sizeof out->reason,
		    "git %s was killed by signal %d", args[0],
		    WIFSIGNALED(out->status) ? WTERMSIG(out->status) : 0);
}

/* Starts git with argv: its pid, its stdout and stderr's read ends; or
 * -1 with out->reason set. */
static pid_t
ws_git_start(const struct ws_git *g, const char *dir, const char *const *argv,
    int *outfd, int *errfd, struct ws_git_out *out)
{
	int po[2], pe[2], cred;
	pid_t pid;

	cred = ws_git_cred_pipe(g);
	if ((g->cred != NULL && cred < 0) || pipe2(po, O_CLOEXEC) != 0) {
		snprintf(out->reason, sizeof out->reason, "pipe: %s",
		    strerror(errno));
		return -1;
	}
	if (pipe2(pe, O_CLOEXEC) != 0 || (pid = fork()) < 0) {
		snprintf(out->reason, sizeof out->reason, "fork: %s",
		    strerror(errno));
		return -1;
	}
	if (pid == 0)
		ws_git_child(g, dir, argv, po[1], pe[1], cred);
	close(po[1]);
	close(pe[1]);
	if (cred >= 0)
		close(cred);
	*outfd = po[0];
	*errfd = pe[0];
	return pid;
}

int
ws_git_run(const struct ws_git *g, const char *dir, const char *const *args,
    struct ws_git_out *out)
{
	const char
	    *argv[3 + WS_GIT_NFIXED + WS_GIT_URL_OPTS + WS_GIT_ARGS_MAX + 1];
	char helper[4200], *urlopts[WS_GIT_URL_OPTS];
	struct ws_git_err *e = xcalloc(1, sizeof *e);
	int outfd, errfd;
	size_t n = 0, i, nurl = 0;
	pid_t pid;

	memset(out, 0, sizeof *out);
	out->out = xmalloc(WS_GIT_OUT_MAX + 1);
	out->out[0] = '\0';
	e->g = g;
	e->out = out;
	argv[n++] = "git";
	for (i = 0; i < WS_GIT_NFIXED; i++)
		argv[n++] = ws_git_fixed[i];
	if (g->repo != NULL)
		nurl = ws_git_url_opts(g->repo, urlopts);
	for (i = 0; i < nurl; i++)
		argv[n++] = urlopts[i];
	/* After the empty one that drops every helper configured before. */
	if (g->cred != NULL) {
		snprintf(
		    helper, sizeof helper, "credential.helper=%s", g->self);
		argv[n++] = "-c";
		argv[n++] = helper;
	}
	for (i = 0; args[i] != NULL && i < WS_GIT_ARGS_MAX; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = ws_git_start(g, dir, argv, &outfd, &errfd, out);
	for (i = 0; i < nurl; i++)
		free(urlopts[i]);
	if (pid < 0) {
		free(e);
		return -1;
	}
	ws_git_pump(e, outfd, errfd);
	free(e);
	while (waitpid(pid, &out->status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(out->status) && WEXITSTATUS(out->status) == 0)
		return 0;
	ws_git_reason(out, args);
	return -1;
}

char *
ws_git_out_line(struct ws_git_out *out)
{
	while (out->outlen > 0 && out->out[out->outlen - 1] == '\n')
		out->out[--out->outlen] = '\0';
	return out->out;
}

void
ws_git_out_free(struct ws_git_out *out)
{
	free(out->out);
	out->out = NULL;
}
