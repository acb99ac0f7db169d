/* xevlog: a small X client for the input tests. It maps a window, takes
 * the input focus and prints one line per input event that reaches it, so
 * that a test sees exactly what an application would. With --query it
 * prints instead which keys and buttons are down now, and exits.
 *
 *   xevlog [--geometry WxH+X+Y] [--override-redirect] [--selections]
 *                                     (default: the whole screen)
 *   xevlog --query
 *
 * Lines, each flushed as it is written (coordinates are the root's):
 *   READY                   mapped and focused: events count from here
 *   M x y                   pointer motion
 *   BP button x y           button press
 *   BR button               button release
 *   K keysym hex            key press: the keysym's name and the text
 *                           Xutf8LookupString gives, as hex UTF-8 ("-"
 *                           when there is none)
 *   KR keysym               key release
 *   MAP                     the keyboard map changed (MappingNotify)
 *   UNFOCUS                 the window lost the input focus
 *   SEL name                with --selections: the selection name
 *                           (PRIMARY, CLIPBOARD) has a new owner, as when
 *                           a VNC client's clipboard reaches the server
 * --query prints "KEYS name..." (the keys down, by the keysym of their
 * first level, or kcN when they have none) and "MASK 0x..." (the pointer's
 * modifier and button state). */
#include <X11/XKBlib.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/Xfixes.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XEVLOG_EVENTS                                                          \
	(KeyPressMask | KeyReleaseMask | ButtonPressMask | ButtonReleaseMask | \
	    PointerMotionMask | StructureNotifyMask | FocusChangeMask)

/* The options; on main's stack. */
struct xevlog_opts {
	bool query;
	bool override;
	bool selections;
	bool geometry; /* given: else the whole screen */
	int x, y;
	unsigned width, height;
};

static _Noreturn void
xevlog_usage(void)
{
	fprintf(stderr,
	    "usage: xevlog [--geometry WxH+X+Y] "
	    "[--override-redirect] [--selections] | --query\n");
	exit(2);
}

static void
xevlog_args(int argc, char **argv, struct xevlog_opts *o)
{
	int i, n;

	memset(o, 0, sizeof *o);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--query") == 0)
			o->query = true;
		else if (strcmp(argv[i], "--override-redirect") == 0)
			o->override = true;
		else if (strcmp(argv[i], "--selections") == 0)
			o->selections = true;
		else if (strcmp(argv[i], "--geometry") == 0 && i + 1 < argc) {
			n = 0;
			if (sscanf(argv[++i], "%ux%u%d%d%n", &o->width,
			        &o->height, &o->x, &o->y, &n) != 4 ||
			    argv[i][n] != '\0' || o->width == 0 ||
			    o->height == 0)
				xevlog_usage();
			o->geometry = true;
		} else
			xevlog_usage();
	}
}

static const char *
xevlog_keysym_name(KeySym sym, char *buf, size_t len)
{
	const char *name;

	if (sym == NoSymbol)
		return "NoSymbol";
	if ((name = XKeysymToString(sym)) != NULL)
		return name;
	snprintf(buf, len, "0x%lx", (unsigned long)sym);
	return buf;
}

static void
xevlog_query(Display *dpy)
{
	Window root = DefaultRootWindow(dpy), rw, cw;
	int rx, ry, wx, wy, kc, bit;
	char keys[32], buf[32];
	unsigned mask;
	KeySym sym;

	XQueryKeymap(dpy, keys);
	printf("KEYS");
	for (kc = 0; kc < 256; kc++) {
		bit = keys[kc / 8] & (1 << (kc % 8));
		if (bit == 0)
			continue;
		sym = XkbKeycodeToKeysym(dpy, (KeyCode)kc, 0, 0);
		if (sym == NoSymbol)
			printf(" kc%d", kc);
		else
			printf(" %s", xevlog_keysym_name(sym, buf, sizeof buf));
	}
	printf("\n");
	if (!XQueryPointer(dpy, root, &rw, &cw, &rx, &ry, &wx, &wy, &mask))
		mask = 0;
	printf("MASK 0x%x\n", mask);
}

static Window
xevlog_window(Display *dpy, const struct xevlog_opts *o)
{
	XSetWindowAttributes wa;
	int scr = DefaultScreen(dpy);
	Window w;

	memset(&wa, 0, sizeof wa);
	wa.override_redirect = o->override ? True : False;
	wa.background_pixel = WhitePixel(dpy, scr);
	wa.event_mask = XEVLOG_EVENTS;
	w = XCreateWindow(dpy, DefaultRootWindow(dpy), o->x, o->y, o->width,
	    o->height, 0, CopyFromParent, InputOutput, CopyFromParent,
	    CWOverrideRedirect | CWBackPixel | CWEventMask, &wa);
	XStoreName(dpy, w, "xevlog");
	XMapRaised(dpy, w);
	return w;
}

/* An input context without an input method server, so that
 * Xutf8LookupString turns any keysym into its UTF-8 text. */
