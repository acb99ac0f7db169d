/* child: spawning processes and reaping every child (see child.h). Owns
 * the table of live children and their exit callbacks. */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "nodump.h"
#include "landlock.h"
#include "listenwatch.h"
#include "log.h"
#include "proto.h"
#include "pstat.h"
#include "xmalloc.h"

struct child {
	pid_t pid;
	child_exit_cb cb;
	void *arg;
};

static struct child *child_table;
static size_t child_n, child_cap;
/* Written before fork, so the child has it without formatting. */
static char child_oom[16] = "";
static size_t child_oom_len;
#define CHILD_ORPHANS_MAX 4
static void (*child_orphans_cb[CHILD_ORPHANS_MAX])(void);
static size_t child_norphans_cb;

void
child_set_oom_score_adj(int adj)
{
	int n = snprintf(child_oom, sizeof child_oom, "%d\n", adj);

	child_oom_len = n > 0 ? (size_t)n : 0;
}

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

/* What the child tells the parent when a step before exec fails. */
struct child_failure {
	int step;
	int err;
};

static const char *const child_steps[] = {
    "exec",
    "chdir",
    "setgroups",
    "setgid",
    "setuid",
    "dup2",
    "setting the controlling terminal",
    "dropping capabilities",
    "the Landlock scope",
    "joining its cgroup",
    "setting its resource limits",
};

static _Noreturn void
child_fail(int errfd, int step)
{
	struct child_failure f = {step, errno};

	if (write(errfd, &f, sizeof f) < 0)
		_exit(127);
	_exit(127);
}

/* No capability can come back (the bounding set and the ambient set are
 * emptied, no_new_privs), and no core dump can spill the process's
 * memory. Before the switch of ids: dropping from the bounding set needs
 * CAP_SETPCAP. */
static int
child_confine(void)
{
	static const struct rlimit nocore = {0, 0};
	int cap;

	for (cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 &&
		    errno != EINVAL)
			return -1;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 ||
	    setrlimit(RLIMIT_CORE, &nocore) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return 0;
}

/* Whether fd is one the child is promised. */
static bool
child_fd_kept(const struct child_spec *sp, int fd)
{
	size_t i;

	if (sp->extra_fd >= 0 && fd == sp->extra_fd_at)
		return true;
	for (i = 0; i < sp->nhand; i++)
		if (fd == sp->hand[i].at)
			return true;
	return false;
}

/* In the child, before the switch of ids: the listen(2) filter installed
 * and its notification fd sent to berthd (listenwatch.h). Without seccomp the
 * program runs unwatched, found by the poll alone. */
static void
child_send_watch(int errfd)
{
	char cbuf[CMSG_SPACE(sizeof(int))], tag = 'L';
	struct iovec iov = {&tag, 1};
	struct msghdr msg = {.msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = cbuf,
	    .msg_controllen = sizeof cbuf};
	struct cmsghdr *c;
	int fd = listenwatch_install();

	if (fd < 0)
		return;
	memset(cbuf, 0, sizeof cbuf);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	sendmsg(errfd, &msg, MSG_NOSIGNAL);
	close(fd);
}

/* In the parent: one message of the child's error channel into f, or a
 * notification fd into *watch (1 returned). Returns what was read. */
static ssize_t
child_recv(int fd, struct child_failure *f, int *watch)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {f, sizeof *f};
	struct msghdr msg = {.msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = cbuf,
	    .msg_controllen = sizeof cbuf};
	struct cmsghdr *c;
	ssize_t n;

	do
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (c != NULL && c->cmsg_level == SOL_SOCKET &&
	    c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int))) {
		if (*watch >= 0)
			close(*watch);
		memcpy(watch, CMSG_DATA(c), sizeof *watch);
	}
	return n;
}

/* In the child: copies of the handed fds at numbers no target takes
 * (the close_range below 1024 leaves them to the close loop), so that
 * moving one into place never clobbers another's source. */
static int
child_hand_high(const struct child_spec *sp, int *high)
{
	size_t i;

	for (i = 0; i < sp->nhand; i++)
		if ((high[i] = fcntl(sp->hand[i].fd, F_DUPFD, 512)) < 0)
			return -1;
	return 0;
}

/* In the child: into the target's cgroups first, so that nothing it forks
 * can start outside them. */
static void
child_join(const struct child_spec *sp, int errfd)
{
	size_t i;

	for (i = 0; i < sp->njoin; i++)
		if (write(sp->join[i], "0\n", 2) != 2)
			child_fail(errfd, 9);
}

