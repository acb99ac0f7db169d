/* fuzz_limit: libFuzzer target for the "limits" of proc.start, pty.open
 * and runtime.start (limit.c), read by berthd from a client's message.
 * Whatever the bytes, a map taken holds only values in their ranges, a
 * refusal's message is a NUL-ended string within its buffer, and a disk
 * limit is never taken where it is not allowed. */
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "limit.h"
#include "mpcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct mpcheck_limits lim = {8, 4096};
	char why[LIMIT_WHY_MAX], in_range[LIMIT_WHY_MAX];
	msgpack_unpacked u;
	struct limit_set l;
	bool disk_ok = size > 0 && (data[0] & 1);
	const char *bad;
	int k;

	/* As berthd takes a message: checked before msgpack-c allocates. */
	if (mpcheck_object(data, size, &lim, &bad) < 0)
		return 0;
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, (const char *)data, size, NULL) !=
	    MSGPACK_UNPACK_SUCCESS) {
		msgpack_unpacked_destroy(&u);
		return 0;
	}
	memset(why, 'x', sizeof why);
	if (limit_parse(&u.data, disk_ok, &l, why) == 0) {
		for (k = 0; k < LIMIT_NKEYS; k++)
			if (l.v[k] != 0 &&
			    !limit_in_range(
			        (enum limit_key)k, l.v[k], in_range))
				abort();
		if (!disk_ok && l.v[LIMIT_DISK] != 0)
			abort();
	} else if (memchr(why, '\0', sizeof why) == NULL)
		abort();
	msgpack_unpacked_destroy(&u);
	return 0;
}
