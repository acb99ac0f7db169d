/* fuzz_runtime_listen: libFuzzer target for the /proc/net/tcp lines berthd
 * reads. Whatever the bytes, the answer is -1, 0 or 1, and a listener's
 * port fits in 16 bits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_listen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[RUNTIME_LISTEN_LINE_MAX + 2];
	unsigned long long inode;
	unsigned port = 0;
	int r;

	if (size > sizeof line - 1)
		size = sizeof line - 1;
	memcpy(line, data, size);
	line[size] = '\0';
	r = runtime_listen_parse(line, &port, &inode);
	if (r < -1 || r > 1 || (r == 1 && port > 0xffff))
		abort();
	return 0;
}
