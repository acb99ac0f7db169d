/* child: spawning processes and reaping every child, own or orphaned.
 *
 * Spawning and reaping run on the one event loop, and a pid is registered
 * before the loop can see its SIGCHLD, so no exit status is ever lost to a
 * race between the two. Orphans re-parented to berthd are reaped too. */
#ifndef BERTH_CHILD_H
#define BERTH_CHILD_H

#include <sys/types.h>

/* Called once when a spawned child has exited; status is waitpid's. */
typedef void (*child_exit_cb)(pid_t pid, int status, void *arg);

/*
 * Forks and execs path with argv in a new session (so its process group is
 * its own), with the default signal mask and dispositions, stdin on
 * /dev/null, stdout and stderr inherited, and no other fd. Returns the pid,
 * or -1 with *cause when the fork or the exec failed (an exec failure is
 * reported here, not as an exit).
 */
pid_t child_spawn(const char *path, char *const argv[], child_exit_cb cb,
    void *arg, char **cause);
/* Reaps every child that has exited (call on SIGCHLD); runs callbacks. */
void child_reap(void);
/* Forgets the callback of pid (its owner is going away). */
void child_forget(pid_t pid);
/* How many spawned children have not been reaped yet. */
unsigned child_count(void);

/* Finds a berth program by a bare name: beside the running berthd first
 * (a build tree), then in the install's libexec directory, else the name
 * as given (left to PATH). The caller frees the result. */
char *child_berth_program(const char *name);

#endif
