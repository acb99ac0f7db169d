/* encode: a recording's encoder thread (see encode.h). The queue is a
 * ring of frame buffers (at most ENCODE_QUEUE_MAX, made as needed) with
 * one producer (the main loop) and one consumer (the thread); the lock guards
 * the ring's indices, the end request and the counters, never a conversion or
 * an encode. */
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
#include <sys/stat.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "log.h"
#include "xmalloc.h"

/* libx264's speed: veryfast, the preset bench/record.sh compares with
 * ffmpeg's. zerolatency: frames come out as they go in (no lookahead,
 * no frame threads), which a damage-gated capture needs: a change
 * followed by a still screen would otherwise stay inside the encoder,
 * out of the file, until later frames pushed it out. */
#define ENCODE_X264_PRESET "veryfast"
#define ENCODE_X264_TUNE "zerolatency"
#define ENCODE_THREADS 2
/* A keyframe at least this often (ms of the recording), whatever the
 * frame count: the fragments, cut at keyframes, then hold at most about
 * a second of activity, and a player can seek to any second. */
#define ENCODE_KEY_MS 1000
/* The queue's frames take at most this much memory (but there are at
 * least two): eight 1280x800 frames, two of 3840x2160. */
#define ENCODE_QUEUE_BYTES (64u << 20)
/* With frames written but their fragment not yet out, a quiet screen
 * flushes it after this long, so a kill loses at most that much. */
#define ENCODE_IDLE_FLUSH_MS 1000

struct encode_slot {
	uint8_t *data; /* width x height pixels, rows packed */
	int64_t pts;
};

struct encode {
	/* Set by encode_start, read-only while the thread runs. */
	char *path;
	char *final;
	int width;
	int height;
	int fps;
	int rowbytes; /* of a queued frame */
	int nslots;   /* the queue's length */
	int quality;  /* the lambda of a fixed-quantiser encoder, or 0 */
	AVCodecContext *ctx;
	AVFormatContext *oc;
	AVStream *st;
	struct SwsContext *sws;
	pthread_t thread;
	bool started; /* the thread was created */

	/* The thread's own. */
	AVFrame *frame; /* the picture being encoded */
	AVPacket *pkt;
	int64_t key_pts; /* of the last keyframe, -1 before the first */
	bool unflushed;  /* packets written since the last fragment */
	struct timespec written_at;

