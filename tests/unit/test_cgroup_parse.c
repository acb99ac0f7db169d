/* test_cgroup_parse: the kernel's cgroup lines as cgroup.c reads them:
 * a mountinfo line names its hierarchy (v2, or v1 by a controller among
 * its super options, not by a prefix of one), its root and mount point
 * unescaped; a /proc/self/cgroup line its path; a group's directory
 * takes the mount's root into account and is refused outside it; flat
 * keyed files give the key asked, not one it prefixes; numbers are
 * whole, unsigned and in range. Malformed lines are no match. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_parse.h"
#include "tap.h"
#include "xmalloc.h"

/* Parses a copy of line; returns root and point joined by '|', or NULL. */
static char *
mount(const char *line, const char *ctl)
{
	char *copy = xstrdup(line), *root, *point, *out = NULL;

	if (cgroup_parse_mount(copy, ctl, &root, &point))
		out = xasprintf("%s|%s", root, point);
	free(copy);
	return out;
}

static char *
own(const char *line, const char *ctl)
{
	char *copy = xstrdup(line), *path, *out = NULL;

	if (cgroup_parse_own(copy, ctl, &path))
		out = xstrdup(path);
	free(copy);
	return out;
}

static void
assert_str_and_free(char *got, const char *want)
{
	if (want == NULL)
		ck_assert_ptr_null(got);
	else {
		ck_assert_ptr_nonnull(got);
		ck_assert_str_eq(got, want);
	}
	free(got);
}

START_TEST(test_mountinfo)
{
	static const char v2[] = "41 31 0:38 / /sys/fs/cgroup/unified "
	                         "rw,relatime - cgroup2 cgroup2 rw\n";
	static const char cpu[] = "32 31 0:29 /lxc/a /sys/fs/cgroup/cpu\\040x "
	                          "rw,relatime shared:5 master:2 - cgroup "
	                          "cgroup rw,cpu,cpuacct\n";
	static const char acct[] = "33 31 0:30 / /sys/fs/cgroup/cpuacct "
	                           "rw - cgroup cgroup rw,cpuacct\n";

	assert_str_and_free(mount(v2, NULL), "/|/sys/fs/cgroup/unified");
	assert_str_and_free(mount(v2, "cpu"), NULL);
	assert_str_and_free(mount(cpu, "cpu"), "/lxc/a|/sys/fs/cgroup/cpu x");
	assert_str_and_free(
	    mount(cpu, "cpuacct"), "/lxc/a|/sys/fs/cgroup/cpu x");
	assert_str_and_free(mount(cpu, NULL), NULL);
	assert_str_and_free(mount(cpu, "memory"), NULL);
	/* "cpu" is a prefix of "cpuacct", not the same controller. */
	assert_str_and_free(mount(acct, "cpu"), NULL);
}
END_TEST

START_TEST(test_mountinfo_malformed)
{
	static const char *const bad[] = {
	    "",
	    "\n",
	    " - cgroup2 cgroup2 rw",
	    "41 31 0:38 / - cgroup2 cgroup2 rw",
	    "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2",
	    "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2",
	    "41 31 0:38 relative /sys/fs/cgroup/unified rw - cgroup2 x rw",
	    "41 31 0:38 / relative rw - cgroup2 x rw",
	    "41 31 0:38 / /a\\0 rw - tmpfs tmpfs rw",
	    "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2x cgroup2 rw",
	};
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_str_and_free(mount(bad[i], NULL), NULL);
	/* A truncated escape is taken as it stands. */
	assert_str_and_free(
	    mount("1 2 0:3 / /a\\04 rw - cgroup2 c rw", NULL), "/|/a\\04");
}
END_TEST

START_TEST(test_own_cgroup)
{
	static const char *const lines = "12:pids:/\n"
	                                 "4:memory:/box/3f2a\n"
	                                 "2:cpu,cpuacct:/a:b\n"
	                                 "1:name=systemd:/x\n"
	                                 "0::/init.scope\n";
	char *all = xstrdup(lines), *line, *save = NULL;
	const char *want[][3] = {
	    {"pids", "/", NULL},
	    {"memory", "/box/3f2a", NULL},
	    {"cpuacct", "/a:b", NULL},
	    {"systemd", NULL, NULL},
	    {NULL, "/init.scope", NULL},
	};
	size_t i = 0;

	for (line = strtok_r(all, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save), i++)
		assert_str_and_free(own(line, want[i][0]), want[i][1]);
	free(all);
	assert_str_and_free(own("0::/init.scope", "cpu"), NULL);
	assert_str_and_free(own("2:cpu,cpuacct:/a", NULL), NULL);
}
END_TEST

