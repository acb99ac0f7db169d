/* test_redact: unit tests of streaming redaction (redact.c): the output
 * must not depend on where the stream was cut, the longest value wins,
 * what is held back is released by a flush, and held bytes are judged by
 * the set of the call that decides them. A one-shot reference
 * implementation judges thousands of random streams, of short values and
 * of long binary ones. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "tap.h"

/* What a redactor passed on, gathered. */
struct sink {
	char *buf;
	size_t len;
	size_t cap;
};

static void
sink_cb(void *arg, const void *data, size_t len)
{
	struct sink *k = arg;

	ck_assert_uint_gt(len, 0);
	if (k->len + len + 1 > k->cap) {
		k->cap = (k->len + len + 1) * 2;
		k->buf = realloc(k->buf, k->cap);
		ck_assert_ptr_nonnull(k->buf);
	}
	memcpy(k->buf + k->len, data, len);
	k->len += len;
	k->buf[k->len] = '\0';
}

static void
sink_reset(struct sink *k)
{
	k->len = 0;
	if (k->buf != NULL)
		k->buf[0] = '\0';
}

/* A set of values, as secrets.c builds one. */
struct testset {
	struct redact_secret v[16];
	struct redact_set set;
};

static void
testset_add(struct testset *ts, const char *name, const void *value, size_t len)
{
	ck_assert_uint_lt(ts->set.n, sizeof ts->v / sizeof ts->v[0]);
	ts->v[ts->set.n++] = (struct redact_secret){name, value, len};
	if (len >= REDACT_MIN && len > ts->set.maxlen)
		ts->set.maxlen = len;
	ts->set.v = ts->v;
}

/* A set built from NULL-terminated name/value pairs. */
static void
testset_init(struct testset *ts, const char *const *pairs)
{
	memset(ts, 0, sizeof *ts);
	ts->set.v = ts->v;
	for (; pairs[0] != NULL; pairs += 2)
		testset_add(ts, pairs[0], pairs[1], strlen(pairs[1]));
}

/* The one-shot reference: at each position the longest whole value (the
 * first of equal ones) is replaced, else the byte is kept. */
static void
reference(
    const struct redact_set *set, const char *in, size_t len, struct sink *k)
{
	size_t i = 0, j, best, bestlen;
	char rep[512];

	sink_reset(k);
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
			sink_cb(k, in + i, 1);
			i++;
			continue;
		}
		snprintf(rep, sizeof rep, "[redacted:%s]", set->v[best].name);
		sink_cb(k, rep, strlen(rep));
		i += bestlen;
	}
}

/* Feeds in cut at the given offsets (ascending), then flushes. Checks
 * that no more than the longest value less one byte is ever held. */
static void
run_cuts(const struct redact_set *set, const char *in, size_t len,
    const size_t *cuts, size_t ncuts, struct sink *k)
{
	struct redact *r = redact_new();
	size_t at = 0, i, end;

	sink_reset(k);
	for (i = 0; i <= ncuts; i++) {
		end = i < ncuts ? cuts[i] : len;
		redact_feed(r, set, in + at, end - at, sink_cb, k);
		ck_assert_uint_lt(
		    redact_held(r), set->maxlen > 0 ? set->maxlen : 1);
		at = end;
	}
	redact_flush(r, set, sink_cb, k);
	ck_assert_uint_eq(redact_held(r), 0);
	redact_free(r);
}

static void
run_one(const struct redact_set *set, const char *in, struct sink *k)
{
	run_cuts(set, in, strlen(in), NULL, 0, k);
}

/* Feeds data: what has come out since the sink was reset is out, and
 * held bytes are held back. */
static void
expect_feed(struct redact *r, const struct redact_set *set, const void *data,
    size_t len, struct sink *k, const char *out, size_t held)
{
	const char *got;

	redact_feed(r, set, data, len, sink_cb, k);
	got = k->buf != NULL ? k->buf : "";
	ck_assert_str_eq(got, out);
	ck_assert_uint_eq(redact_held(r), held);
}

