/* dk_run: running a program to its end (see dk_run.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dk_run.h"
#include "dk_why.h"

/* Enough of stderr for the last line of a program's complaint. */
#define DK_RUN_ERR_MAX 4096

static char *const dk_run_env[] = {
    "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};

static _Noreturn void
dk_run_child(const char *const *argv, int errfd)
{
	int null = open("/dev/null", O_RDWR);

	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(errfd, 2) < 0)
		_exit(126);
	execve(argv[0], (char *const *)argv, dk_run_env);
	_exit(127);
}

/* Reads fd to its end into buf (the last bytes if more), NUL-ended. */
static void
dk_run_drain(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	char chunk[512];

	while ((n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (len + (size_t)n >= cap) {
			size_t keep = cap / 2;
			memmove(buf, buf + len - keep, keep);
			len = keep;
		}
		memcpy(buf + len, chunk, (size_t)n);
		len += (size_t)n;
	}
	buf[len] = '\0';
}

/* The last non-empty line of s, control bytes made spaces. */
static const char *
dk_run_last_line(char *s)
{
	char *end = s + strlen(s), *p;

	while (end > s && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	p = strrchr(s, '\n');
	p = p != NULL ? p + 1 : s;
	for (char *q = p; *q != '\0'; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = ' ';
	return p;
}

int
dk_run(const char *what, const char *const *argv, int ok_max)
{
	char err[DK_RUN_ERR_MAX];
	const char *line;
	int p[2], status;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		return dk_why(
		    "%s: cannot make a pipe: %s", what, strerror(errno));
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return dk_why("%s: cannot fork: %s", what, strerror(errno));
	}
	if (pid == 0)
		dk_run_child(argv, p[1]);
	close(p[1]);
	dk_run_drain(p[0], err, sizeof err);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return dk_why("%s: lost: %s", what, strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) <= ok_max)
		return 0;
	line = dk_run_last_line(err);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return dk_why("%s: cannot run %s", what, argv[0]);
	if (line[0] != '\0')
		return dk_why("%s: %s", what, line);
	if (WIFSIGNALED(status))
		return dk_why(
		    "%s: killed by signal %d", what, WTERMSIG(status));
	return dk_why("%s: exit code %d", what, WEXITSTATUS(status));
}
