/* gw_queue: bounded, byte-counted FIFO of messages with LWS_PRE headroom;
 * owns the messages pushed into it. */
#include <stdlib.h>
#include <string.h>

#include "gw_queue.h"
#include "xmalloc.h"

void
gw_queue_init(struct gw_queue *q, size_t limit)
{
	STAILQ_INIT(&q->head);
	q->bytes = 0;
	q->count = 0;
	q->limit = limit;
}

struct gw_queue_msg *
gw_queue_msg_new(size_t len)
{
	struct gw_queue_msg *m;

	m = xmalloc(sizeof *m + LWS_PRE + len);
	m->len = len;
	m->mark = 0;
	return m;
}

unsigned char *
gw_queue_payload(struct gw_queue_msg *m)
{
	return m->buf + LWS_PRE;
}

int
gw_queue_push(struct gw_queue *q, struct gw_queue_msg *m)
{
	if (q->bytes >= q->limit)
		return -1;
	STAILQ_INSERT_TAIL(&q->head, m, entry);
	q->bytes += m->len;
	q->count++;
	return 0;
}

int
gw_queue_push_copy(struct gw_queue *q, const void *data, size_t len, int mark)
{
	struct gw_queue_msg *m = gw_queue_msg_new(len);

	memcpy(gw_queue_payload(m), data, len);
	m->mark = mark;
	if (gw_queue_push(q, m) < 0) {
		free(m);
		return -1;
	}
	return 0;
}

struct gw_queue_msg *
gw_queue_first(struct gw_queue *q)
{
	return STAILQ_FIRST(&q->head);
}

void
gw_queue_pop(struct gw_queue *q)
{
	struct gw_queue_msg *m = STAILQ_FIRST(&q->head);

	if (m == NULL)
		return;
	STAILQ_REMOVE_HEAD(&q->head, entry);
	q->bytes -= m->len;
	q->count--;
	free(m);
}

void
gw_queue_clear(struct gw_queue *q)
{
	while (q->count != 0)
		gw_queue_pop(q);
}
