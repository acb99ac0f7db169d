/* vt_screen: the terminal model of one PTY session. libvterm's state layer
 * parses the output and applies the terminal's rules; the grids of cells
 * (both screens), the props and the modes libvterm keeps to itself are ours.
 * The renderer that redraws them on another terminal is vt_screen_redraw.c;
 * the comparison of two models, vt_screen_compare.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vt_screen_impl.h"
#include "xmalloc.h"

/* Cells and pens. */

int
vt_screen_pen_equal(
    const struct vt_screen_pen *a, const struct vt_screen_pen *b)
{
	return a->bold == b->bold && a->underline == b->underline &&
	    a->italic == b->italic && a->blink == b->blink &&
	    a->reverse == b->reverse && a->strike == b->strike &&
	    a->font == b->font && vterm_color_is_equal(&a->fg, &b->fg) &&
	    vterm_color_is_equal(&a->bg, &b->bg);
}

int
vt_screen_is_blank(const struct vt_screen_cell *c)
{
	return c->width == 1 &&
	    (c->chars[0] == 0 || (c->chars[0] == ' ' && c->chars[1] == 0));
}

static void
vt_screen_blank(struct vt_screen_cell *c)
{
	memset(c->chars, 0, sizeof c->chars);
	c->width = 1;
}

struct vt_screen_cell *
vt_screen_line(const struct vt_screen *s, int grid, int row)
{
	return s->grid[grid].lines[row];
}

/*
 * Keeps a line drawable: a right half whose left half is gone, or a left
 * half without its right half, becomes a blank, as on a real terminal.
 */
static void
vt_screen_fix_line(const struct vt_screen *s, struct vt_screen_cell *line)
{
	int col;

	for (col = 0; col < s->cols; col++) {
		if (line[col].width == 0 &&
		    (col == 0 || line[col - 1].width != 2))
			vt_screen_blank(&line[col]);
		else if (line[col].width == 2 &&
		    (col + 1 >= s->cols || line[col + 1].width != 0))
			vt_screen_blank(&line[col]);
	}
}

static void
vt_screen_grid_new(
    const struct vt_screen *s, struct vt_screen_grid *g, int cols, int rows)
{
	size_t i, n = (size_t)cols * (size_t)rows;
	int row;

	g->cells = xcalloc(n, sizeof *g->cells);
	for (i = 0; i < n; i++) {
		g->cells[i].width = 1;
		g->cells[i].pen = s->defpen;
	}
	g->lines = xcalloc((size_t)rows, sizeof *g->lines);
	for (row = 0; row < rows; row++)
		g->lines[row] = g->cells + (size_t)row * (size_t)cols;
}

static void
vt_screen_grid_free(struct vt_screen_grid *g)
{
	free(g->cells);
	free(g->lines);
	g->cells = NULL;
	g->lines = NULL;
}

static void
vt_screen_lines_reverse(struct vt_screen_cell **lines, size_t n)
{
	struct vt_screen_cell *t;
	size_t i;

	for (i = 0; i < n / 2; i++) {
		t = lines[i];
		lines[i] = lines[n - 1 - i];
		lines[n - 1 - i] = t;
	}
}

/* Turns lines [first, end) by n, in place: line first + n comes first. */
static void
vt_screen_grid_rotate(struct vt_screen_grid *g, int first, int end, int n)
{
	struct vt_screen_cell **lines = g->lines + first;
	int h = end - first, k;

	if (h <= 0)
		return;
	k = (n % h + h) % h;
	vt_screen_lines_reverse(lines, (size_t)k);
	vt_screen_lines_reverse(lines + k, (size_t)(h - k));
	vt_screen_lines_reverse(lines, (size_t)h);
}

/* A codepoint a terminal draws (rather than obeys or rejects). */
static int
vt_screen_drawable(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return 0;
	if (cp >= 0xd800 && cp <= 0xdfff)
		return 0;
	return cp <= 0x10ffff;
}

/* libvterm's state callbacks. */

/*
 * A glyph libvterm gives a width it cannot be redrawn with (a combining
 * mark with nothing to combine with, a C1 control sent as UTF-8: width 0
 * or -1), or one that does not fit, is kept as U+FFFD so that every cell
 * of the grid reads back as itself.
 */
