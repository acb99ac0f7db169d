/* tree: the processes of a service, as far as the kernel tells without a
 * cgroup.
 *
 * A service's leader starts in a session of its own, so its session and
 * its process group both carry the leader's pid. The tree is every process
 * in that session or group, every descendant of one by parentage (which
 * finds those that called setsid while their parent lives), and every
 * process found so before, even once it has been re-parented to berthd
 * (each kept with its start time, so that a reused pid is never taken for
 * it). A daemon that forks twice and calls setsid in between (Chromium's
 * crash handler does) reaches berthd with neither a session nor a parent
 * of the service's: berthd tags each run's environment with
 * BERTH_SERVICE_RUN=NAME:SERIAL (TREE_RUN_ENV), and a process re-parented
 * to berthd whose environment holds its run's tag is of the tree. What it
 * cannot tell: such an orphan that also dropped the tag, and was never
 * seen before; berthd's final sweep ends those. Where cgroups can be had,
 * the cgroup answers the same question exactly; this is the one function
 * that would change.
 *
 * Ownership: a struct tree is the caller's; tree_free releases its table. */
#ifndef BERTH_TREE_H
#define BERTH_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tree_member {
	pid_t pid;
	unsigned long long start; /* clock ticks after boot (proc(5)) */
	bool signalled;           /* by tree_signal or tree_signal_new */
};

/* The environment variable that tags a run of a service. */
#define TREE_RUN_ENV "BERTH_SERVICE_RUN"
#define TREE_RUN_MAX 128

struct tree {
	pid_t leader;
	char run[TREE_RUN_MAX]; /* "BERTH_SERVICE_RUN=NAME:SERIAL", or "" */
	unsigned long long leader_start; /* 0: not known */
	struct tree_member *v;
	size_t n;
};

/* Starts a tree for a leader just spawned (its start time is read now);
 * run is the tag in its environment (TREE_RUN_ENV=...), or NULL. */
void tree_init(struct tree *t, pid_t leader, const char *run);
/* Scans /proc: adds every process of the tree, drops those gone. Returns
 * how many are alive (the leader counts while it lives). */
size_t tree_scan(struct tree *t);
/* Sends sig to every member scanned last, but to those in the leader's
 * process group when skip_group (the caller signalled the group itself,
 * so they count as signalled too). Returns how many it reached. */
size_t tree_signal(struct tree *t, int sig, bool skip_group);
/* Sends sig to the members scanned last that no tree_signal reached: those
 * born after it. Returns how many. */
size_t tree_signal_new(struct tree *t, int sig);
void tree_free(struct tree *t);

#endif