	/* Under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct encode_slot slots[ENCODE_QUEUE_MAX];
	int head;
	int count;
	bool finish;
	bool remux;
	int64_t end_pts;
	bool done;
	bool failed;
	char *cause;
	uint64_t frames;
	uint64_t bytes;
};

static void *encode_main(void *arg);

/* CRF 40 at quality 1 to 18 at 100; 60, the default, is about 27. */
static double
encode_crf(int quality)
{
	return 40.0 - (quality - 1) * 22.0 / 99.0;
}

/* The MPEG-4 fallback's quantiser: 31 at quality 1 to 2 at 100. */
static int
encode_qscale(int quality)
{
	return 31 - (quality - 1) * 29 / 99;
}

/* Sets what every encoder takes, and each one's own quality knob. */
static void
encode_configure(
    AVCodecContext *ctx, const AVCodec *codec, const struct encode_params *p)
{
	ctx->width = p->width;
	ctx->height = p->height;
	ctx->pix_fmt = AV_PIX_FMT_YUV420P;
	ctx->time_base = (AVRational){1, 1000};
	ctx->framerate = (AVRational){p->fps, 1};
	ctx->gop_size = p->fps;
	ctx->max_b_frames = 0;
	ctx->thread_count = ENCODE_THREADS;
	ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
	/* What libswscale converts with by default, said in the stream so
	 * that players convert back alike. */
	ctx->colorspace = AVCOL_SPC_SMPTE170M;
	ctx->color_range = AVCOL_RANGE_MPEG;
	if (strcmp(codec->name, "libx264") == 0) {
		av_opt_set(ctx->priv_data, "preset", ENCODE_X264_PRESET, 0);
		av_opt_set(ctx->priv_data, "tune", ENCODE_X264_TUNE, 0);
		av_opt_set_double(
		    ctx->priv_data, "crf", encode_crf(p->quality), 0);
		av_opt_set_int(ctx->priv_data, "forced-idr", 1, 0);
	} else if (codec->id == AV_CODEC_ID_MPEG4) {
		ctx->flags |= AV_CODEC_FLAG_QSCALE;
		ctx->global_quality = encode_qscale(p->quality) * FF_QP2LAMBDA;
	} else {
		/* Other H.264 encoders take a bitrate: 0.02 to 0.2 bits a
		 * pixel at the full frame rate. */
		ctx->bit_rate = (int64_t)((double)p->width * p->height *
		    p->fps * (0.02 + 0.18 * p->quality / 100.0));
	}
}

static AVCodecContext *
encode_try(const AVCodec *codec, const struct encode_params *p)
{
	AVCodecContext *ctx;
	int r;

	if ((ctx = avcodec_alloc_context3(codec)) == NULL)
		log_fatal("%s: out of memory", __func__);
	encode_configure(ctx, codec, p);
	if ((r = avcodec_open2(ctx, codec, NULL)) < 0) {
		log_info("encoder %s cannot be opened: %s", codec->name,
		    av_err2str(r));
		avcodec_free_context(&ctx);
	}
	return ctx;
}

/*
 * The first encoder that opens: libx264; else any other H.264 encoder
 * libavcodec has (hardware ones fail to open without their device, and
 * are passed); else MPEG-4 part 2, which every libavcodec has.
 */
static AVCodecContext *
encode_open_codec(const struct encode_params *p, char **cause)
{
	const AVCodec *codec;
	AVCodecContext *ctx;
	void *it = NULL;

	if ((codec = avcodec_find_encoder_by_name("libx264")) != NULL &&
	    (ctx = encode_try(codec, p)) != NULL)
		return ctx;
	while ((codec = av_codec_iterate(&it)) != NULL) {
		if (!av_codec_is_encoder(codec) ||
		    codec->id != AV_CODEC_ID_H264 ||
		    strcmp(codec->name, "libx264") == 0 ||
		    strcmp(codec->name, "libx264rgb") == 0)
			continue;
		if ((ctx = encode_try(codec, p)) != NULL)
			return ctx;
	}
	if ((codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4)) != NULL &&
	    (ctx = encode_try(codec, p)) != NULL)
		return ctx;
	*cause =
	    xstrdup("libavcodec has no H.264 or MPEG-4 encoder that opens");
	return NULL;
}

/* The fragmented MP4: an empty moov first, then a fragment at every
 * keyframe and at least every second, each starting at its own decode
 * time (default_base_moof), so a file cut after any fragment plays. */
static int
encode_open_file(struct encode *e, char **cause)
{
	AVDictionary *opts = NULL;
	int r;

	r = avformat_alloc_output_context2(&e->oc, NULL, "mp4", e->path);
	if (r < 0 || e->oc == NULL) {
		*cause = xasprintf("no MP4 muxer: %s", av_err2str(r));
		return -1;
	}
	if ((e->st = avformat_new_stream(e->oc, NULL)) == NULL)
		log_fatal("%s: out of memory", __func__);
	avcodec_parameters_from_context(e->st->codecpar, e->ctx);
	e->st->time_base = e->ctx->time_base;
	if ((r = avio_open(&e->oc->pb, e->path, AVIO_FLAG_WRITE)) < 0) {
		*cause =
		    xasprintf("cannot create %s: %s", e->path, av_err2str(r));
		return -1;
	}
	av_dict_set(
	    &opts, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0);
	av_dict_set(&opts, "frag_duration", "1000000", 0);
	r = avformat_write_header(e->oc, &opts);
	av_dict_free(&opts);
	if (r < 0) {
		*cause =
		    xasprintf("cannot write to %s: %s", e->path, av_err2str(r));
		return -1;
	}
	avio_flush(e->oc->pb);
	return 0;
}

