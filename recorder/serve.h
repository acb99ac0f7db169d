/* serve: berth-desktop's side of the desktop ops. A connection of its own
 * to berthd's Unix socket, on which it says hello and desktop.provide;
 * berthd then forwards every client's desktop.* request to it under ids
 * of its own, and serve hands each to the handler added for its op. Every
 * op the catalog gives berth-desktop must have one: serve_start refuses
 * to go on without, and nothing is served before it.
 * A handler answers exactly once — at once, or later (desktop.wait_change
 * answers when the screen changes) by keeping the id. When berthd goes
 * away the connection is made again with backoff; answers owed on the old
 * one are moot (berthd has failed those requests).
 *
 * Ownership: serve owns the connection, its buffers and the op table;
 * serve_free closes and frees them. */
#ifndef BERTH_SERVE_H
#define BERTH_SERVE_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "proto.h"

/* The largest answer: what berthd can forward under a client's id. */
#define SERVE_REPLY_MAX (PROTO_MAX_MSG - 4096)

struct serve;

/* serve.handed once its fd is in use. */
#define SERVE_HANDED_GONE (-2)

/* A request for op: args is a map (empty when absent), valid during the
 * call only. id identifies the answer; gen is serve_generation at the
 * time, for an answer given later. */
typedef void (*serve_op_cb)(
    struct serve *sv, uint64_t id, const msgpack_object *args, void *arg);

/* path NULL: nothing is served (the ops stay unavailable). */
struct serve *serve_create(const char *path);
/* The same on a connection berthd handed (fd, used once: when it is
 * gone, serve exits, and berthd starts berth-desktop again). */
struct serve *serve_adopt(int fd);
void serve_free(struct serve *sv);
/* op must be one the catalog gives berth-desktop (CATALOG_DESKTOP), added
 * once. */
void serve_add(
    struct serve *sv, enum catalog_op_id op, serve_op_cb cb, void *arg);
/* Once every op is added: exits (log_fatal, naming it) if one the catalog
 * gives berth-desktop has no handler, and lets serve_connect connect. */
void serve_start(struct serve *sv);

/* Connects (hello, desktop.provide) if started, not connected, and a try
 * is due. */
void serve_connect(struct serve *sv);
/* The fd to poll, -1 if none; with the events to poll for. */
int serve_fd(const struct serve *sv);
short serve_events(const struct serve *sv);
/* After poll: reads and dispatches requests, writes what waits. */
void serve_io(struct serve *sv, short revents);
/* Milliseconds until a connection try is due; -1 if none is needed. */
int serve_wait_ms(const struct serve *sv, uint64_t now);
/* Counts connections: an id kept for a later answer belongs to one. */
uint64_t serve_generation(const struct serve *sv);

/* A successful answer: pack exactly one object (the result) between
 * begin and end. An answer past SERVE_REPLY_MAX goes out as too_large. */
msgpack_packer *serve_reply_begin(struct serve *sv, uint64_t id);
void serve_reply_end(struct serve *sv);
void serve_reply_error(struct serve *sv, uint64_t id, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The answer to a request of berth-desktop's own; m is NULL when the
 * connection went before it came (the request may or may not have been
 * carried out). Called once. */
typedef void (*serve_answer_cb)(
    struct serve *sv, const struct proto_msg *m, void *arg);
/* Packs a request's args (exactly one map). */
typedef void (*serve_pack_cb)(msgpack_packer *pk, void *ctx);

/* At most this many of berth-desktop's own requests wait at once. */
#define SERVE_ASKED_MAX 16

/* Asks berthd op (artifact.publish, say) on the serving connection.
 * Returns 0, or -1 if not connected or too many wait (cb is not called). */
int serve_request(struct serve *sv, const char *op, serve_pack_cb pack,
    void *ctx, serve_answer_cb cb, void *arg);

#endif
