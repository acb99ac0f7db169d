/* record: the record.* ops (see record.h). Each recording is a state
 * machine: recording (captured on its timer) → finishing (the encoder
 * thread drains, writes the trailer and remuxes) → publishing (berthd
 * copies the file into its artifact store) → published, or failed from
 * any of them. One Damage object on the root serves every running
 * recording. */
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xfixes.h>
#include <sys/stat.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "log.h"
#include "opargs.h"
#include "proto.h"
#include "rand.h"
#include "record.h"
#include "xmalloc.h"

#define RECORD_FPS_DEFAULT 10
#define RECORD_FPS_MAX 30
#define RECORD_SECONDS_DEFAULT 3600
#define RECORD_SECONDS_MAX 86400
#define RECORD_BYTES_MIN (1LL << 20)
#define RECORD_BYTES_DEFAULT (1LL << 30)
#define RECORD_BYTES_MAX (4LL << 30)
#define RECORD_QUALITY_DEFAULT 60
/* Stops waiting for one recording's end, at most. */
#define RECORD_STOPS_MAX 8
/* How far from the region the pointer may be and still be drawn in it
 * (the largest cursor images are 64 pixels a side). */
#define RECORD_POINTER_MARGIN 64
/* How often a finishing recording's thread is looked at, and how soon a
 * request berthd could not take is asked again. */
#define RECORD_POLL_US 20000
#define RECORD_RETRY_US 500000

enum record_state {
	RECORD_RECORDING,
	RECORD_FINISHING,
	RECORD_PUBLISHING,
	RECORD_PUBLISHED,
	RECORD_FAILED,
};
/* As record.status says them: publishing is still finishing. */
static const char *const record_state_names[] = {
    "recording", "finishing", "finishing", "published", "failed"};

/* Events still to be told to berthd, in this order. */
#define RECORD_EV_STARTED 0x1u
#define RECORD_EV_PUBLISHED 0x2u
#define RECORD_EV_FAILED 0x4u

/* The reference berthd answered artifact.publish with. */
struct record_artifact {
	char id[65];
	char sha256[65];
	uint64_t size;
	char media_type[128];
	char name[256];
};

/* A record.stop waiting for the file to be published. */
struct record_stop {
	uint64_t id;
	uint64_t gen; /* serve_generation when asked */
};

/* One recording; owned by record, freed once ended and nothing of it
 * waits for berthd (asked == 0, emit == 0). */
struct record_rec {
	struct record *r;
	char id[9];
	enum record_state state;
	const char *end;  /* why it ended; NULL while recording */
	char *reason;     /* failed: why */
	uint64_t started; /* ms since the epoch of the video's time 0 */
	uint64_t t0;      /* record_now_us of the video's time 0 */
	uint64_t serial;  /* the X connection it captures on */
	int fps;
	struct opargs_rect region; /* as captured: even width and height */
	enum AVPixelFormat format;
	int64_t max_ms;
	uint64_t max_bytes;
	char *path;  /* the fragmented file */
	char *final; /* the plain file, published */
	struct encode *enc;
	char encoder[32];
	uint64_t next_us; /* the next look */
	bool changed;     /* damage in the region since the last capture */
	int px, py;       /* the pointer at the last capture */
	int64_t last_pts;
	uint64_t frames;
	uint64_t dropped;
	uint64_t bytes;
	uint64_t duration_ms;
	struct record_artifact art;
	struct record_stop stops[RECORD_STOPS_MAX];
	int nstops;
	unsigned emit;     /* RECORD_EV_* not yet told */
	int asked;         /* requests of its own awaiting berthd's answer */
	bool publishing;   /* artifact.publish awaits its answer */
	uint64_t retry_us; /* when to ask artifact.publish again */
};

struct record {
	struct xconn *xc;
	struct capture *cp;
	struct serve *sv;
	char *dir;                            /* NULL: nowhere for files */
	struct record_rec *recs[RECORD_KEEP]; /* oldest first */
	int nrecs;
	uint64_t serial; /* the X connection what follows belongs to */
	bool ext;        /* it has DAMAGE */
	int event_base;
	Damage damage;       /* None while nothing records */
	XserverRegion parts; /* takes what changed; None until made */
	bool notified;       /* a DamageNotify came since the last look */
};

/* One of record's own requests to berthd: what the answer is for. */
struct record_ask {
	struct record_rec *rec;
	unsigned ev; /* the event told, or 0 for artifact.publish */
};

static const char *const record_start_keys[] = {
    "fps", "region", "max_seconds", "max_bytes", "quality", NULL};
static const char *const record_id_keys[] = {"id", NULL};

static void record_emit(struct record *r, struct record_rec *rec);

static uint64_t
record_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

