/* test_vt_screen: unit tests of the terminal model and its redraw
 * (vt_screen.c). Most cases feed a model, redraw it into a second, fresh
 * model and require the two to be the same cell for cell, with the same
 * cursor, screens and modes: the redraw must reproduce the model exactly. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "vt_screen.h"

static void
feed(struct vt_screen *vs, const char *s)
{
	vt_screen_feed(vs, s, strlen(s));
}

static int
contains(const char *buf, size_t len, const char *what)
{
	return memmem(buf, len, what, strlen(what)) != NULL;
}

/*
 * Redraws vs into a fresh model of its size and fails unless the two are
 * the same; a second redraw, of the copy, must be the same bytes. Returns
 * the copy, for more checks; the caller frees it.
 */
static struct vt_screen *
roundtrip(struct vt_screen *vs)
{
	struct vt_screen *copy;
	char *buf, *again, *cause;
	size_t len, len2;
	int cols, rows;

	vt_screen_size(vs, &cols, &rows);
	buf = vt_screen_redraw(vs, &len);
	copy = vt_screen_create(cols, rows);
	vt_screen_feed(copy, buf, len);
	if (vt_screen_compare(vs, copy, &cause) != 0)
		ck_abort_msg("redraw differs: %s", cause);
	again = vt_screen_redraw(copy, &len2);
	ck_assert_uint_eq(len, len2);
	ck_assert_mem_eq(buf, again, len);
	free(again);
	free(buf);
	return copy;
}

static void
check_roundtrip(struct vt_screen *vs)
{
	vt_screen_free(roundtrip(vs));
}

