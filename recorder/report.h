/* report: berth-desktop's word to berthd. Sends check.report on berthd's
 * Unix socket when the check's state changes, and again on every new
 * connection, so that berthd always holds the latest state. */
#ifndef BERTH_REPORT_H
#define BERTH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backoff.h"

/* berthd keeps a reason of at most 255 bytes; a longer one is cut. */
#define REPORT_REASON_MAX 255
/* The longest wait for berthd's answer to one report. */
#define REPORT_TIMEOUT_MS 2000
/* The first and the longest wait before trying berthd again. */
#define REPORT_BACKOFF_MIN_MS 100
#define REPORT_BACKOFF_MAX_MS 5000
/* report.handed once its fd is in use. */
#define REPORT_HANDED_GONE (-2)
/* The largest message accepted from berthd (an answer is tens of bytes). */
#define REPORT_MAX_MSG 65536

/*
 * The reporter of one check. report_create allocates it, report_free
 * closes the connection and frees it.
 */
struct report {
	char *path;  /* berthd's socket; NULL: changes are only logged */
	char *check; /* the check's name */
	int fd;      /* -1 while not connected */
	int handed;  /* berthd's handed fd, not yet used; -1: none */
	uint64_t next_id;
	bool have;         /* a state is known */
	bool ok;           /* the state */
	char *reason;      /* the state's reason, at most REPORT_REASON_MAX */
	bool acked;        /* berthd holds the state, on this connection */
	uint64_t retry_at; /* clock_mono_ms of the next try */
	struct backoff backoff;
	char *said; /* the last failure logged, to log a repeat quietly */
	unsigned char rbuf[4 + REPORT_MAX_MSG]; /* bytes read, not yet used */
	size_t rlen;
};

/* NULL with *cause (the caller frees it) if path cannot be a socket. */
struct report *report_create(const char *path, const char *check, char **cause);
/* The same on a connection berthd handed (fd, used once: when it is
 * gone, report exits, and berthd starts berth-desktop again). */
struct report *report_adopt(int fd, const char *check);
void report_free(struct report *rp);
/* Records the check's state (and logs it) if it differs from the last. */
void report_set(struct report *rp, bool ok, const char *reason);
/* Sends the state unless berthd holds it or a retry is not due yet;
 * waits up to timeout_ms for the answer. */
void report_flush(struct report *rp, int timeout_ms);
/* At exit: reports not ok with reason now, retry due or not. */
void report_last(struct report *rp, const char *reason, int timeout_ms);
/* The connection to poll for reading, or -1. */
int report_fd(const struct report *rp);
/* Reads what berthd sent unasked: mostly the end of the connection,
 * after which the state is sent again on a new one. */
void report_read(struct report *rp);
/* Milliseconds until a try is due; -1 if there is nothing to send. */
int report_wait_ms(const struct report *rp, uint64_t now);

#endif
