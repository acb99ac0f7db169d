/* gw_seccomp: the gateway's pledge. A seccomp filter, installed once the
 * listening socket exists and the token is read, makes the system calls
 * that would turn a compromised gateway into a foothold fail with EPERM. */
#ifndef BERTH_GW_SECCOMP_H
#define BERTH_GW_SECCOMP_H

/* Sets no_new_privs and loads the filter into this process (and every
 * thread and child it makes afterwards). Returns 0, or -1 with *cause. */
int gw_seccomp_install(char **cause);
/* Installs the filter, then tries execve, ptrace and mount and prints
 * one line per call. Returns the exit status: 0 only if every one was
 * refused with EPERM. */
int gw_seccomp_selftest(void);

#endif