struct record *
record_create(struct xconn *xc, struct capture *cp, const char *dir)
{
	const char *state = getenv("BERTH_STATE_DIR");
	struct record *r;
	char cwd[4096];

	r = xcalloc(1, sizeof *r);
	r->xc = xc;
	r->cp = cp;
	if (dir == NULL && state != NULL && *state != '\0')
		r->dir = xasprintf("%s/recordings", state);
	else if (dir != NULL)
		r->dir = xstrdup(dir);
	/* berthd takes absolute paths only (artifact.publish). */
	if (r->dir != NULL && r->dir[0] != '/' &&
	    getcwd(cwd, sizeof cwd) != NULL) {
		dir = r->dir;
		r->dir = xasprintf("%s/%s", cwd, dir);
		free((char *)dir);
	}
	return r;
}

static void
record_unlink(struct record_rec *rec)
{
	if (rec->path != NULL)
		unlink(rec->path);
	if (rec->final != NULL)
		unlink(rec->final);
}

static void
record_rec_free(struct record_rec *rec)
{
	free(rec->reason);
	free(rec->path);
	free(rec->final);
	free(rec);
}

void
record_free(struct record *r)
{
	struct record_rec *rec;
	char *cause = NULL;
	int i;

	for (i = 0; i < r->nrecs; i++) {
		rec = r->recs[i];
		if (rec->enc != NULL) {
			/* Finished as a fragmented file, left for whoever
			 * looks: there is nobody to publish it to now. */
			if (rec->state == RECORD_RECORDING)
				encode_finish(rec->enc,
				    (int64_t)(record_now_us() - rec->t0) / 1000,
				    false);
			if (encode_free(rec->enc, &cause) < 0) {
				log_warn("recording %s: %s", rec->id, cause);
				free(cause);
				cause = NULL;
			}
			log_info("recording %s left unpublished in %s", rec->id,
			    rec->path);
		}
		record_rec_free(rec);
	}
	free(r->dir);
	free(r);
}

/* -- packing */

static void
record_pack_region(msgpack_packer *pk, const struct opargs_rect *g)
{
	proto_pack_str(pk, "region");
	msgpack_pack_map(pk, 4);
	proto_pack_kv_i64(pk, "x", g->x);
	proto_pack_kv_i64(pk, "y", g->y);
	proto_pack_kv_i64(pk, "width", g->width);
	proto_pack_kv_i64(pk, "height", g->height);
}

static void
record_pack_artifact(msgpack_packer *pk, const struct record_rec *rec)
{
	const struct record_artifact *a = &rec->art;

	proto_pack_str(pk, "artifact");
	if (rec->state != RECORD_PUBLISHED) {
		msgpack_pack_nil(pk);
		return;
	}
	msgpack_pack_map(pk, 5);
	proto_pack_kv_str(pk, "id", a->id);
	proto_pack_kv_str(pk, "sha256", a->sha256);
	proto_pack_kv_u64(pk, "size", a->size);
	proto_pack_kv_str(pk, "media_type", a->media_type);
	proto_pack_kv_str(pk, "name", a->name);
}

/* record.stop's answer, and record.published's data. */
static void
record_pack_result(msgpack_packer *pk, const struct record_rec *rec)
{
	msgpack_pack_map(pk, 6);
	proto_pack_kv_str(pk, "id", rec->id);
	record_pack_artifact(pk, rec);
	proto_pack_kv_u64(pk, "duration_ms", rec->duration_ms);
	proto_pack_kv_u64(pk, "frames", rec->frames);
	proto_pack_kv_u64(pk, "dropped", rec->dropped);
	proto_pack_kv_u64(pk, "started", rec->started);
}

/* record.start's answer, and record.started's data. */
static void
record_pack_start(msgpack_packer *pk, const struct record_rec *rec)
{
	msgpack_pack_map(pk, 5);
	proto_pack_kv_str(pk, "id", rec->id);
	proto_pack_kv_u64(pk, "started", rec->started);
	proto_pack_kv_i64(pk, "fps", rec->fps);
	record_pack_region(pk, &rec->region);
	proto_pack_kv_str(pk, "encoder", rec->encoder);
}

static void
record_pack_status(msgpack_packer *pk, struct record_rec *rec)
{
	bool failed = rec->state == RECORD_FAILED;

	msgpack_pack_map(pk, failed ? 14 : 13);
	proto_pack_kv_str(pk, "id", rec->id);
	proto_pack_kv_str(pk, "state", record_state_names[rec->state]);
	proto_pack_kv_u64(pk, "started", rec->started);
	proto_pack_kv_i64(pk, "fps", rec->fps);
	record_pack_region(pk, &rec->region);
	proto_pack_kv_str(pk, "encoder", rec->encoder);
	proto_pack_kv_u64(pk, "frames", rec->frames);
	proto_pack_kv_u64(pk, "dropped", rec->dropped);
	proto_pack_kv_u64(pk, "bytes", rec->bytes);
	proto_pack_kv_u64(pk, "duration_ms",
	    rec->state == RECORD_RECORDING ? (record_now_us() - rec->t0) / 1000
	                                   : rec->duration_ms);
	proto_pack_str(pk, "end");
	if (rec->end != NULL)
		proto_pack_str(pk, rec->end);
	else
		msgpack_pack_nil(pk);
	proto_pack_kv_u64(pk, "max_bytes", rec->max_bytes);
	record_pack_artifact(pk, rec);
	if (failed)
		proto_pack_kv_str(pk, "reason", rec->reason);
}

