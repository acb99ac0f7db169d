/* test_backoff: unit tests of the one retry policy (backoff.c): doubling
 * from the floor, held at the cap, and back to the floor after a reset. */
#include "backoff.h"
#include "tap.h"

START_TEST(test_doubles_to_the_cap)
{
	static const unsigned want[] = {100, 200, 400, 800, 1600, 2000, 2000};
	struct backoff b;
	size_t i;

	backoff_init(&b, 100, 2000);
	for (i = 0; i < sizeof want / sizeof want[0]; i++)
		ck_assert_uint_eq(backoff_next(&b), want[i]);
}
END_TEST

START_TEST(test_reset_starts_again)
{
	struct backoff b;

	backoff_init(&b, 10, 20);
	ck_assert_uint_eq(backoff_next(&b), 10);
	ck_assert_uint_eq(backoff_next(&b), 20);
	ck_assert_uint_eq(backoff_next(&b), 20);
	backoff_reset(&b);
	ck_assert_uint_eq(backoff_next(&b), 10);
}
END_TEST

/* A cap that is no power-of-two multiple of the floor is reached, not
 * passed; a large one never overflows. */
START_TEST(test_odd_and_huge_caps)
{
	struct backoff b;
	unsigned i, w = 0;

	backoff_init(&b, 300, 1000);
	ck_assert_uint_eq(backoff_next(&b), 300);
	ck_assert_uint_eq(backoff_next(&b), 600);
	ck_assert_uint_eq(backoff_next(&b), 1000);
	backoff_init(&b, 1, 0xffffffffu);
	for (i = 0; i < 40; i++) {
		unsigned next = backoff_next(&b);

		ck_assert_uint_ge(next, w);
		w = next;
	}
	ck_assert_uint_eq(w, 0xffffffffu);
}
END_TEST

/* A floor of 0 retries at once, then grows from 1; a cap of 0 stays 0. */
START_TEST(test_zero_floor)
{
	static const unsigned want[] = {0, 1, 2, 4, 5, 5};
	struct backoff b;
	size_t i;

	backoff_init(&b, 0, 5);
	for (i = 0; i < sizeof want / sizeof want[0]; i++)
		ck_assert_uint_eq(backoff_next(&b), want[i]);
	backoff_init(&b, 0, 0);
	ck_assert_uint_eq(backoff_next(&b), 0);
	ck_assert_uint_eq(backoff_next(&b), 0);
}
END_TEST

/* A cap below the floor is the floor. */
START_TEST(test_cap_below_floor)
{
	struct backoff b;

	backoff_init(&b, 500, 100);
	ck_assert_uint_eq(backoff_next(&b), 500);
	ck_assert_uint_eq(backoff_next(&b), 500);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("backoff");
	TCase *tc = tcase_create("backoff");

	tcase_add_test(tc, test_doubles_to_the_cap);
	tcase_add_test(tc, test_reset_starts_again);
	tcase_add_test(tc, test_odd_and_huge_caps);
	tcase_add_test(tc, test_cap_below_floor);
	tcase_add_test(tc, test_zero_floor);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
