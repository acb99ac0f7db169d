/* allowlist: the gateway's seccomp filter and its self-test (see
 * allowlist.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allowlist.h"
#include "scrule.h"
#include "xmalloc.h"

/*
 * Allowed whatever their arguments: the service loop (poll, the socket
 * calls on descriptors it has), memory, time, signals, the exit, and
 * what reading a file takes (fstat, lseek, realpath's readlink). The
 * sanitizers' runtime adds little: its reports use write, getpid and
 * tgkill, and its allocator mmap, munmap and madvise.
 */
static const char *const allowlist_calls[] = {
    "read",
    "readv",
    "pread64",
    "write",
    "writev",
    "close",
    "poll",
    "ppoll",
    "lseek",
    "fstat",
    "newfstatat",
    "statx",
    "readlink",
    "readlinkat",
    "faccessat",
    "faccessat2",
    "getdents64",
    "fcntl",
    "ioctl",
    "accept",
    "accept4",
    "connect",
    "shutdown",
    "sendto",
    "sendmsg",
    "recvfrom",
    "recvmsg",
    "getpeername",
    "getsockname",
    "setsockopt",
    "getsockopt",
    "brk",
    "munmap",
    "mremap",
    "madvise",
    "futex",
    "getrandom",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "clock_nanosleep",
    "nanosleep",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    /* A poll or sleep with a timeout that a SIGSTOP interrupted goes on
     * through this after SIGCONT (a frozen and thawed cgroup too). */
    "restart_syscall",
    "sigaltstack",
    "getpid",
    "gettid",
    "tgkill",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "uname",
    "prlimit64",
    "getrlimit",
    "sched_yield",
    "exit",
    "exit_group",
};

/* The socket families the gateway uses: berthd's socket, its clients,
 * the desktop's servers. */
static const int allowlist_families[] = {AF_UNIX, AF_INET, AF_INET6};