/* Flushes: all is out, nothing held. */
static void
expect_flush(struct redact *r, const struct redact_set *set, struct sink *k,
    const char *out)
{
	const char *got;

	redact_flush(r, set, sink_cb, k);
	got = k->buf != NULL ? k->buf : "";
	ck_assert_str_eq(got, out);
	ck_assert_uint_eq(redact_held(r), 0);
}

static const char *const overlap_pairs[] = {
    "A", "abcd", "B", "bcdefg", "C", "abcdefgh", "D", "xyz", "E", "hijk", NULL};

START_TEST(test_basic)
{
	struct testset ts;
	struct sink k = {0};

	testset_init(&ts, overlap_pairs);
	run_one(&ts.set, "-abcd-", &k);
	ck_assert_str_eq(k.buf, "-[redacted:A]-");
	run_one(&ts.set, "xbcdefgy", &k);
	ck_assert_str_eq(k.buf, "x[redacted:B]y");
	/* Overlapping values: the one found first takes its bytes. */
	run_one(&ts.set, "abcdefg", &k);
	ck_assert_str_eq(k.buf, "[redacted:A]efg");
	/* The longest value at a position wins. */
	run_one(&ts.set, "abcdefgh!", &k);
	ck_assert_str_eq(k.buf, "[redacted:C]!");
	run_one(&ts.set, "abcdefghijk", &k);
	ck_assert_str_eq(k.buf, "[redacted:C]ijk");
	/* Shorter than REDACT_MIN: never replaced. */
	run_one(&ts.set, "xyz xyz", &k);
	ck_assert_str_eq(k.buf, "xyz xyz");
	run_one(&ts.set, "abcabcdabcd", &k);
	ck_assert_str_eq(k.buf, "abc[redacted:A][redacted:A]");
	free(k.buf);
}
END_TEST

/* The same text cut in every possible way into 2 and 3 pieces gives
 * the output of one piece. */
START_TEST(test_every_split)
{
	static const char text[] =
	    "a abcdefgh abcdefg bcdefgabcd hijkabcdefghabc xbcdef hij";
	size_t len = sizeof text - 1, i, j, cuts[2];
	struct sink want = {0}, got = {0};
	struct testset ts;

	testset_init(&ts, overlap_pairs);
	reference(&ts.set, text, len, &want);
	run_one(&ts.set, text, &got);
	ck_assert_str_eq(got.buf, want.buf);
	ck_assert_ptr_null(strstr(got.buf, "abcd"));
	ck_assert_ptr_null(strstr(got.buf, "hijk"));
	for (i = 0; i <= len; i++) {
		cuts[0] = i;
		run_cuts(&ts.set, text, len, cuts, 1, &got);
		ck_assert_msg(strcmp(got.buf, want.buf) == 0,
		    "cut at %zu: got %s, want %s", i, got.buf, want.buf);
		for (j = i; j <= len; j++) {
			cuts[1] = j;
			run_cuts(&ts.set, text, len, cuts, 2, &got);
			ck_assert_msg(strcmp(got.buf, want.buf) == 0,
			    "cuts at %zu, %zu: got %s, want %s", i, j, got.buf,
			    want.buf);
		}
	}
	free(want.buf);
	free(got.buf);
}
END_TEST

START_TEST(test_one_byte_chunks)
{
	static const char text[] = "key=abcdefgh; abcd bcdefg.";
	size_t len = sizeof text - 1, cuts[sizeof text], i;
	struct sink got = {0};
	struct testset ts;

	testset_init(&ts, overlap_pairs);
	for (i = 0; i < len; i++)
		cuts[i] = i + 1;
	run_cuts(&ts.set, text, len, cuts, len - 1, &got);
	ck_assert_str_eq(
	    got.buf, "key=[redacted:C]; [redacted:A] [redacted:B].");
	free(got.buf);
}
END_TEST

