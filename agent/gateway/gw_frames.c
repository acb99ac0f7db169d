/* gw_frames: the frame-header follower of the gateway's WebSocket servers
 * (see gw_frames.h). */
#include "gw_frames.h"

/* Takes one header byte. Returns -1 at an unmasked frame. */
static int
gw_frames_header(struct gw_frames *f, uint8_t b)
{
	switch (f->at) {
	case GW_FRAMES_HEAD0: f->at = GW_FRAMES_HEAD1; return 0;
	case GW_FRAMES_HEAD1:
		if (!(b & 0x80))
			return -1;
		f->length = b & 0x7f;
		f->left = f->length == 126 ? 2 : f->length == 127 ? 8 : 0;
		if (f->left > 0) {
			f->length = 0;
			f->at = GW_FRAMES_LENGTH;
		} else {
			f->at = GW_FRAMES_KEY;
			f->left = 4;
		}
		return 0;
	case GW_FRAMES_LENGTH:
		f->length = f->length << 8 | b;
		if (--f->left == 0) {
			f->at = GW_FRAMES_KEY;
			f->left = 4;
		}
		return 0;
	case GW_FRAMES_KEY:
		if (--f->left == 0)
			f->at =
			    f->length > 0 ? GW_FRAMES_PAYLOAD : GW_FRAMES_HEAD0;
		return 0;
	default: return 0;
	}
}

size_t
gw_frames_follow(struct gw_frames *f, const uint8_t *buf, size_t len)
{
	size_t i = 0, start = 0, take;

	if (f->at == GW_FRAMES_REFUSED)
		return 0;
	while (i < len) {
		if (f->at == GW_FRAMES_PAYLOAD) {
			/* The payload is the library's to read; only its
			 * length counts here. */
			take =
			    f->length < len - i ? (size_t)f->length : len - i;
			f->length -= take;
			i += take;
			if (f->length == 0)
				f->at = GW_FRAMES_HEAD0;
			continue;
		}
		if (f->at == GW_FRAMES_HEAD0)
			start = i;
		if (gw_frames_header(f, buf[i]) < 0) {
			f->at = GW_FRAMES_REFUSED;
			return start;
		}
		i++;
	}
	return len;
}
