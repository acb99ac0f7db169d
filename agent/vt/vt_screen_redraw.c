/* vt_screen_redraw: the bytes that redraw a model's screen on a fresh
 * terminal (see vt_screen.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vt_screen_impl.h"
#include "xmalloc.h"

/* Blanks skipped with CUF rather than written, from this many on. */
#define VT_SCREEN_CUF_MIN 4

/* Output being built by the renderer, and the pen the terminal has. */
struct vt_screen_out {
	char *buf;
	size_t len;
	size_t size;
	struct vt_screen_pen pen;
	const struct vt_screen *s;
};

/* A blank a cleared terminal has already: nothing to draw. */
static int
vt_screen_is_clear(const struct vt_screen *s, const struct vt_screen_cell *c)
{
	return vt_screen_is_blank(c) &&
	    vt_screen_pen_equal(&c->pen, &s->defpen);
}

static void
vt_screen_add(struct vt_screen_out *o, const void *p, size_t n)
{
	if (o->size - o->len < n) {
		while (o->size - o->len < n)
			o->size = o->size == 0 ? 4096 : o->size * 2;
		o->buf = xrealloc(o->buf, o->size);
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void __attribute__((format(printf, 2, 3)))
vt_screen_addf(struct vt_screen_out *o, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp)
		log_fatal("%s: sequence too long", __func__);
	vt_screen_add(o, tmp, (size_t)n);
}

static void
vt_screen_add_utf8(struct vt_screen_out *o, uint32_t cp)
{
	unsigned char b[4];
	size_t n;

	if (cp > 0x10ffff)
		cp = 0xfffd;
	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6);
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | cp >> 12);
		b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (unsigned char)(0xf0 | cp >> 18);
		b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	vt_screen_add(o, b, n);
}

/* Adds a parameter to an SGR being built in p (size at least 64). */
static void __attribute__((format(printf, 3, 4)))
vt_screen_param(char *p, size_t size, const char *fmt, ...)
{
	size_t n = strlen(p);
	va_list ap;

	if (n > 0 && n + 1 < size)
		p[n++] = ';';
	va_start(ap, fmt);
	vsnprintf(p + n, size - n, fmt, ap);
	va_end(ap);
}

/* Indexes past 16 as 38;5, RGB as 38;2, with semicolons: the form that
 * xterm and libvterm both read. */
static void
vt_screen_param_color(char *p, size_t size, const VTermColor *c, int fg)
{
	if (fg ? VTERM_COLOR_IS_DEFAULT_FG(c) : VTERM_COLOR_IS_DEFAULT_BG(c))
		vt_screen_param(p, size, "%d", fg ? 39 : 49);
	else if (VTERM_COLOR_IS_INDEXED(c) && c->indexed.idx < 8)
		vt_screen_param(p, size, "%d", (fg ? 30 : 40) + c->indexed.idx);
	else if (VTERM_COLOR_IS_INDEXED(c) && c->indexed.idx < 16)
		vt_screen_param(
		    p, size, "%d", (fg ? 90 : 100) + c->indexed.idx - 8);
	else if (VTERM_COLOR_IS_INDEXED(c))
		vt_screen_param(
		    p, size, "%d;5;%d", fg ? 38 : 48, c->indexed.idx);
	else
		vt_screen_param(p, size, "%d;2;%d;%d;%d", fg ? 38 : 48,
		    c->rgb.red, c->rgb.green, c->rgb.blue);
}

/* The SGR parameters that turn pen was into pen. */
static void
vt_screen_sgr(char *p, size_t size, const struct vt_screen_pen *was,
    const struct vt_screen_pen *pen)
{
	static const char *const underline[] = {"24", "4", "21", "4:3"};

	if (was->bold != pen->bold)
		vt_screen_param(p, size, "%s", pen->bold ? "1" : "22");
	if (was->italic != pen->italic)
		vt_screen_param(p, size, "%s", pen->italic ? "3" : "23");
	if (was->underline != pen->underline)
		vt_screen_param(p, size, "%s", underline[pen->underline & 3]);
	if (was->blink != pen->blink)
		vt_screen_param(p, size, "%s", pen->blink ? "5" : "25");
	if (was->reverse != pen->reverse)
		vt_screen_param(p, size, "%s", pen->reverse ? "7" : "27");
	if (was->strike != pen->strike)
		vt_screen_param(p, size, "%s", pen->strike ? "9" : "29");
	if (was->font != pen->font)
		vt_screen_param(p, size, "%d", 10 + pen->font % 10);
	if (!vterm_color_is_equal(&was->fg, &pen->fg))
		vt_screen_param_color(p, size, &pen->fg, 1);
	if (!vterm_color_is_equal(&was->bg, &pen->bg))
		vt_screen_param_color(p, size, &pen->bg, 0);
}

