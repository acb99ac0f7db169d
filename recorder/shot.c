/* shot: desktop.screenshot (see shot.h). The pixels come from capture;
 * per format, an encoder opened for the last size asked. */
#include <X11/Xlib.h>
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "log.h"
#include "opargs.h"
#include "proto.h"
#include "shot.h"
#include "xmalloc.h"

/* Room left in an answer for everything but the image. */
#define SHOT_REPLY_SLACK 1024
/* PNG: zlib's fastest level, each row predicted from its left
 * neighbour. On a desktop of text and flat areas (bench/shot.sh's
 * picture) that encodes in 9 ms, 21 % smaller than no prediction;
 * paeth or a choice per row costs 1.7-3x the time for no gain or 3 %,
 * level 6 3.5x the time for 23 %. */
#define SHOT_PNG_LEVEL 1
#define SHOT_PNG_PRED "sub"
#define SHOT_JPEG_QUALITY 80

enum shot_format { SHOT_PNG, SHOT_JPEG, SHOT_NFORMATS };
static const char *const shot_formats[] = {"png", "jpeg", NULL};
static const char *const shot_keys[] = {
    "region", "scale", "format", "quality", "cursor", NULL};

/* An encoder of one format, open for one size; ctx NULL until used. */
struct shot_enc {
	AVCodecContext *ctx;
	int width;
	int height;
};

struct shot {
	struct xconn *xc;
	struct capture *cp;

	struct SwsContext *sws;
	AVFrame *frame; /* the scaled picture the encoder takes */
	AVPacket *pkt;
	int64_t pts;
	struct shot_enc enc[SHOT_NFORMATS];
};

/* One request, as read from its args. */
struct shot_req {
	bool whole; /* no region: the whole screen */
	struct opargs_rect region;
	double scale;
	int format;
	int quality;
	bool cursor;
	int width; /* of the image */
	int height;
};

static double
shot_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* libav's messages go to our log, at debug level: they are about the
 * encoders' choices (a deprecated pixel format, say), not our failures,
 * which are answered and logged where they happen. */
static void __attribute__((format(printf, 3, 0)))
shot_avlog_cb(void *avcl, int level, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	(void)avcl;
	if (level > AV_LOG_WARNING)
		return;
	vsnprintf(line, sizeof line, fmt, ap);
	n = strlen(line);
	if (n > 0 && line[n - 1] == '\n')
		line[n - 1] = '\0';
	log_debug("libav: %s", line);
}

struct shot *
shot_create(struct xconn *xc, struct capture *cp)
{
	struct shot *sh;

	sh = xcalloc(1, sizeof *sh);
	sh->xc = xc;
	sh->cp = cp;
	sh->frame = av_frame_alloc();
	sh->pkt = av_packet_alloc();
	if (sh->frame == NULL || sh->pkt == NULL)
		log_fatal("%s: out of memory", __func__);
	av_log_set_callback(shot_avlog_cb);
	return sh;
}

void
shot_free(struct shot *sh)
{
	int i;

	for (i = 0; i < SHOT_NFORMATS; i++)
		avcodec_free_context(&sh->enc[i].ctx);
	sws_freeContext(sh->sws);
	av_frame_free(&sh->frame);
	av_packet_free(&sh->pkt);
	free(sh);
}

bool
shot_shm(struct shot *sh)
{
	return capture_shm(sh->cp);
}

/*
 * JPEG quality as libjpeg means it (1-100), as the encoder's quantiser
 * scale (1-31). libjpeg scales its tables by 5000/q % below 50 and by
 * (200 - 2q) % above; the MJPEG encoder's tables at scale 8 are about
 * libjpeg's at 100 %.
 */
static int
shot_qscale(int quality)
{
	int pct = quality < 50 ? 5000 / quality : 200 - 2 * quality;
	int q = (pct * 8 + 50) / 100;

	return q < 1 ? 1 : q > 31 ? 31 : q;
}

