/* record: record.start, record.stop, record.status. Records the screen
 * (or a region) to MP4: on a timer at the asked frame rate the main loop
 * captures a frame only when the X server reported damage in the region
 * or the pointer moved, and hands it to the recording's encoder thread
 * (encode.c). A recording ended (by record.stop or a limit) is finished,
 * published to berthd as an artifact (artifact.publish) and told in the
 * journal (desktop.emit: record.started, record.published,
 * record.failed).
 *
 * Ownership: record owns its recordings (the running ones and the last
 * ended ones, for record.status), their encoders and files until they
 * are published, and the Damage object on the X server while one runs.
 * The xconn, the capture and the serve are the caller's; record_free
 * must come after serve_free (which answers record's own requests). */
#ifndef BERTH_RECORD_H
#define BERTH_RECORD_H

#include <X11/Xlib.h>
#include <stdbool.h>

#include "capture.h"
#include "serve.h"
#include "xconn.h"

/* Recordings running (or finishing) at once, at most. */
#define RECORD_MAX_ACTIVE 2
/* Recordings kept for record.status, ended ones included. */
#define RECORD_KEEP 16

struct record;

/* dir: where the files are made; NULL: $BERTH_STATE_DIR/recordings. */
struct record *record_create(
    struct xconn *xc, struct capture *cp, const char *dir);
/* Ends what runs (the fragmented files are finished and left in the
 * directory, unpublished) and frees. */
void record_free(struct record *r);
/* Adds the record.* ops to sv (and keeps sv to answer and ask later). */
void record_register(struct record *r, struct serve *sv);
/* Every X event read goes here first: true if it was the recordings'
 * damage. */
bool record_event(struct record *r, const XEvent *ev);
/* Captures what is due, watches the limits, finishes and publishes what
 * ended. Call it on every turn of the loop. */
void record_timer(struct record *r);
/* Milliseconds until record_timer has something to do; -1 if nothing. */
int record_wait_ms(const struct record *r);

#endif
