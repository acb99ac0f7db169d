/* backoff: capped doubling (see backoff.h). */
#include "backoff.h"

void
backoff_init(struct backoff *b, unsigned min_ms, unsigned max_ms)
{
	b->min_ms = min_ms;
	b->max_ms = max_ms < min_ms ? min_ms : max_ms;
	b->next_ms = min_ms;
}

unsigned
backoff_next(struct backoff *b)
{
	unsigned wait = b->next_ms;

	if (wait > b->max_ms / 2)
		b->next_ms = b->max_ms;
	else /* a floor of 0 (retry at once) still grows, from 1 */
		b->next_ms = wait == 0 ? 1 : wait * 2;
	if (b->next_ms > b->max_ms)
		b->next_ms = b->max_ms;
	return wait;
}

void
backoff_reset(struct backoff *b)
{
	b->next_ms = b->min_ms;
}