START_TEST(test_hold_and_flush)
{
	static const char *const pairs[] = {
	    "S", "secret1", "T", "secret12", "U", "tail", NULL};
	struct testset ts;
	struct sink k = {0};
	struct redact *r = redact_new();

	testset_init(&ts, pairs);
	/* The start of a value is held back until more bytes tell. */
	expect_feed(r, &ts.set, "xx sec", 6, &k, "xx ", 3);
	/* An empty read changes nothing. */
	expect_feed(r, &ts.set, "", 0, &k, "xx ", 3);
	expect_feed(r, &ts.set, "ond", 3, &k, "xx second", 0);
	/* A prefix released by a flush, unchanged. */
	sink_reset(&k);
	expect_feed(r, &ts.set, "-secre", 6, &k, "-", 5);
	expect_flush(r, &ts.set, &k, "-secre");
	/* A whole value at the very end that may still grow into a longer
	 * one waits; the flush decides it is the shorter one. */
	sink_reset(&k);
	expect_feed(r, &ts.set, "= secret1", 9, &k, "= ", 7);
	expect_flush(r, &ts.set, &k, "= [redacted:S]");
	/* A value at the very end that cannot grow goes at once. */
	sink_reset(&k);
	expect_feed(r, &ts.set, "a tail", 6, &k, "a [redacted:U]", 0);
	redact_free(r);
	free(k.buf);
}
END_TEST

/* The set may change between calls (a secret set or unset meanwhile):
 * what is held is judged by the set of the call that decides it. */
START_TEST(test_set_changes)
{
	static const char *const pairs[] = {"S", "secret", NULL};
	struct testset ts, empty;
	struct sink k = {0};
	struct redact *r = redact_new();

	testset_init(&ts, pairs);
	testset_init(&empty, (const char *const[]){NULL});
	expect_feed(r, &ts.set, "a sec", 5, &k, "a ", 3);
	expect_feed(r, &empty.set, "ret b", 5, &k, "a secret b", 0);
	sink_reset(&k);
	expect_feed(r, &ts.set, "x sec", 5, &k, "x ", 3);
	expect_feed(r, NULL, "ret", 3, &k, "x secret", 0);
	redact_free(r);
	free(k.buf);
}
END_TEST

START_TEST(test_long_name)
{
	char name[301], want[400];
	const char *pairs[] = {name, "value", NULL};
	struct testset ts;
	struct sink k = {0};

	memset(name, 'N', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	testset_init(&ts, pairs);
	run_one(&ts.set, "(value)", &k);
	snprintf(want, sizeof want, "([redacted:%s])", name);
	ck_assert_str_eq(k.buf, want);
	free(k.buf);
}
END_TEST

/* A small deterministic generator, so a failure can be replayed. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t
rnd_below(uint64_t *s, size_t n)
{
	return (size_t)(rnd(s) % n);
}

/* A stream of at least target bytes built from pieces of the set's
 * values (whole, prefixes, suffixes, middles), some after one of the two
 * filler bytes. in holds target + the longest value + 1 bytes. */
static size_t
stream_of_pieces(uint64_t *seed, const struct redact_set *set,
    const char *filler, char *in, size_t target)
{
	size_t len = 0, i, vl, a, b;

	while (len < target) {
		i = rnd_below(seed, set->n);
		vl = set->v[i].len;
		a = rnd_below(seed, vl + 1);
		b = a + rnd_below(seed, vl - a + 1);
		switch (rnd_below(seed, 4)) {
		case 0:
			a = 0;
			b = vl;
			break;
		case 1: a = 0; break;
		case 2: b = vl; break;
		default: in[len++] = filler[rnd_below(seed, 2)]; break;
		}
		memcpy(in + len, set->v[i].value + a, b - a);
		len += b - a;
	}
	return len;
}

/* Up to max cuts of len bytes in ascending order: at random, or after
 * every byte from the first. */
static size_t
random_cuts(
    uint64_t *seed, size_t len, size_t *cuts, size_t max, bool every_byte)
{
	size_t n, i, j, t;

	if (every_byte) {
		n = len - 1 < max ? len - 1 : max;
		for (i = 0; i < n; i++)
			cuts[i] = i + 1;
		return n;
	}
	n = rnd_below(seed, max + 1);
	for (i = 0; i < n; i++)
		cuts[i] = rnd_below(seed, len + 1);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
			t = cuts[j];
			cuts[j] = cuts[j - 1];
			cuts[j - 1] = t;
		}
	return n;
}

