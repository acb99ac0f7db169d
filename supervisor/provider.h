/* provider: ops that another process serves through berthd. A berth
 * program (berth-desktop) connects to the Unix socket and says it serves
 * the desktop ops (desktop.provide); berthd then forwards each such
 * request to it under an id of its own and sends the answer back to the
 * connection that asked, under that connection's id. Clients see one
 * protocol and one place; the X11 client stays out of PID 1.
 *
 * Ownership: provider owns the table of forwarded requests. It keeps
 * connections by serial (server_conn_find), never by pointer, so a
 * client that goes away needs no telling; provider_conn_gone is called
 * before a connection is freed, for the provider's own. */
#ifndef BERTH_PROVIDER_H
#define BERTH_PROVIDER_H

#include "config.h"
#include "proto.h"
#include "server.h"

/* Requests forwarded and not yet answered, at most. */
#define PROVIDER_PENDING_MAX 256
/* The largest event data desktop.emit journals, packed (a recording's
 * event is a few hundred bytes). */
#define PROVIDER_EMIT_MAX 16384

/* cfg says whether the sandbox has a desktop: a service of it is
 * berth-desktop (desktop_check). */
void provider_init(const struct config *cfg);
void provider_shutdown(void);
/* Whether the desktop ops are served here: a desktop is configured, or
 * a provider has said desktop.provide. */
bool provider_available(void);

/* desktop.provide (local): c serves the desktop ops from now on. */
void provider_op_provide(struct server_conn *c, const struct proto_msg *m);
/* desktop.emit (local): the provider journals one of its events. */
void provider_op_emit(struct server_conn *c, const struct proto_msg *m);
/* A desktop op from a client: forwarded, or unavailable. */
void provider_forward(struct server_conn *c, const struct proto_msg *m);
/* Whether c is the provider (whose responses are answers to forward). */
bool provider_is(const struct server_conn *c);
/* A response from the provider: back to whoever asked. */
void provider_answer(struct server_conn *c, const struct proto_msg *m);
/* c is going away: if it is the provider, what it owed fails. */
void provider_conn_gone(struct server_conn *c);

#endif
