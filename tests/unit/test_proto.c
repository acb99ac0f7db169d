/* test_proto: unit tests of the protocol envelope (proto.c) and of the
 * allocation-free msgpack check under it (mpcheck.c): round trips of the
 * four message types, every refusal, and the typed argument getters; of
 * the op catalog's ids (catalog.c); and of the check that a message berth
 * packed is whole (packcheck.c). */
#include <ctype.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "catalog.h"
#include "mpcheck.h"
#include "packcheck.h"
#include "proto.h"
#include "tap.h"

/*
 * Most messages here are written in a small notation that mp_build packs,
 * so that each case reads as what it is:
 *   {k:v,...} a map          [v,...] an array       nil true false
 *   12 -3 1.5 integers (negative ones signed) and a float64
 *   word      a string of letters, digits, '_', '.' and '-'
 *   'text'    a string, in which \0 is a NUL byte    b'text' a bin
 *   ~N        a string of N bytes                    #c0ff   raw bytes
 * Several top-level values in a row are packed one after the other.
 */
static const char *mp_value(msgpack_packer *pk, const char *p);

static const char *
mp_skip(const char *p)
{
	while (*p == ' ')
		p++;
	return p;
}

/* Appends bytes to whatever the packer writes to. */
static void
mp_raw(msgpack_packer *pk, const void *buf, size_t len)
{
	if (len > 0)
		pk->callback(pk->data, buf, len);
}

/* The elements are packed into a buffer of their own first, since the
 * header that precedes them needs their count. */
static const char *
mp_container(msgpack_packer *pk, const char *p, char close)
{
	msgpack_sbuffer sb;
	msgpack_packer sub;
	uint32_t n = 0;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&sub, &sb, msgpack_sbuffer_write);
	for (p = mp_skip(p + 1); *p != close; n++) {
		p = mp_value(&sub, p);
		if (close == '}') {
			ck_assert_msg(*p == ':', "expected ':' at \"%s\"", p);
			p = mp_value(&sub, p + 1);
		}
		if (*p == ',')
			p = mp_skip(p + 1);
		else
			ck_assert_msg(*p == close, "bad notation at \"%s\"", p);
	}
	if (close == '}')
		msgpack_pack_map(pk, n);
	else
		msgpack_pack_array(pk, n);
	mp_raw(pk, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	return p + 1;
}

static const char *
mp_quoted(msgpack_packer *pk, const char *p, int bin)
{
	char s[256];
	size_t n = 0;

	for (p++; *p != '\''; p++) {
		ck_assert_msg(*p != '\0' && n < sizeof s, "bad string");
		if (*p == '\\' && *++p == '0')
			s[n++] = '\0';
		else
			s[n++] = *p;
	}
	if (bin) {
		msgpack_pack_bin(pk, n);
		msgpack_pack_bin_body(pk, s, n);
	} else {
		msgpack_pack_str(pk, n);
		msgpack_pack_str_body(pk, s, n);
	}
	return p + 1;
}

static const char *
mp_long(msgpack_packer *pk, const char *p)
{
	char *end, *s;
	size_t n = strtoul(p + 1, &end, 10);

	s = malloc(n + 1);
	memset(s, 'x', n);
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
	free(s);
	return end;
}

static int
mp_hexval(char c)
{
	return isdigit((unsigned char)c) ? c - '0' : tolower(c) - 'a' + 10;
}

static const char *
mp_hex(msgpack_packer *pk, const char *p)
{
	for (p++; isxdigit((unsigned char)p[0]); p += 2) {
		unsigned char b = mp_hexval(p[0]) << 4 | mp_hexval(p[1]);
		ck_assert_msg(isxdigit((unsigned char)p[1]), "odd hex");
		mp_raw(pk, &b, 1);
	}
	return p;
}

static const char *
mp_number(msgpack_packer *pk, const char *p)
{
	char *end;
	size_t n = strspn(p, "-0123456789.");

	if (memchr(p, '.', n) != NULL)
		msgpack_pack_double(pk, strtod(p, &end));
	else if (*p == '-')
		msgpack_pack_int64(pk, strtoll(p, &end, 10));
	else
		msgpack_pack_uint64(pk, strtoull(p, &end, 10));
	return end;
}

static const char *
mp_word(msgpack_packer *pk, const char *p)
{
	size_t n = 0;

	while (isalnum((unsigned char)p[n]) ||
	    (p[n] != '\0' && strchr("_.-", p[n]) != NULL))
		n++;
	ck_assert_msg(n > 0, "bad notation at \"%s\"", p);
	if (n == 3 && strncmp(p, "nil", 3) == 0)
		msgpack_pack_nil(pk);
	else if (n == 4 && strncmp(p, "true", 4) == 0)
		msgpack_pack_true(pk);
	else if (n == 5 && strncmp(p, "false", 5) == 0)
		msgpack_pack_false(pk);
	else {
		msgpack_pack_str(pk, n);
		msgpack_pack_str_body(pk, p, n);
	}
	return p + n;
}

static const char *
mp_value(msgpack_packer *pk, const char *p)
{
	p = mp_skip(p);
	if (*p == '{')
		p = mp_container(pk, p, '}');
	else if (*p == '[')
		p = mp_container(pk, p, ']');
	else if (*p == '\'')
		p = mp_quoted(pk, p, 0);
	else if (p[0] == 'b' && p[1] == '\'')
		p = mp_quoted(pk, p + 1, 1);
	else if (*p == '~')
		p = mp_long(pk, p);
	else if (*p == '#')
		p = mp_hex(pk, p);
	else if (*p == '-' || isdigit((unsigned char)*p))
		p = mp_number(pk, p);
	else
		p = mp_word(pk, p);
	return mp_skip(p);
}

/* Packs text into sb, which the caller destroys. */
static void
mp_build(msgpack_sbuffer *sb, const char *text)
{
	msgpack_packer pk;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	while (*text != '\0')
		text = mp_value(&pk, text);
}

/* Decodes buf[0..len), which must be accepted; the caller frees m. */
static void
decode_ok(const void *buf, size_t len, struct proto_msg *m)
{
	const char *code = NULL;
	char err[256] = "";

	ck_assert_msg(proto_decode(buf, len, m, &code, err, sizeof err) == 0,
	    "refused (%s): %s", code, err);
}

/*
 * Decodes buf[0..len), which must be refused with want as the code and a
 * reason that contains why (any non-empty reason if why is NULL). The
 * bytes are copied to a buffer of exactly len bytes first, so that any
 * read past the end is caught by the address sanitizer.
 */
