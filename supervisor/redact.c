/* redact: streaming replacement of secret values (see redact.h). Owns
 * only the bytes it holds back, which it wipes as soon as they leave. */
#include <sys/types.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "xmalloc.h"

/* The held-back tail: the possible start of a value. */
struct redact {
	uint8_t *held;
	size_t len;
	size_t cap;
};

/* The stream as one run of bytes: what is held back, then what came. */
struct redact_text {
	const uint8_t *a;
	size_t alen;
	const uint8_t *b;
	size_t blen;
};

enum redact_cmp {
	REDACT_NO,     /* the value is not there */
	REDACT_WHOLE,  /* the value is there whole */
	REDACT_PREFIX, /* the text ends inside what may be the value */
};

struct redact *
redact_new(void)
{
	return xcalloc(1, sizeof(struct redact));
}

void
redact_free(struct redact *r)
{
	if (r == NULL)
		return;
	if (r->held != NULL) {
		explicit_bzero(r->held, r->cap);
		free(r->held);
	}
	free(r);
}

size_t
redact_held(const struct redact *r)
{
	return r->len;
}

/* Whether value v starts at pos of t. */
static enum redact_cmp
redact_cmp(
    const struct redact_text *t, size_t pos, const uint8_t *v, size_t vlen)
{
	size_t total = t->alen + t->blen, n, k;

	n = total - pos < vlen ? total - pos : vlen;
	if (pos < t->alen) {
		k = t->alen - pos < n ? t->alen - pos : n;
		if (memcmp(t->a + pos, v, k) != 0)
			return REDACT_NO;
		if (n > k && memcmp(t->b, v + k, n - k) != 0)
			return REDACT_NO;
	} else if (memcmp(t->b + (pos - t->alen), v, n) != 0)
		return REDACT_NO;
	return n == vlen ? REDACT_WHOLE : REDACT_PREFIX;
}

/*
 * The longest value there whole at pos (its index, or -1). *wait is set
 * if a longer value may still be there: the text ends inside it. At the
 * end of the stream (eof) nothing can follow, so nothing waits.
 */
static ssize_t
redact_match(const struct redact_text *t, size_t pos,
    const struct redact_set *set, bool eof, bool *wait)
{
	const struct redact_secret *s;
	size_t i, bestlen = 0, prefixlen = 0;
	ssize_t best = -1;
	uint8_t c = pos < t->alen ? t->a[pos] : t->b[pos - t->alen];

	for (i = 0; i < set->n; i++) {
		s = &set->v[i];
		if (s->len < REDACT_MIN || s->len <= bestlen ||
		    s->value[0] != c)
			continue;
		switch (redact_cmp(t, pos, s->value, s->len)) {
		case REDACT_WHOLE:
			best = (ssize_t)i;
			bestlen = s->len;
			break;
		case REDACT_PREFIX:
			if (s->len > prefixlen)
				prefixlen = s->len;
			break;
		case REDACT_NO: break;
		}
	}
	*wait = !eof && prefixlen > bestlen;
	return best;
}

/* Passes t[from, to) on as it is. */
static void
redact_literal(const struct redact_text *t, size_t from, size_t to,
    redact_out out, void *arg)
{
	size_t end;

	if (from < t->alen) {
		end = to < t->alen ? to : t->alen;
		if (end > from)
			out(arg, t->a + from, end - from);
		from = end;
	}
	if (to > from)
		out(arg, t->b + (from - t->alen), to - from);
}

/* Passes "[redacted:NAME]" on, in one piece unless the name is long. */
static void
redact_replace(const char *name, redact_out out, void *arg)
{
	static const char head[] = "[redacted:";
	char buf[sizeof head + 128 + 1];
	size_t hlen = sizeof head - 1, nlen = strlen(name);

	if (nlen > sizeof buf - hlen - 1) {
		out(arg, head, hlen);
		out(arg, name, nlen);
		out(arg, "]", 1);
		return;
	}
	memcpy(buf, head, hlen);
	memcpy(buf + hlen, name, nlen);
	buf[hlen + nlen] = ']';
	out(arg, buf, hlen + nlen + 1);
}

