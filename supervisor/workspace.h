/* workspace: workspace.prepare — a runtime's workspace cloned from an https
 * repository, or fetched and checked out again, by berth-workspace run as
 * the runtime's user; berthd checks the request, hands over the one-shot
 * credential on a pipe, reads the helper's report lines (wsreport.h),
 * journals the progress and answers once git is done.
 *
 * Ownership: workspace.c keeps each prepare under way (its helper, its
 * pipe, the credential until the helper ends, then wiped);
 * workspace_shutdown kills the helpers and frees them. */
#ifndef BERTH_WORKSPACE_H
#define BERTH_WORKSPACE_H

#include <event2/event.h>

#include "config.h"
#include "proto.h"
#include "server.h"

/* At most this many prepares at once. */
#define WORKSPACE_JOBS_MAX 8

/* cfg must outlive berthd's loop (the runtimes are looked up in it). */
void workspace_init(struct event_base *base, const struct config *cfg);
void workspace_shutdown(void);

void workspace_op_prepare(struct server_conn *c, const struct proto_msg *m);

#endif
