/* vt_screen_compare: whether two models show the same (see vt_screen.h). */
#include <stdio.h>
#include <string.h>

#include "vt_screen_impl.h"
#include "xmalloc.h"

/* Room for the modes in a difference's description. */
#define VT_SCREEN_MODES_STR 160

static int
vt_screen_cell_equal(
    const struct vt_screen_cell *a, const struct vt_screen_cell *b)
{
	int i;

	if (a->width != b->width || !vt_screen_pen_equal(&a->pen, &b->pen))
		return 0;
	if (vt_screen_is_blank(a) || vt_screen_is_blank(b))
		return vt_screen_is_blank(a) && vt_screen_is_blank(b);
	for (i = 0; i < VT_SCREEN_CHARS; i++) {
		if (a->chars[i] != b->chars[i])
			return 0;
		if (a->chars[i] == 0)
			break;
	}
	return 1;
}

static int
vt_screen_grid_equal(const struct vt_screen *a, const struct vt_screen *b,
    int grid, const char *what, char **cause)
{
	const struct vt_screen_cell *x, *y;
	int row, col;

	for (row = 0; row < a->rows; row++) {
		x = vt_screen_line(a, grid, row);
		y = vt_screen_line(b, grid, row);
		for (col = 0; col < a->cols; col++) {
			if (vt_screen_cell_equal(&x[col], &y[col]))
				continue;
			*cause = xasprintf("%s cell %d,%d: U+%04X width %d, "
			                   "not U+%04X width %d (or its pen)",
			    what, row, col, x[col].chars[0], x[col].width,
			    y[col].chars[0], y[col].width);
			return 0;
		}
	}
	return 1;
}

/* Margins compare as where they are: -1 is the screen's edge. */
static int
vt_screen_modes_equal(const struct vt_screen *a, const struct vt_screen *b)
{
	const struct vt_screen_modes *x = &a->modes, *y = &b->modes;

	return x->cursor_keys == y->cursor_keys && x->keypad == y->keypad &&
	    x->origin == y->origin && x->autowrap == y->autowrap &&
	    x->lrmm == y->lrmm && x->focus == y->focus &&
	    x->mouse_proto == y->mouse_proto && x->paste == y->paste &&
	    x->insert == y->insert && x->newline == y->newline &&
	    x->top == y->top &&
	    (x->bottom == -1 ? a->rows : x->bottom) ==
	    (y->bottom == -1 ? b->rows : y->bottom) &&
	    (!x->lrmm ||
	        (x->left == y->left &&
	            (x->right == -1 ? a->cols : x->right) ==
	                (y->right == -1 ? b->cols : y->right)));
}

static int
vt_screen_lines_equal(const struct vt_screen *a, const struct vt_screen *b)
{
	const VTermLineInfo *x, *y;
	int row;

	for (row = 0; row < a->rows; row++) {
		x = vterm_state_get_lineinfo(a->state, row);
		y = vterm_state_get_lineinfo(b->state, row);
		if (x->doublewidth != y->doublewidth ||
		    x->doubleheight != y->doubleheight)
			return 0;
	}
	return 1;
}

static const char *
vt_screen_modes_str(const struct vt_screen_modes *m, char *buf)
{
	snprintf(buf, VT_SCREEN_MODES_STR,
	    "ckm %d kp %d om %d awm %d lrmm %d focus %d mouse %d paste %d "
	    "irm %d lnm %d region %d-%d/%d-%d",
	    m->cursor_keys, m->keypad, m->origin, m->autowrap, m->lrmm,
	    m->focus, m->mouse_proto, m->paste, m->insert, m->newline, m->top,
	    m->bottom, m->left, m->right);
	return buf;
}

int
vt_screen_compare(
    const struct vt_screen *a, const struct vt_screen *b, char **cause)
{
	char ma[VT_SCREEN_MODES_STR], mb[VT_SCREEN_MODES_STR];
	int arow, acol, brow, bcol;

	*cause = NULL;
	if (a->cols != b->cols || a->rows != b->rows) {
		*cause = xasprintf("size %dx%d, not %dx%d", a->cols, a->rows,
		    b->cols, b->rows);
		return -1;
	}
	if (a->alt != b->alt) {
		*cause =
		    xasprintf("alternate screen %d, not %d", a->alt, b->alt);
		return -1;
	}
	if (!vt_screen_grid_equal(
	        a, b, a->alt, a->alt ? "alternate" : "primary", cause))
		return -1;
	if (a->alt && !vt_screen_grid_equal(a, b, 0, "primary (hidden)", cause))
		return -1;
	if (a->alt &&
	    (a->saved_pos.row != b->saved_pos.row ||
	        a->saved_pos.col != b->saved_pos.col)) {
		*cause = xasprintf("cursor saved at %d,%d, not %d,%d",
		    a->saved_pos.row, a->saved_pos.col, b->saved_pos.row,
		    b->saved_pos.col);
		return -1;
	}
	if (!vt_screen_lines_equal(a, b)) {
		*cause = xstrdup("line sizes (DECDWL, DECDHL)");
		return -1;
	}
	vt_screen_cursor_shown(a, &arow, &acol);
	vt_screen_cursor_shown(b, &brow, &bcol);
	if (arow != brow || acol != bcol) {
		*cause = xasprintf(
		    "cursor at %d,%d, not %d,%d", arow, acol, brow, bcol);
		return -1;
	}
	if (a->cursor_visible != b->cursor_visible ||
	    a->cursor_blink != b->cursor_blink ||
	    a->cursor_shape != b->cursor_shape) {
		*cause = xasprintf("cursor visible %d blink %d shape %d, not "
		                   "%d %d %d",
		    a->cursor_visible, a->cursor_blink, a->cursor_shape,
		    b->cursor_visible, b->cursor_blink, b->cursor_shape);
		return -1;
	}
	if (a->reverse != b->reverse || a->mouse != b->mouse) {
		*cause = xasprintf("reverse screen %d mouse %d, not %d %d",
		    a->reverse, a->mouse, b->reverse, b->mouse);
		return -1;
	}
	if (strcmp(a->title, b->title) != 0) {
		*cause =
		    xasprintf("title \"%s\", not \"%s\"", a->title, b->title);
		return -1;
	}
	if (!vt_screen_modes_equal(a, b)) {
		*cause = xasprintf("modes %s, not %s",
		    vt_screen_modes_str(&a->modes, ma),
		    vt_screen_modes_str(&b->modes, mb));
		return -1;
	}
	if (!vt_screen_pen_equal(&a->pen, &b->pen)) {
		*cause = xstrdup("current pen (SGR)");
		return -1;
	}
	return 0;
}
