/* child: spawning processes and reaping every child, own or orphaned.
 *
 * Spawning and reaping run on the one event loop, and a pid is registered
 * before the loop can see its SIGCHLD, so no exit status is ever lost to a
 * race between the two. Orphans re-parented to berthd are reaped too. */
#ifndef BERTH_CHILD_H
#define BERTH_CHILD_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

/* Called once when a spawned child has exited; status is waitpid's. */
typedef void (*child_exit_cb)(pid_t pid, int status, void *arg);

/* At most this many connections handed to one child (child_spec.hand). */
#define CHILD_MAX_HANDED 2

/* At most this many cgroup.procs files a child joins (child_spec.join). */
#define CHILD_MAX_JOIN 6
/* At most this many limits set in the child (child_spec.rl). */
#define CHILD_MAX_RLIMITS 4

/* A resource limit set in the child before exec (setrlimit(2)). */
struct child_rlimit {
	int resource;
	rlim_t value; /* both the soft and the hard limit */
};

/* An fd the child inherits as number at. */
struct child_handed {
	int fd;
	int at;
};

/* How to start a child. Everything is borrowed for the call only. */
struct child_spec {
	const char *path; /* with a '/': as is; else looked up in PATH */
	char *const *argv;
	char *const *envp; /* NULL: berthd's own environment */
	const char *cwd;   /* NULL: "/" */
	/* Enter cwd after the switch of ids: a directory the user could not
	 * enter is refused, not handed over as the working directory. */
	bool cwd_as_user;
	bool set_ids; /* switch to uid/gid/groups before exec */
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t ngroups;
	int stdout_fd;  /* -1: inherit berthd's stdout */
	bool set_stdio; /* stdin_fd and stderr_fd below apply */
	int stdin_fd;   /* -1: /dev/null */
	int stderr_fd;  /* -1: inherit berthd's stderr */
	int extra_fd;   /* -1, or an fd to hand over as extra_fd_at */
	int extra_fd_at;
	bool confine; /* no capabilities, no_new_privs, no core dump */
	/* Install the listen(2) notification filter (before the switch of
	 * ids) and hand its fd to listenwatch (listenwatch.h). */
	bool watch_listen;
	/* More fds to hand over (berthd's connections to berth-desktop);
	 * their numbers differ from extra_fd_at's and from each other. */
	struct child_handed hand[CHILD_MAX_HANDED];
	size_t nhand;
	/* Put the child in a Landlock domain that reaches no abstract Unix
	 * socket from outside it (landlock.h), before it drops its ids. */
	bool scope_abstract_unix;
	bool use_tty; /* tty_fd, a PTY slave, becomes the child's */
	int tty_fd;   /* controlling terminal and its fds 0, 1 and 2 */
	/* cgroup.procs files the child writes "0" to before anything else,
	 * so that it and all it forks are in its target's cgroup; a write
	 * that fails fails the spawn (a limit promised is never dropped). */
	int join[CHILD_MAX_JOIN];
	size_t njoin;
	/* Set before the switch of ids (raising a hard limit needs root). */
	struct child_rlimit rl[CHILD_MAX_RLIMITS];
	size_t nrl;
};

/*
 * Forks and execs in a new session (so its process group is its own),
 * with the default signal mask and dispositions, stdin on /dev/null,
 * stdout and stderr inherited unless redirected (or all three on a
 * terminal, use_tty), and no other fd but extra_fd and hand. Returns
 * the pid, or -1 with *cause when the fork, a set-up step or the exec
 * failed (reported here, with the step, not as an exit).
 */
pid_t child_spawn(
    const struct child_spec *spec, child_exit_cb cb, void *arg, char **cause);
/* The oom_score_adj every child gets before exec (berthd's own is lower,
 * and children would inherit it). */
void child_set_oom_score_adj(int adj);
/* Reaps every child that has exited (call on SIGCHLD); runs callbacks.
 * Returns false once berthd has no child left at all. */
bool child_reap(void);
/* cb is called after child_reap has reaped orphans (processes berthd
 * did not spawn): the signal that what a service left behind may be gone.
 * Up to four callbacks, called in the order given. */
void child_on_orphans(void (*cb)(void));
/* Forgets the callback of pid (its owner is going away). */
void child_forget(pid_t pid);
/* Sends SIGKILL to every process that is left: as PID 1 every process of
 * the namespace, else every child (orphans re-parent to a subreaper).
 * Returns how many were signalled (as PID 1: 1 if any, else 0). */
int child_sweep(void);

/* A child's environment: berthd's own, then each of add (KEY=VALUE) in
 * order, a later entry replacing an earlier one of the same name. The
 * caller frees it with child_strv_free. */
char **child_environ(char *const *add, size_t nadd);
/* The same on base (NULL-terminated) instead of berthd's own. */
char **child_environ_from(char *const *base, char *const *add, size_t nadd);
/* Frees a NULL-terminated vector of strings and the strings. */
void child_strv_free(char **v);

/* How an exit is told everywhere (events, state, pty.list): the keys
 * "code", or "signal" and "core". child_status_keys says how many keys
 * child_pack_status packs, for the map header around them. */
unsigned child_status_keys(int status);
void child_pack_status(msgpack_packer *pk, int status);
/* The same as a map of its own: {code} or {signal, core}. */
void child_pack_status_map(msgpack_packer *pk, int status);

/* Finds a berth program by a bare name: beside the running berthd first
 * (a build tree), then in the install's libexec directory, else the name
 * as given (left to PATH). The caller frees the result. */
char *child_berth_program(const char *name);

#endif