static void
encode_close_file(struct encode *e)
{
	if (e->oc == NULL)
		return;
	if (e->oc->pb != NULL)
		avio_closep(&e->oc->pb);
	avformat_free_context(e->oc);
	e->oc = NULL;
}

static void
encode_release(struct encode *e)
{
	int i;

	encode_close_file(e);
	avcodec_free_context(&e->ctx);
	sws_freeContext(e->sws);
	av_frame_free(&e->frame);
	av_packet_free(&e->pkt);
	for (i = 0; i < ENCODE_QUEUE_MAX; i++)
		free(e->slots[i].data);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e->cause);
	free(e->path);
	free(e->final);
	free(e);
}

static int
encode_setup(struct encode *e, const struct encode_params *p, char **cause)
{
	const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(p->format);
	int r;

	if (desc == NULL) {
		*cause = xstrdup("the screen's pixel layout is not supported");
		return -1;
	}
	e->rowbytes = p->width * (av_get_padded_bits_per_pixel(desc) / 8);
	e->nslots =
	    (int)(ENCODE_QUEUE_BYTES / ((size_t)e->rowbytes * p->height));
	if (e->nslots < 2)
		e->nslots = 2;
	if (e->nslots > ENCODE_QUEUE_MAX)
		e->nslots = ENCODE_QUEUE_MAX;
	e->sws = sws_getContext(p->width, p->height, p->format, p->width,
	    p->height, AV_PIX_FMT_YUV420P, SWS_BILINEAR, NULL, NULL, NULL);
	if (e->sws == NULL) {
		*cause =
		    xasprintf("no conversion from %s to yuv420p", desc->name);
		return -1;
	}
	if ((e->ctx = encode_open_codec(p, cause)) == NULL)
		return -1;
	if (e->ctx->codec->id == AV_CODEC_ID_MPEG4)
		e->quality = e->ctx->global_quality;
	e->frame->width = p->width;
	e->frame->height = p->height;
	e->frame->format = AV_PIX_FMT_YUV420P;
	if ((r = av_frame_get_buffer(e->frame, 0)) < 0) {
		*cause = xasprintf("no frame of %dx%d: %s", p->width, p->height,
		    av_err2str(r));
		return -1;
	}
	return encode_open_file(e, cause);
}

struct encode *
encode_start(const struct encode_params *p, char **cause)
{
	pthread_condattr_t ca;
	struct encode *e;
	int r;

	e = xcalloc(1, sizeof *e);
	e->path = xstrdup(p->path);
	e->final = xstrdup(p->final);
	e->width = p->width;
	e->height = p->height;
	e->fps = p->fps;
	e->key_pts = -1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_condattr_destroy(&ca);
	e->frame = av_frame_alloc();
	e->pkt = av_packet_alloc();
	if (e->frame == NULL || e->pkt == NULL)
		log_fatal("%s: out of memory", __func__);
	if (encode_setup(e, p, cause) < 0)
		goto fail;
	if ((r = pthread_create(&e->thread, NULL, encode_main, e)) != 0) {
		*cause = xasprintf("cannot start the encoder: %s", strerror(r));
		goto fail;
	}
	e->started = true;
	return e;

fail:
	encode_close_file(e);
	unlink(e->path);
	encode_release(e);
	return NULL;
}

const char *
encode_codec(const struct encode *e)
{
	return e->ctx->codec->name;
}

