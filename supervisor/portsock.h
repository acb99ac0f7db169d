/* portsock: one TCP socket in state LISTEN, as the kernel reports it
 * through sock_diag (sockdiag.h) or /proc/net/tcp{,6} (procnet.h), so that
 * both readers fill the same record and ports.c compares them alike.
 *
 * Ownership: a plain value. */
#ifndef BERTH_PORTSOCK_H
#define BERTH_PORTSOCK_H

#include <stdint.h>

struct portsock {
	int family;       /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network order; IPv4 in the first 4 bytes */
	unsigned port;    /* host order */
	unsigned long long inode;
	unsigned uid;
};

#endif
