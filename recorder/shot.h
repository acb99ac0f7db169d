/* shot: desktop.screenshot. Captures the screen (or a region of it)
 * through capture (MIT-SHM, the pointer drawn in), scales and converts
 * with libswscale and encodes a PNG or a JPEG with libavcodec, in
 * process.
 *
 * Ownership: shot owns its scaler and its encoders, kept from one
 * screenshot to the next while the sizes stay; shot_free releases them.
 * The xconn and the capture are the caller's. */
#ifndef BERTH_SHOT_H
#define BERTH_SHOT_H

#include <stdbool.h>

#include "capture.h"
#include "serve.h"
#include "xconn.h"

/* The largest image made, in pixels (a 3840x2160 screen at scale 2, or
 * 1920x1080 at 4, is about 33 Mpx), and its longest side: past them a
 * request is refused before any memory is taken. */
#define SHOT_MAX_PIXELS (36u * 1024 * 1024)
#define SHOT_MAX_SIDE 16384

struct shot;

struct shot *shot_create(struct xconn *xc, struct capture *cp);
void shot_free(struct shot *sh);
/* Adds desktop.screenshot to sv. */
void shot_register(struct shot *sh, struct serve *sv);
/* Whether screenshots on the current connection use MIT-SHM (tried
 * first if not yet tried on it); false while X is not connected. */
bool shot_shm(struct shot *sh);

#endif