/* The calls allowed only with some arguments. */
static int
allowlist_args_add(scmp_filter_ctx sc, char **cause)
{
	/* Opening for reading only: any of these bits writes, creates or
	 * truncates (O_TMPFILE needs O_WRONLY or O_RDWR). */
	const scmp_datum_t wr = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC;
	struct scmp_arg_cmp c;

	c = scrule_cmp(2, SCMP_CMP_MASKED_EQ, wr, 0);
	if (scrule_add(sc, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, &c, "openat",
	        cause) < 0)
		return -1;
	c = scrule_cmp(1, SCMP_CMP_MASKED_EQ, wr, 0);
	if (scrule_add(
	        sc, SCMP_ACT_ALLOW, SCMP_SYS(open), 1, &c, "open", cause) < 0)
		return -1;
	if (scrule_add_families(sc, SCMP_ACT_ALLOW, allowlist_families,
	        sizeof allowlist_families / sizeof allowlist_families[0],
	        cause) < 0)
		return -1;
	/* No new executable memory: code an attacker brings stays data. */
	c = scrule_cmp(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
	if (scrule_add(
	        sc, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, &c, "mmap", cause) < 0 ||
	    scrule_add(sc, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1, &c,
	        "mprotect", cause) < 0)
		return -1;
	return 0;
}

int
allowlist_install(char **cause)
{
	scmp_filter_ctx sc;
	int r;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		*cause = xasprintf(
		    "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
		return -1;
	}
	if ((sc = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL) {
		*cause = xstrdup("seccomp_init failed");
		return -1;
	}
	/* A binary tree of the calls rather than a chain: every call the
	 * relays make is judged in a few comparisons, not some sixty. */
	if ((r = seccomp_attr_set(sc, SCMP_FLTATR_CTL_OPTIMIZE, 2)) < 0) {
		*cause = xasprintf("seccomp: no binary tree: %s", strerror(-r));
		goto fail;
	}
	if (scrule_add_names(sc, SCMP_ACT_ALLOW, allowlist_calls,
	        sizeof allowlist_calls / sizeof allowlist_calls[0],
	        cause) < 0 ||
	    allowlist_args_add(sc, cause) < 0)
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

/* The self-test's attempts: each runs in a child of its own, as the
 * filter kills the whole process on a call it does not allow. */
enum allowlist_try {
	ALLOWLIST_PROC1_MEM,
	ALLOWLIST_PIDFD_GETFD,
	ALLOWLIST_LD_PRELOAD,
	ALLOWLIST_TMP_FILE,
	ALLOWLIST_CLONE_NEWUSER,
	ALLOWLIST_UNSHARE,
	ALLOWLIST_AF_PACKET,
	ALLOWLIST_AF_NETLINK,
	ALLOWLIST_EXECVE,
	ALLOWLIST_PTRACE,
	ALLOWLIST_MOUNT,
	ALLOWLIST_MMAP_EXEC,
	ALLOWLIST_NATTACKS,
	/* What the gateway needs must still work. */
	ALLOWLIST_READ_FILE = ALLOWLIST_NATTACKS,
	ALLOWLIST_AF_INET,
	ALLOWLIST_AF_UNIX,
	ALLOWLIST_NTRIES,
};

static const char *const allowlist_try_names[ALLOWLIST_NTRIES] = {
    [ALLOWLIST_PROC1_MEM] = "open(/proc/1/mem, O_RDWR)",
    [ALLOWLIST_PIDFD_GETFD] = "pidfd_getfd",
    [ALLOWLIST_LD_PRELOAD] = "openat(/etc/ld.so.preload, O_CREAT)",
    [ALLOWLIST_TMP_FILE] = "open(/tmp/..., O_CREAT)",
    [ALLOWLIST_CLONE_NEWUSER] = "clone(CLONE_NEWUSER)",
    [ALLOWLIST_UNSHARE] = "unshare(CLONE_NEWUSER)",
    [ALLOWLIST_AF_PACKET] = "socket(AF_PACKET)",
    [ALLOWLIST_AF_NETLINK] = "socket(AF_NETLINK)",
    [ALLOWLIST_EXECVE] = "execve",
    [ALLOWLIST_PTRACE] = "ptrace",
    [ALLOWLIST_MOUNT] = "mount",
    [ALLOWLIST_MMAP_EXEC] = "mmap(PROT_EXEC)",
    [ALLOWLIST_READ_FILE] = "open(/proc/self/status, O_RDONLY)",
    [ALLOWLIST_AF_INET] = "socket(AF_INET)",
    [ALLOWLIST_AF_UNIX] = "socket(AF_UNIX)",
};

/* The files the self-test tries to create; removed after, should a
 * broken filter let one be made. */
#define ALLOWLIST_PRELOAD "/etc/ld.so.preload"

static void
allowlist_tmp_path(char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/berth-selftest-%ld", (long)getpid());
}

/* One attempt, in the filtered child: the call's result. pidfd is one of
 * the parent's, opened before the filter; tmp is a file to create. */
static long
allowlist_try_one(enum allowlist_try t, int pidfd, const char *tmp)
{
	char *argv[] = {(char *)"/bin/true", NULL};
	long r;

	switch (t) {
	case ALLOWLIST_PROC1_MEM: return open("/proc/1/mem", O_RDWR);
	case ALLOWLIST_PIDFD_GETFD:
		return syscall(SYS_pidfd_getfd, pidfd, STDOUT_FILENO, 0);
	case ALLOWLIST_LD_PRELOAD:
		return openat(AT_FDCWD, ALLOWLIST_PRELOAD,
		    O_WRONLY | O_CREAT | O_APPEND, 0644);
	case ALLOWLIST_TMP_FILE:
		return open(tmp, O_RDONLY | O_CREAT | O_EXCL, 0600);
	case ALLOWLIST_CLONE_NEWUSER:
		r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
		if (r == 0)
			_exit(0);
		return r;
	case ALLOWLIST_UNSHARE: return unshare(CLONE_NEWUSER);
	case ALLOWLIST_AF_PACKET: return socket(AF_PACKET, SOCK_RAW, 0);
	case ALLOWLIST_AF_NETLINK: return socket(AF_NETLINK, SOCK_RAW, 0);
	case ALLOWLIST_EXECVE: return execve(argv[0], argv, argv + 1);
	case ALLOWLIST_PTRACE: return ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	case ALLOWLIST_MOUNT:
		/* Would fail with ENOENT if it got through: a broken
		 * filter changes nothing. */
		return mount(
		    "none", "/nonexistent-berth-selftest", "tmpfs", 0, NULL);
	case ALLOWLIST_MMAP_EXEC:
		return mmap(NULL, 4096, PROT_READ | PROT_EXEC,
		           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED
		    ? -1
		    : 0;
	case ALLOWLIST_READ_FILE:
		return open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	case ALLOWLIST_AF_INET: return socket(AF_INET, SOCK_STREAM, 0);
	case ALLOWLIST_AF_UNIX: return socket(AF_UNIX, SOCK_STREAM, 0);
	default: return -1;
	}
}

/* Forks, installs the filter in the child, tries t there; prints the
 * outcome. Returns 1 if it is the one wanted: killed for an attack (the
 * filter's doing, not the kernel's refusal for want of a right), allowed
 * for a need. */
static int
allowlist_try(enum allowlist_try t)
{
	int status, err, p[2], pidfd, preload;
	char *cause, tmp[64];
	ssize_t n = -1;
	pid_t pid;
	long r;

	allowlist_tmp_path(tmp, sizeof tmp);
	preload = access(ALLOWLIST_PRELOAD, F_OK) == 0;
	if (pipe(p) != 0)
		return 0;
	fflush(stdout);
	if ((pid = fork()) == 0) {
		close(p[0]);
		pidfd = (int)syscall(SYS_pidfd_open, getppid(), 0);
		if (allowlist_install(&cause) < 0)
			_exit(2);
		r = allowlist_try_one(t, pidfd, tmp);
		err = r < 0 ? errno : 0;
		if (write(p[1], &err, sizeof err) < 0)
			_exit(3);
		_exit(0);
	}
	close(p[1]);
	if (pid > 0)
		n = read(p[0], &err, sizeof err);
	close(p[0]);
	if (pid > 0 && waitpid(pid, &status, 0) != pid)
		pid = -1;
	if (!preload)
		unlink(ALLOWLIST_PRELOAD);
	unlink(tmp);
	if (pid < 0) {
		printf("%s: cannot try (%s)\n", allowlist_try_names[t],
		    strerror(errno));
		return 0;
	}
	if (WIFSIGNALED(status)) {
		printf("%s: killed (SIG%s)\n", allowlist_try_names[t],
		    sigabbrev_np(WTERMSIG(status)) != NULL
		        ? sigabbrev_np(WTERMSIG(status))
		        : "?");
		return t < ALLOWLIST_NATTACKS && WTERMSIG(status) == SIGSYS;
	}
	if (n != sizeof err) {
		printf("%s: the child exited with status %d\n",
		    allowlist_try_names[t], WEXITSTATUS(status));
		return 0;
	}
	if (err != 0) {
		printf("%s: refused (%s)\n", allowlist_try_names[t],
		    strerror(err));
		return 0;
	}
	printf("%s: allowed\n", allowlist_try_names[t]);
	return t >= ALLOWLIST_NATTACKS;
}

int
allowlist_selftest(void)
{
	int t, ok = 1;

	for (t = 0; t < ALLOWLIST_NTRIES; t++)
		ok &= allowlist_try((enum allowlist_try)t);
	fflush(stdout);
	return ok ? 0 : 1;
}
