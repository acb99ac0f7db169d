/* denylist: berth-desktop's seccomp filter. Default allow, EPERM for a
 * fixed list of calls such a program never makes: a new program, another
 * process's memory, mounts and namespaces, the kernel's knobs. An allow
 * list would be tighter but breaks on every libc, Xlib or FFmpeg update;
 * the gateway, whose calls are few, has one (allowlist.h). */
#ifndef BERTH_DENYLIST_H
#define BERTH_DENYLIST_H

#include <stdbool.h>

/* Sets no_new_privs and loads the filter into this process (and every
 * thread it makes afterwards). Unless inet, socket() of the IP, packet and
 * netlink families fails too: only Unix sockets are left. Returns 0, or
 * -1 with *cause (the caller frees it). */
int denylist_install(bool inet, char **cause);
/* After denylist_install: tries execve, ptrace, mount and (unless inet)
 * an IPv4 socket, printing one line each. Returns 0 only if every one
 * was refused with EPERM. */
int denylist_selftest(bool inet);

#endif
