/* capture: the screen's pixels (see capture.h). Per X connection, owns
 * the shared memory segment the server copies the screen into, and
 * knows whether XFixes can tell where the pointer is. */
#include <sys/ipc.h>
#include <sys/shm.h>

#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xfixes.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "capture.h"
#include "log.h"
#include "xmalloc.h"

struct capture {
	struct xconn *xc;
	uint64_t serial; /* the X connection what follows belongs to */
	bool tried;      /* MIT-SHM tried on it */
	bool use_shm;    /* and it works: the segment is attached */
	bool fixes;      /* XFixes is there: the pointer can be drawn */
	XShmSegmentInfo seg;
	size_t segsize;
};

struct capture *
capture_create(struct xconn *xc)
{
	struct capture *cp;

	cp = xcalloc(1, sizeof *cp);
	cp->xc = xc;
	cp->seg.shmid = -1;
	return cp;
}

/* Lets go of the segment. dpy: the server holds it too, on a live
 * connection; otherwise (NULL) it went with the connection. */
static void
capture_segment_drop(struct capture *cp, Display *dpy)
{
	if (cp->seg.shmaddr == NULL)
		return;
	if (dpy != NULL) {
		XShmDetach(dpy, &cp->seg);
		XSync(dpy, False);
	}
	shmdt(cp->seg.shmaddr);
	cp->seg.shmaddr = NULL;
	cp->seg.shmid = -1;
	cp->segsize = 0;
}

void
capture_free(struct capture *cp)
{
	Display *dpy = xconn_get(cp->xc);

	capture_segment_drop(cp, cp->serial == cp->xc->serial ? dpy : NULL);
	free(cp);
}

Display *
capture_display(struct capture *cp)
{
	Display *dpy = xconn_get(cp->xc);
	int base, error;

	if (dpy == NULL || cp->serial == cp->xc->serial)
		return dpy;
	capture_segment_drop(cp, NULL);
	cp->serial = cp->xc->serial;
	cp->tried = cp->use_shm = false;
	cp->fixes = XFixesQueryExtension(dpy, &base, &error);
	return dpy;
}

/*
 * Makes a segment of size bytes and has the server attach it. The
 * segment is marked for removal at once: it then goes away when both
 * sides have let go, even if this process is killed. An attach the
 * server refuses (it runs on another host, or in another IPC namespace)
 * comes back as a protocol error, seen by XSync through the error count.
 */
static bool
capture_segment_make(struct capture *cp, Display *dpy, size_t size)
{
	unsigned long errors = cp->xc->errors;
	void *addr;
	int id;

	if ((id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600)) == -1) {
		log_warn("shmget of %zu bytes: %s", size, strerror(errno));
		return false;
	}
	addr = shmat(id, NULL, 0);
	if (addr == (void *)-1) {
		log_warn("shmat: %s", strerror(errno));
		shmctl(id, IPC_RMID, NULL);
		return false;
	}
	cp->seg.shmid = id;
	cp->seg.shmaddr = addr;
	cp->seg.readOnly = False;
	XShmAttach(dpy, &cp->seg);
	XSync(dpy, False);
	shmctl(id, IPC_RMID, NULL);
	if (xconn_get(cp->xc) == NULL || cp->xc->errors != errors) {
		shmdt(addr);
		cp->seg.shmaddr = NULL;
		cp->seg.shmid = -1;
		return false;
	}
	cp->segsize = size;
	return true;
}

/* The bytes a ZPixmap image of the whole screen takes. */
static size_t
capture_screen_bytes(Display *dpy, const XWindowAttributes *wa)
{
	XImage *img;
	size_t n;

	img = XShmCreateImage(dpy, wa->visual, (unsigned)wa->depth, ZPixmap,
	    NULL, NULL, (unsigned)wa->width, (unsigned)wa->height);
	if (img == NULL)
		return 0;
	n = (size_t)img->bytes_per_line * (size_t)img->height;
	XDestroyImage(img);
	return n;
}

/* Whether to capture with MIT-SHM: tried once per connection, and the
 * segment grown when the screen has. */
static bool
capture_shm_ready(struct capture *cp, Display *dpy, const XWindowAttributes *wa)
{
	size_t need;

	if (cp->tried && !cp->use_shm)
		return false;
	need = capture_screen_bytes(dpy, wa);
	if (cp->use_shm && cp->segsize >= need)
		return true;
	capture_segment_drop(cp, cp->use_shm ? dpy : NULL);
	cp->tried = true;
	cp->use_shm = need > 0 && XShmQueryExtension(dpy) &&
	    capture_segment_make(cp, dpy, need);
	if (!cp->use_shm)
		log_info("capturing without MIT-SHM on X server %s (slower)",
		    cp->xc->name);
	return cp->use_shm;
}

bool
capture_shm(struct capture *cp)
{
	XWindowAttributes wa;
	Display *dpy;

	if ((dpy = capture_display(cp)) == NULL)
		return false;
	if (!XGetWindowAttributes(dpy, DefaultRootWindow(dpy), &wa))
		return false;
	return capture_shm_ready(cp, dpy, &wa);
}

