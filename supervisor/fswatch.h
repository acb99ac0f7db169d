/* fswatch: fs.watch — inotify watches on a file or a tree, whose changes
 * are journaled as fs.changed events, coalesced per path over a short
 * window, with fs.overflow whenever changes could not all be told.
 * Watches belong to berthd, not to the connection that made them.
 * Ownership: fswatch owns the inotify fd, every watch and its pending
 * changes; fswatch_shutdown frees them. */
#ifndef BERTH_FSWATCH_H
#define BERTH_FSWATCH_H

#include <event2/event.h>

#include "proto.h"
#include "server.h"

void fswatch_init(struct event_base *base);
void fswatch_shutdown(void);

void fswatch_op_watch(struct server_conn *c, const struct proto_msg *m);
void fswatch_op_unwatch(struct server_conn *c, const struct proto_msg *m);
void fswatch_op_list(struct server_conn *c, const struct proto_msg *m);

#endif
