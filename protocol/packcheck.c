/* packcheck: whether what berth packed is one whole message (see
 * packcheck.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mpcheck.h"
#include "packcheck.h"

int
packcheck_whole(const void *buf, size_t len, const char **why)
{
	static const struct mpcheck_limits lim = {
	    MPCHECK_DEPTH_CEILING, SIZE_MAX};

	return mpcheck_object(buf, len, &lim, why);
}

/* What is left of a message, read from the front. */
struct packcheck_in {
	const uint8_t *p;
	size_t left;
};

/* A string of the message, not NUL-terminated. */
struct packcheck_str {
	const char *s;
	int n;
};

static void
packcheck_skip(struct packcheck_in *in, size_t n)
{
	in->p += n;
	in->left -= n;
}

/* A big-endian unsigned of n bytes; -1 if fewer remain. */
static int
packcheck_be(struct packcheck_in *in, size_t n, uint64_t *v)
{
	if (in->left < n)
		return -1;
	for (*v = 0; n > 0; n--, packcheck_skip(in, 1))
		*v = *v << 8 | *in->p;
	return 0;
}

/* The next object, if it is a string short enough to name something. */
static int
packcheck_string(struct packcheck_in *in, struct packcheck_str *str)
{
	uint64_t n;

	if (in->left == 0)
		return -1;
	if (*in->p >= 0xa0 && *in->p <= 0xbf) {
		n = *in->p & 0x1f;
		packcheck_skip(in, 1);
	} else if (*in->p == 0xd9) {
		packcheck_skip(in, 1);
		if (packcheck_be(in, 1, &n) < 0)
			return -1;
	} else
		return -1;
	if (n > in->left)
		return -1;
	str->s = (const char *)in->p;
	str->n = (int)n;
	packcheck_skip(in, n);
	return 0;
}

/* The next object, if it is an unsigned integer. */
static int
packcheck_uint(struct packcheck_in *in, uint64_t *v)
{
	uint8_t b;

	if (in->left == 0)
		return -1;
	b = *in->p;
	if (b <= 0x7f) {
		*v = b;
		packcheck_skip(in, 1);
		return 0;
	}
	if (b < 0xcc || b > 0xcf)
		return -1;
	packcheck_skip(in, 1);
	return packcheck_be(in, (size_t)1 << (b - 0xcc), v);
}

static bool
packcheck_is(const struct packcheck_str *str, const char *word)
{
	return (size_t)str->n == strlen(word) &&
	    memcmp(str->s, word, (size_t)str->n) == 0;
}

/* The head of an envelope: what names the message. */
struct packcheck_head {
	struct packcheck_str type, name; /* name: op, kind or stream */
	const char *numkey;              /* "id", "seq" or NULL */
	uint64_t num;
};

/* Reads one pair of the head; -1 at the first value that is not a
 * string, an unsigned or a boolean (the payload, packed by hand). */
static int
packcheck_pair(struct packcheck_in *in, struct packcheck_head *h)
{
	struct packcheck_str key, str;
	uint64_t num;

	if (packcheck_string(in, &key) < 0)
		return -1;
	if (packcheck_string(in, &str) == 0) {
		if (packcheck_is(&key, "type"))
			h->type = str;
		else if (packcheck_is(&key, "op") ||
		    packcheck_is(&key, "kind") || packcheck_is(&key, "stream"))
			h->name = str;
		return 0;
	}
	if (packcheck_uint(in, &num) == 0) {
		if (packcheck_is(&key, "id") || packcheck_is(&key, "seq")) {
			h->numkey = packcheck_is(&key, "id") ? "id" : "seq";
			h->num = num;
		}
		return 0;
	}
	if (in->left > 0 && (*in->p == 0xc2 || *in->p == 0xc3)) {
		packcheck_skip(in, 1);
		return 0;
	}
	return -1;
}

void
packcheck_describe(const void *buf, size_t len, char *out, size_t outlen)
{
	struct packcheck_in in = {buf, len};
	struct packcheck_head h = {{"", 0}, {"", 0}, NULL, 0};
	char num[32] = "";
	unsigned pairs;

	if (len == 0 || *in.p < 0x80 || *in.p > 0x8f) {
		snprintf(out, outlen, "not an envelope");
		return;
	}
	pairs = *in.p & 0x0f;
	packcheck_skip(&in, 1);
	while (pairs-- > 0 && packcheck_pair(&in, &h) == 0)
		;
	if (h.type.n == 0) {
		snprintf(out, outlen, "a map with no type");
		return;
	}
	if (h.numkey != NULL)
		snprintf(num, sizeof num, ", %s %llu", h.numkey,
		    (unsigned long long)h.num);
	snprintf(out, outlen, "%.*s%s%.*s%s", h.type.n, h.type.s,
	    h.name.n > 0 ? " " : "", h.name.n, h.name.s, num);
}

#ifdef BERTH_CHECKED
void
packcheck_sent(const void *buf, size_t len, const char *serving)
{
	const char *why;
	char what[256];

	if (packcheck_whole(buf, len, &why) == 0)
		return;
	packcheck_describe(buf, len, what, sizeof what);
	log_warn("packed a bad message (%s%s%s): %s; a map or array count "
	         "is wrong",
	    what, serving != NULL ? ", while serving " : "",
	    serving != NULL ? serving : "", why);
	abort();
}
#endif
