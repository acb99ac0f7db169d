/* capture: reading the screen's pixels, for screenshots and recordings
 * alike. MIT-SHM into a segment kept while the connection and the
 * screen's size last (plain XGetImage when the server cannot attach it),
 * with the pointer drawn in from XFixes.
 *
 * Ownership: capture owns its shared memory segment; capture_free
 * releases it. The xconn is the caller's. An image it hands out is
 * released with capture_release before the next grab (it may be the
 * segment itself). */
#ifndef BERTH_CAPTURE_H
#define BERTH_CAPTURE_H

#include <X11/Xlib.h>
#include <libavutil/pixfmt.h>
#include <stdbool.h>

#include "opargs.h"
#include "xconn.h"

struct capture;

struct capture *capture_create(struct xconn *xc);
void capture_free(struct capture *cp);
/* The live Display, or NULL; what belonged to an earlier connection is
 * forgotten here (the server dropped its side with the connection). */
Display *capture_display(struct capture *cp);
/* Whether grabs on the current connection use MIT-SHM (tried first if
 * not yet tried on it); false while X is not connected. */
bool capture_shm(struct capture *cp);
/*
 * The pixels of r, a region of the root window (of wa's size), with the
 * pointer drawn in if cursor is set and XFixes is there. NULL if the
 * server said no (the screen shrank meanwhile, or the connection broke:
 * ask xconn_get).
 */
XImage *capture_grab(struct capture *cp, Display *dpy,
    const XWindowAttributes *wa, const struct opargs_rect *r, bool cursor);
void capture_release(struct capture *cp, XImage *img);
/* The libav name of the image's pixel layout; AV_PIX_FMT_NONE for
 * visuals berth does not convert (palettes, odd masks). */
enum AVPixelFormat capture_pixfmt(const XImage *img);

#endif
