/* runtime_version: a runtime's program and the version it prints (see
 * runtime_version.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "clock.h"
#include "launch.h"
#include "runtime_version.h"
#include "xmalloc.h"

static struct event_base *runtime_version_base;

void
runtime_version_init(struct event_base *base)
{
	runtime_version_base = base;
}

/* path as a program: a regular file someone may execute. */
static int
runtime_program_stat(const char *path, struct stat *st)
{
	if (stat(path, st) != 0)
		return -1;
	if (!S_ISREG(st->st_mode) || (st->st_mode & 0111) == 0) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

char *
runtime_program_find(const char *command, struct stat *st, char **reason)
{
	const char *dir = RUNTIME_VERSION_PATH, *end;
	char *path, *denied = NULL;

	if (strchr(command, '/') != NULL) {
		if (runtime_program_stat(command, st) == 0)
			return xstrdup(command);
		*reason =
		    xasprintf(errno == EACCES ? "program not executable: %s"
		                              : "program not found: %s",
		        command);
		return NULL;
	}
	for (; *dir != '\0'; dir = *end != '\0' ? end + 1 : end) {
		end = strchrnul(dir, ':');
		path = xasprintf("%.*s/%s", (int)(end - dir), dir, command);
		if (runtime_program_stat(path, st) == 0) {
			free(denied);
			return path;
		}
		if (errno == EACCES && denied == NULL)
			denied = path;
		else
			free(path);
	}
	*reason = denied != NULL
	    ? xasprintf("program not executable: %s", denied)
	    : xasprintf("program not found: %s", command);
	free(denied);
	return NULL;
}

static bool
runtime_version_same(const struct runtime_version *v, const struct stat *st)
{
	return v->dev == st->st_dev && v->ino == st->st_ino &&
	    v->size == st->st_size && v->mtime.tv_sec == st->st_mtim.tv_sec &&
	    v->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static void
runtime_version_forget(struct runtime_version *v)
{
	free(v->program);
	free(v->version);
	free(v->reason);
	v->program = v->version = v->reason = NULL;
	v->known = v->available = false;
}

/* The pipe, the timer and the child of a detection, gone. */
static void
runtime_version_stop(struct runtime_version *v)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (v->out[i].ev != NULL)
			event_free(v->out[i].ev);
		v->out[i].ev = NULL;
		if (v->out[i].open)
			close(v->out[i].fd);
		v->out[i].open = false;
	}
	if (v->timer != NULL)
		event_free(v->timer);
	v->timer = NULL;
	if (v->pid > 0 && !v->exited) {
		child_forget(v->pid);
		kill(-v->pid, SIGKILL);
	}
	v->pid = 0;
}

/* The "--version" of messages: the version arguments as written. */
static char *
runtime_version_words(const struct config_runtime *r)
{
	char *s = xstrdup(""), *next;
	size_t i;

	for (i = 0; i < r->version_args.n; i++) {
		next = xasprintf(
		    "%s%s%s", s, i > 0 ? " " : "", r->version_args.v[i]);
		free(s);
		s = next;
	}
	return s;
}

char *
runtime_version_parse(const char *buf, size_t len)
{
	const char *s = buf, *end = buf + len, *nl;
	char *out;
	size_t i, n;

	while (s < end && isspace((unsigned char)*s))
		s++;
	if ((nl = memchr(s, '\n', (size_t)(end - s))) != NULL)
		end = nl;
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	if (end == s)
		return NULL;
	n = (size_t)(end - s);
	if (n > RUNTIME_VERSION_MAX)
		n = RUNTIME_VERSION_MAX;
	out = xstrndup(s, n);
	/* Whatever the program printed goes into messages as text. */
	for (i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 ||
		    (unsigned char)out[i] > 0x7e)
			out[i] = '?';
	return out;
}

static char *
runtime_version_line(const struct runtime_version_pipe *o)
{
	return runtime_version_parse(o->buf, o->len);
}

/* Both the exit and the end of its output are in (or the time is up). */
static void
runtime_version_finish(struct runtime_version *v)
{
	char *words = runtime_version_words(v->r);
	void (*done)(void *) = v->done;

	v->known = true;
	if (v->timed_out)
		v->reason = xasprintf("%s did not answer within %d s", words,
		    RUNTIME_VERSION_TIMEOUT_MS / 1000);
	else if (WIFSIGNALED(v->status))
		v->reason = xasprintf(
		    "%s was killed by signal %d", words, WTERMSIG(v->status));
	else if (WEXITSTATUS(v->status) != 0)
		v->reason = xasprintf(
		    "%s exited with code %d", words, WEXITSTATUS(v->status));
	else if ((v->version = runtime_version_line(&v->out[0])) == NULL &&
	    (v->out[0].len > 0 ||
	        (v->version = runtime_version_line(&v->out[1])) == NULL))
		v->reason = xasprintf("%s printed no version", words);
	v->available = v->version != NULL;
	free(words);
	runtime_version_stop(v);
	v->done = NULL;
	done(v->arg);
}

