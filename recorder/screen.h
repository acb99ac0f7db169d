/* screen: desktop.info, desktop.cursor and desktop.windows, what the
 * display is, where the pointer is and which windows are on it, each read
 * from the X server when asked.
 *
 * Ownership: screen owns only the atoms it interned, per connection; the
 * xconn and the shot (asked whether screenshots use MIT-SHM) are the
 * caller's and outlive it. */
#ifndef BERTH_SCREEN_H
#define BERTH_SCREEN_H

#include "serve.h"
#include "shot.h"
#include "xconn.h"

/* The most windows listed, and the longest title kept (bytes of UTF-8;
 * a longer one is cut at a character's start). */
#define SCREEN_MAX_WINDOWS 1024
#define SCREEN_TITLE_MAX 512
/* The most monitors listed. */
#define SCREEN_MAX_MONITORS 64

struct screen;

struct screen *screen_create(struct xconn *xc, struct shot *sh);
void screen_free(struct screen *sc);
/* Adds desktop.info, desktop.cursor and desktop.windows to sv. */
void screen_register(struct screen *sc, struct serve *sv);

#endif
