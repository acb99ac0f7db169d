/* signame: signal names as people write them in configs and requests. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "signame.h"

static const struct {
	const char *name;
	int sig;
} signame_table[] = {
    {"TERM", SIGTERM},
    {"INT", SIGINT},
    {"HUP", SIGHUP},
    {"QUIT", SIGQUIT},
    {"KILL", SIGKILL},
    {"USR1", SIGUSR1},
    {"USR2", SIGUSR2},
    {"WINCH", SIGWINCH},
    {"TSTP", SIGTSTP},
    {"CONT", SIGCONT},
};

int
signame_parse(const char *s, int *sig)
{
	const char *name = strncmp(s, "SIG", 3) == 0 ? s + 3 : s;
	size_t i;
	char *end;
	long n;

	for (i = 0; i < sizeof signame_table / sizeof *signame_table; i++)
		if (strcmp(name, signame_table[i].name) == 0) {
			*sig = signame_table[i].sig;
			return 0;
		}
	errno = 0;
	n = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || n < 1 || n >= NSIG)
		return -1;
	*sig = (int)n;
	return 0;
}
