/* frame: length-prefixed framing of protocol messages on stream sockets
 * (the Unix socket, the journal). A frame is a 4-byte big-endian length
 * followed by that many bytes of one msgpack message. */
#ifndef BERTH_FRAME_H
#define BERTH_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HDR 4

enum frame_result {
	FRAME_NEED_MORE = 0, /* buf holds no whole frame yet */
	FRAME_OK = 1,        /* *payload, *plen describe one frame */
	FRAME_TOO_LARGE = -1 /* the header announces more than max: close */
};

/* Looks for one frame at the start of buf[0..len). On FRAME_OK the frame
 * occupies FRAME_HDR + *plen bytes of buf. A length over max is refused
 * from the header alone, before any byte of the body is awaited. */
enum frame_result frame_parse(const uint8_t *buf, size_t len, size_t max,
    const uint8_t **payload, size_t *plen);
/* The payload length a header announces. */
uint32_t frame_length(const uint8_t hdr[FRAME_HDR]);
/* Writes the header for a payload of len bytes. */
void frame_header(uint8_t hdr[FRAME_HDR], uint32_t len);

#endif
