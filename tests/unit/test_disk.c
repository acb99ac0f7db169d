/* test_disk: disk.c over the real berth-disk, as root, in a mount
 * namespace of the test's own (the mounts and their loop devices go with
 * it): the answer comes from the loop, never within disk_ensure; a bound
 * workspace's status is its mount's; the same size again is answered from
 * the records without a helper; ensures of one dir run in the order
 * asked; a smaller size is a conflict; a failure says why and leaves no
 * status; shutdown unmounts. Not root or no loop devices: a TAP skip. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "disk.h"
#include "scratch.h"
#include "tap.h"
#include "xmalloc.h"

#define MIB (1ull << 20)

struct answer {
	int calls, rc, order;
	char why[1100];
};

static struct event_base *t_base;
static struct event *t_sigchld;
static char *t_root, *t_ws;
static int t_answers;

static void
t_sigchld_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	child_reap();
}

static void
t_done(int rc, const char *why, void *arg)
{
	struct answer *a = arg;

	a->calls++;
	a->rc = rc;
	a->order = ++t_answers;
	snprintf(a->why, sizeof a->why, "%s", why != NULL ? why : "");
}

static void
t_setup(void)
{
	char *state;

	t_root = scratch_make("test_disk");
	state = xasprintf("%s/state", t_root);
	t_ws = xasprintf("%s/ws", t_root);
	ck_assert_int_eq(mkdir(state, 0700), 0);
	ck_assert_int_eq(mkdir(t_ws, 0755), 0);
	ck_assert_ptr_nonnull(t_base = event_base_new());
	t_sigchld = evsignal_new(t_base, SIGCHLD, t_sigchld_cb, NULL);
	evsignal_add(t_sigchld, NULL);
	disk_setup(t_base, state);
	free(state);
	t_answers = 0;
}

static void
t_teardown(void)
{
	disk_shutdown();
	event_free(t_sigchld);
	event_base_free(t_base);
	free(t_ws);
	scratch_remove(t_root);
}

/* Runs the loop until a has its answer (bounded: a minute). */
static void
t_wait(struct answer *a)
{
	struct timeval tick = {0, 100000};
	int i;

	for (i = 0; i < 600 && a->calls == 0; i++) {
		event_base_loopexit(t_base, &tick);
		event_base_dispatch(t_base);
	}
	ck_assert_msg(a->calls == 1, "no answer within a minute");
}

static bool
t_mounted(const char *dir)
{
	struct stat a, b;
	char *parent = xasprintf("%s/..", dir);
	bool m =
	    stat(dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;

	free(parent);
	return m;
}

START_TEST(test_bound_later)
{
	struct answer a = {0};
	const char *how = NULL;
	uint64_t used = 0, size = 0;

	ck_assert(!disk_status(t_ws, &how, &used, &size));
	disk_ensure(t_ws, 32 * MIB, 65534, 65534, t_done, &a);
	ck_assert_int_eq(a.calls, 0);
	t_wait(&a);
	ck_assert_msg(a.rc == 0, "%s", a.why);
	ck_assert(t_mounted(t_ws));
	ck_assert(disk_status(t_ws, &how, &used, &size));
	ck_assert_str_eq(how, "loop ext4 image");
	ck_assert_msg(size > 16 * MIB && size <= 32 * MIB, "size %llu",
	    (unsigned long long)size);
	ck_assert(used < size);
}
END_TEST

START_TEST(test_same_size_from_records)
{
	struct answer a = {0}, b = {0};

	disk_ensure(t_ws, 32 * MIB, 65534, 65534, t_done, &a);
	t_wait(&a);
	ck_assert_msg(a.rc == 0, "%s", a.why);
	disk_ensure(t_ws, 32 * MIB, 65534, 65534, t_done, &b);
	ck_assert_int_eq(b.calls, 0);
	/* One turn: no helper to start and wait for. */
	ck_assert_int_ge(event_base_loop(t_base, EVLOOP_ONCE), 0);
	ck_assert_int_eq(b.calls, 1);
	ck_assert_int_eq(b.rc, 0);
}
END_TEST

START_TEST(test_order_and_grow)
{
	struct answer a = {0}, b = {0};
	const char *how;
	uint64_t used, size;

	disk_ensure(t_ws, 32 * MIB, 65534, 65534, t_done, &a);
	disk_ensure(t_ws, 48 * MIB, 65534, 65534, t_done, &b);
	t_wait(&a);
	t_wait(&b);
	ck_assert_msg(a.rc == 0 && b.rc == 0, "%s / %s", a.why, b.why);
	ck_assert_int_eq(a.order, 1);
	ck_assert_int_eq(b.order, 2);
	ck_assert(disk_status(t_ws, &how, &used, &size));
	ck_assert_msg(size > 32 * MIB && size <= 48 * MIB, "size %llu",
	    (unsigned long long)size);
}
END_TEST

START_TEST(test_shrink_conflict)
{
	struct answer a = {0}, b = {0};

	disk_ensure(t_ws, 32 * MIB, 65534, 65534, t_done, &a);
	t_wait(&a);
	disk_ensure(t_ws, 16 * MIB, 65534, 65534, t_done, &b);
	t_wait(&b);
	ck_assert_int_eq(b.rc, -1);
	ck_assert_msg(strncmp(b.why, "conflict: ", 10) == 0, "%s", b.why);
}
END_TEST

START_TEST(test_failure_says_why)
{
	struct answer a = {0};
	char *missing = xasprintf("%s/missing", t_root);
	const char *how;
	uint64_t used, size;

	disk_ensure(missing, 32 * MIB, 65534, 65534, t_done, &a);
	ck_assert_int_eq(a.calls, 0);
	t_wait(&a);
	ck_assert_int_eq(a.rc, -1);
	ck_assert_msg(strstr(a.why, missing) != NULL, "%s", a.why);
	ck_assert(!disk_status(missing, &how, &used, &size));
	free(missing);
}
END_TEST

START_TEST(test_shutdown_unmounts)
{
	struct answer a = {0};
	const char *how;
	uint64_t used, size;

	disk_ensure(t_ws, 32 * MIB, 65534, 65534, t_done, &a);
	t_wait(&a);
	ck_assert(t_mounted(t_ws));
	disk_shutdown();
	ck_assert(!t_mounted(t_ws));
	ck_assert(!disk_status(t_ws, &how, &used, &size));
}
END_TEST

/* berth-disk from the build tree, found on PATH as berthd would find an
 * installed one. */
static void
t_path(void)
{
	const char *build = getenv("BERTH_BUILDDIR");
	char *path;

	if (build == NULL)
		return;
	path = xasprintf("%s:%s", build, getenv("PATH") ? getenv("PATH") : "");
	setenv("PATH", path, 1);
	free(path);
}

int
main(void)
{
	Suite *s = suite_create("disk");
	TCase *tc = tcase_create("disk");

	if (geteuid() != 0 || access("/dev/loop-control", W_OK) != 0) {
		printf("1..0 # SKIP needs root and loop devices\n");
		return 0;
	}
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		printf("1..0 # SKIP no mount namespace of its own: %s\n",
		    strerror(errno));
		return 0;
	}
	t_path();
	tcase_add_checked_fixture(tc, t_setup, t_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bound_later);
	tcase_add_test(tc, test_same_size_from_records);
	tcase_add_test(tc, test_order_and_grow);
	tcase_add_test(tc, test_shrink_conflict);
	tcase_add_test(tc, test_failure_says_why);
	tcase_add_test(tc, test_shutdown_unmounts);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
