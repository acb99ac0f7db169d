/* runtime_listen: whether the listener on a server's port is the
 * runtime's own.
 *
 * A port berthd picks is free when picked and bound by the runtime a
 * moment later, and a port the request names is known in advance: in
 * either case another process (the same unprivileged user's, outside the
 * runtime) can bind it first, and the readiness probe would then pass on
 * that process's listener, to which a backend would hand the server's
 * password. So a server is ready only once every TCP socket listening on
 * its port (IPv4 and IPv6, any address) is open in a process of the
 * runtime's tree (tree.h: its session or process group, a descendant of
 * one, or one seen so before), the same processes a stop ends.
 *
 * Ownership: nothing is kept between calls. */
#ifndef BERTH_RUNTIME_LISTEN_H
#define BERTH_RUNTIME_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tree.h"

/* Whether some socket listens on port and every one that does is open in
 * a process of t, scanned afresh (see above). When not, why says so. */
bool runtime_listen_owned(struct tree *t, unsigned port, char *why, size_t len);

#endif
