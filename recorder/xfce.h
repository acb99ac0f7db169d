/* xfce: the "xfce" check, proof that the XFCE desktop is up on a display:
 * a window manager that passes the EWMH check, a viewable xfce4-panel
 * window and a viewable desktop window (xfdesktop). */
#ifndef BERTH_XFCE_H
#define BERTH_XFCE_H

#include <X11/Xlib.h>
#include <stdbool.h>

/* Bounds of the window tree walked when no window manager lists the
 * clients: how deep, and how many windows in all. */
#define XFCE_MAX_DEPTH 4
#define XFCE_MAX_WINDOWS 4096
/* The most clients read from _NET_CLIENT_LIST. */
#define XFCE_MAX_CLIENTS 1024

/*
 * Looks at the display once. Returns 0 if XFCE is up, else -1; either way
 * *desc (the caller frees it) says what was found or names everything
 * missing. A connection that broke meanwhile shows as missing windows:
 * the caller asks xconn_get afterwards whether it still stands.
 */
int xfce_check(Display *dpy, char **desc);
/* The events on the root window (selected with XFCE_EVENT_MASK) after
 * which the check may say something new: windows come and go, or one of
 * the properties it reads changes. */
#define XFCE_EVENT_MASK (SubstructureNotifyMask | PropertyChangeMask)
bool xfce_event_matters(Display *dpy, const XEvent *ev);

#endif
