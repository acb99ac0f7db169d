/* cli_xfer: the transfer engine of berth's streaming commands (events
 * --follow, pty attach, exec, cp, cat, record stop): the one reconnect
 * policy and answer to an interrupt, requests kept in flight on a
 * connection made again when lost, the pipelined resumable ranged read
 * (fs.read, artifact.read), and the temp file a download lands through. */
#ifndef BERTH_CLI_XFER_H
#define BERTH_CLI_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "cli_bar.h"
#include "sha256.h"

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
	 * a client that stalls (a full queue, nothing taken for
	 * client_stall_ms), and resuming is how a client goes on. Otherwise
	 * the caller has said it already. */
	bool quiet;
	cli_xfer_retry_cb retry;
	cli_xfer_pause_cb pause; /* NULL: cli_conn_pause */
	void *arg;               /* retry's and pause's */

	unsigned tries; /* how many were made */
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
 * cleanly (a download removes its temp file) and cli_xfer_exit can say
 * which signal it was. exec forwards its signals to the command instead,
 * and pty attach restores the terminal and dies of them.
 */
void cli_xfer_signals(void);
/* A transfer's exit status for a cli_conn status: CLI_EXIT_SIGNAL + N if
 * signal N interrupted it (as a process killed by it would say), else
 * cli_fail's (cause told and freed). */
int cli_xfer_exit(int status, char *cause);

/* Writes all of buf to fd, waiting while a non-blocking fd is full: 0, or
 * -1 with errno. */
int cli_xfer_write(int fd, const void *buf, size_t len);

/* ---- a conversation: a command that talks while it listens ---- */

/* What exec and pty attach do in a turn; each takes the command (arg).
 * Static. */
struct cli_xfer_talk {
	/* Sends what is due: a cli_conn status. */
	int (*flush)(void *arg, char **cause);
	/* How long the connection may be waited on, once flushed: cli_conn
	 * wakes no wait on stdin, so stdin waits that long at most. */
	int (*slice)(void *arg);
	/* Takes one message: a cli_conn status. */
	int (*handle)(void *arg, const struct proto_msg *m, char **cause);
};

/* One turn on conn: what is due sent, then the next message taken if one
 * comes within the slice (none coming is no failure: the next turn waits
 * again). A cli_conn status, *cause on failure. */
int cli_xfer_turn(struct cli_conn *conn, const struct cli_xfer_talk *t,
    void *arg, char **cause);

/* ---- a link: requests in flight on a connection made again when lost */

/* How many requests a link keeps unanswered. */
#define CLI_XFER_PIPE 4

/* A request sent without waiting, for its answer to say which. */
struct cli_xfer_req {
	uint64_t id;
	uint64_t offset;
	size_t len;
	bool last; /* fs.write: done */
};

/*
 * A connection for requests sent without waiting, at most CLI_XFER_PIPE
 * at once, which berthd answers in order: pend is a queue, oldest at
 * phead. Ids run on from CLI_CONN_RAW_ID across connections. Inside the
 * transfer that uses it (cli_xfer_link_init); owns conn.
 */
struct cli_xfer_link {
	struct cli *cli;
	struct cli_conn *conn;
	uint64_t rid; /* the id of the next request */
	struct cli_xfer_req pend[CLI_XFER_PIPE];
	size_t phead;
	size_t npend;
};

void cli_xfer_link_init(struct cli_xfer_link *l, struct cli *cli);
/* Connects (cli_open), with nothing in flight. */
int cli_xfer_open(struct cli_xfer_link *l, char **cause);
/* Closes the connection, if any; what was in flight is forgotten. */
void cli_xfer_close(struct cli_xfer_link *l);
/* Sends a request without waiting; req says what it is for when the
 * answer comes (its id is the link's to set). */
int cli_xfer_push(struct cli_xfer_link *l, const char *op,
    cli_conn_pack_cb pack, void *ctx, const struct cli_xfer_req *req,
    char **cause);
/* Waits for the answer to the oldest request in flight: *req is that
 * request, *mp its answer (owned by the connection). */
int cli_xfer_answer(struct cli_xfer_link *l, struct cli_xfer_req *req,
    const struct proto_msg **mp, char **cause);
/* After a lost connection (why says how; taken): the link connected
 * again and resume's work done on it (NULL: none), by cli_xfer_mend's
 * policy for a quiet transfer, which says "reconnected; resuming" once
 * back after more than one try. */
