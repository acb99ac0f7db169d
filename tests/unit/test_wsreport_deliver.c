/* test_wsreport_deliver: unit tests of berth-workspace deliver's report
 * lines as berthd reads them (wsreport_deliver_parse): each kind read
 * right, a diffstat line's leading spaces kept, and every malformed line
 * — a field missing or extra, an unknown conflict, a number with a sign
 * or leading zero or past 2^63-1, an id not 40 lowercase hex digits, a
 * flag not 0 or 1, a control byte, a text past its limit, prepare's own
 * lines — refused whole. */
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "wsreport.h"

#define C1 "0123456789abcdef0123456789abcdef01234567"
#define C2 "89abcdef0123456789abcdef0123456789abcdef"

static int
parse(const char *line, struct wsreport_deliver *r)
{
	return wsreport_deliver_parse(line, strlen(line), r);
}

START_TEST(test_kinds)
{
	struct wsreport_deliver r;

	ck_assert_int_eq(parse("delivered " C1 " " C2 " 1", &r), 0);
	ck_assert_int_eq(r.kind, WSREPORT_DELIVER_DELIVERED);
	ck_assert_str_eq(r.commit, C1);
	ck_assert_str_eq(r.base, C2);
	ck_assert(r.pushed);
	ck_assert_int_eq(parse("delivered " C1 " " C2 " 0", &r), 0);
	ck_assert(!r.pushed);
	ck_assert_int_eq(parse("stat 3 10 0", &r), 0);
	ck_assert_int_eq(r.kind, WSREPORT_DELIVER_STAT);
	ck_assert_uint_eq(r.files, 3);
	ck_assert_uint_eq(r.insertions, 10);
	ck_assert_uint_eq(r.deletions, 0);
	ck_assert_int_eq(parse("stat 1 9223372036854775807 2", &r), 0);
	ck_assert_uint_eq(r.insertions, 9223372036854775807ull);
	ck_assert_int_eq(parse("failed fatal: cannot lock ref 'x'", &r), 0);
	ck_assert_int_eq(r.kind, WSREPORT_DELIVER_FAILED);
	ck_assert_uint_eq(r.textlen, 26);
	ck_assert_int_eq(memcmp(r.text, "fatal: cannot lock ref 'x'", 26), 0);
}
END_TEST

START_TEST(test_diffstat)
{
	struct wsreport_deliver r;

	/* git's --stat lines begin with a space: it is the text's. */
	ck_assert_int_eq(parse("diffstat  src/a.c | 2 +-", &r), 0);
	ck_assert_int_eq(r.kind, WSREPORT_DELIVER_DIFFSTAT);
	ck_assert_uint_eq(r.textlen, 15);
	ck_assert_int_eq(memcmp(r.text, " src/a.c | 2 +-", 15), 0);
	ck_assert_int_eq(
	    parse("diffstat  2 files changed, 3 insertions(+)", &r), 0);
	ck_assert_int_eq(parse("diffstat", &r), -1);
	ck_assert_int_eq(parse("diffstat ", &r), -1);
	ck_assert_int_eq(parse("diffstat a\tb", &r), -1);
	ck_assert_int_eq(parse("diffstat \x1b[32m+", &r), -1);
}
END_TEST

START_TEST(test_conflicts)
{
	static const struct {
		const char *line;
		enum wsreport_deliver_conflict c;
	} good[] = {{"conflict notrepo", WSREPORT_DELIVER_NOTREPO},
	    {"conflict nohead", WSREPORT_DELIVER_NOHEAD},
	    {"conflict exists", WSREPORT_DELIVER_EXISTS},
	    {"conflict nochange", WSREPORT_DELIVER_NOCHANGE}};
	static const char *const bad[] = {"conflict", "conflict ",
	    "conflict dirty 2", "conflict origin", "conflict exists x",
	    "conflict Exists", "conflict nochange ", "conflict  exists"};
	struct wsreport_deliver r;
	size_t i;

	for (i = 0; i < sizeof good / sizeof *good; i++) {
		ck_assert_int_eq(parse(good[i].line, &r), 0);
		ck_assert_int_eq(r.kind, WSREPORT_DELIVER_CONFLICT);
		ck_assert_int_eq(r.conflict, good[i].c);
	}
	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(parse(bad[i], &r) == -1, "took \"%s\"", bad[i]);
}
END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {"", "delivered", "delivered " C1,
	    "delivered " C1 " " C2, "delivered " C1 " " C2 " 2",
	    "delivered " C1 " " C2 " 1 ", "delivered " C1 " " C2 " 1 x",
	    "delivered " C1 "0 " C2 " 1",
	    "delivered 0123456789ABCDEF0123456789abcdef01234567 " C2 " 1",
	    "delivered " C1 "  " C2 " 1", "stat", "stat 1 2", "stat 1 2 3 4",
	    "stat -1 2 3", "stat 01 2 3", "stat 1 +2 3",
	    "stat 1 2 9223372036854775808", "stat 1 2 3 ", "failed", "failed ",
	    "failed a\x7f", "done " C1 " 1 main", "progress receiving 1 2 3",
	    "dirty a.txt", " stat 1 2 3", "Stat 1 2 3",
	    "delivered\t" C1 " " C2 " 1"};
	struct wsreport_deliver r;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(parse(bad[i], &r) == -1, "took \"%s\"", bad[i]);
}
END_TEST

START_TEST(test_limits)
{
	static char line[WSREPORT_LINE_MAX + 2];
	struct wsreport_deliver r;

	memcpy(line, "diffstat ", 9);
	memset(line + 9, 'a', WSREPORT_DIFFSTAT_LINE_MAX);
	ck_assert_int_eq(
	    wsreport_deliver_parse(line, 9 + WSREPORT_DIFFSTAT_LINE_MAX, &r),
	    0);
	line[9 + WSREPORT_DIFFSTAT_LINE_MAX] = 'a';
	ck_assert_int_eq(wsreport_deliver_parse(
	                     line, 9 + WSREPORT_DIFFSTAT_LINE_MAX + 1, &r),
	    -1);
	memcpy(line, "failed ", 7);
	memset(line + 7, 'b', WSREPORT_REASON_MAX + 1);
	ck_assert_int_eq(
	    wsreport_deliver_parse(line, 7 + WSREPORT_REASON_MAX, &r), 0);
	ck_assert_int_eq(
	    wsreport_deliver_parse(line, 7 + WSREPORT_REASON_MAX + 1, &r), -1);
	memset(line, 'c', sizeof line);
	ck_assert_int_eq(
	    wsreport_deliver_parse(line, WSREPORT_LINE_MAX + 1, &r), -1);
	/* A NUL inside a text is a control byte. */
	ck_assert_int_eq(wsreport_deliver_parse("failed a\0b", 10, &r), -1);
	/* The length is the line's: what follows is not read. */
	ck_assert_int_eq(wsreport_deliver_parse("stat 1 2 3 4", 10, &r), 0);
	ck_assert_uint_eq(r.deletions, 3);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("wsreport_deliver");
	TCase *tc = tcase_create("wsreport_deliver");

	tcase_add_test(tc, test_kinds);
	tcase_add_test(tc, test_diffstat);
	tcase_add_test(tc, test_conflicts);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_limits);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
