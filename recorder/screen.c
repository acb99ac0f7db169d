/* screen: desktop.info, desktop.cursor and desktop.windows (see
 * screen.h). Window titles and classes are other clients' bytes: they
 * are made valid UTF-8 and cut to a length before they are answered. */
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/Xrandr.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "opargs.h"
#include "proto.h"
#include "screen.h"
#include "xprop.h"
#include "xmalloc.h"

enum screen_atom {
	SCREEN_WM_CHECK,
	SCREEN_CLIENT_LIST,
	SCREEN_CLIENT_LIST_STACKING,
	SCREEN_ACTIVE_WINDOW,
	SCREEN_WM_NAME,
	SCREEN_WM_DESKTOP,
	SCREEN_UTF8_STRING,
	SCREEN_NATOMS
};

static const char *const screen_atom_names[SCREEN_NATOMS] = {
    [SCREEN_WM_CHECK] = "_NET_SUPPORTING_WM_CHECK",
    [SCREEN_CLIENT_LIST] = "_NET_CLIENT_LIST",
    [SCREEN_CLIENT_LIST_STACKING] = "_NET_CLIENT_LIST_STACKING",
    [SCREEN_ACTIVE_WINDOW] = "_NET_ACTIVE_WINDOW",
    [SCREEN_WM_NAME] = "_NET_WM_NAME",
    [SCREEN_WM_DESKTOP] = "_NET_WM_DESKTOP",
    [SCREEN_UTF8_STRING] = "UTF8_STRING",
};

static const char *const screen_no_keys[] = {NULL};

struct screen {
	struct xconn *xc;
	struct shot *sh;
	uint64_t serial; /* the connection the atoms were interned on */
	Atom atoms[SCREEN_NATOMS];
};

/* One window as answered; strings are NULL when the window has none,
 * else valid UTF-8 the entry owns. */
struct screen_win {
	Window id;
	char *title;
	char *class;
	char *instance;
	int x, y, width, height;
	long desktop; /* -1: all desktops; -2: none said */
};

struct screen *
screen_create(struct xconn *xc, struct shot *sh)
{
	struct screen *sc;

	sc = xcalloc(1, sizeof *sc);
	sc->xc = xc;
	sc->sh = sh;
	return sc;
}

void
screen_free(struct screen *sc)
{
	free(sc);
}

/* The live Display, with the atoms interned on it; NULL if X is not
 * connected. */
static Display *
screen_display(struct screen *sc)
{
	Display *dpy = xconn_get(sc->xc);

	if (dpy == NULL || sc->serial == sc->xc->serial)
		return dpy;
	if (!XInternAtoms(dpy, (char **)screen_atom_names, SCREEN_NATOMS, False,
	        sc->atoms))
		return NULL;
	sc->serial = sc->xc->serial;
	return dpy;
}

/* The length of the valid UTF-8 sequence at s[0..n), or 0 if invalid:
 * no overlong forms, surrogates or code points past U+10FFFF. */
static size_t
screen_utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/*
 * Other clients' text as valid UTF-8 of at most SCREEN_TITLE_MAX bytes,
 * cut before a character that would not fit. latin1: the bytes are ISO
 * 8859-1 (STRING, as ICCCM has WM_NAME and WM_CLASS); otherwise UTF-8,
 * where a byte that starts no valid sequence becomes U+FFFD.
 */
static char *
screen_text(const unsigned char *s, size_t n, bool latin1)
{
	char *out = xmalloc(SCREEN_TITLE_MAX + 1);
	size_t at = 0, i = 0, len;

	while (i < n) {
		if (latin1 && s[i] >= 0x80) {
			if (at + 2 > SCREEN_TITLE_MAX)
				break;
			out[at++] = (char)(0xc0 | s[i] >> 6);
			out[at++] = (char)(0x80 | (s[i] & 0x3f));
			i++;
			continue;
		}
		len = latin1 ? 1 : screen_utf8_len(s + i, n - i);
		if (len == 0) {
			if (at + 3 > SCREEN_TITLE_MAX)
				break;
			memcpy(out + at, "\xef\xbf\xbd", 3);
			at += 3;
			i++;
			continue;
		}
		if (at + len > SCREEN_TITLE_MAX)
			break;
		memcpy(out + at, s + i, len);
		at += len;
		i += len;
	}
	out[at] = '\0';
	return out;
}