static void
decode_bad(const void *buf, size_t len, const char *want, const char *why)
{
	struct proto_msg m;
	const char *code = NULL;
	char err[256] = "";
	void *copy = malloc(len > 0 ? len : 1);

	if (len > 0)
		memcpy(copy, buf, len);
	ck_assert_int_eq(
	    proto_decode(copy, len, &m, &code, err, sizeof err), -1);
	free(copy);
	ck_assert_ptr_nonnull(code);
	ck_assert_str_eq(code, want);
	ck_assert_msg(err[0] != '\0', "no reason given");
	if (why != NULL)
		ck_assert_msg(strstr(err, why) != NULL,
		    "reason \"%s\" lacks \"%s\"", err, why);
}

/* Round trips: what proto_pack_* writes, proto_decode gives back. */

static const uint64_t test_ids[] = {0, 1, 127, 128, 255, 256, 65535, 65536,
    UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_MAX - 1, UINT64_MAX};
#define NIDS (sizeof test_ids / sizeof test_ids[0])

START_TEST(test_request_round_trip)
{
	uint64_t id = test_ids[_i], n = 0;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_msg m;
	char name[16];
	bool wait = false;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_pack_request(&pk, id, "service.start");
	msgpack_pack_map(&pk, 3);
	proto_pack_kv_str(&pk, "name", "web");
	proto_pack_kv_u64(&pk, "n", id);
	proto_pack_kv_bool(&pk, "wait", true);
	decode_ok(sb.data, sb.size, &m);
	ck_assert_int_eq(m.type, PROTO_REQUEST);
	ck_assert_uint_eq(m.id, id);
	ck_assert_str_eq(m.op, "service.start");
	ck_assert_int_eq(m.args->type, MSGPACK_OBJECT_MAP);
	ck_assert_uint_eq(m.args->via.map.size, 3);
	ck_assert_int_eq(proto_arg_str(m.args, "name", name, sizeof name), 1);
	ck_assert_str_eq(name, "web");
	ck_assert_int_eq(proto_arg_u64(m.args, "n", &n), 1);
	ck_assert_uint_eq(n, id);
	ck_assert_int_eq(proto_arg_bool(m.args, "wait", &wait), 1);
	ck_assert(wait);
	proto_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_request_args_optional)
{
	static const char *const texts[] = {
	    "{type:request,id:1,op:ping}",
	    "{type:request,id:1,op:ping,args:nil}",
	    "{type:request,id:1,op:ping,args:{}}",
	};
	msgpack_sbuffer sb;
	struct proto_msg m;
	size_t i;

	for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		mp_build(&sb, texts[i]);
		decode_ok(sb.data, sb.size, &m);
		ck_assert_str_eq(m.op, "ping");
		ck_assert_ptr_nonnull(m.args);
		ck_assert_int_eq(m.args->type, MSGPACK_OBJECT_MAP);
		ck_assert_uint_eq(m.args->via.map.size, 0);
		proto_msg_free(&m);
		msgpack_sbuffer_destroy(&sb);
	}
}
END_TEST

