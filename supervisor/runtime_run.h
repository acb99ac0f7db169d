/* runtime_run: one agent runtime's instance — its process started from
 * what runtime.start asked for, the server's readiness probe, its exit,
 * the restarts its policy calls for and its stop — for runtime.c, which
 * owns the catalog and the ops.
 *
 * Ownership: runtime.c owns every struct runtime_run for berthd's life;
 * each owns its probe, timers, stop waiters and the request's env. */
#ifndef BERTH_RUNTIME_RUN_H
#define BERTH_RUNTIME_RUN_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backoff.h"
#include "config.h"
#include "enforce.h"
#include "limit.h"
#include "proc.h"
#include "pty.h"
#include "readiness.h"
#include "runtime_version.h"
#include "server.h"
#include "tree.h"

#define RUNTIME_RUN_PASSWORD_BYTES 16

enum runtime_run_mode {
	RUNTIME_RUN_TUI,
	RUNTIME_RUN_SERVER,
	RUNTIME_RUN_RPC,
	RUNTIME_RUN_NMODES
};

enum runtime_run_state {
	RUNTIME_RUN_STOPPED, /* never started */
	RUNTIME_RUN_STARTING,
	RUNTIME_RUN_READY,
	RUNTIME_RUN_UNREADY,    /* a ready server's port stopped answering */
	RUNTIME_RUN_RESTARTING, /* exited; started again after a backoff */
	RUNTIME_RUN_EXITED,
	RUNTIME_RUN_FAILED, /* a server that did not answer in time: stopped */
};

#define RUNTIME_RUN_REASON_MAX 256

/* A request answered later (runtime.list, runtime.stop): by serial, since
 * the connection may be gone by then. */
struct runtime_run_waiter {
	uint64_t serial, id;
	struct runtime_run_waiter *next;
};

struct runtime_run {
	const struct config_runtime *cfg;
	struct runtime_version ver;
	enum runtime_run_state state;
	bool stopping;
	/* What runtime.start asked for, kept for the restarts. */
	enum runtime_run_mode mode;
	char workspace[4096];
	char **req_env; /* KEY=VALUE */
	bool resume;
	unsigned cols, rows, port;
	char password[2 * RUNTIME_RUN_PASSWORD_BYTES + 1]; /* "" if none */
	/* The instance. */
	pid_t pid;
	/* Its processes, the leader's session and group and their
	 * descendants: what a stop ends, and whose a server's port must be. */
	struct tree tree;
	/* The catalog's limits with the request's over them, and how they
	 * are held: one cgroup for every instance from runtime.start to its
	 * end, so that a restart finds what the last one left. */
	struct limit_set limits;
	struct enforce lim;
	bool disk_enforced;
	char disk_how[ENFORCE_HOW_MAX];
	bool paused;
	bool preparing; /* runtime.start waits for the workspace's disk */
	char pty[PTY_ID_LEN + 1], proc[PROC_ID_LEN + 1];
	uint64_t started, started_mono, ready_ms;
	bool alive;           /* the process is there: spawned, not reaped */
	bool was_ready;       /* this instance */
	bool failed;          /* this instance missed its readiness deadline */
	uint64_t ready_since; /* monotonic ms, while ready; else 0 */
	char reason[RUNTIME_RUN_REASON_MAX]; /* why unready or failed */
	bool has_exit;
	int status;
	unsigned restarts;
	struct backoff backoff;
	struct config_service check; /* a server's probe, while it runs */
	struct readiness *probe;
	bool probe_ok; /* the probe passes: ready once the port is its own */
	struct event *restart_timer, *kill_timer, *deadline_timer;
	struct event *claim_timer;
	struct runtime_run_waiter *stop_waiters;
	/* runtime.pause's answers, once the freeze settles or the bound is
	 * past (settle_deadline, monotonic ms). */
	struct runtime_run_waiter *pause_waiters;
	struct event *settle_timer;
	uint64_t settle_deadline;
};

/* base and conf (for the probes) outlive every instance; exited is told
 * after any instance's exit has been handled. */
void runtime_run_setup(
    struct event_base *base, const struct config *conf, void (*exited)(void));
/* A runtime that has not started, for cfg. */
void runtime_run_init(struct runtime_run *rt, const struct config_runtime *cfg);
/* Frees what rt holds (not its processes: pty's and proc's). */
void runtime_run_free(struct runtime_run *rt);

/* Starts rt's process as rt says (mode, workspace, env, ...). Returns 0,
 * or -1 with *cause (the program missing or not starting). */
int runtime_run_spawn(struct runtime_run *rt, char **cause);
/* runtime.stop of rt: answered on c once it has exited. */
void runtime_run_stop(
    struct runtime_run *rt, struct server_conn *c, const struct proto_msg *m);
/* Ends what an earlier runtime.start left in rt's group and forgets its
 * limits, so that a new start's apply. */
void runtime_run_fresh(struct runtime_run *rt);
/* Freezes (pause) or thaws rt's processes, with runtime.paused or
 * runtime.resumed. 0, or -1 with why (static) and the error code. */
int runtime_run_pause(
    struct runtime_run *rt, bool pause, const char **code, const char **why);
/* Answers runtime.pause on c {frozen}: true once every process of rt is
 * frozen, false if one is not within a bound (or rt was resumed or
 * ended meanwhile). Never waits in the loop. */
void runtime_run_pause_wait(
    struct runtime_run *rt, struct server_conn *c, const struct proto_msg *m);
/* SIGTERM to rt's process group if it runs (SIGKILL after its
 * stop_timeout_ms), and no restart after. */
void runtime_run_terminate(struct runtime_run *rt);
/* Whether rt has a process, or will have one after a backoff. */
bool runtime_run_running(const struct runtime_run *rt);
/* A free loopback port, the kernel's pick; -1 with *cause. */
int runtime_run_free_port(unsigned *port, char **cause);

/* Where a client reaches rt, in the map being packed: "pty" (tui) or
 * "proc" (rpc, server), and "port" (server): 1 key, 2 for a server. */
void runtime_run_pack_where(msgpack_packer *pk, const struct runtime_run *rt);
const char *runtime_run_mode_name(enum runtime_run_mode mode);
const char *runtime_run_state_name(enum runtime_run_state state);

void runtime_run_waiter_add(struct runtime_run_waiter **list,
    struct server_conn *c, const struct proto_msg *m);
void runtime_run_waiters_free(struct runtime_run_waiter **list);

#endif