bool
encode_push(struct encode *e, const uint8_t *data, int stride, int64_t pts)
{
	struct encode_slot *s;
	int i, y;

	pthread_mutex_lock(&e->lock);
	if (e->count == e->nslots || e->done || e->finish) {
		pthread_mutex_unlock(&e->lock);
		return false;
	}
	i = (e->head + e->count) % e->nslots;
	pthread_mutex_unlock(&e->lock);

	/* The slot past the queue's end is the producer's alone. */
	s = &e->slots[i];
	if (s->data == NULL)
		s->data = xmalloc((size_t)e->rowbytes * (size_t)e->height);
	for (y = 0; y < e->height; y++)
		memcpy(s->data + (size_t)y * e->rowbytes,
		    data + (size_t)y * stride, (size_t)e->rowbytes);
	s->pts = pts;

	pthread_mutex_lock(&e->lock);
	e->count++;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	return true;
}

void
encode_finish(struct encode *e, int64_t end_pts, bool remux)
{
	pthread_mutex_lock(&e->lock);
	if (!e->finish) {
		e->finish = true;
		e->remux = remux;
		e->end_pts = end_pts;
		pthread_cond_signal(&e->cond);
	}
	pthread_mutex_unlock(&e->lock);
}

void
encode_stats(struct encode *e, struct encode_stats *st)
{
	pthread_mutex_lock(&e->lock);
	st->frames = e->frames;
	st->bytes = e->bytes;
	st->done = e->done;
	st->failed = e->failed;
	pthread_mutex_unlock(&e->lock);
}

int
encode_free(struct encode *e, char **cause)
{
	int r = 0;

	if (e->started) {
		encode_finish(e, 0, false);
		pthread_join(e->thread, NULL);
	}
	if (e->failed) {
		*cause = e->cause;
		e->cause = NULL;
		r = -1;
	}
	encode_release(e);
	return r;
}

/* -- the thread */

/* Writes the packets the encoder has ready. */
static int
encode_drain(struct encode *e, char **cause)
{
	AVPacket *pkt = e->pkt;
	int64_t period = 1000 / e->fps;
	uint64_t bytes;
	int r;

	for (;;) {
		r = avcodec_receive_packet(e->ctx, pkt);
		if (r == AVERROR(EAGAIN) || r == AVERROR_EOF)
			return 0;
		if (r < 0) {
			*cause = xasprintf("the %s encoder failed: %s",
			    e->ctx->codec->name, av_err2str(r));
			return -1;
		}
		if (pkt->flags & AV_PKT_FLAG_KEY)
			e->key_pts = pkt->pts;
		pkt->duration = period;
		av_packet_rescale_ts(pkt, e->ctx->time_base, e->st->time_base);
		pkt->stream_index = e->st->index;
		r = av_write_frame(e->oc, pkt);
		av_packet_unref(pkt);
		if (r < 0) {
			*cause = xasprintf(
			    "cannot write to %s: %s", e->path, av_err2str(r));
			return -1;
		}
		/* A fragment the muxer completed goes to the file now, not
		 * when avio's buffer fills. */
		avio_flush(e->oc->pb);
		if (e->oc->pb->error < 0) {
			*cause = xasprintf("cannot write to %s: %s", e->path,
			    av_err2str(e->oc->pb->error));
			return -1;
		}
		bytes = (uint64_t)avio_tell(e->oc->pb);
		e->unflushed = true;
		clock_gettime(CLOCK_MONOTONIC, &e->written_at);
		pthread_mutex_lock(&e->lock);
		e->frames++;
		e->bytes = bytes;
		pthread_mutex_unlock(&e->lock);
	}
}

static int
encode_send(struct encode *e, const AVFrame *frame, char **cause)
{
	int r;

	if ((r = avcodec_send_frame(e->ctx, frame)) < 0) {
		*cause = xasprintf("the %s encoder failed: %s",
		    e->ctx->codec->name, av_err2str(r));
		return -1;
	}
	return encode_drain(e, cause);
}

