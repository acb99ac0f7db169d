/* test_ring: the ring's promises (ring.c): bytes are addressed by the
 * absolute offset at which they were written, the oldest go once it is
 * full, and a reader asking for any offset gets exactly the bytes still
 * held from there, told where they start, so a loss is always explicit.
 * A copy of every byte ever written judges each read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "tap.h"

/* The ring under test, and every byte ever written to it, in order. */
struct subject {
	struct ring r;
	uint8_t *bytes;
	size_t len;
	size_t cap;
};

static void
subject_init(struct subject *t, size_t cap)
{
	memset(t, 0, sizeof *t);
	ring_init(&t->r, cap);
}

static void
subject_free(struct subject *t)
{
	ring_free(&t->r);
	free(t->bytes);
}

/* The byte written at offset off: distinct across a few rings' worth, so
 * a read from the wrong place shows. */
static uint8_t
byte_at(uint64_t off)
{
	return (uint8_t)(off * 7 + off / 251);
}

static void
write_next(struct subject *t, size_t len)
{
	uint8_t *buf = malloc(len > 0 ? len : 1);
	size_t i;

	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < len; i++)
		buf[i] = byte_at(t->len + i);
	if (t->len + len >= t->cap) {
		t->cap = (t->len + len) * 2 + 1;
		t->bytes = realloc(t->bytes, t->cap);
		ck_assert_ptr_nonnull(t->bytes);
	}
	memcpy(t->bytes + t->len, buf, len);
	t->len += len;
	ring_write(&t->r, buf, len);
	free(buf);
}

/* The oldest offset the ring must still hold. */
static uint64_t
oldest(const struct subject *t)
{
	return t->len > t->r.cap ? t->len - t->r.cap : 0;
}

/* One read of at most max bytes from offset: it must start at want_at
 * and hold want_len of the bytes written there. */
static void
expect_piece(const struct subject *t, uint64_t offset, size_t max,
    uint64_t want_at, size_t want_len)
{
	const uint8_t *data = NULL;
	uint64_t at = ~want_at;

	ck_assert_uint_eq(ring_read(&t->r, offset, max, &data, &at), want_len);
	ck_assert_uint_eq(at, want_at);
	if (want_len > 0)
		ck_assert_mem_eq(data, t->bytes + at, want_len);
}

/* Reads from offset to the end as a reader would, piece by piece: the
 * first piece starts at the oldest byte held if offset is older, every
 * piece goes on where the last ended, and the bytes are those written. */
static void
expect_read_from(const struct subject *t, uint64_t offset)
{
	uint64_t want = offset < oldest(t) ? oldest(t) : offset, at;
	const uint8_t *data;
	size_t n, pieces = 0;

	for (;;) {
		n = ring_read(&t->r, want, t->r.cap, &data, &at);
		ck_assert_uint_eq(at, want);
		if (n == 0)
			break;
		ck_assert_uint_le(at + n, t->len);
		ck_assert_mem_eq(data, t->bytes + at, n);
		want = at + n;
		pieces++;
	}
	ck_assert_uint_eq(want, offset > t->len ? offset : t->len);
	/* What is held lies in at most two pieces: either side of the wrap. */
	ck_assert_uint_le(pieces, 2);
}

/* The whole state: the end, the start, and a read from every offset up
 * to past the end. */
static void
expect_ring(const struct subject *t)
{
	uint64_t off;

	ck_assert_uint_eq(t->r.end, t->len);
	ck_assert_uint_eq(ring_start(&t->r), oldest(t));
	for (off = 0; off <= t->len + 2; off++)
		expect_read_from(t, off);
}

START_TEST(test_empty)
{
	struct subject t;

	subject_init(&t, 16);
	ck_assert_uint_eq(ring_start(&t.r), 0);
	expect_piece(&t, 0, 16, 0, 0);
	expect_piece(&t, 5, 16, 5, 0);
	subject_free(&t);
}
END_TEST

/* Offsets count every byte ever written, not positions in the buffer. */
START_TEST(test_absolute_offsets)
{
	struct subject t;

	subject_init(&t, 16);
	write_next(&t, 5);
	write_next(&t, 6);
	ck_assert_uint_eq(t.r.end, 11);
	ck_assert_uint_eq(ring_start(&t.r), 0);
	expect_piece(&t, 7, 100, 7, 4);
	expect_ring(&t);
	subject_free(&t);
}
END_TEST

/* Past the capacity the oldest bytes go: ring_start moves on by exactly
 * what was overwritten, and a read that starts before it is told so. */
