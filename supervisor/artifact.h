/* artifact: what a run produced, published by content. artifact.publish
 * copies a file into the store under its SHA-256 (hashing and copying a
 * slice per turn of the loop, so a large file never stalls berthd) and
 * answers with a reference and a bounded preview; artifact.read fetches
 * ranges of it later. The store is <state_dir>/artifacts and survives a
 * restart of berthd. Ownership: artifact owns the index and every pending
 * publication; artifact_shutdown frees them. */
#ifndef BERTH_ARTIFACT_H
#define BERTH_ARTIFACT_H

#include <event2/event.h>

#include "proto.h"
#include "server.h"

/* Returns 0, or -1 with *cause (the caller frees it). */
int artifact_init(struct event_base *base, const char *state_dir, char **cause);
void artifact_shutdown(void);

void artifact_op_publish(struct server_conn *c, const struct proto_msg *m);
void artifact_op_read(struct server_conn *c, const struct proto_msg *m);
void artifact_op_list(struct server_conn *c, const struct proto_msg *m);

#endif
