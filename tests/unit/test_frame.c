/* test_frame: unit tests of the length-prefix framing (frame.c): when a
 * frame is whole, when more bytes are needed, and when a header alone is
 * reason to close the connection. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "tap.h"

/*
 * Runs frame_parse on a copy of buf[0..len) of exactly len bytes, so that
 * a read past the end is caught by the address sanitizer. On FRAME_OK,
 * *at is where the payload starts, counted from the start of buf.
 */
static enum frame_result
parse(const uint8_t *buf, size_t len, size_t max, size_t *at, size_t *plen)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);
	const uint8_t *payload = NULL;
	enum frame_result r;

	if (len > 0)
		memcpy(copy, buf, len);
	r = frame_parse(copy, len, max, &payload, plen);
	if (r == FRAME_OK) {
		ck_assert_ptr_nonnull(payload);
		*at = (size_t)(payload - copy);
	}
	free(copy);
	return r;
}

START_TEST(test_header_bytes)
{
	uint8_t hdr[FRAME_HDR];

	frame_header(hdr, 0x01020304);
	ck_assert_mem_eq(hdr, "\x01\x02\x03\x04", FRAME_HDR);
	frame_header(hdr, 0);
	ck_assert_mem_eq(hdr, "\0\0\0\0", FRAME_HDR);
	frame_header(hdr, UINT32_MAX);
	ck_assert_mem_eq(hdr, "\xff\xff\xff\xff", FRAME_HDR);
	frame_header(hdr, 300);
	ck_assert_mem_eq(hdr, "\0\0\x01\x2c", FRAME_HDR);
}
END_TEST

/* Fewer bytes than a header: nothing can be told yet, whatever they hold,
 * even the start of a header that will announce too much. */
START_TEST(test_short_header)
{
	static const uint8_t zero[FRAME_HDR],
	    huge[FRAME_HDR] = {0xff, 0xff, 0xff, 0xff};
	size_t at, plen, n;

	for (n = 0; n < FRAME_HDR; n++) {
		ck_assert_int_eq(
		    parse(zero, n, 16, &at, &plen), FRAME_NEED_MORE);
		ck_assert_int_eq(
		    parse(huge, n, 16, &at, &plen), FRAME_NEED_MORE);
	}
	ck_assert_int_eq(parse(zero, FRAME_HDR, 16, &at, &plen), FRAME_OK);
}
END_TEST

START_TEST(test_partial_body)
{
	uint8_t buf[FRAME_HDR + 5];
	size_t at, plen, n;

	frame_header(buf, 5);
	memcpy(buf + FRAME_HDR, "hello", 5);
	for (n = FRAME_HDR; n < sizeof buf; n++)
		ck_assert_int_eq(
		    parse(buf, n, 16, &at, &plen), FRAME_NEED_MORE);
	ck_assert_int_eq(parse(buf, sizeof buf, 16, &at, &plen), FRAME_OK);
	ck_assert_uint_eq(at, FRAME_HDR);
	ck_assert_uint_eq(plen, 5);
}
END_TEST

START_TEST(test_exact_frame)
{
	uint8_t buf[FRAME_HDR + 3];
	const uint8_t *payload;
	size_t plen;

	frame_header(buf, 3);
	memcpy(buf + FRAME_HDR, "abc", 3);
	ck_assert_int_eq(
	    frame_parse(buf, sizeof buf, 1024, &payload, &plen), FRAME_OK);
	ck_assert_ptr_eq(payload, buf + FRAME_HDR);
	ck_assert_uint_eq(plen, 3);
	ck_assert_mem_eq(payload, "abc", 3);
}
END_TEST

/* Two frames in one read, then the start of a third: each is found where
 * the previous one ends. */
START_TEST(test_back_to_back)
{
	uint8_t buf[FRAME_HDR + 2 + FRAME_HDR + 4 + 2];
	const uint8_t *p = buf, *payload;
	size_t left = sizeof buf, plen;

	frame_header(buf, 2);
	memcpy(buf + FRAME_HDR, "hi", 2);
	frame_header(buf + FRAME_HDR + 2, 4);
	memcpy(buf + 2 * FRAME_HDR + 2, "four", 4);
	memcpy(buf + 2 * FRAME_HDR + 6, "\0\0", 2);

	ck_assert_int_eq(frame_parse(p, left, 64, &payload, &plen), FRAME_OK);
	ck_assert_uint_eq(plen, 2);
	ck_assert_mem_eq(payload, "hi", 2);
	p += FRAME_HDR + plen;
	left -= FRAME_HDR + plen;
	ck_assert_int_eq(frame_parse(p, left, 64, &payload, &plen), FRAME_OK);
	ck_assert_ptr_eq(payload, buf + 2 * FRAME_HDR + 2);
	ck_assert_uint_eq(plen, 4);
	ck_assert_mem_eq(payload, "four", 4);
	p += FRAME_HDR + plen;
	left -= FRAME_HDR + plen;
	ck_assert_uint_eq(left, 2);
	ck_assert_int_eq(
	    frame_parse(p, left, 64, &payload, &plen), FRAME_NEED_MORE);
}
END_TEST

