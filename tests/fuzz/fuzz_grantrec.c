/* fuzz_grantrec: libFuzzer target for the grants file and a grant's scope
 * (grantrec.c): berthd reads the file back when it starts and a scope's
 * words from grant.create. The first byte says what the rest is: even, a
 * grants file for grantrec_decode; odd, a scope's words for
 * grantrec_scope_parse. Its top bit picks how large a refusal's buffer
 * is, from 1 byte up. Whatever the bytes, a refusal's reason is a NUL-ended
 * string within its buffer and nothing is given back; records taken are
 * ones grant.create could have made (each id once), encode to bytes that
 * decode to the very same records, which encode to the very same bytes;
 * a scope taken is written back as the words it came from. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grantrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WHY_MAX 256
/* Where a reason must stop: nothing may write the byte past whymax. */
#define GUARD '#'

/* The buffer a refusal is given: whole, or of 1 to 64 bytes. */
static size_t
why_size(uint8_t mode)
{
	return (mode & 0x80) == 0 ? WHY_MAX : 1 + ((mode >> 1) & 0x3f);
}

static void
why_check(const char *why, size_t whymax)
{
	if (memchr(why, '\0', whymax) == NULL || why[whymax] != GUARD)
		abort();
}

/* s, written back, is text, and read again is s. */
static void
scope_back(const struct grantrec_scope *s, const char *text)
{
	char words[GRANTREC_SCOPE_MAX + 16], why[WHY_MAX];
	struct grantrec_scope again;

	grantrec_scope_format(s, words, sizeof words);
	if (strcmp(words, text) != 0 ||
	    grantrec_scope_parse(words, &again, why, sizeof why) < 0 ||
	    memcmp(&again, s, sizeof again) != 0)
		abort();
}

static void
fuzz_scope(const uint8_t *data, size_t size, size_t whymax)
{
	char *text = malloc(size + 1), why[WHY_MAX + 1];
	struct grantrec_scope s, before;

	if (text == NULL)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	memset(&s, 0xa5, sizeof s);
	before = s;
	memset(why, GUARD, sizeof why);
	if (grantrec_scope_parse(text, &s, why, whymax) == 0)
		scope_back(&s, text);
	else {
		why_check(why, whymax);
		if (memcmp(&s, &before, sizeof s) != 0)
			abort();
	}
	free(text);
}

/* r[0..n) is what grant.create makes, each id once. */
static void
recs_check(const struct grantrec *r, size_t n)
{
	char words[GRANTREC_SCOPE_MAX + 16];
	size_t i, j;

	for (i = 0; i < n; i++) {
		bool preview = r[i].scope.kind == GRANTREC_PREVIEW;

		if (!grantrec_id_ok(r[i].id) ||
		    !grantrec_token_ok(r[i].token) ||
		    (r[i].code[0] != '\0' &&
		        (!grantrec_token_ok(r[i].code) || !preview ||
		            r[i].public_)) ||
		    (r[i].public_ && !preview) ||
		    r[i].expires_at <= r[i].created ||
		    strlen(r[i].label) > GRANTREC_LABEL_MAX)
			abort();
		grantrec_scope_format(&r[i].scope, words, sizeof words);
		scope_back(&r[i].scope, words);
		for (j = 0; j < i; j++)
			if (strcmp(r[i].id, r[j].id) == 0)
				abort();
	}
}

static void
fuzz_file(const uint8_t *data, size_t size, size_t whymax)
{
	struct grantrec *r = NULL, *back = NULL;
	char why[WHY_MAX + 1], *enc, *again;
	size_t n = 0, nback = 0, len, alen;

	memset(why, GUARD, sizeof why);
	if (grantrec_decode(data, size, &r, &n, why, whymax) < 0) {
		why_check(why, whymax);
		if (r != NULL || n != 0)
			abort();
		return;
	}
	if (n > GRANTREC_MAX)
		abort();
	recs_check(r, n);
	grantrec_encode(r, n, &enc, &len);
	if (len > GRANTREC_FILE_MAX ||
	    grantrec_decode(enc, len, &back, &nback, why, sizeof why) < 0 ||
	    nback != n || (n > 0 && memcmp(back, r, n * sizeof *r) != 0))
		abort();
	grantrec_encode(back, nback, &again, &alen);
	if (alen != len || memcmp(enc, again, len) != 0)
		abort();
	free(again);
	free(enc);
	free(back);
	free(r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_scope(data + 1, size - 1, why_size(data[0]));
	else
		fuzz_file(data + 1, size - 1, why_size(data[0]));
	return 0;
}
