/* test_tree: a service's tree as tree.c finds it in /proc, on real
 * processes: the leader's session and group, a descendant that left the
 * session with setsid, and that escapee still after its parent died and
 * it was re-parented (because it was seen before), but never a process of
 * another session; a double-forked daemon by its run's tag alone;
 * tree_signal_new reaches only those born after the last signal. The test
 * process is a child subreaper, as berthd is, so that orphans come back to it
 * and no zombie is left behind. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "tree.h"

/* Writes the caller's pid on fd, then waits to be killed. */
static _Noreturn void
report_and_wait(int fd)
{
	pid_t self = getpid();

	if (write(fd, &self, sizeof self) != sizeof self)
		_exit(1);
	for (;;)
		pause();
}

static pid_t
read_pid(int fd)
{
	pid_t pid = 0;

	ck_assert_int_eq(read(fd, &pid, sizeof pid), sizeof pid);
	return pid;
}

static bool
has(const struct tree *t, pid_t pid)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].pid == pid)
			return true;
	return false;
}

/* Reaps pid, our child or an orphan come back to us. */
static void
reap(pid_t pid)
{
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}

/* How many a tree of leader with no history holds now. */
static size_t
count_fresh(pid_t leader)
{
	struct tree t;
	size_t n;

	tree_init(&t, leader, NULL);
	n = tree_scan(&t);
	tree_free(&t);
	return n;
}

/* leader (setsid) -> child (its session) -> escapee (setsid), each
 * writing its pid on fds[1]. */
static pid_t
spawn_service(const int fds[2], pid_t *child, pid_t *escapee)
{
	int fd = fds[1];
	pid_t leader = fork();

	ck_assert_int_ge(leader, 0);
	if (leader == 0) {
		setsid();
		if (fork() == 0) {
			if (fork() == 0) {
				setsid();
				report_and_wait(fd);
			}
			report_and_wait(fd);
		}
		report_and_wait(fd);
	}
	/* Three pids, in whatever order they come. */
	*child = *escapee = 0;
	for (int i = 0; i < 3; i++) {
		pid_t p = read_pid(fds[0]);
		if (p == leader)
			continue;
		if (getsid(p) == leader)
			*child = p;
		else
			*escapee = p;
	}
	return leader;
}

START_TEST(test_session_parentage_and_escapee)
{
	struct tree t;
	int fds[2];
	pid_t leader, child, escapee, other;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	ck_assert_int_eq(pipe(fds), 0);
	leader = spawn_service(fds, &child, &escapee);
	ck_assert_int_gt(child, 0);
	ck_assert_int_gt(escapee, 0);
	other = fork();
	if (other == 0) {
		setsid();
		report_and_wait(fds[1]);
	}
	ck_assert_int_eq(read_pid(fds[0]), other);

	tree_init(&t, leader, NULL);
	ck_assert_uint_eq(tree_scan(&t), 3);
	ck_assert(has(&t, leader) && has(&t, child) && has(&t, escapee));
	ck_assert(!has(&t, other));

	/* The escapee's parent dies: it comes back to us, in a session of its
	 * own, and only having been seen keeps it in the tree. */
	kill(child, SIGKILL);
	/* A tree with no history loses the escapee once it is re-parented
	 * (and the child is a zombie, no member): that is the moment. */
	while (count_fresh(leader) != 1)
		usleep(1000);
	ck_assert_uint_eq(tree_scan(&t), 2);
	ck_assert(has(&t, leader) && has(&t, escapee) && !has(&t, child));

	ck_assert_uint_eq(tree_signal(&t, SIGKILL, false), 2);
	reap(leader);
	reap(escapee);
	ck_assert_uint_eq(tree_scan(&t), 0);
	kill(other, SIGKILL);
	reap(other);
	tree_free(&t);
}
END_TEST

START_TEST(test_signal_new_reaches_the_late_born)
{
	struct tree t;
	int go[2], out[2];
	pid_t leader, late;
	char c = 'x';

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(out), 0);
	leader = fork();
	if (leader == 0) {
		setsid();
		signal(SIGUSR1, SIG_IGN);
		if (write(out[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		if (fork() == 0)
			report_and_wait(out[1]);
		for (;;)
			pause();
	}
	ck_assert_int_eq(read(out[0], &c, 1), 1);
	tree_init(&t, leader, NULL);
	ck_assert_uint_eq(tree_scan(&t), 1);
	ck_assert_uint_eq(tree_signal(&t, SIGUSR1, false), 1);
	ck_assert_int_eq(write(go[1], &c, 1), 1);
	late = read_pid(out[0]);
	ck_assert_uint_eq(tree_scan(&t), 2);
	ck_assert(has(&t, late));
	ck_assert_uint_eq(tree_signal_new(&t, SIGKILL), 1);
	ck_assert_uint_eq(tree_signal_new(&t, SIGKILL), 0);
	/* The leader lives on; the late one is its zombie, then an orphan
	 * come back to us once the leader is gone. */
	ck_assert_int_eq(kill(leader, 0), 0);
	kill(leader, SIGKILL);
	reap(leader);
	reap(late);
	tree_free(&t);
}
END_TEST

/* The leader forks a daemon the classic way: a child that calls setsid,
 * forks the daemon and exits. The daemon reaches us with a session and a
 * parent of no one's; only the run's tag in its environment tells it is
 * the service's. Its untagged twin is nobody's. */
static pid_t
spawn_daemon(int fd, const char *tag)
{
	char *argv[] = {"sleep", "100", NULL};
	char *env[] = {"A=1", (char *)tag, NULL};
	pid_t mid = fork(), d;

	if (mid != 0)
		return mid;
	setsid();
	d = fork();
	if (d == 0)
		execve("/bin/sleep", argv, env);
	if (write(fd, &d, sizeof d) != sizeof d)
		_exit(1);
	_exit(0);
}

START_TEST(test_run_tag_finds_a_daemon)
{
	static const char tag[] = TREE_RUN_ENV "=svc:7";
	struct tree t;
	int fds[2];
	pid_t leader, tagged, untagged;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	ck_assert_int_eq(pipe(fds), 0);
	leader = fork();
	if (leader == 0) {
		setsid();
		reap(spawn_daemon(fds[1], tag));
		reap(spawn_daemon(fds[1], TREE_RUN_ENV "=svc:70"));
		report_and_wait(fds[1]);
	}
	tagged = read_pid(fds[0]);
	untagged = read_pid(fds[0]);
	ck_assert_int_eq(read_pid(fds[0]), leader);
	/* The leader reaped both middles before it wrote its pid: the
	 * daemons are ours now, in a session of no one alive. */
	tree_init(&t, leader, tag);
	/* The exec may still be under way: until then the environment is the
	 * test's own. */
	while (tree_scan(&t) != 2)
		usleep(1000);
	ck_assert(has(&t, leader) && has(&t, tagged) && !has(&t, untagged));
	ck_assert_uint_eq(tree_signal(&t, SIGKILL, false), 2);
	reap(leader);
	reap(tagged);
	kill(untagged, SIGKILL);
	reap(untagged);
	tree_free(&t);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("tree");
	TCase *tc = tcase_create("tree");

	tcase_add_test(tc, test_session_parentage_and_escapee);
	tcase_add_test(tc, test_signal_new_reaches_the_late_born);
	tcase_add_test(tc, test_run_tag_finds_a_daemon);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
