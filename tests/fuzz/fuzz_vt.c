/* fuzz_vt: differential libFuzzer target for the terminal model and its
 * redraw (vt_screen.c). Arbitrary output is fed in pieces, with resizes
 * between them; at every snapshot the redraw, fed to a fresh model of the
 * same size, must give the same model, and redraw to the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_screen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The input: two bytes for the size, then commands. A byte below 0xf0 is
 * the length of a piece of output that follows; 0xf0-0xf7 resizes to the
 * next two bytes; 0xf8 and up takes a snapshot. Sizes stay small so that
 * the fuzzer spends its time on sequences, not on cells.
 */
#define FUZZ_VT_COLS(b) (1 + (b) % 120)
#define FUZZ_VT_ROWS(b) (1 + (b) % 40)

static void
fuzz_vt_check(const struct vt_screen *vs)
{
	struct vt_screen *copy;
	char *buf, *again, *cause;
	size_t len, len2;
	int cols, rows;

	vt_screen_size(vs, &cols, &rows);
	buf = vt_screen_redraw(vs, &len);
	copy = vt_screen_create(cols, rows);
	vt_screen_feed(copy, buf, len);
	if (vt_screen_compare(vs, copy, &cause) != 0) {
		fprintf(stderr, "redraw differs: %s\n", cause);
		abort();
	}
	again = vt_screen_redraw(copy, &len2);
	if (len2 != len || memcmp(buf, again, len) != 0) {
		fprintf(stderr, "second redraw differs\n");
		abort();
	}
	free(again);
	free(buf);
	vt_screen_free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vt_screen *vs;
	size_t i = 2, n;
	uint8_t op;

	if (size < 2)
		return 0;
	vs = vt_screen_create(FUZZ_VT_COLS(data[0]), FUZZ_VT_ROWS(data[1]));
	while (i < size) {
		op = data[i++];
		if (op < 0xf0) {
			n = op < size - i ? op : size - i;
			vt_screen_feed(vs, data + i, n);
			i += n;
		} else if (op < 0xf8 && size - i >= 2) {
			vt_screen_resize(vs, FUZZ_VT_COLS(data[i]),
			    FUZZ_VT_ROWS(data[i + 1]));
			i += 2;
		} else
			fuzz_vt_check(vs);
	}
	fuzz_vt_check(vs);
	vt_screen_free(vs);
	return 0;
}
