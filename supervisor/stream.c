/* stream: output streams that outlive their viewers (see stream.h). Owns
 * each stream's ring, redactor, timers and viewers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redact.h"
#include "secrets.h"
#include "stream.h"
#include "xmalloc.h"

static struct event_base *stream_base;
static msgpack_sbuffer stream_sb;
static msgpack_packer stream_pk;

void
stream_setup(struct event_base *base)
{
	stream_base = base;
	msgpack_sbuffer_init(&stream_sb);
	msgpack_packer_init(&stream_pk, &stream_sb, msgpack_sbuffer_write);
}

/* Where a viewer is, for pacing: what it has, as far as berthd knows. */
static uint64_t
stream_place(const struct stream_viewer *v)
{
	return v->acks ? v->acked : v->offset;
}

/* The oldest byte a paced stream must keep for a viewer; false if none. */
static bool
stream_floor(const struct stream *s, uint64_t *floor)
{
	const struct stream_viewer *v;
	bool any = s->holding;

	*floor = s->hold;
	for (v = s->viewers; v != NULL; v = v->next_in_stream) {
		if (!any || stream_place(v) < *floor)
			*floor = stream_place(v);
		any = true;
	}
	return any;
}

bool
stream_wants(struct stream *s)
{
	/* Half a ring of lag slows a writer early enough; one that is gone
	 * cannot be slowed, and what it left is taken while the places fit. */
	uint64_t lag =
	    s->writer_gone ? s->ring.cap - s->ring.cap / 4 : s->ring.cap / 2;
	uint64_t floor;

	if (!s->paced || !stream_floor(s, &floor) || s->ring.end - floor < lag)
		return true;
	s->stalled = true;
	return false;
}

/* Tells a stalled source it may read again, once it may. */
static void
stream_kick(struct stream *s)
{
	if (s->stalled && stream_wants(s)) {
		s->stalled = false;
		if (s->on_room != NULL)
			s->on_room(s, s->arg);
	}
}

void
stream_writer_gone(struct stream *s)
{
	s->writer_gone = true;
	stream_kick(s);
}

/* Sends v's connection what it has room for, from v's offset on, and the
 * end of the stream once v has had every byte. */
void
stream_viewer_pump(struct stream_viewer *v)
{
	struct stream *s = v->s;
	const uint8_t *data;
	uint64_t at;
	size_t n;

	while (server_out_room(v->conn) > 0) {
		n = ring_read(&s->ring, v->offset, STREAM_CHUNK, &data, &at);
		if (n == 0)
			break;
		msgpack_sbuffer_clear(&stream_sb);
		proto_pack_data(&stream_pk, s->name, at, data, n);
		server_send(v->conn, stream_sb.data, stream_sb.size);
		v->offset = at + n;
	}
	if (s->ended && !v->eof_sent && v->offset == s->ring.end &&
	    server_out_room(v->conn) > 0) {
		v->eof_sent = true;
		msgpack_sbuffer_clear(&stream_sb);
		proto_pack_data_end(&stream_pk, s->name, s->ring.end);
		server_send(v->conn, stream_sb.data, stream_sb.size);
	}
}

static void
stream_pump(struct stream *s)
{
	struct stream_viewer *v;

	for (v = s->viewers; v != NULL; v = v->next_in_stream)
		stream_viewer_pump(v);
	stream_kick(s);
}

void
stream_conn_pump(struct server_conn *c)
{
	struct stream_viewer *v;

	for (v = c->viewers; v != NULL; v = v->next_in_conn) {
		stream_viewer_pump(v);
		stream_kick(v->s);
	}
}

/* Bytes the redactor let through (or all bytes, unredacted). */
static void
stream_put_cb(void *arg, const void *data, size_t len)
{
	struct stream *s = arg;

	if (len == 0)
		return;
	ring_write(&s->ring, data, len);
	if (s->on_bytes != NULL)
		s->on_bytes(s, data, len, s->arg);
}

static void
stream_redact_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct stream *s = arg;

	(void)fd;
	(void)what;
	redact_flush(s->redact, secrets_redact_set(), stream_put_cb, s);
	stream_pump(s);
}

