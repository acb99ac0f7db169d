/* ws_cred: berth-workspace as git's credential helper. git runs it as
 * "berth-workspace get" (then "store" or "erase", which it ignores) and
 * reads "username=...\npassword=...\n" on its stdout; the answers are the
 * two lines of the pipe at the fd BERTH_CRED_FD names, read a byte at a
 * time up to the end of the second line. The credential is in no argv,
 * environment variable or file: a GIT_ASKPASS would do as well but for
 * its password prompt, an argv that names the username. */
#ifndef BERTH_WS_CRED_H
#define BERTH_WS_CRED_H

#include <stdbool.h>

/* Whether this run is git's credential helper (BERTH_CRED_FD set, one
 * argument: the helper's action). */
bool ws_cred_wanted(int argc, char **argv);
/* Answers git for action; the exit status for main. */
int ws_cred_main(const char *action);

#endif