/* The text of a row, blanks as spaces, trailing blanks cut. */
static void
row_text(struct vt_screen *vs, int row, char *out, size_t size)
{
	const struct vt_screen_cell *c;
	size_t n = 0;
	int cols, rows, col;

	vt_screen_size(vs, &cols, &rows);
	for (col = 0; col < cols && n + 1 < size; col++) {
		c = vt_screen_cell(vs, row, col);
		if (c->width == 0)
			continue;
		out[n++] = c->chars[0] == 0 ? ' '
		    : c->chars[0] < 0x80    ? (char)c->chars[0]
		                            : '?';
	}
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

static void
check_row(struct vt_screen *vs, int row, const char *want)
{
	char got[1024];

	row_text(vs, row, got, sizeof got);
	ck_assert_str_eq(got, want);
}

static void
check_cursor(struct vt_screen *vs, int row, int col)
{
	int r, c;

	vt_screen_cursor(vs, &r, &c);
	ck_assert_int_eq(r, row);
	ck_assert_int_eq(c, col);
}

START_TEST(test_text_wraps)
{
	struct vt_screen *vs = vt_screen_create(10, 4);

	feed(vs, "hello world, and more\r\nx");
	check_row(vs, 0, "hello worl");
	check_row(vs, 1, "d, and mor");
	check_row(vs, 2, "e");
	check_row(vs, 3, "x");
	check_cursor(vs, 3, 1);
	/* Five lines on four rows: the first scrolled away. */
	feed(vs, "\r\nlast");
	check_row(vs, 0, "d, and mor");
	check_row(vs, 3, "last");
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

START_TEST(test_colours_and_attributes)
{
	struct vt_screen *vs = vt_screen_create(40, 4);
	const struct vt_screen_cell *c;
	char *buf;
	size_t len;

	feed(vs,
	    "\033[1;3;4;5;7;9mA\033[m"
	    "\033[31;42mB\033[m"
	    "\033[91;104mC\033[m"
	    "\033[38;5;200;48;5;17mD\033[m"
	    "\033[38;2;1;2;3;48;2;250;251;252mE\033[m"
	    "\033[21mF\033[m\033[4:3mG\033[m\033[12mH\033[m"
	    "\r\n\033[44m\033[K\033[m"
	    "\r\n\033[7m   \033[m");
	c = vt_screen_cell(vs, 0, 0);
	ck_assert(c->pen.bold && c->pen.italic && c->pen.blink &&
	    c->pen.reverse && c->pen.strike);
	ck_assert_int_eq(c->pen.underline, VTERM_UNDERLINE_SINGLE);
	c = vt_screen_cell(vs, 0, 1);
	ck_assert(
	    VTERM_COLOR_IS_INDEXED(&c->pen.fg) && c->pen.fg.indexed.idx == 1);
	ck_assert(
	    VTERM_COLOR_IS_INDEXED(&c->pen.bg) && c->pen.bg.indexed.idx == 2);
	c = vt_screen_cell(vs, 0, 4);
	ck_assert(VTERM_COLOR_IS_RGB(&c->pen.fg) && c->pen.fg.rgb.blue == 3);
	ck_assert_int_eq(
	    vt_screen_cell(vs, 0, 6)->pen.underline, VTERM_UNDERLINE_CURLY);
	ck_assert(VTERM_COLOR_IS_INDEXED(&vt_screen_cell(vs, 1, 39)->pen.bg));

	buf = vt_screen_redraw(vs, &len);
	ck_assert(contains(buf, len, "38;5;200;48;5;17m"));
	ck_assert(contains(buf, len, "38;2;1;2;3;48;2;250;251;252m"));
	ck_assert(contains(buf, len, "91;104m"));
	/* A blank line of colour is erased, not written out. */
	ck_assert(contains(buf, len, "\033[2;1H\033[0;44m\033[K"));
	/* Reverse blanks would lose their colour to an erase: written. */
	ck_assert(contains(buf, len, "7m   \033[m\033[3;4H"));
	free(buf);
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

/* Only what changes between cells is sent. */
START_TEST(test_compact)
{
	struct vt_screen *vs = vt_screen_create(80, 24);
	char *buf;
	size_t len;

	feed(vs, "\033[1mbold\033[31mred\033[22mplain red\033[m\033[24;70Hend");
	buf = vt_screen_redraw(vs, &len);
	ck_assert(
	    contains(buf, len, "\033[1mbold\033[31mred\033[22mplain red"));
	ck_assert(contains(buf, len, "\033[24;70H\033[mend"));
	ck_assert_uint_lt(len, 90);
	free(buf);
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

START_TEST(test_cursor_moves)
{
	struct vt_screen *vs = vt_screen_create(20, 10);

	feed(vs,
	    "\033[5;8Hx\033[2A\033[3Dy\033[10;20Hz\033[1;1H\033[3Bq"
	    "\033[8;3H");
	check_row(vs, 2, "     y");
	check_row(vs, 3, "q");
	check_row(vs, 4, "       x");
	check_cursor(vs, 7, 2);
	check_roundtrip(vs);
	/* Pending wrap at the end of the last line, then a hidden cursor. */
	feed(vs, "\033[10;1H01234567890123456789\033[?25l");
	ck_assert(!vt_screen_cursor_visible(vs));
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

/* What vim does: alternate screen, clear, draw, put the cursor. */
START_TEST(test_altscreen)
{
	struct vt_screen *vs = vt_screen_create(30, 6), *copy;
	char *buf;
	size_t len;

	feed(vs, "$ ls\r\nfile\r\n$ vim file");
	feed(vs,
	    "\033[?1049h\033[22;0;0t\033[?1h\033=\033[H\033[2J"
	    "\033[?2004h\033[1;6r\033[?12h\033[?12l"
	    "\033[H\033[2Jhello\r\n\033[94m~\033[m\r\n\033[94m~\033[m"
	    "\033[6;1H\"file\" 1L, 6B\033[1;4H\033[?25h");
	ck_assert(vt_screen_altscreen(vs));
	check_row(vs, 0, "hello");
	check_row(vs, 5, "\"file\" 1L, 6B");
	check_cursor(vs, 0, 3);

	buf = vt_screen_redraw(vs, &len);
	ck_assert(contains(buf, len, "\033[?1049h"));
	ck_assert(contains(buf, len, "\033[?1h"));
	ck_assert(contains(buf, len, "\033="));
	ck_assert(contains(buf, len, "\033[?2004h"));
	/* The shell's screen is drawn before, under the alternate one. */
	ck_assert((char *)memmem(buf, len, "$ ls", 4) <
	    (char *)memmem(buf, len, "\033[?1049h", 8));
	free(buf);

	copy = roundtrip(vs);
	/* Leaving vim shows the shell again, on both. */
	feed(vs, "\033[?1049l\033[?1l\033>\033[?2004l\r\n$ ");
	feed(copy, "\033[?1049l\033[?1l\033>\033[?2004l\r\n$ ");
	ck_assert(!vt_screen_altscreen(copy));
	check_row(copy, 0, "$ ls");
	check_row(copy, 2, "$ vim file");
	check_row(copy, 3, "$");
	check_cursor(copy, 3, 2);
	check_roundtrip(vs);
	vt_screen_free(vs);
	vt_screen_free(copy);
}
END_TEST

/* Output arrives in pieces cut anywhere, inside characters too. */
START_TEST(test_utf8_split)
{
	static const char text[] = "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80!";
	struct vt_screen *vs = vt_screen_create(20, 2);
	size_t i;

	for (i = 0; i < sizeof text - 1; i++)
		vt_screen_feed(vs, text + i, 1);
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 3)->chars[0], 0xe9);
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 5)->chars[0], 0x4e2d);
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 5)->width, 2);
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 8)->chars[0], 0x1f600);
	check_cursor(vs, 0, 11);
	/* A combining mark in a piece of its own joins its letter. */
	feed(vs, "\r\ne");
	feed(vs, "\xcc\x81x");
	ck_assert_uint_eq(vt_screen_cell(vs, 1, 0)->chars[0], 'e');
	ck_assert_uint_eq(vt_screen_cell(vs, 1, 0)->chars[1], 0x301);
	ck_assert_uint_eq(vt_screen_cell(vs, 1, 1)->chars[0], 'x');
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

