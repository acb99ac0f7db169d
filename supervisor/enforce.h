/* enforce: a target's limits (limit.h) held by the strongest mechanism
 * the kernel gives — the target's own cgroup, else rlimits — and
 * reported as held: a limit is said to be enforced only once its value
 * was written and read back, or is set in the child before exec.
 *
 * Every target, limited or not, gets a cgroup of its own where the kernel
 * has one, so that a kill or a freeze reaches all of its processes, those
 * that called setsid or forked twice included.
 *
 * Ownership: a struct enforce is embedded in its owner (a command, a
 * terminal session, a runtime) and released with enforce_close; it owns
 * its cgroup (cgroup.h), whose directories may outlive it while a process
 * remains in them (cgroup_sweep). */
#ifndef BERTH_ENFORCE_H
#define BERTH_ENFORCE_H

#include <event2/event.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "child.h"
#include "limit.h"

#define ENFORCE_HOW_MAX 160
#define ENFORCE_NAME_MAX 96

/* Reads the kernel's offer once (cgroup.h) and logs it; base is where
 * limits.oom_kill is watched from. cgroups false: as if the kernel had
 * none ([berthd] cgroups = off). tag: a word unique to this berthd. */
void enforce_setup(struct event_base *base, bool cgroups, const char *tag);
/* Call when orphans were reaped: removes the groups they left. */
void enforce_sweep(void);
/* At berthd's exit: ends what is left in every target's group. */
void enforce_shutdown(void);

/* How one limit is held. */
struct enforce_held {
	bool enforced;
	char how[ENFORCE_HOW_MAX]; /* the mechanism, or "unavailable: why" */
};

struct enforce {
	char name[ENFORCE_NAME_MAX]; /* "proc/ID", "pty/ID", "runtime/NAME" */
	bool open;
	struct limit_set want;
	struct enforce_held held[LIMIT_NKEYS];
	struct cgroup *cg;           /* NULL: none, or closed */
	struct enforce_round *round; /* a kill's rounds under way, or NULL */
	const char *versions; /* cgroup_versions of cg, kept after it went */
	/* Set in the child before exec: the fallbacks and open_files. */
	struct child_rlimit rl[CHILD_MAX_RLIMITS];
	size_t nrl;
	struct event *oom_ev, *oom_recheck;
	unsigned oom_rechecks; /* looks since the last wake */
	uint64_t oom_kills;
	bool frozen; /* asked; enforce_frozen says whether it settled */
	/* The figures when the cgroup went, for a later report. */
	bool has_last;
	struct cgroup_usage last;
};

/*
 * Prepares e for a target about to be spawned: its cgroup (named after
 * kind and id) with each asked limit written, else the rlimit that does
 * what it can, else the reason it is not held. as_root: the target runs
 * as root, which RLIMIT_NPROC does not bind; uid: whom it counts
 * otherwise. The disk limit is the caller's (disk.h): enforce_disk.
 */
void enforce_open(struct enforce *e, const char *kind, const char *id,
    const struct limit_set *want, bool as_root, uid_t uid);
/* Fills spec's cgroup joins and rlimits (before child_spawn). */
void enforce_spec(struct enforce *e, struct child_spec *spec);
/* After the spawn, whether it worked or not. */
void enforce_spawned(struct enforce *e);
/* Records how the disk limit is held (the caller's, disk.h). */
void enforce_disk(struct enforce *e, bool enforced, const char *how);
/* SIGKILL to every process of e's cgroup: at once by v2 cgroup.kill, else
 * by rounds (cgroup_kill) on a timer until the group is empty, never
 * waiting in the loop (enforce_populated says when it is). false: e has
 * no cgroup that can; the caller falls back to its process group or
 * tree. */
bool enforce_kill(struct enforce *e);
/* Freezes or thaws e's cgroup, not waiting for the freeze to settle;
 * 0, or -1 with why (static). */
int enforce_freeze(struct enforce *e, bool frozen, const char **why);
/* Whether e was frozen and every process of it is, as the kernel says. */
bool enforce_frozen(const struct enforce *e);
/* Whether e's own cgroup counted an OOM kill: 1, 0, or -1 when it cannot
 * tell (no memory controller of its own). */
int enforce_oom_killed(struct enforce *e);
/* Whether a process is still in e's cgroup; false without one. */
bool enforce_populated(const struct enforce *e);
/* The target is done: its figures are kept, its cgroup removed (or left
 * to the sweep while a process remains). Idempotent. */
void enforce_close(struct enforce *e);

/* Packs e's report, a map: cgroup, frozen, limits, usage, oom_kills.
 * disk: the bounded directory whose usage to read, or NULL. */
void enforce_pack(
    msgpack_packer *pk, const struct enforce *e, const char *disk);
/* The same keys into a map the caller packs (ENFORCE_PACK_KEYS of them). */
#define ENFORCE_PACK_KEYS 5
void enforce_pack_keys(
    msgpack_packer *pk, const struct enforce *e, const char *disk);

#endif
