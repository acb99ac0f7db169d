/* fuzz_redact: libFuzzer target for streaming redaction (redact.c). The
 * input gives a few values, a stream and the sizes of the pieces it is
 * fed in: the output must equal a one-shot reference's, hold no value,
 * and no more than the longest value less one byte may ever wait. Values
 * and stream use a few bytes above 0x7f (so values overlap often) that
 * "[redacted:NAME]" never holds, so a replacement cannot form a value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NVALUES 4
#define FUZZ_VALUE_MAX 16

struct fuzz_sink {
	uint8_t *buf;
	size_t len;
	size_t cap;
};

static void
fuzz_sink_cb(void *arg, const void *data, size_t len)
{
	struct fuzz_sink *k = arg;

	if (len == 0)
		abort();
	if (k->len + len > k->cap) {
		k->cap = (k->len + len) * 2;
		k->buf = realloc(k->buf, k->cap);
		if (k->buf == NULL)
			abort();
	}
	memcpy(k->buf + k->len, data, len);
	k->len += len;
}

/* A byte of the small alphabet: four bytes above 0x7f, 'x' and '\n'. */
static uint8_t
fuzz_byte(uint8_t b)
{
	static const uint8_t alphabet[] = {0x80, 0x81, 0x82, 0x83, 'x', '\n'};

	return alphabet[b % sizeof alphabet];
}

/* The one-shot reference: the longest whole value at each position. */
static void
fuzz_reference(const struct redact_set *set, const uint8_t *in, size_t len,
    struct fuzz_sink *k)
{
	size_t i = 0, j, best, bestlen;

	while (i < len) {
		best = SIZE_MAX;
		bestlen = 0;
		for (j = 0; j < set->n; j++)
			if (set->v[j].len >= REDACT_MIN &&
			    set->v[j].len > bestlen &&
			    set->v[j].len <= len - i &&
			    memcmp(in + i, set->v[j].value, set->v[j].len) ==
			        0) {
				best = j;
				bestlen = set->v[j].len;
			}
		if (best == SIZE_MAX) {
			fuzz_sink_cb(k, in + i, 1);
			i++;
			continue;
		}
		fuzz_sink_cb(k, "[redacted:", 10);
		fuzz_sink_cb(k, set->v[best].name, strlen(set->v[best].name));
		fuzz_sink_cb(k, "]", 1);
		i += bestlen;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[FUZZ_NVALUES] = {"A", "B", "C", "D"};
	uint8_t values[FUZZ_NVALUES][FUZZ_VALUE_MAX], *stream;
	struct redact_secret v[FUZZ_NVALUES];
	struct redact_set set = {v, 0, 0};
	struct fuzz_sink want = {0}, got = {0};
	struct redact *r;
	size_t nv, i, j, len, at, piece, cut;

	if (size < 1)
		return 0;
	nv = 1 + data[0] % FUZZ_NVALUES;
	data++;
	size--;
	for (i = 0; i < nv; i++) {
		if (size < 1)
			return 0;
		len = 1 + data[0] % FUZZ_VALUE_MAX;
		if (size < 1 + len)
			return 0;
		for (j = 0; j < len; j++)
			values[i][j] = fuzz_byte(data[1 + j]);
		v[i] = (struct redact_secret){names[i], values[i], len};
		if (len >= REDACT_MIN && len > set.maxlen)
			set.maxlen = len;
		data += 1 + len;
		size -= 1 + len;
	}
	set.n = nv;

	/* The rest is the stream; read backwards, it gives the pieces. */
	stream = malloc(size > 0 ? size : 1);
	for (i = 0; i < size; i++)
		stream[i] = fuzz_byte(data[i]);
	fuzz_reference(&set, stream, size, &want);

	r = redact_new();
	for (at = 0, cut = size; at < size; at += piece) {
		piece = cut > 0 ? 1 + data[--cut] % 24 : size - at;
		if (piece > size - at)
			piece = size - at;
		redact_feed(r, &set, stream + at, piece, fuzz_sink_cb, &got);
		if (redact_held(r) >= (set.maxlen > 0 ? set.maxlen : 1))
			abort();
	}
	redact_flush(r, &set, fuzz_sink_cb, &got);
	if (redact_held(r) != 0)
		abort();
	redact_free(r);

	if (got.len != want.len ||
	    (got.len > 0 && memcmp(got.buf, want.buf, got.len) != 0))
		abort();
	for (i = 0; i < nv; i++)
		if (v[i].len >= REDACT_MIN &&
		    memmem(got.buf != NULL ? got.buf : (uint8_t *)"", got.len,
		        v[i].value, v[i].len) != NULL)
			abort();
	free(stream);
	free(want.buf);
	free(got.buf);
	return 0;
}