START_TEST(test_wide)
{
	struct vt_screen *vs = vt_screen_create(7, 3);

	/* Three wide characters fill six columns; the fourth wraps. */
	feed(vs, "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97\xe4\xb8\x80");
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 4)->chars[0], 0x5b57);
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 5)->width, 0);
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 6)->chars[0], 0);
	ck_assert_uint_eq(vt_screen_cell(vs, 1, 0)->chars[0], 0x4e00);
	check_roundtrip(vs);
	/* Writing over half of a wide character blanks its other half. */
	feed(vs, "\033[1;2Hx\033[1;5Hy");
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 0)->chars[0], 0);
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 0)->width, 1);
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 1)->chars[0], 'x');
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 5)->chars[0], 0);
	ck_assert_uint_eq(vt_screen_cell(vs, 0, 5)->width, 1);
	check_roundtrip(vs);
	/* Deleting the right half of a wide character leaves its left half
	 * alone, a blank. */
	feed(vs, "\033[2;1H\xe4\xb8\xad\xe6\x96\x87\033[2;2H\033[P");
	ck_assert_uint_eq(vt_screen_cell(vs, 1, 0)->chars[0], 0);
	ck_assert_uint_eq(vt_screen_cell(vs, 1, 0)->width, 1);
	ck_assert_uint_eq(vt_screen_cell(vs, 1, 1)->chars[0], 0x6587);
	ck_assert_uint_eq(vt_screen_cell(vs, 1, 1)->width, 2);
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