/* in, fed cut at cuts, gives the reference's output, in which no value
 * survives. The values' bytes must never occur in a replacement. */
static void
expect_reference(const struct redact_set *set, const char *in, size_t len,
    const size_t *cuts, size_t ncuts, size_t round)
{
	struct sink want = {0}, got = {0};
	size_t i;

	reference(set, in, len, &want);
	run_cuts(set, in, len, cuts, ncuts, &got);
	ck_assert_msg(
	    got.len == want.len && memcmp(got.buf, want.buf, got.len) == 0,
	    "round %zu: %zu bytes out, want %zu", round, got.len, want.len);
	for (i = 0; i < set->n; i++)
		if (set->v[i].len >= REDACT_MIN)
			ck_assert_msg(memmem(got.buf, got.len, set->v[i].value,
			                  set->v[i].len) == NULL,
			    "round %zu: %s survives", round, set->v[i].name);
	free(want.buf);
	free(got.buf);
}

/*
 * Streams built from pieces of short values, cut at random places and
 * often after every byte. Values are digits and names letters, so a
 * replacement can never form part of a value.
 */
START_TEST(test_random)
{
	static const char *const names[] = {"A", "B", "C", "D", "E", "F"};
	char values[6][16], in[512];
	const char *pairs[13];
	struct testset ts;
	size_t cuts[64], ncuts, nv, len, vl, a, b, i, j, round;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	for (round = 0; round < 4000; round++) {
		nv = 1 + rnd_below(&seed, 6);
		for (i = 0; i < nv; i++) {
			vl = 1 + rnd_below(&seed, 12);
			for (j = 0; j < vl; j++)
				values[i][j] =
				    (char)('0' + rnd_below(&seed, 3));
			values[i][vl] = '\0';
			/* Often a value starts or ends like an earlier one. */
			if (i > 0 && rnd_below(&seed, 2) == 0) {
				a = rnd_below(&seed, i);
				b = strlen(values[a]) / 2;
				if (rnd_below(&seed, 2) == 0)
					memcpy(values[i], values[a],
					    b < vl ? b : vl);
				else
					memcpy(
					    values[i] + (vl > b ? vl - b : 0),
					    values[a] + strlen(values[a]) -
					        (b < vl ? b : vl),
					    b < vl ? b : vl);
			}
			pairs[2 * i] = names[i];
			pairs[2 * i + 1] = values[i];
		}
		pairs[2 * nv] = NULL;
		testset_init(&ts, pairs);
		len = stream_of_pieces(&seed, &ts.set, "x1", in, 200);
		ncuts = random_cuts(&seed, len, cuts, 63, round % 10 == 0);
		expect_reference(&ts.set, in, len, cuts, ncuts, round);
	}
}
END_TEST

/*
 * Values longer than the tail first held back (64 bytes), of any bytes
 * (NUL, 0x7f, 0x80, 0xff), one the start of another, in long streams fed
 * a byte at a time or cut at random. Deciding between the two longest
 * holds 999 bytes back, grown a byte at a time: what it held must survive
 * each growth of the tail.
 */
