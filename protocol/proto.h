/* proto: the berth protocol v1 envelope — decoding untrusted bytes into a
 * checked message, and packing the four message types.
 *
 * Every message is one msgpack map with a "type" of "request", "response",
 * "event" or "data"; docs/protocol.md is the reference. The same bytes
 * travel in one WebSocket binary frame or behind a frame_ length prefix. */
#ifndef BERTH_PROTO_H
#define BERTH_PROTO_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_VERSION "berth.v1"
/* The largest message anyone accepts, and the deepest nesting. */
#define PROTO_MAX_MSG (8u * 1024 * 1024)
#define PROTO_MAX_DEPTH 32
#define PROTO_MAX_OBJECTS 65536
/* The longest op, kind, stream id or error code. */
#define PROTO_MAX_NAME 64
/* The requests a WebSocket client may have unanswered (the gateway
 * counts them); hello's limits.max_in_flight. */
#define PROTO_MAX_IN_FLIGHT 256

/* Stable error codes: part of the protocol, never renamed. */
#define PROTO_E_BAD_MESSAGE "bad_message"
#define PROTO_E_TOO_LARGE "too_large"
#define PROTO_E_UNSUPPORTED_VERSION "unsupported_version"
#define PROTO_E_HELLO_REQUIRED "hello_required"
#define PROTO_E_UNKNOWN_OP "unknown_op"
#define PROTO_E_BAD_ARGS "bad_args"
#define PROTO_E_FORBIDDEN "forbidden"
#define PROTO_E_UNAUTHORIZED "unauthorized"
#define PROTO_E_NOT_FOUND "not_found"
#define PROTO_E_CONFLICT "conflict"
#define PROTO_E_UNAVAILABLE "unavailable"
#define PROTO_E_INTERNAL "internal"
/* git refused or failed (workspace.prepare): the message is its reason. */
#define PROTO_E_GIT_FAILED "git_failed"
/* File errors: the error map also carries "path". */
#define PROTO_E_PERMISSION_DENIED "permission_denied"
#define PROTO_E_EXISTS "exists"
#define PROTO_E_NOT_A_DIRECTORY "not_a_directory"
#define PROTO_E_IS_A_DIRECTORY "is_a_directory"
#define PROTO_E_NOT_EMPTY "not_empty"
#define PROTO_E_NO_SPACE "no_space"
#define PROTO_E_IO "io_error"
#define PROTO_E_SYMLINK "symlink"
#define PROTO_E_UNKNOWN_TYPE "unknown_type"
/* A request's id is missing, not a uint, or 0: answered under id 0, the
 * connection kept. */
#define PROTO_E_BAD_ID "bad_id"
/* A request's id is that of a waiting one of its connection. */
#define PROTO_E_DUPLICATE_ID "duplicate_id"
/* A waiting request let go by request.cancel. */
#define PROTO_E_CANCELLED "cancelled"

enum proto_type {
	PROTO_REQUEST,
	PROTO_RESPONSE,
	PROTO_EVENT,
	PROTO_DATA,
};

/*
 * A decoded message. Strings are NUL-terminated copies in the message's
 * zone; msgpack_object pointers (args, result, data) and bytes point into
 * the zone or into the buffer that was decoded, so the message is valid
 * only while that buffer lives. proto_msg_free releases the zone.
 */
struct proto_msg {
	enum proto_type type;
	uint64_t id;                  /* request, response */
	const char *op;               /* request */
	const msgpack_object *args;   /* request: a map (empty if absent) */
	bool ok;                      /* response */
	const msgpack_object *result; /* response, ok: any object */
	const char *err_code;         /* response, !ok */
	const char *err_message;      /* response, !ok */
	uint64_t seq;                 /* event */
	uint64_t ts;                  /* event: ms since the Unix epoch */
	const char *kind;             /* event */
	const msgpack_object *data;   /* event: a map */
	const char *stream;           /* data */
	uint64_t offset;              /* data: byte offset of bytes[0] */
	const void *bytes;            /* data */
	size_t nbytes;                /* data */

