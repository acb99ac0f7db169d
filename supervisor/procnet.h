/* procnet: the TCP listeners in /proc/net/tcp and /proc/net/tcp6, the
 * kernel's text tables, read where sock_diag is refused and to tell the
 * owner of a runtime's port (runtime_listen.h).
 *
 * Ownership: nothing is kept between calls. */
#ifndef BERTH_PROCNET_H
#define BERTH_PROCNET_H

#include <stddef.h>

#include "portsock.h"

/* The longest line read; a longer one is malformed. */
#define PROCNET_LINE_MAX 512

/* One NUL-terminated line of a table of family (AF_INET or AF_INET6).
 * Returns 1 for a socket in state LISTEN, filling *s; 0 for any other
 * socket or the header; -1 for a line that is neither (or an address
 * that is not family's). */
int procnet_parse(const char *line, int family, struct portsock *s);
/* The listeners of both tables into v (at most max): how many, or -1 if
 * there are more than max or the IPv4 table cannot be read (a kernel
 * without IPv6 has no tcp6 table, and then no IPv6 listener). */
int procnet_scan(struct portsock *v, size_t max);

#endif
