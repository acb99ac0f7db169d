/* test_wsreport: unit tests of berth-workspace's report lines as berthd
 * reads them (wsreport.c): each kind read right, and every malformed line
 * — a field missing or extra, a number out of range or with a sign or
 * leading zero, a control byte, a space that ends the line, a text past
 * its limit, an unknown word — refused whole. */
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "wsreport.h"

static int
parse(const char *line, struct wsreport *r)
{
	return wsreport_parse(line, strlen(line), r);
}

START_TEST(test_progress)
{
	struct wsreport r;

	ck_assert_int_eq(parse("progress receiving 450 1000 1258291", &r), 0);
	ck_assert_int_eq(r.kind, WSREPORT_PROGRESS);
	ck_assert_str_eq(r.phase, "receiving");
	ck_assert_uint_eq(r.objects, 450);
	ck_assert_uint_eq(r.total, 1000);
	ck_assert_uint_eq(r.bytes, 1258291);
	ck_assert_int_eq(parse("progress checkout 0 0 0", &r), 0);
	ck_assert_str_eq(r.phase, "checkout");
	ck_assert_int_eq(
	    parse("progress counting 9223372036854775807 1 0", &r), 0);
	ck_assert_uint_eq(r.objects, 9223372036854775807ull);
}
END_TEST

START_TEST(test_progress_malformed)
{
	static const char *const bad[] = {"progress", "progress receiving",
	    "progress receiving 1 2", "progress receiving 1 2 3 4",
	    "progress receiving 1 2 3 ", "progress downloading 1 2 3",
	    "progress receiving -1 2 3", "progress receiving +1 2 3",
	    "progress receiving 01 2 3", "progress receiving 1x 2 3",
	    "progress receiving 1  2 3",
	    "progress receiving 9223372036854775808 1 1",
	    "progress receiving 99999999999999999999 1 1",
	    "progress  receiving 1 2 3", " progress receiving 1 2 3",
	    "Progress receiving 1 2 3"};
	struct wsreport r;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(parse(bad[i], &r) == -1, "took \"%s\"", bad[i]);
}
END_TEST

START_TEST(test_dirty_and_conflict)
{
	struct wsreport r;

	ck_assert_int_eq(parse("dirty new file.txt", &r), 0);
	ck_assert_int_eq(r.kind, WSREPORT_DIRTY);
	ck_assert_uint_eq(r.textlen, 12);
	ck_assert_int_eq(memcmp(r.text, "new file.txt", 12), 0);
	ck_assert_int_eq(parse("conflict dirty 2", &r), 0);
	ck_assert_int_eq(r.conflict, WSREPORT_CONFLICT_DIRTY);
	ck_assert_uint_eq(r.count, 2);
	ck_assert_int_eq(parse("conflict origin", &r), 0);
	ck_assert_int_eq(r.conflict, WSREPORT_CONFLICT_ORIGIN);
	ck_assert_int_eq(parse("conflict notrepo", &r), 0);
	ck_assert_int_eq(r.conflict, WSREPORT_CONFLICT_NOTREPO);
	ck_assert_int_eq(parse("dirty", &r), -1);
	ck_assert_int_eq(parse("dirty ", &r), -1);
	ck_assert_int_eq(parse("dirty a\tb", &r), -1);
	ck_assert_int_eq(parse("dirty a\x7f", &r), -1);
	ck_assert_int_eq(parse("conflict dirty 0", &r), -1);
	ck_assert_int_eq(parse("conflict dirty", &r), -1);
	ck_assert_int_eq(parse("conflict origin x", &r), -1);
	ck_assert_int_eq(parse("conflict other", &r), -1);
	ck_assert_int_eq(parse("conflict", &r), -1);
}
END_TEST

START_TEST(test_failed_and_done)
{
	const char *commit = "0123456789abcdef0123456789abcdef01234567";
	char line[128];
	struct wsreport r;

	ck_assert_int_eq(
	    parse("failed fatal: Authentication failed for 'x'", &r), 0);
	ck_assert_int_eq(r.kind, WSREPORT_FAILED);
	ck_assert_uint_eq(r.textlen, 36);
	snprintf(line, sizeof line, "done %s 1 feature/x", commit);
	ck_assert_int_eq(parse(line, &r), 0);
	ck_assert_int_eq(r.kind, WSREPORT_DONE);
	ck_assert_str_eq(r.commit, commit);
	ck_assert(r.cloned);
	ck_assert_uint_eq(r.textlen, 9);
	snprintf(line, sizeof line, "done %s 0 main", commit);
	ck_assert_int_eq(parse(line, &r), 0);
	ck_assert(!r.cloned);
	snprintf(line, sizeof line, "done %s 2 main", commit);
	ck_assert_int_eq(parse(line, &r), -1);
	snprintf(line, sizeof line, "done %s 1 two words", commit);
	ck_assert_int_eq(parse(line, &r), -1);
	snprintf(line, sizeof line, "done %s 1", commit);
	ck_assert_int_eq(parse(line, &r), -1);
	ck_assert_int_eq(
	    parse("done 0123456789ABCDEF0123456789abcdef01234567 1 m", &r), -1);
	ck_assert_int_eq(parse("done 0123 1 main", &r), -1);
	ck_assert_int_eq(parse("failed", &r), -1);
	ck_assert_int_eq(parse("failed \x1b[31mred", &r), -1);
	ck_assert_int_eq(parse("", &r), -1);
	ck_assert_int_eq(parse("hello world", &r), -1);
}
END_TEST

START_TEST(test_limits)
{
	static char line[WSREPORT_LINE_MAX + 2];
	struct wsreport r;

	memcpy(line, "dirty ", 6);
	memset(line + 6, 'a', WSREPORT_PATH_MAX);
	ck_assert_int_eq(wsreport_parse(line, 6 + WSREPORT_PATH_MAX, &r), 0);
	memset(line + 6, 'a', WSREPORT_PATH_MAX + 1);
	ck_assert_int_eq(
	    wsreport_parse(line, 6 + WSREPORT_PATH_MAX + 1, &r), -1);
	memcpy(line, "failed ", 7);
	memset(line + 7, 'b', WSREPORT_REASON_MAX);
	ck_assert_int_eq(wsreport_parse(line, 7 + WSREPORT_REASON_MAX, &r), 0);
	ck_assert_int_eq(
	    wsreport_parse(line, 7 + WSREPORT_REASON_MAX + 1, &r), -1);
	memset(line, 'c', sizeof line);
	ck_assert_int_eq(wsreport_parse(line, WSREPORT_LINE_MAX + 1, &r), -1);
	/* A NUL inside a text is a control byte. */
	ck_assert_int_eq(wsreport_parse("dirty a\0b", 9, &r), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("wsreport");
	TCase *tc = tcase_create("wsreport");

	tcase_add_test(tc, test_progress);
	tcase_add_test(tc, test_progress_malformed);
	tcase_add_test(tc, test_dirty_and_conflict);
	tcase_add_test(tc, test_failed_and_done);
	tcase_add_test(tc, test_limits);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