START_TEST(test_zero_length)
{
	uint8_t buf[FRAME_HDR + 1] = {0, 0, 0, 0, 0x7f};
	size_t at, plen = 99;

	ck_assert_int_eq(parse(buf, FRAME_HDR, 16, &at, &plen), FRAME_OK);
	ck_assert_uint_eq(at, FRAME_HDR);
	ck_assert_uint_eq(plen, 0);
	/* The byte after an empty frame belongs to the next one. */
	plen = 99;
	ck_assert_int_eq(parse(buf, sizeof buf, 16, &at, &plen), FRAME_OK);
	ck_assert_uint_eq(plen, 0);
	/* Even when nothing larger is allowed. */
	ck_assert_int_eq(parse(buf, FRAME_HDR, 0, &at, &plen), FRAME_OK);
}
END_TEST

/* A header over max is refused as soon as the header is in, before a
 * byte of the body, and whatever bytes follow it. */
START_TEST(test_too_large)
{
	static const uint32_t lens[] = {17, 18, 65536, 0x80000000u, UINT32_MAX};
	uint8_t buf[FRAME_HDR + 32] = {0};
	size_t at, plen, i;

	for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		frame_header(buf, lens[i]);
		ck_assert_int_eq(
		    parse(buf, FRAME_HDR, 16, &at, &plen), FRAME_TOO_LARGE);
		ck_assert_int_eq(
		    parse(buf, sizeof buf, 16, &at, &plen), FRAME_TOO_LARGE);
	}
	frame_header(buf, 1);
	ck_assert_int_eq(parse(buf, FRAME_HDR, 0, &at, &plen), FRAME_TOO_LARGE);
}
END_TEST

/* Exactly max is allowed: awaited while partial, whole when complete. */
START_TEST(test_max_boundary)
{
	static const size_t maxes[] = {1, 16, 1000};
	uint8_t buf[FRAME_HDR + 1001];
	size_t at, plen, i, max;

	memset(buf, 0xab, sizeof buf);
	for (i = 0; i < sizeof maxes / sizeof maxes[0]; i++) {
		max = maxes[i];
		frame_header(buf, (uint32_t)max);
		ck_assert_int_eq(
		    parse(buf, FRAME_HDR, max, &at, &plen), FRAME_NEED_MORE);
		ck_assert_int_eq(
		    parse(buf, FRAME_HDR + max - 1, max, &at, &plen),
		    FRAME_NEED_MORE);
		ck_assert_int_eq(
		    parse(buf, FRAME_HDR + max, max, &at, &plen), FRAME_OK);
		ck_assert_uint_eq(plen, max);
		frame_header(buf, (uint32_t)max + 1);
		ck_assert_int_eq(
		    parse(buf, FRAME_HDR, max, &at, &plen), FRAME_TOO_LARGE);
	}
	/* The largest header there is, with a max that allows it: wait. */
	frame_header(buf, UINT32_MAX);
	ck_assert_int_eq(
	    parse(buf, sizeof buf, UINT32_MAX, &at, &plen), FRAME_NEED_MORE);
	ck_assert_int_eq(
	    parse(buf, sizeof buf, SIZE_MAX, &at, &plen), FRAME_NEED_MORE);
}
END_TEST

static Suite *
frame_suite(void)
{
	Suite *s = suite_create("frame");
	TCase *tc = tcase_create("frame");

	tcase_add_test(tc, test_header_bytes);
	tcase_add_test(tc, test_short_header);
	tcase_add_test(tc, test_partial_body);
	tcase_add_test(tc, test_exact_frame);
	tcase_add_test(tc, test_back_to_back);
	tcase_add_test(tc, test_zero_length);
	tcase_add_test(tc, test_too_large);
	tcase_add_test(tc, test_max_boundary);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tap_run(frame_suite());
}
