/* xpaint: a test X client that shows known colours at known places. It
 * maps one override-redirect window (no window manager needed) filled
 * with a background and rectangles given on the command line, and
 * changes them on command lines read from stdin, so that a test can
 * check screenshots pixel by pixel and see a change happen on cue.
 *
 *   xpaint [-display D] [-geometry WxH+X+Y] [-title T] [-class INST,CLASS]
 *          [-bg #rrggbb] [-image FILE.ppm] [X,Y,W,H,#rrggbb ...]
 *
 * Rectangles are in window coordinates; an image (binary PPM, as the
 * benchmarks make) is drawn over the background from the window's corner.
 * On stdin, one command a line:
 *   color N #rrggbb         rectangle N (from 0) takes the colour; only
 *                           its area is repainted
 *   rect X,Y,W,H,#rrggbb    a rectangle more, drawn on top
 *   bg #rrggbb              the background
 *   title TEXT              a new title (WM_NAME and _NET_WM_NAME)
 * Once the window is drawn it prints "ready 0x<window id>"; after each
 * command, once the server has drawn it, "ok" (or "error: why"). End of
 * stdin ends it. */
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XPAINT_MAX_RECTS 64
#define XPAINT_LINE_MAX 1024
#define XPAINT_IMAGE_MAX 8192

struct xpaint_rect {
	int x, y;
	unsigned w, h;
	unsigned long pixel;
};

/* The program's state, on main's stack. */
struct xpaint {
	Display *dpy;
	Window win;
	GC gc;
	unsigned long bg;
	Pixmap image; /* None, or the -image picture */
	unsigned image_w, image_h;
	unsigned width, height;
	struct xpaint_rect rects[XPAINT_MAX_RECTS];
	int nrects;
};

static _Noreturn void __attribute__((format(printf, 1, 2)))
xpaint_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "xpaint: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

/* "#rrggbb" as a pixel of the default colormap; -1 if malformed. */
static int
xpaint_color(struct xpaint *xp, const char *s, unsigned long *pixel)
{
	unsigned r, g, b;
	XColor c;
	char end;

	if (sscanf(s, "#%2x%2x%2x%c", &r, &g, &b, &end) != 3 || strlen(s) != 7)
		return -1;
	c.red = (unsigned short)(r * 0x101);
	c.green = (unsigned short)(g * 0x101);
	c.blue = (unsigned short)(b * 0x101);
	c.flags = DoRed | DoGreen | DoBlue;
	if (!XAllocColor(
	        xp->dpy, DefaultColormap(xp->dpy, DefaultScreen(xp->dpy)), &c))
		return -1;
	*pixel = c.pixel;
	return 0;
}

/* "X,Y,W,H,#rrggbb" into rect; -1 if malformed. */
static int
xpaint_parse_rect(struct xpaint *xp, const char *s, struct xpaint_rect *r)
{
	char color[16];
	int n = 0;

	if (sscanf(s, "%d,%d,%u,%u,%15s%n", &r->x, &r->y, &r->w, &r->h, color,
	        &n) != 5 ||
	    s[n] != '\0' || r->w == 0 || r->h == 0)
		return -1;
	return xpaint_color(xp, color, &r->pixel);
}

/* Draws the background and every rectangle, within clip (NULL: the
 * whole window). A colour change repaints only its own rectangle, so
 * that what the server reports as changed is known. */
static void
xpaint_draw_in(struct xpaint *xp, const struct xpaint_rect *clip)
{
	XRectangle r;
	int i;

	if (clip != NULL) {
		r.x = (short)clip->x;
		r.y = (short)clip->y;
		r.width = (unsigned short)clip->w;
		r.height = (unsigned short)clip->h;
		XSetClipRectangles(xp->dpy, xp->gc, 0, 0, &r, 1, Unsorted);
	}
	XSetForeground(xp->dpy, xp->gc, xp->bg);
	XFillRectangle(xp->dpy, xp->win, xp->gc, 0, 0, xp->width, xp->height);
	if (xp->image != None)
		XCopyArea(xp->dpy, xp->image, xp->win, xp->gc, 0, 0,
		    xp->image_w, xp->image_h, 0, 0);
	for (i = 0; i < xp->nrects; i++) {
		XSetForeground(xp->dpy, xp->gc, xp->rects[i].pixel);
		XFillRectangle(xp->dpy, xp->win, xp->gc, xp->rects[i].x,
		    xp->rects[i].y, xp->rects[i].w, xp->rects[i].h);
	}
	if (clip != NULL)
		XSetClipMask(xp->dpy, xp->gc, None);
	XSync(xp->dpy, False);
}

