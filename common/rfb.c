/* rfb: RFB's integers and ProtocolVersion (see rfb.h). */
#include <string.h>

#include "rfb.h"

uint32_t
rfb_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

unsigned
rfb_u16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

int
rfb_version(const uint8_t *p, unsigned *major, unsigned *minor)
{
	unsigned n[2] = {0, 0};
	int i;

	if (memcmp(p, "RFB ", 4) != 0 || p[7] != '.' || p[11] != '\n')
		return -1;
	for (i = 4; i < 11; i++) {
		if (i == 7)
			continue;
		if (p[i] < '0' || p[i] > '9')
			return -1;
		n[i > 7] = n[i > 7] * 10 + (unsigned)(p[i] - '0');
	}
	*major = n[0];
	*minor = n[1];
	return 0;
}
