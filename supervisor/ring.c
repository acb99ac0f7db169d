/* ring: a byte ring addressed by absolute offset (see ring.h). */
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "xmalloc.h"

void
ring_init(struct ring *r, size_t cap)
{
	r->buf = xmalloc(cap);
	r->cap = cap;
	r->end = 0;
}

void
ring_free(struct ring *r)
{
	free(r->buf);
	r->buf = NULL;
}

uint64_t
ring_start(const struct ring *r)
{
	return r->end > r->cap ? r->end - r->cap : 0;
}

void
ring_write(struct ring *r, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t pos, first;

	/* Only the last cap bytes of a write larger than the ring survive. */
	if (len > r->cap) {
		p += len - r->cap;
		r->end += len - r->cap;
		len = r->cap;
	}
	pos = (size_t)(r->end % r->cap);
	first = r->cap - pos < len ? r->cap - pos : len;
	memcpy(r->buf + pos, p, first);
	memcpy(r->buf, p + first, len - first);
	r->end += len;
}

size_t
ring_read(const struct ring *r, uint64_t offset, size_t max,
    const uint8_t **data, uint64_t *at)
{
	uint64_t start = ring_start(r);
	size_t pos, len;

	if (offset < start)
		offset = start;
	*at = offset;
	if (offset >= r->end)
		return 0;
	pos = (size_t)(offset % r->cap);
	len = (size_t)(r->end - offset);
	if (len > r->cap - pos)
		len = r->cap - pos;
	if (len > max)
		len = max;
	*data = r->buf + pos;
	return len;
}
