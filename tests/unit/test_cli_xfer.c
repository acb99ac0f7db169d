/* test_cli_xfer: unit tests of the CLI's one reconnect policy
 * (cli_xfer_mend): the first try at once, then pauses doubling from
 * 100 ms to 2 s; a transfer gives up after a minute or --timeout, a
 * follower never; a failure for good and an interrupt end the outage at
 * once. The clock is the test's own, moved on by the pauses. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli_xfer.h"
#include "clock.h"
#include "tap.h"
#include "xmalloc.h"

#define FAKE_PAUSES_MAX 256

static uint64_t fake_now;

/* The test's clock stands in for the monotonic one: an outage of minutes
 * passes in no time. */
uint64_t
clock_mono_ms(void)
{
	return fake_now;
}

/* One outage as the test stages it: fails tries fail with status, the
 * pause numbered interrupt_at (from 1; 0: none) is cut short, and quiet
 * is the outage's. */
struct fake {
	int fails;
	int status;
	unsigned interrupt_at;
	bool quiet;
	int pauses[FAKE_PAUSES_MAX];
	unsigned npauses;
	int tries;
};

static int
fake_pause_cb(void *arg, int ms)
{
	struct fake *f = arg;

	ck_assert_uint_lt(f->npauses, FAKE_PAUSES_MAX);
	f->pauses[f->npauses++] = ms;
	fake_now += (uint64_t)ms;
	return f->npauses == f->interrupt_at ? CLI_CONN_INTERRUPTED
	                                     : CLI_CONN_OK;
}

static int
fake_retry_cb(void *arg, char **cause)
{
	struct fake *f = arg;

	if (++f->tries > f->fails)
		return CLI_CONN_OK;
	*cause = xstrdup("connection lost");
	return f->status;
}

/* Runs one outage of f, as a transfer (forever false) or a follower,
 * with --timeout timeout_ms: the status, *cause its cause (or NULL). */
static int
fake_mend(struct fake *f, bool forever, int timeout_ms, char **cause)
{
	struct cli cli = {.timeout_ms = timeout_ms};
	struct cli_xfer_outage o = {.forever = forever,
	    .quiet = f->quiet,
	    .retry = fake_retry_cb,
	    .pause = fake_pause_cb,
	    .arg = f};
	int status;

	*cause = NULL;
	status = cli_xfer_mend(&cli, &o, xstrdup("why"), cause);
	ck_assert_int_eq((int)o.tries, f->tries);
	return status;
}

START_TEST(test_at_once_then_doubling_to_the_cap)
{
	static const int want[] = {0, 100, 200, 400, 800, 1600, 2000, 2000};
	struct fake f = {.fails = 7, .status = CLI_CONN_LOST};
	char *cause;
	size_t i;

	ck_assert_int_eq(fake_mend(&f, false, 10000, &cause), CLI_CONN_OK);
	ck_assert_int_eq(f.tries, 8);
	ck_assert_uint_eq(f.npauses, sizeof want / sizeof want[0]);
	for (i = 0; i < f.npauses; i++)
		ck_assert_int_eq(f.pauses[i], want[i]);
}
END_TEST

/* A transfer with --timeout timeout_ms, failing with status, gives up
 * once limit_ms have passed (before the next pause would end), with the
 * last try's status and cause. */
static void
gives_up_after(int timeout_ms, int status, uint64_t limit_ms)
{
	struct fake f = {.fails = 1000, .status = status};
	uint64_t start = fake_now;
	char *cause;

	ck_assert_int_eq(fake_mend(&f, false, timeout_ms, &cause), status);
	ck_assert_str_eq(cause, "connection lost");
	ck_assert_uint_ge(fake_now - start, limit_ms);
	ck_assert_uint_lt(fake_now - start, limit_ms + CLI_XFER_BACKOFF_MAX_MS);
	free(cause);
}

/* A minute, or --timeout if it is longer. */
START_TEST(test_transfer_gives_up_in_its_time)
{
	gives_up_after(10000, CLI_CONN_TIMEOUT, CLI_XFER_RECONNECT_MS);
	gives_up_after(90000, CLI_CONN_LOST, 90000);
}
END_TEST

