/* gw_queue: a FIFO of whole messages waiting for a socket to become
 * writable, counted in bytes and bounded. Each message carries LWS_PRE
 * bytes of headroom so that lws_write can frame it in place. */
#ifndef BERTH_GW_QUEUE_H
#define BERTH_GW_QUEUE_H

#include <libwebsockets.h>
#include <stddef.h>
#include <sys/queue.h>

/* One message: allocated by gw_queue_msg_new, owned by the queue once
 * pushed, freed by gw_queue_pop or gw_queue_clear. */
struct gw_queue_msg {
	STAILQ_ENTRY(gw_queue_msg) entry;
	size_t len;
	int mark;            /* the owner's to set; 0 from gw_queue_msg_new */
	unsigned char buf[]; /* LWS_PRE headroom, then len bytes */
};

struct gw_queue {
	STAILQ_HEAD(, gw_queue_msg) head;
	size_t bytes; /* payload bytes queued, headroom not counted */
	size_t count;
	size_t limit; /* bytes; see gw_queue_push */
};

void gw_queue_init(struct gw_queue *q, size_t limit);
/* A message of len payload bytes for the caller to fill. */
struct gw_queue_msg *gw_queue_msg_new(size_t len);
/* Where the payload of m starts (after the headroom). */
unsigned char *gw_queue_payload(struct gw_queue_msg *m);
/* Appends m, unless the queue already holds its limit of bytes: then
 * returns -1 and m stays the caller's. A message is never refused for its
 * own size, so a queue holds at most its limit plus one message: a full
 * 64 KiB data message behind an answer fits a limit of 64 KiB, where a
 * bound on the total would drop every fresh client with such a queue. */
int gw_queue_push(struct gw_queue *q, struct gw_queue_msg *m);
/* Copies len bytes into a new message marked mark and pushes it; -1 as
 * above. */
int gw_queue_push_copy(
    struct gw_queue *q, const void *data, size_t len, int mark);
/* The oldest message, or NULL. */
struct gw_queue_msg *gw_queue_first(struct gw_queue *q);
/* Removes and frees the oldest message. */
void gw_queue_pop(struct gw_queue *q);
/* Frees every message. */
void gw_queue_clear(struct gw_queue *q);

#endif
