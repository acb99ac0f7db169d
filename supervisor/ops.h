/* ops: berthd's handlers for the ops of protocol/catalog_ops.def, and the checks
 * every request passes first (unknown ops named, local ops refused to
 * remote clients, hello before any op but the local ones). */
#ifndef BERTH_OPS_H
#define BERTH_OPS_H

#include "config.h"
#include "proto.h"
#include "server.h"

/* Remembers what hello and state report (cfg must outlive berthd's loop)
 * and checks that every op the catalog gives berthd has a handler. */
void ops_init(const struct config *cfg);
/* Answers one request on c (always exactly one response). */
void ops_dispatch(struct server_conn *c, const struct proto_msg *m);

#endif
