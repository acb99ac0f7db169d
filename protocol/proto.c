/* proto: the berth protocol v1 envelope — decode and pack. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mpcheck.h"
#include "proto.h"

static const struct mpcheck_limits proto_limits = {
    .max_depth = PROTO_MAX_DEPTH,
    .max_objects = PROTO_MAX_OBJECTS,
};

uint64_t
proto_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

const msgpack_object *
proto_map_get(const msgpack_object *obj, const char *key)
{
	size_t klen = strlen(key);
	uint32_t i;

	if (obj == NULL || obj->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (i = 0; i < obj->via.map.size; i++) {
		const msgpack_object *k = &obj->via.map.ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == klen &&
		    memcmp(k->via.str.ptr, key, klen) == 0)
			return &obj->via.map.ptr[i].val;
	}
	return NULL;
}

int
proto_arg_u64(const msgpack_object *map, const char *key, uint64_t *out)
{
	const msgpack_object *v = proto_map_get(map, key);

	if (v == NULL)
		return 0;
	if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return -1;
	*out = v->via.u64;
	return 1;
}

int
proto_arg_bool(const msgpack_object *map, const char *key, bool *out)
{
	const msgpack_object *v = proto_map_get(map, key);

	if (v == NULL)
		return 0;
	if (v->type != MSGPACK_OBJECT_BOOLEAN)
		return -1;
	*out = v->via.boolean;
	return 1;
}

/* Copies a str object into out[outlen] with a NUL; fails on a wrong type,
 * an embedded NUL, or a string that does not fit. */
static int
proto_copy_str(const msgpack_object *v, char *out, size_t outlen)
{
	if (v->type != MSGPACK_OBJECT_STR || v->via.str.size >= outlen ||
	    memchr(v->via.str.ptr, '\0', v->via.str.size) != NULL)
		return -1;
	memcpy(out, v->via.str.ptr, v->via.str.size);
	out[v->via.str.size] = '\0';
	return 0;
}

int
proto_arg_str(
    const msgpack_object *map, const char *key, char *out, size_t outlen)
{
	const msgpack_object *v = proto_map_get(map, key);

	if (v == NULL)
		return 0;
	return proto_copy_str(v, out, outlen) < 0 ? -1 : 1;
}

/* Decoding state: the message, and where a failure is described. */
struct proto_dec {
	struct proto_msg *msg;
	char *err;
	size_t errlen;
	const char **code; /* PROTO_E_BAD_MESSAGE unless a decoder says */
};

