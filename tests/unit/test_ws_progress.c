/* test_ws_progress: unit tests of berth-workspace's reading of git's
 * --progress lines (ws_progress.c), as git 2.x prints them on clone and
 * fetch, with and without "remote: " and byte counts. */
#include <string.h>

#include "tap.h"
#include "ws_progress.h"

static bool
parse(const char *line, struct ws_progress *p)
{
	return ws_progress_parse(line, strlen(line), p);
}

START_TEST(test_phases)
{
	struct ws_progress p;

	ck_assert(parse("remote: Counting objects:  16% (1/6)        ", &p));
	ck_assert_str_eq(p.phase, "counting");
	ck_assert_uint_eq(p.objects, 1);
	ck_assert_uint_eq(p.total, 6);
	ck_assert(parse("remote: Compressing objects: 100% (3/3), done.", &p));
	ck_assert_str_eq(p.phase, "compressing");
	ck_assert(parse("Receiving objects:  45% (450/1000), 1.20 MiB | "
	                "1.00 MiB/s",
	    &p));
	ck_assert_str_eq(p.phase, "receiving");
	ck_assert_uint_eq(p.objects, 450);
	ck_assert_uint_eq(p.total, 1000);
	ck_assert_uint_eq(p.bytes, 1258291);
	ck_assert(parse("Receiving objects: 100% (6/6), 512 bytes | 1 KiB/s, "
	                "done.",
	    &p));
	ck_assert_uint_eq(p.bytes, 512);
	ck_assert(parse("Receiving objects: 100% (6/6), 2.5 KiB", &p));
	ck_assert_uint_eq(p.bytes, 2560);
	ck_assert(parse("Resolving deltas: 100% (3/3), done.", &p));
	ck_assert_str_eq(p.phase, "resolving");
	ck_assert_uint_eq(p.bytes, 0);
	ck_assert(parse("Updating files:  50% (5/10)", &p));
	ck_assert_str_eq(p.phase, "checkout");
	ck_assert(parse("remote: Counting objects: 7", &p));
	ck_assert_uint_eq(p.objects, 7);
	ck_assert_uint_eq(p.total, 0);
}
END_TEST

START_TEST(test_not_progress)
{
	static const char *const other[] = {"Cloning into 'x'...",
	    "remote: Enumerating objects: 6, done.",
	    "remote: Total 6 (delta 0), reused 0 (delta 0), pack-reused 0",
	    "fatal: Authentication failed for 'https://h/r.git/'",
	    "Receiving objects:", "Receiving objects: x% (1/2)",
	    "Receiving objects:  5% (1/", "Receiving objects:  5% (1/2", ""};
	struct ws_progress p;
	size_t i;

	for (i = 0; i < sizeof other / sizeof *other; i++)
		ck_assert_msg(!parse(other[i], &p), "took \"%s\"", other[i]);
}
END_TEST

START_TEST(test_huge_numbers)
{
	struct ws_progress p;

	/* Saturates rather than wraps; a huge size gives no bytes. */
	ck_assert(parse("Receiving objects: 1% "
	                "(99999999999999999999999/99999999999999999999999), "
	                "99999999999 GiB",
	    &p));
	ck_assert_uint_eq(p.objects, UINT64_MAX);
	ck_assert_uint_eq(p.bytes, 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("ws_progress");
	TCase *tc = tcase_create("ws_progress");

	tcase_add_test(tc, test_phases);
	tcase_add_test(tc, test_not_progress);
	tcase_add_test(tc, test_huge_numbers);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
