/* stream: an output stream that outlives its viewers — the output of a
 * PTY session, or a process's stdout or stderr. The bytes live in a ring
 * addressed by absolute offset (ring.h); a viewer is an offset plus a
 * connection, and bytes move to it only while that connection has room
 * (server_out_room), so a slow viewer costs nothing but its own lag.
 *
 * A paced stream (process output) goes further: its source stops reading
 * while a viewer is half a ring behind, so an attached client misses
 * nothing, as with a pipe. A viewer's place is what it was sent, or, for a
 * viewer that acknowledges, what it said it has: bytes in flight when a
 * connection drops (the gateway may hold megabytes for a client) are then
 * still held. When a viewer's connection drops, its place is held for
 * STREAM_HOLD_MS, so a client that comes back and resumes by offset
 * misses nothing either. Once the source can no longer be slowed (the
 * process exited), what it left is read on while the ring has room for
 * every place, so that its end is not held back for a viewer's sake.
 *
 * Optionally the bytes pass through a redactor (redact.h) before they
 * reach the ring, so no viewer, and no later reader, sees a secret value.
 *
 * Ownership: the owner (pty.c, proc.c) embeds the stream and calls
 * stream_free; the stream owns its ring, redactor, timers and viewers.
 * server_conns only point at viewers; stream_conn_gone runs before a
 * connection is freed. */
#ifndef BERTH_STREAM_H
#define BERTH_STREAM_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "ring.h"
#include "server.h"

/* A data message carries at most this much of the ring. */
#define STREAM_CHUNK (64u << 10)
/* How long a dropped viewer's place holds a paced stream. */
#define STREAM_HOLD_MS 60000
/* How long a redactor may hold back the possible start of a value. */
#define STREAM_REDACT_HOLD_MS 200

struct stream;

struct stream_viewer {
	struct stream *s;
	struct server_conn *conn;
	uint64_t offset; /* the next byte this viewer gets */
	bool acks;       /* its place is acked, not offset */
	uint64_t acked;  /* what the client said it has */
	bool readonly;   /* for the owner: this viewer may not write */
	bool eof_sent;
	struct stream_viewer *next_in_stream;
	struct stream_viewer *next_in_conn;
};

typedef void (*stream_cb)(struct stream *s, void *arg);
/* delta: +1 a viewer came, -1 one went. */
typedef void (*stream_viewers_cb)(struct stream *s, int delta, void *arg);
typedef void (*stream_data_cb)(
    struct stream *s, const void *data, size_t len, void *arg);

struct stream {
	char name[PROTO_MAX_NAME + 1]; /* "pty/ID", "proc/ID/stdout" */
	struct ring ring;
	struct stream_viewer *viewers;
	unsigned nviewers;
	bool ended; /* no more bytes: a viewer at the end gets eof */
	bool paced;
	bool stalled;     /* paced: the source was told to wait */
	bool writer_gone; /* paced: read on while the places fit */
	bool holding;     /* paced: a dropped viewer's place, at hold */
	uint64_t hold;
	struct event *hold_timer;
	struct redact *redact; /* NULL unless redacting */
	struct event *redact_timer;
	stream_cb on_room; /* paced: the source may read again */
	stream_viewers_cb on_viewers;
	stream_data_cb on_bytes; /* bytes entered the ring */
	void *arg;
};

void stream_setup(struct event_base *base);
/* name is copied; cap is the ring's size. */
void stream_init(struct stream *s, const char *name, size_t cap, bool paced,
    bool redact, void *arg);
void stream_free(struct stream *s);

/* The source's bytes: redacted if asked, into the ring, to the viewers. */
void stream_write(struct stream *s, const void *data, size_t len);
/* No byte will follow (EOF): what is held back goes out, then eof. */
void stream_end(struct stream *s);
/* Paced: whether the source may add bytes now (always, unpaced). After a
 * no, on_room says when it may again. */
bool stream_wants(struct stream *s);
/* Paced: the source's writer has exited, so pacing cannot slow it any
 * more: from now on the source may read on while three quarters of the
 * ring still hold every viewer's place. */
void stream_writer_gone(struct stream *s);

/*
 * Attaches c at from (moving c's viewer if it has one). An offset the ring
 * no longer holds starts at the oldest byte held, *lost saying how many
 * were skipped. from must not be past the end. The caller replies first,
 * then starts the bytes with stream_viewer_pump.
 */
struct stream_viewer *stream_attach(
    struct stream *s, struct server_conn *c, uint64_t from, uint64_t *lost);
struct stream_viewer *stream_viewer_of(struct stream *s, struct server_conn *c);
/* Sends v's connection what it has room for, and the end once reached. */
void stream_viewer_pump(struct stream_viewer *v);
/* The client has every byte before offset (at most what it was sent):
 * its place moves there. Returns -1 if offset is past what it was sent. */
int stream_ack(struct stream_viewer *v, uint64_t offset);
/* The client said it is done: the viewer goes and holds nothing. */
void stream_detach(struct stream_viewer *v);

/* c has room for more: move its viewers along. */
void stream_conn_pump(struct server_conn *c);
/* c is going away: its viewers go; paced streams hold their places. */
void stream_conn_gone(struct server_conn *c);

#endif
