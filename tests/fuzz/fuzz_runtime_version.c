/* fuzz_runtime_version: libFuzzer target for the version berthd takes from
 * what a runtime's program printed. Whatever the bytes, the answer is
 * NULL or a string of printable ASCII no longer than the limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_version.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *v;
	size_t i, n;

	if (size > RUNTIME_VERSION_OUT_MAX)
		size = RUNTIME_VERSION_OUT_MAX;
	v = runtime_version_parse((const char *)data, size);
	if (v == NULL)
		return 0;
	n = strlen(v);
	if (n == 0 || n > RUNTIME_VERSION_MAX)
		abort();
	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
			abort();
	free(v);
	return 0;
}
