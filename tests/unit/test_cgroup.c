/* test_cgroup: targets' groups on the kernel's real cgroupfs, as root.
 * Each case runs in a process of its own with a tag of its own ("t<pid>"),
 * so that groups never collide, and removes what it made.
 *
 * What is proved: setup finds the hierarchies the machine offers and says
 * so; a pids limit stops a fork; a memory limit OOM-kills a hog, counts
 * the kill and wakes the oom fd; a cpu limit is the quota the kernel
 * holds; a kill ends a grandchild that left the session; a freeze stops a
 * spinner's CPU time and a thaw lets it go on; a group's directories go
 * with it, or with the sweep once its last process is gone; with cgroups
 * off nothing is offered. The same cases run again in a mount namespace
 * without the v2 hierarchy, where the v1 freezer kills and freezes and
 * v1 cpuacct counts. Without root or a cgroupfs the whole test is a TAP
 * skip. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "tap.h"
#include "xmalloc.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

static char tag[32];

/* --- Processes. --- */

static int
wait_pid(pid_t pid)
{
	int status = 0;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void
assert_killed(pid_t pid)
{
	int status = wait_pid(pid);

	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(WTERMSIG(status), SIGKILL);
}

/* Every child and orphan left, reaped (the test is their subreaper). */
static void
reap_all(void)
{
	while (waitpid(-1, NULL, 0) > 0)
		;
}

/* Forks a child that joins g in every hierarchy, says so on a pipe, then
 * runs body (which never returns). */
static pid_t
spawn_joined(struct cgroup *g, void (*body)(int), int arg)
{
	int fds[CGROUP_JOIN_MAX], sync[2];
	size_t n = cgroup_join_fds(g, fds), i;
	char c = 'j';
	pid_t pid;

	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(pipe(sync), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		for (i = 0; i < n; i++)
			if (write(fds[i], "0", 1) != 1)
				_exit(90);
		if (write(sync[1], &c, 1) != 1)
			_exit(91);
		body(arg);
		_exit(92);
	}
	cgroup_join_close(g);
	ck_assert_int_eq(read(sync[0], &c, 1), 1);
	close(sync[0]);
	close(sync[1]);
	return pid;
}

static void
body_pause(int arg)
{
	(void)arg;
	for (;;)
		pause();
}

static void
body_spin(int arg)
{
	volatile unsigned long n = (unsigned long)arg;

	for (;;)
		n++;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Waits, at most 2 s, for g to be empty. */
static bool
emptied(struct cgroup *g)
{
	int i;

	for (i = 0; i < 2000 && cgroup_populated(g); i++)
		sleep_ms(1);
	return !cgroup_populated(g);
}

/* cgroup_kill's rounds, as berthd's timer runs them, until it finds the
 * group empty (v2 cgroup.kill: the first). */
static void
kill_all(struct cgroup *g)
{
	int i, rc = cgroup_kill(g);

	for (i = 0; i < 2000 && rc > 0; i++) {
		sleep_ms(1);
		rc = cgroup_kill(g);
	}
	ck_assert_int_eq(rc, 0);
}

/* Waits, at most 2 s, for g's freeze to settle: cgroup_freeze does not. */
static bool
settled(struct cgroup *g)
{
	int i;

	for (i = 0; i < 2000 && !cgroup_frozen(g); i++)
		sleep_ms(1);
	return cgroup_frozen(g);
}

/* --- The directories, found by walking the cgroupfs, not by asking
 * cgroup.c. --- */

static const char *seek_name, *seek_file;
static size_t seek_count;
static char seek_found[4096];

static int
seek_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char file[4200];

	(void)st;
	if (flag != FTW_D || strcmp(path + ftw->base, seek_name) != 0)
		return 0;
	if (seek_file != NULL) {
		snprintf(file, sizeof file, "%s/%s", path, seek_file);
		if (access(file, F_OK) != 0)
			return 0;
		snprintf(seek_found, sizeof seek_found, "%s", path);
	}
	seek_count++;
	return 0;
}

/* How many directories the group name has across the cgroupfs; with
 * file, the one holding that file is left in seek_found. */
static size_t
seek(const char *name, const char *file)
{
	char *dirname = xasprintf("%s.%s", tag, name);

	seek_name = dirname;
	seek_file = file;
	seek_count = 0;
	seek_found[0] = '\0';
	nftw(CGROUP_ROOT, seek_visit, 16, FTW_PHYS);
	free(dirname);
	return seek_count;
}

static bool
has_file(const char *dir, const char *file)
{
	char *path = xasprintf("%s/%s", dir, file);
	bool yes = access(path, F_OK) == 0;

	free(path);
	return yes;
}

static unsigned long long
read_ull(const char *dir, const char *file)
{
	char *path = xasprintf("%s/%s", dir, file);
	FILE *f = fopen(path, "re");
	unsigned long long v = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%llu", &v), 1);
	fclose(f);
	free(path);
	return v;
}

/* What a failed case left behind (its assertion ends its process at
 * once, without the teardown; check kills its processes): the empty
 * groups tagged with this run's pid, and berth's subtrees if nothing else
 * is in them. */
static char run_prefix[32];

static int
sweep_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	const char *base = path + ftw->base;

	(void)st;
	if (flag == FTW_DP &&
	    (strncmp(base, run_prefix, strlen(run_prefix)) == 0 ||
	        strcmp(base, "berth") == 0))
		rmdir(path);
	return 0;
}