/* -- telling berthd */

static void
record_pack_publish_cb(msgpack_packer *pk, void *ctx)
{
	struct record_rec *rec = ctx;
	char name[64];

	snprintf(name, sizeof name, "recording-%s.mp4", rec->id);
	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "path", rec->final);
	proto_pack_kv_str(pk, "name", name);
	proto_pack_kv_str(pk, "media_type", "video/mp4");
}

static void
record_pack_event_cb(msgpack_packer *pk, void *ctx)
{
	const struct record_ask *a = ctx;
	const struct record_rec *rec = a->rec;

	msgpack_pack_map(pk, 2);
	proto_pack_str(pk, "kind");
	switch (a->ev) {
	case RECORD_EV_STARTED:
		proto_pack_str(pk, "record.started");
		proto_pack_str(pk, "data");
		record_pack_start(pk, rec);
		break;
	case RECORD_EV_PUBLISHED:
		proto_pack_str(pk, "record.published");
		proto_pack_str(pk, "data");
		record_pack_result(pk, rec);
		break;
	default:
		proto_pack_str(pk, "record.failed");
		proto_pack_str(pk, "data");
		msgpack_pack_map(pk, 2);
		proto_pack_kv_str(pk, "id", rec->id);
		proto_pack_kv_str(pk, "reason", rec->reason);
		break;
	}
}

/* Answers every stop waiting for rec, now that it has ended for good. */
static void
record_answer_stops(struct record *r, struct record_rec *rec)
{
	const struct record_stop *s;
	int i;

	for (i = 0; i < rec->nstops; i++) {
		s = &rec->stops[i];
		/* Asked on an earlier connection: berthd failed it. */
		if (serve_generation(r->sv) != s->gen)
			continue;
		if (rec->state == RECORD_PUBLISHED) {
			record_pack_result(
			    serve_reply_begin(r->sv, s->id), rec);
			serve_reply_end(r->sv);
		} else
			serve_reply_error(r->sv, s->id, PROTO_E_INTERNAL,
			    "recording %s failed: %s", rec->id, rec->reason);
	}
	rec->nstops = 0;
}

static void __attribute__((format(printf, 3, 4)))
record_fail(struct record *r, struct record_rec *rec, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&rec->reason, fmt, ap) < 0)
		log_fatal("%s: out of memory", __func__);
	va_end(ap);
	log_warn("recording %s failed: %s", rec->id, rec->reason);
	rec->state = RECORD_FAILED;
	record_unlink(rec);
	rec->emit |= RECORD_EV_FAILED;
	record_emit(r, rec);
	record_answer_stops(r, rec);
}

/* The reference in artifact.publish's answer; false if it lacks one. */
static bool
record_artifact_read(const msgpack_object *res, struct record_artifact *a)
{
	memset(a, 0, sizeof *a);
	return proto_arg_str(res, "id", a->id, sizeof a->id) == 1 &&
	    proto_arg_str(res, "sha256", a->sha256, sizeof a->sha256) == 1 &&
	    proto_arg_u64(res, "size", &a->size) == 1 &&
	    proto_arg_str(
	        res, "media_type", a->media_type, sizeof a->media_type) == 1 &&
	    proto_arg_str(res, "name", a->name, sizeof a->name) == 1;
}

static void
record_published(
    struct record *r, struct record_rec *rec, const struct proto_msg *m)
{
	if (!m->ok) {
		/* berthd copies 16 files at most at once: ask again. */
		if (strcmp(m->err_code, PROTO_E_UNAVAILABLE) == 0) {
			rec->retry_us = record_now_us() + RECORD_RETRY_US;
			return;
		}
		record_fail(r, rec, "artifact.publish: %s: %s", m->err_code,
		    m->err_message);
		return;
	}
	if (!record_artifact_read(m->result, &rec->art)) {
		record_fail(r, rec, "artifact.publish answered no reference");
		return;
	}
	record_unlink(rec);
	rec->state = RECORD_PUBLISHED;
	rec->bytes = rec->art.size;
	log_info("recording %s published as %s (%llu bytes, %llu frames)",
	    rec->id, rec->art.id, (unsigned long long)rec->art.size,
	    (unsigned long long)rec->frames);
	rec->emit |= RECORD_EV_PUBLISHED;
	record_emit(r, rec);
	record_answer_stops(r, rec);
}

/*
 * berthd's answer to one of record's requests. None (the connection
 * went first) means it may or may not have been carried out: an event
 * is told again on the next connection (told twice at worst, never
 * lost), a publication asked again (the same bytes are the same
 * artifact).
 */
