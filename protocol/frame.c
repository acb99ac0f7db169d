/* frame: length-prefixed framing of protocol messages on stream sockets. */
#include "frame.h"

uint32_t
frame_length(const uint8_t hdr[FRAME_HDR])
{
	return (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	    (uint32_t)hdr[2] << 8 | hdr[3];
}

enum frame_result
frame_parse(const uint8_t *buf, size_t len, size_t max, const uint8_t **payload,
    size_t *plen)
{
	uint32_t n;

	if (len < FRAME_HDR)
		return FRAME_NEED_MORE;
	n = frame_length(buf);
	if (n > max)
		return FRAME_TOO_LARGE;
	if (len - FRAME_HDR < n)
		return FRAME_NEED_MORE;
	*payload = buf + FRAME_HDR;
	*plen = n;
	return FRAME_OK;
}

void
frame_header(uint8_t hdr[FRAME_HDR], uint32_t len)
{
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
}
