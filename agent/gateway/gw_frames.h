/* gw_frames: follows the frame headers of a client's WebSocket stream
 * (RFC 6455 section 5.2) to find the first frame the client did not mask.
 * Pure: no libwebsockets, no I/O, so that it can be tested and fuzzed on
 * its own; gw_mask.c feeds it what the gateway's sockets read. */
#ifndef BERTH_GW_FRAMES_H
#define BERTH_GW_FRAMES_H

#include <stddef.h>
#include <stdint.h>

/* Where a stream is between two frames' bytes. */
enum gw_frames_at {
	GW_FRAMES_HEAD0,   /* FIN, RSV and opcode */
	GW_FRAMES_HEAD1,   /* MASK and the 7-bit length */
	GW_FRAMES_LENGTH,  /* the 16- or 64-bit length */
	GW_FRAMES_KEY,     /* the 4-byte masking key */
	GW_FRAMES_PAYLOAD, /* payload bytes */
	GW_FRAMES_REFUSED, /* sent an unmasked frame: nothing more counts */
};

/* One stream's position; all zero is a stream's start. Owned by the
 * caller, one per connection. */
struct gw_frames {
	enum gw_frames_at at;
	unsigned left;   /* bytes of the length or key still to come */
	uint64_t length; /* the length being read, then payload left */
};

/* Follows buf[0..len) of f's stream. Returns how many bytes of buf come
 * before the header of an unmasked frame, or len if none starts in it
 * (a header begun in earlier bytes gives 0). Once the stream is refused,
 * f->at stays GW_FRAMES_REFUSED and every later call returns 0. */
size_t gw_frames_follow(struct gw_frames *f, const uint8_t *buf, size_t len);

#endif
