/* base64: encoding only; nothing of berth's reads it back. */
#include "base64.h"

#include <stdint.h>

void
base64_encode(const void *src, size_t n, char *out)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = src;
	uint32_t v;
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = tab[(v >> 6) & 63];
		*out++ = tab[v & 63];
	}
	if (n - i > 0) {
		v = (uint32_t)p[i] << 16;
		if (n - i == 2)
			v |= (uint32_t)p[i + 1] << 8;
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = n - i == 2 ? tab[(v >> 6) & 63] : '=';
		*out++ = '=';
	}
	*out = '\0';
}
