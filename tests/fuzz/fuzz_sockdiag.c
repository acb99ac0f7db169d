/* fuzz_sockdiag: libFuzzer target for the sock_diag answers berthd reads.
 * Whatever the bytes, the answer is -1, 0 or 1, no more listeners than
 * room are taken, and each is IPv4 or IPv6 with a 16-bit port. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "sockdiag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct portsock v[8];
	size_t n = 0, i;
	int r = sockdiag_parse(data, size, v, 8, &n);

	if (r < -1 || r > 1 || n > 8)
		abort();
	for (i = 0; i < n; i++)
		if ((v[i].family != AF_INET && v[i].family != AF_INET6) ||
		    v[i].port > 0xffff)
			abort();
	return 0;
}
