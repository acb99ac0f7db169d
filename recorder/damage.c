/* damage: desktop.wait_change (see damage.h). One Damage object on the
 * root serves every pending wait; it exists only while one is pending,
 * so an idle desktop costs no events. */
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xfixes.h>
#include <string.h>

#include "clock.h"
#include "damage.h"
#include "log.h"
#include "opargs.h"
#include "proto.h"
#include "xmalloc.h"

/* One pending wait. */
struct damage_wait {
	uint64_t id;
	uint64_t gen; /* serve_generation when asked */
	struct opargs_rect region;
	uint64_t start; /* clock_mono_ms */
	uint64_t deadline;
};

struct damage {
	struct xconn *xc;
	struct serve *sv;
	uint64_t serial; /* the X connection what follows belongs to */
	bool ext;        /* it has DAMAGE */
	int event_base;
	Damage damage;       /* None while no wait is pending */
	XserverRegion parts; /* takes what changed; None until made */
	struct damage_wait waits[DAMAGE_MAX_WAITS];
	int nwaits;
};

static const char *const damage_keys[] = {"region", "timeout_ms", NULL};

struct damage *
damage_create(struct xconn *xc)
{
	struct damage *d;

	d = xcalloc(1, sizeof *d);
	d->xc = xc;
	return d;
}

void
damage_free(struct damage *d)
{
	free(d);
}

static void
damage_answer(struct damage *d, const struct damage_wait *w, uint64_t now,
    const XRectangle *area)
{
	msgpack_packer *pk;

	/* An id of an earlier connection to berthd: berthd failed it. */
	if (serve_generation(d->sv) != w->gen)
		return;
	pk = serve_reply_begin(d->sv, w->id);
	msgpack_pack_map(pk, area != NULL ? 3 : 2);
	proto_pack_kv_bool(pk, "changed", area != NULL);
	proto_pack_kv_u64(pk, "waited_ms", now - w->start);
	if (area != NULL) {
		proto_pack_str(pk, "area");
		msgpack_pack_map(pk, 4);
		proto_pack_kv_i64(pk, "x", area->x);
		proto_pack_kv_i64(pk, "y", area->y);
		proto_pack_kv_i64(pk, "width", area->width);
		proto_pack_kv_i64(pk, "height", area->height);
	}
	serve_reply_end(d->sv);
}

static void
damage_remove(struct damage *d, int i)
{
	memmove(&d->waits[i], &d->waits[i + 1],
	    (size_t)(d->nwaits - i - 1) * sizeof d->waits[0]);
	d->nwaits--;
}

/* Every wait fails: the connection they watched is gone, and with it
 * the Damage (a change meanwhile cannot be known). */
static void
damage_lost(struct damage *d)
{
	int i;

	for (i = 0; i < d->nwaits; i++)
		if (serve_generation(d->sv) == d->waits[i].gen)
			serve_reply_error(d->sv, d->waits[i].id,
			    PROTO_E_UNAVAILABLE,
			    "the connection to the X server was lost while "
			    "waiting (%s)",
			    d->xc->cause != NULL ? d->xc->cause
			                         : "reconnected");
	d->nwaits = 0;
	d->damage = None;
}

/* The live Display, with what belongs to it; NULL if X is not
 * connected. */
static Display *
damage_display(struct damage *d)
{
	Display *dpy = xconn_get(d->xc);
	int error;

	if (dpy == NULL || d->serial == d->xc->serial)
		return dpy;
	damage_lost(d);
	d->parts = None;
	d->serial = d->xc->serial;
	d->ext = XDamageQueryExtension(dpy, &d->event_base, &error);
	return dpy;
}

/* The bounding box of what of rects lies in r; false if none does. */
static bool
damage_hit(const struct opargs_rect *r, const XRectangle *rects, int n,
    XRectangle *box)
{
	int x0 = 0, y0 = 0, x1 = 0, y1 = 0, a, b, c, e, i;
	bool hit = false;

	for (i = 0; i < n; i++) {
		a = rects[i].x > r->x ? rects[i].x : r->x;
		b = rects[i].y > r->y ? rects[i].y : r->y;
		c = rects[i].x + rects[i].width;
		e = rects[i].y + rects[i].height;
		if (c > r->x + r->width)
			c = r->x + r->width;
		if (e > r->y + r->height)
			e = r->y + r->height;
		if (a >= c || b >= e)
			continue;
		if (!hit || a < x0)
			x0 = a;
		if (!hit || b < y0)
			y0 = b;
		if (!hit || c > x1)
			x1 = c;
		if (!hit || e > y1)
			y1 = e;
		hit = true;
	}
	box->x = (short)x0;
	box->y = (short)y0;
	box->width = (unsigned short)(x1 - x0);
	box->height = (unsigned short)(y1 - y0);
	return hit;
}

static void
damage_stop(struct damage *d, Display *dpy)
{
	if (d->damage != None) {
		XDamageDestroy(dpy, d->damage);
		XFlush(dpy);
	}
	d->damage = None;
}

/*
 * Takes what changed since the last look (which re-arms the report: the
 * server sends the next DamageNotify when the damage is no longer empty)
 * and answers every wait whose region it touches.
 */
static void
damage_collect(struct damage *d, Display *dpy)
{
	XRectangle *rects, box;
	uint64_t now;
	int n = 0, i;

	XDamageSubtract(dpy, d->damage, None, d->parts);
	rects = XFixesFetchRegion(dpy, d->parts, &n);
	if (rects == NULL)
		return;
	now = clock_mono_ms();
	for (i = 0; i < d->nwaits;) {
		if (damage_hit(&d->waits[i].region, rects, n, &box)) {
			damage_answer(d, &d->waits[i], now, &box);
			damage_remove(d, i);
		} else
			i++;
	}
	XFree(rects);
	if (d->nwaits == 0)
		damage_stop(d, dpy);
}

