/* gw_rfbview: the view-only filter of a client's RFB stream (see
 * gw_rfbview.h). RFC 6143 has the handshake and the core messages; the
 * extensions are those of the RFB community's protocol description.
 *
 * Neither side of a handshake speaks before the other's last word, so a
 * step that depends on what the other side said and comes before it was
 * seen is refused rather than guessed at: a guess that differs from the
 * server's reading would let the server read as a message what the
 * filter took for something else. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gw_rfbview.h"
#include "rfb.h"

/* VNC authentication's challenge and response. */
#define GW_RFBVIEW_VNCAUTH_LEN 16

/* The security types a view-only relay can follow: any other puts
 * bytes of its own between the handshake and ClientInit. */
#define GW_RFBVIEW_SEC_NONE 1
#define GW_RFBVIEW_SEC_VNCAUTH 2

/* The client's messages. */
enum {
	GW_RFBVIEW_SET_PIXEL_FORMAT = 0,
	GW_RFBVIEW_SET_ENCODINGS = 2,
	GW_RFBVIEW_UPDATE_REQUEST = 3,
	GW_RFBVIEW_KEY = 4,
	GW_RFBVIEW_POINTER = 5,
	GW_RFBVIEW_CUT_TEXT = 6,
	GW_RFBVIEW_CONTINUOUS_UPDATES = 150,
	GW_RFBVIEW_FENCE = 248,
	GW_RFBVIEW_XVP = 250,
	GW_RFBVIEW_SET_DESKTOP_SIZE = 251,
	GW_RFBVIEW_GII = 253,
	GW_RFBVIEW_QEMU = 255,
};

