/* test_gw_refusal: unit tests of how refused requests are summed
 * (gw_refusal.c): a peer's first refusal is logged and sent to berthd at
 * once, the rest of each interval as one line and one report with their
 * count, counts add up, and a flood of peers cannot grow the table. The
 * loop's timer is fired by the test (fakes_gw.h); what would go to berthd
 * is recorded here. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fakes_gw.h"
#include "gw_metrics.h"
#include "gw_refusal.h"
#include "gw_upstream.h"
#include "log.h"
#include "tap.h"

struct gw_metrics gw_metrics;

/* What would have gone to berthd, in order. */
#define REPORTS_MAX 1024
static struct report {
	char peer[GATEWAY_PEER_MAX];
	char reason[32];
	uint64_t count;
} reports[REPORTS_MAX];
static size_t nreports;

void
gw_upstream_auth_failed(const char *peer, const char *reason, uint64_t count)
{
	struct report *r;

	ck_assert_uint_lt(nreports, REPORTS_MAX);
	r = &reports[nreports++];
	snprintf(r->peer, sizeof r->peer, "%s", peer);
	snprintf(r->reason, sizeof r->reason, "%s", reason);
	r->count = count;
}

static void
setup(void)
{
	log_init("test", 0);
	fake_log_capture();
}

/* Reports sent for addr and reason, and the count they sum to. */
static size_t
reports_of(const char *addr, const char *reason, uint64_t *sum)
{
	size_t i, n = 0;

	*sum = 0;
	for (i = 0; i < nreports; i++)
		if (strcmp(reports[i].peer, addr) == 0 &&
		    strcmp(reports[i].reason, reason) == 0) {
			n++;
			*sum += reports[i].count;
		}
	return n;
}

static unsigned
lines(const char *a, const char *b, const char *c)
{
	const char *const words[] = {a, b, c};

	return fake_log_lines(words, 3);
}

START_TEST(test_first_at_once)
{
	uint64_t sum;

	gw_refusal_note("10.0.0.7:4000", "GET /v1", "invalid");
	ck_assert_uint_eq(nreports, 1);
	ck_assert_uint_eq(reports_of("10.0.0.7", "invalid", &sum), 1);
	ck_assert_uint_eq(sum, 1);
	ck_assert_uint_eq(
	    lines("refused GET /v1 from 10.0.0.7:4000", "(invalid)", ""), 1);
	ck_assert_uint_eq(gw_metrics.auth_failures, 1);
	ck_assert_uint_eq(fake_timer_armed, 1);
	ck_assert_int_eq(fake_timer_us, GW_REFUSAL_INTERVAL_US);
}
END_TEST

/* One peer's refusals of an interval: one report and one line, whatever
 * its ports, and counts that add up. */
START_TEST(test_summed)
{
	char peer[GATEWAY_PEER_MAX];
	uint64_t sum;
	int i;

	for (i = 0; i < 1000; i++) {
		snprintf(peer, sizeof peer, "10.0.0.7:%d", 4000 + i);
		gw_refusal_note(peer, "GET /v1", "invalid");
	}
	ck_assert_uint_eq(nreports, 1);
	ck_assert_uint_eq(lines("refused", "10.0.0.7", "invalid"), 1);
	ck_assert_uint_le(fake_timer_armed, 1);
	ck_assert(fake_timer_fire());
	ck_assert_uint_eq(nreports, 2);
	ck_assert_uint_eq(reports[1].count, 999);
	ck_assert_uint_eq(
	    lines("refused 999 more from 10.0.0.7 in the last 1 s", "(invalid)",
	        ""),
	    1);
	ck_assert_uint_eq(lines("refused", "10.0.0.7", "invalid"), 2);
	ck_assert_uint_eq(reports_of("10.0.0.7", "invalid", &sum), 2);
	ck_assert_uint_eq(sum, 1000);
	ck_assert_uint_eq(gw_metrics.auth_failures, 1000);
}
END_TEST

/* A peer sent for is kept one quiet interval, then forgotten: its next
 * refusal is reported at once again, and the timer stops. */