static void
record_answer_cb(struct serve *sv, const struct proto_msg *m, void *arg)
{
	struct record_ask *a = arg;
	struct record_rec *rec = a->rec;
	struct record *r = rec->r;

	(void)sv;
	rec->asked--;
	if (a->ev == 0) {
		rec->publishing = false;
		if (m == NULL)
			rec->retry_us = record_now_us() + RECORD_RETRY_US;
		else
			record_published(r, rec, m);
	} else if (m == NULL)
		rec->emit |= a->ev;
	else if (!m->ok)
		log_warn("recording %s: desktop.emit: %s: %s", rec->id,
		    m->err_code, m->err_message);
	free(a);
}

static bool
record_ask(struct record *r, struct record_rec *rec, const char *op,
    unsigned ev, serve_pack_cb pack, void *ctx)
{
	struct record_ask *a = xmalloc(sizeof *a);

	a->rec = rec;
	a->ev = ev;
	if (serve_request(r->sv, op, pack, ctx != NULL ? ctx : a,
	        record_answer_cb, a) < 0) {
		free(a);
		return false;
	}
	rec->asked++;
	return true;
}

/* Tells berthd's journal the events not yet told, in order; what cannot
 * be asked now (no connection) is tried again by the timer. */
static void
record_emit(struct record *r, struct record_rec *rec)
{
	static const unsigned order[] = {
	    RECORD_EV_STARTED, RECORD_EV_PUBLISHED, RECORD_EV_FAILED};
	size_t i;

	for (i = 0; i < sizeof order / sizeof order[0]; i++) {
		if (!(rec->emit & order[i]))
			continue;
		if (!record_ask(r, rec, "desktop.emit", order[i],
		        record_pack_event_cb, NULL))
			return;
		rec->emit &= ~order[i];
	}
}

static void
record_publish(struct record *r, struct record_rec *rec)
{
	if (record_ask(
	        r, rec, "artifact.publish", 0, record_pack_publish_cb, rec))
		rec->publishing = true;
	else
		rec->retry_us = record_now_us() + RECORD_RETRY_US;
}

/* -- the X side */

/* The live Display, with what belongs to it; NULL if X is not
 * connected. */
static Display *
record_display(struct record *r)
{
	Display *dpy = xconn_get(r->xc);
	int error;

	if (dpy == NULL || r->serial == r->xc->serial)
		return dpy;
	r->damage = None;
	r->parts = None;
	r->notified = false;
	r->serial = r->xc->serial;
	r->ext = XDamageQueryExtension(dpy, &r->event_base, &error);
	return dpy;
}

static int
record_running(const struct record *r)
{
	int i, n = 0;

	for (i = 0; i < r->nrecs; i++)
		if (r->recs[i]->state == RECORD_RECORDING)
			n++;
	return n;
}

/* Recordings not yet ended for good: running, finishing, publishing. */
static int
record_active(const struct record *r)
{
	int i, n = 0;

	for (i = 0; i < r->nrecs; i++)
		if (r->recs[i]->state != RECORD_PUBLISHED &&
		    r->recs[i]->state != RECORD_FAILED)
			n++;
	return n;
}

/* Watches the root for damage while something records. What changed
 * before is not the new recording's business: its first frame is
 * captured right after. */
static void
record_damage_start(struct record *r, Display *dpy)
{
	if (!r->ext || r->damage != None)
		return;
	if (r->parts == None)
		r->parts = XFixesCreateRegion(dpy, NULL, 0);
	r->damage =
	    XDamageCreate(dpy, DefaultRootWindow(dpy), XDamageReportNonEmpty);
	XDamageSubtract(dpy, r->damage, None, None);
	r->notified = false;
}

static void
record_damage_stop(struct record *r)
{
	Display *dpy;

	if (r->damage == None || record_running(r) > 0)
		return;
	if ((dpy = xconn_get(r->xc)) != NULL && r->serial == r->xc->serial) {
		XDamageDestroy(dpy, r->damage);
		XFlush(dpy);
	}
	r->damage = None;
	r->notified = false;
}

bool
record_event(struct record *r, const XEvent *ev)
{
	const XDamageNotifyEvent *de = (const XDamageNotifyEvent *)ev;

	if (!r->ext || r->serial != r->xc->serial ||
	    ev->type != r->event_base + XDamageNotify || r->damage == None ||
	    de->damage != r->damage)
		return false;
	r->notified = true;
	return true;
}

static bool
record_overlaps(const struct opargs_rect *g, const XRectangle *x)
{
	return x->x < g->x + g->width && g->x < x->x + x->width &&
	    x->y < g->y + g->height && g->y < x->y + x->height;
}

/* Takes what changed since the last look (which re-arms the report) and
 * marks every running recording whose region it touches. */
static void
record_collect(struct record *r, Display *dpy)
{
	struct record_rec *rec;
	XRectangle *rects;
	int n = 0, i, j;

	r->notified = false;
	XDamageSubtract(dpy, r->damage, None, r->parts);
	if ((rects = XFixesFetchRegion(dpy, r->parts, &n)) == NULL)
		return;
	for (i = 0; i < r->nrecs; i++) {
		rec = r->recs[i];
		if (rec->state != RECORD_RECORDING)
			continue;
		for (j = 0; j < n && !rec->changed; j++)
			rec->changed = record_overlaps(&rec->region, &rects[j]);
	}
	XFree(rects);
}