static XIC
xevlog_ic(Display *dpy, Window w)
{
	XIM im;
	XIC ic;

	XSetLocaleModifiers("@im=none");
	if ((im = XOpenIM(dpy, NULL, NULL, NULL)) == NULL) {
		fprintf(stderr, "xevlog: XOpenIM failed\n");
		exit(1);
	}
	ic = XCreateIC(im, XNInputStyle, XIMPreeditNothing | XIMStatusNothing,
	    XNClientWindow, w, XNFocusWindow, w, NULL);
	if (ic == NULL) {
		fprintf(stderr, "xevlog: XCreateIC failed\n");
		exit(1);
	}
	XSetICFocus(ic);
	return ic;
}

static void
xevlog_key(XIC ic, XKeyEvent *ev)
{
	char text[64], buf[32];
	Status status;
	KeySym sym = NoSymbol;
	int n, i;

	n = Xutf8LookupString(ic, ev, text, sizeof text, &sym, &status);
	if (status != XLookupChars && status != XLookupBoth)
		n = 0;
	if (status != XLookupKeySym && status != XLookupBoth)
		sym = NoSymbol;
	printf("K %s ", xevlog_keysym_name(sym, buf, sizeof buf));
	for (i = 0; i < n; i++)
		printf("%02x", (unsigned char)text[i]);
	printf("%s\n", n > 0 ? "" : "-");
}

static void
xevlog_release(XKeyEvent *ev)
{
	char buf[32];
	KeySym sym = NoSymbol;

	XLookupString(ev, NULL, 0, &sym, NULL);
	printf("KR %s\n", xevlog_keysym_name(sym, buf, sizeof buf));
}

/* Asks to be told of new owners of PRIMARY and CLIPBOARD; the event
 * base of XFixes, or -1 if the server has none. */
static int
xevlog_selections(Display *dpy, Window w)
{
	static const char *const names[] = {"PRIMARY", "CLIPBOARD"};
	int base, err;
	size_t i;

	if (!XFixesQueryExtension(dpy, &base, &err)) {
		fprintf(stderr, "xevlog: no XFixes\n");
		exit(1);
	}
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		XFixesSelectSelectionInput(dpy, w,
		    XInternAtom(dpy, names[i], False),
		    XFixesSetSelectionOwnerNotifyMask);
	return base;
}

static void
xevlog_selection(Display *dpy, const XEvent *ev)
{
	const XFixesSelectionNotifyEvent *sn =
	    (const XFixesSelectionNotifyEvent *)ev;
	char *name = XGetAtomName(dpy, sn->selection);

	printf("SEL %s\n", name != NULL ? name : "?");
	XFree(name);
}

static _Noreturn void
xevlog_loop(Display *dpy, Window w, bool selections)
{
	bool mapped = false, ready = false;
	XIC ic = xevlog_ic(dpy, w);
	int fixes = selections ? xevlog_selections(dpy, w) : -1;
	XEvent ev;

	for (;;) {
		XNextEvent(dpy, &ev);
		if (XFilterEvent(&ev, None))
			continue;
		if (fixes >= 0 && ev.type == fixes + XFixesSelectionNotify) {
			xevlog_selection(dpy, &ev);
			continue;
		}
		switch (ev.type) {
		case MapNotify:
			if (ev.xmap.window == w && !mapped) {
				mapped = true;
				XSetInputFocus(
				    dpy, w, RevertToPointerRoot, CurrentTime);
			}
			break;
		case FocusIn:
			if (mapped && !ready) {
				ready = true;
				printf("READY\n");
			}
			break;
		case FocusOut:
			if (ready && ev.xfocus.mode == NotifyNormal)
				printf("UNFOCUS\n");
			break;
		case MappingNotify:
			XRefreshKeyboardMapping(&ev.xmapping);
			if (ready)
				printf("MAP\n");
			break;
		case MotionNotify:
			printf(
			    "M %d %d\n", ev.xmotion.x_root, ev.xmotion.y_root);
			break;
		case ButtonPress:
			printf("BP %u %d %d\n", ev.xbutton.button,
			    ev.xbutton.x_root, ev.xbutton.y_root);
			break;
		case ButtonRelease: printf("BR %u\n", ev.xbutton.button); break;
		case KeyPress: xevlog_key(ic, &ev.xkey); break;
		case KeyRelease: xevlog_release(&ev.xkey); break;
		}
	}
}

int
main(int argc, char **argv)
{
	struct xevlog_opts o;
	Display *dpy;
	int scr;

	xevlog_args(argc, argv, &o);
	/* Any UTF-8 locale will do: the text printed is UTF-8 whatever
	 * the locale, but the input context needs one Xlib supports. */
	if (setlocale(LC_CTYPE, "") == NULL || !XSupportsLocale())
		setlocale(LC_CTYPE, "C.UTF-8");
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((dpy = XOpenDisplay(NULL)) == NULL) {
		fprintf(stderr, "xevlog: cannot open display %s\n",
		    XDisplayName(NULL));
		return 1;
	}
	if (o.query) {
		xevlog_query(dpy);
		XCloseDisplay(dpy);
		return 0;
	}
	scr = DefaultScreen(dpy);
	if (!o.geometry) {
		o.width = (unsigned)DisplayWidth(dpy, scr);
		o.height = (unsigned)DisplayHeight(dpy, scr);
	}
	xevlog_loop(dpy, xevlog_window(dpy, &o), o.selections);
}