static void
child_rlimits(const struct child_spec *sp, int errfd)
{
	struct rlimit r;
	size_t i;

	for (i = 0; i < sp->nrl; i++) {
		r.rlim_cur = r.rlim_max = sp->rl[i].value;
		if (setrlimit(sp->rl[i].resource, &r) != 0)
			child_fail(errfd, 10);
	}
}

/* In the child between fork and exec: undo everything berthd set up. Only
 * async-signal-safe calls here. */
static _Noreturn void
child_exec(const struct child_spec *sp, int errfd)
{
	extern char **environ;
	struct sigaction sa;
	sigset_t none;
	int sig, fd, high[CHILD_MAX_HANDED];
	size_t i;

	child_join(sp, errfd);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	/* berthd is not dumpable, and so is this copy of it: its /proc files
	 * would not be its own to write. The exec makes a fresh image
	 * dumpable anyway. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	setrlimit(RLIMIT_CORE, nodump_saved_core());
	if (child_oom_len > 0) {
		fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, child_oom, child_oom_len) < 0)
				child_oom_len = 0;
			close(fd);
		}
	}
	if (sp->use_tty) {
		/* setsid above made this a session leader with no terminal. */
		if (ioctl(sp->tty_fd, TIOCSCTTY, 0) != 0 ||
		    dup2(sp->tty_fd, STDIN_FILENO) < 0 ||
		    dup2(sp->tty_fd, STDOUT_FILENO) < 0 ||
		    dup2(sp->tty_fd, STDERR_FILENO) < 0)
			child_fail(errfd, 6);
	} else if (sp->set_stdio && sp->stdin_fd >= 0) {
		if (dup2(sp->stdin_fd, STDIN_FILENO) < 0)
			child_fail(errfd, 5);
	} else {
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0 && fd != STDIN_FILENO) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
	}
	if (sp->stdout_fd >= 0 && dup2(sp->stdout_fd, STDOUT_FILENO) < 0)
		child_fail(errfd, 5);
	if (sp->set_stdio && sp->stderr_fd >= 0 &&
	    dup2(sp->stderr_fd, STDERR_FILENO) < 0)
		child_fail(errfd, 5);
	if (child_hand_high(sp, high) < 0)
		child_fail(errfd, 5);
	if (sp->extra_fd >= 0) {
		/* Above every fd this function uses, so dup2 clobbers none. */
		if (sp->extra_fd == sp->extra_fd_at)
			fcntl(sp->extra_fd, F_SETFD, 0);
		else if (dup2(sp->extra_fd, sp->extra_fd_at) < 0)
			child_fail(errfd, 5);
	}
	for (i = 0; i < sp->nhand; i++)
		if (dup2(high[i], sp->hand[i].at) < 0)
			child_fail(errfd, 5);
	if (!sp->cwd_as_user && chdir(sp->cwd != NULL ? sp->cwd : "/") != 0)
		child_fail(errfd, 1);
	if (sp->scope_abstract_unix && landlock_scope_abstract_unix() != 0)
		child_fail(errfd, 8);
	child_rlimits(sp, errfd);
	if (sp->confine && child_confine() != 0)
		child_fail(errfd, 7);
	/* While still root: a filter needs CAP_SYS_ADMIN or no_new_privs,
	 * and a launch that is not confined has no no_new_privs. */
	if (sp->watch_listen)
		child_send_watch(errfd);
	if (sp->set_ids) {
		if (setgroups(sp->ngroups, sp->groups) != 0)
			child_fail(errfd, 2);
		if (setgid(sp->gid) != 0)
			child_fail(errfd, 3);
		if (setuid(sp->uid) != 0)
			child_fail(errfd, 4);
	}
	if (sp->cwd_as_user && chdir(sp->cwd != NULL ? sp->cwd : "/") != 0)
		child_fail(errfd, 1);
	/* The error pipe is close-on-exec; everything else above 2 goes now,
	 * but for the fd handed over. */
	for (fd = 3; fd < 1024; fd++)
		if (fd != errfd && !child_fd_kept(sp, fd))
			close(fd);
	close_range(1024, ~0U, 0);
	if (sp->envp != NULL)
		environ = (char **)sp->envp;
	if (strchr(sp->path, '/') != NULL)
		execv(sp->path, sp->argv);
	else
		execvp(sp->path, sp->argv);
	child_fail(errfd, 0);
}

