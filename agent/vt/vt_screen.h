/* vt_screen: the terminal model of one PTY session, made of libvterm's state
 * layer (parsing and terminal semantics) over berth's own grids of cells, and
 * the renderer that turns the model into bytes redrawing the same screen. */
#ifndef BERTH_VT_SCREEN_H
#define BERTH_VT_SCREEN_H

#include <stddef.h>
#include <stdint.h>

#include <vterm.h>

/* The largest width and height, in cells, of a screen. */
#define VT_SCREEN_MAX 1000
/* The longest window title kept, in bytes. */
#define VT_SCREEN_TITLE_MAX 1024
/* A cell's characters: a base character and up to five combining marks. */
#define VT_SCREEN_CHARS VTERM_MAX_CHARS_PER_CELL

/* How a character is drawn: what SGR sets. */
struct vt_screen_pen {
	VTermColor fg; /* default, palette index or RGB, as libvterm has it */
	VTermColor bg;
	uint8_t bold;
	uint8_t underline; /* VTERM_UNDERLINE_* */
	uint8_t italic;
	uint8_t blink;
	uint8_t reverse;
	uint8_t strike;
	uint8_t font; /* 0-9: SGR 10-19 */
};

/*
 * One cell. A wide character takes two: its own (width 2) and the one to
 * its right (width 0). chars[0] == 0 is a blank; the list ends at the first
 * 0 or after VT_SCREEN_CHARS.
 */
struct vt_screen_cell {
	uint32_t chars[VT_SCREEN_CHARS];
	uint8_t width;
	struct vt_screen_pen pen;
};

/* Opaque; vt_screen_create allocates one, vt_screen_free frees it. */
struct vt_screen;

struct vt_screen *vt_screen_create(int cols, int rows);
void vt_screen_free(struct vt_screen *);
/* Output of the program on the PTY, in pieces cut anywhere. */
void vt_screen_feed(struct vt_screen *, const void *, size_t);
/* cols and rows within 1 - VT_SCREEN_MAX; others are clamped. */
void vt_screen_resize(struct vt_screen *, int cols, int rows);
void vt_screen_size(const struct vt_screen *, int *cols, int *rows);
/* A cell of the screen shown now; NULL outside it. */
const struct vt_screen_cell *vt_screen_cell(
    const struct vt_screen *, int row, int col);
void vt_screen_cursor(const struct vt_screen *, int *row, int *col);
int vt_screen_cursor_visible(const struct vt_screen *);
int vt_screen_altscreen(const struct vt_screen *);
const char *vt_screen_title(const struct vt_screen *);
/*
 * Bytes that, written to a fresh xterm-compatible terminal of the same
 * size, redraw the screen and restore the modes the model knows of. The
 * caller frees the result; *len is its length.
 */
char *vt_screen_redraw(const struct vt_screen *, size_t *len);
/*
 * Whether two models show the same: size, cells, cursor, screens, modes,
 * title and pen. Returns 0 if so, else -1 with the first difference in
 * *cause (the caller frees it).
 */
int vt_screen_compare(
    const struct vt_screen *, const struct vt_screen *, char **cause);

#endif