static int __attribute__((format(printf, 2, 3)))
proto_fail(struct proto_dec *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->err, d->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* A required string field of map, at most max bytes, copied into the zone. */
static int
proto_field_str(struct proto_dec *d, const msgpack_object *map, const char *key,
    size_t max, const char **out)
{
	const msgpack_object *v = proto_map_get(map, key);
	char *s;

	if (v == NULL)
		return proto_fail(d, "missing field \"%s\"", key);
	if (v->type != MSGPACK_OBJECT_STR || v->via.str.size > max)
		return proto_fail(d,
		    "field \"%s\" must be a string of at most %zu bytes", key,
		    max);
	s = msgpack_zone_malloc(d->msg->unpacked.zone, v->via.str.size + 1);
	if (s == NULL || proto_copy_str(v, s, v->via.str.size + 1) < 0)
		return proto_fail(d, "field \"%s\" is not a valid string", key);
	*out = s;
	return 0;
}

static int
proto_field_u64(struct proto_dec *d, const char *key, uint64_t *out)
{
	int r = proto_arg_u64(&d->msg->unpacked.data, key, out);

	if (r == 0)
		return proto_fail(d, "missing field \"%s\"", key);
	if (r < 0)
		return proto_fail(
		    d, "field \"%s\" must be a non-negative integer", key);
	return 0;
}

/* An optional map field; absent means the empty map. */
static int
proto_field_map(
    struct proto_dec *d, const char *key, const msgpack_object **out)
{
	const msgpack_object *v = proto_map_get(&d->msg->unpacked.data, key);

	if (v == NULL || v->type == MSGPACK_OBJECT_NIL) {
		*out = &d->msg->empty_map;
		return 0;
	}
	if (v->type != MSGPACK_OBJECT_MAP)
		return proto_fail(d, "field \"%s\" must be a map", key);
	*out = v;
	return 0;
}

static int
proto_decode_request(struct proto_dec *d)
{
	struct proto_msg *m = d->msg;
	int r = proto_arg_u64(&m->unpacked.data, "id", &m->id);

	/* Told apart from a broken message, so the peer may go on; the
	 * answer goes under id 0, which no request may therefore use. */
	if (r <= 0 || m->id == 0) {
		m->id = 0;
		*d->code = PROTO_E_BAD_ID;
		return proto_fail(d,
		    r == 0 ? "missing field \"id\""
		           : "field \"id\" must be an "
		             "integer of at least 1");
	}
	if (proto_field_str(
	        d, &m->unpacked.data, "op", PROTO_MAX_NAME, &m->op) < 0)
		return -1;
	return proto_field_map(d, "args", &m->args);
}

static int
proto_decode_response(struct proto_dec *d)
{
	struct proto_msg *m = d->msg;
	const msgpack_object *root = &m->unpacked.data, *e;
	int r;

	if (proto_field_u64(d, "id", &m->id) < 0)
		return -1;
	r = proto_arg_bool(root, "ok", &m->ok);
	if (r <= 0)
		return proto_fail(d, "field \"ok\" must be a boolean");
	if (m->ok) {
		m->result = proto_map_get(root, "result");
		if (m->result == NULL)
			return proto_fail(d, "missing field \"result\"");
		return 0;
	}
	e = proto_map_get(root, "error");
	if (e == NULL || e->type != MSGPACK_OBJECT_MAP)
		return proto_fail(d, "field \"error\" must be a map");
	if (proto_field_str(d, e, "code", PROTO_MAX_NAME, &m->err_code) < 0)
		return -1;
	return proto_field_str(d, e, "message", PROTO_MAX_MSG, &m->err_message);
}

static int
proto_decode_event(struct proto_dec *d)
{
	struct proto_msg *m = d->msg;

	if (proto_field_u64(d, "seq", &m->seq) < 0 ||
	    proto_field_u64(d, "ts", &m->ts) < 0 ||
	    proto_field_str(
	        d, &m->unpacked.data, "kind", PROTO_MAX_NAME, &m->kind) < 0)
		return -1;
	return proto_field_map(d, "data", &m->data);
}

static int
proto_decode_data(struct proto_dec *d)
{
	struct proto_msg *m = d->msg;
	const msgpack_object *v;

	if (proto_field_str(d, &m->unpacked.data, "stream", PROTO_MAX_NAME,
	        &m->stream) < 0 ||
	    proto_field_u64(d, "offset", &m->offset) < 0)
		return -1;
	v = proto_map_get(&m->unpacked.data, "data");
	if (v == NULL || v->type != MSGPACK_OBJECT_BIN)
		return proto_fail(d, "field \"data\" must be bin");
	m->bytes = v->via.bin.ptr;
	m->nbytes = v->via.bin.size;
	return 0;
}

static const struct {
	const char *name;
	enum proto_type type;
	int (*decode)(struct proto_dec *);
} proto_types[] = {
    {"request", PROTO_REQUEST, proto_decode_request},
    {"response", PROTO_RESPONSE, proto_decode_response},
    {"event", PROTO_EVENT, proto_decode_event},
    {"data", PROTO_DATA, proto_decode_data},
};

int
proto_decode(const void *buf, size_t len, struct proto_msg *msg,
    const char **code, char *err, size_t errlen)
{
	struct proto_dec d = {msg, err, errlen, code};
	const char *why, *type;
	size_t off = 0, i;

	memset(msg, 0, sizeof *msg);
	msg->empty_map.type = MSGPACK_OBJECT_MAP;
	if (len > PROTO_MAX_MSG) {
		*code = PROTO_E_TOO_LARGE;
		snprintf(err, errlen,
		    "message of %zu bytes exceeds the limit of %u", len,
		    PROTO_MAX_MSG);
		return -1;
	}
	*code = PROTO_E_BAD_MESSAGE;
	if (mpcheck_object(buf, len, &proto_limits, &why) < 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	msgpack_unpacked_init(&msg->unpacked);
	if (msgpack_unpack_next(&msg->unpacked, buf, len, &off) !=
	    MSGPACK_UNPACK_SUCCESS) {
		snprintf(err, errlen, "undecodable msgpack");
		goto fail;
	}
	if (msg->unpacked.data.type != MSGPACK_OBJECT_MAP) {
		snprintf(err, errlen, "a message must be a map");
		goto fail;
	}
	if (proto_field_str(
	        &d, &msg->unpacked.data, "type", PROTO_MAX_NAME, &type) < 0)
		goto fail;
	for (i = 0; i < sizeof proto_types / sizeof proto_types[0]; i++) {
		if (strcmp(type, proto_types[i].name) != 0)
			continue;
		msg->type = proto_types[i].type;
		if (proto_types[i].decode(&d) < 0)
			goto fail;
		return 0;
	}
	*code = PROTO_E_UNKNOWN_TYPE;
	if (proto_arg_u64(&msg->unpacked.data, "id", &msg->id) < 0)
		msg->id = 0;
	snprintf(err, errlen, "unknown message type \"%s\"", type);
fail:
	msgpack_unpacked_destroy(&msg->unpacked);
	return -1;
}

/* The length of the str whose header starts buf[0..len), and the header's
 * size in *hlen; -1 if it is not a str header or is cut short. */
static int64_t
proto_peek_str(const uint8_t *p, size_t len, size_t *hlen)
{
	size_t n, i;

	if (len == 0)
		return -1;
	if ((p[0] & 0xe0) == 0xa0) {
		*hlen = 1;
		return p[0] & 0x1f;
	}
	if (p[0] < 0xd9 || p[0] > 0xdb)
		return -1;
	*hlen = 1 + ((size_t)1 << (p[0] - 0xd9));
	if (len < *hlen)
		return -1;
	for (n = 0, i = 1; i < *hlen; i++)
		n = n << 8 | p[i];
	return (int64_t)n;
}

int
proto_peek_type(const void *buf, size_t len, enum proto_type *type)
{
	const uint8_t *p = buf;
	size_t off, hlen, i;
	int64_t n;

	if (len == 0)
		return -1;
	if (p[0] > 0x80 && p[0] <= 0x8f)
		off = 1;
	else if (p[0] == 0xde && len >= 3 && (p[1] | p[2]) != 0)
		off = 3;
	else if (p[0] == 0xdf && len >= 5 && (p[1] | p[2] | p[3] | p[4]) != 0)
		off = 5;
	else
		return -1;
	n = proto_peek_str(p + off, len - off, &hlen);
	if (n != 4 || len - off - hlen < 4 ||
	    memcmp(p + off + hlen, "type", 4) != 0)
		return -1;
	off += hlen + 4;
	n = proto_peek_str(p + off, len - off, &hlen);
	if (n < 0 || (uint64_t)n > len - off - hlen)
		return -1;
	off += hlen;
	for (i = 0; i < sizeof proto_types / sizeof proto_types[0]; i++) {
		if (strlen(proto_types[i].name) == (size_t)n &&
		    memcmp(p + off, proto_types[i].name, (size_t)n) == 0) {
			*type = proto_types[i].type;
			return 0;
		}
	}
	return -1;
}

void
proto_msg_free(struct proto_msg *msg)
{
	msgpack_unpacked_destroy(&msg->unpacked);
}

void
proto_pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

void
proto_pack_kv_str(msgpack_packer *pk, const char *key, const char *val)
{
	proto_pack_str(pk, key);
	proto_pack_str(pk, val);
}

void
proto_pack_kv_u64(msgpack_packer *pk, const char *key, uint64_t val)
{
	proto_pack_str(pk, key);
	msgpack_pack_uint64(pk, val);
}

void
proto_pack_kv_i64(msgpack_packer *pk, const char *key, int64_t val)
{
	proto_pack_str(pk, key);
	msgpack_pack_int64(pk, val);
}

void
proto_pack_kv_bool(msgpack_packer *pk, const char *key, bool val)
{
	proto_pack_str(pk, key);
	if (val)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
}

void
proto_pack_request(msgpack_packer *pk, uint64_t id, const char *op)
{
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "type", "request");
	proto_pack_kv_u64(pk, "id", id);
	proto_pack_kv_str(pk, "op", op);
	proto_pack_str(pk, "args");
}

void
proto_pack_result(msgpack_packer *pk, uint64_t id)
{
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "type", "response");
	proto_pack_kv_u64(pk, "id", id);
	proto_pack_kv_bool(pk, "ok", true);
	proto_pack_str(pk, "result");
}

