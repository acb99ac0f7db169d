/* sockdiag: the TCP listeners, IPv4 and IPv6, asked of the kernel over
 * NETLINK_SOCK_DIAG (an inet_diag_req_v2 dump of the sockets in LISTEN),
 * which costs one round trip per family where /proc/net/tcp prints every
 * socket as text.
 * Each dump uses a netlink socket of its own, so that what a failed one
 * left unread cannot be taken for the next one's answer.
 *
 * Ownership: nothing is kept between calls. */
#ifndef BERTH_SOCKDIAG_H
#define BERTH_SOCKDIAG_H

#include <stddef.h>
#include <stdint.h>

#include "portsock.h"

/* Every TCP listener into v (at most max): how many, or -1 with errno if
 * the kernel refused (as a sandbox's seccomp or a kernel without
 * inet_diag does), the answer was malformed or there are more than max. */
int sockdiag_dump(struct portsock *v, size_t max);
/* One datagram of a dump's answer, buf[0..len), its listeners appended to
 * v at *n (at most max). Returns 1 once the dump's end is in it, 0 if more
 * is to come, -1 for a malformed message, an error the kernel answered,
 * a socket not in LISTEN or not IPv4/IPv6, or more than max. */
int sockdiag_parse(
    const uint8_t *buf, size_t len, struct portsock *v, size_t max, size_t *n);

#endif
