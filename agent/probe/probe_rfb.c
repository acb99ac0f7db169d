/* probe_rfb: ready when a VNC server completes the RFB handshake up to
 * ServerInit (with the wanted screen size), then sends the pixel at 0,0
 * when asked. A port that accepts proves nothing; a server that says who
 * it is and how big its screen is, and shows some of it, does. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "probe.h"
#include "rfb.h"
#include "xmalloc.h"

#define PROBE_RFB_NONE 1
#define PROBE_RFB_VNC_AUTH 2
/* Client messages: SetEncodings, FramebufferUpdateRequest. */
#define PROBE_RFB_SET_ENCODINGS 2
#define PROBE_RFB_UPDATE_REQUEST 3
/* Server messages. */
#define PROBE_RFB_UPDATE 0
#define PROBE_RFB_COLOURS 1
#define PROBE_RFB_BELL 2
#define PROBE_RFB_CUT_TEXT 3
#define PROBE_RFB_RAW 0
/* Enough for the whole handshake's longest message, and some. */
#define PROBE_RFB_BUF (2 * PROBE_RFB_MAX_MSG)

/* The check's state, allocated by parse and kept for good. */
struct probe_rfb_check {
	struct probe_addr addr;
	unsigned width; /* 0: any */
	unsigned height;
};

static enum probe_verdict probe_rfb_fail(struct probe_rfb *r, const char *fmt,
    ...) __attribute__((format(printf, 2, 3)));
static enum probe_verdict
probe_rfb_fail(struct probe_rfb *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof r->err, fmt, ap);
	va_end(ap);
	r->state = PROBE_RFB_FAILED;
	return PROBE_FAIL;
}

static void
probe_rfb_put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void
probe_rfb_init(struct probe_rfb *r, unsigned want_w, unsigned want_h)
{
	memset(r, 0, sizeof *r);
	r->state = PROBE_RFB_VERSION;
	r->want_w = want_w;
	r->want_h = want_h;
}

const char *
probe_rfb_awaited(const struct probe_rfb *r)
{
	switch (r->state) {
	case PROBE_RFB_VERSION: return "the version";
	case PROBE_RFB_TYPES: return "the security types";
	case PROBE_RFB_TYPE33: return "the security type";
	case PROBE_RFB_RESULT: return "the security result";
	case PROBE_RFB_SERVERINIT: return "ServerInit";
	case PROBE_RFB_MESSAGE:
	case PROBE_RFB_RECT:
	case PROBE_RFB_SKIP: return "a framebuffer update";
	case PROBE_RFB_DONE:
	case PROBE_RFB_FAILED: break;
	}
	return "nothing";
}

/*
 * A refusal: the server's reason string, a u32 length then text, at
 * buf[at], after what it refused. MORE until all of it is there, then
 * FAIL with "what: reason"; FAIL at once if it is over the limit.
 */
static enum probe_verdict
probe_rfb_refused(struct probe_rfb *r, const uint8_t *buf, size_t len,
    size_t at, const char *what)
{
	uint32_t n;

	if (len < at + 4)
		return PROBE_MORE;
	n = rfb_u32(buf + at);
	if (n > PROBE_RFB_MAX_TEXT)
		return probe_rfb_fail(
		    r, "a reason of %u bytes, over %d", n, PROBE_RFB_MAX_TEXT);
	if (len < at + 4 + n)
		return PROBE_MORE;
	return probe_rfb_fail(
	    r, "%s: %.*s", what, (int)n, (const char *)buf + at + 4);
}

/* "RFB 003.008\n". 3.3 and 3.7 are answered in kind, anything newer with
 * 3.8; as RFC 6143 says, 3.4 to 3.6 are 3.3 in disguise. */
static enum probe_verdict
probe_rfb_version(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used)
{
	unsigned major, minor;

	if (len < RFB_VERSION_LEN)
		return PROBE_MORE;
	if (rfb_version(buf, &major, &minor) < 0)
		return probe_rfb_fail(r,
		    "not an RFB server (it said \"%.11s\")", (const char *)buf);
	if (major < 3 || (major == 3 && minor < 3))
		return probe_rfb_fail(
		    r, "unsupported version %u.%u", major, minor);
	if (major > 3 || minor >= 8)
		r->minor = 8;
	else
		r->minor = minor == 7 ? 7 : 3;
	r->outlen = (size_t)snprintf(
	    (char *)r->out, sizeof r->out, "RFB 003.%03d\n", r->minor);
	r->state = r->minor == 3 ? PROBE_RFB_TYPE33 : PROBE_RFB_TYPES;
	*used = RFB_VERSION_LEN;
	return PROBE_MORE;
}