void
proto_pack_error(
    msgpack_packer *pk, uint64_t id, const char *code, const char *fmt, ...)
{
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	proto_pack_error_path(pk, id, code, NULL, message);
}

void
proto_pack_error_path(msgpack_packer *pk, uint64_t id, const char *code,
    const char *path, const char *message)
{
	proto_pack_error_head(pk, id);
	proto_pack_error_map(pk, code, path, message);
}

void
proto_pack_error_head(msgpack_packer *pk, uint64_t id)
{
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "type", "response");
	proto_pack_kv_u64(pk, "id", id);
	proto_pack_kv_bool(pk, "ok", false);
	proto_pack_str(pk, "error");
}

void
proto_pack_error_map(
    msgpack_packer *pk, const char *code, const char *path, const char *message)
{
	msgpack_pack_map(pk, path != NULL ? 3 : 2);
	proto_pack_kv_str(pk, "code", code);
	proto_pack_kv_str(pk, "message", message);
	if (path != NULL)
		proto_pack_kv_str(pk, "path", path);
}

void
proto_pack_event(
    msgpack_packer *pk, uint64_t seq, uint64_t ts, const char *kind)
{
	msgpack_pack_map(pk, 5);
	proto_pack_kv_str(pk, "type", "event");
	proto_pack_kv_u64(pk, "seq", seq);
	proto_pack_kv_u64(pk, "ts", ts);
	proto_pack_kv_str(pk, "kind", kind);
	proto_pack_str(pk, "data");
}

void
proto_pack_data(msgpack_packer *pk, const char *stream, uint64_t offset,
    const void *bytes, size_t nbytes)
{
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "type", "data");
	proto_pack_kv_str(pk, "stream", stream);
	proto_pack_kv_u64(pk, "offset", offset);
	proto_pack_str(pk, "data");
	msgpack_pack_bin(pk, nbytes);
	msgpack_pack_bin_body(pk, bytes, nbytes);
}

void
proto_pack_data_end(msgpack_packer *pk, const char *stream, uint64_t offset)
{
	msgpack_pack_map(pk, 5);
	proto_pack_kv_str(pk, "type", "data");
	proto_pack_kv_str(pk, "stream", stream);
	proto_pack_kv_u64(pk, "offset", offset);
	proto_pack_str(pk, "data");
	msgpack_pack_bin(pk, 0);
	proto_pack_kv_bool(pk, "eof", true);
}