START_TEST(test_own_cgroup_malformed)
{
	static const char *const bad[] = {
	    "",
	    "0",
	    "0:",
	    "0::",
	    "0::relative",
	    "00::/x",
	    "0:cpu:/x",
	    ":/x",
	};
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_str_and_free(own(bad[i], NULL), NULL);
}
END_TEST

START_TEST(test_directory)
{
	assert_str_and_free(cgroup_parse_dir("/", "/m", "/"), "/m");
	assert_str_and_free(cgroup_parse_dir("/", "/m", "/a/b"), "/m/a/b");
	assert_str_and_free(cgroup_parse_dir("/lxc/a", "/m", "/lxc/a"), "/m");
	assert_str_and_free(
	    cgroup_parse_dir("/lxc/a", "/m", "/lxc/a/b"), "/m/b");
	assert_str_and_free(cgroup_parse_dir("/lxc/a", "/m", "/lxc/ab"), NULL);
	assert_str_and_free(cgroup_parse_dir("/lxc/a", "/m", "/other"), NULL);
}
END_TEST

START_TEST(test_keys_and_numbers)
{
	static const char oom[] = "oom_kill_disable 0\nunder_oom 0\n"
	                          "oom_kill 3\n";
	uint64_t v = 0;

	ck_assert(cgroup_parse_key(oom, "oom_kill", &v));
	ck_assert_uint_eq(v, 3);
	ck_assert(cgroup_parse_key(oom, "oom_kill_disable", &v));
	ck_assert_uint_eq(v, 0);
	ck_assert(!cgroup_parse_key(oom, "oom", &v));
	ck_assert(!cgroup_parse_key("", "oom_kill", &v));
	ck_assert(!cgroup_parse_key("oom_kill\n", "oom_kill", &v));
	ck_assert(!cgroup_parse_key("oom_kill x\n", "oom_kill", &v));
	ck_assert(cgroup_parse_key("a 1\nb 2", "b", &v));
	ck_assert_uint_eq(v, 2);

	ck_assert(cgroup_parse_u64("max\n", &v));
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert(cgroup_parse_u64("18446744073709551615", &v));
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert(cgroup_parse_u64("25000 100000\n", &v));
	ck_assert_uint_eq(v, 25000);
	ck_assert(!cgroup_parse_u64("18446744073709551616", &v));
	ck_assert(!cgroup_parse_u64("-1", &v));
	ck_assert(!cgroup_parse_u64(" 1", &v));
	ck_assert(!cgroup_parse_u64("1x", &v));
	ck_assert(!cgroup_parse_u64("maxi", &v));
	ck_assert(!cgroup_parse_u64("", &v));
}
END_TEST

START_TEST(test_word_lists)
{
	ck_assert(cgroup_parse_has("cpu memory pids\n", ' ', "pids"));
	ck_assert(cgroup_parse_has("cpu memory pids\n", ' ', "cpu"));
	ck_assert(!cgroup_parse_has("cpuset memory\n", ' ', "cpu"));
	ck_assert(!cgroup_parse_has("rw,cpuacct", ',', "cpu"));
	ck_assert(cgroup_parse_has("rw,cpuacct,cpu", ',', "cpu"));
	ck_assert(!cgroup_parse_has("rw,cpu", ',', ""));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cgroup_parse");
	TCase *tc = tcase_create("cgroup_parse");

	tcase_add_test(tc, test_mountinfo);
	tcase_add_test(tc, test_mountinfo_malformed);
	tcase_add_test(tc, test_own_cgroup);
	tcase_add_test(tc, test_own_cgroup_malformed);
	tcase_add_test(tc, test_directory);
	tcase_add_test(tc, test_keys_and_numbers);
	tcase_add_test(tc, test_word_lists);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
