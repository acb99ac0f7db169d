/* test_gw_frames: unit tests of the follower of client WebSocket frame
 * headers (gw_frames.c): masked frames of every header size pass however
 * the bytes are cut, and the first unmasked frame is found at its header,
 * never in a payload. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_frames.h"
#include "tap.h"

/* Room for a few frames with small payloads. */
#define STREAM_MAX 4096

/* Writes the header of a frame of a payload of len bytes into out:
 * returns the header's size (2, 4 or 10, and 4 more for the key). The
 * 7-bit, 16-bit or 64-bit length is the shortest form unless form says
 * otherwise (0: shortest, 126 or 127: that one). */
static size_t
header(uint8_t *out, int masked, uint64_t len, int form)
{
	size_t n = 0;
	int i;

	out[n++] = 0x82; /* FIN, binary */
	if (form == 0)
		form = len < 126 ? 0 : len <= 0xffff ? 126 : 127;
	out[n++] = (uint8_t)((masked ? 0x80 : 0) | (form ? form : (int)len));
	if (form == 126) {
		out[n++] = (uint8_t)(len >> 8);
		out[n++] = (uint8_t)len;
	} else if (form == 127) {
		for (i = 7; i >= 0; i--)
			out[n++] = (uint8_t)(len >> (8 * i));
	}
	if (masked) {
		memcpy(out + n, "\x37\xfa\x21\x3d", 4);
		n += 4;
	}
	return n;
}

/* Appends a whole frame; its payload is bytes that would read as an
 * unmasked frame's header if the follower looked at them. */
static size_t
frame(uint8_t *out, int masked, size_t len, int form)
{
	size_t n = header(out, masked, len, form);

	memset(out + n, 0x01, len);
	if (len >= 2) {
		out[n] = 0x81;
		out[n + 1] = 0x05;
	}
	return n + len;
}

/* A stream of masked frames of every header size, then an unmasked
 * text frame: *at is where the unmasked frame starts. */
static size_t
stream(uint8_t *buf, size_t *at)
{
	size_t n = 0;

	n += frame(buf + n, 1, 0, 0);
	n += frame(buf + n, 1, 5, 0);
	n += frame(buf + n, 1, 125, 0);
	n += frame(buf + n, 1, 126, 0);
	n += frame(buf + n, 1, 300, 0);
	n += frame(buf + n, 1, 7, 126);
	n += frame(buf + n, 1, 9, 127);
	n += frame(buf + n, 1, 0, 127);
	*at = n;
	n += frame(buf + n, 0, 5, 0);
	n += frame(buf + n, 1, 5, 0);
	return n;
}

static size_t
follow(struct gw_frames *f, const uint8_t *buf, size_t len)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);
	size_t r;

	/* A copy of exactly len bytes: a read past it is caught. */
	memcpy(copy, buf, len);
	r = gw_frames_follow(f, copy, len);
	free(copy);
	return r;
}

START_TEST(test_masked_each_size)
{
	static const size_t lens[] = {
	    0, 1, 125, 126, 127, 1000, 65535, 65536, 70000};
	uint8_t *buf = malloc(80000);
	struct gw_frames f = {0};
	size_t i, n;

	for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		n = frame(buf, 1, lens[i], 0);
		ck_assert_uint_eq(follow(&f, buf, n), n);
		ck_assert_int_eq(f.at, GW_FRAMES_HEAD0);
	}
	free(buf);
}
END_TEST

START_TEST(test_unmasked_each_size)
{
	static const int forms[] = {0, 126, 127};
	uint8_t buf[STREAM_MAX];
	struct gw_frames f;
	size_t i, n;

	for (i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		f = (struct gw_frames){0};
		n = frame(buf, 0, 10, forms[i]);
		ck_assert_uint_eq(follow(&f, buf, n), 0);
		ck_assert_int_eq(f.at, GW_FRAMES_REFUSED);
	}
	/* A masked frame first: what comes before the unmasked one passes. */
	f = (struct gw_frames){0};
	n = frame(buf, 1, 3, 0);
	i = n;
	n += frame(buf + n, 0, 3, 0);
	ck_assert_uint_eq(follow(&f, buf, n), i);
}
END_TEST

START_TEST(test_after_masked_ones)
{
	uint8_t buf[STREAM_MAX];
	struct gw_frames f = {0};
	size_t at, n = stream(buf, &at);

	ck_assert_uint_eq(follow(&f, buf, n), at);
	ck_assert_int_eq(f.at, GW_FRAMES_REFUSED);
	/* Refused for good: the masked frame after it, and any more bytes,
	 * pass nothing. */
	ck_assert_uint_eq(follow(&f, buf, n), 0);
	ck_assert_uint_eq(follow(&f, buf, 1), 0);
}
END_TEST

