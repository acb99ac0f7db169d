/* fuzz_procnet: libFuzzer target for the /proc/net/tcp{,6} lines berthd
 * reads. Whatever the bytes, the answer is -1, 0 or 1, and a listener's
 * port fits in 16 bits. The first byte picks the table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "procnet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[PROCNET_LINE_MAX + 2];
	struct portsock s = {0};
	int family, r;

	if (size == 0)
		return 0;
	family = data[0] & 1 ? AF_INET6 : AF_INET;
	data++;
	size--;
	if (size > sizeof line - 1)
		size = sizeof line - 1;
	memcpy(line, data, size);
	line[size] = '\0';
	r = procnet_parse(line, family, &s);
	if (r < -1 || r > 1 ||
	    (r == 1 && (s.port > 0xffff || s.family != family)))
		abort();
	return 0;
}
