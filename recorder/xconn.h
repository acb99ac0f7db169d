/* xconn: berth-desktop's connection to the X server. Opens it with retry
 * and backoff, and never lets Xlib end the process: a fatal I/O error
 * marks the connection broken, and it is dropped and opened again. */
#ifndef BERTH_XCONN_H
#define BERTH_XCONN_H

#include <X11/Xlib.h>
#include <stdbool.h>
#include <stdint.h>

#include "backoff.h"

/* The first and the longest wait between two attempts to connect. */
#define XCONN_BACKOFF_MIN_MS 100
#define XCONN_BACKOFF_MAX_MS 2000

/*
 * One display connection. Xlib's error handlers are process-wide, so a
 * process has at most one xconn at a time. xconn_create allocates it,
 * xconn_free closes the Display and frees it.
 */
struct xconn {
	char *name;             /* the display, as given (":1") */
	Display *dpy;           /* NULL while not connected */
	bool broken;            /* an I/O error: dpy is dead, to be dropped */
	char *cause;            /* why not connected; NULL while connected */
	uint64_t retry_at;      /* clock_mono_ms of the next attempt */
	struct backoff backoff; /* the wait after the next failure */
	unsigned long errors;   /* protocol errors seen (BadWindow, ...) */
	uint64_t serial;        /* connections made: what server-side state
	                           (an SHM segment, a Damage) belongs to */
};

struct xconn *xconn_create(const char *name);
void xconn_free(struct xconn *xc);
/* Tries to connect unless connected or the retry is not due. Returns 0
 * if connected (*fresh: by this call), -1 if not (xc->cause says why). */
int xconn_open(struct xconn *xc, bool *fresh);
/* The live Display, or NULL. A connection an I/O error broke is closed
 * here, so that after any X call this says whether it still stands. */
Display *xconn_get(struct xconn *xc);
/* Milliseconds until the next attempt to connect; -1 if connected. */
int xconn_wait_ms(const struct xconn *xc, uint64_t now);

#endif
