/* test_wsbranch: unit tests of the branch names berth hands git
 * (wsbranch.c): ordinary names taken, and each rule of git's
 * check-ref-format --branch that berth keeps (an option, "..", a
 * component empty or starting with '.' or ending with ".lock", a name
 * ending with '.' or '/', "HEAD", revision syntax, a byte outside
 * letters, digits and "-_./+", a NUL, past 255 bytes) refused. */
#include <string.h>

#include "tap.h"
#include "wsbranch.h"

static bool
ok(const char *s)
{
	return wsbranch_ok(s, strlen(s));
}

START_TEST(test_taken)
{
	static const char *const good[] = {"main", "feature/x", "task/0123abcd",
	    "a+b", "a_b", "a-b", "v1.2", "b./c", "a/b.c/d", "x.lockx", "HEADS",
	    "head", "a-", "_"};
	size_t i;

	for (i = 0; i < sizeof good / sizeof *good; i++)
		ck_assert_msg(ok(good[i]), "refused \"%s\"", good[i]);
}
END_TEST

START_TEST(test_refused)
{
	static const char *const bad[] = {"", "-x", "--force", "a..b", "..",
	    ".x", "a/.b", "a//b", "/a", "a/", "a.", "a/b.", "x.lock",
	    "a.lock/b", "a/b.lock", "HEAD", "@", "a@{1}", "a^", "a~1", "a:b",
	    "a b", "a\tb", "a*", "a?", "a[", "a\\b", "\xc3\xa9", "a\x7f", "a'b",
	    "a\"b", "$x", "a;b"};
	size_t i;

	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(!ok(bad[i]), "took \"%s\"", bad[i]);
	ck_assert(!wsbranch_ok("a\0b", 3));
}
END_TEST

START_TEST(test_length)
{
	char name[WSBRANCH_MAX + 2];

	memset(name, 'a', sizeof name);
	ck_assert(wsbranch_ok(name, WSBRANCH_MAX));
	ck_assert(!wsbranch_ok(name, WSBRANCH_MAX + 1));
	ck_assert(wsbranch_ok("x", 1));
	/* The length is the name's: what follows is not read. */
	ck_assert(wsbranch_ok("main..", 4));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("wsbranch");
	TCase *tc = tcase_create("wsbranch");

	tcase_add_test(tc, test_taken);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_length);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
