/* fuzz_proto: libFuzzer target for proto_decode, the first code to read
 * bytes from a peer, and proto_peek_type, which must agree with it. An accepted
 * message has every field read, then is packed again and must decode to the
 * same fields: a length that lies or a pointer left dangling shows up under the
 * address sanitizer, and a field the decoder mangles shows up as an abort. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where the sums of what was read go, so that no read is optimised out. */
static volatile uint64_t fuzz_sink;

/* Reads every byte an object refers to; the sum keeps the reads. */
static uint64_t
fuzz_touch(const msgpack_object *o)
{
	uint64_t sum = o->type;
	uint32_t i;

	switch (o->type) {
	case MSGPACK_OBJECT_STR:
	case MSGPACK_OBJECT_BIN:
		for (i = 0; i < o->via.str.size; i++)
			sum += (unsigned char)o->via.str.ptr[i];
		break;
	case MSGPACK_OBJECT_ARRAY:
		for (i = 0; i < o->via.array.size; i++)
			sum += fuzz_touch(&o->via.array.ptr[i]);
		break;
	case MSGPACK_OBJECT_MAP:
		for (i = 0; i < o->via.map.size; i++)
			sum += fuzz_touch(&o->via.map.ptr[i].key) +
			    fuzz_touch(&o->via.map.ptr[i].val);
		break;
	default: sum += o->via.u64; break;
	}
	return sum;
}

/* Object equality in which any NaN equals any NaN, since a float32 NaN
 * need not keep its bits through the double msgpack-c holds it in. */
static int
fuzz_same(const msgpack_object *a, const msgpack_object *b)
{
	uint32_t i;

	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return (isnan(a->via.f64) && isnan(b->via.f64)) ||
		    memcmp(&a->via.f64, &b->via.f64, sizeof a->via.f64) == 0;
	case MSGPACK_OBJECT_ARRAY:
		if (a->via.array.size != b->via.array.size)
			return 0;
		for (i = 0; i < a->via.array.size; i++)
			if (!fuzz_same(
			        &a->via.array.ptr[i], &b->via.array.ptr[i]))
				return 0;
		return 1;
	case MSGPACK_OBJECT_MAP:
		if (a->via.map.size != b->via.map.size)
			return 0;
		for (i = 0; i < a->via.map.size; i++)
			if (!fuzz_same(&a->via.map.ptr[i].key,
			        &b->via.map.ptr[i].key) ||
			    !fuzz_same(
			        &a->via.map.ptr[i].val, &b->via.map.ptr[i].val))
				return 0;
		return 1;
	default: return msgpack_object_equal(*a, *b);
	}
}

static int
fuzz_same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Packs m again with proto_pack_*; the message reads back the same. */
static void
fuzz_repack(const struct proto_msg *m)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_msg n;
	const char *code;
	char err[256];

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	switch (m->type) {
	case PROTO_REQUEST:
		proto_pack_request(&pk, m->id, m->op);
		msgpack_pack_object(&pk, *m->args);
		break;
	case PROTO_RESPONSE:
		if (m->ok) {
			proto_pack_result(&pk, m->id);
			msgpack_pack_object(&pk, *m->result);
		} else
			proto_pack_error(
			    &pk, m->id, m->err_code, "%s", m->err_message);
		break;
	case PROTO_EVENT:
		proto_pack_event(&pk, m->seq, m->ts, m->kind);
		msgpack_pack_object(&pk, *m->data);
		break;
	case PROTO_DATA:
		proto_pack_data(&pk, m->stream, m->offset, m->bytes, m->nbytes);
		break;
	}
	if (proto_decode(sb.data, sb.size, &n, &code, err, sizeof err) < 0)
		abort();
	if (n.type != m->type || n.id != m->id || n.ok != m->ok ||
	    n.seq != m->seq || n.ts != m->ts || n.offset != m->offset ||
	    n.nbytes != m->nbytes || !fuzz_same_str(n.op, m->op) ||
	    !fuzz_same_str(n.kind, m->kind) ||
	    !fuzz_same_str(n.stream, m->stream) ||
	    !fuzz_same_str(n.err_code, m->err_code))
		abort();
	/* proto_pack_error formats into a bounded buffer: a prefix. */
	if (m->err_message != NULL &&
	    strncmp(n.err_message, m->err_message, strlen(n.err_message)) != 0)
		abort();
	if (m->nbytes > 0 && memcmp(n.bytes, m->bytes, m->nbytes) != 0)
		abort();
	if ((m->args != NULL && !fuzz_same(n.args, m->args)) ||
	    (m->result != NULL && !fuzz_same(n.result, m->result)) ||
	    (m->data != NULL && !fuzz_same(n.data, m->data)))
		abort();
	proto_msg_free(&n);
	msgpack_sbuffer_destroy(&sb);
}

/* The getters a handler would call on request arguments. */
static uint64_t
fuzz_args(const msgpack_object *args)
{
	static const char *const keys[] = {"name", "id", "from_seq", "wait"};
	uint64_t sum = 0, u;
	bool b;
	char s[PROTO_MAX_NAME + 1];
	size_t i;

	for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		if (proto_arg_u64(args, keys[i], &u) == 1)
			sum += u;
		if (proto_arg_bool(args, keys[i], &b) == 1)
			sum += b;
		if (proto_arg_str(args, keys[i], s, sizeof s) == 1)
			sum += strlen(s);
	}
	return sum;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_msg m;
	const char *code = NULL;
	char err[256] = "";
	enum proto_type peeked;
	int peek;
	uint64_t sum;

	peek = proto_peek_type(data, size, &peeked);
	if (proto_decode(data, size, &m, &code, err, sizeof err) < 0) {
		if (code == NULL || err[0] == '\0' ||
		    (strcmp(code, PROTO_E_BAD_MESSAGE) != 0 &&
		        strcmp(code, PROTO_E_TOO_LARGE) != 0 &&
		        strcmp(code, PROTO_E_UNKNOWN_TYPE) != 0 &&
		        strcmp(code, PROTO_E_BAD_ID) != 0))
			abort();
		/* A bad id is a request's, answered under id 0. */
		if (strcmp(code, PROTO_E_BAD_ID) == 0 &&
		    (m.id != 0 || (peek == 0 && peeked != PROTO_REQUEST)))
			abort();
		/* A type the decoder does not know is not one peeked. */
		if (strcmp(code, PROTO_E_UNKNOWN_TYPE) == 0 && peek == 0)
			abort();
		return 0;
	}
	/* Whatever the peek names is what the whole decode found. */
	if (peek == 0 && peeked != m.type)
		abort();
	sum = m.id + m.seq + m.ts + m.offset + m.ok;
	if (m.op != NULL)
		sum += strlen(m.op) + fuzz_touch(m.args) + fuzz_args(m.args);
	if (m.result != NULL)
		sum += fuzz_touch(m.result);
	if (m.err_code != NULL)
		sum += strlen(m.err_code) + strlen(m.err_message);
	if (m.kind != NULL)
		sum += strlen(m.kind) + fuzz_touch(m.data);
	if (m.stream != NULL)
		sum += strlen(m.stream);
	for (size_t i = 0; i < m.nbytes; i++)
		sum += ((const unsigned char *)m.bytes)[i];
	fuzz_sink = sum;
	fuzz_repack(&m);
	proto_msg_free(&m);
	return 0;
}