START_TEST(test_quiet_interval)
{
	uint64_t sum;

	gw_refusal_note("10.0.0.7:1", "GET /v1", "missing");
	gw_refusal_note("10.0.0.7:2", "GET /v1", "missing");
	ck_assert(fake_timer_fire());
	ck_assert_uint_eq(nreports, 2);
	/* Within the interval after: summed still. */
	gw_refusal_note("10.0.0.7:3", "GET /v1", "missing");
	ck_assert_uint_eq(nreports, 2);
	ck_assert(fake_timer_fire());
	ck_assert_uint_eq(nreports, 3);
	ck_assert_uint_eq(reports[2].count, 1);
	/* A quiet interval: nothing sent, the peer forgotten, no timer. */
	ck_assert(fake_timer_fire());
	ck_assert_uint_eq(nreports, 3);
	ck_assert(!fake_timer_fire());
	gw_refusal_note("10.0.0.7:4", "GET /v1", "missing");
	ck_assert_uint_eq(nreports, 4);
	ck_assert_uint_eq(reports[3].count, 1);
	ck_assert_uint_eq(reports_of("10.0.0.7", "missing", &sum), 4);
	ck_assert_uint_eq(sum, 4);
	ck_assert_uint_eq(lines("refused GET /v1 from", "(missing)", ""), 2);
}
END_TEST

/* Address and reason make a slot; the port does not. */
START_TEST(test_keys)
{
	uint64_t sum;

	gw_refusal_note("10.0.0.7:1", "GET /v1", "missing");
	gw_refusal_note("10.0.0.7:2", "GET /v1", "invalid");
	gw_refusal_note("10.0.0.8:1", "GET /v1", "missing");
	gw_refusal_note("[::1]:1", "GET /v1", "origin");
	gw_refusal_note("[::1]:2", "GET /v1", "origin");
	gw_refusal_note("[fe80::1]:2", "GET /v1", "origin");
	ck_assert_uint_eq(nreports, 5);
	ck_assert_uint_eq(reports_of("::1", "origin", &sum), 1);
	ck_assert(fake_timer_fire());
	ck_assert_uint_eq(nreports, 6);
	ck_assert_uint_eq(reports_of("::1", "origin", &sum), 2);
	ck_assert_uint_eq(sum, 2);
	ck_assert_uint_eq(reports_of("fe80::1", "origin", &sum), 1);
	ck_assert_uint_eq(reports_of("10.0.0.7", "invalid", &sum), 1);
}
END_TEST

/* More peers than the table holds: each counted one is reported once,
 * the rest are summed as "*", and every refusal is in some count. */
START_TEST(test_many_peers)
{
	char peer[GATEWAY_PEER_MAX];
	uint64_t sum, total = 0;
	size_t i, n = 3 * GW_REFUSAL_PEERS, round;

	for (round = 0; round < 2; round++)
		for (i = 0; i < n; i++) {
			snprintf(peer, sizeof peer, "10.%zu.%zu.1:80", i / 256,
			    i % 256);
			gw_refusal_note(peer, "GET /v1", "invalid");
		}
	ck_assert_uint_eq(nreports, GW_REFUSAL_PEERS);
	ck_assert_uint_eq(reports_of("*", "invalid", &sum), 0);
	ck_assert_uint_eq(
	    lines("refused GET /v1 from", "", ""), GW_REFUSAL_PEERS);
	ck_assert(fake_timer_fire());
	/* One sum per counted peer, and one for the rest. */
	ck_assert_uint_eq(nreports, 2 * GW_REFUSAL_PEERS + 1);
	ck_assert_uint_eq(reports_of("*", "invalid", &sum), 1);
	ck_assert_uint_eq(sum, 2 * (n - GW_REFUSAL_PEERS));
	ck_assert_uint_eq(lines("more from * in the last", "", ""), 1);
	for (i = 0; i < nreports; i++)
		total += reports[i].count;
	ck_assert_uint_eq(total, 2 * n);
	ck_assert_uint_eq(gw_metrics.auth_failures, 2 * n);
	/* Two quiet intervals free every slot: a new peer is counted. */
	ck_assert(fake_timer_fire());
	ck_assert(!fake_timer_fire());
	gw_refusal_note("192.168.1.1:80", "GET /v1", "invalid");
	ck_assert_uint_eq(reports_of("192.168.1.1", "invalid", &sum), 1);
}
END_TEST

/* A peer name longer than any address is cut, not overrun. */
START_TEST(test_long_peer)
{
	char peer[4 * GATEWAY_PEER_MAX];

	memset(peer, '9', sizeof peer - 3);
	memcpy(peer + sizeof peer - 3, ":1", 3);
	gw_refusal_note(peer, "GET /v1", "malformed");
	gw_refusal_note(peer, "GET /v1", "malformed");
	ck_assert_uint_eq(nreports, 1);
	ck_assert_uint_eq(strlen(reports[0].peer), GATEWAY_PEER_MAX - 1);
	gw_refusal_note("[::1", "GET /v1", "malformed");
	ck_assert_uint_eq(nreports, 2);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("gw_refusal");
	TCase *tc = tcase_create("gw_refusal");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_first_at_once);
	tcase_add_test(tc, test_summed);
	tcase_add_test(tc, test_quiet_interval);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_many_peers);
	tcase_add_test(tc, test_long_peer);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