/* Converts a queued frame into e->frame and encodes it. */
static int
encode_frame(struct encode *e, const struct encode_slot *s, char **cause)
{
	const uint8_t *src[1] = {s->data};
	const int stride[1] = {e->rowbytes};
	AVFrame *f = e->frame;
	int r;

	if ((r = av_frame_make_writable(f)) < 0) {
		*cause = xasprintf("no frame to encode: %s", av_err2str(r));
		return -1;
	}
	sws_scale(e->sws, src, stride, 0, e->height, f->data, f->linesize);
	f->pts = s->pts;
	f->quality = e->quality;
	f->pict_type = e->key_pts < 0 || s->pts - e->key_pts >= ENCODE_KEY_MS
	    ? AV_PICTURE_TYPE_I
	    : AV_PICTURE_TYPE_NONE;
	return encode_send(e, f, cause);
}

/*
 * Puts the fragment being built into the file: on a quiet screen no
 * packet comes to close it. Its last frame then lasts a frame period in
 * the file, not until the next one (not known yet): the next fragment is
 * marked discontinuous, to start at its own time (its tfdt) rather than
 * where the durations before it add up to, which would take the quiet
 * time out of the video.
 */
static void
encode_flush_fragment(struct encode *e)
{
	av_write_frame(e->oc, NULL);
	avio_flush(e->oc->pb);
	av_opt_set(e->oc->priv_data, "movflags", "+frag_discont", 0);
	e->unflushed = false;
}

/* The stream's end: the encoder drained, the trailer written. The file
 * is then complete even before the remux. */
static int
encode_end(struct encode *e, char **cause)
{
	int r;

	if (encode_send(e, NULL, cause) < 0)
		return -1;
	if ((r = av_write_trailer(e->oc)) < 0) {
		*cause =
		    xasprintf("cannot finish %s: %s", e->path, av_err2str(r));
		return -1;
	}
	if ((r = avio_closep(&e->oc->pb)) < 0) {
		*cause =
		    xasprintf("cannot close %s: %s", e->path, av_err2str(r));
		return -1;
	}
	return 0;
}

/*
 * Copies the packets, one behind: the last one is made to last until
 * end_pts (ms), so that a quiet screen before the stop is time in the
 * video, and the video ends when the recording did.
 */
static int
encode_remux_copy(AVFormatContext *ic, AVFormatContext *oc, AVPacket *pkt,
    AVPacket *held, int64_t end_pts)
{
	AVStream *ist = ic->streams[0], *ost = oc->streams[0];
	int64_t end;
	int r;

	while ((r = av_read_frame(ic, pkt)) >= 0) {
		if (pkt->stream_index != 0) {
			av_packet_unref(pkt);
			continue;
		}
		av_packet_rescale_ts(pkt, ist->time_base, ost->time_base);
		pkt->pos = -1;
		if (held->data != NULL &&
		    (r = av_interleaved_write_frame(oc, held)) < 0) {
			av_packet_unref(pkt);
			return r;
		}
		av_packet_move_ref(held, pkt);
	}
	if (r != AVERROR_EOF)
		return r;
	if (held->data == NULL)
		return 0;
	end = av_rescale_q(end_pts, (AVRational){1, 1000}, ost->time_base);
	if (end > held->dts)
		held->duration = end - held->dts;
	return av_interleaved_write_frame(oc, held);
}

/*
 * The fragmented file, copied (no re-encoding) into a plain MP4 whose
 * moov, with the real duration and every sample's place, comes first:
 * browsers and players handle fragmented files' missing duration badly,
 * and a moov at the front plays while it downloads.
 */
