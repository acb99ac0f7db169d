/* gw_preview_chunk: where a chunked body ends (RFC 9112 7.1), for the
 * preview proxy, which passes such bodies on as they are and only needs
 * to know where the next message starts. Pure: no sockets, no lws. */
#ifndef BERTH_GW_PREVIEW_CHUNK_H
#define BERTH_GW_PREVIEW_CHUNK_H

#include <stddef.h>
#include <stdint.h>

/* A chunk's size line (its extensions included) and each trailer line
 * are at most this long, and the trailers at most GW_PREVIEW_CHUNK_TRAILERS
 * bytes in all; a size has at most 15 hex digits. */
#define GW_PREVIEW_CHUNK_LINE_MAX 4096u
#define GW_PREVIEW_CHUNK_TRAILERS (16u * 1024)

/* How far one chunked body has been read. Plain value, the caller's;
 * zeroed (or gw_preview_chunk_init) before the body's first byte. */
struct gw_preview_chunk {
	int state;
	unsigned digits; /* of the size so far */
	uint64_t left;   /* the current chunk's bytes still to come */
	size_t line;     /* bytes of the current line so far */
	size_t trailers; /* bytes of trailers so far */
	const char *err; /* set once it failed */
};

void gw_preview_chunk_init(struct gw_preview_chunk *c);
/*
 * Reads p[0..n), the next bytes of the body: how many of them belong to
 * it (all, unless the body ended among them), with *done set once it
 * ended. -1 if the bytes are no chunked body (c->err says why); it stays
 * failed.
 */
long long gw_preview_chunk_feed(
    struct gw_preview_chunk *c, const char *p, size_t n, int *done);

#endif