/*
 * Sets the terminal's pen to pen with the shorter of two SGRs: one naming
 * what changes, one resetting and naming what differs from the default.
 */
static void
vt_screen_add_pen(struct vt_screen_out *o, const struct vt_screen_pen *pen)
{
	char change[160] = "", reset[160] = "0";
	const char *p;

	if (vt_screen_pen_equal(&o->pen, pen))
		return;
	vt_screen_sgr(change, sizeof change, &o->pen, pen);
	vt_screen_sgr(reset, sizeof reset, &o->s->defpen, pen);
	if (strcmp(reset, "0") == 0)
		p = "";
	else
		p = strlen(reset) < strlen(change) ? reset : change;
	vt_screen_add(o, "\033[", 2);
	vt_screen_add(o, p, strlen(p));
	vt_screen_add(o, "m", 1);
	o->pen = *pen;
}

static void
vt_screen_add_cell(struct vt_screen_out *o, const struct vt_screen_cell *c)
{
	int i;

	vt_screen_add_pen(o, &c->pen);
	if (c->chars[0] == 0) {
		vt_screen_add(o, " ", 1);
		return;
	}
	for (i = 0; i < VT_SCREEN_CHARS && c->chars[i] != 0; i++)
		vt_screen_add_utf8(o, c->chars[i]);
}

static void
vt_screen_add_spaces(struct vt_screen_out *o, int n)
{
	while (n-- > 0)
		vt_screen_add(o, " ", 1);
}

/*
 * Erasing gives blanks the background of the pen but, on xterm, nothing
 * else: blanks that show more (reverse, underline, strike) are written.
 */
static int
vt_screen_erasable(const struct vt_screen_pen *pen)
{
	return !pen->reverse && !pen->underline && !pen->strike;
}

/* DECDHL or DECDWL for the cursor's line. */
static void
vt_screen_add_line_size(struct vt_screen_out *o, const VTermLineInfo *info)
{
	if (info->doubleheight == 1)
		vt_screen_add(o, "\033#3", 3);
	else if (info->doubleheight == 2)
		vt_screen_add(o, "\033#4", 3);
	else if (info->doublewidth)
		vt_screen_add(o, "\033#6", 3);
}

static void
vt_screen_draw_line(struct vt_screen_out *o, const struct vt_screen_cell *line,
    int row, const VTermLineInfo *info)
{
	const struct vt_screen *s = o->s;
	const struct vt_screen_cell *last = &line[s->cols - 1];
	int start = 0, end = s->cols, col, n, tail;

	/* The run of blanks alike that ends the line is erased, not drawn. */
	if (vt_screen_is_blank(last)) {
		while (end > 0 && vt_screen_is_blank(&line[end - 1]) &&
		    vt_screen_pen_equal(&line[end - 1].pen, &last->pen))
			end--;
	}
	tail = end < s->cols && !vt_screen_is_clear(s, last);
	while (start < end && vt_screen_is_clear(s, &line[start]))
		start++;
	if (start == end && !tail &&
	    (info == NULL || (!info->doublewidth && !info->doubleheight)))
		return;

	vt_screen_addf(o, "\033[%d;%dH", row + 1, start + 1);
	for (col = start; col < end; col += n) {
		n = 1;
		if (vt_screen_is_clear(s, &line[col])) {
			while (col + n < end &&
			    vt_screen_is_clear(s, &line[col + n]))
				n++;
			if (n < VT_SCREEN_CUF_MIN &&
			    vt_screen_pen_equal(&o->pen, &s->defpen))
				vt_screen_add_spaces(o, n);
			else
				vt_screen_addf(o, "\033[%dC", n);
			continue;
		}
		if (line[col].width == 0)
			continue; /* not drawable; vt_screen_fix_line prevents
			             it */
		vt_screen_add_cell(o, &line[col]);
		n = line[col].width;
	}
	if (tail) {
		vt_screen_add_pen(o, &last->pen);
		if (vt_screen_erasable(&last->pen))
			vt_screen_add(o, "\033[K", 3);
		else
			vt_screen_add_spaces(o, s->cols - end);
	}
	/* After the cells: a double-width line would clip them. */
	if (info != NULL)
		vt_screen_add_line_size(o, info);
}

static void
vt_screen_draw(struct vt_screen_out *o, int grid)
{
	const struct vt_screen *s = o->s;
	const VTermLineInfo *info;
	int row, crow, ccol;

	vt_screen_cursor(s, &crow, &ccol);
	for (row = 0; row < s->rows; row++) {
		/*
		 * Line sizes belong to the state, so to the screen shown. The
		 * cursor's line gets its size last: the cursor may sit past
		 * the half a double-width line has, where no CUP can put it.
		 */
		info = NULL;
		if (grid == s->alt && row != crow)
			info = vterm_state_get_lineinfo(s->state, row);
		vt_screen_draw_line(o, vt_screen_line(s, grid, row), row, info);
	}
}

