/* gw_seccomp: the gateway's seccomp filter and its self-test. Default
 * allow, EPERM for a fixed list: the gateway needs sockets and memory,
 * never a new program, another process's memory, or the kernel's knobs. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "gw_seccomp.h"
#include "xmalloc.h"

/* What a gateway never does. Each would let an attacker who owns the
 * process run code elsewhere, read or steer other processes, change the
 * filesystem view or the kernel, or hide from the audit trail. */
static const char *const gw_seccomp_denied[] = {
    "execve",
    "execveat",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "setns",
    "unshare",
    "open_by_handle_at",
    "name_to_handle_at",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "personality",
    "keyctl",
    "add_key",
    "request_key",
    "acct",
    "quotactl",
    "settimeofday",
    "clock_settime",
};

int
gw_seccomp_install(char **cause)
{
	scmp_filter_ctx sc;
	size_t i;
	int nr, r;

	/* Also what the kernel requires of an unprivileged filter; set here
	 * so that a root gateway gets it too. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		*cause = xasprintf(
		    "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
		return -1;
	}
	sc = seccomp_init(SCMP_ACT_ALLOW);
	if (sc == NULL) {
		*cause = xstrdup("seccomp_init failed");
		return -1;
	}
	for (i = 0; i < sizeof gw_seccomp_denied / sizeof gw_seccomp_denied[0];
	     i++) {
		nr = seccomp_syscall_resolve_name(gw_seccomp_denied[i]);
		if (nr == __NR_SCMP_ERROR) {
			*cause = xasprintf("seccomp: unknown system call %s",
			    gw_seccomp_denied[i]);
			goto fail;
		}
		r = seccomp_rule_add(sc, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (r < 0) {
			*cause = xasprintf("seccomp: cannot deny %s: %s",
			    gw_seccomp_denied[i], strerror(-r));
			goto fail;
		}
	}
	r = seccomp_load(sc);
	if (r < 0) {
		*cause = xasprintf("seccomp_load: %s", strerror(-r));
		goto fail;
	}
	seccomp_release(sc);
	return 0;
fail:
	seccomp_release(sc);
	return -1;
}

/* Prints how one attempt went; returns 1 if it was refused with EPERM. */
static int
gw_seccomp_report(const char *name, long r, int error)
{
	if (r == -1 && error == EPERM) {
		printf("%s: blocked (%s)\n", name, strerror(error));
		return 1;
	}
	if (r == -1)
		printf("%s: failed otherwise (%s)\n", name, strerror(error));
	else
		printf("%s: allowed\n", name);
	return 0;
}

int
gw_seccomp_selftest(void)
{
	char *argv[] = {(char *)"/bin/true", NULL};
	char *envp[] = {NULL};
	char *cause;
	int ok = 1;
	long r;

	if (gw_seccomp_install(&cause) < 0) {
		printf("install: failed (%s)\n", cause);
		free(cause);
		return 1;
	}
	r = execve(argv[0], argv, envp);
	ok &= gw_seccomp_report("execve", r, errno);
	r = ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	ok &= gw_seccomp_report("ptrace", r, errno);
	/* A mount that would fail with EINVAL or ENOENT if it got through,
	 * so a broken filter cannot change anything. */
	r = mount("none", "/nonexistent-berth-selftest", "tmpfs", 0, NULL);
	ok &= gw_seccomp_report("mount", r, errno);
	fflush(stdout);
	return ok ? 0 : 1;
}
