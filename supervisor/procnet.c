/* procnet: the listeners of /proc/net/tcp{,6} (see procnet.h). */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "procnet.h"

#define PROCNET_STATE_LISTEN 0x0A /* TCP_LISTEN, as the kernel numbers it */

/* The kernel prints an address as 32-bit words in host order, each as 8
 * hex digits: 1 word for IPv4, 4 for IPv6. */
static int
procnet_addr(const char *hex, int family, uint8_t addr[16])
{
	size_t words = family == AF_INET ? 1 : 4, w;
	unsigned v;
	char word[9];

	if (strlen(hex) != words * 8)
		return -1;
	memset(addr, 0, 16);
	for (w = 0; w < words; w++) {
		memcpy(word, hex + w * 8, 8);
		word[8] = '\0';
		if (sscanf(word, "%8x", &v) != 1)
			return -1;
		memcpy(addr + w * 4, &v, 4);
	}
	return 0;
}

int
procnet_parse(const char *line, int family, struct portsock *s)
{
	char local[34], remote[34], tail;
	unsigned lport, rport, state, uid;
	unsigned long long ino;
	uint8_t addr[16];
	int slot;

	if (strlen(line) > PROCNET_LINE_MAX)
		return -1;
	if (sscanf(line, " sl %c", &tail) == 1)
		return 0;
	/* sl: local rem st tx:rx tr:when retrnsmt uid timeout inode */
	if (sscanf(line,
	        " %d: %33[0-9A-Fa-f]:%x %33[0-9A-Fa-f]:%x %x %*x:%*x %*x:%*x "
	        "%*x %u %*d %llu",
	        &slot, local, &lport, remote, &rport, &state, &uid,
	        &ino) != 8 ||
	    slot < 0 || lport > 0xffff || rport > 0xffff ||
	    procnet_addr(local, family, addr) < 0)
		return -1;
	if (state != PROCNET_STATE_LISTEN)
		return 0;
	s->family = family;
	memcpy(s->addr, addr, sizeof addr);
	s->port = lport;
	s->inode = ino;
	s->uid = uid;
	return 1;
}

int
procnet_scan(struct portsock *v, size_t max)
{
	static const struct {
		const char *path;
		int family;
	} tables[] = {{"/proc/net/tcp", AF_INET}, {"/proc/net/tcp6", AF_INET6}};
	char line[PROCNET_LINE_MAX + 2];
	struct portsock s;
	size_t t, n = 0;
	FILE *f;

	for (t = 0; t < sizeof tables / sizeof tables[0]; t++) {
		if ((f = fopen(tables[t].path, "re")) == NULL) {
			if (t == 0)
				return -1;
			continue;
		}
		while (fgets(line, sizeof line, f) != NULL) {
			if (procnet_parse(line, tables[t].family, &s) != 1)
				continue;
			if (n == max) {
				fclose(f);
				return -1;
			}
			v[n++] = s;
		}
		fclose(f);
	}
	return (int)n;
}