/* Keeps t[from, end) as the new held-back tail, wiping what left. */
static void
redact_keep(struct redact *r, const struct redact_text *t, size_t from)
{
	size_t need = t->alen + t->blen - from, old = r->len, fromheld = 0, cap;
	uint8_t *p;

	if (from < t->alen)
		fromheld = t->alen - from;
	if (need > r->cap) {
		/* Grown in steps: a value fed byte by byte grows the tail. */
		cap = need > 2 * r->cap ? need : 2 * r->cap;
		if (cap < 64)
			cap = 64;
		p = xmalloc(cap);
		if (fromheld > 0)
			memcpy(p, r->held + from, fromheld);
		if (r->held != NULL) {
			explicit_bzero(r->held, r->cap);
			free(r->held);
		}
		r->held = p;
		r->cap = cap;
	} else if (fromheld > 0)
		memmove(r->held, r->held + from, fromheld);
	/* After held bytes comes all of b; otherwise b from some point. */
	if (need > fromheld)
		memcpy(r->held + fromheld,
		    t->b + (fromheld > 0 ? 0 : from - t->alen),
		    need - fromheld);
	r->len = need;
	if (old > need)
		explicit_bzero(r->held + need, old - need);
}

/* Which pairs of bytes some value starts with: a bit per pair. */
struct redact_pairs {
	uint64_t bit[256 * 256 / 64];
};

static void
redact_pairs_init(struct redact_pairs *p, const struct redact_set *set)
{
	size_t i, k;

	memset(p, 0, sizeof *p);
	for (i = 0; i < set->n; i++) {
		if (set->v[i].len < REDACT_MIN)
			continue;
		k = (size_t)set->v[i].value[0] << 8 | set->v[i].value[1];
		p->bit[k / 64] |= (uint64_t)1 << (k % 64);
	}
}

static bool
redact_pairs_has(const struct redact_pairs *p, uint8_t c0, uint8_t c1)
{
	size_t k = (size_t)c0 << 8 | c1;

	return (p->bit[k / 64] >> (k % 64)) & 1;
}

/*
 * The held-back bytes and data as one stream: walks it, passing on bytes
 * that cannot start a value at once (a bitmap of the values' first two
 * bytes skips them without comparing), a replacement for each value
 * found, and stops at the first position where a value may start but the
 * text ends before it can be told: that tail is held back (at most the
 * longest value less one byte). Since a position is decided only once
 * enough bytes follow it, the output does not depend on how the stream
 * was cut.
 */
static void
redact_run(struct redact *r, const struct redact_set *set, const void *data,
    size_t len, bool eof, redact_out out, void *arg)
{
	struct redact_text t = {r->held, r->len, data, len};
	const struct redact_set none = {NULL, 0, 0};
	const uint8_t *b = data;
	size_t total = r->len + len, i = 0, lit = 0;
	struct redact_pairs pairs;
	bool wait = false;
	ssize_t k;

	if (set == NULL)
		set = &none;
	redact_pairs_init(&pairs, set);
	while (i < total) {
		/* In the new bytes, skip what cannot start a value. */
		if (i >= t.alen) {
			while (i + 1 < total &&
			    !redact_pairs_has(
			        &pairs, b[i - t.alen], b[i + 1 - t.alen]))
				i++;
		}
		k = redact_match(&t, i, set, eof, &wait);
		if (wait)
			break;
		if (k < 0) {
			i++;
			continue;
		}
		redact_literal(&t, lit, i, out, arg);
		redact_replace(set->v[k].name, out, arg);
		i += set->v[k].len;
		lit = i;
	}
	redact_literal(&t, lit, i, out, arg);
	redact_keep(r, &t, i);
}

void
redact_feed(struct redact *r, const struct redact_set *set, const void *data,
    size_t len, redact_out out, void *arg)
{
	redact_run(r, set, data, len, false, out, arg);
}

void
redact_flush(
    struct redact *r, const struct redact_set *set, redact_out out, void *arg)
{
	redact_run(r, set, NULL, 0, true, out, arg);
}
