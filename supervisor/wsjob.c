/* wsjob: one run of berth-workspace (see wsjob.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "launch.h"
#include "log.h"
#include "wsjob.h"
#include "wsreport.h"
#include "xmalloc.h"

struct wsjob {
	char *label;
	struct wscred *cred; /* NULL: none, or wiped */
	pid_t pid;           /* 0 once it has ended */
	int fd;              /* the report pipe, or -1 */
	struct event *ev;
	char line[WSREPORT_LINE_MAX + 1];
	size_t linelen;
	enum wsjob_answer answer; /* so far; BROKEN: nothing more counts */
	wsjob_line_fn line_cb;
	wsjob_exit_fn exit_cb;
	void *arg;
};

/* git's system and global config files unread: berth's steps are
 * berth's (the runtime's env may still name others, which berth-workspace
 * deliver drops). */
static char *const wsjob_git_env[] = {
    "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", NULL};

static void
wsjob_close(struct wsjob *j)
{
	if (j->ev != NULL)
		event_free(j->ev);
	j->ev = NULL;
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
}

void
wsjob_free(struct wsjob *j)
{
	if (j == NULL)
		return;
	if (j->pid > 0) {
		child_forget(j->pid);
		kill(-j->pid, SIGKILL);
	}
	wscred_free(j->cred);
	wsjob_close(j);
	free(j->label);
	free(j);
}

char *
wsjob_redact(const struct wsjob *j, const char *s, size_t n)
{
	return wscred_redact(j->cred, s, n);
}

/* The helper said something it never says (after its answer, or not in
 * the format): nothing more it says is believed. */
static void
wsjob_broken(struct wsjob *j, size_t len)
{
	if (j->answer != WSJOB_BROKEN)
		log_warn("%s: berth-workspace said something malformed "
		         "(%zu bytes)",
		    j->label, len);
	j->answer = WSJOB_BROKEN;
	if (j->pid > 0)
		kill(-j->pid, SIGKILL);
}

static void
wsjob_line(struct wsjob *j, const char *line, size_t len)
{
	enum wsjob_answer a;

	if (j->answer == WSJOB_BROKEN)
		return;
	if (j->answer != WSJOB_NONE ||
	    (a = j->line_cb(j->arg, line, len)) == WSJOB_BROKEN)
		wsjob_broken(j, len);
	else
		j->answer = a;
}

/* Reads what the helper wrote; false once its pipe ended. */
static bool
wsjob_read(struct wsjob *j)
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
			wsjob_line(j, j->line, (size_t)(nl - j->line));
			j->linelen -= (size_t)(nl + 1 - j->line);
			memmove(j->line, nl + 1, j->linelen);
		}
		if (j->linelen == sizeof j->line - 1) {
			wsjob_broken(j, j->linelen);
			j->linelen = 0;
		}
	}
}

static void
wsjob_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct wsjob *j = arg;

	(void)fd;
	(void)what;
	if (!wsjob_read(j))
		wsjob_close(j);
}

static void
wsjob_exit_cb(pid_t pid, int status, void *arg)
{
	struct wsjob *j = arg;
	char why[128];

	(void)pid;
	j->pid = 0;
	/* Whatever it wrote is in the pipe by now. */
	if (j->fd >= 0)
		wsjob_read(j);
	wsjob_close(j);
	wscred_free(j->cred);
	j->cred = NULL;
	if (j->linelen > 0 && j->answer == WSJOB_NONE)
		j->answer = WSJOB_BROKEN;
	if (j->answer == WSJOB_DONE &&
	    !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		j->answer = WSJOB_NONE;
	if (WIFSIGNALED(status))
		snprintf(why, sizeof why,
		    "berth-workspace was killed by signal %d",
		    WTERMSIG(status));
	else
		snprintf(why, sizeof why,
		    "berth-workspace ended without an answer (code %d)",
		    WEXITSTATUS(status));
	/* Last: the owner may free j. */
	j->exit_cb(j->arg, j->answer, why);
}

/* berth-workspace's argv, for launch_user (which takes it). */
static char **
wsjob_argv(const struct wsjob_spec *s)
{
	size_t nargs = 0, n = 0, i;
	char **argv;

	while (s->args[nargs] != NULL)
		nargs++;
	argv = xcalloc(nargs + 4, sizeof *argv);
	argv[n++] = child_berth_program("berth-workspace");
	for (i = 0; i < nargs; i++)
		argv[n++] = xstrdup(s->args[i]);
	if (s->cred != NULL) {
		argv[n++] = xstrdup("--credential-fd");
		argv[n++] = xasprintf("%d", WSJOB_CRED_FD);
	}
	return argv;
}

/* Spawns the helper for j; NULL, or the step that failed (and *cause). */
static const char *
wsjob_spawn(struct wsjob *j, const struct wsjob_spec *s, char **cause)
{
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	char *const *const extra[] = {wsjob_git_env, s->rt->env.v};
	struct secrets_grant none = {0};
	struct launch_user_req req = {.argv = wsjob_argv(s),
	    .user = s->rt->user,
	    .group = s->rt->group,
	    .cwd = "/",
	    .extra = extra,
	    .nextra = s->rt->env.v != NULL ? 2 : 1,
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
	spec.extra_fd_at = WSJOB_CRED_FD;
	if (s->hand_fd >= 0)
		spec.hand[spec.nhand++] =
		    (struct child_handed){s->hand_fd, WSJOB_HAND_FD};
	j->pid = child_spawn(&spec, wsjob_exit_cb, j, cause);
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
	j->ev =
	    event_new(s->base, j->fd, EV_READ | EV_PERSIST, wsjob_read_cb, j);
	event_add(j->ev, NULL);
	return NULL;
}

struct wsjob *
wsjob_start(const struct wsjob_spec *s, char **why)
{
	struct wsjob *j = xcalloc(1, sizeof *j);
	const char *step;
	char *cause = NULL;

	j->label = xstrdup(s->label);
	j->cred = s->cred;
	j->fd = -1;
	j->line_cb = s->line;
	j->exit_cb = s->exit;
	j->arg = s->arg;
	if ((step = wsjob_spawn(j, s, &cause)) == NULL)
		return j;
	*why = xasprintf("%s%s%s", step, cause != NULL ? ": " : "",
	    cause != NULL ? cause : "");
	log_warn("%s: %s", j->label, *why);
	free(cause);
	wsjob_free(j);
	return NULL;
}