static int
vt_screen_putglyph_cb(VTermGlyphInfo *info, VTermPos pos, void *user)
{
	struct vt_screen *s = user;
	struct vt_screen_cell *line, *c;
	uint32_t chars[VT_SCREEN_CHARS] = {0};
	int i, width = info->width;

	/* DECALN's E's do not change what REP repeats. */
	if (info->width != 1 || info->chars[0] != 'E' || info->chars[1] != 0)
		s->last_width = info->width;
	if (pos.row < 0 || pos.row >= s->rows || pos.col < 0 ||
	    pos.col >= s->cols)
		return 1;
	for (i = 0; i < VT_SCREEN_CHARS && info->chars[i] != 0; i++)
		chars[i] = info->chars[i];
	if (!vt_screen_drawable(chars[0]) || width < 1 || width > 2 ||
	    pos.col + width > s->cols) {
		memset(chars, 0, sizeof chars);
		chars[0] = 0xfffd;
		width = 1;
	}

	line = vt_screen_line(s, s->alt, pos.row);
	c = &line[pos.col];
	if (c->width == 0 && pos.col > 0)
		vt_screen_blank(&line[pos.col - 1]);
	if (pos.col + width < s->cols && line[pos.col + width].width == 0)
		vt_screen_blank(&line[pos.col + width]);
	memcpy(c->chars, chars, sizeof c->chars);
	c->width = (uint8_t)width;
	c->pen = s->pen;
	if (width == 2) {
		memset(c[1].chars, 0, sizeof c[1].chars);
		c[1].width = 0;
		c[1].pen = s->pen;
	}
	return 1;
}

static void
vt_screen_clip(const struct vt_screen *s, VTermRect *r)
{
	if (r->start_row < 0)
		r->start_row = 0;
	if (r->start_col < 0)
		r->start_col = 0;
	if (r->end_row > s->rows)
		r->end_row = s->rows;
	if (r->end_col > s->cols)
		r->end_col = s->cols;
}

static int
vt_screen_erase_cb(VTermRect rect, int selective, void *user)
{
	struct vt_screen *s = user;
	struct vt_screen_cell *line, blank = {.width = 1, .pen = s->pen};
	int row, col;

	(void)selective; /* protected cells are not kept */
	vt_screen_clip(s, &rect);
	for (row = rect.start_row; row < rect.end_row; row++) {
		if (rect.start_col >= rect.end_col)
			break;
		line = vt_screen_line(s, s->alt, row);
		for (col = rect.start_col; col < rect.end_col; col++)
			line[col] = blank;
		if (rect.start_col > 0 && line[rect.start_col - 1].width == 2)
			vt_screen_blank(&line[rect.start_col - 1]);
		if (rect.end_col < s->cols && line[rect.end_col].width == 0)
			vt_screen_blank(&line[rect.end_col]);
	}
	return 1;
}

static int
vt_screen_moverect_cb(VTermRect dest, VTermRect src, void *user)
{
	struct vt_screen *s = user;
	int h = dest.end_row - dest.start_row,
	    w = dest.end_col - dest.start_col;
	int i, row;

	if (h <= 0 || w <= 0 || src.end_row - src.start_row != h ||
	    src.end_col - src.start_col != w)
		return 1;
	if (dest.start_row < 0 || src.start_row < 0 || dest.start_col < 0 ||
	    src.start_col < 0 || dest.end_row > s->rows ||
	    src.end_row > s->rows || dest.end_col > s->cols ||
	    src.end_col > s->cols)
		return 1;
	/*
	 * Whole lines (a scroll) move as pointers; the lines left behind are
	 * erased next by libvterm. Whole lines split no wide character.
	 */
	if (w == s->cols) {
		vt_screen_grid_rotate(&s->grid[s->alt],
		    dest.start_row < src.start_row ? dest.start_row
		                                   : src.start_row,
		    dest.end_row > src.end_row ? dest.end_row : src.end_row,
		    src.start_row - dest.start_row);
		return 1;
	}
	for (i = 0; i < h; i++) {
		/* Rows move towards their destination's side first. */
		row = dest.start_row <= src.start_row ? i : h - 1 - i;
		memmove(vt_screen_line(s, s->alt, dest.start_row + row) +
		        dest.start_col,
		    vt_screen_line(s, s->alt, src.start_row + row) +
		        src.start_col,
		    (size_t)w * sizeof(struct vt_screen_cell));
	}
	for (row = dest.start_row; row < dest.end_row; row++)
		vt_screen_fix_line(s, vt_screen_line(s, s->alt, row));
	return 1;
}