/* Whether a pointer at (x, y) would show in the region: cursor images
 * reach RECORD_POINTER_MARGIN pixels from the hot spot. */
static bool
record_near(const struct opargs_rect *g, int x, int y)
{
	const int m = RECORD_POINTER_MARGIN;

	return x > g->x - m && x < g->x + g->width + m && y > g->y - m &&
	    y < g->y + g->height + m;
}

/* Whether the pointer moved since rec's last capture, in or near the
 * region; *x, *y: where it is now. */
static bool
record_pointer_moved(Display *dpy, const struct record_rec *rec, int *x, int *y)
{
	Window root, child;
	unsigned mask;
	int wx, wy;

	if (!XQueryPointer(dpy, DefaultRootWindow(dpy), &root, &child, x, y,
	        &wx, &wy, &mask)) {
		*x = rec->px;
		*y = rec->py;
		return false;
	}
	if (*x == rec->px && *y == rec->py)
		return false;
	return record_near(&rec->region, *x, *y) ||
	    record_near(&rec->region, rec->px, rec->py);
}

/*
 * Reads the region's pixels (the pointer drawn in) and queues them for
 * the encoder, timed by the clock: a frame shows from when it was
 * captured, so a frame dropped or a quiet second is time in the video,
 * never a faster one. Returns -1 with *cause if the capture failed (the
 * connection broke, or the screen shrank under the region).
 */
static int
record_capture(struct record *r, struct record_rec *rec, Display *dpy, int x,
    int y, char **cause)
{
	XWindowAttributes wa;
	XImage *img;
	int64_t pts;

	if (!XGetWindowAttributes(dpy, DefaultRootWindow(dpy), &wa) ||
	    rec->region.x + rec->region.width > wa.width ||
	    rec->region.y + rec->region.height > wa.height) {
		*cause = xstrdup("the screen no longer holds the region");
		return -1;
	}
	img = capture_grab(r->cp, dpy, &wa, &rec->region, true);
	if (img == NULL || capture_pixfmt(img) != rec->format) {
		if (img != NULL)
			capture_release(r->cp, img);
		*cause = xstrdup("the X server refused the capture");
		return -1;
	}
	pts = (int64_t)(record_now_us() - rec->t0) / 1000;
	if (pts <= rec->last_pts)
		pts = rec->last_pts + 1;
	if (encode_push(
	        rec->enc, (const uint8_t *)img->data, img->bytes_per_line, pts))
		rec->last_pts = pts;
	else
		rec->dropped++;
	capture_release(r->cp, img);
	rec->changed = false;
	rec->px = x;
	rec->py = y;
	return 0;
}

/* Captures if the region changed or the pointer moved over it; without
 * DAMAGE, every time. */
static int
record_look(
    struct record *r, struct record_rec *rec, Display *dpy, char **cause)
{
	bool moved;
	int x = rec->px, y = rec->py;

	if (r->notified && r->damage != None)
		record_collect(r, dpy);
	moved = record_pointer_moved(dpy, rec, &x, &y);
	if (r->damage != None && !rec->changed && !moved)
		return 0;
	return record_capture(r, rec, dpy, x, y, cause);
}

/* -- ending */

/* Ends the capture: the thread drains, finishes the file and remuxes;
 * the timer publishes once it is done. */
static void
record_end(struct record *r, struct record_rec *rec, const char *why)
{
	int64_t end = (int64_t)(record_now_us() - rec->t0) / 1000;

	if (end < rec->last_pts)
		end = rec->last_pts;
	rec->end = why;
	rec->duration_ms = (uint64_t)end;
	rec->state = RECORD_FINISHING;
	encode_finish(rec->enc, end, true);
	record_damage_stop(r);
	log_info("recording %s ends (%s) after %lld ms", rec->id, why,
	    (long long)end);
}

/* The thread is done: publish, or say why not. */
static void
record_finished(struct record *r, struct record_rec *rec)
{
	struct encode_stats st;
	char *cause = NULL;

	encode_stats(rec->enc, &st);
	rec->frames = st.frames;
	rec->bytes = st.bytes;
	if (encode_free(rec->enc, &cause) < 0) {
		rec->enc = NULL;
		record_fail(r, rec, "%s", cause);
		free(cause);
		return;
	}
	rec->enc = NULL;
	rec->state = RECORD_PUBLISHING;
	record_publish(r, rec);
}

/* A turn of a running recording: limits first, then a look. */
static void
record_tick(
    struct record *r, struct record_rec *rec, Display *dpy, uint64_t now)
{
	uint64_t period = 1000000 / (uint64_t)rec->fps;
	struct encode_stats st;
	char *cause = NULL;

