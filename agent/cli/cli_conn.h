/* cli_conn: one blocking connection of the berth CLI to berthd, over the
 * Unix socket or through the gateway's WebSocket. It says hello, matches
 * responses to requests, and keeps what arrives in between for later. */
#ifndef BERTH_CLI_CONN_H
#define BERTH_CLI_CONN_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct cli_conn;

/* How a call ended. Each failure maps to one exit status of the CLI. */
enum cli_conn_status {
	CLI_CONN_OK = 0,
	CLI_CONN_LOST = -1,        /* cannot connect, or the connection broke */
	CLI_CONN_AUTH = -2,        /* the server refused the token */
	CLI_CONN_TIMEOUT = -3,     /* no answer before the deadline */
	CLI_CONN_PROTOCOL = -4,    /* the server broke berth.v1 */
	CLI_CONN_ANSWERED = -5,    /* the server answered hello with an error */
	CLI_CONN_INTERRUPTED = -6, /* cli_conn_interrupt was called */
};

/* Packs the args map of a request (exactly one msgpack map). */
typedef void (*cli_conn_pack_cb)(msgpack_packer *pk, void *ctx);

/* The first id of the requests a caller sends without waiting
 * (cli_conn_push), far above those cli_conn_request hands out, so that
 * the two never meet on one connection. */
#define CLI_CONN_RAW_ID (UINT64_C(1) << 32)

/*
 * Open a connection and say hello; on CLI_CONN_OK *connp is the new
 * connection, which the caller closes with cli_conn_close. On any other
 * status *cause says what failed, for the caller to print and free.
 * timeout_ms bounds the connect and the hello together (< 0: no bound).
 */
int cli_conn_open_unix(
    const char *path, int timeout_ms, struct cli_conn **connp, char **cause);
int cli_conn_open_ws(const char *url, const char *token, int timeout_ms,
    struct cli_conn **connp, char **cause);
void cli_conn_close(struct cli_conn *conn);
/* The last message received, owned by conn until its next call: right
 * after an open, hello's answer (its labels, its capabilities). */
const struct proto_msg *cli_conn_last(const struct cli_conn *conn);
/* Closes the connection *connp holds (if any), which then holds none:
 * NULL. */
void cli_conn_forget(struct cli_conn **connp);

/* Sends one packed message (at most PROTO_MAX_MSG bytes), copied. */
int cli_conn_send(
    struct cli_conn *conn, const void *buf, size_t len, char **cause);
/* Sends a request for op with the caller's id (from CLI_CONN_RAW_ID on)
 * and args packed by pack (NULL: an empty map), without waiting for its
 * answer, which cli_conn_recv returns in its turn. */
int cli_conn_push(struct cli_conn *conn, uint64_t id, const char *op,
    cli_conn_pack_cb pack, void *ctx, char **cause);

/*
 * Returns the next message in *msgp: those set aside by cli_conn_request
 * first, then what arrives, waiting up to timeout_ms (< 0: forever).
 * The connection owns the message and the bytes it points into; both stay
 * valid until the next cli_conn_recv, cli_conn_request or cli_conn_close.
 */
int cli_conn_recv(struct cli_conn *conn, int timeout_ms,
    const struct proto_msg **msgp, char **cause);

/*
 * Sends a request for op with a fresh id (args packed by pack, or an
 * empty map if pack is NULL) and waits up to timeout_ms for its response,
 * which is returned in *respp under the same ownership as cli_conn_recv.
 * An error response is CLI_CONN_OK with (*respp)->ok false. Messages that
 * arrive meanwhile are kept, in order, for cli_conn_recv.
 */
int cli_conn_request(struct cli_conn *conn, const char *op,
    cli_conn_pack_cb pack, void *ctx, int timeout_ms,
    const struct proto_msg **respp, char **cause);
/* cli_conn_request, but an error response fails too: CLI_CONN_ANSWERED
 * with *cause "CODE: MESSAGE" (the caller frees it). */
int cli_conn_call(struct cli_conn *conn, const char *op, cli_conn_pack_cb pack,
    void *ctx, int timeout_ms, const struct proto_msg **respp, char **cause);
/* An error response as a failure: CLI_CONN_ANSWERED, *cause "CODE:
 * MESSAGE". */
int cli_conn_refused(const struct proto_msg *resp, char **cause);

/*
 * Makes every wait of every connection, and cli_conn_pause, return
 * CLI_CONN_INTERRUPTED from now on. Safe to call from a signal handler.
 */
void cli_conn_interrupt(void);
/* Sleeps ms milliseconds unless interrupted: CLI_CONN_OK or
 * CLI_CONN_INTERRUPTED. */
int cli_conn_pause(int ms);

#endif