/* The region's pixels: into the segment, or by a plain GetImage. */
static XImage *
capture_pixels(struct capture *cp, Display *dpy, const XWindowAttributes *wa,
    const struct opargs_rect *r)
{
	Window root = DefaultRootWindow(dpy);
	XImage *img;

	if (!capture_shm_ready(cp, dpy, wa))
		return XGetImage(dpy, root, r->x, r->y, (unsigned)r->width,
		    (unsigned)r->height, AllPlanes, ZPixmap);
	img = XShmCreateImage(dpy, wa->visual, (unsigned)wa->depth, ZPixmap,
	    NULL, &cp->seg, (unsigned)r->width, (unsigned)r->height);
	if (img == NULL)
		return NULL;
	img->data = cp->seg.shmaddr;
	if ((size_t)img->bytes_per_line * (size_t)img->height > cp->segsize ||
	    !XShmGetImage(dpy, root, img, r->x, r->y, AllPlanes)) {
		img->data = NULL;
		XDestroyImage(img);
		return NULL;
	}
	return img;
}

void
capture_release(struct capture *cp, XImage *img)
{
	if (img->data == cp->seg.shmaddr)
		img->data = NULL;
	XDestroyImage(img);
}

enum AVPixelFormat
capture_pixfmt(const XImage *img)
{
	bool le = img->byte_order == LSBFirst;

	if (img->bits_per_pixel == 32 && img->green_mask == 0xff00) {
		if (img->red_mask == 0xff0000 && img->blue_mask == 0xff)
			return le ? AV_PIX_FMT_BGR0 : AV_PIX_FMT_0RGB;
		if (img->red_mask == 0xff && img->blue_mask == 0xff0000)
			return le ? AV_PIX_FMT_RGB0 : AV_PIX_FMT_0BGR;
	}
	if (img->bits_per_pixel == 24 && img->green_mask == 0xff00 &&
	    img->red_mask == 0xff0000 && img->blue_mask == 0xff)
		return le ? AV_PIX_FMT_BGR24 : AV_PIX_FMT_RGB24;
	if (img->bits_per_pixel == 16 && img->red_mask == 0xf800 &&
	    img->green_mask == 0x7e0 && img->blue_mask == 0x1f)
		return le ? AV_PIX_FMT_RGB565LE : AV_PIX_FMT_RGB565BE;
	return AV_PIX_FMT_NONE;
}

/* The shift of an 8-bit channel mask, or -1 if it is not one. */
static int
capture_shift(unsigned long mask)
{
	int s;

	for (s = 0; s <= 24; s += 8)
		if (mask == 0xfful << s)
			return s;
	return -1;
}

/* One channel of a pixel with the pointer's premultiplied colour over it. */
static uint32_t
capture_over(uint32_t px, int shift, unsigned c, unsigned a)
{
	unsigned v = (px >> shift) & 0xff;

	v = c + v * (255 - a) / 255;
	return (uint32_t)(v > 255 ? 255 : v) << shift;
}

/*
 * Draws the pointer into a 32-bit image of region r, where XFixes says it
 * is. The server's picture has no pointer in it (it is a sprite drawn on
 * the way out), so a capture without this would not show what a user
 * sees. XFixes gives ARGB with premultiplied alpha.
 */
static void
capture_pointer(Display *dpy, XImage *img, const struct opargs_rect *r)
{
	int rs = capture_shift(img->red_mask),
	    gs = capture_shift(img->green_mask);
	int bs = capture_shift(img->blue_mask), left, top, i, j, x, y;
	XFixesCursorImage *ci;
	uint32_t *px, c;
	unsigned a;

	if (img->bits_per_pixel != 32 || rs < 0 || gs < 0 || bs < 0 ||
	    img->byte_order !=
	        (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? LSBFirst
	                                                   : MSBFirst))
		return;
	if ((ci = XFixesGetCursorImage(dpy)) == NULL)
		return;
	left = ci->x - ci->xhot - r->x;
	top = ci->y - ci->yhot - r->y;
	for (j = 0; j < ci->height; j++) {
		y = top + j;
		if (y < 0 || y >= img->height)
			continue;
		px = (uint32_t *)(img->data + (size_t)y * img->bytes_per_line);
		for (i = 0; i < ci->width; i++) {
			x = left + i;
			c = (uint32_t)ci->pixels[j * ci->width + i];
			a = c >> 24;
			if (x < 0 || x >= img->width || a == 0)
				continue;
			px[x] = capture_over(px[x], rs, (c >> 16) & 0xff, a) |
			    capture_over(px[x], gs, (c >> 8) & 0xff, a) |
			    capture_over(px[x], bs, c & 0xff, a);
		}
	}
	XFree(ci);
}

XImage *
capture_grab(struct capture *cp, Display *dpy, const XWindowAttributes *wa,
    const struct opargs_rect *r, bool cursor)
{
	XImage *img;

	img = capture_pixels(cp, dpy, wa, r);
	if (img != NULL && cursor && cp->fixes)
		capture_pointer(dpy, img, r);
	return img;
}
