/* cli_xfer: what berth's streaming commands (events --follow, pty attach,
 * exec, cp, cat, record stop) share to ride out a lost connection — the
 * one reconnect policy. */
#ifndef BERTH_CLI_XFER_H
#define BERTH_CLI_XFER_H

#include <stdbool.h>

#include "cli.h"

/* The pauses between tries, doubling from the first to the cap. */
#define CLI_XFER_BACKOFF_MIN_MS 100
#define CLI_XFER_BACKOFF_MAX_MS 2000
/* How long an outage is tried, unless --timeout (the time for an answer)
 * is longer. */
#define CLI_XFER_RECONNECT_MS 60000

/* Connects again and picks the work up on the new connection: a cli_conn
 * status, *cause on failure. */
typedef int (*cli_xfer_retry_cb)(void *arg, char **cause);
/* Lets ms pass before the next try, doing meanwhile what cannot wait:
 * CLI_CONN_OK, or a status that ends the outage. */
typedef int (*cli_xfer_pause_cb)(void *arg, int ms);

/*
 * One outage, from the loss until a connection works again, or never
 * does. The caller fills the first part (on its stack); cli_xfer_mend
 * fills tries.
 */
struct cli_xfer_outage {
	/* A follower (events --follow, pty attach) tries until it mends; a
	 * transfer gives up after CLI_XFER_RECONNECT_MS. */
	bool forever;
	/* Says nothing of a loss mended at the first try: the gateway drops
	 * a client that reads too slowly, and resuming is how a client goes
	 * on. Otherwise the caller has said it already. */
	bool quiet;
	cli_xfer_retry_cb retry;
	cli_xfer_pause_cb pause; /* NULL: cli_conn_pause */
	void *arg;               /* retry's and pause's */

	unsigned tries; /* how many it took */
};

/*
 * After a lost connection (why says how; taken): retries at once, then
 * after each pause of the policy, until a try works (CLI_CONN_OK), fails
 * for good (any status but CLI_CONN_LOST and CLI_CONN_TIMEOUT: the token,
 * an error answer, a broken server), a pause ends the outage (a signal:
 * CLI_CONN_INTERRUPTED), or, unless forever, the outage has lasted its
 * time (the last try's status). A quiet outage says "WHY; reconnecting"
 * once its first try has failed. *cause on failure, for the caller.
 */
int cli_xfer_mend(
    struct cli *cli, struct cli_xfer_outage *o, char *why, char **cause);

/*
 * The one answer to an interrupt, for the commands a signal stops: from
 * now on SIGINT and SIGTERM make every wait of cli_conn, and every pause
 * of an outage, return CLI_CONN_INTERRUPTED, so that the command can end
 * cleanly (a download removes its temp file); cli_xfer_signalled is the
 * signal caught then, else 0. exec forwards its signals to the command
 * instead, and pty attach restores the terminal and dies of them.
 */
void cli_xfer_signals(void);
int cli_xfer_signalled(void);

#endif
