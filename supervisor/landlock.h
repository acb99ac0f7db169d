/* landlock: Landlock's IPC scopes for a child about to exec.
 *
 * A process in a domain scoped for abstract Unix sockets (Landlock ABI 6,
 * Linux 6.12) cannot connect to an abstract socket bound by a process
 * outside its domain: connect fails with EPERM. X clients need it: libxcb
 * tries the display's abstract name before its socket file, and any user
 * may bind an abstract name the X server does not hold; scoped, a client
 * reaches no such impostor (libxcb gives up on EPERM rather than falling
 * back), while with nobody on the name it falls back to the file, which
 * /tmp/.X11-unix's ownership protects.
 *
 * The system's <linux/landlock.h> may predate the scope, so the little of
 * the ABI used here is spelled out in landlock.c. */
#ifndef BERTH_LANDLOCK_H
#define BERTH_LANDLOCK_H

/* The running kernel's Landlock ABI version, 0 if it has none (or it is
 * off). Asked once, then remembered. */
int landlock_abi(void);

/* The first ABI version with the abstract Unix socket scope. */
#define LANDLOCK_ABI_SCOPE 6

/* Puts the calling process (and all it will start) in a new domain that
 * handles no file or network access and scopes abstract Unix sockets.
 * Without CAP_SYS_ADMIN the kernel demands no_new_privs first, which is
 * then set. Only system calls: safe between fork and exec. Returns 0, or
 * -1 with errno. */
int landlock_scope_abstract_unix(void);

#endif
