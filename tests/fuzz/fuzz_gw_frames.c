/* fuzz_gw_frames: libFuzzer target for the follower of client WebSocket
 * frame headers (gw_frames.c). The first two bytes pick where the rest is
 * cut in two: fed whole or in two pieces, the stream comes to the same
 * verdict, the same bytes pass, and no call passes more than it was
 * given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Follows a copy of exactly len bytes, so that a read past the end is
 * caught. */
static size_t
fuzz_follow(struct gw_frames *f, const uint8_t *buf, size_t len)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);
	size_t r;

	memcpy(copy, buf, len);
	r = gw_frames_follow(f, copy, len);
	free(copy);
	if (r > len)
		abort();
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_frames whole = {0}, parts = {0};
	size_t n, k, one, a, b;
	const uint8_t *p;

	if (size < 2)
		return 0;
	p = data + 2;
	n = size - 2;
	k = ((size_t)data[0] << 8 | data[1]) % (n + 1);
	one = fuzz_follow(&whole, p, n);
	a = fuzz_follow(&parts, p, k);
	b = fuzz_follow(&parts, p + k, n - k);
	if ((whole.at == GW_FRAMES_REFUSED) != (parts.at == GW_FRAMES_REFUSED))
		abort();
	if (whole.at != GW_FRAMES_REFUSED) {
		/* Nothing refused: everything passes, and the two end in the
		 * same place. */
		if (one != n || a != k || b != n - k || whole.at != parts.at ||
		    whole.left != parts.left || whole.length != parts.length)
			abort();
		return 0;
	}
	/* Refused: at a header whose second byte has no mask bit. */
	if (one + 1 >= n || (p[one + 1] & 0x80) != 0)
		abort();
	/* The pieces pass what the whole passed, save the first
	 * byte of the refused header when the cut falls right after it. */
	if (a < k) {
		if (a != one || b != 0)
			abort();
	} else if (a + b != one && !(a == k && k == one + 1 && b == 0))
		abort();
	return 0;
}