static int
vt_screen_initpen_cb(void *user)
{
	(void)user; /* the attributes follow one by one */
	return 1;
}

static int
vt_screen_setpenattr_cb(VTermAttr attr, VTermValue *val, void *user)
{
	struct vt_screen *s = user;

	switch (attr) {
	case VTERM_ATTR_BOLD: s->pen.bold = val->boolean != 0; break;
	case VTERM_ATTR_UNDERLINE: s->pen.underline = val->number & 3; break;
	case VTERM_ATTR_ITALIC: s->pen.italic = val->boolean != 0; break;
	case VTERM_ATTR_BLINK: s->pen.blink = val->boolean != 0; break;
	case VTERM_ATTR_REVERSE: s->pen.reverse = val->boolean != 0; break;
	case VTERM_ATTR_STRIKE: s->pen.strike = val->boolean != 0; break;
	case VTERM_ATTR_FONT: s->pen.font = val->number & 15; break;
	case VTERM_ATTR_FOREGROUND: s->pen.fg = val->color; break;
	case VTERM_ATTR_BACKGROUND: s->pen.bg = val->color; break;
	default: return 0;
	}
	return 1;
}

/*
 * Keeps the drawable characters of a title, whole UTF-8 sequences only,
 * so that it can be sent back inside an OSC without ending it early.
 */