START_TEST(test_modes)
{
	struct vt_screen *vs = vt_screen_create(40, 10);
	char *buf;
	size_t len;

	feed(vs,
	    "\033[?1h\033=\033[?2004h\033[?1002h\033[?1006h\033[?1004h"
	    "\033[?7l\033[4h\033[20h\033[?5h\033[5 q\033[3;8r\033[?6h"
	    "\033]2;my \xc2\x9ctitle\033\\\033[2;3H\033[1;32m");
	ck_assert_str_eq(vt_screen_title(vs), "my title");
	check_cursor(vs, 3, 2); /* origin mode: relative to the region */
	buf = vt_screen_redraw(vs, &len);
	ck_assert(contains(buf, len, "\033[?1002h"));
	ck_assert(contains(buf, len, "\033[?1006h"));
	ck_assert(contains(buf, len, "\033[?1004h"));
	ck_assert(contains(buf, len, "\033[?7l"));
	ck_assert(contains(buf, len, "\033[4h"));
	ck_assert(contains(buf, len, "\033[20h"));
	ck_assert(contains(buf, len, "\033[?5h"));
	ck_assert(contains(buf, len, "\033[5 q"));
	ck_assert(contains(buf, len, "\033[3;8r"));
	ck_assert(contains(buf, len, "\033]2;my title\007"));
	ck_assert(contains(buf, len, "\033[?6h\033[2;3H"));
	free(buf);
	check_roundtrip(vs);

	/* RIS puts them back, apart from the mouse (as libvterm does). */
	feed(vs, "\033c");
	buf = vt_screen_redraw(vs, &len);
	ck_assert(!contains(buf, len, "\033[?1h"));
	ck_assert(!contains(buf, len, "\033[?2004h"));
	ck_assert(!contains(buf, len, "r"));
	free(buf);
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

/* The comparison the other cases rely on does see differences. */
START_TEST(test_compare_sees)
{
	static const char *const other[] = {
	    "ab",
	    "aB",
	    "a\033[1mb",
	    "ab\033[?1h",
	    "ab\033[?2004h",
	    "ab\033[?1000h",
	    "ab\033[H",
	    "ab\033[?25l",
	    "ab\033]2;t\007",
	    "ab\033[31m",
	    "ab\033[2r",
	    "\033[?1049hab",
	    "a\033#6b",
	};
	struct vt_screen *a = vt_screen_create(10, 3), *b;
	char *cause;
	size_t i;

	feed(a, "ab");
	for (i = 0; i < sizeof other / sizeof other[0]; i++) {
		b = vt_screen_create(10, 3);
		feed(b, other[i]);
		ck_assert_int_eq(
		    vt_screen_compare(a, b, &cause), i == 0 ? 0 : -1);
		if (i > 0)
			ck_assert_ptr_nonnull(cause);
		free(cause);
		vt_screen_free(b);
	}
	vt_screen_free(a);
}
END_TEST

START_TEST(test_resize)
{
	struct vt_screen *vs = vt_screen_create(20, 10), *copy;
	char *buf;
	size_t len;
	int cols, rows;

	feed(vs, "1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n$ prompt");
	vt_screen_resize(vs, 10, 4);
	vt_screen_size(vs, &cols, &rows);
	ck_assert_int_eq(cols, 10);
	ck_assert_int_eq(rows, 4);
	/* The lines above the cursor go, not the prompt. */
	check_row(vs, 3, "$ prompt");
	check_row(vs, 0, "4");
	check_cursor(vs, 3, 8);

	/* A snapshot after the resize is of the new size. */
	buf = vt_screen_redraw(vs, &len);
	ck_assert(!contains(buf, len, "\033[5;"));
	free(buf);
	copy = roundtrip(vs);
	vt_screen_free(copy);

	vt_screen_resize(vs, 30, 12);
	feed(vs, "\033[12;25Hcorner\033[?1049h\033[1;1Halt");
	check_roundtrip(vs);
	vt_screen_resize(vs, 5, 2);
	check_roundtrip(vs);
	vt_screen_resize(vs, 0, 100000); /* clamped */
	vt_screen_size(vs, &cols, &rows);
	ck_assert_int_eq(cols, 1);
	ck_assert_int_eq(rows, VT_SCREEN_MAX);
	vt_screen_free(vs);
}
END_TEST

/* Megabytes of output, in PTY-sized pieces, of every kind. */
START_TEST(test_huge)
{
	static const char *const parts[] = {
	    "plain text that wraps around the screen ",
	    "\033[1;31mred\033[m ",
	    "\xe4\xb8\xad\xe6\x96\x87 ",
	    "\033[38;2;10;20;30mrgb\033[m ",
	    "\r\n",
	    "\033[5;5H",
	    "\033[K",
	    "\033[2J",
	    "\033[?1049h",
	    "\033[?1049l",
	    "\033[3;10r",
	    "\033[r",
	    "\033[L",
	    "\033[M",
	    "\033[3P",
	    "\033[2@",
	    "\033M",
	    "\033D",
	    "\033]2;title\007",
	    "e\xcc\x81",
	    "\033[4h",
	    "\033[4l",
	    "\t",
	};
	struct vt_screen *vs = vt_screen_create(80, 24);
	char *buf = malloc(4096);
	size_t total = 0, n;
	unsigned seed = 1;

	while (total < 8u << 20) {
		n = 0;
		while (n < 4000) {
			const char *p =
			    parts[(seed = seed * 1103515245 + 12345) %
			        (sizeof parts / sizeof parts[0])];
			memcpy(buf + n, p, strlen(p));
			n += strlen(p);
		}
		vt_screen_feed(vs, buf, n);
		total += n;
	}
	free(buf);
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

/*
 * Sequences libvterm 0.1.4 mishandles: more CSI parameters than it has
 * room for (it writes past its array), REP after a zero-width glyph (it
 * never ends), a tab count of a billion. The model must come out working.
 */
START_TEST(test_guard)
{
	struct vt_screen *vs = vt_screen_create(20, 4);
	char seq[1024];
	int i, n;

	n = snprintf(seq, sizeof seq, "\033[");
	for (i = 0; i < 200; i++)
		n += snprintf(seq + n, sizeof seq - (size_t)n, "%d;", i + 1);
	snprintf(seq + n, sizeof seq - (size_t)n, "31mX");
	feed(vs, seq);
	feed(vs, "\033[1;1H\xcc\x81\033[5b");
	feed(vs, "\033[2;1H\xc2\x85\033[3b\033[4;1H\033[999999999999I|");
	feed(vs, "\033[3;1Ha\033[3bok");
	check_row(vs, 2, "aaaaok");
	check_cursor(vs, 2, 6);
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

/*
 * Where libvterm 0.1.4 would leave its cursor or margins off the screen
 * (and then index its arrays with them), the model keeps them on it: what
 * is written next is seen.
 */
START_TEST(test_kept_on_screen)
{
	struct vt_screen *vs = vt_screen_create(20, 24);

	/* A cursor saved low, restored after the screen shrank. */
	feed(vs, "\033[21;5H\0337");
	vt_screen_resize(vs, 20, 10);
	feed(vs, "\0338X\033#6");
	check_row(vs, 9, "    X");
	check_roundtrip(vs);

	/* A scroll region starting below the new last row. */
	vt_screen_resize(vs, 20, 24);
	feed(vs, "\033[15;20r\033[1;1H");
	vt_screen_resize(vs, 20, 8);
	feed(vs, "\033[8;1Hbottom\n\n\nlast");
	check_row(vs, 7, "      last");
	check_roundtrip(vs);

	/* The cursor at the top, text at the bottom, fewer rows. */
	feed(vs, "\033[2J\033[8;1Hfoot\033[1;1H");
	vt_screen_resize(vs, 20, 4);
	feed(vs, "top");
	check_row(vs, 0, "top");
	check_cursor(vs, 0, 3);

	/* Text of width -1 (U+0085) at the left edge, then a tab stop. */
	feed(vs, "\r\xc2\x85\xc2\x85\033HY");
	check_cursor(vs, 0, 1);
	check_roundtrip(vs);
	vt_screen_free(vs);
}
END_TEST

static Suite *
vt_screen_suite(void)
{
	Suite *s = suite_create("vt_screen");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_text_wraps);
	tcase_add_test(tc, test_colours_and_attributes);
	tcase_add_test(tc, test_compact);
	tcase_add_test(tc, test_cursor_moves);
	tcase_add_test(tc, test_altscreen);
	tcase_add_test(tc, test_utf8_split);
	tcase_add_test(tc, test_wide);
	tcase_add_test(tc, test_modes);
	tcase_add_test(tc, test_compare_sees);
	tcase_add_test(tc, test_resize);
	tcase_add_test(tc, test_huge);
	tcase_add_test(tc, test_guard);
	tcase_add_test(tc, test_kept_on_screen);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tap_run(vt_screen_suite());
}
