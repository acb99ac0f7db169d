/* ws_cred: git's credential helper from a pipe (see ws_cred.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ws_cred.h"

#define WS_CRED_LINE_MAX 1024

bool
ws_cred_wanted(int argc, char **argv)
{
	(void)argv;
	return argc == 2 && getenv("BERTH_CRED_FD") != NULL;
}

/* One line of fd into line (without its "\n"); its length, or -1. */
static ssize_t
ws_cred_line(int fd, char *line)
{
	size_t n = 0;
	ssize_t r;

	while (n < WS_CRED_LINE_MAX) {
		r = read(fd, line + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (line[n] == '\n')
			return (ssize_t)n;
		n++;
	}
	return -1;
}

/* git's request on stdin ("protocol=...\nhost=...\n\n"): read to its end
 * so that git's write never meets a closed pipe. */
static void
ws_cred_drain(void)
{
	char buf[512];

	while (read(0, buf, sizeof buf) > 0)
		;
}

int
ws_cred_main(const char *action)
{
	const char *s = getenv("BERTH_CRED_FD");
	char user[WS_CRED_LINE_MAX + 1], pass[WS_CRED_LINE_MAX + 1], *end;
	ssize_t ul, pl;
	long fd;
	int rc = 1;

	/* Not to be read through /proc or ptrace by the user's others. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	ws_cred_drain();
	if (strcmp(action, "get") != 0)
		return 0;
	fd = strtol(s, &end, 10);
	if (*end != '\0' || fd < 3 || fd > 1023)
		return 1;
	ul = ws_cred_line((int)fd, user);
	pl = ul >= 0 ? ws_cred_line((int)fd, pass) : -1;
	close((int)fd);
	/* Nothing left, when git asks again: it gets no answer. */
	if (ul > 0 && pl > 0) {
		user[ul] = pass[pl] = '\0';
		rc = printf("username=%s\npassword=%s\n", user, pass) > 0 &&
		        fflush(stdout) == 0
		    ? 0
		    : 1;
	}
	explicit_bzero(user, sizeof user);
	explicit_bzero(pass, sizeof pass);
	return rc;
}
