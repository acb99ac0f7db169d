/* xprop: reading other clients' window properties, as the xfce check and
 * the desktop ops both do: 32-bit items of a type, and the EWMH proof that
 * a window manager is alive. Allocates nothing the caller keeps. */
#ifndef BERTH_XPROP_H
#define BERTH_XPROP_H

#include <X11/Xlib.h>

/* What the EWMH window manager check found. */
enum xprop_wm {
	XPROP_WM_ALIVE,   /* the window named names itself */
	XPROP_WM_UNSET,   /* the root names no window */
	XPROP_WM_GONE,    /* it names a window that does not exist */
	XPROP_WM_NOT_SELF /* that window does not name itself */
};

/*
 * Reads up to max 32-bit items of property prop of w, if it has type type.
 * Returns how many were read (0: unset, or of another type), or -1 if the
 * request failed: w does not exist, or the connection broke.
 */
int xprop_card32(
    Display *dpy, Window w, Atom prop, Atom type, unsigned long *out, int max);
/*
 * The root's _NET_SUPPORTING_WM_CHECK (the atom check) names a window, and
 * that window exists and names itself in the same property. A killed
 * manager leaves the root's properties behind, naming a window the server
 * destroyed with its client: reading that window's property is what tells
 * a live manager from a dead one. *w is the window named (None if unset).
 */
enum xprop_wm xprop_wm_check(Display *dpy, Atom check, Window *w);

#endif
