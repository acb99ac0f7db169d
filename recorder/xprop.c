/* xprop: other clients' window properties (see xprop.h). */
#include <X11/Xatom.h>

#include "xprop.h"

int
xprop_card32(
    Display *dpy, Window w, Atom prop, Atom type, unsigned long *out, int max)
{
	unsigned long n = 0, after, i;
	unsigned char *data = NULL;
	Atom got;
	int format;

	if (XGetWindowProperty(dpy, w, prop, 0, max, False, type, &got, &format,
	        &n, &after, &data) != Success)
		return -1;
	if (got != type || format != 32 || data == NULL)
		n = 0;
	/* Format 32 comes as an array of long, whatever long's size. */
	for (i = 0; i < n && i < (unsigned long)max; i++)
		out[i] = (unsigned long)((long *)data)[i];
	if (data != NULL)
		XFree(data);
	return (int)i;
}

enum xprop_wm
xprop_wm_check(Display *dpy, Atom check, Window *w)
{
	unsigned long named, self;
	int n;

	*w = None;
	if (xprop_card32(dpy, DefaultRootWindow(dpy), check, XA_WINDOW, &named,
	        1) <= 0 ||
	    named == None)
		return XPROP_WM_UNSET;
	*w = (Window)named;
	n = xprop_card32(dpy, *w, check, XA_WINDOW, &self, 1);
	if (n < 0)
		return XPROP_WM_GONE;
	return n == 1 && self == named ? XPROP_WM_ALIVE : XPROP_WM_NOT_SELF;
}