/* Cut in two at every byte: the same frame is refused, at the same place
 * of the stream when its header starts after the cut. */
START_TEST(test_split_everywhere)
{
	uint8_t buf[STREAM_MAX];
	struct gw_frames f;
	size_t at, n = stream(buf, &at), k, a, b;

	for (k = 0; k <= n; k++) {
		f = (struct gw_frames){0};
		a = follow(&f, buf, k);
		b = follow(&f, buf + k, n - k);
		ck_assert_int_eq(f.at, GW_FRAMES_REFUSED);
		if (k <= at) {
			ck_assert_uint_eq(a, k);
			ck_assert_uint_eq(b, at - k);
		} else if (k <= at + 1) {
			/* Only the unmasked frame's first byte came first:
			 * the verdict waits for its second. */
			ck_assert_uint_eq(a, k);
			ck_assert_uint_eq(b, 0);
		} else {
			ck_assert_uint_eq(a, at);
			ck_assert_uint_eq(b, 0);
		}
	}
}
END_TEST

START_TEST(test_byte_at_a_time)
{
	uint8_t buf[STREAM_MAX];
	struct gw_frames f = {0};
	size_t at, n = stream(buf, &at), i, passed = 0;

	for (i = 0; i < n; i++)
		passed += follow(&f, buf + i, 1);
	ck_assert_int_eq(f.at, GW_FRAMES_REFUSED);
	/* Every byte up to the unmasked frame's second header byte. */
	ck_assert_uint_eq(passed, at + 1);
}
END_TEST

/* 64-bit lengths are counted down whole, not cut to 32 bits or to the
 * bytes at hand. */
START_TEST(test_long_lengths)
{
	static const uint64_t lens[] = {UINT64_MAX, UINT64_MAX - 1,
	    (uint64_t)1 << 63, ((uint64_t)1 << 32) + 3, (uint64_t)1 << 32,
	    0xffffffffu};
	uint8_t buf[STREAM_MAX];
	struct gw_frames f;
	size_t i, n;

	for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		f = (struct gw_frames){0};
		n = header(buf, 1, lens[i], 127);
		ck_assert_uint_eq(follow(&f, buf, n), n);
		ck_assert_int_eq(f.at, GW_FRAMES_PAYLOAD);
		ck_assert_uint_eq(f.length, lens[i]);
		/* Bytes that look like an unmasked header are payload. */
		n = frame(buf, 0, 100, 0);
		ck_assert_uint_eq(follow(&f, buf, n), n);
		ck_assert_int_eq(f.at, GW_FRAMES_PAYLOAD);
		ck_assert_uint_eq(f.length, lens[i] - n);
	}
}
END_TEST

/* The last bytes of a long payload end it exactly where they should. */
START_TEST(test_payload_end)
{
	uint8_t buf[STREAM_MAX];
	struct gw_frames f = {.at = GW_FRAMES_PAYLOAD, .length = 3};
	size_t n;

	memset(buf, 0, 3);
	n = 3 + frame(buf + 3, 0, 1, 0);
	ck_assert_uint_eq(follow(&f, buf, n), 3);
	ck_assert_int_eq(f.at, GW_FRAMES_REFUSED);
	f = (struct gw_frames){.at = GW_FRAMES_PAYLOAD, .length = 3};
	n = 3 + frame(buf + 3, 1, 1, 0);
	ck_assert_uint_eq(follow(&f, buf, n), n);
	ck_assert_int_eq(f.at, GW_FRAMES_HEAD0);
}
END_TEST

START_TEST(test_empty)
{
	struct gw_frames f = {0};
	uint8_t b = 0;

	ck_assert_uint_eq(gw_frames_follow(&f, &b, 0), 0);
	ck_assert_int_eq(f.at, GW_FRAMES_HEAD0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("gw_frames");
	TCase *tc = tcase_create("gw_frames");

	tcase_add_test(tc, test_masked_each_size);
	tcase_add_test(tc, test_unmasked_each_size);
	tcase_add_test(tc, test_after_masked_ones);
	tcase_add_test(tc, test_split_everywhere);
	tcase_add_test(tc, test_byte_at_a_time);
	tcase_add_test(tc, test_long_lengths);
	tcase_add_test(tc, test_payload_end);
	tcase_add_test(tc, test_empty);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