	msgpack_unpacked unpacked; /* owns the zone */
	msgpack_object empty_map;
};

/*
 * Decodes one message from buf[0..len). Checks size, depth and counts
 * before msgpack-c allocates anything, then the envelope's fields and
 * their types. Returns 0, or -1 with *code set to a PROTO_E_* code and a
 * human reason in err; on -1 msg needs no free. A well-formed map whose
 * "type" is a string of no known type is PROTO_E_UNKNOWN_TYPE, not
 * bad_message (a newer peer, not a broken one), with msg->id its "id"
 * when that is a uint, else 0. A request whose "id" is missing, not a
 * uint, or 0 is PROTO_E_BAD_ID (msg->id 0): the peer may go on.
 */
int proto_decode(const void *buf, size_t len, struct proto_msg *msg,
    const char **code, char *err, size_t errlen);
/*
 * The type of a message whose first key is "type", as proto_pack_* write
 * them, read from its first bytes alone: for sorting a peer's messages
 * without decoding each. Returns 0 with *type set, or -1 if buf does not
 * start with a map whose first pair is "type" and a known type's name
 * (the caller then decodes it whole).
 */
int proto_peek_type(const void *buf, size_t len, enum proto_type *type);
void proto_msg_free(struct proto_msg *msg);

/* Looks up key in a map object; NULL if absent or obj is not a map. */
const msgpack_object *proto_map_get(const msgpack_object *obj, const char *key);
/* Typed getters for request arguments. Each returns 0 if the key is absent
 * (leaving *out untouched), 1 if present with the right type, -1 if present
 * with another type. Strings are copied NUL-terminated into out[outlen];
 * longer ones, or ones holding a NUL, count as the wrong type. */
int proto_arg_u64(const msgpack_object *map, const char *key, uint64_t *out);
int proto_arg_bool(const msgpack_object *map, const char *key, bool *out);
int proto_arg_str(
    const msgpack_object *map, const char *key, char *out, size_t outlen);

/*
 * Packing. Each proto_pack_* writes one whole message, or the head of one
 * whose last value the caller packs next (named in the comment).
 */
void proto_pack_str(msgpack_packer *pk, const char *s);
void proto_pack_kv_str(msgpack_packer *pk, const char *key, const char *val);
void proto_pack_kv_u64(msgpack_packer *pk, const char *key, uint64_t val);
void proto_pack_kv_i64(msgpack_packer *pk, const char *key, int64_t val);
void proto_pack_kv_bool(msgpack_packer *pk, const char *key, bool val);
/* Head of a request; the caller packs the args map next. */
void proto_pack_request(msgpack_packer *pk, uint64_t id, const char *op);
/* Head of a successful response; the caller packs the result next. */
void proto_pack_result(msgpack_packer *pk, uint64_t id);
/* A whole error response. */
void proto_pack_error(msgpack_packer *pk, uint64_t id, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same, naming the path it is about (NULL: none). */
void proto_pack_error_path(msgpack_packer *pk, uint64_t id, const char *code,
    const char *path, const char *message);
/* The two halves of an error response: the head, then the error map
 * (what proto_pack_error_path packs is the one after the other). */
void proto_pack_error_head(msgpack_packer *pk, uint64_t id);
void proto_pack_error_map(msgpack_packer *pk, const char *code,
    const char *path, const char *message);
/* Head of an event; the caller packs the data map next. */
void proto_pack_event(
    msgpack_packer *pk, uint64_t seq, uint64_t ts, const char *kind);
/* A whole stream data chunk. */
void proto_pack_data(msgpack_packer *pk, const char *stream, uint64_t offset,
    const void *bytes, size_t nbytes);
/* The end of a stream: no data, eof true, offset its final length. */
void proto_pack_data_end(
    msgpack_packer *pk, const char *stream, uint64_t offset);

/* Milliseconds since the Unix epoch, the unit of every timestamp. */
uint64_t proto_now_ms(void);

#endif