START_TEST(test_request_name_limit)
{
	msgpack_sbuffer sb;
	struct proto_msg m;

	mp_build(&sb, "{type:request,id:1,op:~64}");
	decode_ok(sb.data, sb.size, &m);
	ck_assert_uint_eq(strlen(m.op), PROTO_MAX_NAME);
	proto_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_result_round_trip)
{
	uint64_t id = test_ids[_i];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_msg m;
	const msgpack_object *r;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_pack_result(&pk, id);
	msgpack_pack_map(&pk, 3);
	proto_pack_kv_i64(&pk, "min", INT64_MIN);
	proto_pack_kv_i64(&pk, "minus", -5);
	proto_pack_kv_str(&pk, "empty", "");
	decode_ok(sb.data, sb.size, &m);
	ck_assert_int_eq(m.type, PROTO_RESPONSE);
	ck_assert_uint_eq(m.id, id);
	ck_assert(m.ok);
	ck_assert_ptr_null(m.err_code);
	ck_assert_int_eq(m.result->type, MSGPACK_OBJECT_MAP);
	ck_assert_uint_eq(m.result->via.map.size, 3);
	r = proto_map_get(m.result, "min");
	ck_assert_int_eq(r->type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
	ck_assert_int_eq(r->via.i64, INT64_MIN);
	r = proto_map_get(m.result, "minus");
	ck_assert_int_eq(r->type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
	ck_assert_int_eq(r->via.i64, -5);
	r = proto_map_get(m.result, "empty");
	ck_assert_int_eq(r->type, MSGPACK_OBJECT_STR);
	ck_assert_uint_eq(r->via.str.size, 0);
	proto_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* A result may be any object, nil included. */
START_TEST(test_result_any_object)
{
	static const struct {
		const char *text;
		msgpack_object_type type;
	} cases[] = {
	    {"{type:response,id:3,ok:true,result:nil}", MSGPACK_OBJECT_NIL},
	    {"{type:response,id:3,ok:true,result:[1,two]}",
	        MSGPACK_OBJECT_ARRAY},
	    {"{type:response,id:3,ok:true,result:b'\\0'}", MSGPACK_OBJECT_BIN},
	    {"{type:response,id:3,ok:true,result:2.5}", MSGPACK_OBJECT_FLOAT64},
	};
	msgpack_sbuffer sb;
	struct proto_msg m;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mp_build(&sb, cases[i].text);
		decode_ok(sb.data, sb.size, &m);
		ck_assert(m.ok);
		ck_assert_uint_eq(m.id, 3);
		ck_assert_int_eq(m.result->type, cases[i].type);
		proto_msg_free(&m);
		msgpack_sbuffer_destroy(&sb);
	}
}
END_TEST

START_TEST(test_error_round_trip)
{
	uint64_t id = test_ids[_i];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_msg m;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_pack_error(
	    &pk, id, PROTO_E_NOT_FOUND, "no service \"%s\" (%d)", "web", 7);
	decode_ok(sb.data, sb.size, &m);
	ck_assert_int_eq(m.type, PROTO_RESPONSE);
	ck_assert_uint_eq(m.id, id);
	ck_assert(!m.ok);
	ck_assert_ptr_null(m.result);
	ck_assert_str_eq(m.err_code, "not_found");
	ck_assert_str_eq(m.err_message, "no service \"web\" (7)");
	proto_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_event_round_trip)
{
	uint64_t seq = test_ids[_i], ts = test_ids[NIDS - 1 - _i];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_msg m;
	char state[16];

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_pack_event(&pk, seq, ts, "service.state");
	msgpack_pack_map(&pk, 2);
	proto_pack_kv_str(&pk, "name", "web");
	proto_pack_kv_str(&pk, "state", "running");
	decode_ok(sb.data, sb.size, &m);
	ck_assert_int_eq(m.type, PROTO_EVENT);
	ck_assert_uint_eq(m.seq, seq);
	ck_assert_uint_eq(m.ts, ts);
	ck_assert_str_eq(m.kind, "service.state");
	ck_assert_int_eq(m.data->type, MSGPACK_OBJECT_MAP);
	ck_assert_uint_eq(m.data->via.map.size, 2);
	ck_assert_int_eq(
	    proto_arg_str(m.data, "state", state, sizeof state), 1);
	ck_assert_str_eq(state, "running");
	proto_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_event_data_optional)
{
	msgpack_sbuffer sb;
	struct proto_msg m;

	mp_build(&sb, "{type:event,seq:9,ts:10,kind:tick}");
	decode_ok(sb.data, sb.size, &m);
	ck_assert_str_eq(m.kind, "tick");
	ck_assert_int_eq(m.data->type, MSGPACK_OBJECT_MAP);
	ck_assert_uint_eq(m.data->via.map.size, 0);
	proto_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* Payload sizes across every bin header width, with zero bytes inside. */
static const size_t test_sizes[] = {0, 1, 2, 5, 255, 256, 65535, 65536, 300000};

START_TEST(test_data_round_trip)
{
	size_t n = test_sizes[_i], i;
	uint64_t offset = _i % 2 ? UINT64_MAX : (uint64_t)n * 3;
	unsigned char *bytes = malloc(n + 1);
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_msg m;

	for (i = 0; i < n; i++)
		bytes[i] = i % 3 == 0 ? 0 : (unsigned char)(i * 7);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_pack_data(&pk, "stdout", offset, bytes, n);
	decode_ok(sb.data, sb.size, &m);
	ck_assert_int_eq(m.type, PROTO_DATA);
	ck_assert_str_eq(m.stream, "stdout");
	ck_assert_uint_eq(m.offset, offset);
	ck_assert_uint_eq(m.nbytes, n);
	if (n > 0)
		ck_assert_mem_eq(m.bytes, bytes, n);
	proto_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);
	free(bytes);
}
END_TEST

START_TEST(test_now_ms)
{
	uint64_t before = (uint64_t)time(NULL) * 1000, now = proto_now_ms();

	ck_assert_uint_ge(now + 1000, before);
	ck_assert_uint_le(now, (uint64_t)time(NULL) * 1000 + 1000);
}
END_TEST

/* Refusals. */

static const struct bad_case {
	const char *text;
	const char *why; /* a part of the reason */
} bad_cases[] = {
    /* Not one well-formed msgpack object. */
    {"", "truncated message"},
    {"{type:request,id:1,op:ping} nil", "trailing bytes"},
    {"{type:request,id:1,op:ping} #00", "trailing bytes"},
    {"#c1", "0xc1"},
    {"{type:request,id:1,op:ping,args:{a:#c1}}", "0xc1"},
    {"#d40100", "ext"},
    {"#d5010000", "ext"},
    {"#d60100000000", "ext"},
    {"#d7010000000000000000", "ext"},
    {"#d80100000000000000000000000000000000", "ext"},
    {"#c7010100", "ext"},
    {"#c800010100", "ext"},
    {"#c9000000010100", "ext"},
    {"{type:request,id:1,op:ping,args:{a:#d40100}}", "ext"},
    {"{type:request,id:1,op:ping,args:{a:#c70000}}", "ext"},
    /* Counts that the remaining bytes cannot hold: refused before
     * msgpack-c would allocate for them. */
    {"#dfffffffff", "container count exceeds"},
    {"#ddffffffff", "container count exceeds"},
    {"#deffff", "container count exceeds"},
    {"#dcffff", "container count exceeds"},
    {"{type:request,id:1,op:ping,args:#dfffffffff}", "container count exceeds"},
    {"{type:request,id:1,op:ping,args:{a:#ddffffffff}}",
        "container count exceeds"},
    {"{type:request,id:1,op:ping,args:{a:#dbffffffff}}", "truncated"},
    {"{type:request,id:1,op:ping,args:{a:#c6ffffffff}}", "truncated"},
    /* The root. */
    {"[type,request]", "must be a map"},
    {"nil", "must be a map"},
    {"7", "must be a map"},
    {"request", "must be a map"},
    {"b'request'", "must be a map"},
    {"{}", "missing field \"type\""},
    {"{id:1,op:ping}", "missing field \"type\""},
    {"{type:7,id:1,op:ping}", "field \"type\" must be a string"},
    {"{type:b'request',id:1,op:ping}", "field \"type\" must be a string"},
    {"{type:~65,id:1}", "at most 64 bytes"},
    {"{type:'request\\0',id:1,op:ping}", "\"type\" is not a valid string"},
    /* request */
    {"{type:request,id:1}", "missing field \"op\""},
    {"{type:request,id:1,op:7}", "\"op\" must be a string"},
    {"{type:request,id:1,op:nil}", "\"op\" must be a string"},
    {"{type:request,id:1,op:b'ping'}", "\"op\" must be a string"},
    {"{type:request,id:1,op:~65}", "\"op\" must be a string of at most 64"},
    {"{type:request,id:1,op:'pi\\0ng'}", "\"op\" is not a valid string"},
    {"{type:request,id:1,op:'\\0'}", "\"op\" is not a valid string"},
    {"{type:request,id:1,op:ping,args:[]}", "\"args\" must be a map"},
    {"{type:request,id:1,op:ping,args:'x'}", "\"args\" must be a map"},
    {"{type:request,id:1,op:ping,args:0}", "\"args\" must be a map"},
    {"{type:request,id:1,op:ping,args:false}", "\"args\" must be a map"},
    /* response */
    {"{type:response,ok:true,result:nil}", "missing field \"id\""},
    {"{type:response,id:-5,ok:true,result:nil}", "\"id\" must be"},
    {"{type:response,id:x,ok:true,result:nil}", "\"id\" must be"},
    {"{type:response,id:1,result:nil}", "\"ok\" must be a boolean"},
    {"{type:response,id:1,ok:1,result:nil}", "\"ok\" must be a boolean"},
    {"{type:response,id:1,ok:'true',result:nil}", "\"ok\" must be a boolean"},
    {"{type:response,id:1,ok:nil,result:nil}", "\"ok\" must be a boolean"},
    {"{type:response,id:1,ok:true}", "missing field \"result\""},
    {"{type:response,id:1,ok:false}", "\"error\" must be a map"},
    {"{type:response,id:1,ok:false,error:oops}", "\"error\" must be a map"},
    {"{type:response,id:1,ok:false,error:[not_found,m]}",
        "\"error\" must be a map"},
    {"{type:response,id:1,ok:false,error:nil}", "\"error\" must be a map"},
    {"{type:response,id:1,ok:false,error:{message:m}}",
        "missing field \"code\""},
    {"{type:response,id:1,ok:false,error:{code:7,message:m}}",
        "\"code\" must be a string"},
    {"{type:response,id:1,ok:false,error:{code:~65,message:m}}",
        "\"code\" must be a string of at most 64"},
    {"{type:response,id:1,ok:false,error:{code:'a\\0',message:m}}",
        "\"code\" is not a valid string"},
    {"{type:response,id:1,ok:false,error:{code:not_found}}",
        "missing field \"message\""},
    {"{type:response,id:1,ok:false,error:{code:not_found,message:nil}}",
        "\"message\" must be a string"},
    {"{type:response,id:1,ok:false,error:{code:not_found,message:b'm'}}",
        "\"message\" must be a string"},
    {"{type:response,id:1,ok:false,error:{code:not_found,message:'a\\0b'}}",
        "\"message\" is not a valid string"},
    /* event */
    {"{type:event,ts:1,kind:k}", "missing field \"seq\""},
    {"{type:event,seq:-1,ts:1,kind:k}", "\"seq\" must be a non-negative"},
    {"{type:event,seq:'1',ts:1,kind:k}", "\"seq\" must be a non-negative"},
    {"{type:event,seq:1,kind:k}", "missing field \"ts\""},
    {"{type:event,seq:1,ts:1.5,kind:k}", "\"ts\" must be a non-negative"},
    {"{type:event,seq:1,ts:-1,kind:k}", "\"ts\" must be a non-negative"},
    {"{type:event,seq:1,ts:1}", "missing field \"kind\""},
    {"{type:event,seq:1,ts:1,kind:true}", "\"kind\" must be a string"},
    {"{type:event,seq:1,ts:1,kind:~65}", "\"kind\" must be a string of at"},
    {"{type:event,seq:1,ts:1,kind:'k\\0'}", "\"kind\" is not a valid"},
    {"{type:event,seq:1,ts:1,kind:k,data:[1]}", "\"data\" must be a map"},
    {"{type:event,seq:1,ts:1,kind:k,data:b'x'}", "\"data\" must be a map"},
    {"{type:event,seq:1,ts:1,kind:k,data:3}", "\"data\" must be a map"},
    /* data */
    {"{type:data,offset:0,data:b'x'}", "missing field \"stream\""},
    {"{type:data,stream:7,offset:0,data:b'x'}", "\"stream\" must be a string"},
    {"{type:data,stream:~65,offset:0,data:b'x'}",
        "\"stream\" must be a string of at most 64"},
    {"{type:data,stream:'o\\0',offset:0,data:b'x'}",
        "\"stream\" is not a valid"},
    {"{type:data,stream:out,data:b'x'}", "missing field \"offset\""},
    {"{type:data,stream:out,offset:-1,data:b'x'}",
        "\"offset\" must be a non-negative"},
    {"{type:data,stream:out,offset:'0',data:b'x'}",
        "\"offset\" must be a non-negative"},
    {"{type:data,stream:out,offset:0}", "\"data\" must be bin"},
    {"{type:data,stream:out,offset:0,data:x}", "\"data\" must be bin"},
    {"{type:data,stream:out,offset:0,data:nil}", "\"data\" must be bin"},
    {"{type:data,stream:out,offset:0,data:[1]}", "\"data\" must be bin"},
};

START_TEST(test_bad_message)
{
	msgpack_sbuffer sb;

	mp_build(&sb, bad_cases[_i].text);
	decode_bad(sb.data, sb.size, PROTO_E_BAD_MESSAGE, bad_cases[_i].why);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* A request whose id cannot be answered under is refused apart from a
 * broken message, so the peer may go on, and its id is 0 for the answer. */
static const struct bad_case bad_id_cases[] = {
    {"{type:request,op:ping}", "missing field \"id\""},
    {"{type:request,id:'1',op:ping}",
        "\"id\" must be an integer of at least 1"},
    {"{type:request,id:-1,op:ping}", "\"id\" must be an integer of at least 1"},
    {"{type:request,id:1.0,op:ping}",
        "\"id\" must be an integer of at least 1"},
    {"{type:request,id:nil,op:ping}",
        "\"id\" must be an integer of at least 1"},
    {"{type:request,id:true,op:ping}",
        "\"id\" must be an integer of at least 1"},
    {"{type:request,id:0,op:ping}", "\"id\" must be an integer of at least 1"},
    {"{type:request,id:0,op:7}", "\"id\""},
    {"{type:request,id:'x'}", "\"id\""},
    {"{type:request,id:[1],op:ping}",
        "\"id\" must be an integer of at least 1"},
};

/* Decodes text, which must be refused with want and why, and leave id in
 * the message for the answer. */
static void
decode_refused_id(
    const char *text, const char *want, const char *why, uint64_t id)
{
	msgpack_sbuffer sb;
	struct proto_msg m;
	const char *code = NULL;
	char err[256] = "";

	mp_build(&sb, text);
	decode_bad(sb.data, sb.size, want, why);
	ck_assert_int_eq(
	    proto_decode(sb.data, sb.size, &m, &code, err, sizeof err), -1);
	ck_assert_uint_eq(m.id, id);
	msgpack_sbuffer_destroy(&sb);
}

START_TEST(test_bad_id)
{
	decode_refused_id(
	    bad_id_cases[_i].text, PROTO_E_BAD_ID, bad_id_cases[_i].why, 0);
}
END_TEST

/* A type nobody knows yet is told apart from a broken message, and its
 * uint id is kept for the answer. */
static const struct unknown_case {
	const char *text;
	uint64_t id;
} unknown_cases[] = {
    {"{type:bogus,id:1,op:ping}", 1},
    {"{type:Request,id:7,op:ping}", 7},
    {"{id:18446744073709551615,type:cancel}", UINT64_MAX},
    {"{type:bogus}", 0},
    {"{type:bogus,id:'3'}", 0},
    {"{type:bogus,id:-3}", 0},
    {"{type:bogus,id:nil}", 0},
    {"{type:''}", 0},
};

START_TEST(test_unknown_type)
{
	decode_refused_id(unknown_cases[_i].text, PROTO_E_UNKNOWN_TYPE,
	    "unknown message type", unknown_cases[_i].id);
}
END_TEST

/* proto_peek_type reads the head that proto_pack_* write, in any of
 * msgpack's map and str sizes, and refuses anything else. */
static const struct peek_case {
	const char *text;
	int type; /* an enum proto_type, or -1: refused */
} peek_cases[] = {
    {"{type:request,id:1,op:ping}", PROTO_REQUEST},
    {"{type:response}", PROTO_RESPONSE},
    {"{type:event,seq:1}", PROTO_EVENT},
    {"{type:data,stream:out,offset:0,data:b'x'}", PROTO_DATA},
    {"#81d90474797065 request", PROTO_REQUEST},
    {"#81da000474797065 data", PROTO_DATA},
    {"#81db0000000474797065 event", PROTO_EVENT},
    {"#de0001a474797065 response", PROTO_RESPONSE},
    {"#df00000001a474797065 event", PROTO_EVENT},
    {"#81a474797065d90472657175", -1},
    {"#81a474797065d9ff72", -1},
    {"#81a474797065dbffffffff72", -1},
    {"#de0000a474797065 event", -1},
    {"#df00000000a474797065 event", -1},
    {"#80", -1},
    {"{}", -1},
    {"{id:1,type:request}", -1},
    {"{typ:request}", -1},
    {"{types:request}", -1},
    {"{type:7}", -1},
    {"{type:b'request'}", -1},
    {"{type:nil}", -1},
    {"{type:bogus}", -1},
    {"{type:Request}", -1},
    {"{type:requests}", -1},
    {"{type:reques}", -1},
    {"{type:''}", -1},
    {"[type,request]", -1},
    {"nil", -1},
    {"request", -1},
    {"#c1", -1},
};

/* Peeks at an exact-size copy, so that a read past the end is caught. */
static int
peek_copy(const void *buf, size_t len, enum proto_type *type)
{
	void *copy = malloc(len > 0 ? len : 1);
	int r;

	if (len > 0)
		memcpy(copy, buf, len);
	r = proto_peek_type(copy, len, type);
	free(copy);
	return r;
}

START_TEST(test_peek_type)
{
	msgpack_sbuffer sb;
	enum proto_type t = PROTO_DATA;
	int r;

	mp_build(&sb, peek_cases[_i].text);
	r = peek_copy(sb.data, sb.size, &t);
	if (peek_cases[_i].type < 0)
		ck_assert_int_eq(r, -1);
	else {
		ck_assert_int_eq(r, 0);
		ck_assert_int_eq(t, peek_cases[_i].type);
	}
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* What proto_pack_* write peeks as what proto_decode finds; cut short
 * before the type's name ends, it is refused without a read past the
 * end. */
START_TEST(test_peek_packed)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_msg m;
	enum proto_type t;
	size_t cut, head;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	switch (_i) {
	case 0:
		proto_pack_request(&pk, 9, "ping");
		msgpack_pack_map(&pk, 0);
		break;
	case 1:
		proto_pack_result(&pk, 9);
		msgpack_pack_nil(&pk);
		break;
	case 2:
		proto_pack_error(
		    &pk, 0, PROTO_E_UNKNOWN_TYPE, "unknown message type");
		break;
	case 3:
		proto_pack_event(&pk, 1, 2, "k");
		msgpack_pack_map(&pk, 0);
		break;
	case 4: proto_pack_data(&pk, "out", 0, "x", 1); break;
	default: proto_pack_data_end(&pk, "out", 1); break;
	}
	decode_ok(sb.data, sb.size, &m);
	ck_assert_int_eq(peek_copy(sb.data, sb.size, &t), 0);
	ck_assert_int_eq(t, m.type);
	proto_msg_free(&m);
	/* map header, fixstr "type", the fixstr head of the type's name */
	head = 1 + 5 + 1 + (size_t)(((const uint8_t *)sb.data)[6] & 0x1f);
	for (cut = 0; cut < sb.size; cut++)
		ck_assert_int_eq(
		    peek_copy(sb.data, cut, &t), cut < head ? -1 : 0);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* Each valid message cut short at every byte is refused, never read past
 * its end (decode_bad's exact-size copy), and whole it is accepted. */
static const char *const whole_cases[] = {
    "{type:request,id:18446744073709551615,op:service.start,"
    "args:{name:web,env:{A:'1'},argv:[sh,'-c',true],n:-3,f:0.5}}",
    "{type:response,id:70000,ok:true,result:{list:[1,[2,[]],{}],b:b'\\0z'}}",
    "{type:response,id:2,ok:false,error:{code:not_found,message:'no x'}}",
    "{type:event,seq:4294967296,ts:1700000000000,kind:exit,data:{code:1}}",
    "{type:data,stream:stdout,offset:65536,data:b'a\\0\\0b'}",
};

START_TEST(test_truncated_everywhere)
{
	msgpack_sbuffer sb;
	struct proto_msg m;
	size_t cut;

	mp_build(&sb, whole_cases[_i]);
	decode_ok(sb.data, sb.size, &m);
	proto_msg_free(&m);
	for (cut = 0; cut < sb.size; cut++)
		decode_bad(sb.data, cut, PROTO_E_BAD_MESSAGE, NULL);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* A length over the limit is refused from the length alone: the buffer
 * here is mapped without read access, so any read would kill the test. */
START_TEST(test_too_large_unread)
{
	size_t len = PROTO_MAX_MSG + 1;
	void *p =
	    mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct proto_msg m;
	const char *code = NULL;
	char err[256] = "";

	ck_assert(p != MAP_FAILED);
	ck_assert_int_eq(proto_decode(p, len, &m, &code, err, sizeof err), -1);
	ck_assert_str_eq(code, PROTO_E_TOO_LARGE);
	ck_assert_ptr_nonnull(strstr(err, "exceeds the limit"));
	ck_assert_int_eq(
	    proto_decode(p, SIZE_MAX, &m, &code, err, sizeof err), -1);
	ck_assert_str_eq(code, PROTO_E_TOO_LARGE);
	munmap(p, len);
}
END_TEST

/* A data message of exactly PROTO_MAX_MSG bytes passes; one more byte of
 * payload makes it too large. */
START_TEST(test_size_boundary)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct proto_msg m;
	size_t probe = 100000, overhead, n;
	unsigned char *bytes = calloc(1, PROTO_MAX_MSG);

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_pack_data(&pk, "stdout", 0, bytes, probe);
	overhead = sb.size - probe;
	n = PROTO_MAX_MSG - overhead;
	msgpack_sbuffer_clear(&sb);
	proto_pack_data(&pk, "stdout", 0, bytes, n);
	ck_assert_uint_eq(sb.size, PROTO_MAX_MSG);
	decode_ok(sb.data, sb.size, &m);
	ck_assert_uint_eq(m.nbytes, n);
	proto_msg_free(&m);
	msgpack_sbuffer_clear(&sb);
	proto_pack_data(&pk, "stdout", 0, bytes, n + 1);
	decode_bad(sb.data, sb.size, PROTO_E_TOO_LARGE, "exceeds the limit");
	msgpack_sbuffer_destroy(&sb);
	free(bytes);
}
END_TEST

/* A request whose containers nest depth deep in all: the root map, the
 * args map, then arrays down to one holding a single integer. */
static void
pack_nested(msgpack_sbuffer *sb, unsigned depth)
{
	msgpack_packer pk;
	unsigned i;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	proto_pack_request(&pk, 1, "ping");
	msgpack_pack_map(&pk, 1);
	proto_pack_str(&pk, "a");
	for (i = 2; i < depth; i++)
		msgpack_pack_array(&pk, 1);
	msgpack_pack_uint64(&pk, 42);
}

START_TEST(test_depth_boundary)
{
	msgpack_sbuffer sb;
	struct proto_msg m;
	const msgpack_object *o;
	unsigned levels = 2;

	pack_nested(&sb, PROTO_MAX_DEPTH);
	decode_ok(sb.data, sb.size, &m);
	for (o = proto_map_get(m.args, "a"); o->type == MSGPACK_OBJECT_ARRAY;
	     o = &o->via.array.ptr[0])
		levels++;
	ck_assert_uint_eq(levels, PROTO_MAX_DEPTH);
	ck_assert_uint_eq(o->via.u64, 42);
	proto_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);

	pack_nested(&sb, PROTO_MAX_DEPTH + 1);
	decode_bad(sb.data, sb.size, PROTO_E_BAD_MESSAGE, "nested too deeply");
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* A request whose args hold one array of n nils: 11 + n objects in all
 * (root map, three key-value pairs, "args", its map, "a", the array). */
static void
pack_objects(msgpack_sbuffer *sb, size_t n)
{
	msgpack_packer pk;
	size_t i;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	proto_pack_request(&pk, 1, "x");
	msgpack_pack_map(&pk, 1);
	proto_pack_str(&pk, "a");
	msgpack_pack_array(&pk, n);
	for (i = 0; i < n; i++)
		msgpack_pack_nil(&pk);
}

START_TEST(test_object_boundary)
{
	msgpack_sbuffer sb;
	struct proto_msg m;

	pack_objects(&sb, PROTO_MAX_OBJECTS - 11);
	decode_ok(sb.data, sb.size, &m);
	ck_assert_uint_eq(
	    proto_map_get(m.args, "a")->via.array.size, PROTO_MAX_OBJECTS - 11);
	proto_msg_free(&m);
	msgpack_sbuffer_destroy(&sb);

	pack_objects(&sb, PROTO_MAX_OBJECTS - 10);
	decode_bad(sb.data, sb.size, PROTO_E_BAD_MESSAGE, "too many objects");
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* The getters for request arguments. */

static const char *const args_text =
    "{n:5,big:18446744073709551615,neg:-1,yes:true,no:false,s:hello,"
    "s64:~64,nul:'a\\0b',bin:b'hi',f:1.5,nothing:nil,7:seven}";

START_TEST(test_arg_getters)
{
	msgpack_sbuffer sb;
	msgpack_unpacked u;
	const msgpack_object *a;
	uint64_t n = 99;
	bool b = false;
	char s[65];

	mp_build(&sb, args_text);
	msgpack_unpacked_init(&u);
	ck_assert_int_eq(msgpack_unpack_next(&u, sb.data, sb.size, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	a = &u.data;

	ck_assert_int_eq(proto_arg_u64(a, "absent", &n), 0);
	ck_assert_uint_eq(n, 99);
	ck_assert_int_eq(proto_arg_u64(a, "n", &n), 1);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(proto_arg_u64(a, "big", &n), 1);
	ck_assert_uint_eq(n, UINT64_MAX);
	ck_assert_int_eq(proto_arg_u64(a, "neg", &n), -1);
	ck_assert_int_eq(proto_arg_u64(a, "s", &n), -1);
	ck_assert_int_eq(proto_arg_u64(a, "yes", &n), -1);
	ck_assert_int_eq(proto_arg_u64(a, "f", &n), -1);
	ck_assert_int_eq(proto_arg_u64(a, "nothing", &n), -1);
	/* Only string keys name arguments. */
	ck_assert_int_eq(proto_arg_u64(a, "7", &n), 0);

	ck_assert_int_eq(proto_arg_bool(a, "absent", &b), 0);
	ck_assert(!b);
	ck_assert_int_eq(proto_arg_bool(a, "yes", &b), 1);
	ck_assert(b);
	ck_assert_int_eq(proto_arg_bool(a, "no", &b), 1);
	ck_assert(!b);
	ck_assert_int_eq(proto_arg_bool(a, "n", &b), -1);
	ck_assert_int_eq(proto_arg_bool(a, "s", &b), -1);
	ck_assert_int_eq(proto_arg_bool(a, "nothing", &b), -1);

	strcpy(s, "untouched");
	ck_assert_int_eq(proto_arg_str(a, "absent", s, sizeof s), 0);
	ck_assert_str_eq(s, "untouched");
	ck_assert_int_eq(proto_arg_str(a, "s", s, sizeof s), 1);
	ck_assert_str_eq(s, "hello");
	ck_assert_int_eq(proto_arg_str(a, "s", s, 6), 1);
	ck_assert_str_eq(s, "hello");
	ck_assert_int_eq(proto_arg_str(a, "s", s, 5), -1);
	ck_assert_int_eq(proto_arg_str(a, "s64", s, 65), 1);
	ck_assert_uint_eq(strlen(s), 64);
	ck_assert_int_eq(proto_arg_str(a, "s64", s, 64), -1);
	ck_assert_int_eq(proto_arg_str(a, "nul", s, sizeof s), -1);
	ck_assert_int_eq(proto_arg_str(a, "bin", s, sizeof s), -1);
	ck_assert_int_eq(proto_arg_str(a, "n", s, sizeof s), -1);
	ck_assert_int_eq(proto_arg_str(a, "nothing", s, sizeof s), -1);

	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_map_get)
{
	msgpack_sbuffer sb;
	msgpack_unpacked u;
	const msgpack_object *v;

	mp_build(&sb, "{a:1,ab:2,b:3}");
	msgpack_unpacked_init(&u);
	ck_assert_int_eq(msgpack_unpack_next(&u, sb.data, sb.size, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	v = proto_map_get(&u.data, "ab");
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(v->via.u64, 2);
	ck_assert_uint_eq(proto_map_get(&u.data, "a")->via.u64, 1);
	ck_assert_ptr_null(proto_map_get(&u.data, "abc"));
	ck_assert_ptr_null(proto_map_get(&u.data, ""));
	ck_assert_ptr_null(proto_map_get(&u.data.via.map.ptr[0].val, "a"));
	ck_assert_ptr_null(proto_map_get(NULL, "a"));
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* mpcheck on its own, with hand-written bytes and limits. */

static const struct mpcheck_case {
	const char *hex;
	unsigned depth;
	size_t objects;
	const char *why; /* NULL: accepted */
} mpcheck_cases[] = {
    {"c0", 8, 100, NULL},
    {"", 8, 100, "truncated message"},
    {"c0c0", 8, 100, "trailing bytes"},
    {"00", 8, 100, NULL},
    {"7f", 8, 100, NULL},
    {"ff", 8, 100, NULL},
    {"e0", 8, 100, NULL},
    {"c2", 8, 100, NULL},
    {"c3", 8, 100, NULL},
    {"d0ff", 8, 100, NULL},
    {"d0", 8, 100, "truncated message"},
    {"cd0102", 8, 100, NULL},
    {"d3ffffffffffffffff", 8, 100, NULL},
    {"cf0102030405060708", 8, 100, NULL},
    {"cf01020304050607", 8, 100, "truncated message"},
    {"ca3f800000", 8, 100, NULL},
    {"cb3ff0000000000000", 8, 100, NULL},
    {"cb3ff00000000000", 8, 100, "truncated message"},
    {"a3616263", 8, 100, NULL},
    {"a36162", 8, 100, "truncated message"},
    {"d90161", 8, 100, NULL},
    {"d9", 8, 100, "truncated msgpack header"},
    {"da00", 8, 100, "truncated msgpack header"},
    {"db000000", 8, 100, "truncated msgpack header"},
    {"dbffffffff", 8, 100, "truncated message"},
    {"c4", 8, 100, "truncated msgpack header"},
    {"c400", 8, 100, NULL},
    {"c6000000017a", 8, 100, NULL},
    {"c6ffffffff7a", 8, 100, "truncated message"},
    {"c1", 8, 100, "0xc1"},
    {"91c1", 8, 100, "0xc1"},
    {"d40100", 8, 100, "ext"},
    {"c7010100", 8, 100, "ext"},
    {"90", 8, 100, NULL},
    {"80", 8, 100, NULL},
    {"91c0", 8, 100, NULL},
    {"91", 8, 100, "container count exceeds"},
    {"92c0", 8, 100, "container count exceeds"},
    {"81c0", 8, 100, "container count exceeds"},
    {"81c0c0", 8, 100, NULL},
    {"81c0c0c0", 8, 100, "trailing bytes"},
    {"82c0c0c0", 8, 100, "container count exceeds"},
    {"82a5c0c0c0", 8, 100, "truncated message"},
    {"dc0000", 8, 100, NULL},
    {"dc0001c0", 8, 100, NULL},
    {"de0001a161c0", 8, 100, NULL},
    {"dfffffffff", 8, 100, "container count exceeds"},
    {"ddffffffff", 8, 100, "container count exceeds"},
    {"dd", 8, 100, "truncated msgpack header"},
    {"9291c090", 8, 100, NULL},
    {"9291c0", 8, 100, "truncated message"},
    /* Limits. An empty container still counts as a level. */
    {"9191c0", 2, 100, NULL},
    {"9191c0", 1, 100, "nested too deeply"},
    {"90", 0, 100, "nested too deeply"},
    {"c0", 0, 100, NULL},
    {"92c0c0", 8, 3, NULL},
    {"92c0c0", 8, 2, "too many objects"},
    {"c0", 8, 0, "too many objects"},
};

/* Parses hex into a buffer of exactly its length; the caller frees it. */
static uint8_t *
hex_bytes(const char *hex, size_t *len)
{
	uint8_t *buf = malloc(strlen(hex) / 2 + 1);
	size_t i;

	*len = strlen(hex) / 2;
	for (i = 0; i < *len; i++)
		buf[i] = mp_hexval(hex[2 * i]) << 4 | mp_hexval(hex[2 * i + 1]);
	return realloc(buf, *len > 0 ? *len : 1);
}

START_TEST(test_mpcheck_bytes)
{
	const struct mpcheck_case *c = &mpcheck_cases[_i];
	struct mpcheck_limits lim = {c->depth, c->objects};
	const char *why = NULL;
	size_t len;
	uint8_t *buf = hex_bytes(c->hex, &len);
	int r = mpcheck_object(buf, len, &lim, &why);

	free(buf);
	if (c->why == NULL) {
		ck_assert_msg(r == 0, "%s refused: %s", c->hex, why);
		return;
	}
	ck_assert_msg(r == -1, "%s accepted", c->hex);
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(strstr(why, c->why) != NULL, "%s: \"%s\" lacks \"%s\"",
	    c->hex, why, c->why);
}
END_TEST

/* No limit a caller passes takes the walker past its own ceiling. */
START_TEST(test_mpcheck_ceiling)
{
	struct mpcheck_limits lim = {1000, 1000};
	uint8_t buf[MPCHECK_DEPTH_CEILING + 2];
	const char *why = NULL;

	memset(buf, 0x91, sizeof buf);
	buf[MPCHECK_DEPTH_CEILING] = 0xc0;
	ck_assert_int_eq(
	    mpcheck_object(buf, MPCHECK_DEPTH_CEILING + 1, &lim, &why), 0);
	buf[MPCHECK_DEPTH_CEILING] = 0x91;
	buf[MPCHECK_DEPTH_CEILING + 1] = 0xc0;
	ck_assert_int_eq(mpcheck_object(buf, sizeof buf, &lim, &why), -1);
	ck_assert_str_eq(why, "message nested too deeply");
}
END_TEST

/* Every id has its entry, and the name of each finds that id again: no
 * two ops share a name. */
START_TEST(test_catalog_ids)
{
	const struct catalog_op *op = &catalog_ops[_i];

	ck_assert_msg(op->name != NULL, "op id %d has no entry", _i);
	ck_assert_ptr_nonnull(op->summary);
	ck_assert_int_eq(catalog_op_find(op->name), _i);
}
END_TEST

START_TEST(test_catalog_unknown)
{
	ck_assert_int_eq(catalog_op_find("no.such.op"), CATALOG_NOPS);
	ck_assert_int_eq(catalog_op_find(""), CATALOG_NOPS);
	ck_assert_int_eq(catalog_op_find("hello "), CATALOG_NOPS);
}
END_TEST

/* A result {a: 1, b: {x: 1, y: 2}} whose maps say they hold outer and
 * inner pairs. */
static const struct packcheck_case {
	uint32_t outer, inner;
	const char *why; /* NULL: whole */
} packcheck_cases[] = {
    {2, 2, NULL},
    {3, 2, "truncated"},      /* one pair too few in the result */
    {1, 2, "trailing bytes"}, /* one pair too many */
    {2, 3, "truncated"},      /* ... in the nested map */
    {2, 1, "trailing bytes"},
    {2, 0, "trailing bytes"},
};

static void
pack_counted(msgpack_sbuffer *sb, uint32_t outer, uint32_t inner)
{
	msgpack_packer pk;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	proto_pack_result(&pk, 7);
	msgpack_pack_map(&pk, outer);
	proto_pack_kv_u64(&pk, "a", 1);
	proto_pack_str(&pk, "b");
	msgpack_pack_map(&pk, inner);
	proto_pack_kv_u64(&pk, "x", 1);
	proto_pack_kv_u64(&pk, "y", 2);
}

START_TEST(test_packcheck_counts)
{
	const struct packcheck_case *c = &packcheck_cases[_i];
	msgpack_sbuffer sb;
	const char *why = NULL;
	int r;

	pack_counted(&sb, c->outer, c->inner);
	r = packcheck_whole(sb.data, sb.size, &why);
	msgpack_sbuffer_destroy(&sb);
	if (c->why == NULL) {
		ck_assert_msg(
		    r == 0, "%u/%u refused: %s", c->outer, c->inner, why);
		return;
	}
	ck_assert_msg(r == -1, "%u/%u accepted", c->outer, c->inner);
	ck_assert_msg(strstr(why, c->why) != NULL, "%u/%u: \"%s\" lacks \"%s\"",
	    c->outer, c->inner, why, c->why);
}
END_TEST

/* Messages deeper, or of more objects, than berth takes from others are
 * still whole: the check bounds neither. */
START_TEST(test_packcheck_big_and_deep)
{
	enum { DEEP = PROTO_MAX_DEPTH + 8, MANY = PROTO_MAX_OBJECTS + 10 };
	uint8_t *buf = malloc(5 + MANY);
	const char *why = NULL;

	memset(buf, 0x91, DEEP);
	buf[DEEP] = 0x90;
	ck_assert_msg(packcheck_whole(buf, DEEP + 1, &why) == 0, "%s", why);
	buf[0] = 0xdd;
	buf[1] = (uint8_t)(MANY >> 24);
	buf[2] = (uint8_t)(MANY >> 16);
	buf[3] = (uint8_t)(MANY >> 8);
	buf[4] = (uint8_t)MANY;
	memset(buf + 5, 0xc0, MANY);
	ck_assert_msg(packcheck_whole(buf, 5 + MANY, &why) == 0, "%s", why);
	ck_assert_int_eq(packcheck_whole(buf, 4 + MANY, &why), -1);
	free(buf);
}
END_TEST

#ifdef BERTH_CHECKED
/* In checked builds a whole message goes on, and a miscounted one stops
 * the program. */
static void
sent_counted(uint32_t inner)
{
	msgpack_sbuffer sb;

	pack_counted(&sb, 2, inner);
	packcheck_sent(sb.data, sb.size, "state");
	msgpack_sbuffer_destroy(&sb);
}

START_TEST(test_packcheck_sent_passes)
{
	sent_counted(2);
}
END_TEST

START_TEST(test_packcheck_sent_aborts)
{
	sent_counted(3);
}
END_TEST
#endif

static Suite *
proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc;

	tc = tcase_create("round trip");
	tcase_add_loop_test(tc, test_request_round_trip, 1, NIDS);
	tcase_add_test(tc, test_request_args_optional);
	tcase_add_test(tc, test_request_name_limit);
	tcase_add_loop_test(tc, test_result_round_trip, 0, NIDS);
	tcase_add_test(tc, test_result_any_object);
	tcase_add_loop_test(tc, test_error_round_trip, 0, NIDS);
	tcase_add_loop_test(tc, test_event_round_trip, 0, NIDS);
	tcase_add_test(tc, test_event_data_optional);
	tcase_add_loop_test(tc, test_data_round_trip, 0,
	    sizeof test_sizes / sizeof test_sizes[0]);
	tcase_add_test(tc, test_now_ms);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(
	    tc, test_bad_message, 0, sizeof bad_cases / sizeof bad_cases[0]);
	tcase_add_loop_test(
	    tc, test_bad_id, 0, sizeof bad_id_cases / sizeof bad_id_cases[0]);
	tcase_add_loop_test(tc, test_unknown_type, 0,
	    sizeof unknown_cases / sizeof unknown_cases[0]);
	tcase_add_loop_test(
	    tc, test_peek_type, 0, sizeof peek_cases / sizeof peek_cases[0]);
	tcase_add_loop_test(tc, test_peek_packed, 0, 6);
	tcase_add_loop_test(tc, test_truncated_everywhere, 0,
	    sizeof whole_cases / sizeof whole_cases[0]);
	tcase_add_test(tc, test_too_large_unread);
	tcase_add_test(tc, test_size_boundary);
	tcase_add_test(tc, test_depth_boundary);
	tcase_add_test(tc, test_object_boundary);
	suite_add_tcase(s, tc);

	tc = tcase_create("getters");
	tcase_add_test(tc, test_arg_getters);
	tcase_add_test(tc, test_map_get);
	suite_add_tcase(s, tc);

	tc = tcase_create("mpcheck");
	tcase_add_loop_test(tc, test_mpcheck_bytes, 0,
	    sizeof mpcheck_cases / sizeof mpcheck_cases[0]);
	tcase_add_test(tc, test_mpcheck_ceiling);
	suite_add_tcase(s, tc);

	tc = tcase_create("catalog");
	tcase_add_loop_test(tc, test_catalog_ids, 0, CATALOG_NOPS);
	tcase_add_test(tc, test_catalog_unknown);
	suite_add_tcase(s, tc);

	tc = tcase_create("packcheck");
	tcase_add_loop_test(tc, test_packcheck_counts, 0,
	    sizeof packcheck_cases / sizeof packcheck_cases[0]);
	tcase_add_test(tc, test_packcheck_big_and_deep);
#ifdef BERTH_CHECKED
	tcase_add_test(tc, test_packcheck_sent_passes);
	tcase_add_test_raise_signal(tc, test_packcheck_sent_aborts, SIGABRT);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tap_run(proto_suite());
}
