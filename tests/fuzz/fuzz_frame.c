/* fuzz_frame: libFuzzer target for the Unix socket's byte stream: frames
 * are cut from the input with frame_parse, as a reader would, and each
 * payload goes through proto_decode, which accepts it or refuses it as
 * bad_message, unknown_type or bad_id, with a reason. Every answer frame_parse
 * gives is checked against the header bytes it read. */
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t
fuzz_announced(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *payload;
	size_t left = size, plen;
	struct proto_msg m;
	const char *code;
	char err[256];
	enum frame_result r;

	while ((r = frame_parse(p, left, PROTO_MAX_MSG, &payload, &plen)) ==
	    FRAME_OK) {
		if (payload != p + FRAME_HDR || plen > PROTO_MAX_MSG ||
		    plen > left - FRAME_HDR || plen != fuzz_announced(p))
			abort();
		if (proto_decode(payload, plen, &m, &code, err, sizeof err) ==
		    0)
			proto_msg_free(&m);
		else if ((strcmp(code, PROTO_E_BAD_MESSAGE) != 0 &&
		             strcmp(code, PROTO_E_UNKNOWN_TYPE) != 0 &&
		             strcmp(code, PROTO_E_BAD_ID) != 0) ||
		    err[0] == '\0')
			abort();
		p += FRAME_HDR + plen;
		left -= FRAME_HDR + plen;
	}
	if (r == FRAME_TOO_LARGE &&
	    (left < FRAME_HDR || fuzz_announced(p) <= PROTO_MAX_MSG))
		abort();
	if (r == FRAME_NEED_MORE && left >= FRAME_HDR &&
	    fuzz_announced(p) <= left - FRAME_HDR)
		abort();
	return 0;
}