int cli_xfer_reconnect(struct cli_xfer_link *l, char *why,
    cli_xfer_retry_cb resume, void *arg, char **cause);

/* A pipelined transfer, as cli_xfer_pump drives it; each callback takes
 * the transfer (arg) and returns a cli_conn status. Static. */
struct cli_xfer_pump {
	/* Whether all is done (and answered). */
	bool (*done)(void *arg);
	/* Sends what may go now, up to CLI_XFER_PIPE in flight. */
	int (*fill)(void *arg, char **cause);
	/* Takes the answer m to req, the oldest in flight. */
	int (*answered)(void *arg, const struct cli_xfer_req *req,
	    const struct proto_msg *m, char **cause);
	/* On a new connection, before fill: where to go on from. */
	cli_xfer_retry_cb resume;
};

/* Runs a transfer on its link (connected) until done, the link made
 * again after every lost connection; every answer is read before it
 * returns, so that the connection can go on. */
int cli_xfer_pump(struct cli_xfer_link *l, const struct cli_xfer_pump *p,
    void *arg, char **cause);

/* ---- the ranged read ---- */

/* A read's chunk: CLI_XFER_PIPE of them in flight are what the gateway
 * and berthd hold of answers not yet read, so it stays well below
 * client_queue (8 MiB by default), past which the rest waits in berthd. */
#define CLI_XFER_READ_CHUNK (1u << 20)

/*
 * A resumable ranged read of one object of the sandbox: op {KEY: name,
 * offset, length: CLI_XFER_READ_CHUNK} after op, CLI_XFER_PIPE in flight,
 * the bytes written to fd in order (and hashed into sha, if set; shown
 * on bar, if set). After a lost connection it asks again from done. The
 * caller sets the first part; it borrows the strings, fd, sha and bar.
 */
struct cli_xfer_read {
	struct cli_xfer_link link;
	const char *op;   /* "fs.read", "artifact.read" */
	const char *key;  /* "path", "id" */
	const char *name; /* key's value */
	/*
	 * fixed: size is known and final (an artifact's), the reads stop
	 * there, and an answer other than exactly the bytes asked for is the
	 * server's fault. Otherwise (a file, which may change) size is as
	 * last answered, 0 at first; a short answer is asked on from where
	 * it ended, the requests after it are stale, and eof ends the read.
	 */
	bool fixed;
	uint64_t size;
	int fd;
	const char *out; /* fd's name, for messages */
	struct sha256 *sha;
	struct cli_bar *bar;
	/* Keys every request carries beside the range (fs.read's "as" and
	 * "follow_symlinks"): nmore of them, packed by more with more_arg. */
	uint32_t nmore;
	void (*more)(msgpack_packer *pk, const void *more_arg);
	const void *more_arg;

	uint64_t done; /* what fd has: set it where the read starts */
	uint64_t next; /* the offset of the next request */
	bool eof;
};

/* Reads from done to the end into fd, on the link (connected). Every
 * answer is read before it returns, so that the connection can go on. */
int cli_xfer_read_run(struct cli_xfer_read *rd, char **cause);

/* ---- the landing ---- */

/*
 * A download lands in a hidden temp file beside its target (so that the
 * rename stays within one filesystem), renamed over the target once whole:
 * a reader sees the old file or the new one, never part. On its command's
 * stack; owns temp and fd until committed or discarded.
 */
struct cli_xfer_land {
	const char *target; /* borrowed */
	char *temp;         /* NULL once committed or discarded */
	int fd;             /* -1 likewise */
};

/* Creates the temp file: ".NAME" and suffix beside target, where a suffix
 * that ends in XXXXXX is made unique, as by mkstemp(3). 0, or -1 with
 * *cause. */
int cli_xfer_land_open(struct cli_xfer_land *l, const char *target,
    const char *suffix, char **cause);
/* The whole temp file, with mode less the umask, synced and renamed over
 * the target: 0, or -1 with *cause and the temp file removed. */
int cli_xfer_land_commit(struct cli_xfer_land *l, unsigned mode, char **cause);
/* Gives up what is not committed: the temp file closed and removed,
 * errno kept. */
void cli_xfer_land_discard(struct cli_xfer_land *l);

#endif
