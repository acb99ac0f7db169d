/* gw_preview_chunk: the chunked framing's state machine. Owns nothing. */
#include <string.h>

#include "gw_preview_chunk.h"

enum {
	GW_PREVIEW_CHUNK_SIZE,    /* hex digits of a chunk's size */
	GW_PREVIEW_CHUNK_EXT,     /* after them, up to the CR */
	GW_PREVIEW_CHUNK_SIZE_LF, /* the LF after the size line */
	GW_PREVIEW_CHUNK_DATA,    /* the chunk's bytes */
	GW_PREVIEW_CHUNK_DATA_CR, /* the CRLF after them */
	GW_PREVIEW_CHUNK_DATA_LF,
	GW_PREVIEW_CHUNK_TRAILER, /* a trailer line, or the last blank one */
	GW_PREVIEW_CHUNK_TRAILER_LF,
	GW_PREVIEW_CHUNK_DONE,
	GW_PREVIEW_CHUNK_FAILED,
};

void
gw_preview_chunk_init(struct gw_preview_chunk *c)
{
	memset(c, 0, sizeof *c);
}

static int
gw_preview_chunk_fail(struct gw_preview_chunk *c, const char *why)
{
	c->state = GW_PREVIEW_CHUNK_FAILED;
	c->err = why;
	return -1;
}

static int
gw_preview_chunk_hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* The size line: digits, then anything printable up to CRLF. */
static int
gw_preview_chunk_size(struct gw_preview_chunk *c, char ch)
{
	int h = gw_preview_chunk_hex(ch);

	if (++c->line > GW_PREVIEW_CHUNK_LINE_MAX)
		return gw_preview_chunk_fail(c, "a chunk size line too long");
	if (c->state == GW_PREVIEW_CHUNK_SIZE && h >= 0) {
		if (++c->digits > 15)
			return gw_preview_chunk_fail(
			    c, "a chunk size too large");
		c->left = c->left * 16 + (uint64_t)h;
		return 0;
	}
	if (c->digits == 0)
		return gw_preview_chunk_fail(c, "a chunk without a size");
	if (ch == '\r') {
		c->state = GW_PREVIEW_CHUNK_SIZE_LF;
		return 0;
	}
	if ((unsigned char)ch < ' ' && ch != '\t')
		return gw_preview_chunk_fail(
		    c, "a control byte in a chunk size line");
	if (c->state == GW_PREVIEW_CHUNK_SIZE && ch != ';' && ch != ' ' &&
	    ch != '\t')
		return gw_preview_chunk_fail(c, "a chunk size is not hex");
	c->state = GW_PREVIEW_CHUNK_EXT;
	return 0;
}

/* One byte past a chunk's data. */
static int
gw_preview_chunk_step(struct gw_preview_chunk *c, char ch)
{
	switch (c->state) {
	case GW_PREVIEW_CHUNK_SIZE:
	case GW_PREVIEW_CHUNK_EXT: return gw_preview_chunk_size(c, ch);
	case GW_PREVIEW_CHUNK_SIZE_LF:
		if (ch != '\n')
			return gw_preview_chunk_fail(
			    c, "a CR not followed by LF");
		c->line = 0;
		c->state = c->left != 0 ? GW_PREVIEW_CHUNK_DATA
		                        : GW_PREVIEW_CHUNK_TRAILER;
		return 0;
	case GW_PREVIEW_CHUNK_DATA_CR:
		if (ch != '\r')
			return gw_preview_chunk_fail(
			    c, "a chunk longer than its size");
		c->state = GW_PREVIEW_CHUNK_DATA_LF;
		return 0;
	case GW_PREVIEW_CHUNK_DATA_LF:
		if (ch != '\n')
			return gw_preview_chunk_fail(
			    c, "a CR not followed by LF");
		c->state = GW_PREVIEW_CHUNK_SIZE;
		c->digits = 0;
		c->line = 0;
		return 0;
	case GW_PREVIEW_CHUNK_TRAILER:
		if (++c->trailers > GW_PREVIEW_CHUNK_TRAILERS)
			return gw_preview_chunk_fail(c, "trailers too long");
		if (ch == '\r')
			c->state = GW_PREVIEW_CHUNK_TRAILER_LF;
		else if ((unsigned char)ch < ' ' && ch != '\t')
			return gw_preview_chunk_fail(
			    c, "a control byte in a trailer");
		else
			c->line++;
		return 0;
	case GW_PREVIEW_CHUNK_TRAILER_LF:
		if (ch != '\n')
			return gw_preview_chunk_fail(
			    c, "a CR not followed by LF");
		c->state = c->line == 0 ? GW_PREVIEW_CHUNK_DONE
		                        : GW_PREVIEW_CHUNK_TRAILER;
		c->line = 0;
		return 0;
	default: return gw_preview_chunk_fail(c, "no chunked body");
	}
}

long long
gw_preview_chunk_feed(
    struct gw_preview_chunk *c, const char *p, size_t n, int *done)
{
	size_t i = 0, k;

	*done = 0;
	if (c->state == GW_PREVIEW_CHUNK_FAILED)
		return -1;
	while (i < n && c->state != GW_PREVIEW_CHUNK_DONE) {
		if (c->state == GW_PREVIEW_CHUNK_DATA) {
			k = n - i < c->left ? n - i : (size_t)c->left;
			c->left -= k;
			i += k;
			if (c->left == 0)
				c->state = GW_PREVIEW_CHUNK_DATA_CR;
			continue;
		}
		if (gw_preview_chunk_step(c, p[i++]) < 0)
			return -1;
	}
	*done = c->state == GW_PREVIEW_CHUNK_DONE;
	return (long long)i;
}
