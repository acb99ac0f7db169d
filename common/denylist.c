/* denylist: the seccomp filter of berth's confined programs (see
 * denylist.h). */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <unistd.h>

#include "denylist.h"
#include "scrule.h"
#include "xmalloc.h"

/* What a confined program never does. Each would let an attacker who owns
 * the process run code elsewhere, read or steer other processes, change
 * the filesystem view or the kernel, or hide from the audit trail. */
static const char *const denylist_calls[] = {
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

/* The socket families a program without a network may not open. */
static const int denylist_families[] = {
    AF_INET, AF_INET6, AF_PACKET, AF_NETLINK};

int
denylist_install(bool inet, char **cause)
{
	scmp_filter_ctx sc;
	int r;

	/* Also what the kernel requires of an unprivileged filter; set here
	 * so that a root program gets it too. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		*cause = xasprintf(
		    "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
		return -1;
	}
	if ((sc = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		*cause = xstrdup("seccomp_init failed");
		return -1;
	}
	if (scrule_add_names(sc, SCMP_ACT_ERRNO(EPERM), denylist_calls,
	        sizeof denylist_calls / sizeof denylist_calls[0], cause) < 0 ||
	    (!inet &&
	        scrule_add_families(sc, SCMP_ACT_ERRNO(EPERM),
	            denylist_families,
	            sizeof denylist_families / sizeof denylist_families[0],
	            cause) < 0))
		goto fail;
	if ((r = seccomp_load(sc)) < 0) {
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
denylist_report(const char *name, long r, int error)
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
denylist_selftest(bool inet)
{
	char *argv[] = {(char *)"/bin/true", NULL};
	char *envp[] = {NULL};
	int ok = 1;
	long r;

	r = execve(argv[0], argv, envp);
	ok &= denylist_report("execve", r, errno);
	r = ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	ok &= denylist_report("ptrace", r, errno);
	/* A mount that would fail with EINVAL or ENOENT if it got through,
	 * so a broken filter cannot change anything. */
	r = mount("none", "/nonexistent-berth-selftest", "tmpfs", 0, NULL);
	ok &= denylist_report("mount", r, errno);
	if (!inet) {
		r = socket(AF_INET, SOCK_STREAM, 0);
		ok &= denylist_report("socket(AF_INET)", r, errno);
		if (r >= 0)
			close((int)r);
	}
	fflush(stdout);
	return ok ? 0 : 1;
}
