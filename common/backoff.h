/* backoff: the one retry policy of berth's programs, capped doubling. A
 * connection that failed waits min, then twice that, and so on up to max
 * (from a min of 0, the wait after 0 is 1); once it works, the next
 * failure starts again from min.
 *
 * Ownership: a struct backoff is a plain value inside its owner. */
#ifndef BERTH_BACKOFF_H
#define BERTH_BACKOFF_H

struct backoff {
	unsigned min_ms;
	unsigned max_ms;
	unsigned next_ms; /* the wait backoff_next returns next */
};

void backoff_init(struct backoff *b, unsigned min_ms, unsigned max_ms);
/* The wait before this try; the one after it is doubled, up to max. */
unsigned backoff_next(struct backoff *b);
/* After a success: the next wait is min again. */
void backoff_reset(struct backoff *b);

#endif
