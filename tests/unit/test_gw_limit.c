/* test_gw_limit: unit tests of the HTTP port's connection bookkeeping
 * (gw_limit.c): a peer's cap, the deadline of a request head, and which
 * connection is closed to make room. Connections, the clock and the
 * sweep's timer are the test's (fakes_gw.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakes_gw.h"
#include "gw_limit.h"
#include "log.h"
#include "tap.h"

#define SEC LWS_USEC_PER_SEC
#define GRACE ((lws_usec_t)GW_LIMIT_GRACE_MS * LWS_US_PER_MS)
#define CONNS_MAX 512

static struct fake_conn conns[CONNS_MAX];
static size_t nconns;

static void
setup(void)
{
	log_init("test", 0);
	fake_log_capture();
	gateway.peer_max = 3;
	fake_now = 1000 * SEC;
}

/* Everything accepted is forgotten, as lws destroys it at the end. */
static void
teardown(void)
{
	size_t i;

	for (i = 0; i < nconns; i++)
		gw_limit_forget(FAKE_WSI(&conns[i]));
}

/* Accepts a connection of peer. */
static struct fake_conn *
accept_of(const char *peer)
{
	struct fake_conn *c;

	ck_assert_uint_lt(nconns, CONNS_MAX);
	c = &conns[nconns++];
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	gw_limit_accepted(FAKE_WSI(c));
	return c;
}

static unsigned
closed(void)
{
	unsigned n = 0;
	size_t i;

	for (i = 0; i < nconns; i++)
		n += conns[i].closed;
	return n;
}

/* At the cap, a peer's newest connection closes its oldest waiting one;
 * other peers are untouched. */
START_TEST(test_peer_cap_evicts_oldest_waiting)
{
	struct fake_conn *a1, *a2, *a3, *a4, *b;

	/* Another peer's is the oldest of all. */
	b = accept_of("10.0.0.2:1");
	fake_now += 1;
	a1 = accept_of("10.0.0.1:1");
	fake_now += 1;
	a2 = accept_of("10.0.0.1:2");
	fake_now += 1;
	a3 = accept_of("10.0.0.1:3");
	ck_assert_uint_eq(closed(), 0);
	/* a1's head is whole: a2 is the oldest still waiting, and has
	 * waited long enough to be closed. */
	gw_limit_head_done(FAKE_WSI(a1));
	fake_now += GRACE;
	a4 = accept_of("10.0.0.1:4");
	ck_assert(a2->closed);
	ck_assert(!a1->closed && !a3->closed && !a4->closed && !b->closed);
	ck_assert_uint_eq(closed(), 1);
}
END_TEST

/* A peer whose connections all sent their heads (a WebSocket counts no
 * more, but a long download does) gets its newest one refused. */
START_TEST(test_peer_cap_refuses_newest)
{
	const char *const words[] = {
	    "refused a connection of 10.0.0.1", "holds 3 already"};
	struct fake_conn *c[4];
	int i;

	for (i = 0; i < 3; i++) {
		c[i] = accept_of("10.0.0.1:1");
		gw_limit_head_done(FAKE_WSI(c[i]));
	}
	c[3] = accept_of("10.0.0.1:9");
	ck_assert(c[3]->closed);
	ck_assert(!c[0]->closed && !c[1]->closed && !c[2]->closed);
	ck_assert_uint_eq(fake_log_lines(words, 2), 1);
	/* A forgotten one (upgraded, or gone) frees its place. */
	gw_limit_forget(FAKE_WSI(c[0]));
	c[0]->peer[0] = '\0';
	ck_assert(!accept_of("10.0.0.1:10")->closed);
	ck_assert_uint_eq(closed(), 1);
}
END_TEST

/* A closed connection counts for no one, though lws has not destroyed it
 * yet; IPv6 peers are counted by address too. */
START_TEST(test_closed_count_for_no_one)
{
	int i;

	for (i = 0; i < 20; i++) {
		accept_of("[fd00::1]:5");
		fake_now += GRACE;
	}
	/* Each newcomer beyond 3 closed one older: 3 stay open. */
	ck_assert_uint_eq(closed(), 17);
	ck_assert(!conns[17].closed && !conns[18].closed && !conns[19].closed);
	ck_assert(!accept_of("[fd00::2]:5")->closed);
}
END_TEST

START_TEST(test_head_deadline)
{
	struct fake_conn *slow, *done, *late;
	lws_usec_t t0 = fake_now;

	slow = accept_of("10.0.0.1:1");
	done = accept_of("10.0.0.2:1");
	gw_limit_head_done(FAKE_WSI(done));
	fake_now = t0 + 2 * SEC;
	late = accept_of("10.0.0.3:1");
	ck_assert_uint_eq(fake_timer_armed, 1);
	fake_now = t0 + GW_LIMIT_HEAD_S * SEC - 1;
	ck_assert(fake_timer_fire());
	ck_assert_uint_eq(closed(), 0);
	fake_now = t0 + GW_LIMIT_HEAD_S * SEC;
	ck_assert(fake_timer_fire());
	ck_assert(slow->closed && !done->closed && !late->closed);
	fake_now = t0 + (2 + GW_LIMIT_HEAD_S) * SEC;
	ck_assert(fake_timer_fire());
	ck_assert(late->closed && !done->closed);
	/* Nothing waits: the sweep stops. */
	ck_assert(!fake_timer_fire());
}
END_TEST

