/* initwork: the programs bench/init.sh runs under each init, so that
 * berthd, tini and dumb-init face the very same work.
 *
 *   initwork storm N GO OUT
 *       Waits for a byte on the FIFO GO, then makes N orphans: N times it
 *       forks a child that forks a grandchild and exits, and reaps the
 *       child; the grandchild ends (SIGKILL by PR_SET_PDEATHSIG) as soon
 *       as its parent is gone, so PID 1 inherits it and must reap it. Then
 *       it polls /proc (the namespace's) until no grandchild is left,
 *       alive or zombie, and writes "WALL_S TAIL_S CPU_S RUN_S" to OUT:
 *       from the first fork to the last grandchild reaped, from the last
 *       fork to that, and PID 1's utime+stime (in clock ticks) and its
 *       time on a CPU (schedstat, in ns; -1 without it) over that time.
 *   initwork hup OUT
 *       Writes "r" to the FIFO OUT, then a line for each SIGHUP it is
 *       sent: the CLOCK_MONOTONIC nanoseconds at which it saw it.
 *   initwork group N IGNORE LOG READY
 *       Makes its process group N processes: itself and N-1 children.
 *       IGNORE of the children do not exit on SIGTERM; the others and the
 *       leader do. Each process that sees SIGTERM appends a byte to the
 *       file LOG ('t' if it exits, 'i' the first time if it stays).
 *       Writes "r" to the FIFO READY once every child has its handler. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The grandchildren's name, inherited from their parent: what the /proc
 * poll looks for. The storm's reaped children had it too, but are gone. */
#define INITWORK_ORPHAN "initwork-orph"

static int initwork_log_fd = -1;

static void
die(const char *what)
{
	fprintf(stderr, "initwork: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("write");
		buf += n;
		len -= (size_t)n;
	}
}

/* utime + stime of pid in seconds (proc(5) fields 14 and 15). */
static double
cpu_s(const char *pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%s/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		die(path);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The name may hold blanks and parentheses: fields count from the
	 * last ')'. */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2,
	        "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	        &st) != 2) {
		errno = EINVAL;
		die(path);
	}
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* pid's time on a CPU in seconds, -1 where the kernel does not keep it
 * (no CONFIG_SCHED_INFO). */
static double
run_s(const char *pid)
{
	unsigned long long ns;
	char path[64];
	FILE *f;
	int n;

	snprintf(path, sizeof path, "/proc/%s/schedstat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fscanf(f, "%llu", &ns);
	fclose(f);
	return n == 1 ? ns / 1e9 : -1;
}

/* Whether any process (zombies too) is named INITWORK_ORPHAN. */
static bool
orphans_left(void)
{
	char path[300], comm[64];
	struct dirent *de;
	bool found = false;
	DIR *d;
	int fd;
	ssize_t n;

	if ((d = opendir("/proc")) == NULL)
		die("/proc");
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/comm", de->d_name);
		if ((fd = open(path, O_RDONLY)) < 0)
			continue;
		n = read(fd, comm, sizeof comm - 1);
		close(fd);
		if (n > 0) {
			comm[n] = '\0';
			found = strcmp(comm, INITWORK_ORPHAN "\n") == 0;
		}
	}
	closedir(d);
	return found;
}

static void
orphan_one(void)
{
	pid_t parent, pid;

	prctl(PR_SET_NAME, INITWORK_ORPHAN);
	parent = getpid();
	if ((pid = fork()) < 0)
		die("fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* The parent may have gone before the request. */
		if (getppid() != parent)
			_exit(0);
		for (;;)
			pause();
	}
	_exit(0);
}

static int
storm(int argc, char **argv)
{
	double t0, tforked, c0, r0;
	char c, line[128];
	long i, n;
	pid_t pid;
	int fd;

	if (argc != 5)
		return 2;
	n = strtol(argv[2], NULL, 10);
	if ((fd = open(argv[3], O_RDONLY)) < 0)
		die(argv[3]);
	if (read(fd, &c, 1) != 1)
		die("read GO");
	close(fd);
	c0 = cpu_s("1");
	r0 = run_s("1");
	t0 = now_s();
	for (i = 0; i < n; i++) {
		if ((pid = fork()) < 0)
			die("fork");
		if (pid == 0)
			orphan_one();
		if (waitpid(pid, NULL, 0) != pid)
			die("waitpid");
	}
	tforked = now_s();
	while (orphans_left())
		usleep(100);
	snprintf(line, sizeof line, "%.6f %.6f %.3f %.6f\n", now_s() - t0,
	    now_s() - tforked, cpu_s("1") - c0, r0 < 0 ? -1 : run_s("1") - r0);
	if ((fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
		die(argv[4]);
	write_all(fd, line, strlen(line));
	close(fd);
	return 0;
}

static int
hup(int argc, char **argv)
{
	struct timespec ts;
	char line[64];
	sigset_t set;
	int fd, len;

	if (argc != 3)
		return 2;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((fd = open(argv[2], O_WRONLY)) < 0)
		die(argv[2]);
	write_all(fd, "r\n", 2);
	for (;;) {
		if (sigwaitinfo(&set, NULL) < 0) {
			if (errno == EINTR)
				continue;
			die("sigwaitinfo");
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		len = snprintf(line, sizeof line, "%lld\n",
		    (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
		write_all(fd, line, (size_t)len);
	}
}

static void
term_exit(int sig)
{
	(void)sig;
	(void)!write(initwork_log_fd, "t", 1);
	_exit(0);
}

/* Counted once: an init may send SIGTERM more than once. */
static void
term_stay(int sig)
{
	static volatile sig_atomic_t seen;

	(void)sig;
	if (!seen)
		(void)!write(initwork_log_fd, "i", 1);
	seen = 1;
}

static void
on_term(void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) != 0)
		die("sigaction");
}

static int
group(int argc, char **argv)
{
	long i, n, nignore;
	int ready[2], fd;
	pid_t pid;
	char c;

	if (argc != 6)
		return 2;
	n = strtol(argv[2], NULL, 10);
	nignore = strtol(argv[3], NULL, 10);
	initwork_log_fd = open(argv[4], O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (initwork_log_fd < 0)
		die(argv[4]);
	on_term(term_exit);
	if (pipe(ready) != 0)
		die("pipe");
	for (i = 1; i < n; i++) {
		if ((pid = fork()) < 0)
			die("fork");
		if (pid == 0) {
			close(ready[0]);
			if (i <= nignore)
				on_term(term_stay);
			write_all(ready[1], "", 1);
			close(ready[1]);
			for (;;)
				pause();
		}
	}
	close(ready[1]);
	for (i = 1; i < n; i++)
		if (read(ready[0], &c, 1) != 1)
			die("read ready");
	close(ready[0]);
	if ((fd = open(argv[5], O_WRONLY)) < 0)
		die(argv[5]);
	write_all(fd, "r\n", 2);
	close(fd);
	/* The children are not waited for: once the leader is gone they are
	 * PID 1's, as a real service's would be. */
	for (;;)
		pause();
}

int
main(int argc, char **argv)
{
	int rc = 2;

	if (argc >= 2 && strcmp(argv[1], "storm") == 0)
		rc = storm(argc, argv);
	else if (argc >= 2 && strcmp(argv[1], "hup") == 0)
		rc = hup(argc, argv);
	else if (argc >= 2 && strcmp(argv[1], "group") == 0)
		rc = group(argc, argv);
	if (rc == 2)
		fprintf(stderr,
		    "usage: initwork storm N GO OUT | hup OUT | "
		    "group N IGNORE LOG READY\n");
	return rc;
}