static void
xpaint_draw(struct xpaint *xp)
{
	xpaint_draw_in(xp, NULL);
}

static void
xpaint_title(struct xpaint *xp, const char *title)
{
	XStoreName(xp->dpy, xp->win, title);
	XChangeProperty(xp->dpy, xp->win,
	    XInternAtom(xp->dpy, "_NET_WM_NAME", False),
	    XInternAtom(xp->dpy, "UTF8_STRING", False), 8, PropModeReplace,
	    (const unsigned char *)title, (int)strlen(title));
}

/* One command line from stdin; answers on stdout. */
static void
xpaint_command(struct xpaint *xp, char *line)
{
	const struct xpaint_rect *clip = NULL;
	struct xpaint_rect r;
	const char *err = NULL;
	char color[16];
	int n;

	if (sscanf(line, "color %d %15s", &n, color) == 2) {
		if (n < 0 || n >= xp->nrects)
			err = "no such rectangle";
		else if (xpaint_color(xp, color, &xp->rects[n].pixel) < 0)
			err = "bad colour";
		else
			clip = &xp->rects[n];
	} else if (strncmp(line, "rect ", 5) == 0) {
		if (xp->nrects == XPAINT_MAX_RECTS)
			err = "too many rectangles";
		else if (xpaint_parse_rect(xp, line + 5, &r) < 0)
			err = "bad rectangle";
		else
			xp->rects[xp->nrects++] = r;
	} else if (sscanf(line, "bg %15s", color) == 1) {
		if (xpaint_color(xp, color, &xp->bg) < 0)
			err = "bad colour";
	} else if (strncmp(line, "title ", 6) == 0)
		xpaint_title(xp, line + 6);
	else
		err = "unknown command";
	if (err == NULL) {
		xpaint_draw_in(xp, clip);
		printf("ok\n");
	} else
		printf("error: %s\n", err);
	fflush(stdout);
}

/* The shift of an 8-bit colour mask; dies on other visuals. */
static int
xpaint_shift(unsigned long mask)
{
	int s;

	for (s = 0; s <= 24; s += 8)
		if (mask == 0xfful << s)
			return s;
	xpaint_die("a visual without 8-bit channels (mask 0x%lx)", mask);
}

/* Reads a binary PPM (P6, maxval 255) into a pixmap. */
static void
xpaint_image(struct xpaint *xp, const char *path)
{
	Visual *vis = DefaultVisual(xp->dpy, DefaultScreen(xp->dpy));
	int depth = DefaultDepth(xp->dpy, DefaultScreen(xp->dpy));
	unsigned w, h, max, x, y;
	unsigned char *rgb, *p;
	int rs, gs, bs;
	XImage *img;
	FILE *f;

	if ((f = fopen(path, "rb")) == NULL)
		xpaint_die("cannot open %s", path);
	if (fscanf(f, "P6 %u %u %u", &w, &h, &max) != 3 || max != 255 ||
	    fgetc(f) == EOF || w == 0 || h == 0 || w > XPAINT_IMAGE_MAX ||
	    h > XPAINT_IMAGE_MAX)
		xpaint_die("%s is not a binary PPM of at most %dx%d", path,
		    XPAINT_IMAGE_MAX, XPAINT_IMAGE_MAX);
	rgb = malloc((size_t)w * h * 3);
	if (rgb == NULL || fread(rgb, 3, (size_t)w * h, f) != (size_t)w * h)
		xpaint_die("%s is cut short", path);
	fclose(f);
	rs = xpaint_shift(vis->red_mask);
	gs = xpaint_shift(vis->green_mask);
	bs = xpaint_shift(vis->blue_mask);
	img = XCreateImage(
	    xp->dpy, vis, (unsigned)depth, ZPixmap, 0, NULL, w, h, 32, 0);
	if (img == NULL ||
	    (img->data = malloc((size_t)img->bytes_per_line * h)) == NULL)
		xpaint_die("out of memory");
	for (y = 0, p = rgb; y < h; y++)
		for (x = 0; x < w; x++, p += 3)
			XPutPixel(img, (int)x, (int)y,
			    (unsigned long)p[0] << rs |
			        (unsigned long)p[1] << gs |
			        (unsigned long)p[2] << bs);
	free(rgb);
	xp->image = XCreatePixmap(
	    xp->dpy, DefaultRootWindow(xp->dpy), w, h, (unsigned)depth);
	XPutImage(xp->dpy, xp->image,
	    DefaultGC(xp->dpy, DefaultScreen(xp->dpy)), img, 0, 0, 0, 0, w, h);
	XDestroyImage(img);
	xp->image_w = w;
	xp->image_h = h;
}

