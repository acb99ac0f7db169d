/* runtime_listen: whose is the listener on a server's port (see
 * runtime_listen.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime_listen.h"

#include "procnet.h"
#include "sockowner.h"
#include "xmalloc.h"

/* The most listeners of the whole sandbox read to find a port's. */
#define RUNTIME_LISTEN_SOCKS_MAX 4096
#define RUNTIME_LISTEN_INODES_MAX 64

/* The inodes of the sockets listening on port, into v (at most max);
 * how many, or -1 if more than max or a table cannot be read. */
static int
runtime_listen_inodes(unsigned port, unsigned long long *v, int max)
{
	struct portsock *s = xcalloc(RUNTIME_LISTEN_SOCKS_MAX, sizeof *s);
	int all = procnet_scan(s, RUNTIME_LISTEN_SOCKS_MAX), n = 0, i;

	for (i = 0; i < all; i++) {
		if (s[i].port != port)
			continue;
		if (n == max) {
			n = -1;
			break;
		}
		v[n++] = s[i].inode;
	}
	free(s);
	return all < 0 ? -1 : n;
}

bool
runtime_listen_owned(struct tree *t, unsigned port, char *why, size_t len)
{
	unsigned long long v[RUNTIME_LISTEN_INODES_MAX];
	pid_t holder[RUNTIME_LISTEN_INODES_MAX] = {0};
	int n = runtime_listen_inodes(port, v, RUNTIME_LISTEN_INODES_MAX);
	size_t m, left = n > 0 ? (size_t)n : 0;
	int i;

	if (n <= 0) {
		snprintf(why, len, "%s",
		    n == 0 ? "no socket listens on it"
		           : "its listeners cannot be told");
		return false;
	}
	tree_scan(t);
	for (m = 0; m < t->n && left > 0; m++)
		left -= sockowner_pid_holds(t->v[m].pid, v, holder, (size_t)n);
	for (i = 0; i < n; i++)
		if (holder[i] == 0) {
			snprintf(why, len,
			    "a socket listening on it (inode %llu) is not the "
			    "runtime's",
			    v[i]);
			return false;
		}
	return true;
}
