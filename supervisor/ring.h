/* ring: a byte ring addressed by absolute offset — the output of a PTY
 * session since it started. Writing never fails: once full, the oldest
 * bytes go. A reader asks for an offset and learns where the bytes it gets
 * really start, so a loss is always explicit.
 *
 * Ownership: ring_init allocates the buffer, ring_free releases it. */
#ifndef BERTH_RING_H
#define BERTH_RING_H

#include <stddef.h>
#include <stdint.h>

struct ring {
	uint8_t *buf;
	size_t cap;
	uint64_t end; /* bytes ever written: the offset of the next one */
};

void ring_init(struct ring *r, size_t cap);
void ring_free(struct ring *r);
/* The oldest offset still held. */
uint64_t ring_start(const struct ring *r);
void ring_write(struct ring *r, const void *data, size_t len);
/*
 * The bytes from offset on, as one contiguous piece of at most max bytes
 * (a read stops where the buffer wraps; read again for the rest). An
 * offset older than ring_start reads from ring_start: *at says where the
 * piece starts. Returns its length, 0 when offset is at or past the end.
 */
size_t ring_read(const struct ring *r, uint64_t offset, size_t max,
    const uint8_t **data, uint64_t *at);

#endif