static void
sweep_run(void)
{
	snprintf(run_prefix, sizeof run_prefix, "t%ld-", (long)getpid());
	nftw(CGROUP_ROOT, sweep_visit, 16, FTW_PHYS | FTW_DEPTH);
}

/* --- Fixtures. --- */

static void
start(bool enabled)
{
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	/* The run's pid first, so that main finds what a failed case left. */
	snprintf(tag, sizeof tag, "t%ld-%ld", (long)getppid(), (long)getpid());
	cgroup_setup(enabled, tag);
}

static void
setup_on(void)
{
	start(true);
}

static void
setup_off(void)
{
	start(false);
}

/* Unmounts every cgroup2 mount in a mount namespace of this case's own,
 * as on a machine with cgroup v1 alone. */
static void
setup_v1_only(void)
{
	FILE *f;
	char line[4096], *sep, point[4096];
	int n;

	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	f = fopen("/proc/self/mountinfo", "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof line, f) != NULL) {
		if ((sep = strstr(line, " - cgroup2 ")) == NULL)
			continue;
		n = sscanf(line, "%*s %*s %*s %*s %4095s", point);
		ck_assert_int_eq(n, 1);
		ck_assert_int_eq(umount2(point, MNT_DETACH), 0);
	}
	fclose(f);
	start(true);
}

static void
teardown(void)
{
	cgroup_shutdown();
	reap_all();
}

static struct cgroup *
create(const char *name)
{
	char *why = NULL;
	struct cgroup *g = cgroup_create(name, &why);

	if (g == NULL)
		ck_abort_msg("cgroup_create: %s", why);
	return g;
}

static void
limit(struct cgroup *g, enum cgroup_ctl ctl, uint64_t value, const char *file)
{
	const char *how = NULL;
	char *why = NULL;

	if (cgroup_limit(g, ctl, value, &how, &why) != 0)
		ck_abort_msg("cgroup_limit: %s", why);
	ck_assert_ptr_nonnull(strstr(how, file));
	ck_assert(strncmp(how, "cgroup-v1 ", 10) == 0 ||
	    strncmp(how, "cgroup-v2 ", 10) == 0);
}

/* --- Cases. --- */

/* Whether the v2 hierarchy of this machine offers ctl at its root: where
 * it does not (as here: v2 without controllers), the v1 one must be used. */
