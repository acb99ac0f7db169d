/* cli_xfer: the reconnect policy of berth's streaming commands: capped
 * doubling, one limit, and a signal that ends the pauses ends the
 * outage (see cli_xfer.h). */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "cli_print.h"
#include "cli_xfer.h"
#include "clock.h"
#include "xmalloc.h"

/* The signal that interrupted the run, to exit with. */
static volatile sig_atomic_t cli_xfer_caught;

/* Whether another try may mend what this one met: a connection that
 * broke, or an answer that did not come in time. */
static bool
cli_xfer_retryable(int status)
{
	return status == CLI_CONN_LOST || status == CLI_CONN_TIMEOUT;
}

static int
cli_xfer_pause(struct cli_xfer_outage *o, int ms)
{
	if (o->pause != NULL)
		return o->pause(o->arg, ms);
	return cli_conn_pause(ms);
}

int
cli_xfer_mend(
    struct cli *cli, struct cli_xfer_outage *o, char *why, char **cause)
{
	uint64_t limit = (uint64_t)(cli->timeout_ms > CLI_XFER_RECONNECT_MS
	        ? cli->timeout_ms
	        : CLI_XFER_RECONNECT_MS);
	uint64_t give_up = clock_mono_ms() + limit;
	struct backoff b;
	int status, ms = 0;

	backoff_init(&b, CLI_XFER_BACKOFF_MIN_MS, CLI_XFER_BACKOFF_MAX_MS);
	for (o->tries = 1;; o->tries++) {
		if ((status = cli_xfer_pause(o, ms)) != CLI_CONN_OK) {
			*cause = xstrdup("interrupted");
			break;
		}
		status = o->retry(o->arg, cause);
		if (status == CLI_CONN_OK || !cli_xfer_retryable(status) ||
		    (!o->forever && clock_mono_ms() >= give_up))
			break;
		free(*cause);
		if (o->tries == 1 && o->quiet)
			cli_print_warn("%s; reconnecting", why);
		ms = (int)backoff_next(&b);
	}
	free(why);
	return status;
}

static void
cli_xfer_caught_cb(int sig)
{
	cli_xfer_caught = sig;
	cli_conn_interrupt();
}

void
cli_xfer_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cli_xfer_caught_cb;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int
cli_xfer_signalled(void)
{
	return cli_xfer_caught;
}
