/* cgroup: a target's processes in a group of their own, limited, killed
 * and frozen as one.
 *
 * berthd keeps its targets' groups in a subtree "berth" beside its own
 * cgroup, in each hierarchy it uses: the v2 hierarchy, where one is
 * mounted, for membership, kill, freeze and CPU time; for each limit
 * (cpu, memory, pids) the v2 controller where berthd's v2 cgroup has it
 * and it can be enabled below, else that controller's v1 hierarchy, else
 * none. Without v2: the v1 freezer lists the members (killed in rounds) and
 * freezes, v1 cpuacct counts CPU time. A group is named "<tag>.<name>", tag
 * being this berthd's own word, so that several berthds sharing a host's
 * cgroups never collide. The directories are root's: a target cannot raise its
 * own limits.
 *
 * Every operation is a few bounded file operations; nothing here waits
 * for a target, but cgroup_shutdown (berthd is leaving then). */
#ifndef BERTH_CGROUP_H
#define BERTH_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cgroup_ctl { CGROUP_CPU, CGROUP_MEMORY, CGROUP_PIDS, CGROUP_NCTL };

/* Finds what the kernel offers (reads /proc/self/mountinfo and
 * /proc/self/cgroup), prepares berth's subtree "<berthd's own cgroup>/berth"
 * in each hierarchy it will use, and logs once what it found (log_info).
 * enabled false: acts as if there were none. tag: a short unique word for
 * this berthd (the first 8 hex of its boot id). What is missing is what
 * cgroup_available and the others say. */
void cgroup_setup(bool enabled, const char *tag);
/* Whether a target's group can have a membership (kill, freeze, usage) at
 * all; whether controller ctl can be limited, and by which version (1 or
 * 2; 0: not). why: a sentence when not (static storage). */
bool cgroup_available(void);
int cgroup_ctl_version(enum cgroup_ctl ctl, const char **why);
bool cgroup_can_freeze(const char **why);
/* One line saying what is used, for the log and hello-like listings. */
const char *cgroup_summary(void);

/* A target's group, across the hierarchies used. Ownership: cgroup_create
 * allocates; cgroup_destroy frees (after removing the directories, or
 * leaving them to cgroup_sweep while processes remain). */
struct cgroup;
/* Which versions g's directories are of: "v2+v1", "v2" or "v1". */
const char *cgroup_versions(const struct cgroup *g);
/* name: unique among live targets of this berthd, e.g. "proc.ab12cd34".
 * Creates "<subtree>/<tag>.<name>" in each hierarchy used. NULL with *why
 * (xasprintf, caller frees) on failure. */
struct cgroup *cgroup_create(const char *name, char **why);
/* Writes a limit and reads it back. value: cpu in millis, memory in bytes,
 * pids in processes. Returns 0 and sets *how (static string such as
 * "cgroup-v1 memory.limit_in_bytes"), or -1 with *why (xasprintf). */
int cgroup_limit(struct cgroup *g, enum cgroup_ctl ctl, uint64_t value,
    const char **how, char **why);
/* Opens the cgroup.procs files a child writes "0" to, before exec, to
 * join the group in every hierarchy (fds O_WRONLY|O_CLOEXEC, kept in g,
 * closed by cgroup_destroy or cgroup_join_close). Returns how many, fds
 * in out (at most CGROUP_JOIN_MAX). */
#define CGROUP_JOIN_MAX 6
size_t cgroup_join_fds(struct cgroup *g, int out[CGROUP_JOIN_MAX]);
void cgroup_join_close(struct cgroup *g); /* after the spawn */
/* SIGKILL to every process in g, setsid'd and double-forked ones included.
 * v2 cgroup.kill: one write, 0. Without it, one round: SIGKILL each
 * process listed (a group paused thawed after); 1 if it listed any: call
 * again after a moment, until it answers 0 (the group found empty; a
 * process forked during a round is listed by the next). -1 if g has no
 * way to (the caller falls back). */
int cgroup_kill(struct cgroup *g);
/* Freeze or thaw: the state is written, not waited for (a task freezes
 * at its next return to user space, and one in uninterruptible sleep
 * only once it wakes). 0, or -1 with *why (static). */
int cgroup_freeze(struct cgroup *g, bool frozen, const char **why);
/* Whether g was frozen and the kernel says the freeze has settled:
 * every process of g is frozen (v2 cgroup.events "frozen 1", v1
 * freezer.state FROZEN). */
bool cgroup_frozen(const struct cgroup *g);
/* Whether any process is in g (v2: until the last is through its exit;
 * v1: cgroup.procs, which drops a process as it starts to exit). */
bool cgroup_populated(struct cgroup *g);

struct cgroup_usage {
	bool has_cpu, has_memory, has_peak, has_procs;
	uint64_t cpu_usec, memory_current, memory_peak, processes;
	uint64_t oom_kills; /* 0 without a memory controller */
};
void cgroup_usage(struct cgroup *g, struct cgroup_usage *u);
/* An fd that becomes readable when the memory limit kills a process of g
 * (v1: eventfd registered through cgroup.event_control on
 * memory.oom_control; v2: inotify on memory.events), -1 if none. After it
 * fires, cgroup_oom_drain(g) empties it. Owned by g. It may also wake for
 * what is no kill (v2: any memory event, such as reaching memory.max; v1:
 * an OOM the kernel resolved, or the group's removal): a kill is an
 * oom_kills of cgroup_usage greater than the last seen. */
int cgroup_oom_fd(struct cgroup *g);
void cgroup_oom_drain(struct cgroup *g);
/* Removes g's directories if empty and frees g; if processes remain, the
 * directories are kept on a list that cgroup_sweep retries (call it when
 * orphans were reaped and at shutdown), and g is freed anyway. */
void cgroup_destroy(struct cgroup *g);
void cgroup_sweep(void);
/* At shutdown: kill everything in this berthd's part of berth's subtree
 * (the groups named with its tag) and remove it, waiting (boundedly) for
 * the rounds and the emptying. */
void cgroup_shutdown(void);

#endif