	encode_stats(rec->enc, &st);
	rec->frames = st.frames;
	rec->bytes = st.bytes;
	if (st.done) {
		/* The thread stopped by itself: it failed. */
		rec->state = RECORD_FINISHING;
		rec->end = "error";
		rec->duration_ms = (uint64_t)rec->last_pts;
		record_damage_stop(r);
		return;
	}
	if ((int64_t)(now - rec->t0) / 1000 >= rec->max_ms) {
		record_end(r, rec, "max_seconds");
		return;
	}
	if (st.bytes >= rec->max_bytes) {
		record_end(r, rec, "max_bytes");
		return;
	}
	if (record_look(r, rec, dpy, &cause) < 0 || xconn_get(r->xc) == NULL) {
		log_warn("recording %s: %s", rec->id,
		    cause != NULL ? cause : "the X connection broke");
		free(cause);
		record_end(r, rec, "capture_failed");
		return;
	}
	rec->next_us += period;
	if (rec->next_us <= now)
		rec->next_us = now + period;
}

/* Ended, answered, told and not waiting for berthd: can be forgotten. */
static bool
record_idle(const struct record_rec *rec)
{
	return (rec->state == RECORD_PUBLISHED ||
	           rec->state == RECORD_FAILED) &&
	    rec->asked == 0 && rec->emit == 0 && rec->nstops == 0;
}

void
record_timer(struct record *r)
{
	struct record_rec *rec;
	struct encode_stats st;
	uint64_t now;
	Display *dpy;
	int i;

	dpy = record_running(r) > 0 ? record_display(r) : NULL;
	for (i = 0; i < r->nrecs; i++) {
		rec = r->recs[i];
		now = record_now_us();
		switch (rec->state) {
		case RECORD_RECORDING:
			if (dpy == NULL || rec->serial != r->xc->serial)
				record_end(r, rec, "x_lost");
			else if (now >= rec->next_us)
				record_tick(r, rec, dpy, now);
			break;
		case RECORD_FINISHING:
			encode_stats(rec->enc, &st);
			if (st.done)
				record_finished(r, rec);
			break;
		case RECORD_PUBLISHING:
			if (!rec->publishing && now >= rec->retry_us)
				record_publish(r, rec);
			break;
		default: break;
		}
		if (rec->emit != 0)
			record_emit(r, rec);
		if (dpy != NULL && xconn_get(r->xc) == NULL)
			dpy = NULL;
	}
	record_damage_stop(r);
}

int
record_wait_ms(const struct record *r)
{
	const struct record_rec *rec;
	uint64_t now = record_now_us(), due = UINT64_MAX;
	int i;

	for (i = 0; i < r->nrecs; i++) {
		rec = r->recs[i];
		if (rec->state == RECORD_RECORDING && rec->next_us < due)
			due = rec->next_us;
		else if (rec->state == RECORD_FINISHING &&
		    now + RECORD_POLL_US < due)
			due = now + RECORD_POLL_US;
		else if (rec->state == RECORD_PUBLISHING && !rec->publishing &&
		    rec->retry_us < due)
			due = rec->retry_us;
		if (rec->emit != 0 && now + RECORD_RETRY_US < due)
			due = now + RECORD_RETRY_US;
	}
	if (due == UINT64_MAX)
		return -1;
	/* Rounded up: waking before the time would only spin. */
	return due > now ? (int)((due - now + 999) / 1000) : 0;
}

/* -- the ops */

#define RECORD_UNAVAILABLE(sv, id, r)                                          \
	serve_reply_error((sv), (id), PROTO_E_UNAVAILABLE,                     \
	    "the X server is not connected (%s)",                              \
	    (r)->xc->cause != NULL ? (r)->xc->cause : "it stopped answering")

/* A place in the table: a free one, or the oldest ended recording's. */
static bool
record_slot(struct record *r)
{
	int i;

	if (r->nrecs < RECORD_KEEP)
		return true;
	for (i = 0; i < r->nrecs; i++)
		if (record_idle(r->recs[i])) {
			record_rec_free(r->recs[i]);
			memmove(&r->recs[i], &r->recs[i + 1],
			    (size_t)(r->nrecs - i - 1) * sizeof r->recs[0]);
			r->nrecs--;
			return true;
		}
	return false;
}

