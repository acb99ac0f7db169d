/* xfce: the "xfce" check. Reads the EWMH properties of the root window and
 * the window classes of the clients; owns nothing between two checks. */
#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "xfce.h"
#include "xprop.h"
#include "xmalloc.h"

/* The longest window manager name kept, and the longest description. */
#define XFCE_NAME_MAX 32
#define XFCE_DESC_MAX 512

enum xfce_atom {
	XFCE_WM_CHECK,
	XFCE_CLIENT_LIST,
	XFCE_WM_NAME,
	XFCE_UTF8_STRING,
	XFCE_WM_WINDOW_TYPE,
	XFCE_TYPE_DESKTOP,
	XFCE_NATOMS
};

static const char *const xfce_atom_names[XFCE_NATOMS] = {
    [XFCE_WM_CHECK] = "_NET_SUPPORTING_WM_CHECK",
    [XFCE_CLIENT_LIST] = "_NET_CLIENT_LIST",
    [XFCE_WM_NAME] = "_NET_WM_NAME",
    [XFCE_UTF8_STRING] = "UTF8_STRING",
    [XFCE_WM_WINDOW_TYPE] = "_NET_WM_WINDOW_TYPE",
    [XFCE_TYPE_DESKTOP] = "_NET_WM_WINDOW_TYPE_DESKTOP",
};

/* One check's findings; on the stack of xfce_check. */
struct xfce_scan {
	Display *dpy;
	Atom atoms[XFCE_NATOMS];
	Window panel;     /* a viewable xfce4-panel window, or None */
	Window desktop;   /* a viewable desktop window, or None */
	unsigned visited; /* windows looked at by the tree walk */
};

/* The window manager's name, from other clients' bytes: printable ASCII
 * only, the rest as '?', at most XFCE_NAME_MAX characters. */
static void
xfce_wm_name(struct xfce_scan *sc, Window w, char *name, size_t len)
{
	unsigned long n = 0, after, i;
	unsigned char *data = NULL;
	size_t at = 0;
	Atom got;
	int format;

	snprintf(name, len, "unnamed");
	if (XGetWindowProperty(sc->dpy, w, sc->atoms[XFCE_WM_NAME], 0,
	        XFCE_NAME_MAX / 4 + 1, False, sc->atoms[XFCE_UTF8_STRING], &got,
	        &format, &n, &after, &data) != Success)
		return;
	if (got == sc->atoms[XFCE_UTF8_STRING] && format == 8 && data != NULL &&
	    n > 0) {
		for (i = 0; i < n && at + 1 < len && at < XFCE_NAME_MAX; i++)
			name[at++] = data[i] >= 0x20 && data[i] < 0x7f
			    ? (char)data[i]
			    : '?';
		name[at] = '\0';
	}
	if (data != NULL)
		XFree(data);
}

/* The EWMH proof of a window manager (xprop_wm_check). Returns 0 with
 * the manager's name, or -1 with why. */
static int
xfce_wm(
    struct xfce_scan *sc, char *name, size_t namelen, char *why, size_t whylen)
{
	Window w;

	switch (xprop_wm_check(sc->dpy, sc->atoms[XFCE_WM_CHECK], &w)) {
	case XPROP_WM_ALIVE: xfce_wm_name(sc, w, name, namelen); return 0;
	case XPROP_WM_UNSET:
		snprintf(why, whylen,
		    "no window manager (_NET_SUPPORTING_WM_CHECK unset)");
		break;
	case XPROP_WM_GONE:
		snprintf(why, whylen,
		    "no window manager (_NET_SUPPORTING_WM_CHECK names 0x%lx, "
		    "which does not exist)",
		    w);
		break;
	case XPROP_WM_NOT_SELF:
		snprintf(why, whylen,
		    "no window manager (window 0x%lx of "
		    "_NET_SUPPORTING_WM_CHECK does not name itself)",
		    w);
		break;
	}
	return -1;
}

static bool
xfce_class_is(const XClassHint *ch, const char *name)
{
	return (ch->res_name != NULL && strcasecmp(ch->res_name, name) == 0) ||
	    (ch->res_class != NULL && strcasecmp(ch->res_class, name) == 0);
}

static bool
xfce_viewable(Display *dpy, Window w)
{
	XWindowAttributes wa;

	return XGetWindowAttributes(dpy, w, &wa) && wa.map_state == IsViewable;
}

static bool
xfce_is_desktop_type(struct xfce_scan *sc, Window w)
{
	unsigned long types[16];
	int n, i;

	n = xprop_card32(
	    sc->dpy, w, sc->atoms[XFCE_WM_WINDOW_TYPE], XA_ATOM, types, 16);
	for (i = 0; i < n; i++)
		if (types[i] == sc->atoms[XFCE_TYPE_DESKTOP])
			return true;
	return false;
}