static void
xpaint_open(struct xpaint *xp, const char *geometry, const char *title,
    const char *class)
{
	XSetWindowAttributes wa;
	XClassHint ch;
	char *inst, *comma;
	int x = 0, y = 0;
	unsigned w = 200, h = 200;

	XParseGeometry(geometry, &x, &y, &w, &h);
	xp->width = w;
	xp->height = h;
	wa.override_redirect = True;
	wa.background_pixel = xp->bg;
	wa.event_mask = ExposureMask | StructureNotifyMask;
	xp->win = XCreateWindow(xp->dpy, DefaultRootWindow(xp->dpy), x, y, w, h,
	    0, CopyFromParent, InputOutput, CopyFromParent,
	    CWOverrideRedirect | CWBackPixel | CWEventMask, &wa);
	xpaint_title(xp, title);
	inst = strdup(class);
	if (inst == NULL)
		xpaint_die("out of memory");
	comma = strchr(inst, ',');
	if (comma != NULL)
		*comma++ = '\0';
	ch.res_name = inst;
	ch.res_class = comma != NULL ? comma : inst;
	XSetClassHint(xp->dpy, xp->win, &ch);
	free(inst);
	xp->gc = XCreateGC(xp->dpy, xp->win, 0, NULL);
	XMapRaised(xp->dpy, xp->win);
}

/* Handles what the server sent: exposures are redrawn. Returns once the
 * window is mapped when wait_map is set. */
static void
xpaint_events(struct xpaint *xp, int wait_map)
{
	XEvent ev;

	while (wait_map || XPending(xp->dpy) > 0) {
		XNextEvent(xp->dpy, &ev);
		if (ev.type == MapNotify)
			wait_map = 0;
		else if (ev.type == Expose && ev.xexpose.count == 0)
			xpaint_draw(xp);
	}
}

int
main(int argc, char **argv)
{
	const char *display = NULL, *geometry = "200x200+0+0";
	const char *title = "xpaint", *class = "xpaint,XPaint";
	const char *bg = "#000000", *image = NULL;
	char line[XPAINT_LINE_MAX];
	struct xpaint xp;
	struct pollfd pfd[2];
	size_t len = 0;
	ssize_t got;
	char *nl;
	int i;

	memset(&xp, 0, sizeof xp);
	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		if (i + 1 >= argc)
			xpaint_die("%s needs a value", argv[i]);
		if (strcmp(argv[i], "-display") == 0)
			display = argv[i + 1];
		else if (strcmp(argv[i], "-geometry") == 0)
			geometry = argv[i + 1];
		else if (strcmp(argv[i], "-title") == 0)
			title = argv[i + 1];
		else if (strcmp(argv[i], "-class") == 0)
			class = argv[i + 1];
		else if (strcmp(argv[i], "-bg") == 0)
			bg = argv[i + 1];
		else if (strcmp(argv[i], "-image") == 0)
			image = argv[i + 1];
		else
			xpaint_die("unknown option %s", argv[i]);
	}
	if ((xp.dpy = XOpenDisplay(display)) == NULL)
		xpaint_die("cannot open display %s", XDisplayName(display));
	if (xpaint_color(&xp, bg, &xp.bg) < 0)
		xpaint_die("bad colour %s", bg);
	if (image != NULL)
		xpaint_image(&xp, image);
	for (; i < argc; i++) {
		if (xp.nrects == XPAINT_MAX_RECTS)
			xpaint_die("too many rectangles");
		if (xpaint_parse_rect(&xp, argv[i], &xp.rects[xp.nrects++]) < 0)
			xpaint_die("bad rectangle %s", argv[i]);
	}
	xpaint_open(&xp, geometry, title, class);
	xpaint_events(&xp, 1);
	xpaint_draw(&xp);
	printf("ready 0x%lx\n", xp.win);
	fflush(stdout);

	pfd[0].fd = ConnectionNumber(xp.dpy);
	pfd[0].events = POLLIN;
	pfd[1].fd = STDIN_FILENO;
	pfd[1].events = POLLIN;
	for (;;) {
		xpaint_events(&xp, 0);
		if (poll(pfd, 2, -1) < 0)
			continue;
		if (!(pfd[1].revents & (POLLIN | POLLHUP)))
			continue;
		got = read(STDIN_FILENO, line + len, sizeof line - 1 - len);
		if (got <= 0)
			break;
		len += (size_t)got;
		line[len] = '\0';
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			xpaint_command(&xp, line);
			len -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, len + 1);
		}
		if (len == sizeof line - 1)
			xpaint_die("a command line is too long");
	}
	XCloseDisplay(xp.dpy);
	return 0;
}