static void gw_rfbview_fail(struct gw_rfbview *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
gw_rfbview_fail(struct gw_rfbview *v, const char *fmt, ...)
{
	va_list ap;

	if (v->why[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(v->why, sizeof v->why, fmt, ap);
	va_end(ap);
}

void
gw_rfbview_init(struct gw_rfbview *v)
{
	memset(v, 0, sizeof *v);
}

const char *
gw_rfbview_error(const struct gw_rfbview *v)
{
	return v->why[0] != '\0' ? v->why : NULL;
}

/* A ProtocolVersion as major * 1000 + minor, or -1. */
static long
gw_rfbview_version(const uint8_t *p)
{
	unsigned major, minor;

	if (rfb_version(p, &major, &minor) < 0)
		return -1;
	return (long)major * 1000 + minor;
}

/* What the server says once the client's choice of type is known. */
static void
gw_rfbview_server_next(struct gw_rfbview *v)
{
	if (v->type == GW_RFBVIEW_SEC_VNCAUTH) {
		v->s_at = GW_RFBVIEW_S_CHALLENGE;
		v->s_left = GW_RFBVIEW_VNCAUTH_LEN;
	} else if (v->minor >= 8) {
		v->s_at = GW_RFBVIEW_S_RESULT;
		v->s_left = 4;
	} else
		v->s_at = GW_RFBVIEW_S_DONE;
}

/* One byte of the server's handshake. */
static void
gw_rfbview_server_byte(struct gw_rfbview *v, uint8_t b)
{
	long version;

	switch (v->s_at) {
	case GW_RFBVIEW_S_VERSION:
		v->s_hold[v->s_have++] = b;
		if (v->s_have < RFB_VERSION_LEN)
			return;
		version = gw_rfbview_version(v->s_hold);
		if (version < 0) {
			gw_rfbview_fail(v,
			    "the server's ProtocolVersion is "
			    "malformed");
			return;
		}
		v->server_version = (unsigned)version;
		v->s_have = 0;
		v->s_at = GW_RFBVIEW_S_SECURITY;
		return;
	case GW_RFBVIEW_S_SECURITY:
		if (v->minor == 0)
			break;
		if (v->minor >= 7) {
			if (b == 0) {
				v->s_at = GW_RFBVIEW_S_FAILED;
				return;
			}
			v->s_left = b;
			v->s_at = GW_RFBVIEW_S_TYPES;
			return;
		}
		v->s_hold[v->s_have++] = b;
		if (v->s_have < 4)
			return;
		v->s_have = 0;
		switch (rfb_u32(v->s_hold)) {
		case 0: v->s_at = GW_RFBVIEW_S_FAILED; return;
		case GW_RFBVIEW_SEC_NONE:
		case GW_RFBVIEW_SEC_VNCAUTH:
			v->type = v->s_hold[3];
			gw_rfbview_server_next(v);
			return;
		default:
			gw_rfbview_fail(v,
			    "security type %u is not one a view-only relay "
			    "follows",
			    rfb_u32(v->s_hold));
			return;
		}
	case GW_RFBVIEW_S_TYPES:
		v->offered[b / 8] |= (uint8_t)(1u << (b % 8));
		if (--v->s_left == 0)
			v->s_at = GW_RFBVIEW_S_CHOICE;
		return;
	case GW_RFBVIEW_S_CHALLENGE:
		if (--v->s_left == 0) {
			v->s_at = GW_RFBVIEW_S_RESULT;
			v->s_left = 4;
		}
		return;
	case GW_RFBVIEW_S_RESULT:
		v->s_hold[v->s_have++] = b;
		if (--v->s_left > 0)
			return;
		v->s_have = 0;
		v->s_at = rfb_u32(v->s_hold) == 0 ? GW_RFBVIEW_S_DONE
		                                  : GW_RFBVIEW_S_FAILED;
		return;
	default: break;
	}
	gw_rfbview_fail(v, "the server spoke out of turn in the handshake");
}

void
gw_rfbview_from_server(struct gw_rfbview *v, const uint8_t *in, size_t len)
{
	size_t i;

	for (i = 0; i < len && v->why[0] == '\0'; i++) {
		/* After the handshake nothing the server says changes how
		 * the client's bytes are read. */
		if (v->s_at == GW_RFBVIEW_S_DONE ||
		    v->s_at == GW_RFBVIEW_S_FAILED)
			return;
		gw_rfbview_server_byte(v, in[i]);
	}
}

static void
gw_rfbview_out_of_turn(struct gw_rfbview *v)
{
	if (v->s_at == GW_RFBVIEW_S_FAILED)
		gw_rfbview_fail(v, "the server refused the client");
	else
		gw_rfbview_fail(
		    v, "the client spoke out of turn in the handshake");
}

/* The client's ProtocolVersion, once whole: one of those RFB defines,
 * and none above the server's, which would leave to the server how the
 * rest is read. */
static int
gw_rfbview_client_version(struct gw_rfbview *v)
{
	long version = gw_rfbview_version(v->c_hold);

	v->c_have = 0;
	if (version != 3003 && version != 3007 && version != 3008) {
		gw_rfbview_fail(v,
		    "the client's ProtocolVersion is not RFB "
		    "3.3, 3.7 or 3.8");
		return -1;
	}
	if ((unsigned)version > v->server_version) {
		gw_rfbview_fail(v,
		    "the client's ProtocolVersion is above the "
		    "server's");
		return -1;
	}
	v->minor = (unsigned)(version % 1000);
	v->c_at = GW_RFBVIEW_C_SECURITY;
	return 0;
}

/* 3.7+: the client's choice, which must be a type the server offered
 * and one whose bytes the filter knows. */
static int
gw_rfbview_choice(struct gw_rfbview *v, uint8_t b)
{
	if (v->s_at != GW_RFBVIEW_S_CHOICE) {
		gw_rfbview_out_of_turn(v);
		return -1;
	}
	if (!(v->offered[b / 8] & (1u << (b % 8)))) {
		gw_rfbview_fail(
		    v, "the client chose security type %u, not offered", b);
		return -1;
	}
	if (b != GW_RFBVIEW_SEC_NONE && b != GW_RFBVIEW_SEC_VNCAUTH) {
		gw_rfbview_fail(v,
		    "security type %u is not one a view-only relay follows", b);
		return -1;
	}
	v->type = b;
	gw_rfbview_server_next(v);
	return 0;
}

/*
 * One byte of the client's handshake: 1 with the byte that passes in
 * *b, or -1 (why is set). ClientInit's flag becomes "shared": a viewer
 * must not have the server put the other clients off.
 */
static int
gw_rfbview_handshake_byte(struct gw_rfbview *v, uint8_t *b)
{
	switch (v->c_at) {
	case GW_RFBVIEW_C_VERSION:
		if (v->s_at == GW_RFBVIEW_S_VERSION) {
			gw_rfbview_out_of_turn(v);
			return -1;
		}
		v->c_hold[v->c_have++] = *b;
		if (v->c_have == RFB_VERSION_LEN &&
		    gw_rfbview_client_version(v) < 0)
			return -1;
		return 1;
	case GW_RFBVIEW_C_SECURITY:
		if (v->minor >= 7) {
			if (gw_rfbview_choice(v, *b) < 0)
				return -1;
		} else if (v->type == 0) {
			/* 3.3: the server names the type, and has not. */
			gw_rfbview_out_of_turn(v);
			return -1;
		}
		v->c_at = v->type == GW_RFBVIEW_SEC_VNCAUTH
		    ? GW_RFBVIEW_C_RESPONSE
		    : GW_RFBVIEW_C_INIT;
		v->c_have = 0;
		if (v->minor >= 7)
			return 1;
		return gw_rfbview_handshake_byte(v, b);
	case GW_RFBVIEW_C_RESPONSE:
		if (v->s_at == GW_RFBVIEW_S_CHALLENGE) {
			gw_rfbview_out_of_turn(v);
			return -1;
		}
		if (++v->c_have == GW_RFBVIEW_VNCAUTH_LEN) {
			v->c_have = 0;
			v->c_at = GW_RFBVIEW_C_INIT;
		}
		return 1;
	case GW_RFBVIEW_C_INIT:
		if (v->s_at != GW_RFBVIEW_S_DONE) {
			gw_rfbview_out_of_turn(v);
			return -1;
		}
		*b = 1;
		v->c_at = GW_RFBVIEW_C_HEADER;
		return 1;
	default: return -1;
	}
}

/* Whether a message of this type reaches the server: what a viewer
 * needs to be shown the screen, and the flow control noVNC and TigerVNC
 * keep with each other (a server that asked for a Fence may hold its
 * updates back until it is answered). */
static int
gw_rfbview_passes(uint8_t type)
{
	switch (type) {
	case GW_RFBVIEW_SET_PIXEL_FORMAT:
	case GW_RFBVIEW_SET_ENCODINGS:
	case GW_RFBVIEW_UPDATE_REQUEST:
	case GW_RFBVIEW_CONTINUOUS_UPDATES:
	case GW_RFBVIEW_FENCE: return 1;
	default: return 0;
	}
}

/*
 * The length of the message whose first have bytes are h: 1 with the
 * whole length in *total, 0 with the header length still needed in
 * *total, or -1 (why is set) for a message that cannot be framed or
 * breaks a limit.
 */
static int
gw_rfbview_size(
    struct gw_rfbview *v, const uint8_t *h, size_t have, uint64_t *total)
{
	uint32_t n;

	switch (h[0]) {
	case GW_RFBVIEW_SET_PIXEL_FORMAT: *total = 20; return 1;
	case GW_RFBVIEW_UPDATE_REQUEST:
	case GW_RFBVIEW_CONTINUOUS_UPDATES: *total = 10; return 1;
	case GW_RFBVIEW_KEY: *total = 8; return 1;
	case GW_RFBVIEW_POINTER: *total = 6; return 1;
	case GW_RFBVIEW_XVP: *total = 4; return 1;
	case GW_RFBVIEW_SET_ENCODINGS:
		if (have < 4)
			break;
		n = rfb_u16(h + 2);
		if (n > GW_RFBVIEW_ENCODINGS_MAX) {
			gw_rfbview_fail(
			    v, "SetEncodings lists %u encodings", (unsigned)n);
			return -1;
		}
		*total = 4 + 4 * (uint64_t)n;
		return 1;
	case GW_RFBVIEW_CUT_TEXT:
		if (have < 8)
			break;
		/* Negative: the extended clipboard's, as long as its
		 * magnitude. */
		n = rfb_u32(h + 4);
		if (n & 0x80000000u)
			n = ~n + 1;
		if (n > GW_RFBVIEW_CUT_MAX) {
			gw_rfbview_fail(
			    v, "ClientCutText of %u bytes", (unsigned)n);
			return -1;
		}
		*total = 8 + (uint64_t)n;
		return 1;
	case GW_RFBVIEW_FENCE:
		if (have < 9)
			break;
		if (h[8] > GW_RFBVIEW_FENCE_MAX) {
			gw_rfbview_fail(
			    v, "a Fence with %u bytes of payload", h[8]);
			return -1;
		}
		*total = 9 + (uint64_t)h[8];
		return 1;
	case GW_RFBVIEW_SET_DESKTOP_SIZE:
		if (have < 8)
			break;
		*total = 8 + 16 * (uint64_t)h[6];
		return 1;
	case GW_RFBVIEW_GII:
		if (have < 4)
			break;
		/* The length is in the byte order the high bit names. */
		n = h[1] & 0x80 ? rfb_u16(h + 2) : (uint32_t)h[3] << 8 | h[2];
		*total = 4 + (uint64_t)n;
		return 1;
	case GW_RFBVIEW_QEMU:
		if (have < 2)
			break;
		if (h[1] == 0) {
			*total = 12; /* an extended key event */
			return 1;
		}
		if (h[1] != 1) {
			gw_rfbview_fail(v, "QEMU message %u is unknown", h[1]);
			return -1;
		}
		if (have < 4)
			break;
		switch (rfb_u16(h + 2)) {
		case 0:
		case 1: *total = 4; return 1;  /* audio on, off */
		case 2: *total = 10; return 1; /* audio format */
		default:
			gw_rfbview_fail(v, "QEMU audio operation %u is unknown",
			    (unsigned)rfb_u16(h + 2));
			return -1;
		}
	default:
		gw_rfbview_fail(v, "message type %u is unknown", h[0]);
		return -1;
	}
	*total = have + 1;
	return 0;
}

/* One byte of a message's header: 1 if it passes, 0 if not, -1. */
static int
gw_rfbview_header_byte(struct gw_rfbview *v, uint8_t b)
{
	uint64_t total;
	int r;

	v->c_hold[v->c_have++] = b;
	r = gw_rfbview_size(v, v->c_hold, v->c_have, &total);
	if (r < 0)
		return -1;
	if (v->c_have == 1)
		v->pass = gw_rfbview_passes(b);
	if (r == 1) {
		v->body = total - v->c_have;
		v->c_have = 0;
		if (v->body > 0)
			v->c_at = GW_RFBVIEW_C_BODY;
	}
	return v->pass;
}

size_t
gw_rfbview_from_client(
    struct gw_rfbview *v, const uint8_t *in, size_t len, uint8_t *out)
{
	size_t i = 0, o = 0, take;
	uint8_t b;
	int r;

	while (i < len && v->why[0] == '\0') {
		if (v->c_at == GW_RFBVIEW_C_BODY) {
			take = v->body < len - i ? (size_t)v->body : len - i;
			if (v->pass) {
				memmove(out + o, in + i, take);
				o += take;
			}
			i += take;
			v->body -= take;
			if (v->body == 0)
				v->c_at = GW_RFBVIEW_C_HEADER;
			continue;
		}
		b = in[i++];
		if (v->c_at == GW_RFBVIEW_C_HEADER)
			r = gw_rfbview_header_byte(v, b);
		else
			r = gw_rfbview_handshake_byte(v, &b);
		if (r > 0)
			out[o++] = b;
	}
	return o;
}
