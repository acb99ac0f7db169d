/* test_fsopen: the resolution every file op uses (fsopen.c) refuses a
 * symlink in any component, with ELOOP, and opens what has none — both
 * through openat2 and through the component walk kernels without openat2
 * get, which is called here directly. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsopen.h"
#include "tap.h"

static char root[256];

/* root/dir/file ("data"), root/dir/sub/, root/link -> dir,
 * root/dir/flink -> file, root/dangling -> nowhere. */
static void
setup(void)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(root, sizeof root, "%s/fsopen-XXXXXX",
	    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(p, sizeof p, "%s/dir", root);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/dir/sub", root);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/dir/file", root);
	ck_assert_ptr_nonnull(f = fopen(p, "w"));
	fputs("data", f);
	fclose(f);
	snprintf(p, sizeof p, "%s/link", root);
	ck_assert_int_eq(symlink("dir", p), 0);
	snprintf(p, sizeof p, "%s/dir/flink", root);
	ck_assert_int_eq(symlink("file", p), 0);
	snprintf(p, sizeof p, "%s/dangling", root);
	ck_assert_int_eq(symlink("/nowhere", p), 0);
}

static void
teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* Opens root/rel both ways; returns the walk's fd, checking openat2's
 * agrees (both open, or both fail with the same errno). */
static int
both(const char *rel, int flags, int *err)
{
	char p[PATH_MAX];
	int a, b, ea, eb;

	snprintf(p, sizeof p, "%s/%s", root, rel);
	a = fsopen_walk(AT_FDCWD, p, flags, 0);
	ea = errno;
	b = fsopen_open(p, flags, 0, false);
	eb = errno;
	ck_assert_msg((a >= 0) == (b >= 0), "%s: walk %d, open %d", rel, a, b);
	if (a < 0)
		ck_assert_msg(
		    ea == eb, "%s: walk errno %d, open %d", rel, ea, eb);
	if (b >= 0)
		close(b);
	*err = ea;
	return a;
}

static void
expect_loop(const char *rel, int flags)
{
	int err, fd = both(rel, flags, &err);

	ck_assert_msg(
	    fd < 0 && err == ELOOP, "%s: fd %d errno %d", rel, fd, err);
}

START_TEST(test_plain_paths_open)
{
	char buf[8] = "";
	int err, fd = both("dir/file", O_RDONLY | O_CLOEXEC, &err);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof buf - 1), 4);
	ck_assert_str_eq(buf, "data");
	close(fd);
	ck_assert_int_ge(
	    fd = both("dir/sub/", O_RDONLY | O_DIRECTORY, &err), 0);
	close(fd);
	ck_assert_int_ge(fd = both("dir//sub/../file", O_RDONLY, &err), 0);
	close(fd);
	ck_assert_int_ge(
	    fd = fsopen_walk(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY, 0), 0);
	close(fd);
}
END_TEST

START_TEST(test_symlinks_refused_anywhere)
{
	expect_loop("link/file", O_RDONLY);
	expect_loop("link", O_RDONLY | O_DIRECTORY);
	expect_loop("dir/flink", O_RDONLY);
	expect_loop("dangling", O_RDONLY);
	expect_loop("link/sub/", O_RDONLY | O_DIRECTORY);
	expect_loop("dir/flink", O_WRONLY | O_CREAT);
}
END_TEST

START_TEST(test_errors_kept)
{
	int err, fd = both("dir/none", O_RDONLY, &err);

	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(err, ENOENT);
	fd = both("dir/file/x", O_RDONLY, &err);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(err, ENOTDIR);
}
END_TEST

START_TEST(test_create_and_relative)
{
	char p[PATH_MAX];
	struct stat st;
	int dfd, fd;

	snprintf(p, sizeof p, "%s/dir/new", root);
	fd = fsopen_walk(AT_FDCWD, p, O_WRONLY | O_CREAT | O_EXCL, 0640);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	close(fd);
	ck_assert_int_ge(dfd = open(root, O_PATH | O_DIRECTORY), 0);
	ck_assert_int_ge(fd = fsopen_walk(dfd, "dir/file", O_RDONLY, 0), 0);
	close(fd);
	ck_assert_int_eq(fsopen_walk(dfd, "link/file", O_RDONLY, 0), -1);
	ck_assert_int_eq(errno, ELOOP);
	close(dfd);
}
END_TEST

START_TEST(test_parent_and_opath)
{
	char p[PATH_MAX], name[NAME_MAX + 1];
	struct stat st;
	int fd;

	snprintf(p, sizeof p, "%s/dir/flink", root);
	ck_assert_int_ge(fd = fsopen_parent(p, false, name), 0);
	ck_assert_str_eq(name, "flink");
	ck_assert_int_eq(fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISLNK(st.st_mode));
	close(fd);
	ck_assert_int_ge(fd = fsopen_open(p, O_PATH | O_NOFOLLOW, 0, false), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	close(fd);
	snprintf(p, sizeof p, "%s/link/flink", root);
	ck_assert_int_eq(fsopen_parent(p, false, name), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_ge(fd = fsopen_parent(p, true, name), 0);
	close(fd);
	ck_assert_int_ge(fd = fsopen_parent("/", false, name), 0);
	ck_assert_str_eq(name, ".");
	close(fd);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("fsopen");
	TCase *tc = tcase_create("fsopen");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_plain_paths_open);
	tcase_add_test(tc, test_symlinks_refused_anywhere);
	tcase_add_test(tc, test_errors_kept);
	tcase_add_test(tc, test_create_and_relative);
	tcase_add_test(tc, test_parent_and_opath);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
