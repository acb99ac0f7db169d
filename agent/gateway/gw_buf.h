/* gw_buf: bytes waiting between two raw connections of a relay (the CDP
 * relay, the preview proxy), and the one way they are written out. */
#ifndef BERTH_GW_BUF_H
#define BERTH_GW_BUF_H

#include <libwebsockets.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes waiting: data[off..off+len). Owned by the connection's state
 * that embeds it; gw_buf_free releases it. */
struct gw_buf {
	uint8_t *data;
	size_t off;
	size_t len;
	size_t cap;
};

void gw_buf_add(struct gw_buf *b, const void *p, size_t n);
/* gw_buf_add of a NUL-terminated string, without the NUL. */
void gw_buf_puts(struct gw_buf *b, const char *s);
/* Hands the waiting bytes over as a NUL-terminated string the caller
 * frees (*len does not count the NUL); b is left empty. */
char *gw_buf_string(struct gw_buf *b, size_t *len);
/* Forgets the first n bytes. */
void gw_buf_take(struct gw_buf *b, size_t n);
void gw_buf_free(struct gw_buf *b);
/* Where the waiting bytes start. */
const char *gw_buf_at(const struct gw_buf *b);
/*
 * Writes what waits in b to wsi's socket while it takes it, with send()
 * rather than lws_write: lws would keep an unsent remainder itself and
 * stop reading that socket until it is gone, and each side's reading is
 * governed by the relay's own flow control. Asks for another writeable
 * callback while bytes are left. -1 if the peer is gone.
 */
int gw_buf_send(struct lws *wsi, struct gw_buf *b);

#endif
