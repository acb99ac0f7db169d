/* limit_op: the limits.status op — a target named "proc/ID",
 * "pty/ID", "runtime/NAME" or "task/ID" answered with its limits as held
 * (enforce.h) and its usage. No state of its own. */
#ifndef BERTH_LIMIT_OP_H
#define BERTH_LIMIT_OP_H

#include "proto.h"
#include "server.h"

void limit_op_status(struct server_conn *c, const struct proto_msg *m);

#endif