static int
record_dir(struct record *r, char **cause)
{
	if (r->dir == NULL) {
		*cause =
		    xstrdup("no directory for recordings: berth-desktop "
		            "has neither --recordings nor BERTH_STATE_DIR");
		return -1;
	}
	if (mkdir(r->dir, 0700) < 0 && errno != EEXIST) {
		*cause =
		    xasprintf("cannot make %s: %s", r->dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* The arguments that do not depend on the screen. */
static int
record_args(const msgpack_object *args, struct record_rec *rec, int *quality,
    char **cause)
{
	int64_t fps = RECORD_FPS_DEFAULT, secs = RECORD_SECONDS_DEFAULT;
	int64_t bytes = RECORD_BYTES_DEFAULT, q = RECORD_QUALITY_DEFAULT;

	if (opargs_known(args, record_start_keys, cause) < 0 ||
	    opargs_int(args, "fps", 1, RECORD_FPS_MAX, &fps, cause) < 0 ||
	    opargs_int(
	        args, "max_seconds", 1, RECORD_SECONDS_MAX, &secs, cause) < 0 ||
	    opargs_int(args, "max_bytes", RECORD_BYTES_MIN, RECORD_BYTES_MAX,
	        &bytes, cause) < 0 ||
	    opargs_int(args, "quality", 1, 100, &q, cause) < 0)
		return -1;
	rec->fps = (int)fps;
	rec->max_ms = secs * 1000;
	rec->max_bytes = (uint64_t)bytes;
	*quality = (int)q;
	return 0;
}

/* The region within the screen, cut to even sides (4:2:0 video). */
static int
record_region(const msgpack_object *args, const XWindowAttributes *wa,
    struct opargs_rect *g, char **cause)
{
	int got;

	got = opargs_rect(args, "region", wa->width, wa->height, g, cause);
	if (got < 0)
		return -1;
	if (got == 0)
		*g = (struct opargs_rect){0, 0, wa->width, wa->height};
	if (g->width < 2 || g->height < 2) {
		*cause = xasprintf("\"region\" must be at least 2x2 pixels "
		                   "for a video, not %dx%d",
		    g->width, g->height);
		return -1;
	}
	g->width &= ~1;
	g->height &= ~1;
	return 0;
}

/*
 * The first frame, and with it the encoder (whose input format is the
 * screen's): time 0 of the video, and `started`, are when it was
 * captured. Answers and returns -1 on failure.
 */
static int
record_begin(struct record *r, struct record_rec *rec, Display *dpy,
    const XWindowAttributes *wa, int quality, uint64_t id)
{
	struct encode_params p;
	char *cause = NULL;
	XImage *img;

	record_damage_start(r, dpy);
	img = capture_grab(r->cp, dpy, wa, &rec->region, true);
	if (img == NULL || xconn_get(r->xc) == NULL) {
		if (img != NULL)
			capture_release(r->cp, img);
		serve_reply_error(r->sv, id, PROTO_E_UNAVAILABLE,
		    "the X server refused the capture");
		return -1;
	}
	rec->t0 = record_now_us();
	rec->started = proto_now_ms();
	if ((rec->format = capture_pixfmt(img)) == AV_PIX_FMT_NONE) {
		serve_reply_error(r->sv, id, PROTO_E_UNAVAILABLE,
		    "the screen's pixel layout (%d bits a pixel, depth %d) is "
		    "not supported",
		    img->bits_per_pixel, img->depth);
		capture_release(r->cp, img);
		return -1;
	}
	p = (struct encode_params){rec->path, rec->final, rec->region.width,
	    rec->region.height, rec->format, rec->fps, quality};
	if ((rec->enc = encode_start(&p, &cause)) == NULL) {
		log_warn("record.start: %s", cause);
		serve_reply_error(r->sv, id, PROTO_E_INTERNAL, "%s", cause);
		free(cause);
		capture_release(r->cp, img);
		return -1;
	}
	encode_push(
	    rec->enc, (const uint8_t *)img->data, img->bytes_per_line, 0);
	capture_release(r->cp, img);
	snprintf(
	    rec->encoder, sizeof rec->encoder, "%s", encode_codec(rec->enc));
	return 0;
}

static void
record_start_cb(
    struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	struct record *r = arg;
	struct record_rec *rec;
	XWindowAttributes wa;
	char *cause = NULL;
	Display *dpy;
	int quality, x, y;

	rec = xcalloc(1, sizeof *rec);
	rec->r = r;
	if (record_args(args, rec, &quality, &cause) < 0)
		goto bad;
	if ((dpy = record_display(r)) == NULL ||
	    !XGetWindowAttributes(dpy, DefaultRootWindow(dpy), &wa)) {
		RECORD_UNAVAILABLE(sv, id, r);
		goto out;
	}
	if (record_region(args, &wa, &rec->region, &cause) < 0)
		goto bad;
	if (record_active(r) >= RECORD_MAX_ACTIVE || !record_slot(r)) {
		serve_reply_error(sv, id, PROTO_E_UNAVAILABLE,
		    "%d recordings run already: stop one first",
		    RECORD_MAX_ACTIVE);
		goto out;
	}
	if (record_dir(r, &cause) < 0) {
		log_warn("record.start: %s", cause);
		serve_reply_error(sv, id, PROTO_E_INTERNAL, "%s", cause);
		free(cause);
		goto out;
	}
	rand_hex(rec->id, 4);
	rec->path = xasprintf("%s/%s.mp4", r->dir, rec->id);
	rec->final = xasprintf("%s/%s.final.mp4", r->dir, rec->id);
	rec->serial = r->xc->serial;
	rec->last_pts = 0;
	if (record_begin(r, rec, dpy, &wa, quality, id) < 0)
		goto out;
	record_pointer_moved(dpy, rec, &x, &y);
	rec->px = x;
	rec->py = y;
	rec->next_us = rec->t0 + 1000000 / (uint64_t)rec->fps;
	rec->state = RECORD_RECORDING;
	r->recs[r->nrecs++] = rec;
	log_info("recording %s: %dx%d+%d+%d at %d fps with %s into %s", rec->id,
	    rec->region.width, rec->region.height, rec->region.x, rec->region.y,
	    rec->fps, rec->encoder, rec->path);
	record_pack_start(serve_reply_begin(sv, id), rec);
	serve_reply_end(sv);
	rec->emit |= RECORD_EV_STARTED;
	record_emit(r, rec);
	return;

bad:
	serve_reply_error(sv, id, PROTO_E_BAD_ARGS, "record.start: %s", cause);
	free(cause);
out:
	record_damage_stop(r);
	record_rec_free(rec);
}

/* The recording args names by "id"; NULL after answering. With
 * optional, an absent id is fine (*absent is set). */
static struct record_rec *
record_find(struct record *r, uint64_t id, const msgpack_object *args,
    const char *op, bool optional, bool *absent)
{
	const msgpack_object *v = proto_map_get(args, "id");
	char *cause = NULL;
	int i;

	*absent = false;
	if (opargs_known(args, record_id_keys, &cause) < 0) {
		serve_reply_error(
		    r->sv, id, PROTO_E_BAD_ARGS, "%s: %s", op, cause);
		free(cause);
		return NULL;
	}
	if (v == NULL || v->type == MSGPACK_OBJECT_NIL) {
		if (optional) {
			*absent = true;
			return NULL;
		}
		serve_reply_error(r->sv, id, PROTO_E_BAD_ARGS,
		    "%s: \"id\" is missing (the id record.start answered)", op);
		return NULL;
	}
	if (v->type != MSGPACK_OBJECT_STR) {
		serve_reply_error(r->sv, id, PROTO_E_BAD_ARGS,
		    "%s: \"id\" must be a string (8 hex digits)", op);
		return NULL;
	}
	for (i = 0; i < r->nrecs; i++)
		if (v->via.str.size == 8 &&
		    memcmp(v->via.str.ptr, r->recs[i]->id, 8) == 0)
			return r->recs[i];
	serve_reply_error(r->sv, id, PROTO_E_NOT_FOUND, "%s: no recording %.*s",
	    op, (int)(v->via.str.size > 64 ? 64 : v->via.str.size),
	    v->via.str.ptr);
	return NULL;
}

static void
record_stop_cb(
    struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	struct record *r = arg;
	struct record_rec *rec;
	char *cause = NULL;
	Display *dpy;
	bool absent;

	if ((rec = record_find(r, id, args, "record.stop", false, &absent)) ==
	    NULL)
		return;
	if (rec->state == RECORD_PUBLISHED || rec->state == RECORD_FAILED) {
		rec->stops[0] = (struct record_stop){id, serve_generation(sv)};
		rec->nstops = 1;
		record_answer_stops(r, rec);
		return;
	}
	if (rec->nstops == RECORD_STOPS_MAX) {
		serve_reply_error(sv, id, PROTO_E_UNAVAILABLE,
		    "record.stop: %d stops wait for %s already",
		    RECORD_STOPS_MAX, rec->id);
		return;
	}
	rec->stops[rec->nstops++] =
	    (struct record_stop){id, serve_generation(sv)};
	if (rec->state != RECORD_RECORDING)
		return;
	/* What changed since the last turn is in the video too. */
	if ((dpy = record_display(r)) != NULL && rec->serial == r->xc->serial &&
	    record_look(r, rec, dpy, &cause) < 0) {
		log_warn("recording %s: %s", rec->id, cause);
		free(cause);
	}
	record_end(r, rec, "stop");
}

static void
record_status_cb(
    struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	struct record *r = arg;
	struct record_rec *rec;
	msgpack_packer *pk;
	bool absent;
	int i;

	rec = record_find(r, id, args, "record.status", true, &absent);
	if (rec == NULL && !absent)
		return;
	pk = serve_reply_begin(sv, id);
	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "recordings");
	if (rec != NULL) {
		msgpack_pack_array(pk, 1);
		record_pack_status(pk, rec);
	} else {
		msgpack_pack_array(pk, (size_t)r->nrecs);
		for (i = 0; i < r->nrecs; i++)
			record_pack_status(pk, r->recs[i]);
	}
	serve_reply_end(sv);
}

void
record_register(struct record *r, struct serve *sv)
{
	r->sv = sv;
	serve_add(sv, CATALOG_OP_RECORD_START, record_start_cb, r);
	serve_add(sv, CATALOG_OP_RECORD_STOP, record_stop_cb, r);
	serve_add(sv, CATALOG_OP_RECORD_STATUS, record_status_cb, r);
}
