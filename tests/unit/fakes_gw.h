/* fakes_gw.h: what a unit test of one gateway module gives it in place of
 * the rest of the gateway and of libwebsockets' loop: the one gateway, a
 * clock the test sets, one timer the test fires, and connections that
 * are the test's own structs, whose closing is recorded. A test that
 * includes this links the module's source and no libwebsockets. */
#ifndef BERTH_TEST_FAKES_GW_H
#define BERTH_TEST_FAKES_GW_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gateway.h"

struct gateway gateway;

/* A connection: its peer as gateway_peer spells it, and whether the
 * module closed it. */
struct fake_conn {
	char peer[GATEWAY_PEER_MAX];
	int closed;
};

#define FAKE_WSI(c) ((struct lws *)(void *)(c))

static lws_usec_t fake_now;
static sul_cb_t fake_timer_cb;
static lws_sorted_usec_list_t *fake_timer_sul;
static lws_usec_t fake_timer_us;
static unsigned fake_timer_armed;

void
gateway_peer(struct lws *wsi, char *buf, size_t len)
{
	snprintf(buf, len, "%s", ((struct fake_conn *)(void *)wsi)->peer);
}

lws_usec_t
lws_now_usecs(void)
{
	return fake_now;
}

void
lws_set_timeout(struct lws *wsi, enum pending_timeout reason, int secs)
{
	(void)reason;
	if (secs == LWS_TO_KILL_ASYNC)
		((struct fake_conn *)(void *)wsi)->closed = 1;
}

/* The modules arm one timer each; arming it again before it fires would
 * be a module's bug, and is counted. */
void
lws_sul_schedule(struct lws_context *ctx, int tsi, lws_sorted_usec_list_t *sul,
    sul_cb_t cb, lws_usec_t us)
{
	(void)ctx;
	(void)tsi;
	fake_timer_cb = cb;
	fake_timer_sul = sul;
	fake_timer_us = us;
	fake_timer_armed++;
}

/* Fires the timer if it is armed; whether it was. */
static int
fake_timer_fire(void)
{
	if (fake_timer_armed == 0)
		return 0;
	fake_timer_armed = 0;
	fake_timer_cb(fake_timer_sul);
	return 1;
}

/* stderr into a scratch file, so that the log's lines can be counted. */
static FILE *fake_log;

static void
fake_log_capture(void)
{
	fake_log = tmpfile();
	fflush(stderr);
	dup2(fileno(fake_log), STDERR_FILENO);
}

/* Lines logged so far that hold every one of the n words. */
static unsigned
fake_log_lines(const char *const *words, size_t n)
{
	char line[512];
	unsigned count = 0;
	size_t i;

	fflush(stderr);
	rewind(fake_log);
	while (fgets(line, sizeof line, fake_log) != NULL) {
		for (i = 0; i < n && strstr(line, words[i]) != NULL; i++)
			;
		count += i == n;
	}
	fseek(fake_log, 0, SEEK_END);
	return count;
}

#endif
