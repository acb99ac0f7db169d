/* vt_screen_impl: what the terminal model (vt_screen.c), its renderer
 * (vt_screen_redraw.c) and its comparison (vt_screen_compare.c) share:
 * the model's layout and the cell helpers. Not for use outside agent/vt/. */
#ifndef BERTH_VT_SCREEN_IMPL_H
#define BERTH_VT_SCREEN_IMPL_H

#include "vt_screen.h"

/*
 * libvterm's text handler puts arrays as long as its input on the stack:
 * it is given at most this many bytes at a time (see vt_screen_push).
 */
#define VT_SCREEN_PIECE 16384
/* The most parameters libvterm 0.1.4 can hold in a CSI (its CSI_ARGS_MAX). */
#define VT_SCREEN_CSI_ARGS 16
/* Parameter values past this are cut (see vt_screen_guard). */
#define VT_SCREEN_ARG_MAX 99999

/*
 * What libvterm's state knows but does not tell: followed by a second,
 * parser-only libvterm that sees the same bytes, with the same rules as
 * libvterm 0.1.4's state.c (which looks at the first parameter only).
 */
struct vt_screen_modes {
	int cursor_keys; /* DECCKM, ?1 */
	int keypad;      /* DECKPAM, ESC = */
	int origin;      /* DECOM, ?6 */
	int autowrap;    /* DECAWM, ?7 */
	int lrmm;        /* DECLRMM, ?69 */
	int focus;       /* ?1004 */
	int mouse_proto; /* 0 (X10), 1005, 1006 or 1015 */
	int paste;       /* bracketed paste, ?2004 */
	int insert;      /* IRM, 4 */
	int newline;     /* LNM, 20 */
	int top;         /* DECSTBM: first row of the scroll region */
	int bottom;      /* the row after its last, -1 for the screen's end */
	int left;        /* DECSLRM, likewise for columns */
	int right;
};

/* Where libvterm's parser is, as far as vt_screen_guard must know. */
enum vt_screen_pstate {
	VT_P_NORMAL,
	VT_P_ESC,
	VT_P_CSI_LEADER,
	VT_P_CSI_ARGS,
	VT_P_CSI_INTERMED,
	VT_P_STRING,
	VT_P_ESC_IN_STRING,
};

/* What vt_screen_guard makes of one byte. */
enum vt_screen_verdict {
	VT_PASS,
	VT_DROP,
	VT_ESC,   /* an ESC after text: the cursor is checked before it */
	VT_FINAL, /* ends an escape sequence: the cursor is checked after it */
};

struct vt_screen_guard {
	enum vt_screen_pstate state;
	int argi;   /* parameters after the first */
	long value; /* of the parameter being read, -1 before its first digit */
	int plain;  /* a CSI with neither leader nor intermediate bytes */
	int nint;   /* intermediate bytes of an escape sequence */
	int hash;   /* the first of them is '#' (DECDWL, DECDHL) */
};

/*
 * A screen's cells: one block of rows * cols, and its lines in the order
 * shown, so that scrolling moves pointers rather than cells.
 */
struct vt_screen_grid {
	struct vt_screen_cell *cells;
	struct vt_screen_cell **lines;
};

struct vt_screen {
	VTerm *vt;
	VTermState *state;
	VTerm *tap; /* parser only: feeds modes */
	int cols;
	int rows;
	/* The primary and the alternate screen; the alternate one is
	 * allocated when first shown (cells NULL until then). */
	struct vt_screen_grid grid[2];
	int alt;                     /* which one is shown */
	struct vt_screen_pen pen;    /* what text is drawn with now */
	struct vt_screen_pen defpen; /* what a fresh terminal draws with */
	/* What leaving the alternate screen (?1049l) restores. */
	VTermPos saved_pos;
	struct vt_screen_pen saved_pen;
	int cursor_visible;
	int cursor_blink;
	int cursor_shape; /* VTERM_PROP_CURSORSHAPE_* */
	int reverse;      /* DECSCNM, ?5 */
	int mouse;        /* VTERM_PROP_MOUSE_* */
	char title[VT_SCREEN_TITLE_MAX + 1];
	int last_width; /* of the last glyph REP could repeat */
	struct vt_screen_modes modes;
	struct vt_screen_guard guard;
	char piece[VT_SCREEN_PIECE + 1]; /* what vt_screen_push writes */
};

/* Helpers of the model the other parts use. */
int vt_screen_pen_equal(
    const struct vt_screen_pen *a, const struct vt_screen_pen *b);
int vt_screen_is_blank(const struct vt_screen_cell *c);
/* Line row of grid (0 primary, 1 alternate), in the order shown. */
struct vt_screen_cell *vt_screen_line(
    const struct vt_screen *s, int grid, int row);
/* Where a redraw can put the cursor: on the screen and, in origin mode,
 * within the margins, relative to them. */
void vt_screen_cursor_shown(const struct vt_screen *s, int *row, int *col);

#endif