/* The encoder of rq's format, open for rq's size. */
static AVCodecContext *
shot_encoder(struct shot *sh, const struct shot_req *rq, char **cause)
{
	struct shot_enc *e = &sh->enc[rq->format];
	const AVCodec *codec;
	AVCodecContext *ctx;
	int r;

	if (e->ctx != NULL && e->width == rq->width && e->height == rq->height)
		return e->ctx;
	avcodec_free_context(&e->ctx);
	codec = avcodec_find_encoder(
	    rq->format == SHOT_PNG ? AV_CODEC_ID_PNG : AV_CODEC_ID_MJPEG);
	if (codec == NULL) {
		*cause = xasprintf(
		    "libavcodec has no %s encoder", shot_formats[rq->format]);
		return NULL;
	}
	if ((ctx = avcodec_alloc_context3(codec)) == NULL)
		log_fatal("%s: out of memory", __func__);
	ctx->width = rq->width;
	ctx->height = rq->height;
	ctx->time_base = (AVRational){1, 1000};
	ctx->thread_count = 1;
	if (rq->format == SHOT_PNG) {
		ctx->pix_fmt = AV_PIX_FMT_RGB24;
		ctx->compression_level = SHOT_PNG_LEVEL;
		av_opt_set(ctx->priv_data, "pred", SHOT_PNG_PRED, 0);
	} else {
		ctx->pix_fmt = AV_PIX_FMT_YUVJ420P;
		ctx->color_range = AVCOL_RANGE_JPEG;
		ctx->flags |= AV_CODEC_FLAG_QSCALE;
		ctx->qmin = 1;
		ctx->qmax = 31;
	}
	if ((r = avcodec_open2(ctx, codec, NULL)) < 0) {
		*cause = xasprintf("cannot open the %s encoder: %s",
		    shot_formats[rq->format], av_err2str(r));
		avcodec_free_context(&ctx);
		return NULL;
	}
	e->ctx = ctx;
	e->width = rq->width;
	e->height = rq->height;
	return ctx;
}

/* sh->frame, allocated for the encoder's size and pixel format and
 * writable (the encoder may still hold the last one). */
static int
shot_frame(struct shot *sh, const AVCodecContext *ctx, char **cause)
{
	AVFrame *f = sh->frame;
	int r;

	if (f->width != ctx->width || f->height != ctx->height ||
	    f->format != ctx->pix_fmt || f->data[0] == NULL) {
		av_frame_unref(f);
		f->width = ctx->width;
		f->height = ctx->height;
		f->format = ctx->pix_fmt;
		r = av_frame_get_buffer(f, 0);
	} else
		r = av_frame_make_writable(f);
	if (r < 0) {
		*cause = xasprintf("no frame of %dx%d: %s", ctx->width,
		    ctx->height, av_err2str(r));
		av_frame_unref(f);
		return -1;
	}
	return 0;
}

/* Scales and converts img into the encoder's picture, and encodes it
 * into sh->pkt. */
static int
shot_encode(struct shot *sh, const struct shot_req *rq, XImage *img,
    enum AVPixelFormat fmt, char **cause)
{
	const uint8_t *src[1] = {(const uint8_t *)img->data};
	const int stride[1] = {img->bytes_per_line};
	AVCodecContext *ctx;
	int flags, r;

	if ((ctx = shot_encoder(sh, rq, cause)) == NULL)
		return -1;
	if (shot_frame(sh, ctx, cause) < 0)
		return -1;
	/* Area averaging keeps text legible when shrinking; bilinear is
	 * enough to enlarge. At scale 1 either is a plain conversion. */
	flags = rq->width < img->width ? SWS_AREA : SWS_BILINEAR;
	sh->sws = sws_getCachedContext(sh->sws, img->width, img->height, fmt,
	    ctx->width, ctx->height, ctx->pix_fmt, flags, NULL, NULL, NULL);
	if (sh->sws == NULL) {
		*cause = xasprintf("no conversion from %s to %s",
		    av_get_pix_fmt_name(fmt),
		    av_get_pix_fmt_name(ctx->pix_fmt));
		return -1;
	}
	sws_scale(sh->sws, src, stride, 0, img->height, sh->frame->data,
	    sh->frame->linesize);
	sh->frame->pts = sh->pts++;
	sh->frame->quality = rq->format == SHOT_JPEG
	    ? shot_qscale(rq->quality) * FF_QP2LAMBDA
	    : 0;
	if ((r = avcodec_send_frame(ctx, sh->frame)) < 0 ||
	    (r = avcodec_receive_packet(ctx, sh->pkt)) < 0) {
		*cause = xasprintf("the %s encoder failed: %s",
		    shot_formats[rq->format], av_err2str(r));
		/* A context that failed mid-frame is not used again. */
		avcodec_free_context(&sh->enc[rq->format].ctx);
		return -1;
	}
	return 0;
}

