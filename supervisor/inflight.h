/* inflight: the requests of each connection whose answer waits for
 * something besides the request itself (proc.wait, artifact.publish, the
 * desktop's ops), from the request until its answer: so that a second
 * request under the same id is told apart (duplicate_id), and so that
 * request.cancel can let one go.
 *
 * Ownership: the waiting module owns its waiter and adds it here with a
 * cancel function; it ends the entry when it answers or forgets the
 * request. Entries are keyed by the connection's serial and the
 * request's id, like the waiters' own answers, so a connection that goes
 * away needs no telling for correctness; inflight_conn_gone frees its
 * entries early. */
#ifndef BERTH_INFLIGHT_H
#define BERTH_INFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "server.h"

/* Lets go of whatever request id of connection serial waits for, without
 * answering it (inflight_cancel does), and without undoing anything
 * else: the command keeps running, the copy may finish unheard. */
typedef void (*inflight_cancel_fn)(void *arg, uint64_t serial, uint64_t id);

/* The cancel of a waiter that finds its connection by serial when it
 * answers (server_conn_find): arg points to that serial, which becomes 0,
 * no connection's, so the answer goes nowhere. */
void inflight_cancel_serial(void *arg, uint64_t serial, uint64_t id);

/* Request id of c waits from now on; cancel(arg, ...) lets go of it. */
void inflight_add(const struct server_conn *c, uint64_t id,
    inflight_cancel_fn cancel, void *arg);
/* Request id of connection serial is answered (or will never be): not in
 * flight any more. Nothing if it was not. */
void inflight_end(uint64_t serial, uint64_t id);
/* Whether request id of c waits for its answer. */
bool inflight_has(const struct server_conn *c, uint64_t id);
/* c is going away: its entries are dropped (their waiters are not told;
 * they find the connection gone when they answer). */
void inflight_conn_gone(const struct server_conn *c);
void inflight_shutdown(void);

/* request.cancel: lets go of a waiting request of this connection. */
void inflight_op_cancel(struct server_conn *c, const struct proto_msg *m);

#endif
