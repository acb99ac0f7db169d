/* test_gw_queue: unit tests of the gateway's bounded message queue
 * (gw_queue.c): what a limit refuses, and that a full-sized message behind
 * a small one is taken, so that a client with the smallest queue still
 * moves. */
#include <stdlib.h>
#include <string.h>

#include "gw_queue.h"
#include "tap.h"

#define LIMIT (64u * 1024)
/* A full 64 KiB data message as berthd sends it, framing included. */
#define FULL (LIMIT + 61)

static int
push(struct gw_queue *q, size_t len)
{
	struct gw_queue_msg *m = gw_queue_msg_new(len);
	int r;

	memset(gw_queue_payload(m), 'x', len);
	if ((r = gw_queue_push(q, m)) < 0)
		free(m);
	return r;
}

START_TEST(test_full_message_behind_an_answer)
{
	struct gw_queue q;

	gw_queue_init(&q, LIMIT);
	ck_assert_int_eq(push(&q, 61), 0);
	ck_assert_int_eq(push(&q, FULL), 0);
	ck_assert_uint_eq(q.bytes, 61 + FULL);
	ck_assert_uint_eq(q.count, 2);
	ck_assert_int_eq(push(&q, 1), -1);
	ck_assert_uint_eq(q.count, 2);
	gw_queue_clear(&q);
}
END_TEST

START_TEST(test_refused_once_the_limit_is_held)
{
	struct gw_queue q;
	size_t n = 0;

	gw_queue_init(&q, LIMIT);
	while (q.bytes < LIMIT) {
		ck_assert_int_eq(push(&q, 1000), 0);
		n++;
	}
	ck_assert_int_eq(push(&q, 1), -1);
	ck_assert_uint_eq(q.count, n);
	/* Room again once the client has taken one. */
	gw_queue_pop(&q);
	ck_assert_int_eq(push(&q, FULL), 0);
	ck_assert_int_eq(push(&q, 1), -1);
	gw_queue_clear(&q);
	ck_assert_uint_eq(q.bytes, 0);
}
END_TEST

START_TEST(test_empty_takes_any)
{
	struct gw_queue q;

	gw_queue_init(&q, 16);
	ck_assert_int_eq(push(&q, 4 * LIMIT), 0);
	ck_assert_int_eq(push(&q, 1), -1);
	ck_assert_ptr_nonnull(gw_queue_first(&q));
	gw_queue_pop(&q);
	ck_assert_ptr_null(gw_queue_first(&q));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("gw_queue");
	TCase *tc = tcase_create("gw_queue");

	tcase_add_test(tc, test_full_message_behind_an_answer);
	tcase_add_test(tc, test_refused_once_the_limit_is_held);
	tcase_add_test(tc, test_empty_takes_any);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