/* The root's size and depth now (a RandR change may have resized it). */
static bool
screen_root(Display *dpy, unsigned *width, unsigned *height, unsigned *depth)
{
	unsigned border;
	Window root;
	int x, y;

	return XGetGeometry(dpy, DefaultRootWindow(dpy), &root, &x, &y, width,
	    height, &border, depth);
}

static void
screen_pack_rect(msgpack_packer *pk, int x, int y, int width, int height)
{
	msgpack_pack_map(pk, 4);
	proto_pack_kv_i64(pk, "x", x);
	proto_pack_kv_i64(pk, "y", y);
	proto_pack_kv_i64(pk, "width", width);
	proto_pack_kv_i64(pk, "height", height);
}

/* The monitors RandR 1.5 lists, or none (then the root is the one
 * screen). The caller frees them with XRRFreeMonitors. */
static XRRMonitorInfo *
screen_monitors(Display *dpy, int *n)
{
	int base, error, major = 0, minor = 0;

	*n = 0;
	if (!XRRQueryExtension(dpy, &base, &error) ||
	    !XRRQueryVersion(dpy, &major, &minor) ||
	    (major < 1 || (major == 1 && minor < 5)))
		return NULL;
	return XRRGetMonitors(dpy, DefaultRootWindow(dpy), True, n);
}

#define SCREEN_UNAVAILABLE(sv, id, sc)                                         \
	serve_reply_error((sv), (id), PROTO_E_UNAVAILABLE,                     \
	    "the X server is not connected (%s)",                              \
	    (sc)->xc->cause != NULL ? (sc)->xc->cause                          \
	                            : "it stopped answering")

/* The start of every op: its args read (none; any key is ignored), and
 * a live connection. */
static Display *
screen_begin(struct screen *sc, struct serve *sv, uint64_t id, const char *op,
    const msgpack_object *args)
{
	char *cause = NULL;
	Display *dpy;

	if (opargs_known(args, screen_no_keys, &cause) < 0) {
		serve_reply_error(
		    sv, id, PROTO_E_BAD_ARGS, "%s: %s", op, cause);
		free(cause);
		return NULL;
	}
	if ((dpy = screen_display(sc)) == NULL)
		SCREEN_UNAVAILABLE(sv, id, sc);
	return dpy;
}

static void
screen_info_cb(
    struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	struct screen *sc = arg;
	unsigned width, height, depth;
	XRRMonitorInfo *mon;
	msgpack_packer *pk;
	char *name;
	Display *dpy;
	bool shm;
	int n, i;

	if ((dpy = screen_begin(sc, sv, id, "desktop.info", args)) == NULL)
		return;
	if (!screen_root(dpy, &width, &height, &depth)) {
		SCREEN_UNAVAILABLE(sv, id, sc);
		return;
	}
	mon = screen_monitors(dpy, &n);
	if (n > SCREEN_MAX_MONITORS)
		n = SCREEN_MAX_MONITORS;
	shm = shot_shm(sc->sh);
	if (xconn_get(sc->xc) == NULL) {
		if (mon != NULL)
			XRRFreeMonitors(mon);
		SCREEN_UNAVAILABLE(sv, id, sc);
		return;
	}
	name = screen_text((const unsigned char *)DisplayString(dpy),
	    strlen(DisplayString(dpy)), false);
	pk = serve_reply_begin(sv, id);
	msgpack_pack_map(pk, 6);
	proto_pack_kv_str(pk, "display", name);
	proto_pack_kv_i64(pk, "width", width);
	proto_pack_kv_i64(pk, "height", height);
	proto_pack_kv_i64(pk, "depth", depth);
	proto_pack_str(pk, "screens");
	if (n > 0) {
		msgpack_pack_array(pk, (size_t)n);
		for (i = 0; i < n; i++)
			screen_pack_rect(pk, mon[i].x, mon[i].y, mon[i].width,
			    mon[i].height);
	} else {
		msgpack_pack_array(pk, 1);
		screen_pack_rect(pk, 0, 0, (int)width, (int)height);
	}
	proto_pack_kv_bool(pk, "shm", shm);
	serve_reply_end(sv);
	free(name);
	if (mon != NULL)
		XRRFreeMonitors(mon);
}

static void
screen_cursor_cb(
    struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	struct screen *sc = arg;
	int x = 0, y = 0, wx, wy;
	Window root, child;
	msgpack_packer *pk;
	unsigned mask;
	Display *dpy;

	if ((dpy = screen_begin(sc, sv, id, "desktop.cursor", args)) == NULL)
		return;
	if (!XQueryPointer(dpy, DefaultRootWindow(dpy), &root, &child, &x, &y,
	        &wx, &wy, &mask) &&
	    xconn_get(sc->xc) == NULL) {
		SCREEN_UNAVAILABLE(sv, id, sc);
		return;
	}
	pk = serve_reply_begin(sv, id);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_i64(pk, "x", x);
	proto_pack_kv_i64(pk, "y", y);
	serve_reply_end(sv);
}

