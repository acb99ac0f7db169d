/* mpcheck: validates untrusted msgpack bytes before anything is allocated. */
#include <string.h>

#include "mpcheck.h"

/* Reads a big-endian unsigned of n bytes at p. */
static uint64_t
mpcheck_be(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	while (n-- > 0)
		v = (v << 8) | *p++;
	return v;
}

/*
 * Describes the object whose first byte is at buf[pos]: how many header
 * bytes it has, how many payload bytes follow the header (strings, bins,
 * numbers) and how many child objects it contains (arrays, maps x 2).
 * Returns -1 on a byte that no acceptable object starts with.
 */
static int
mpcheck_head(const uint8_t *buf, size_t len, size_t pos, size_t *hdr,
    uint64_t *payload, uint64_t *children, int *container, const char **why)
{
	uint8_t b = buf[pos];
	size_t lenbytes = 0;
	int kind = 0; /* 0 leaf payload, 1 array, 2 map */

	*payload = 0;
	*children = 0;
	*container = 0;
	*hdr = 1;
	if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
		return 0;
	if (b >= 0x80 && b <= 0x8f) {
		*children = 2u * (b & 0x0f);
		*container = 1;
		return 0;
	}
	if (b >= 0x90 && b <= 0x9f) {
		*children = b & 0x0f;
		*container = 1;
		return 0;
	}
	if (b >= 0xa0 && b <= 0xbf) {
		*payload = b & 0x1f;
		return 0;
	}
	switch (b) {
	case 0xcc:
	case 0xd0: *payload = 1; return 0;
	case 0xcd:
	case 0xd1: *payload = 2; return 0;
	case 0xca:
	case 0xce:
	case 0xd2: *payload = 4; return 0;
	case 0xcb:
	case 0xcf:
	case 0xd3: *payload = 8; return 0;
	case 0xc4:
	case 0xd9: lenbytes = 1; break;
	case 0xc5:
	case 0xda: lenbytes = 2; break;
	case 0xc6:
	case 0xdb: lenbytes = 4; break;
	case 0xdc:
		lenbytes = 2;
		kind = 1;
		break;
	case 0xdd:
		lenbytes = 4;
		kind = 1;
		break;
	case 0xde:
		lenbytes = 2;
		kind = 2;
		break;
	case 0xdf:
		lenbytes = 4;
		kind = 2;
		break;
	case 0xc1: *why = "reserved msgpack byte 0xc1"; return -1;
	default: *why = "msgpack ext types are not accepted"; return -1;
	}
	if (len - pos - 1 < lenbytes) {
		*why = "truncated msgpack header";
		return -1;
	}
	uint64_t n = mpcheck_be(buf + pos + 1, lenbytes);
	*hdr = 1 + lenbytes;
	if (kind == 0)
		*payload = n;
	else
		*children = kind == 2 ? 2 * n : n;
	*container = kind != 0;
	return 0;
}

int
mpcheck_object(const uint8_t *buf, size_t len, const struct mpcheck_limits *lim,
    const char **why)
{
	/* pending[d] is how many objects the container at depth d still owes;
	 * depth 0 is the top level, which owes exactly one. */
	uint64_t pending[MPCHECK_DEPTH_CEILING + 1];
	unsigned max_depth = lim->max_depth < MPCHECK_DEPTH_CEILING
	    ? lim->max_depth
	    : MPCHECK_DEPTH_CEILING;
	unsigned depth = 0;
	size_t pos = 0, objects = 0;

	pending[0] = 1;
	for (;;) {
		while (pending[depth] == 0) {
			if (depth == 0) {
				if (pos != len) {
					*why =
					    "trailing bytes after the message";
					return -1;
				}
				return 0;
			}
			depth--;
		}
		if (pos >= len) {
			*why = "truncated message";
			return -1;
		}
		if (++objects > lim->max_objects) {
			*why = "too many objects in one message";
			return -1;
		}
		size_t hdr;
		uint64_t payload, children;
		int container;
		if (mpcheck_head(buf, len, pos, &hdr, &payload, &children,
		        &container, why) < 0)
			return -1;
		pending[depth]--;
		pos += hdr;
		if (payload > len - pos) {
			*why = "truncated message";
			return -1;
		}
		pos += payload;
		if (!container)
			continue;
		/* A container, even an empty one, is one level deeper. */
		if (depth + 1 > max_depth) {
			*why = "message nested too deeply";
			return -1;
		}
		/* Every child takes at least one byte. */
		if (children > len - pos) {
			*why = "container count exceeds the bytes that remain";
			return -1;
		}
		pending[++depth] = children;
	}
}
