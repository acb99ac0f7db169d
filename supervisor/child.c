/* child: spawning processes and reaping every child (see child.h). Owns
 * the table of live children and their exit callbacks. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "log.h"
#include "xmalloc.h"

struct child {
	pid_t pid;
	child_exit_cb cb;
	void *arg;
};

static struct child *child_table;
static size_t child_n, child_cap;

static struct child *
child_find(pid_t pid)
{
	size_t i;

	for (i = 0; i < child_n; i++)
		if (child_table[i].pid == pid)
			return &child_table[i];
	return NULL;
}

static void
child_remove(struct child *c)
{
	*c = child_table[--child_n];
}

/* In the child between fork and exec: undo everything berthd set up. Only
 * async-signal-safe calls here. */
static void
child_exec(const char *path, char *const argv[], int errfd)
{
	struct sigaction sa;
	sigset_t none;
	int sig, fd, err;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != STDIN_FILENO) {
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	/* The error pipe is close-on-exec; everything else above 2 goes now. */
	if (errfd > 3)
		close_range(3, (unsigned)errfd - 1, 0);
	close_range((unsigned)errfd + 1, ~0U, 0);
	if (strchr(path, '/') != NULL)
		execv(path, argv);
	else
		execvp(path, argv);
	err = errno;
	if (write(errfd, &err, sizeof err) < 0)
		_exit(127);
	_exit(127);
}

pid_t
child_spawn(const char *path, char *const argv[], child_exit_cb cb, void *arg,
    char **cause)
{
	int pfd[2], err;
	pid_t pid;
	ssize_t n;

	if (pipe2(pfd, O_CLOEXEC) != 0) {
		*cause = xasprintf("pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		*cause = xasprintf("fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0)
		child_exec(path, argv, pfd[1]);
	close(pfd[1]);
	if (child_n == child_cap) {
		child_cap = child_cap ? 2 * child_cap : 16;
		child_table =
		    xreallocarray(child_table, child_cap, sizeof *child_table);
	}
	child_table[child_n++] = (struct child){pid, cb, arg};
	/* The pipe closes at exec: zero bytes means the exec happened. */
	do
		n = read(pfd[0], &err, sizeof err);
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n == sizeof err) {
		/* The child is exiting; its status is of no interest. */
		child_table[child_n - 1].cb = NULL;
		*cause =
		    xasprintf("cannot execute %s: %s", path, strerror(err));
		return -1;
	}
	return pid;
}

void
child_reap(void)
{
	struct child *c, done;
	int status;
	pid_t pid;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		c = child_find(pid);
		if (c == NULL) {
			log_debug("%s: reaped orphan %ld", __func__, (long)pid);
			continue;
		}
		done = *c;
		child_remove(c);
		if (done.cb != NULL)
			done.cb(pid, status, done.arg);
	}
}

void
child_forget(pid_t pid)
{
	struct child *c = child_find(pid);

	if (c != NULL)
		c->cb = NULL;
}

unsigned
child_count(void)
{
	return (unsigned)child_n;
}

char *
child_berth_program(const char *name)
{
	char self[PATH_MAX], *slash, *p;
	ssize_t n;

	if (strchr(name, '/') != NULL)
		return xstrdup(name);
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			p = xasprintf("%s/%s", self, name);
			if (access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	p = xasprintf("%s/%s", BERTH_LIBEXECDIR, name);
	if (access(p, X_OK) == 0)
		return p;
	free(p);
	return xstrdup(name);
}
