/* signame: signal names as people write them in configs and requests. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    {"ALRM", SIGALRM},
    {"PIPE", SIGPIPE},
    {"CHLD", SIGCHLD},
    {"STOP", SIGSTOP},
    {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},
    {"ABRT", SIGABRT},
    {"BUS", SIGBUS},
    {"FPE", SIGFPE},
    {"ILL", SIGILL},
    {"SEGV", SIGSEGV},
    {"TRAP", SIGTRAP},
    {"SYS", SIGSYS},
    {"URG", SIGURG},
    {"IO", SIGIO},
    {"PWR", SIGPWR},
    {"PROF", SIGPROF},
    {"VTALRM", SIGVTALRM},
    {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ},
    {"STKFLT", SIGSTKFLT},
};

int
signame_parse(const char *s, int *sig)
{
	const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
	size_t i;
	char *end;
	long n;

	for (i = 0; i < sizeof signame_table / sizeof *signame_table; i++)
		if (strcasecmp(name, signame_table[i].name) == 0) {
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

const char *
signame_name(int sig)
{
	size_t i;

	for (i = 0; i < sizeof signame_table / sizeof *signame_table; i++)
		if (signame_table[i].sig == sig)
			return signame_table[i].name;
	return NULL;
}
