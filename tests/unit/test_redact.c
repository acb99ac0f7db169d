/* test_redact: unit tests of streaming redaction (redact.c): the output
 * must not depend on where the stream was cut, the longest value wins,
 * and what is held back is released by a flush. A one-shot reference
 * implementation judges thousands of random streams. */
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

/* A set built from NULL-terminated name/value pairs. */
struct testset {
	struct redact_secret v[16];
	struct redact_set set;
};

static void
testset_init(struct testset *ts, const char *const *pairs)
{
	size_t n = 0;

	memset(ts, 0, sizeof *ts);
	for (; pairs[0] != NULL; pairs += 2, n++) {
		ts->v[n].name = pairs[0];
		ts->v[n].value = (const uint8_t *)pairs[1];
		ts->v[n].len = strlen(pairs[1]);
		if (ts->v[n].len >= REDACT_MIN && ts->v[n].len > ts->set.maxlen)
			ts->set.maxlen = ts->v[n].len;
	}
	ts->set.v = ts->v;
	ts->set.n = n;
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
	redact_feed(r, &ts.set, "xx sec", 6, sink_cb, &k);
	ck_assert_str_eq(k.buf, "xx ");
	ck_assert_uint_eq(redact_held(r), 3);
	redact_feed(r, &ts.set, "ond", 3, sink_cb, &k);
	ck_assert_str_eq(k.buf, "xx second");
	ck_assert_uint_eq(redact_held(r), 0);
	/* A prefix released by a flush, unchanged. */
	sink_reset(&k);
	redact_feed(r, &ts.set, "-secre", 6, sink_cb, &k);
	ck_assert_str_eq(k.buf, "-");
	redact_flush(r, &ts.set, sink_cb, &k);
	ck_assert_str_eq(k.buf, "-secre");
	ck_assert_uint_eq(redact_held(r), 0);
	/* A whole value at the very end that may still grow into a longer
	 * one waits; the flush decides it is the shorter one. */
	sink_reset(&k);
	redact_feed(r, &ts.set, "= secret1", 9, sink_cb, &k);
	ck_assert_str_eq(k.buf, "= ");
	ck_assert_uint_eq(redact_held(r), 7);
	redact_flush(r, &ts.set, sink_cb, &k);
	ck_assert_str_eq(k.buf, "= [redacted:S]");
	/* A value at the very end that cannot grow goes at once. */
	sink_reset(&k);
	redact_feed(r, &ts.set, "a tail", 6, sink_cb, &k);
	ck_assert_str_eq(k.buf, "a [redacted:U]");
	ck_assert_uint_eq(redact_held(r), 0);
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
	redact_feed(r, &ts.set, "a sec", 5, sink_cb, &k);
	ck_assert_uint_eq(redact_held(r), 3);
	redact_feed(r, &empty.set, "ret b", 5, sink_cb, &k);
	ck_assert_str_eq(k.buf, "a secret b");
	ck_assert_uint_eq(redact_held(r), 0);
	sink_reset(&k);
	redact_feed(r, &ts.set, "x sec", 5, sink_cb, &k);
	redact_feed(r, NULL, "ret", 3, sink_cb, &k);
	ck_assert_str_eq(k.buf, "x secret");
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

/*
 * Streams built from pieces of the values (whole, prefixes, suffixes,
 * middles) and other bytes, cut at random places: the output equals the
 * reference's and holds no value. Values are digits and names letters,
 * so a replacement can never form part of a value.
 */
START_TEST(test_random)
{
	static const char *const names[] = {"A", "B", "C", "D", "E", "F"};
	char values[6][16], in[512];
	const char *pairs[13];
	struct sink want = {0}, got = {0};
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
		len = 0;
		while (len < 200) {
			i = rnd_below(&seed, nv);
			vl = strlen(values[i]);
			a = rnd_below(&seed, vl + 1);
			b = a + rnd_below(&seed, vl - a + 1);
			switch (rnd_below(&seed, 4)) {
			case 0:
				a = 0;
				b = vl;
				break;
			case 1: a = 0; break;
			case 2: b = vl; break;
			default:
				in[len++] = rnd_below(&seed, 2) ? 'x' : '1';
				break;
			}
			memcpy(in + len, values[i] + a, b - a);
			len += b - a;
		}
		ncuts = rnd_below(&seed, 64);
		for (i = 0; i < ncuts; i++)
			cuts[i] = rnd_below(&seed, len + 1);
		if (round % 10 == 0) {
			ncuts = len - 1 < 64 ? len - 1 : 64;
			for (i = 0; i < ncuts; i++)
				cuts[i] = i + 1;
		}
		for (i = 1; i < ncuts; i++)
			for (j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
				a = cuts[j];
				cuts[j] = cuts[j - 1];
				cuts[j - 1] = a;
			}
		reference(&ts.set, in, len, &want);
		run_cuts(&ts.set, in, len, cuts, ncuts, &got);
		ck_assert_msg(got.len == want.len &&
		        memcmp(got.buf, want.buf, got.len) == 0,
		    "round %zu: got %s, want %s", round, got.buf, want.buf);
		for (i = 0; i < nv; i++)
			if (strlen(values[i]) >= REDACT_MIN)
				ck_assert_msg(
				    memmem(got.buf, got.len, values[i],
				        strlen(values[i])) == NULL,
				    "round %zu: %s survives in %s", round,
				    values[i], got.buf);
	}
	free(want.buf);
	free(got.buf);
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
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tap_run(redact_suite());
}