/* The arguments that do not depend on the screen. */
static int
shot_args(const msgpack_object *args, struct shot_req *rq, char **cause)
{
	int64_t quality = SHOT_JPEG_QUALITY;

	memset(rq, 0, sizeof *rq);
	rq->scale = 1.0;
	rq->format = SHOT_PNG;
	rq->cursor = true;
	if (opargs_known(args, shot_keys, cause) < 0 ||
	    opargs_number(args, "scale", 0.05, 4.0, &rq->scale, cause) < 0 ||
	    opargs_word(args, "format", shot_formats, &rq->format, cause) < 0 ||
	    opargs_int(args, "quality", 1, 100, &quality, cause) < 0 ||
	    opargs_bool(args, "cursor", &rq->cursor, cause) < 0)
		return -1;
	rq->quality = (int)quality;
	return 0;
}

/* The region within a screen of wa's size, and the image's size. */
static int
shot_size(const msgpack_object *args, const XWindowAttributes *wa,
    struct shot_req *rq, char **cause)
{
	struct opargs_rect *r = &rq->region;
	double w, h;
	int got;

	got = opargs_rect(args, "region", wa->width, wa->height, r, cause);
	if (got < 0)
		return -1;
	rq->whole = got == 0;
	if (rq->whole) {
		r->x = r->y = 0;
		r->width = wa->width;
		r->height = wa->height;
	}
	w = fmax(1.0, round(r->width * rq->scale));
	h = fmax(1.0, round(r->height * rq->scale));
	if (w > SHOT_MAX_SIDE || h > SHOT_MAX_SIDE || w * h > SHOT_MAX_PIXELS) {
		*cause = xasprintf("the image would be %.0fx%.0f, over the "
		                   "limit (%u pixels, %d a side): take a "
		                   "region or a smaller scale",
		    w, h, SHOT_MAX_PIXELS, SHOT_MAX_SIDE);
		return -1;
	}
	rq->width = (int)w;
	rq->height = (int)h;
	return 0;
}

static void
shot_reply(struct serve *sv, uint64_t id, const struct shot_req *rq,
    const AVPacket *pkt, uint64_t taken, double capture_ms, double encode_ms)
{
	const struct opargs_rect *r = &rq->region;
	msgpack_packer *pk;

	pk = serve_reply_begin(sv, id);
	msgpack_pack_map(pk, 8);
	proto_pack_kv_str(pk, "format", shot_formats[rq->format]);
	proto_pack_kv_i64(pk, "width", rq->width);
	proto_pack_kv_i64(pk, "height", rq->height);
	proto_pack_str(pk, "region");
	msgpack_pack_map(pk, 4);
	proto_pack_kv_i64(pk, "x", r->x);
	proto_pack_kv_i64(pk, "y", r->y);
	proto_pack_kv_i64(pk, "width", r->width);
	proto_pack_kv_i64(pk, "height", r->height);
	proto_pack_str(pk, "scale");
	msgpack_pack_double(pk, rq->scale);
	proto_pack_str(pk, "data");
	msgpack_pack_bin(pk, (size_t)pkt->size);
	msgpack_pack_bin_body(pk, pkt->data, (size_t)pkt->size);
	proto_pack_kv_u64(pk, "taken", taken);
	proto_pack_str(pk, "timing");
	msgpack_pack_map(pk, 2);
	proto_pack_str(pk, "capture_ms");
	msgpack_pack_double(pk, round(capture_ms * 1000) / 1000);
	proto_pack_str(pk, "encode_ms");
	msgpack_pack_double(pk, round(encode_ms * 1000) / 1000);
	serve_reply_end(sv);
}

#define SHOT_UNAVAILABLE(sv, id, sh)                                           \
	serve_reply_error((sv), (id), PROTO_E_UNAVAILABLE,                     \
	    "the X server is not connected (%s)",                              \
	    (sh)->xc->cause != NULL ? (sh)->xc->cause                          \
	                            : "it stopped answering")