START_TEST(test_overwrite_moves_start)
{
	struct subject t;

	subject_init(&t, 16);
	write_next(&t, 16);
	ck_assert_uint_eq(ring_start(&t.r), 0);
	write_next(&t, 5);
	ck_assert_uint_eq(ring_start(&t.r), 5);
	expect_piece(&t, 0, 100, 5, 11);
	write_next(&t, 30);
	ck_assert_uint_eq(ring_start(&t.r), 51 - 16);
	expect_ring(&t);
	subject_free(&t);
}
END_TEST

/* A read stops where the buffer wraps, and at max: the rest comes from
 * the next read at the offset where this one ended. */
START_TEST(test_read_stops_at_wrap_and_max)
{
	struct subject t;

	subject_init(&t, 16);
	write_next(&t, 12);
	write_next(&t, 10); /* offsets 12..21: 4 at the end, 6 wrapped */
	expect_piece(&t, 10, 100, 10, 6);
	expect_piece(&t, 16, 100, 16, 6);
	expect_piece(&t, 8, 3, 8, 3);
	expect_piece(&t, 0, 1, 6, 1);
	subject_free(&t);
}
END_TEST

/* A reader at or past the end gets nothing, at the offset it asked for,
 * and the next write's bytes once they are there. */
START_TEST(test_read_at_and_past_end)
{
	struct subject t;

	subject_init(&t, 8);
	write_next(&t, 20);
	expect_piece(&t, 20, 8, 20, 0);
	expect_piece(&t, 1000, 8, 1000, 0);
	write_next(&t, 3);
	expect_piece(&t, 20, 8, 20, 3);
	subject_free(&t);
}
END_TEST

/* A write larger than the ring keeps its last cap bytes, at the offsets
 * they had in it, whatever the ring held before. */
START_TEST(test_write_larger_than_capacity)
{
	struct subject t;

	subject_init(&t, 16);
	write_next(&t, 100);
	ck_assert_uint_eq(t.r.end, 100);
	ck_assert_uint_eq(ring_start(&t.r), 84);
	expect_ring(&t);
	write_next(&t, 3);
	write_next(&t, 17);
	expect_ring(&t);
	write_next(&t, 16 * 5 + 9);
	expect_ring(&t);
	subject_free(&t);
}
END_TEST

/* One byte at a time, through many wraps. */
START_TEST(test_one_byte_writes)
{
	struct subject t;
	size_t i;

	subject_init(&t, 7);
	for (i = 0; i < 60; i++) {
		write_next(&t, 1);
		expect_ring(&t);
	}
	subject_free(&t);
}
END_TEST

/* Writes of every size around the capacity, from every position in the
 * buffer, and empty ones; a one-byte ring too. */
START_TEST(test_sizes_around_capacity)
{
	static const size_t caps[] = {1, 2, 16, 64};
	struct subject t;
	size_t c, pos, len;

	for (c = 0; c < sizeof caps / sizeof caps[0]; c++)
		for (pos = 0; pos < caps[c]; pos++)
			for (len = 0; len <= 2 * caps[c] + 1; len++) {
				subject_init(&t, caps[c]);
				write_next(&t, pos);
				write_next(&t, len);
				expect_ring(&t);
				write_next(&t, caps[c] / 2 + 1);
				expect_ring(&t);
				subject_free(&t);
			}
}
END_TEST

/* Large writes into a large ring, as a flood of terminal output. */
START_TEST(test_large_writes)
{
	static const size_t lens[] = {
	    65536, 1, 300000, 1 << 20, 12345, (1 << 20) + 1};
	struct subject t;
	size_t i;
	uint64_t off;

	subject_init(&t, 1 << 20);
	for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		write_next(&t, lens[i]);
		ck_assert_uint_eq(t.r.end, t.len);
		ck_assert_uint_eq(ring_start(&t.r), oldest(&t));
		for (off = 0; off <= t.len; off += 65521)
			expect_read_from(&t, off);
		expect_read_from(&t, t.len - 1);
	}
	subject_free(&t);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_absolute_offsets);
	tcase_add_test(tc, test_overwrite_moves_start);
	tcase_add_test(tc, test_read_stops_at_wrap_and_max);
	tcase_add_test(tc, test_read_at_and_past_end);
	tcase_add_test(tc, test_write_larger_than_capacity);
	tcase_add_test(tc, test_one_byte_writes);
	tcase_add_test(tc, test_sizes_around_capacity);
	tcase_add_test(tc, test_large_writes);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