/*
 * Looks at one window. A client (a window with WM_CLASS) is the panel if
 * its class is xfce4-panel, the desktop if its class is xfdesktop or its
 * type is _NET_WM_WINDOW_TYPE_DESKTOP; either counts only if viewable,
 * since GTK gives every program an unmapped leader window of its class.
 * Returns whether w is a client: a walk does not look inside clients.
 */
static bool
xfce_client(struct xfce_scan *sc, Window w)
{
	bool panel, desktop;
	XClassHint ch;

	if (!XGetClassHint(sc->dpy, w, &ch))
		return false;
	panel = sc->panel == None && xfce_class_is(&ch, "xfce4-panel");
	desktop = sc->desktop == None && xfce_class_is(&ch, "xfdesktop");
	XFree(ch.res_name);
	XFree(ch.res_class);
	if (!panel && !desktop && sc->desktop == None)
		desktop = xfce_is_desktop_type(sc, w);
	if ((panel || desktop) && xfce_viewable(sc->dpy, w)) {
		if (panel)
			sc->panel = w;
		else
			sc->desktop = w;
	}
	return true;
}

static bool
xfce_found_all(const struct xfce_scan *sc)
{
	return sc->panel != None && sc->desktop != None;
}

/* With no window manager to list the clients, they are found in the tree:
 * children of the root, or of the frames a manager put them in. */
static void
xfce_walk(struct xfce_scan *sc, Window w, int depth)
{
	Window root, parent, *kids = NULL;
	unsigned int n, i;

	if (depth > XFCE_MAX_DEPTH ||
	    !XQueryTree(sc->dpy, w, &root, &parent, &kids, &n))
		return;
	for (i = 0; i < n && !xfce_found_all(sc); i++) {
		if (sc->visited++ >= XFCE_MAX_WINDOWS)
			break;
		if (!xfce_client(sc, kids[i]))
			xfce_walk(sc, kids[i], depth + 1);
	}
	if (kids != NULL)
		XFree(kids);
}

/* The clients as the window manager lists them; false if it does not. */
static bool
xfce_client_list(struct xfce_scan *sc)
{
	unsigned long clients[XFCE_MAX_CLIENTS];
	int n, i;

	n = xprop_card32(sc->dpy, DefaultRootWindow(sc->dpy),
	    sc->atoms[XFCE_CLIENT_LIST], XA_WINDOW, clients, XFCE_MAX_CLIENTS);
	if (n <= 0)
		return false;
	for (i = 0; i < n && !xfce_found_all(sc); i++)
		xfce_client(sc, (Window)clients[i]);
	return true;
}

static void
xfce_append(char *buf, size_t len, const char *what)
{
	size_t at = strlen(buf);

	if (at < len)
		snprintf(buf + at, len - at, "%s%s", at > 0 ? "; " : "", what);
}

int
xfce_check(Display *dpy, char **desc)
{
	char wm[XFCE_NAME_MAX + 1], why[256], out[XFCE_DESC_MAX] = "";
	struct xfce_scan sc;
	bool wm_ok;

	memset(&sc, 0, sizeof sc);
	sc.dpy = dpy;
	/* Xlib caches atoms per display: one round trip per connection. */
	if (!XInternAtoms(
	        dpy, (char **)xfce_atom_names, XFCE_NATOMS, False, sc.atoms)) {
		*desc = xstrdup("cannot intern the EWMH atoms");
		return -1;
	}
	wm_ok = xfce_wm(&sc, wm, sizeof wm, why, sizeof why) == 0;
	if (!wm_ok || !xfce_client_list(&sc))
		xfce_walk(&sc, DefaultRootWindow(dpy), 1);
	if (!wm_ok)
		xfce_append(out, sizeof out, why);
	if (sc.panel == None)
		xfce_append(out, sizeof out, "xfce4-panel has no window");
	if (sc.desktop == None)
		xfce_append(out, sizeof out, "xfdesktop has no desktop window");
	if (out[0] != '\0') {
		*desc = xstrdup(out);
		return -1;
	}
	*desc = xasprintf("window manager \"%s\", xfce4-panel and the desktop "
	                  "window are up",
	    wm);
	return 0;
}

bool
xfce_event_matters(Display *dpy, const XEvent *ev)
{
	Atom check, clients;

	switch (ev->type) {
	case CreateNotify:
	case DestroyNotify:
	case MapNotify:
	case UnmapNotify:
	case ReparentNotify: return true;
	case PropertyNotify:
		/* Not every property of the root: _NET_ACTIVE_WINDOW and
		 * the stacking list change with every click. The atoms come
		 * from Xlib's cache, filled by the checks. */
		check = XInternAtom(dpy, xfce_atom_names[XFCE_WM_CHECK], False);
		clients =
		    XInternAtom(dpy, xfce_atom_names[XFCE_CLIENT_LIST], False);
		return ev->xproperty.atom == check ||
		    ev->xproperty.atom == clients;
	default: return false;
	}
}
