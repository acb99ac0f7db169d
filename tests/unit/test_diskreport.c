/* test_diskreport: unit tests of berth-disk's report line as berthd reads
 * it (diskreport.c): each answer read right, and every malformed line — an
 * unknown word, a missing or empty reason, a control byte, a space at
 * either end, a reason past its limit — refused whole. */
#include <string.h>

#include "diskreport.h"
#include "tap.h"

static int
parse(const char *line, struct diskreport *r)
{
	return diskreport_parse(line, strlen(line), r);
}

START_TEST(test_ok)
{
	struct diskreport r;

	ck_assert_int_eq(parse("ok loop", &r), 0);
	ck_assert(r.ok);
	ck_assert_str_eq(r.how, "loop ext4 image");
	ck_assert_int_eq(parse("ok quota", &r), 0);
	ck_assert(r.ok);
	ck_assert_str_eq(r.how, "project quota");
}
END_TEST

START_TEST(test_error)
{
	struct diskreport r;
	const char *line = "error: the workspace holds 9 bytes, more than 8";

	ck_assert_int_eq(parse(line, &r), 0);
	ck_assert(!r.ok);
	ck_assert(!r.conflict);
	ck_assert_ptr_eq(r.why, line + 7);
	ck_assert_uint_eq(r.whylen, strlen(line) - 7);
	ck_assert_int_eq(
	    parse("error: conflict: /w is bounded to 64 MiB", &r), 0);
	ck_assert(r.conflict);
	ck_assert_int_eq(strncmp(r.why, "conflict: /w", 12), 0);
	/* A reason that only mentions a conflict is not one. */
	ck_assert_int_eq(parse("error: no conflict: here", &r), 0);
	ck_assert(!r.conflict);
	ck_assert_int_eq(parse("error: conflict: ", &r), -1);
	ck_assert_int_eq(parse("error: conflict:", &r), 0);
	ck_assert(!r.conflict);
	ck_assert_int_eq(parse("error: caf\xc3\xa9 ferm\xc3\xa9", &r), 0);
}
END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {"", "ok", "ok ", "ok loop ",
	    " ok loop", "ok Loop", "ok loops", "ok quota x", "ok image",
	    "okloop", "error", "error:", "error: ", "error:  x", "error: x ",
	    "Error: x", "error x", "errors: x", "error: a\tb", "error: a\rb",
	    "error: a\x7f", "failed x", "ok loop\n"};
	struct diskreport r;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(parse(bad[i], &r) == -1, "took \"%s\"", bad[i]);
	/* A NUL inside the reason is a control byte. */
	ck_assert_int_eq(diskreport_parse("error: a\0b", 10, &r), -1);
	ck_assert_int_eq(diskreport_parse("ok loop\0", 8, &r), -1);
}
END_TEST

START_TEST(test_limits)
{
	char line[DISKREPORT_LINE_MAX + 2];
	struct diskreport r;

	memcpy(line, "error: ", 7);
	memset(line + 7, 'x', DISKREPORT_WHY_MAX + 1);
	ck_assert_int_eq(diskreport_parse(line, 7 + DISKREPORT_WHY_MAX, &r), 0);
	ck_assert_uint_eq(r.whylen, DISKREPORT_WHY_MAX);
	ck_assert_int_eq(
	    diskreport_parse(line, 7 + DISKREPORT_WHY_MAX + 1, &r), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("diskreport");
	TCase *tc = tcase_create("diskreport");

	tcase_add_test(tc, test_ok);
	tcase_add_test(tc, test_error);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_limits);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