/* A kept-alive connection's deadline runs from its last answer. */
START_TEST(test_idle_restarts_deadline)
{
	struct fake_conn *c;
	lws_usec_t t0 = fake_now;

	c = accept_of("10.0.0.1:1");
	fake_now = t0 + 4 * SEC;
	gw_limit_head_done(FAKE_WSI(c));
	fake_now = t0 + 60 * SEC;
	gw_limit_idle(FAKE_WSI(c));
	fake_now = t0 + (60 + GW_LIMIT_HEAD_S) * SEC - 1;
	ck_assert(fake_timer_fire());
	ck_assert(!c->closed);
	fake_now = t0 + (60 + GW_LIMIT_HEAD_S) * SEC;
	ck_assert(fake_timer_fire());
	ck_assert(c->closed);
	/* Closed, it waits no more, even if it answers once more. */
	gw_limit_idle(FAKE_WSI(c));
	ck_assert(!fake_timer_fire());
}
END_TEST

/* Beyond GW_LIMIT_WAITING_MAX waiting, the oldest waiting of anyone is
 * closed, in the order of the waits' starts. */
START_TEST(test_waiting_max)
{
	char peer[GATEWAY_PEER_MAX];
	struct fake_conn *first, *second, *third;
	size_t i;

	gateway.peer_max = GW_LIMIT_PEER_MAX_DEFAULT;
	for (i = 0; i < GW_LIMIT_WAITING_MAX; i++) {
		snprintf(
		    peer, sizeof peer, "10.1.%zu.%zu:80", i / 200, i % 200);
		accept_of(peer);
		fake_now += 1;
	}
	ck_assert_uint_eq(closed(), 0);
	fake_now += GRACE;
	first = &conns[0];
	second = &conns[1];
	third = &conns[2];
	/* first sends its head, then waits again after its answer: it is
	 * now the newest wait, and second the oldest. */
	gw_limit_head_done(FAKE_WSI(first));
	gw_limit_idle(FAKE_WSI(first));
	accept_of("10.2.0.1:80");
	ck_assert(second->closed);
	ck_assert_uint_eq(closed(), 1);
	/* A head sent makes room, and takes its connection out of the
	 * running. */
	gw_limit_head_done(FAKE_WSI(third));
	accept_of("10.2.0.2:80");
	ck_assert_uint_eq(closed(), 1);
	accept_of("10.2.0.3:80");
	ck_assert(!third->closed && conns[3].closed);
	ck_assert_uint_eq(closed(), 2);
}
END_TEST

/* A burst arrives faster than heads are read: none of it is closed to
 * make room for the rest of it, over the cap for a moment; a connection
 * that waited the grace is, and then one of a peer over its cap is
 * refused only if none of the peer's has waited that long. */
START_TEST(test_burst_within_grace)
{
	char peer[GATEWAY_PEER_MAX];
	struct fake_conn *late;
	lws_usec_t t0 = fake_now;
	size_t i;

	gateway.peer_max = GW_LIMIT_PEER_MAX_DEFAULT;
	for (i = 0; i < GW_LIMIT_WAITING_MAX + 50; i++) {
		snprintf(peer, sizeof peer, "10.3.0.%zu:80", i % 100);
		accept_of(peer);
		fake_now += 1;
	}
	ck_assert_uint_eq(closed(), 0);
	fake_now = t0 + GRACE;
	late = accept_of("10.3.1.1:80");
	ck_assert(conns[0].closed && !late->closed);
	ck_assert_uint_eq(closed(), 1);
	/* A peer at its cap within the grace: the newcomer is refused. */
	gateway.peer_max = 2;
	accept_of("10.4.0.1:1");
	accept_of("10.4.0.1:2");
	late = accept_of("10.4.0.1:3");
	ck_assert(late->closed);
	ck_assert_uint_eq(closed(), 2);
}
END_TEST

/* What lws never tracked, or forgot, is ignored. */
START_TEST(test_unknown)
{
	struct fake_conn stranger = {.peer = "10.9.9.9:1"};

	gw_limit_head_done(FAKE_WSI(&stranger));
	gw_limit_idle(FAKE_WSI(&stranger));
	gw_limit_forget(FAKE_WSI(&stranger));
	ck_assert(!fake_timer_fire());
	ck_assert(!stranger.closed);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("gw_limit");
	TCase *tc = tcase_create("gw_limit");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_peer_cap_evicts_oldest_waiting);
	tcase_add_test(tc, test_peer_cap_refuses_newest);
	tcase_add_test(tc, test_closed_count_for_no_one);
	tcase_add_test(tc, test_head_deadline);
	tcase_add_test(tc, test_idle_restarts_deadline);
	tcase_add_test(tc, test_waiting_max);
	tcase_add_test(tc, test_burst_within_grace);
	tcase_add_test(tc, test_unknown);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