/* None is chosen; 3.8 then sends a SecurityResult, 3.7 goes straight on
 * to the initialisation, so ClientInit (shared) goes out at once. */
/* Security is done: ClientInit, shared (so that no viewer is cut off),
 * and on to the ServerInit. */
static enum probe_verdict
probe_rfb_client_init(struct probe_rfb *r)
{
	r->out[r->outlen++] = 1;
	r->state = PROBE_RFB_SERVERINIT;
	return PROBE_MORE;
}

static enum probe_verdict
probe_rfb_none(struct probe_rfb *r)
{
	r->out[r->outlen++] = 1;
	if (r->minor == 8) {
		r->state = PROBE_RFB_RESULT;
		return PROBE_MORE;
	}
	return probe_rfb_client_init(r);
}

/* 3.7 and 3.8: a count, then the types; a count of 0 is a refusal. */
static enum probe_verdict
probe_rfb_types(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used)
{
	char offered[80];
	size_t i, n, off = 0;

	if (len < 1)
		return PROBE_MORE;
	if (buf[0] == 0)
		return probe_rfb_refused(
		    r, buf, len, 1, "security type count 0");
	n = buf[0];
	if (len < 1 + n)
		return PROBE_MORE;
	*used = 1 + n;
	if (memchr(buf + 1, PROBE_RFB_NONE, n) != NULL)
		return probe_rfb_none(r);
	if (memchr(buf + 1, PROBE_RFB_VNC_AUTH, n) != NULL)
		return probe_rfb_fail(
		    r, "the server needs a password (VNC authentication)");
	offered[0] = '\0';
	for (i = 0; i < n && off < sizeof offered - 8; i++)
		off += (size_t)snprintf(offered + off, sizeof offered - off,
		    "%s%u", i == 0 ? "" : " ", buf[1 + i]);
	return probe_rfb_fail(r,
	    "no security type without a password "
	    "(offered: %s%s)",
	    offered, i < n ? " ..." : "");
}

/* 3.3: the server chose, a u32; 0 is a refusal with a reason. None has
 * no SecurityResult in 3.3. */
static enum probe_verdict
probe_rfb_type33(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used)
{
	uint32_t type;

	if (len < 4)
		return PROBE_MORE;
	type = rfb_u32(buf);
	if (type == 0)
		return probe_rfb_refused(r, buf, len, 4, "security type 0");
	if (type == PROBE_RFB_VNC_AUTH)
		return probe_rfb_fail(
		    r, "the server needs a password (VNC authentication)");
	if (type != PROBE_RFB_NONE)
		return probe_rfb_fail(r, "unknown security type %u", type);
	*used = 4;
	return probe_rfb_client_init(r);
}

/* 3.8's SecurityResult: 0, or a failure with a reason. */
static enum probe_verdict
probe_rfb_result(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used)
{
	char what[32];
	uint32_t status;

	if (len < 4)
		return PROBE_MORE;
	status = rfb_u32(buf);
	if (status != 0) {
		snprintf(what, sizeof what, "security result %u", status);
		return probe_rfb_refused(r, buf, len, 4, what);
	}
	*used = 4;
	return probe_rfb_client_init(r);
}

/* SetEncodings [Raw], so that any rectangle's length is known, and a
 * non-incremental request for the pixel at 0,0, which a live server
 * answers at once. */
static enum probe_verdict
probe_rfb_request(struct probe_rfb *r)
{
	uint8_t *p = r->out + r->outlen;

	p[0] = PROBE_RFB_SET_ENCODINGS;
	p[1] = 0;
	probe_rfb_put16(p + 2, 1);
	memset(p + 4, 0, 4); /* PROBE_RFB_RAW, an s32 */
	p += 8;
	p[0] = PROBE_RFB_UPDATE_REQUEST;
	p[1] = 0;
	probe_rfb_put16(p + 2, 0);
	probe_rfb_put16(p + 4, 0);
	probe_rfb_put16(p + 6, 1);
	probe_rfb_put16(p + 8, 1);
	r->outlen += 18;
	r->state = PROBE_RFB_MESSAGE;
	return PROBE_MORE;
}

