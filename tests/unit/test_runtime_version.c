/* test_runtime_version: the version berthd takes from what a runtime's
 * program printed (runtime_version_parse): the first line, trimmed, cut
 * to its limit, with anything but printable ASCII made harmless, and no
 * version at all from output that has none. */
#include <stdlib.h>
#include <string.h>

#include "runtime_version.h"
#include "tap.h"

static void
expect_version(const char *out, size_t len, const char *want)
{
	char *got = runtime_version_parse(out, len);

	if (want == NULL)
		ck_assert_msg(got == NULL, "a version from \"%.*s\": \"%s\"",
		    (int)len, out, got);
	else {
		ck_assert_msg(
		    got != NULL, "no version from \"%.*s\"", (int)len, out);
		ck_assert_str_eq(got, want);
	}
	free(got);
}

#define EXPECT(lit, want) expect_version(lit, sizeof lit - 1, want)

START_TEST(test_first_line_trimmed)
{
	EXPECT("1.18.33\n", "1.18.33");
	EXPECT("0.73.1", "0.73.1");
	EXPECT("  \n\t pi 0.73.1  \r\nmore lines\n", "pi 0.73.1");
	EXPECT("v2 (build 7)\nwarning: x\n", "v2 (build 7)");
}
END_TEST

START_TEST(test_no_version)
{
	EXPECT("", NULL);
	EXPECT("\n\n  \t\r\n", NULL);
}
END_TEST

/* Bytes a hostile program prints never reach a message as they are. */
START_TEST(test_unprintable_made_harmless)
{
	EXPECT("1.0\x1b[31m\n", "1.0?[31m");
	EXPECT("v\xff\xfe"
	       "1\n",
	    "v??1");
	expect_version("a\0b\n", 4, "a?b");
	EXPECT("\x7f"
	       "9",
	    "?9");
}
END_TEST

START_TEST(test_cut_to_the_limit)
{
	char buf[RUNTIME_VERSION_OUT_MAX], *got;

	memset(buf, 'x', sizeof buf);
	got = runtime_version_parse(buf, sizeof buf);
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(strlen(got), RUNTIME_VERSION_MAX);
	free(got);
	buf[RUNTIME_VERSION_MAX - 1] = '\n';
	got = runtime_version_parse(buf, sizeof buf);
	ck_assert_uint_eq(strlen(got), RUNTIME_VERSION_MAX - 1);
	free(got);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("runtime_version");
	TCase *tc = tcase_create("runtime_version");

	tcase_add_test(tc, test_first_line_trimmed);
	tcase_add_test(tc, test_no_version);
	tcase_add_test(tc, test_unprintable_made_harmless);
	tcase_add_test(tc, test_cut_to_the_limit);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