static void
vt_screen_add_modes(struct vt_screen_out *o)
{
	const struct vt_screen *s = o->s;
	const struct vt_screen_modes *m = &s->modes;
	int shape;

	/* A margin at the screen's edge is left out: it stays there. */
	if (m->bottom != -1 && m->bottom != s->rows)
		vt_screen_addf(o, "\033[%d;%dr", m->top + 1, m->bottom);
	else if (m->top != 0)
		vt_screen_addf(o, "\033[%dr", m->top + 1);
	if (m->lrmm) {
		vt_screen_add(o, "\033[?69h", 6);
		if (m->right != -1 && m->right != s->cols)
			vt_screen_addf(o, "\033[%d;%ds", m->left + 1, m->right);
		else if (m->left != 0)
			vt_screen_addf(o, "\033[%ds", m->left + 1);
	}
	if (m->cursor_keys)
		vt_screen_add(o, "\033[?1h", 5);
	if (m->keypad)
		vt_screen_add(o, "\033=", 2);
	if (m->paste)
		vt_screen_add(o, "\033[?2004h", 8);
	if (s->mouse != VTERM_PROP_MOUSE_NONE) {
		vt_screen_addf(o, "\033[?%dh",
		    s->mouse == VTERM_PROP_MOUSE_CLICK      ? 1000
		        : s->mouse == VTERM_PROP_MOUSE_DRAG ? 1002
		                                            : 1003);
	}
	if (m->mouse_proto != 0)
		vt_screen_addf(o, "\033[?%dh", m->mouse_proto);
	if (m->focus)
		vt_screen_add(o, "\033[?1004h", 8);
	if (!m->autowrap)
		vt_screen_add(o, "\033[?7l", 5);
	if (m->insert)
		vt_screen_add(o, "\033[4h", 4);
	if (m->newline)
		vt_screen_add(o, "\033[20h", 5);
	if (s->reverse)
		vt_screen_add(o, "\033[?5h", 5);
	if (s->cursor_shape != VTERM_PROP_CURSORSHAPE_BLOCK ||
	    !s->cursor_blink) {
		shape = s->cursor_shape == VTERM_PROP_CURSORSHAPE_UNDERLINE ? 3
		    : s->cursor_shape == VTERM_PROP_CURSORSHAPE_BAR_LEFT    ? 5
		                                                            : 1;
		vt_screen_addf(o, "\033[%d q", shape + !s->cursor_blink);
	}
	if (s->title[0] != '\0') {
		vt_screen_add(o, "\033]2;", 4);
		vt_screen_add(o, s->title, strlen(s->title));
		vt_screen_add(o, "\007", 1);
	}
}

/*
 * The order matters: the primary screen first, under the alternate one, so
 * that leaving the alternate screen shows it again; cells before the modes
 * that change how text is written (insert, autowrap, origin); the scroll
 * region and origin mode before the cursor, since both move it; and no CSI
 * after the cursor's line size: libvterm ends every CSI by putting its
 * cursor within the half a double-width line has, where a shrinking resize
 * can have left the model's cursor past it.
 */
char *
vt_screen_redraw(const struct vt_screen *s, size_t *len)
{
	struct vt_screen_out o = {.s = s, .pen = s->defpen};
	const struct vt_screen_modes *m = &s->modes;
	int row, col;

	vt_screen_add(&o, "\033[m\033[H\033[2J", 10);
	if (s->alt) {
		vt_screen_draw(&o, 0);
		vt_screen_add_pen(&o, &s->saved_pen);
		vt_screen_addf(&o, "\033[%d;%dH", s->saved_pos.row + 1,
		    s->saved_pos.col + 1);
		vt_screen_add(&o, "\033[?1049h", 8);
		vt_screen_add_pen(&o, &s->defpen);
		vt_screen_add(&o, "\033[H\033[2J", 7);
	}
	vt_screen_draw(&o, s->alt);
	vt_screen_add_modes(&o);
	vt_screen_add_pen(&o, &s->pen);
	if (m->origin)
		vt_screen_add(&o, "\033[?6h", 5);
	if (!s->cursor_visible)
		vt_screen_add(&o, "\033[?25l", 6);
	vt_screen_cursor_shown(s, &row, &col);
	vt_screen_addf(&o, "\033[%d;%dH", row + 1, col + 1);
	vt_screen_cursor(s, &row, &col);
	vt_screen_add_line_size(&o, vterm_state_get_lineinfo(s->state, row));
	*len = o.len;
	return o.buf;
}