static void
vt_screen_set_title(struct vt_screen *s, const char *title)
{
	const unsigned char *p = (const unsigned char *)title;
	size_t n = 0, k, i;
	uint32_t cp;

	while (*p != '\0') {
		if (*p < 0x80) {
			k = 1;
			cp = *p;
		} else if (*p >= 0xc2 && *p <= 0xdf) {
			k = 2;
			cp = *p & 0x1f;
		} else if (*p >= 0xe0 && *p <= 0xef) {
			k = 3;
			cp = *p & 0x0f;
		} else if (*p >= 0xf0 && *p <= 0xf4) {
			k = 4;
			cp = *p & 0x07;
		} else {
			p++;
			continue;
		}
		for (i = 1; i < k; i++) {
			if ((p[i] & 0xc0) != 0x80)
				break;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if (i < k) {
			p += i;
			continue;
		}
		if (vt_screen_drawable(cp) &&
		    (k == 1 ||
		        cp >= (k == 2          ? 0x80u
		                      : k == 3 ? 0x800u
		                               : 0x10000u))) {
			if (n + k > VT_SCREEN_TITLE_MAX)
				break;
			memcpy(s->title + n, p, k);
			n += k;
		}
		p += k;
	}
	s->title[n] = '\0';
}

static void
vt_screen_set_alt(struct vt_screen *s, int on)
{
	if (on) {
		if (s->grid[1].cells == NULL)
			vt_screen_grid_new(s, &s->grid[1], s->cols, s->rows);
		/* libvterm saves the cursor and pen right after this (?1049h).
		 */
		vterm_state_get_cursorpos(s->state, &s->saved_pos);
		s->saved_pen = s->pen;
	}
	s->alt = on;
}

static int
vt_screen_settermprop_cb(VTermProp prop, VTermValue *val, void *user)
{
	struct vt_screen *s = user;

	switch (prop) {
	case VTERM_PROP_CURSORVISIBLE: s->cursor_visible = val->boolean; break;
	case VTERM_PROP_CURSORBLINK: s->cursor_blink = val->boolean; break;
	case VTERM_PROP_CURSORSHAPE:
		/* DECRC with nothing saved restores shape 0: a block. */
		s->cursor_shape = val->number < VTERM_PROP_CURSORSHAPE_BLOCK ||
		        val->number >= VTERM_N_PROP_CURSORSHAPES
		    ? VTERM_PROP_CURSORSHAPE_BLOCK
		    : val->number;
		break;
	case VTERM_PROP_REVERSE: s->reverse = val->boolean; break;
	case VTERM_PROP_MOUSE: s->mouse = val->number; break;
	case VTERM_PROP_TITLE: vt_screen_set_title(s, val->string); break;
	case VTERM_PROP_ALTSCREEN:
		vt_screen_set_alt(s, val->boolean != 0);
		break;
	default: break;
	}
	return 1;
}

static void
vt_screen_grid_resize(
    const struct vt_screen *s, struct vt_screen_grid *g, int cols, int rows)
{
	struct vt_screen_grid old = *g;
	int row, w = cols < s->cols ? cols : s->cols;

	if (old.cells == NULL)
		return;
	vt_screen_grid_new(s, g, cols, rows);
	for (row = 0; row < rows && row < s->rows; row++)
		memcpy(g->lines[row], old.lines[row],
		    (size_t)w * sizeof *old.cells);
	vt_screen_grid_free(&old);
}

static int
vt_screen_line_empty(const struct vt_screen *s, int row)
{
	const struct vt_screen_cell *line = vt_screen_line(s, 0, row);
	int col;

	for (col = 0; col < s->cols; col++) {
		if (line[col].chars[0] != 0)
			return 0;
	}
	return 1;
}

/*
 * Fewer rows on the primary screen drop lines from the top rather than the
 * bottom when the cursor or text would be cut off, as libvterm's own screen
 * layer does: the prompt stays in sight.
 */
static int
vt_screen_resize_cb(int rows, int cols, VTermPos *delta, void *user)
{
	struct vt_screen *s = user;
	VTermPos cursor;
	int row, first_blank, up;

	vterm_state_get_cursorpos(s->state, &cursor);
	if (!s->alt && rows < s->rows) {
		for (row = s->rows - 1; row >= rows; row--) {
			if (!vt_screen_line_empty(s, row) || cursor.row == row)
				break;
		}
		first_blank = row + 1;
		/* Never more than the cursor's row: it stays on the screen. */
		up = first_blank - rows;
		if (up > cursor.row)
			up = cursor.row;
		if (up > 0) {
			vt_screen_grid_rotate(&s->grid[0], 0, s->rows, up);
			delta->row -= up;
		}
	}
	vt_screen_grid_resize(s, &s->grid[0], cols, rows);
	vt_screen_grid_resize(s, &s->grid[1], cols, rows);
	s->cols = cols;
	s->rows = rows;
	for (row = 0; row < rows; row++) {
		vt_screen_fix_line(s, vt_screen_line(s, 0, row));
		if (s->grid[1].cells != NULL)
			vt_screen_fix_line(s, vt_screen_line(s, 1, row));
	}
	if (s->saved_pos.row >= rows)
		s->saved_pos.row = rows - 1;
	if (s->saved_pos.col >= cols)
		s->saved_pos.col = cols - 1;
	return 1;
}

static int
vt_screen_setlineinfo_cb(int row, const VTermLineInfo *newinfo,
    const VTermLineInfo *oldinfo, void *user)
{
	(void)row; /* read back from the state when drawing */
	(void)newinfo;
	(void)oldinfo;
	(void)user;
	return 1;
}

static const VTermStateCallbacks vt_screen_state_cbs = {
    .putglyph = vt_screen_putglyph_cb,
    .moverect = vt_screen_moverect_cb,
    .erase = vt_screen_erase_cb,
    .initpen = vt_screen_initpen_cb,
    .setpenattr = vt_screen_setpenattr_cb,
    .settermprop = vt_screen_settermprop_cb,
    .resize = vt_screen_resize_cb,
    .setlineinfo = vt_screen_setlineinfo_cb,
};

/* The tap: modes, from a parser that sees what libvterm's state sees. */

static void
vt_screen_modes_reset(struct vt_screen_modes *m)
{
	int proto = m->mouse_proto; /* libvterm's reset keeps it */

	memset(m, 0, sizeof *m);
	m->autowrap = 1;
	m->bottom = -1;
	m->right = -1;
	m->mouse_proto = proto;
}

static void
vt_screen_dec_mode(struct vt_screen_modes *m, long num, int on)
{
	switch (num) {
	case 1: m->cursor_keys = on; break;
	case 6: m->origin = on; break;
	case 7: m->autowrap = on; break;
	case 69: m->lrmm = on; break;
	case 1004: m->focus = on; break;
	case 1005:
	case 1006:
	case 1015: m->mouse_proto = on ? (int)num : 0; break;
	case 2004: m->paste = on; break;
	default: break;
	}
}

/* DECSTBM and DECSLRM, bounded as libvterm bounds them. */
static void
vt_screen_margins(const long args[], int argc, int size, int *first, int *end)
{
	long a = CSI_ARG_OR(args[0], 1) - 1;
	long b =
	    argc < 2 || CSI_ARG_IS_MISSING(args[1]) ? -1 : CSI_ARG(args[1]);

	if (a < 0)
		a = 0;
	if (a > size)
		a = size;
	if (b < -1)
		b = -1;
	if (a == 0 && b == size)
		b = -1;
	else if (b > size)
		b = size;
	if ((b > -1 ? b : size) <= a) {
		a = 0;
		b = -1;
	}
	*first = (int)a;
	*end = (int)b;
}

static int
vt_screen_tap_text_cb(const char *bytes, size_t len, void *user)
{
	size_t n = 0;

	(void)user;
	while (n < len && (unsigned char)bytes[n] >= 0x20 && bytes[n] != 0x7f)
		n++;
	return n > 0 ? (int)n : 1;
}

static int
vt_screen_tap_csi_cb(const char *leader, const long args[], int argc,
    const char *intermed, char command, void *user)
{
	struct vt_screen *s = user;
	struct vt_screen_modes *m = &s->modes;
	int dec = 0;

	if (leader != NULL && leader[0] != '\0') {
		if (leader[1] != '\0' || leader[0] != '?')
			return 1;
		dec = 1;
	}
	if ((intermed != NULL && intermed[0] != '\0') || argc < 1)
		return 1;
	switch (command) {
	case 'h':
	case 'l':
		if (CSI_ARG_IS_MISSING(args[0]))
			break;
		if (dec)
			vt_screen_dec_mode(m, CSI_ARG(args[0]), command == 'h');
		else if (CSI_ARG(args[0]) == 4)
			m->insert = command == 'h';
		else if (CSI_ARG(args[0]) == 20)
			m->newline = command == 'h';
		break;
	case 'r':
		if (!dec)
			vt_screen_margins(
			    args, argc, s->rows, &m->top, &m->bottom);
		break;
	case 's':
		if (!dec)
			vt_screen_margins(
			    args, argc, s->cols, &m->left, &m->right);
		break;
	default: break;
	}
	return 1;
}

static int
vt_screen_tap_escape_cb(const char *bytes, size_t len, void *user)
{
	struct vt_screen *s = user;

	if (len < 1)
		return 0;
	switch (bytes[0]) {
	case '=': s->modes.keypad = 1; break;
	case '>': s->modes.keypad = 0; break;
	case 'c': vt_screen_modes_reset(&s->modes); break;
	default: break;
	}
	return 1;
}

static const VTermParserCallbacks vt_screen_tap_cbs = {
    .text = vt_screen_tap_text_cb,
    .csi = vt_screen_tap_csi_cb,
    .escape = vt_screen_tap_escape_cb,
};

/* Feeding. */

/*
 * libvterm 0.1.4's parser stores every CSI parameter without checking that
 * it has room (CSI_ARGS_MAX), so a CSI with many ';' writes over the parser's
 * callback pointers; it also loops forever on REP after a zero-width glyph,
 * and for a second or more on a tab count of 10^9. This follows the parser's
 * states byte by byte (as parser.c moves between them) so that the excess
 * separators and digits never reach it, and tells where escape sequences
 * start and end, for vt_screen_feed. Dropped bytes only change sequences no
 * program sends.
 */
static enum vt_screen_verdict
vt_screen_guard(struct vt_screen_guard *g, unsigned char c)
{
	enum vt_screen_verdict v;

	if (c == 0x00 || c == 0x7f)
		return VT_PASS;
	if (c == 0x18 || c == 0x1a) {
		g->state = VT_P_NORMAL;
		return VT_PASS;
	}
	if (c == 0x1b) {
		v = g->state == VT_P_NORMAL ? VT_ESC : VT_PASS;
		g->state =
		    g->state == VT_P_STRING ? VT_P_ESC_IN_STRING : VT_P_ESC;
		g->plain = 0;
		g->nint = 0;
		return v;
	}
	if (c < 0x20 && !(c == 0x07 && g->state == VT_P_STRING))
		return VT_PASS;

	switch (g->state) {
	case VT_P_ESC_IN_STRING:
		if (c == 0x5c) {
			g->state = VT_P_NORMAL;
			return VT_PASS;
		}
		g->state = VT_P_ESC;
		/* FALLTHROUGH */
	case VT_P_ESC:
		if (c == 0x50 || c == 0x5d)
			g->state = VT_P_STRING;
		else if (c == 0x5b) {
			g->state = VT_P_CSI_LEADER;
			g->plain = 1;
		} else if (c >= 0x30 && c < 0x7f) {
			g->state = VT_P_NORMAL;
			return VT_FINAL;
		} else if (c >= 0x20 && c <= 0x2f) {
			g->hash = g->nint == 0 ? c == '#' : g->hash;
			g->nint++;
		}
		return VT_PASS;
	case VT_P_CSI_LEADER:
		if (c >= 0x3c && c <= 0x3f) {
			g->plain = 0;
			return VT_PASS;
		}
		g->state = VT_P_CSI_ARGS;
		g->argi = 0;
		g->value = -1;
		/* FALLTHROUGH */
	case VT_P_CSI_ARGS:
		if (c >= '0' && c <= '9') {
			if (g->value < 0)
				g->value = 0;
			if (g->value * 10 + (c - '0') > VT_SCREEN_ARG_MAX)
				return VT_DROP;
			g->value = g->value * 10 + (c - '0');
			return VT_PASS;
		}
		if (c == ':' || c == ';') {
			if (g->argi >= VT_SCREEN_CSI_ARGS - 1)
				return VT_DROP;
			g->argi++;
			g->value = -1;
			return VT_PASS;
		}
		g->state = VT_P_CSI_INTERMED;
		/* FALLTHROUGH */
	case VT_P_CSI_INTERMED:
		if (c >= 0x20 && c <= 0x2f) {
			g->plain = 0;
			return VT_PASS;
		}
		g->state = VT_P_NORMAL;
		return c >= 0x40 && c <= 0x7e ? VT_FINAL : VT_PASS;
	case VT_P_STRING:
		if (c == 0x07)
			g->state = VT_P_NORMAL;
		return VT_PASS;
	case VT_P_NORMAL: return VT_PASS;
	}
	return VT_PASS;
}

/*
 * libvterm 0.1.4's UTF-8 decoder can make one codepoint more than the bytes
 * it is given when a character was left unfinished before (an invalid one
 * and the byte after it), into an array sized by the bytes left in the
 * write: text that ends a write overflows it by one. A NUL after every
 * piece, which the parser skips in any state, leaves that room.
 */
static void
vt_screen_push(struct vt_screen *s, const char *p, size_t len)
{
	size_t n;

	while (len > 0) {
		n = len < VT_SCREEN_PIECE ? len : VT_SCREEN_PIECE;
		memcpy(s->piece, p, n);
		s->piece[n] = '\0';
		vterm_input_write(s->vt, s->piece, n + 1);
		vterm_input_write(s->tap, s->piece, n + 1);
		p += n;
		len -= n;
	}
}

/* Moves the cursor to pos, or the nearest cell to it, with a CUP. */
static void
vt_screen_put_cursor(struct vt_screen *s, VTermPos pos)
{
	const struct vt_screen_modes *m = &s->modes;
	char seq[32];
	int row, col, n;

	row = pos.row < 0 ? 0 : pos.row >= s->rows ? s->rows - 1 : pos.row;
	col = pos.col < 0 ? 0 : pos.col >= s->cols ? s->cols - 1 : pos.col;
	if (m->origin) {
		row -= m->top;
		col -= m->lrmm ? m->left : 0;
	}
	n = snprintf(seq, sizeof seq, "\033[%d;%dH", (row < 0 ? 0 : row) + 1,
	    (col < 0 ? 0 : col) + 1);
	vt_screen_push(s, seq, (size_t)n);
}

/*
 * libvterm 0.1.4 indexes its line and tab stop arrays with the cursor's
 * position unchecked, and leaves the cursor outside the screen after text
 * of width -1 (C1 controls sent as UTF-8) or after restoring a cursor saved
 * before the screen shrank: an ESC # 6 or HTS there writes out of bounds.
 * Between sequences, a cursor outside is put back on the nearest cell; in
 * origin mode, on the nearest cell of the margins (restoring a cursor does
 * not keep it there, and no redraw could put it back outside).
 */
static void
vt_screen_keep_cursor(struct vt_screen *s)
{
	const struct vt_screen_modes *m = &s->modes;
	int top = 0, bottom = s->rows, left = 0, right = s->cols;
	VTermPos pos;

	if (m->origin) {
		top = m->top;
		bottom = m->bottom > -1 ? m->bottom : s->rows;
		left = m->lrmm ? m->left : 0;
		right = m->lrmm && m->right > -1 ? m->right : s->cols;
	}
	vterm_state_get_cursorpos(s->state, &pos);
	if (pos.row < top || pos.row >= bottom || pos.col < left ||
	    pos.col >= right)
		vt_screen_put_cursor(s, pos);
}

/*
 * Whether the sequence this final byte ends may run. REP repeats the last
 * glyph: it ends only if that glyph has a width. A line of double width is
 * cols / 2 wide, and libvterm puts its cursor at that less one: on a screen
 * of one column, at -1.
 */
static int
vt_screen_final_ok(const struct vt_screen *s, char c)
{
	const struct vt_screen_guard *g = &s->guard;

	if (g->plain && c == 'b')
		return s->last_width >= 1;
	if (g->nint == 1 && g->hash && (c == '3' || c == '4' || c == '6'))
		return s->cols >= 2;
	return 1;
}

void
vt_screen_feed(struct vt_screen *s, const void *buf, size_t len)
{
	const char *p = buf;
	size_t start = 0, i;

	for (i = 0; i < len; i++) {
		switch (vt_screen_guard(&s->guard, (unsigned char)p[i])) {
		case VT_PASS: break;
		case VT_DROP:
			vt_screen_push(s, p + start, i - start);
			start = i + 1;
			break;
		case VT_ESC:
			vt_screen_push(s, p + start, i - start);
			start = i;
			vt_screen_keep_cursor(s);
			break;
		case VT_FINAL:
			vt_screen_push(s, p + start, i - start);
			if (vt_screen_final_ok(s, p[i]))
				vt_screen_push(s, p + i, 1);
			else
				vt_screen_push(s, "\x18", 1); /* cancels it */
			start = i + 1;
			vt_screen_keep_cursor(s);
			break;
		}
	}
	vt_screen_push(s, p + start, len - start);
}

/* Life and size. */

static void *
vt_screen_malloc_cb(size_t size, void *data)
{
	(void)data;
	return xcalloc(1, size); /* libvterm expects zeroed memory */
}

static void
vt_screen_free_cb(void *p, void *data)
{
	(void)data;
	free(p);
}

static VTermAllocatorFunctions vt_screen_allocator = {
    .malloc = vt_screen_malloc_cb,
    .free = vt_screen_free_cb,
};

static void
vt_screen_discard_cb(const char *s, size_t len, void *user)
{
	(void)s; /* answers to queries are the viewer's terminal's to give */
	(void)len;
	(void)user;
}

static int
vt_screen_clamp(int n)
{
	return n < 1 ? 1 : n > VT_SCREEN_MAX ? VT_SCREEN_MAX : n;
}

struct vt_screen *
vt_screen_create(int cols, int rows)
{
	struct vt_screen *s = xcalloc(1, sizeof *s);
	VTermColor fg, bg;

	s->cols = cols = vt_screen_clamp(cols);
	s->rows = rows = vt_screen_clamp(rows);
	s->vt =
	    vterm_new_with_allocator(rows, cols, &vt_screen_allocator, NULL);
	s->tap =
	    vterm_new_with_allocator(rows, cols, &vt_screen_allocator, NULL);
	vterm_set_utf8(s->vt, 1);
	vterm_set_utf8(s->tap, 1);
	vterm_output_set_callback(s->vt, vt_screen_discard_cb, NULL);
	vterm_output_set_callback(s->tap, vt_screen_discard_cb, NULL);
	vterm_parser_set_callbacks(s->tap, &vt_screen_tap_cbs, s);

	s->state = vterm_obtain_state(s->vt);
	vterm_state_get_default_colors(s->state, &fg, &bg);
	s->defpen.fg = fg;
	s->defpen.bg = bg;
	s->pen = s->defpen;
	s->saved_pen = s->defpen;
	s->last_width = 0; /* REP before any glyph repeats nothing, forever */
	vt_screen_grid_new(s, &s->grid[0], cols, rows);
	vt_screen_modes_reset(&s->modes);
	vterm_state_set_callbacks(s->state, &vt_screen_state_cbs, s);
	vterm_state_reset(s->state, 1);
	return s;
}

void
vt_screen_free(struct vt_screen *s)
{
	if (s == NULL)
		return;
	vterm_free(s->vt);
	vterm_free(s->tap);
	vt_screen_grid_free(&s->grid[0]);
	vt_screen_grid_free(&s->grid[1]);
	free(s);
}

/*
 * libvterm bounds the ends of its margins when the screen shrinks but not
 * their starts: a scroll region that starts past the new last row is kept,
 * and its next scroll moves a negative length of memory. Such margins are
 * reset, as xterm resets margins on a resize, and so are double-width
 * lines on a screen of one column; the cursor is put back. The reset must
 * reach the parser whole: a sequence the resize cut in two is cancelled
 * (CAN) first.
 */
static void
vt_screen_keep_margins(struct vt_screen *s)
{
	const struct vt_screen_modes *m = &s->modes;
	int rows_bad, cols_bad, wide, row;
	VTermPos pos;

	rows_bad = (m->bottom > -1 ? m->bottom : s->rows) <= m->top;
	cols_bad = (m->right > -1 ? m->right : s->cols) <= m->left;
	wide = 0;
	for (row = 0; s->cols < 2 && row < s->rows; row++)
		wide |= vterm_state_get_lineinfo(s->state, row)->doublewidth;
	if (!rows_bad && !cols_bad && !wide)
		return;
	if (s->guard.state != VT_P_NORMAL)
		vt_screen_feed(s, "\x18", 1);
	vterm_state_get_cursorpos(s->state, &pos);
	if (rows_bad)
		vt_screen_push(s, "\033[r", 3);
	if (cols_bad)
		vt_screen_push(s, "\033[s", 3);
	/* Setting DECLRMM makes every line single width (see
	 * vt_screen_final_ok). */
	if (wide)
		vt_screen_push(s, m->lrmm ? "\033[?69h" : "\033[?69h\033[?69l",
		    m->lrmm ? 6 : 12);
	vt_screen_put_cursor(s, pos);
}

void
vt_screen_resize(struct vt_screen *s, int cols, int rows)
{
	struct vt_screen_modes *m = &s->modes;

	cols = vt_screen_clamp(cols);
	rows = vt_screen_clamp(rows);
	if (cols == s->cols && rows == s->rows)
		return;
	vterm_set_size(s->vt, rows, cols); /* calls vt_screen_resize_cb */
	vterm_set_size(s->tap, rows, cols);
	if (m->bottom > rows)
		m->bottom = rows;
	if (m->right > cols)
		m->right = cols;
	vt_screen_keep_margins(s);
}

void
vt_screen_size(const struct vt_screen *s, int *cols, int *rows)
{
	*cols = s->cols;
	*rows = s->rows;
}

/*
 * Where a redraw can put the cursor: on the screen and, in origin mode,
 * within the margins (text can leave libvterm's cursor past the right
 * margin, where no CUP reaches). Relative to the margins if so.
 */
void
vt_screen_cursor_shown(const struct vt_screen *s, int *row, int *col)
{
	const struct vt_screen_modes *m = &s->modes;
	int bottom, right;

	vt_screen_cursor(s, row, col);
	if (!m->origin)
		return;
	bottom = m->bottom > -1 ? m->bottom : s->rows;
	right = m->lrmm && m->right > -1 ? m->right : s->cols;
	*row = (*row >= bottom ? bottom - 1 : *row) - m->top;
	*col = (*col >= right ? right - 1 : *col) - (m->lrmm ? m->left : 0);
	if (*row < 0)
		*row = 0;
	if (*col < 0)
		*col = 0;
}

const struct vt_screen_cell *
vt_screen_cell(const struct vt_screen *s, int row, int col)
{
	if (row < 0 || row >= s->rows || col < 0 || col >= s->cols)
		return NULL;
	return vt_screen_line(s, s->alt, row) + col;
}

/* libvterm can leave its cursor a column outside (after width -1 text). */
void
vt_screen_cursor(const struct vt_screen *s, int *row, int *col)
{
	VTermPos pos;

	vterm_state_get_cursorpos(s->state, &pos);
	*row = pos.row < 0 ? 0 : pos.row >= s->rows ? s->rows - 1 : pos.row;
	*col = pos.col < 0 ? 0 : pos.col >= s->cols ? s->cols - 1 : pos.col;
}

int
vt_screen_cursor_visible(const struct vt_screen *s)
{
	return s->cursor_visible;
}

int
vt_screen_altscreen(const struct vt_screen *s)
{
	return s->alt;
}

const char *
vt_screen_title(const struct vt_screen *s)
{
	return s->title;
}