void
stream_write(struct stream *s, const void *data, size_t len)
{
	struct timeval tv = clock_tv(STREAM_REDACT_HOLD_MS);

	if (s->redact == NULL)
		stream_put_cb(s, data, len);
	else {
		redact_feed(s->redact, secrets_redact_set(), data, len,
		    stream_put_cb, s);
		/* A value cut by a read waits for its rest, but not forever:
		 * a prompt that merely starts like one must still show. */
		if (redact_held(s->redact) > 0)
			evtimer_add(s->redact_timer, &tv);
		else
			evtimer_del(s->redact_timer);
	}
	stream_pump(s);
}

void
stream_end(struct stream *s)
{
	if (s->ended)
		return;
	if (s->redact != NULL) {
		redact_flush(s->redact, secrets_redact_set(), stream_put_cb, s);
		evtimer_del(s->redact_timer);
	}
	s->ended = true;
	stream_pump(s);
}

static void
stream_hold_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct stream *s = arg;

	(void)fd;
	(void)what;
	s->holding = false;
	stream_kick(s);
}

void
stream_init(struct stream *s, const char *name, size_t cap, bool paced,
    bool redact, void *arg)
{
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s", name);
	ring_init(&s->ring, cap);
	s->paced = paced;
	s->arg = arg;
	s->hold_timer = evtimer_new(stream_base, stream_hold_timer_cb, s);
	if (redact) {
		s->redact = redact_new();
		s->redact_timer =
		    evtimer_new(stream_base, stream_redact_timer_cb, s);
	}
}

/* Unlinks v from its stream and its connection and frees it. */
static void
stream_viewer_free(struct stream_viewer *v)
{
	struct stream_viewer **pp;
	struct stream *s = v->s;

	for (pp = &s->viewers; *pp != v; pp = &(*pp)->next_in_stream)
		;
	*pp = v->next_in_stream;
	for (pp = &v->conn->viewers; *pp != v; pp = &(*pp)->next_in_conn)
		;
	*pp = v->next_in_conn;
	s->nviewers--;
	free(v);
	if (s->on_viewers != NULL)
		s->on_viewers(s, -1, s->arg);
}

void
stream_free(struct stream *s)
{
	while (s->viewers != NULL)
		stream_viewer_free(s->viewers);
	event_free(s->hold_timer);
	if (s->redact != NULL) {
		event_free(s->redact_timer);
		redact_free(s->redact);
	}
	ring_free(&s->ring);
}

struct stream_viewer *
stream_viewer_of(struct stream *s, struct server_conn *c)
{
	struct stream_viewer *v;

	for (v = s->viewers; v != NULL; v = v->next_in_stream)
		if (v->conn == c)
			return v;
	return NULL;
}

struct stream_viewer *
stream_attach(
    struct stream *s, struct server_conn *c, uint64_t from, uint64_t *lost)
{
	uint64_t start = ring_start(&s->ring);
	struct stream_viewer *v;

	*lost = 0;
	if (from < start) {
		*lost = start - from;
		from = start;
	}
	if ((v = stream_viewer_of(s, c)) == NULL) {
		v = xcalloc(1, sizeof *v);
		v->s = s;
		v->conn = c;
		v->next_in_stream = s->viewers;
		s->viewers = v;
		v->next_in_conn = c->viewers;
		c->viewers = v;
		s->nviewers++;
		if (s->on_viewers != NULL)
			s->on_viewers(s, 1, s->arg);
	}
	v->offset = v->acked = from;
	v->eof_sent = false;
	/* The client is back (or another took over): its offset holds now. */
	s->holding = false;
	evtimer_del(s->hold_timer);
	return v;
}

int
stream_ack(struct stream_viewer *v, uint64_t offset)
{
	if (offset > v->offset)
		return -1;
	if (offset > v->acked) {
		v->acked = offset;
		stream_kick(v->s);
	}
	return 0;
}

void
stream_detach(struct stream_viewer *v)
{
	struct stream *s = v->s;

	stream_viewer_free(v);
	stream_kick(s);
}

void
stream_conn_gone(struct server_conn *c)
{
	struct timeval tv = clock_tv(STREAM_HOLD_MS);
	struct stream_viewer *v;
	struct stream *s;

	while ((v = c->viewers) != NULL) {
		s = v->s;
		if (s->paced && !s->ended) {
			if (!s->holding || stream_place(v) < s->hold)
				s->hold = stream_place(v);
			s->holding = true;
			evtimer_add(s->hold_timer, &tv);
		}
		stream_viewer_free(v);
		stream_kick(s);
	}
}