START_TEST(test_long_binary_values)
{
	static const uint8_t alphabet[] = {0x00, 0x7f, 0x80, 0xff};
	static const char *const names[] = {"A", "B", "C", "D", "E", "F"};
	static const size_t lens[] = {4, 63, 64, 65, 200, 1000};
	static uint8_t values[6][1000];
	static char in[4000 + 1000 + 1];
	static size_t cuts[sizeof in];
	const char filler[] = {0x00, (char)0xff};
	uint64_t seed = 0x2545f4914f6cdd1dULL;
	struct testset ts;
	size_t ncuts, len, i, j, round;

	memset(&ts, 0, sizeof ts);
	for (i = 0; i < 6; i++) {
		for (j = 0; j < lens[i]; j++)
			values[i][j] = alphabet[rnd_below(&seed, 4)];
		if (i == 4)
			memcpy(values[4], values[5], lens[4]);
		testset_add(&ts, names[i], values[i], lens[i]);
	}
	for (round = 0; round < 24; round++) {
		len = stream_of_pieces(&seed, &ts.set, filler, in, 4000);
		ncuts = random_cuts(&seed, len, cuts,
		    round % 4 == 0 ? len : 300, round % 4 == 0);
		expect_reference(&ts.set, in, len, cuts, ncuts, round);
	}
}
END_TEST

/* The held tail can move on and grow at once: the start of one value
 * is let go while a longer one that began inside the tail grows past
 * the room it had. The bytes kept must be the right ones. */
START_TEST(test_tail_moves_and_grows)
{
	char x[63], y[102], in[51];
	struct testset ts;
	struct sink k = {0};
	struct redact *r = redact_new();

	/* x: "q", 60 'z', "1"; y: 100 'z', "2". */
	memset(x, 'z', sizeof x);
	x[0] = 'q';
	x[61] = '1';
	x[62] = '\0';
	memset(y, 'z', sizeof y);
	y[100] = '2';
	y[101] = '\0';
	memset(&ts, 0, sizeof ts);
	testset_add(&ts, "X", x, strlen(x));
	testset_add(&ts, "Y", y, strlen(y));

	memset(in, 'z', sizeof in);
	in[0] = 'q';
	expect_feed(r, &ts.set, in, 51, &k, "", 51);
	/* 71 bytes: no x at 0, a y may start at 1. */
	expect_feed(r, &ts.set, in + 1, 20, &k, "q", 70);
	expect_feed(r, &ts.set, in + 1, 30, &k, "q", 100);
	expect_feed(r, &ts.set, "2", 1, &k, "q[redacted:Y]", 0);
	redact_free(r);
	free(k.buf);
}
END_TEST

/* A flush decides what is held by the set it is given: a value set
 * while its start was held is redacted, one unset meanwhile is not. */
START_TEST(test_flush_set_changes)
{
	static const char *const held_pairs[] = {"S", "secret1", NULL};
	static const char *const flush_pairs[] = {"T", "secret", NULL};
	struct testset held, flush, empty;
	const struct {
		const struct redact_set *set;
		const char *out;
	} flushes[] = {
	    {&flush.set, "x [redacted:T]"},
	    {&empty.set, "x secret"},
	    {NULL, "x secret"},
	};
	struct sink k = {0};
	struct redact *r = redact_new();
	size_t i;

	testset_init(&held, held_pairs);
	testset_init(&flush, flush_pairs);
	testset_init(&empty, (const char *const[]){NULL});
	for (i = 0; i < sizeof flushes / sizeof flushes[0]; i++) {
		sink_reset(&k);
		expect_feed(r, &held.set, "x secret", 8, &k, "x ", 6);
		expect_flush(r, flushes[i].set, &k, flushes[i].out);
	}
	redact_free(r);
	free(k.buf);
}
END_TEST

static Suite *
redact_suite(void)
{
	Suite *s = suite_create("redact");
	TCase *tc = tcase_create("redact");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_basic);
	tcase_add_test(tc, test_every_split);
	tcase_add_test(tc, test_one_byte_chunks);
	tcase_add_test(tc, test_hold_and_flush);
	tcase_add_test(tc, test_set_changes);
	tcase_add_test(tc, test_long_name);
	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_long_binary_values);
	tcase_add_test(tc, test_tail_moves_and_grows);
	tcase_add_test(tc, test_flush_set_changes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tap_run(redact_suite());
}
