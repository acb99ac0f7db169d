/* listenwatch: a seccomp user notification on listen(2) in the programs
 * berthd launches for others (proc.start, pty.open, runtimes), so that
 * port discovery (ports.h) looks the moment one of them, or anything
 * they fork, starts listening, instead of at its next poll.
 *
 * The child installs, before it drops root, a filter that lets
 * every system call through but listen, for which the kernel asks the
 * holder of the filter's notification fd; it hands that fd to berthd
 * (child.c, over its error channel). berthd answers each notification
 * at once with "continue" (the listen() then runs as if unfiltered) and
 * kicks a scan. A fd is closed only once it reports POLLHUP, when no
 * process using the filter is left: one closed before would make their
 * listen() fail with ENOSYS.
 *
 * Ownership: the watched fds are this module's; listenwatch_shutdown
 * closes them. */
#ifndef BERTH_LISTENWATCH_H
#define BERTH_LISTENWATCH_H

#include <event2/event.h>
#include <stdbool.h>

/* In a child, before exec: the filter installed, its notification fd, or
 * -1 with errno (no seccomp, or neither no_new_privs nor CAP_SYS_ADMIN).
 * Async-signal-safe. */
int listenwatch_install(void);
/* Whether a child of berthd can install the filter here: tried once, in
 * a child of its own. */
bool listenwatch_works(void);
/* Watching starts; kick is called after each listen() is let through. */
void listenwatch_init(struct event_base *base, void (*kick)(void));
/* Whether watching has started: a launch installs the filter only then,
 * since a notification fd nobody watches must not be closed either. */
bool listenwatch_on(void);
/* Watches fd (taken). */
void listenwatch_add(int fd);
void listenwatch_shutdown(void);

#endif
