/* signame: signal names as people write them in configs and requests. */
#ifndef BERTH_SIGNAME_H
#define BERTH_SIGNAME_H

/* The names signame_parse knows, for messages. */
#define SIGNAME_LIST "TERM, INT, HUP, QUIT, KILL, USR1, USR2, WINCH, TSTP, CONT"

/* Parses a name from SIGNAME_LIST (with or without "SIG") or a number in
 * 1..NSIG-1. Returns 0 with *sig set, or -1. */
int signame_parse(const char *s, int *sig);

#endif
