/* runtime_listen: whose is the listener on a server's port (see
 * runtime_listen.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime_listen.h"

#define RUNTIME_LISTEN_STATE 0x0A /* TCP_LISTEN, as the kernel numbers it */
#define RUNTIME_LISTEN_INODES_MAX 64

int
runtime_listen_parse(
    const char *line, unsigned *port, unsigned long long *inode)
{
	char local[33], remote[33], tail;
	unsigned lport, rport, state;
	unsigned long long ino;
	int slot;

	if (strlen(line) > RUNTIME_LISTEN_LINE_MAX)
		return -1;
	if (sscanf(line, " sl %c", &tail) == 1)
		return 0;
	/* sl: local rem st tx:rx tr:when retrnsmt uid timeout inode */
	if (sscanf(line,
	        " %d: %32[0-9A-Fa-f]:%x %32[0-9A-Fa-f]:%x %x %*x:%*x %*x:%*x "
	        "%*x %*u %*d %llu",
	        &slot, local, &lport, remote, &rport, &state, &ino) != 7 ||
	    slot < 0 || lport > 0xffff || rport > 0xffff)
		return -1;
	if (state != RUNTIME_LISTEN_STATE)
		return 0;
	*port = lport;
	*inode = ino;
	return 1;
}

/* The inodes of the sockets listening on port, into v (at most max);
 * how many, or -1 if more than max or a table cannot be read. */
static int
runtime_listen_inodes(unsigned port, unsigned long long *v, int max)
{
	static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	char line[RUNTIME_LISTEN_LINE_MAX + 2];
	unsigned long long ino;
	unsigned p;
	int n = 0;
	size_t t;
	FILE *f;

	for (t = 0; t < sizeof tables / sizeof tables[0]; t++) {
		/* No IPv6 in the kernel: no tcp6 table, and nothing in it. */
		if ((f = fopen(tables[t], "re")) == NULL) {
			if (t == 0)
				return -1;
			continue;
		}
		while (fgets(line, sizeof line, f) != NULL)
			if (runtime_listen_parse(line, &p, &ino) == 1 &&
			    p == port) {
				if (n == max) {
					fclose(f);
					return -1;
				}
				v[n++] = ino;
			}
		fclose(f);
	}
	return n;
}

/* Clears in v each inode that is a socket open in pid; returns how many
 * are left. */
static int
runtime_listen_clear_open(pid_t pid, unsigned long long *v, int n, int left)
{
	char path[64], link[64], want[48];
	struct dirent *d;
	ssize_t len;
	DIR *dir;
	int i;

	snprintf(path, sizeof path, "/proc/%ld/fd", (long)pid);
	if ((dir = opendir(path)) == NULL)
		return left;
	while (left > 0 && (d = readdir(dir)) != NULL) {
		snprintf(path, sizeof path, "/proc/%ld/fd/%.16s", (long)pid,
		    d->d_name);
		len = readlink(path, link, sizeof link - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		for (i = 0; i < n; i++) {
			snprintf(want, sizeof want, "socket:[%llu]", v[i]);
			if (v[i] != 0 && strcmp(link, want) == 0) {
				v[i] = 0;
				left--;
			}
		}
	}
	closedir(dir);
	return left;
}

bool
runtime_listen_owned(struct tree *t, unsigned port, char *why, size_t len)
{
	unsigned long long v[RUNTIME_LISTEN_INODES_MAX];
	int n = runtime_listen_inodes(port, v, RUNTIME_LISTEN_INODES_MAX);
	int left = n, i;
	size_t m;

	if (n <= 0) {
		snprintf(why, len, "%s",
		    n == 0 ? "no socket listens on it"
		           : "its listeners cannot be told");
		return false;
	}
	tree_scan(t);
	for (m = 0; m < t->n && left > 0; m++)
		left = runtime_listen_clear_open(t->v[m].pid, v, n, left);
	for (i = 0; i < n; i++)
		if (v[i] != 0) {
			snprintf(why, len,
			    "a socket listening on it (inode %llu) is not the "
			    "runtime's",
			    v[i]);
			return false;
		}
	return true;
}