static int
encode_remux(const char *in, const char *out, int64_t end_pts, char **cause)
{
	AVFormatContext *ic = NULL, *oc = NULL;
	AVDictionary *opts = NULL;
	AVPacket *pkt = NULL, *held = NULL;
	AVStream *ost;
	int r;

	if ((r = avformat_open_input(&ic, in, NULL, NULL)) < 0)
		goto fail;
	if (ic->nb_streams < 1) {
		r = AVERROR_INVALIDDATA;
		goto fail;
	}
	if ((r = avformat_alloc_output_context2(&oc, NULL, "mp4", out)) < 0)
		goto fail;
	if ((ost = avformat_new_stream(oc, NULL)) == NULL ||
	    (pkt = av_packet_alloc()) == NULL ||
	    (held = av_packet_alloc()) == NULL)
		log_fatal("%s: out of memory", __func__);
	avcodec_parameters_copy(ost->codecpar, ic->streams[0]->codecpar);
	ost->codecpar->codec_tag = 0;
	ost->time_base = ic->streams[0]->time_base;
	if ((r = avio_open(&oc->pb, out, AVIO_FLAG_WRITE)) < 0)
		goto fail;
	av_dict_set(&opts, "movflags", "+faststart", 0);
	r = avformat_write_header(oc, &opts);
	av_dict_free(&opts);
	if (r < 0 || (r = encode_remux_copy(ic, oc, pkt, held, end_pts)) < 0 ||
	    (r = av_write_trailer(oc)) < 0)
		goto fail;
	r = avio_closep(&oc->pb);

fail:
	if (r < 0)
		*cause = xasprintf(
		    "cannot remux %s into %s: %s", in, out, av_err2str(r));
	av_packet_free(&pkt);
	av_packet_free(&held);
	if (oc != NULL && oc->pb != NULL)
		avio_closep(&oc->pb);
	avformat_free_context(oc);
	avformat_close_input(&ic);
	return r < 0 ? -1 : 0;
}

/* Sleeps until there is a frame or the end is asked; a fragment left
 * open while nothing comes is flushed after ENCODE_IDLE_FLUSH_MS. Called
 * and returns with the lock held. */
static void
encode_wait(struct encode *e)
{
	struct timespec ts;

	while (e->count == 0 && !e->finish) {
		if (!e->unflushed) {
			pthread_cond_wait(&e->cond, &e->lock);
			continue;
		}
		ts = e->written_at;
		ts.tv_sec += ENCODE_IDLE_FLUSH_MS / 1000;
		ts.tv_nsec += (ENCODE_IDLE_FLUSH_MS % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&e->cond, &e->lock, &ts) ==
		        ETIMEDOUT &&
		    e->count == 0 && !e->finish) {
			pthread_mutex_unlock(&e->lock);
			encode_flush_fragment(e);
			pthread_mutex_lock(&e->lock);
		}
	}
}

static void *
encode_main(void *arg)
{
	struct encode *e = arg;
	char *cause = NULL;
	uint64_t bytes = 0;
	struct stat sb;
	int64_t end_pts;
	bool remux;
	int r = 0;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		encode_wait(e);
		if (e->count == 0)
			break;
		pthread_mutex_unlock(&e->lock);
		r = encode_frame(e, &e->slots[e->head], &cause);
		pthread_mutex_lock(&e->lock);
		e->head = (e->head + 1) % e->nslots;
		e->count--;
		if (r < 0)
			break;
	}
	/* Here the end was asked and the queue is empty, or a frame
	 * failed. */
	end_pts = e->end_pts;
	remux = e->remux;
	pthread_mutex_unlock(&e->lock);

	if (r == 0)
		r = encode_end(e, &cause);
	if (r == 0 && remux)
		r = encode_remux(e->path, e->final, end_pts, &cause);

	/* What is published is the plain file. */
	if (r == 0 && remux && stat(e->final, &sb) == 0)
		bytes = (uint64_t)sb.st_size;
	pthread_mutex_lock(&e->lock);
	e->done = true;
	e->failed = r < 0;
	e->cause = cause;
	if (bytes != 0)
		e->bytes = bytes;
	pthread_mutex_unlock(&e->lock);
	return NULL;
}