bool
damage_event(struct damage *d, const XEvent *ev)
{
	const XDamageNotifyEvent *de = (const XDamageNotifyEvent *)ev;
	Display *dpy;

	if (!d->ext || d->serial != d->xc->serial ||
	    ev->type != d->event_base + XDamageNotify)
		return false;
	/* Events of a Damage since destroyed may still be queued. */
	if (de->damage != d->damage || d->damage == None)
		return true;
	if ((dpy = xconn_get(d->xc)) != NULL)
		damage_collect(d, dpy);
	return true;
}

void
damage_timer(struct damage *d, uint64_t now)
{
	Display *dpy;
	int i;

	if (d->nwaits == 0)
		return;
	if ((dpy = damage_display(d)) == NULL) {
		damage_lost(d);
		return;
	}
	for (i = 0; i < d->nwaits; i++)
		if (now >= d->waits[i].deadline)
			break;
	if (i == d->nwaits)
		return;
	/* A change the server reported before the deadline may still be
	 * unread: look before saying nothing changed. */
	damage_collect(d, dpy);
	if (xconn_get(d->xc) == NULL) {
		damage_lost(d);
		return;
	}
	for (i = 0; i < d->nwaits;) {
		if (now >= d->waits[i].deadline) {
			damage_answer(d, &d->waits[i], clock_mono_ms(), NULL);
			damage_remove(d, i);
		} else
			i++;
	}
	if (d->nwaits == 0)
		damage_stop(d, dpy);
}

int
damage_wait_ms(const struct damage *d, uint64_t now)
{
	uint64_t first = UINT64_MAX;
	int i;

	if (d->nwaits == 0)
		return -1;
	for (i = 0; i < d->nwaits; i++)
		if (d->waits[i].deadline < first)
			first = d->waits[i].deadline;
	return first > now ? (int)(first - now) : 0;
}

#define DAMAGE_UNAVAILABLE(sv, id, d)                                          \
	serve_reply_error((sv), (id), PROTO_E_UNAVAILABLE,                     \
	    "the X server is not connected (%s)",                              \
	    (d)->xc->cause != NULL ? (d)->xc->cause : "it stopped answering")

/*
 * Starts watching for the wait to come. What changed before it is not
 * its business: with waits already pending, their changes are taken
 * (and answered) first; otherwise the Damage is made now, and emptied.
 */
static bool
damage_start(struct damage *d, Display *dpy)
{
	if (d->parts == None)
		d->parts = XFixesCreateRegion(dpy, NULL, 0);
	if (d->damage != None)
		damage_collect(d, dpy);
	if (d->damage == None) {
		d->damage = XDamageCreate(
		    dpy, DefaultRootWindow(dpy), XDamageReportNonEmpty);
		/* The server damages a window's whole area when the Damage
		 * is made, to have it drawn once; nothing changed. */
		XDamageSubtract(dpy, d->damage, None, None);
	}
	XSync(dpy, False);
	return xconn_get(d->xc) != NULL;
}

static void
damage_wait_cb(
    struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	struct damage *d = arg;
	int64_t timeout = DAMAGE_TIMEOUT_DEFAULT_MS;
	struct damage_wait *w;
	struct opargs_rect r;
	unsigned width, height, border, depth;
	char *cause = NULL;
	Window root;
	Display *dpy;
	int x, y, got;

	if (opargs_known(args, damage_keys, &cause) < 0 ||
	    opargs_int(args, "timeout_ms", 1, DAMAGE_TIMEOUT_MAX_MS, &timeout,
	        &cause) < 0)
		goto bad;
	if ((dpy = damage_display(d)) == NULL) {
		DAMAGE_UNAVAILABLE(sv, id, d);
		return;
	}
	if (!d->ext) {
		serve_reply_error(sv, id, PROTO_E_UNAVAILABLE,
		    "the X server has no DAMAGE extension");
		return;
	}
	if (!XGetGeometry(dpy, DefaultRootWindow(dpy), &root, &x, &y, &width,
	        &height, &border, &depth)) {
		DAMAGE_UNAVAILABLE(sv, id, d);
		return;
	}
	got = opargs_rect(args, "region", (int)width, (int)height, &r, &cause);
	if (got < 0)
		goto bad;
	if (got == 0)
		r = (struct opargs_rect){0, 0, (int)width, (int)height};
	if (d->nwaits == DAMAGE_MAX_WAITS) {
		serve_reply_error(sv, id, PROTO_E_UNAVAILABLE,
		    "%d waits are pending already: answer some first",
		    DAMAGE_MAX_WAITS);
		return;
	}
	if (!damage_start(d, dpy)) {
		damage_lost(d);
		DAMAGE_UNAVAILABLE(sv, id, d);
		return;
	}
	w = &d->waits[d->nwaits++];
	w->id = id;
	w->gen = serve_generation(sv);
	w->region = r;
	w->start = clock_mono_ms();
	w->deadline = w->start + (uint64_t)timeout;
	return;

bad:
	serve_reply_error(
	    sv, id, PROTO_E_BAD_ARGS, "desktop.wait_change: %s", cause);
	free(cause);
}

void
damage_register(struct damage *d, struct serve *sv)
{
	d->sv = sv;
	serve_add(sv, CATALOG_OP_DESKTOP_WAIT_CHANGE, damage_wait_cb, d);
}