/* Width, height, a pixel format, a name. */
static enum probe_verdict
probe_rfb_serverinit(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used)
{
	uint32_t namelen;
	unsigned bpp;

	if (len < 24)
		return PROBE_MORE;
	r->width = rfb_u16(buf);
	r->height = rfb_u16(buf + 2);
	bpp = buf[4];
	if (bpp != 8 && bpp != 16 && bpp != 32)
		return probe_rfb_fail(
		    r, "ServerInit with %u bits per pixel", bpp);
	namelen = rfb_u32(buf + 20);
	if (namelen > PROBE_RFB_MAX_TEXT)
		return probe_rfb_fail(r, "a desktop name of %u bytes, over %d",
		    namelen, PROBE_RFB_MAX_TEXT);
	if (len < 24 + (size_t)namelen)
		return PROBE_MORE;
	*used = 24 + (size_t)namelen;
	if (r->want_w != 0 && (r->width != r->want_w || r->height != r->want_h))
		return probe_rfb_fail(r, "framebuffer %ux%u, want %ux%u",
		    r->width, r->height, r->want_w, r->want_h);
	r->bpp = bpp;
	return probe_rfb_request(r);
}

/* The end of a rectangle: the next, or the end of the update, which is
 * the end of the check if it carried the pixel asked for. */
static enum probe_verdict
probe_rfb_next_rect(struct probe_rfb *r)
{
	if (r->rects > 0) {
		r->state = PROBE_RFB_RECT;
		return PROBE_MORE;
	}
	r->updating = 0;
	if (r->origin) {
		r->state = PROBE_RFB_DONE;
		return PROBE_DONE;
	}
	r->state = PROBE_RFB_MESSAGE;
	return PROBE_MORE;
}

/* Bytes of n to pass over, then what follows them. */
static enum probe_verdict
probe_rfb_skip_then(struct probe_rfb *r, uint64_t n)
{
	r->skip = n;
	if (n > 0) {
		r->state = PROBE_RFB_SKIP;
		return PROBE_MORE;
	}
	if (r->updating)
		return probe_rfb_next_rect(r);
	r->state = PROBE_RFB_MESSAGE;
	return PROBE_MORE;
}

/* The head of a server message. Only Raw was allowed, so every message
 * the server may send has a length that its head tells. */
static enum probe_verdict
probe_rfb_message(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used)
{
	if (len < 1)
		return PROBE_MORE;
	switch (buf[0]) {
	case PROBE_RFB_UPDATE:
		if (len < 4)
			return PROBE_MORE;
		*used = 4;
		r->updating = 1;
		r->origin = 0;
		r->rects = rfb_u16(buf + 2);
		return probe_rfb_next_rect(r);
	case PROBE_RFB_COLOURS:
		if (len < 6)
			return PROBE_MORE;
		*used = 6;
		return probe_rfb_skip_then(r, 6 * rfb_u16(buf + 4));
	case PROBE_RFB_BELL: *used = 1; return PROBE_MORE;
	case PROBE_RFB_CUT_TEXT:
		if (len < 8)
			return PROBE_MORE;
		*used = 8;
		return probe_rfb_skip_then(r, rfb_u32(buf + 4));
	}
	return probe_rfb_fail(r, "unknown server message type %u", buf[0]);
}

/* A rectangle's head: where, how big, and how it is encoded. */
static enum probe_verdict
probe_rfb_rect(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used)
{
	unsigned x, y, w, h;
	uint32_t encoding;

	if (len < 12)
		return PROBE_MORE;
	x = rfb_u16(buf);
	y = rfb_u16(buf + 2);
	w = rfb_u16(buf + 4);
	h = rfb_u16(buf + 6);
	encoding = rfb_u32(buf + 8);
	if (encoding != PROBE_RFB_RAW)
		return probe_rfb_fail(r,
		    "a rectangle in encoding %d, and only Raw was allowed",
		    (int32_t)encoding);
	*used = 12;
	r->rects--;
	if (x == 0 && y == 0 && w > 0 && h > 0)
		r->origin = 1;
	return probe_rfb_skip_then(r, (uint64_t)w * h * (r->bpp / 8));
}

static enum probe_verdict
probe_rfb_skip(struct probe_rfb *r, size_t len, size_t *used)
{
	if (len == 0)
		return PROBE_MORE;
	*used = len < r->skip ? len : (size_t)r->skip;
	return probe_rfb_skip_then(r, r->skip - *used);
}

enum probe_verdict
probe_rfb_step(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used)
{
	*used = 0;
	switch (r->state) {
	case PROBE_RFB_VERSION: return probe_rfb_version(r, buf, len, used);
	case PROBE_RFB_TYPES: return probe_rfb_types(r, buf, len, used);
	case PROBE_RFB_TYPE33: return probe_rfb_type33(r, buf, len, used);
	case PROBE_RFB_RESULT: return probe_rfb_result(r, buf, len, used);
	case PROBE_RFB_SERVERINIT:
		return probe_rfb_serverinit(r, buf, len, used);
	case PROBE_RFB_MESSAGE: return probe_rfb_message(r, buf, len, used);
	case PROBE_RFB_RECT: return probe_rfb_rect(r, buf, len, used);
	case PROBE_RFB_SKIP: return probe_rfb_skip(r, len, used);
	case PROBE_RFB_DONE: return PROBE_DONE;
	case PROBE_RFB_FAILED: break;
	}
	return PROBE_FAIL;
}

