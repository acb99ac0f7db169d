/* ports: the TCP ports listened on in the sandbox, and the events that
 * tell a backend of them: port.opened when a socket starts listening,
 * port.closed when it stops, and the op port.list.
 *
 * A listener is known by (family, address, port, inode): a server that
 * closes its socket and opens another on the same port is a close and an
 * open. berthd learns of listeners by asking the kernel (the kernel
 * tells no one of a listen()): over sock_diag (sockdiag.h), or from
 * /proc/net (procnet.h) with [berthd] ports = proc or where netlink is
 * refused. It asks at once when a program it launched calls listen(2)
 * (listenwatch.h), and on a timer for every other listener: every
 * PORTS_SAFETY_MS where those notifications work, else every
 * PORTS_SOCKDIAG_MS (PORTS_PROC_MS from /proc/net). A new listener's
 * process, command and user are looked for once (sockowner.h) and kept
 * with it.
 *
 * Ownership: the set is this module's; ports_shutdown frees it. */
#ifndef BERTH_PORTS_H
#define BERTH_PORTS_H

#include <event2/event.h>

#include "config.h"
#include "proto.h"
#include "server.h"

#define PORTS_SOCKDIAG_MS 25
#define PORTS_PROC_MS 250
/* sock_diag's poll where listen(2) notifications work: for listeners
 * outside berthd's launches (services, the gateway). */
#define PORTS_SAFETY_MS 1000
#define PORTS_SOON_TRIES 5
/* The most listeners kept; past it a scan is refused (logged) and the
 * set kept as it was. */
#define PORTS_MAX 4096

/* Starts discovery as cfg->ports says, journaling the listeners already
 * there as opened. */
void ports_init(struct event_base *base, const struct config *cfg);
void ports_shutdown(void);
void ports_op_list(struct server_conn *c, const struct proto_msg *m);

#endif
