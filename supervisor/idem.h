/* idem: idempotency keys of the ops that create things (docs/protocol.md,
 * "Idempotency keys"). A request carrying a key berthd has seen for the
 * same op is not performed again: it is answered the first's result, or,
 * while the first waits, it waits too for the same answer. Keys are
 * berthd-wide, since a client resends on a new connection.
 *
 * Ownership: idem owns the table of keys, a copy of each first answer's
 * result, and the list of repeats waiting on each unanswered first (kept
 * as connection serial and request id: a connection may go first). */
#ifndef BERTH_IDEM_H
#define BERTH_IDEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "proto.h"
#include "server.h"

/* Keys remembered; the oldest is forgotten to make room for a new one. */
#define IDEM_MAX 4096
/* A key is 1..IDEM_KEY_MAX bytes of printable ASCII, 0x21..0x7e. */
#define IDEM_KEY_MAX 128
/* Repeats that may wait on one first request still unanswered. */
#define IDEM_WAITERS_MAX 16

/* Call before op's handler runs on m: true if idem has answered m (the
 * first's result, a conflict, a bad key) or holds it until the first is
 * answered; false if the handler is to run (op takes no key, m has none,
 * or m is the first of its key). */
bool idem_begin(
    struct server_conn *c, enum catalog_op_id op, const struct proto_msg *m);
/* Every answer berthd sends passes here (but a duplicate_id refusal,
 * which answers another request under the same id): request id of
 * connection serial was answered ok with the result obj, or not with the
 * error map obj (len bytes, copied if kept). */
void idem_answered(
    uint64_t serial, uint64_t id, bool ok, const void *obj, size_t len);
/* Whether a key waits for the answer to request id of connection serial
 * (the first of the key, not answered yet). */
bool idem_awaits(uint64_t serial, uint64_t id);
/* Forgets every key. */
void idem_shutdown(void);

#endif