/* The check. */

static int
probe_rfb_size(const char *s, unsigned *w, unsigned *h)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtoul(s, &end, 10);
	if (*end != 'x' || v < 1 || v > 65535 || end[1] < '0' || end[1] > '9')
		return -1;
	*w = (unsigned)v;
	v = strtoul(end + 1, &end, 10);
	if (*end != '\0' || v < 1 || v > 65535)
		return -1;
	*h = (unsigned)v;
	return 0;
}

/* unix:PATH, an RFB server on a Unix socket (Xvnc's -rfbunixpath). */
static int
probe_rfb_unix(struct probe_addr *addr, const char *s, char **cause)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)&addr->sa[0];
	const char *path = s + 5;

	memset(addr, 0, sizeof *addr);
	if (path[0] != '/' || strlen(path) >= sizeof sun->sun_path) {
		*cause = xasprintf("%s is not unix:PATH (an absolute path of "
		                   "at most %zu bytes)",
		    s, sizeof sun->sun_path - 1);
		return -1;
	}
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, strlen(path) + 1);
	addr->salen[0] = sizeof *sun;
	addr->nsa = 1;
	addr->given = xstrdup(s);
	addr->name = xstrdup(s);
	return 0;
}

static void *
probe_rfb_parse(int argc, char **argv, char **cause)
{
	struct probe_rfb_check *c = xcalloc(1, sizeof *c);

	if (argc > 1 && probe_rfb_size(argv[1], &c->width, &c->height) != 0) {
		*cause = xasprintf("%s is not WIDTHxHEIGHT", argv[1]);
		free(c);
		return NULL;
	}
	if ((strncmp(argv[0], "unix:", 5) == 0
	            ? probe_rfb_unix(&c->addr, argv[0], cause)
	            : probe_addr_parse(&c->addr, argv[0], -1, cause)) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

/*
 * Steps the handshake over the connection: each step takes a whole
 * message head from what was read, or bytes to pass over, or needs more;
 * what it leaves in out is sent before the next step, since RFB takes
 * turns until the update is asked for.
 */
static int
probe_rfb_check(void *state, struct probe_io *io, char **cause)
{
	struct probe_rfb_check *c = state;
	struct probe_rfb r;
	uint8_t buf[PROBE_RFB_BUF];
	enum probe_verdict v;
	size_t len = 0, used;
	ssize_t n;

	if (probe_io_connect(io, &c->addr, cause) != 0)
		return -1;
	probe_rfb_init(&r, c->width, c->height);
	for (;;) {
		v = probe_rfb_step(&r, buf, len, &used);
		len -= used;
		memmove(buf, buf + used, len);
		if (r.outlen > 0 &&
		    probe_io_write(io, r.out, r.outlen, cause) != 0)
			return -1;
		r.outlen = 0;
		if (v == PROBE_DONE) {
			io->watch = io->can_watch;
			return 0;
		}
		if (v == PROBE_FAIL) {
			*cause = xasprintf("rfb: %s", r.err);
			return -1;
		}
		if (used > 0)
			continue;
		snprintf(io->doing, sizeof io->doing, "rfb: waiting for %s",
		    probe_rfb_awaited(&r));
		if ((n = probe_io_read(
		         io, buf + len, sizeof buf - len, cause)) < 0) {
			if (io->expired &&
			    (r.state == PROBE_RFB_MESSAGE ||
			        r.state == PROBE_RFB_RECT ||
			        r.state == PROBE_RFB_SKIP)) {
				free(*cause);
				*cause = xasprintf("rfb: no framebuffer update "
				                   "within %d ms",
				    io->timeout_ms);
			}
			return -1;
		}
		if (n == 0) {
			*cause = xasprintf(
			    "rfb: the server closed the connection before %s",
			    probe_rfb_awaited(&r));
			return -1;
		}
		len += (size_t)n;
	}
}

static void
probe_rfb_free(void *state)
{
	struct probe_rfb_check *c = state;

	probe_addr_free(&c->addr);
	free(c);
}

const struct probe_type probe_rfb_type = {
    .name = "rfb",
    .args = "HOST:PORT|unix:PATH [WIDTHxHEIGHT]",
    .minargs = 1,
    .maxargs = 2,
    .parse = probe_rfb_parse,
    .check = probe_rfb_check,
    .free = probe_rfb_free,
};
