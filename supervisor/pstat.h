/* pstat: a process as /proc/PID/stat tells it, for the sweep and the
 * trees of services. */
#ifndef BERTH_PSTAT_H
#define BERTH_PSTAT_H

#include <sys/types.h>

struct pstat {
	pid_t pid, ppid, pgrp, sid;
	char state;               /* R, S, D, Z, T, ... */
	unsigned long long start; /* clock ticks after boot */
};

/* Reads pid's stat. Returns 0, or -1 if there is no such process. */
int pstat_read(pid_t pid, struct pstat *p);
/* Every process /proc shows but the caller, in no order: how many, in
 * *out, which the caller frees. */
size_t pstat_all(struct pstat **out);

#endif
