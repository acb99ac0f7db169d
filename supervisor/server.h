/* server: the protocol on berthd's Unix socket — listening, framing,
 * connections, and event subscriptions.
 *
 * Every client (the gateway's control connection, one connection per
 * WebSocket client, the CLI) is a server_conn. A subscriber's events are
 * read back from the journal through its own cursor, only while its output
 * buffer is below a bound: a slow reader falls behind on disk and catches
 * up later; it never holds memory or the producer. Ownership: the server
 * allocates and frees every server_conn; ops only borrow them during a
 * dispatch. */
#ifndef BERTH_SERVER_H
#define BERTH_SERVER_H

#include <event2/event.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A subscriber's output is refilled from the journal up to this many
 * bytes, and again once it has drained below the low mark. */
#define SERVER_OUT_HIGH (1024 * 1024)
#define SERVER_OUT_LOW (256 * 1024)

/* The longest check name a handed connection may report (a service
 * name: CONFIG_MAX_NAME). */
#define SERVER_CHECK_MAX 64

struct journal_cursor;
struct stream_viewer;

struct server_conn {
	struct bufferevent *bev;
	bool hello;   /* hello succeeded */
	bool gateway; /* the peer has the gateway's uid: see ops_dispatch */
	bool remote;  /* carries a WebSocket client (gateway.attach) */
	bool closing; /* flush what is queued, then free */
	char peer[64];
	/* Handed to berth-desktop (server_adopt): it may call the desktop's
	 * own ops only (ops.c), report only desktop_check, and publish only
	 * files desktop_uid owns. */
	bool desktop;
	uid_t desktop_uid;
	char desktop_check[SERVER_CHECK_MAX + 1];
	/* Attached by a pty grant (gateway.attach at door pty): that one
	 * session only, input too if grant_write. grant "" otherwise. */
	char grant[18];
	char grant_pty[9];
	bool grant_write;
	struct journal_cursor *cursor; /* non-NULL while subscribed */
	struct stream_viewer *viewers; /* owned by stream.c */
	uint64_t serial;               /* unique among connections ever */
	uint64_t next_seq;             /* the seq the subscriber expects */
	struct server_conn *prev, *next;
};

/* Binds path (a stale socket is replaced, a live one is an error) and
 * starts accepting. The socket is root's and group gw_gid's, mode 0660:
 * no other user can connect. Each peer is told by SO_PEERCRED: berthd's
 * own uid is local, gw_uid is the gateway (server_conn.gateway), anyone
 * else is refused. Returns 0 or -1 with *cause. */
int server_listen(struct event_base *base, const char *path, uid_t gw_uid,
    gid_t gw_gid, char **cause);
/* Takes fd (one end of a socketpair berthd made for berth-desktop) as a
 * connection limited to the desktop's ops, its files those of uid, its
 * check the one named; the connection owns fd from now on. NULL with
 * *cause (fd closed) if it cannot be watched. Call after server_listen. */
struct server_conn *server_adopt(
    int fd, uid_t uid, const char *check, const char *peer, char **cause);
/* Closes every connection a grant called id attached (it was revoked or
 * expired). */
void server_close_grant(const char *id);
/* Stops listening, frees every connection, removes the socket. */
void server_shutdown(void);

/* A successful response: packs the head, the caller packs the result
 * (exactly one object) and calls server_reply_end. */
msgpack_packer *server_reply_begin(struct server_conn *c, uint64_t id);
void server_reply_end(struct server_conn *c);
/* A successful answer with nothing to say: {}. */
void server_reply_empty(struct server_conn *c, uint64_t id);
void server_reply_error(struct server_conn *c, uint64_t id, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* An answer whose result map (ok) or error map (!ok) is packed already,
 * len bytes at obj: a repeat answered the first's (idem.c), another
 * process's answer passed on. */
void server_reply_packed(
    struct server_conn *c, uint64_t id, bool ok, const void *obj, size_t len);

/* The same, about a file: the error map also names path. */
void server_reply_error_path(struct server_conn *c, uint64_t id,
    const char *code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The connection with this serial, or NULL once it is gone. An op that
 * answers later (proc.wait, artifact.publish) keeps the serial, not the
 * pointer, and looks it up when the answer is ready. */
struct server_conn *server_conn_find(uint64_t serial);
/* Where a late answer to request id of connection serial goes: that
 * connection; or, once it is gone, if an idempotency key still waits for
 * the answer (the repeats of the request do), a stand-in that sends
 * nothing, so that the answer is recorded for them; else NULL. */
struct server_conn *server_conn_answer(uint64_t serial, uint64_t id);

/* How many more bytes c's output takes before it is full (0 if full or
 * closing): producers that can wait (journal, PTY rings) stop there. */
size_t server_out_room(const struct server_conn *c);
/* Queues one whole message (framed here) on c. */
void server_send(struct server_conn *c, const void *msg, size_t len);

/* Starts (or moves) c's event stream at from_seq; call after replying. */
void server_subscribe(struct server_conn *c, uint64_t from_seq);
void server_unsubscribe(struct server_conn *c);

#endif
