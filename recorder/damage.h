/* damage: desktop.wait_change, an answer as soon as the screen changes
 * within a region, or at a timeout. The X server says what changed (the
 * DAMAGE extension on the root window): nothing is captured or compared,
 * and nothing is asked of the server while nobody waits.
 *
 * Ownership: damage owns the pending waits and, while any is pending,
 * the Damage object on the X server; damage_free answers nothing (the
 * connection to berthd goes with the process). The xconn and the serve
 * are the caller's. */
#ifndef BERTH_DAMAGE_H
#define BERTH_DAMAGE_H

#include <X11/Xlib.h>
#include <stdbool.h>
#include <stdint.h>

#include "serve.h"
#include "xconn.h"

/* Waits pending at once, at most (berthd forwards at most 256 requests
 * to berth-desktop at a time). */
#define DAMAGE_MAX_WAITS 64
#define DAMAGE_TIMEOUT_DEFAULT_MS 10000
#define DAMAGE_TIMEOUT_MAX_MS 60000

struct damage;

struct damage *damage_create(struct xconn *xc);
void damage_free(struct damage *d);
/* Adds desktop.wait_change to sv (and keeps sv to answer later). */
void damage_register(struct damage *d, struct serve *sv);
/* Every X event read goes here: true if it was a damage event (the
 * waits it concerns are answered). */
bool damage_event(struct damage *d, const XEvent *ev);
/* Answers the waits whose time is up, and every wait if the X connection
 * they watched is gone. Call it on every turn of the loop. */
void damage_timer(struct damage *d, uint64_t now);
/* Milliseconds until the next wait's deadline; -1 if none is pending. */
int damage_wait_ms(const struct damage *d, uint64_t now);

#endif
