/* encode: one recording's encoder, in a thread of its own. The main loop
 * pushes captured frames into a bounded queue; the thread converts them
 * (libswscale, to YUV 4:2:0), encodes them (H.264 with libx264; without
 * it another H.264 encoder, else MPEG-4 part 2) and writes a fragmented
 * MP4 (libavformat) that a kill leaves playable up to its last
 * fragment. At the end it drains the encoder, writes the trailer and
 * remuxes the file into a plain MP4 with its index in front.
 *
 * Ownership: encode owns the thread, the queue's buffers, the codec and
 * muxer contexts; encode_free joins the thread and frees them. The files
 * are the caller's to publish or remove. */
#ifndef BERTH_ENCODE_H
#define BERTH_ENCODE_H

#include <libavutil/pixfmt.h>
#include <stdbool.h>
#include <stdint.h>

/* Frames waiting for the encoder, at most (fewer for large frames, see
 * encode.c): one more is dropped. */
#define ENCODE_QUEUE_MAX 8

struct encode_params {
	const char *path;  /* the fragmented MP4 written while recording */
	const char *final; /* the plain MP4 made at the end */
	int width;         /* even */
	int height;        /* even */
	enum AVPixelFormat format; /* of the pixels pushed */
	int fps;
	int quality; /* 1..100 */
};

/* What the thread has done so far. */
struct encode_stats {
	uint64_t frames; /* written to the file */
	uint64_t bytes;  /* of the file */
	bool done;       /* the thread has ended: finished, or failed */
	bool failed;
};

struct encode;

/* Opens the encoder and the file, and starts the thread. NULL with
 * *cause (the caller frees it) if either cannot be had. */
struct encode *encode_start(const struct encode_params *p, char **cause);
/* The encoder's name ("libx264"). */
const char *encode_codec(const struct encode *e);
/* Queues a copy of a frame (height rows of stride bytes) shown from pts
 * (ms since the recording's start, increasing). false if the queue is
 * full or the thread has ended: the frame is dropped. */
bool encode_push(
    struct encode *e, const uint8_t *data, int stride, int64_t pts);
/* Tells the thread to end once the queue is empty: the last frame lasts
 * until end_pts; with remux the plain MP4 is made. Returns at once. */
void encode_finish(struct encode *e, int64_t end_pts, bool remux);
void encode_stats(struct encode *e, struct encode_stats *st);
/* Ends the thread (encode_finish without remux, if not told yet), waits
 * for it and frees. Returns 0, or -1 with *cause if it failed. */
int encode_free(struct encode *e, char **cause);

#endif