/*
 * Reads the region's pixels, with the pointer drawn in if asked. Returns
 * the image (the caller releases it with capture_release), or NULL after
 * answering: a connection that broke is unavailable, and so is what the
 * server refused (a screen that shrank between two requests: asking
 * again reads the new size) or a pixel layout berth does not convert.
 */
static XImage *
shot_capture(struct shot *sh, struct serve *sv, uint64_t id, Display *dpy,
    const XWindowAttributes *wa, const struct shot_req *rq,
    enum AVPixelFormat *fmt)
{
	XImage *img;

	img = capture_grab(sh->cp, dpy, wa, &rq->region, rq->cursor);
	if (xconn_get(sh->xc) == NULL) {
		if (img != NULL)
			capture_release(sh->cp, img);
		SHOT_UNAVAILABLE(sv, id, sh);
		return NULL;
	}
	if (img == NULL) {
		serve_reply_error(sv, id, PROTO_E_UNAVAILABLE,
		    "the X server refused the capture (has the screen "
		    "changed size?)");
		return NULL;
	}
	if ((*fmt = capture_pixfmt(img)) == AV_PIX_FMT_NONE) {
		serve_reply_error(sv, id, PROTO_E_UNAVAILABLE,
		    "the screen's pixel layout (%d bits a pixel, depth %d) "
		    "is not supported",
		    img->bits_per_pixel, img->depth);
		capture_release(sh->cp, img);
		return NULL;
	}
	return img;
}

/* Encodes img and answers with it, or with why not. */
static void
shot_answer(struct shot *sh, struct serve *sv, uint64_t id,
    const struct shot_req *rq, XImage *img, enum AVPixelFormat fmt,
    uint64_t taken, double capture_ms)
{
	size_t max = SERVE_REPLY_MAX - SHOT_REPLY_SLACK;
	char *cause = NULL;
	double t0 = shot_now();
	int r;

	r = shot_encode(sh, rq, img, fmt, &cause);
	if (r < 0) {
		log_warn("desktop.screenshot: %s", cause);
		serve_reply_error(sv, id, PROTO_E_INTERNAL, "%s", cause);
		free(cause);
		return;
	}
	if ((size_t)sh->pkt->size > max)
		serve_reply_error(sv, id, PROTO_E_TOO_LARGE,
		    "the %s image is %d bytes, over the largest answer (%zu): "
		    "take a region, a smaller scale, or %s",
		    shot_formats[rq->format], sh->pkt->size, max,
		    rq->format == SHOT_PNG ? "format jpeg" : "a lower quality");
	else
		shot_reply(
		    sv, id, rq, sh->pkt, taken, capture_ms, shot_now() - t0);
	av_packet_unref(sh->pkt);
}

static void
shot_op_cb(struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	struct shot *sh = arg;
	struct shot_req rq;
	XWindowAttributes wa;
	enum AVPixelFormat fmt;
	char *cause = NULL;
	uint64_t taken;
	Display *dpy;
	XImage *img;
	double t0;

	if (shot_args(args, &rq, &cause) < 0)
		goto bad;
	if ((dpy = capture_display(sh->cp)) == NULL) {
		SHOT_UNAVAILABLE(sv, id, sh);
		return;
	}
	if (!XGetWindowAttributes(dpy, DefaultRootWindow(dpy), &wa)) {
		SHOT_UNAVAILABLE(sv, id, sh);
		return;
	}
	if (shot_size(args, &wa, &rq, &cause) < 0)
		goto bad;
	t0 = shot_now();
	if ((img = shot_capture(sh, sv, id, dpy, &wa, &rq, &fmt)) == NULL)
		return;
	taken = proto_now_ms();
	shot_answer(sh, sv, id, &rq, img, fmt, taken, shot_now() - t0);
	capture_release(sh->cp, img);
	return;

bad:
	serve_reply_error(
	    sv, id, PROTO_E_BAD_ARGS, "desktop.screenshot: %s", cause);
	free(cause);
}

void
shot_register(struct shot *sh, struct serve *sv)
{
	serve_add(sv, CATALOG_OP_DESKTOP_SCREENSHOT, shot_op_cb, sh);
}
