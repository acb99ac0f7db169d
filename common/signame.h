/* signame: signal names as people write them in configs and requests. */
#ifndef BERTH_SIGNAME_H
#define BERTH_SIGNAME_H

/* The names signame_parse knows, for messages. */
#define SIGNAME_LIST                                                           \
	"TERM, INT, HUP, QUIT, KILL, USR1, USR2, WINCH, TSTP, CONT, ALRM, "    \
	"PIPE, CHLD, STOP, TTIN, TTOU, ..."

/* Parses a signal's name in any case, with or without "SIG", or a number
 * in 1..NSIG-1. Returns 0 with *sig set, or -1. */
int signame_parse(const char *s, int *sig);
/* The name of sig without "SIG" ("HUP"), or NULL for one without a name
 * (a real-time signal). */
const char *signame_name(int sig);

#endif