/*
 * Whether an EWMH window manager runs: the root's
 * _NET_SUPPORTING_WM_CHECK names a window that names itself. A killed
 * manager leaves the root's properties behind, its client list among
 * them, so the list is believed only while the manager lives.
 */
static bool
screen_wm(struct screen *sc, Display *dpy)
{
	Window w;

	return xprop_wm_check(dpy, sc->atoms[SCREEN_WM_CHECK], &w) ==
	    XPROP_WM_ALIVE;
}

/* The windows to list, bottom to top where known; the caller frees them.
 * Under a window manager its client list (in stacking order if it keeps
 * one), else the root's children, of which screen_window keeps the
 * viewable ones. */
static Window *
screen_candidates(struct screen *sc, Display *dpy, bool managed, int *n)
{
	unsigned long *list =
	    xreallocarray(NULL, SCREEN_MAX_WINDOWS, sizeof *list);
	Window *out, root, parent, *kids = NULL;
	unsigned nkids = 0, i;

	*n = 0;
	if (managed) {
		*n = xprop_card32(dpy, DefaultRootWindow(dpy),
		    sc->atoms[SCREEN_CLIENT_LIST_STACKING], XA_WINDOW, list,
		    SCREEN_MAX_WINDOWS);
		if (*n <= 0)
			*n = xprop_card32(dpy, DefaultRootWindow(dpy),
			    sc->atoms[SCREEN_CLIENT_LIST], XA_WINDOW, list,
			    SCREEN_MAX_WINDOWS);
	}
	if (managed) {
		*n = *n < 0 ? 0 : *n;
		out = xreallocarray(NULL, *n > 0 ? (size_t)*n : 1, sizeof *out);
		for (i = 0; i < (unsigned)*n; i++)
			out[i] = (Window)list[i];
		free(list);
		return out;
	}
	free(list);
	if (!XQueryTree(
	        dpy, DefaultRootWindow(dpy), &root, &parent, &kids, &nkids))
		return NULL;
	out = xreallocarray(NULL, nkids > 0 ? nkids : 1, sizeof *out);
	for (i = 0; i < nkids; i++)
		out[(*n)++] = kids[i];
	if (kids != NULL)
		XFree(kids);
	return out;
}

/* w's title: _NET_WM_NAME (UTF-8), else WM_NAME (Latin-1, or UTF-8 or
 * compound text as some clients set it). NULL if it has none. */
static char *
screen_title(struct screen *sc, Display *dpy, Window w)
{
	Atom utf8 = sc->atoms[SCREEN_UTF8_STRING], got;
	unsigned long n = 0, after;
	unsigned char *data = NULL;
	char *title = NULL, **list = NULL;
	XTextProperty tp;
	int format, count;

	if (XGetWindowProperty(dpy, w, sc->atoms[SCREEN_WM_NAME], 0,
	        SCREEN_TITLE_MAX / 4 + 1, False, utf8, &got, &format, &n,
	        &after, &data) == Success &&
	    got == utf8 && format == 8 && data != NULL)
		title = screen_text(data, n, false);
	if (data != NULL)
		XFree(data);
	if (title != NULL || !XGetWMName(dpy, w, &tp))
		return title;
	if (tp.encoding == XA_STRING || tp.format != 8)
		title = screen_text(tp.value, tp.nitems, true);
	else if (tp.encoding == utf8)
		title = screen_text(tp.value, tp.nitems, false);
	else if (Xutf8TextPropertyToTextList(dpy, &tp, &list, &count) >=
	        Success &&
	    count > 0)
		title = screen_text(
		    (const unsigned char *)list[0], strlen(list[0]), false);
	else
		title = screen_text(tp.value, tp.nitems, true);
	if (list != NULL)
		XFreeStringList(list);
	if (tp.value != NULL)
		XFree(tp.value);
	return title;
}

static char *
screen_latin1(const char *s)
{
	if (s == NULL)
		return NULL;
	return screen_text((const unsigned char *)s, strlen(s), true);
}

static void
screen_win_clear(struct screen_win *win)
{
	free(win->title);
	free(win->class);
	free(win->instance);
}

