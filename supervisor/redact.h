/* redact: replaces secret values in a byte stream as it passes, even when
 * a value is split across chunks. A tail of the input that could still
 * become a value is held back until more bytes (or a flush) decide it.
 * Pure: no I/O, no globals; the set of values is passed on every call.
 * Ownership: redact_new allocates the stream state, redact_free wipes and
 * frees it; the set stays its owner's. */
#ifndef BERTH_REDACT_H
#define BERTH_REDACT_H

#include <stddef.h>
#include <stdint.h>

/* Values shorter than this are never redacted: they would match
 * everywhere. */
#define REDACT_MIN 4

struct redact_secret {
	const char *name;
	const uint8_t *value;
	size_t len;
};

struct redact_set {
	const struct redact_secret *v;
	size_t n;
	size_t maxlen; /* the longest value of at least REDACT_MIN bytes */
};

struct redact;
typedef void (*redact_out)(void *arg, const void *data, size_t len);

struct redact *redact_new(void);
void redact_free(struct redact *r);
/* Passes data on to out (zero or more calls, never empty ones, each
 * pointer valid during the call only), each value of set replaced by
 * "[redacted:NAME]"; holds back what may be the start of one (at most
 * the longest value less one byte). The longest value wins where several
 * start; the output does not depend on how the stream is cut. The set
 * may change between calls: held bytes are judged by the set of the call
 * that decides them. */
void redact_feed(struct redact *r, const struct redact_set *set,
    const void *data, size_t len, redact_out out, void *arg);
/* Passes on what is held back: the stream ended, or waited long enough. */
void redact_flush(
    struct redact *r, const struct redact_set *set, redact_out out, void *arg);
/* How many bytes are held back. */
size_t redact_held(const struct redact *r);

#endif