static bool
runtime_version_reading(const struct runtime_version *v)
{
	return v->out[0].open || v->out[1].open;
}

static void
runtime_version_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct runtime_version_pipe *o = arg;
	char sink[512];
	ssize_t n;

	(void)what;
	if (o->len < sizeof o->buf)
		n = read(fd, o->buf + o->len, sizeof o->buf - o->len);
	else
		n = read(fd, sink, sizeof sink); /* past the limit: dropped */
	if (n > 0) {
		if (o->len < sizeof o->buf)
			o->len += (size_t)n;
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	event_del(o->ev);
	close(o->fd);
	o->open = false;
	if (o->v->exited && !runtime_version_reading(o->v))
		runtime_version_finish(o->v);
}

static void
runtime_version_exit_cb(pid_t pid, int status, void *arg)
{
	struct runtime_version *v = arg;

	(void)pid;
	v->exited = true;
	v->status = status;
	if (!runtime_version_reading(v))
		runtime_version_finish(v);
}

static void
runtime_version_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct runtime_version *v = arg;

	(void)fd;
	(void)what;
	v->timed_out = true;
	runtime_version_finish(v);
}

/* Runs the program as the runtime's user with its stdout and stderr on
 * pipes. */
static int
runtime_version_spawn(struct runtime_version *v, char **cause)
{
	const struct config_runtime *r = v->r;
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	struct secrets_grant none = {0};
	char *const *extra[1] = {r->env.v};
	struct launch_user_req req = {.user = r->user,
	    .group = r->group,
	    .cwd = "/",
	    .extra = extra,
	    .nextra = r->env.v != NULL ? 1 : 0,
	    .grant = &none};
	struct timeval tv = clock_tv(RUNTIME_VERSION_TIMEOUT_MS);
	int fds[2][2] = {{-1, -1}, {-1, -1}}, i;
	struct launch l;
	size_t k;

	req.argv = xcalloc(r->version_args.n + 2, sizeof *req.argv);
	req.argv[0] = xstrdup(v->program);
	for (k = 0; k < r->version_args.n; k++)
		req.argv[k + 1] = xstrdup(r->version_args.v[k]);
	if (launch_user(&l, &req, cause) < 0)
		return -1;
	if (pipe2(fds[0], O_CLOEXEC) != 0 || pipe2(fds[1], O_CLOEXEC) != 0) {
		*cause = xasprintf("pipe: %s", strerror(errno));
		v->pid = -1;
		goto out;
	}
	launch_spec(&l, &spec);
	spec.set_stdio = true;
	spec.stdin_fd = -1;
	spec.stdout_fd = fds[0][1];
	spec.stderr_fd = fds[1][1];
	v->exited = v->timed_out = false;
	v->pid = child_spawn(&spec, runtime_version_exit_cb, v, cause);
out:
	for (i = 0; i < 2; i++) {
		if (fds[i][1] >= 0)
			close(fds[i][1]);
		if (v->pid < 0 && fds[i][0] >= 0)
			close(fds[i][0]);
	}
	launch_free(&l);
	if (v->pid < 0) {
		v->pid = 0;
		return -1;
	}
	for (i = 0; i < 2; i++) {
		struct runtime_version_pipe *o = &v->out[i];
		o->v = v;
		o->fd = fds[i][0];
		o->open = true;
		o->len = 0;
		fcntl(o->fd, F_SETFL, O_NONBLOCK);
		o->ev = event_new(runtime_version_base, o->fd,
		    EV_READ | EV_PERSIST, runtime_version_read_cb, o);
		event_add(o->ev, NULL);
	}
	v->timer =
	    evtimer_new(runtime_version_base, runtime_version_timeout_cb, v);
	evtimer_add(v->timer, &tv);
	return 0;
}

bool
runtime_version_busy(const struct runtime_version *v)
{
	return v->done != NULL;
}

bool
runtime_version_check(struct runtime_version *v, const struct config_runtime *r,
    void (*done)(void *), void *arg)
{
	char *path, *cause = NULL;
	struct stat st;

	if (runtime_version_busy(v))
		return false;
	path = runtime_program_find(r->command, &st, &cause);
	if (path != NULL && v->known && v->program != NULL &&
	    strcmp(path, v->program) == 0 && runtime_version_same(v, &st)) {
		free(path);
		return true;
	}
	runtime_version_forget(v);
	v->r = r;
	if (path == NULL) {
		v->known = true;
		v->reason = cause;
		return true;
	}
	v->program = path;
	v->dev = st.st_dev;
	v->ino = st.st_ino;
	v->size = st.st_size;
	v->mtime = st.st_mtim;
	if (runtime_version_spawn(v, &cause) < 0) {
		v->known = true;
		v->reason = cause;
		return true;
	}
	v->done = done;
	v->arg = arg;
	return false;
}

void
runtime_version_clear(struct runtime_version *v)
{
	runtime_version_stop(v);
	v->done = NULL;
	runtime_version_forget(v);
}