/*
 * Reads one window. false if it is not to be listed: not viewable (a
 * root child that is unmapped, or input only), or gone mid-walk, which
 * the last request (the translation) is there to notice.
 */
static bool
screen_window(struct screen *sc, Display *dpy, Window w, bool managed,
    struct screen_win *win)
{
	Window root = DefaultRootWindow(dpy), child;
	unsigned long desktop;
	XWindowAttributes wa;
	XClassHint ch;

	memset(win, 0, sizeof *win);
	if (!XGetWindowAttributes(dpy, w, &wa))
		return false;
	if (!managed && (wa.map_state != IsViewable || wa.class == InputOnly))
		return false;
	win->id = w;
	win->width = wa.width;
	win->height = wa.height;
	win->title = screen_title(sc, dpy, w);
	if (XGetClassHint(dpy, w, &ch)) {
		win->instance = screen_latin1(ch.res_name);
		win->class = screen_latin1(ch.res_class);
		XFree(ch.res_name);
		XFree(ch.res_class);
	}
	win->desktop = -2;
	if (xprop_card32(dpy, w, sc->atoms[SCREEN_WM_DESKTOP], XA_CARDINAL,
	        &desktop, 1) == 1)
		win->desktop = desktop == 0xffffffff ? -1 : (long)desktop;
	if (!XTranslateCoordinates(
	        dpy, w, root, 0, 0, &win->x, &win->y, &child)) {
		screen_win_clear(win);
		return false;
	}
	return true;
}

static void
screen_pack_str_or_nil(msgpack_packer *pk, const char *key, const char *s)
{
	proto_pack_str(pk, key);
	if (s == NULL)
		msgpack_pack_nil(pk);
	else
		proto_pack_str(pk, s);
}

static void
screen_pack_window(
    msgpack_packer *pk, const struct screen_win *win, unsigned long active)
{
	msgpack_pack_map(pk, 10);
	proto_pack_kv_u64(pk, "id", win->id);
	screen_pack_str_or_nil(pk, "title", win->title);
	screen_pack_str_or_nil(pk, "class", win->class);
	screen_pack_str_or_nil(pk, "instance", win->instance);
	proto_pack_kv_i64(pk, "x", win->x);
	proto_pack_kv_i64(pk, "y", win->y);
	proto_pack_kv_i64(pk, "width", win->width);
	proto_pack_kv_i64(pk, "height", win->height);
	proto_pack_kv_bool(pk, "active", active != None && win->id == active);
	proto_pack_str(pk, "desktop");
	if (win->desktop == -2)
		msgpack_pack_nil(pk);
	else
		msgpack_pack_int64(pk, win->desktop);
}

static void
screen_windows_cb(
    struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	struct screen *sc = arg;
	struct screen_win *wins;
	unsigned long active = None;
	msgpack_packer *pk;
	Window *cand;
	Display *dpy;
	bool managed;
	int n, kept = 0, i;

	if ((dpy = screen_begin(sc, sv, id, "desktop.windows", args)) == NULL)
		return;
	managed = screen_wm(sc, dpy);
	if (managed)
		xprop_card32(dpy, DefaultRootWindow(dpy),
		    sc->atoms[SCREEN_ACTIVE_WINDOW], XA_WINDOW, &active, 1);
	cand = screen_candidates(sc, dpy, managed, &n);
	wins = xreallocarray(NULL, n > 0 ? (size_t)n : 1, sizeof *wins);
	for (i = 0; i < n && kept < SCREEN_MAX_WINDOWS; i++)
		if (screen_window(sc, dpy, cand[i], managed, &wins[kept]))
			kept++;
	free(cand);
	if (xconn_get(sc->xc) == NULL)
		SCREEN_UNAVAILABLE(sv, id, sc);
	else {
		pk = serve_reply_begin(sv, id);
		msgpack_pack_map(pk, 1);
		proto_pack_str(pk, "windows");
		msgpack_pack_array(pk, (size_t)kept);
		for (i = 0; i < kept; i++)
			screen_pack_window(pk, &wins[i], active);
		serve_reply_end(sv);
	}
	for (i = 0; i < kept; i++)
		screen_win_clear(&wins[i]);
	free(wins);
}

void
screen_register(struct screen *sc, struct serve *sv)
{
	serve_add(sv, CATALOG_OP_DESKTOP_INFO, screen_info_cb, sc);
	serve_add(sv, CATALOG_OP_DESKTOP_CURSOR, screen_cursor_cb, sc);
	serve_add(sv, CATALOG_OP_DESKTOP_WINDOWS, screen_windows_cb, sc);
}