static bool
v2_offers(const char *ctl)
{
	char buf[4096] = "";
	FILE *f = fopen(CGROUP_ROOT "/unified/cgroup.controllers", "re");

	if (f == NULL)
		f = fopen(CGROUP_ROOT "/cgroup.controllers", "re");
	if (f == NULL)
		return false;
	if (fgets(buf, sizeof buf, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	return strstr(buf, ctl) != NULL;
}

START_TEST(test_setup_finds_v2_and_v1)
{
	static const char *const names[] = {"cpu", "memory", "pids"};
	const char *why = NULL, *s = cgroup_summary();
	int c;

	ck_assert(cgroup_available());
	ck_assert(cgroup_can_freeze(&why));
	ck_assert_ptr_nonnull(strstr(s, "v2 "));
	ck_assert_ptr_nonnull(strstr(s, "membership"));
	ck_assert_ptr_nonnull(strstr(s, "cgroup.kill"));
	for (c = 0; c < CGROUP_NCTL; c++) {
		ck_assert_int_eq(
		    cgroup_ctl_version(c, &why), v2_offers(names[c]) ? 2 : 1);
		ck_assert_ptr_nonnull(strstr(s, names[c]));
	}
	if (!v2_offers("cpu"))
		ck_assert_ptr_nonnull(strstr(s, "v1 "));
}
END_TEST

START_TEST(test_setup_v1_alone)
{
	const char *why = NULL, *s = cgroup_summary();
	int c;

	ck_assert(cgroup_available());
	ck_assert(cgroup_can_freeze(&why));
	ck_assert(strncmp(s, "v2 ", 3) != 0);
	ck_assert_ptr_null(strstr(s, "; v2 "));
	ck_assert_ptr_nonnull(strstr(s, "no cgroup v2"));
	ck_assert_ptr_nonnull(strstr(s, "membership, freeze"));
	ck_assert_ptr_nonnull(strstr(s, "cpu time"));
	for (c = 0; c < CGROUP_NCTL; c++)
		ck_assert_int_eq(cgroup_ctl_version(c, &why), 1);
}
END_TEST

/* A child in a group limited to 5 forks until it cannot: 4 forks succeed
 * (5 processes), the next fails with EAGAIN. */
static void
body_fork_until(int fd)
{
	int made = 0, err = 0;

	for (int i = 0; i < 10; i++) {
		pid_t p = fork();

		if (p == 0)
			body_pause(0);
		if (p < 0) {
			err = errno;
			break;
		}
		made++;
	}
	if (write(fd, &made, sizeof made) != sizeof made ||
	    write(fd, &err, sizeof err) != sizeof err)
		_exit(93);
	body_pause(0);
}

START_TEST(test_pids_limit_stops_a_fork)
{
	struct cgroup *g = create("pids");
	struct cgroup_usage u;
	int out[2], made = -1, err = -1;
	pid_t pid;

	limit(g, CGROUP_PIDS, 5, "pids.max");
	ck_assert_int_eq(pipe(out), 0);
	pid = spawn_joined(g, body_fork_until, out[1]);
	ck_assert_int_eq(read(out[0], &made, sizeof made), sizeof made);
	ck_assert_int_eq(read(out[0], &err, sizeof err), sizeof err);
	ck_assert_int_eq(made, 4);
	ck_assert_int_eq(err, EAGAIN);
	cgroup_usage(g, &u);
	ck_assert(u.has_procs);
	ck_assert_uint_eq(u.processes, 5);
	kill_all(g);
	assert_killed(pid);
	ck_assert(emptied(g));
	cgroup_destroy(g);
}
END_TEST

static void
body_hog(int arg)
{
	size_t len = (size_t)arg << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(94);
	memset(p, 1, len);
	_exit(0);
}

START_TEST(test_memory_limit_kills_a_hog)
{
	struct cgroup *g = create("mem");
	struct cgroup_usage u;
	struct pollfd pfd = {.events = POLLIN};
	pid_t pid;

	limit(g, CGROUP_MEMORY, 8 << 20, "memory.");
	pfd.fd = cgroup_oom_fd(g);
	ck_assert_int_ge(pfd.fd, 0);
	cgroup_usage(g, &u);
	ck_assert_uint_eq(u.oom_kills, 0);
	pid = spawn_joined(g, body_hog, 64);
	assert_killed(pid);
	ck_assert_int_eq(poll(&pfd, 1, 2000), 1);
	cgroup_usage(g, &u);
	ck_assert_uint_eq(u.oom_kills, 1);
	ck_assert(u.has_memory && u.has_peak);
	ck_assert_uint_le(u.memory_peak, 8 << 20);
	cgroup_oom_drain(g);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	cgroup_destroy(g);
}
END_TEST

/* A limit that is no whole number of pages holds as the kernel rounds
 * it; a raise and a cut after it hold too (v1 keeps memory and swap
 * together at or above the memory limit alone). */
START_TEST(test_memory_limit_rounds_raises_and_cuts)
{
	struct cgroup *g = create("memset");

	limit(g, CGROUP_MEMORY, (8 << 20) + 100, "memory.");
	limit(g, CGROUP_MEMORY, 64 << 20, "memory.");
	limit(g, CGROUP_MEMORY, 16 << 20, "memory.");
	if (seek("memset", "memory.limit_in_bytes") == 1) {
		ck_assert_uint_eq(
		    read_ull(seek_found, "memory.limit_in_bytes"), 16 << 20);
		if (has_file(seek_found, "memory.memsw.limit_in_bytes"))
			ck_assert_uint_eq(
			    read_ull(seek_found, "memory.memsw.limit_in_bytes"),
			    16 << 20);
	} else {
		ck_assert_uint_eq(seek("memset", "memory.max"), 1);
		ck_assert_uint_eq(read_ull(seek_found, "memory.max"), 16 << 20);
	}
	cgroup_destroy(g);
}
END_TEST

START_TEST(test_cpu_limit_is_the_quota)
{
	struct cgroup *g = create("cpu");
	char *path;
	char max[64] = "";
	FILE *f;

	limit(g, CGROUP_CPU, 250, "cpu.");
	if (seek("cpu", "cpu.cfs_quota_us") == 1 && seek_found[0] != '\0') {
		ck_assert_uint_eq(
		    read_ull(seek_found, "cpu.cfs_quota_us"), 25000);
		ck_assert_uint_eq(
		    read_ull(seek_found, "cpu.cfs_period_us"), 100000);
	} else {
		ck_assert_uint_ge(seek("cpu", "cpu.max"), 1);
		path = xasprintf("%s/cpu.max", seek_found);
		f = fopen(path, "re");
		free(path);
		ck_assert_ptr_nonnull(f);
		ck_assert_ptr_nonnull(fgets(max, sizeof max, f));
		fclose(f);
		ck_assert_str_eq(max, "25000 100000\n");
	}
	cgroup_destroy(g);
}
END_TEST

/* A joined child forks a middle that calls setsid, forks the daemon and
 * exits: the daemon is in no session or process group of the child's.
 * The child reaps the middle before it says "done" (0), so the daemon is
 * the test's (the subreaper's) by then. */
static void
body_daemonize(int fd)
{
	pid_t daemon, middle = fork(), done = 0;

	if (middle == 0) {
		setsid();
		if ((daemon = fork()) == 0)
			body_pause(0);
		if (write(fd, &daemon, sizeof daemon) != sizeof daemon)
			_exit(95);
		_exit(0);
	}
	if (waitpid(middle, NULL, 0) != middle ||
	    write(fd, &done, sizeof done) != sizeof done)
		_exit(96);
	body_pause(0);
}

START_TEST(test_kill_ends_a_setsid_grandchild)
{
	struct cgroup *g = create("kill");
	int out[2];
	pid_t pid, daemon = 0, done = -1;

	ck_assert_int_eq(pipe(out), 0);
	pid = spawn_joined(g, body_daemonize, out[1]);
	ck_assert_int_eq(read(out[0], &daemon, sizeof daemon), sizeof daemon);
	ck_assert_int_eq(read(out[0], &done, sizeof done), sizeof done);
	ck_assert_int_eq(done, 0);
	ck_assert_int_ne(getsid(daemon), getsid(pid));
	kill_all(g);
	assert_killed(pid);
	/* The daemon's parent has exited: the daemon is the test's to reap. */
	assert_killed(daemon);
	ck_assert(emptied(g));
	cgroup_destroy(g);
}
END_TEST

static uint64_t
cpu_usec(struct cgroup *g)
{
	struct cgroup_usage u;

	cgroup_usage(g, &u);
	ck_assert(u.has_cpu);
	return u.cpu_usec;
}

START_TEST(test_freeze_stops_a_spinner)
{
	struct cgroup *g = create("freeze");
	const char *why = NULL;
	uint64_t before, frozen, later, thawed;
	pid_t pid = spawn_joined(g, body_spin, 0);
	int i;

	for (i = 0; i < 2000 && cpu_usec(g) < 20000; i++)
		sleep_ms(1);
	ck_assert_uint_ge(cpu_usec(g), 20000);
	ck_assert_int_eq(cgroup_freeze(g, true, &why), 0);
	ck_assert(settled(g));
	before = cpu_usec(g);
	sleep_ms(300);
	frozen = cpu_usec(g);
	ck_assert_uint_eq(frozen, before);
	ck_assert_int_eq(cgroup_freeze(g, false, &why), 0);
	ck_assert(!cgroup_frozen(g));
	later = cpu_usec(g);
	sleep_ms(300);
	thawed = cpu_usec(g);
	ck_assert_uint_gt(thawed, later);
	kill_all(g);
	assert_killed(pid);
	cgroup_destroy(g);
}
END_TEST

/* A frozen group is killed too, and left thawed. */
START_TEST(test_kill_ends_a_frozen_group)
{
	struct cgroup *g = create("frozenkill");
	const char *why = NULL;
	pid_t pid = spawn_joined(g, body_spin, 0);

	ck_assert_int_eq(cgroup_freeze(g, true, &why), 0);
	kill_all(g);
	assert_killed(pid);
	ck_assert(!cgroup_frozen(g));
	ck_assert(emptied(g));
	cgroup_destroy(g);
}
END_TEST

START_TEST(test_destroy_removes_the_directories)
{
	struct cgroup *g = create("gone");
	int fds[CGROUP_JOIN_MAX];
	size_t n = cgroup_join_fds(g, fds);

	ck_assert_uint_gt(n, 0);
	ck_assert_uint_eq(seek("gone", NULL), n);
	cgroup_destroy(g);
	ck_assert_uint_eq(seek("gone", NULL), 0);
}
END_TEST

START_TEST(test_destroy_populated_waits_for_the_sweep)
{
	struct cgroup *g = create("left");
	pid_t pid = spawn_joined(g, body_pause, 0);
	size_t n = seek("left", NULL);

	ck_assert_uint_gt(n, 0);
	cgroup_destroy(g);
	ck_assert_uint_eq(seek("left", NULL), n);
	cgroup_sweep();
	ck_assert_uint_eq(seek("left", NULL), n);
	kill(pid, SIGKILL);
	assert_killed(pid);
	cgroup_sweep();
	ck_assert_uint_eq(seek("left", NULL), 0);
}
END_TEST

static int
remove_subtree(
    const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	if (flag == FTW_DP && strcmp(path + ftw->base, "berth") == 0)
		rmdir(path);
	return 0;
}

/* Another berthd's shutdown removes berth's subtree once it is empty:
 * a group is created all the same. */
START_TEST(test_create_after_the_subtree_went)
{
	struct cgroup *g = create("first");
	int fds[CGROUP_JOIN_MAX];
	size_t n = cgroup_join_fds(g, fds);

	cgroup_destroy(g);
	nftw(CGROUP_ROOT, remove_subtree, 16, FTW_PHYS | FTW_DEPTH);
	g = create("again");
	ck_assert_uint_eq(seek("again", NULL), n);
	cgroup_destroy(g);
}
END_TEST

START_TEST(test_shutdown_kills_and_removes)
{
	struct cgroup *g = create("shut");
	pid_t pid = spawn_joined(g, body_pause, 0);

	ck_assert_uint_gt(seek("shut", NULL), 0);
	cgroup_shutdown();
	assert_killed(pid);
	ck_assert_uint_eq(seek("shut", NULL), 0);
	/* g's directories are gone; the handle is freed alone. */
	cgroup_destroy(g);
}
END_TEST

START_TEST(test_off_offers_nothing)
{
	const char *why = NULL;
	char *err = NULL;
	int c;

	ck_assert(!cgroup_available());
	for (c = 0; c < CGROUP_NCTL; c++) {
		ck_assert_int_eq(cgroup_ctl_version(c, &why), 0);
		ck_assert_ptr_nonnull(strstr(why, "off"));
	}
	why = NULL;
	ck_assert(!cgroup_can_freeze(&why));
	ck_assert_ptr_nonnull(strstr(why, "off"));
	ck_assert_ptr_nonnull(strstr(cgroup_summary(), "off"));
	ck_assert_ptr_null(cgroup_create("x", &err));
	ck_assert_ptr_nonnull(err);
	free(err);
	ck_assert_uint_eq(seek("x", NULL), 0);
}
END_TEST

/* The cases that hold whichever hierarchies are used. */
static void
add_common(TCase *tc)
{
	tcase_add_test(tc, test_pids_limit_stops_a_fork);
	tcase_add_test(tc, test_memory_limit_kills_a_hog);
	tcase_add_test(tc, test_memory_limit_rounds_raises_and_cuts);
	tcase_add_test(tc, test_cpu_limit_is_the_quota);
	tcase_add_test(tc, test_kill_ends_a_setsid_grandchild);
	tcase_add_test(tc, test_freeze_stops_a_spinner);
	tcase_add_test(tc, test_kill_ends_a_frozen_group);
	tcase_add_test(tc, test_destroy_removes_the_directories);
	tcase_add_test(tc, test_destroy_populated_waits_for_the_sweep);
	tcase_add_test(tc, test_create_after_the_subtree_went);
	tcase_add_test(tc, test_shutdown_kills_and_removes);
}

static TCase *
tcase(const char *name, void (*setup)(void))
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	return tc;
}

/* Why the test cannot run here, or NULL. */
static const char *
cannot_run(void)
{
	if (geteuid() != 0)
		return "not root: cgroups are root's to create";
	if (access(CGROUP_ROOT "/unified/cgroup.procs", F_OK) != 0 &&
	    access(CGROUP_ROOT "/cgroup.procs", F_OK) != 0 &&
	    access(CGROUP_ROOT "/pids/cgroup.procs", F_OK) != 0)
		return "no cgroupfs mounted at " CGROUP_ROOT;
	return NULL;
}

int
main(void)
{
	Suite *s = suite_create("cgroup");
	const char *no = cannot_run();
	TCase *on, *v1, *off;
	int rc;

	if (no != NULL) {
		printf("1..0 # SKIP %s\n", no);
		return EXIT_SUCCESS;
	}
	on = tcase("cgroup", setup_on);
	tcase_add_test(on, test_setup_finds_v2_and_v1);
	add_common(on);
	v1 = tcase("cgroup v1 alone", setup_v1_only);
	tcase_add_test(v1, test_setup_v1_alone);
	add_common(v1);
	off = tcase("cgroups off", setup_off);
	tcase_add_test(off, test_off_offers_nothing);
	suite_add_tcase(s, on);
	suite_add_tcase(s, v1);
	suite_add_tcase(s, off);
	rc = tap_run(s);
	sweep_run();
	return rc;
}