/* A follower tries on, however long the outage lasts. */
START_TEST(test_follower_never_gives_up)
{
	struct fake f = {.fails = 200, .status = CLI_CONN_LOST};
	uint64_t start = fake_now;
	char *cause;

	ck_assert_int_eq(fake_mend(&f, true, 10000, &cause), CLI_CONN_OK);
	ck_assert_int_eq(f.tries, 201);
	ck_assert_uint_gt(fake_now - start, 5 * CLI_XFER_RECONNECT_MS);
}
END_TEST

/* Only a lost connection or an answer that did not come is tried again:
 * a refused token, an error answer or a broken server end it at once. */
START_TEST(test_failures_for_good_end_at_once)
{
	static const int statuses[] = {
	    CLI_CONN_AUTH, CLI_CONN_ANSWERED, CLI_CONN_PROTOCOL};
	char *cause;
	size_t i;

	for (i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
		struct fake f = {.fails = 5, .status = statuses[i]};

		ck_assert_int_eq(
		    fake_mend(&f, true, 10000, &cause), statuses[i]);
		ck_assert_int_eq(f.tries, 1);
		ck_assert_str_eq(cause, "connection lost");
		free(cause);
	}
}
END_TEST

START_TEST(test_interrupted_pause_ends_it)
{
	struct fake f = {
	    .fails = 10, .status = CLI_CONN_LOST, .interrupt_at = 3};
	char *cause;

	ck_assert_int_eq(
	    fake_mend(&f, true, 10000, &cause), CLI_CONN_INTERRUPTED);
	ck_assert_int_eq(f.tries, 2);
	ck_assert_str_eq(cause, "interrupted");
	free(cause);
}
END_TEST

/* Without a pause of its own, the outage pauses in cli_conn, which a
 * signal's cli_conn_interrupt ends: no try is made after it. */
START_TEST(test_cli_conn_interrupt_ends_it)
{
	struct fake f = {.fails = 10, .status = CLI_CONN_LOST};
	struct cli cli = {.timeout_ms = 10000};
	struct cli_xfer_outage o = {.retry = fake_retry_cb, .arg = &f};
	char *cause = NULL;

	cli_conn_interrupt();
	ck_assert_int_eq(cli_xfer_mend(&cli, &o, xstrdup("why"), &cause),
	    CLI_CONN_INTERRUPTED);
	ck_assert_int_eq(f.tries, 0);
	ck_assert_str_eq(cause, "interrupted");
	free(cause);
}
END_TEST

/* What a quiet outage writes on stderr while fn runs. */
static char *
stderr_of(void (*fn)(struct fake *), struct fake *f)
{
	FILE *tmp = tmpfile();
	int fd, saved = dup(STDERR_FILENO);
	char *buf = xcalloc(1, 4096);

	ck_assert_ptr_nonnull(tmp);
	fd = fileno(tmp);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	fn(f);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	ck_assert_int_ge(pread(fd, buf, 4095, 0), 0);
	fclose(tmp);
	return buf;
}

static void
mend_quietly(struct fake *f)
{
	char *cause;

	ck_assert_int_eq(fake_mend(f, false, 10000, &cause), CLI_CONN_OK);
}

/* A loss mended at the first try goes unsaid; one that takes more says
 * so once, whatever the number of tries. */
START_TEST(test_quiet_says_it_once)
{
	struct fake at_once = {
	    .fails = 0, .status = CLI_CONN_LOST, .quiet = true};
	struct fake later = {
	    .fails = 4, .status = CLI_CONN_LOST, .quiet = true};
	char *said;

	said = stderr_of(mend_quietly, &at_once);
	ck_assert_str_eq(said, "");
	free(said);
	said = stderr_of(mend_quietly, &later);
	ck_assert_str_eq(said, "berth: why; reconnecting\n");
	free(said);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cli_xfer");
	TCase *tc = tcase_create("reconnect");

	tcase_add_test(tc, test_at_once_then_doubling_to_the_cap);
	tcase_add_test(tc, test_transfer_gives_up_in_its_time);
	tcase_add_test(tc, test_follower_never_gives_up);
	tcase_add_test(tc, test_failures_for_good_end_at_once);
	tcase_add_test(tc, test_interrupted_pause_ends_it);
	tcase_add_test(tc, test_cli_conn_interrupt_ends_it);
	tcase_add_test(tc, test_quiet_says_it_once);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