pid_t
child_spawn(
    const struct child_spec *spec, child_exit_cb cb, void *arg, char **cause)
{
	struct child_failure f;
	int pfd[2], watch = -1;
	pid_t pid;
	ssize_t n;

	/* The error channel: a failure before exec, or the listen(2)
	 * notification fd (SCM_RIGHTS); kept clear of the fd number a child
	 * is promised. */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pfd) != 0) {
		*cause = xasprintf("socketpair: %s", strerror(errno));
		return -1;
	}
	if (child_fd_kept(spec, pfd[1])) {
		int moved = fcntl(pfd[1], F_DUPFD_CLOEXEC, 64);
		close(pfd[1]);
		pfd[1] = moved;
	}
	pid = fork();
	if (pid < 0) {
		*cause = xasprintf("fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0)
		child_exec(spec, pfd[1]);
	close(pfd[1]);
	if (child_n == child_cap) {
		child_cap = child_cap ? 2 * child_cap : 16;
		child_table =
		    xreallocarray(child_table, child_cap, sizeof *child_table);
	}
	child_table[child_n++] = (struct child){pid, cb, arg};
	/* The channel closes at exec: zero bytes means the exec happened. */
	while ((n = child_recv(pfd[0], &f, &watch)) == 1)
		;
	close(pfd[0]);
	if (watch >= 0 && n != sizeof f)
		listenwatch_add(watch);
	else if (watch >= 0)
		close(watch);
	if (n == sizeof f) {
		/* The child is exiting; its status is of no interest. */
		child_table[child_n - 1].cb = NULL;
		if (f.step == 0)
			*cause = xasprintf("cannot execute %s: %s", spec->path,
			    strerror(f.err));
		else
			*cause = xasprintf("%s before executing %s: %s",
			    child_steps[f.step], spec->path, strerror(f.err));
		return -1;
	}
	return pid;
}

void
child_on_orphans(void (*cb)(void))
{
	if (child_norphans_cb < CHILD_ORPHANS_MAX)
		child_orphans_cb[child_norphans_cb++] = cb;
}

static void
child_tell_orphans(void)
{
	size_t i;

	for (i = 0; i < child_norphans_cb; i++)
		child_orphans_cb[i]();
}

bool
child_reap(void)
{
	struct child *c, done;
	bool orphans = false;
	int status;
	pid_t pid;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0) {
			if (orphans)
				child_tell_orphans();
			return pid == 0;
		}
		c = child_find(pid);
		if (c == NULL) {
			log_debug("%s: reaped orphan %ld", __func__, (long)pid);
			orphans = true;
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

int
child_sweep(void)
{
	struct pstat *all;
	size_t count, i;
	int n = 0;

	if (getpid() == 1)
		return kill(-1, SIGKILL) == 0 ? 1 : 0;
	count = pstat_all(&all);
	for (i = 0; i < count; i++)
		if (all[i].ppid == getpid() && kill(all[i].pid, SIGKILL) == 0)
			n++;
	free(all);
	return n;
}

/* Whether a and b (KEY=VALUE) set the same name. */
static bool
child_same_name(const char *a, const char *b)
{
	size_t klen = strcspn(a, "=");

	return strncmp(a, b, klen) == 0 && b[klen] == '=';
}

char **
child_environ(char *const *add, size_t nadd)
{
	extern char **environ;

	return child_environ_from(environ, add, nadd);
}

char **
child_environ_from(char *const *base, char *const *add, size_t nadd)
{
	size_t n = 0, cap = nadd + 1, i, j;
	char **env;

	for (i = 0; base[i] != NULL; i++)
		cap++;
	env = xcalloc(cap, sizeof *env);
	for (i = 0; base[i] != NULL; i++) {
		for (j = 0; j < nadd && !child_same_name(base[i], add[j]); j++)
			;
		if (j == nadd)
			env[n++] = xstrdup(base[i]);
	}
	for (i = 0; i < nadd; i++) {
		for (j = i + 1; j < nadd && !child_same_name(add[i], add[j]);
		     j++)
			;
		if (j == nadd)
			env[n++] = xstrdup(add[i]);
	}
	env[n] = NULL;
	return env;
}

void
child_strv_free(char **v)
{
	size_t i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

unsigned
child_status_keys(int status)
{
	return WIFSIGNALED(status) ? 2 : 1;
}

void
child_pack_status(msgpack_packer *pk, int status)
{
	if (WIFSIGNALED(status)) {
		proto_pack_kv_i64(pk, "signal", WTERMSIG(status));
		proto_pack_kv_bool(pk, "core", WCOREDUMP(status));
	} else
		proto_pack_kv_i64(pk, "code", WEXITSTATUS(status));
}

void
child_pack_status_map(msgpack_packer *pk, int status)
{
	msgpack_pack_map(pk, child_status_keys(status));
	child_pack_status(pk, status);
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
