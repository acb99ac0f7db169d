/* nodump: the memory of a process that holds the token, a credential or
 * secret values stays out of core files and out of reach of ptrace by
 * another process of its uid. berthd, the gateway, berth-probe and the
 * CLI call it first thing. */
#ifndef BERTH_NODUMP_H
#define BERTH_NODUMP_H

#include <sys/resource.h>

/* PR_SET_DUMPABLE 0 and a core limit of 0 (the hard limit is kept, so
 * that what the process spawns can get back the limit it had). Returns 0,
 * or -1 with *cause (the caller frees it). */
int nodump_self(char **cause);
/* The core limit the process had before nodump_self (as it had it if
 * nodump_self was not called). For a child between fork and exec. */
const struct rlimit *nodump_saved_core(void);

#endif
