/* test_json: unit tests of the msgpack-to-JSON rendering (json.c), each
 * comparing the exact text produced for a hand-built object. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tap.h"

/* Objects built in place; the arrays behind ARR and MAP live as long as
 * the enclosing block. */
#define NIL ((msgpack_object){.type = MSGPACK_OBJECT_NIL})
#define BOOL(v)                                                                \
	((msgpack_object){.type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = (v)})
#define U64(v)                                                                 \
	((msgpack_object){                                                     \
	    .type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = (v)})
#define I64(v)                                                                 \
	((msgpack_object){                                                     \
	    .type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = (v)})
#define F64(v)                                                                 \
	((msgpack_object){.type = MSGPACK_OBJECT_FLOAT64, .via.f64 = (v)})
#define F32(v)                                                                 \
	((msgpack_object){.type = MSGPACK_OBJECT_FLOAT32, .via.f64 = (v)})
#define STRN(s, n)                                                             \
	((msgpack_object){                                                     \
	    .type = MSGPACK_OBJECT_STR, .via.str = {.size = (n), .ptr = (s)}})
#define STR(s) STRN(s, sizeof(s) - 1)
#define BIN(s)                                                                 \
	((msgpack_object){.type = MSGPACK_OBJECT_BIN,                          \
	    .via.bin = {.size = sizeof(s) - 1, .ptr = (s)}})
#define ARR(...)                                                               \
	((msgpack_object){.type = MSGPACK_OBJECT_ARRAY,                        \
	    .via.array = {.size = sizeof((msgpack_object[]){__VA_ARGS__}) /    \
	            sizeof(msgpack_object),                                    \
	        .ptr = (msgpack_object[]){__VA_ARGS__}}})
#define ARR0 ((msgpack_object){.type = MSGPACK_OBJECT_ARRAY})
#define KV(k, v) ((msgpack_object_kv){.key = k, .val = v})
#define MAP(...)                                                               \
	((msgpack_object){.type = MSGPACK_OBJECT_MAP,                          \
	    .via.map = {.size = sizeof((msgpack_object_kv[]){__VA_ARGS__}) /   \
	            sizeof(msgpack_object_kv),                                 \
	        .ptr = (msgpack_object_kv[]){__VA_ARGS__}}})
#define MAP0 ((msgpack_object){.type = MSGPACK_OBJECT_MAP})

/* Asserts that obj renders as exactly want. */
#define JSON_IS(obj, want) json_is(obj, want, __LINE__)

static void
json_is(msgpack_object obj, const char *want, int line)
{
	char *got = json_string(&obj);

	ck_assert_msg(strcmp(got, want) == 0, "line %d: got %s, want %s", line,
	    got, want);
	free(got);
}

START_TEST(test_scalars)
{
	JSON_IS(NIL, "null");
	JSON_IS(BOOL(true), "true");
	JSON_IS(BOOL(false), "false");
	JSON_IS(U64(0), "0");
	JSON_IS(U64(42), "42");
	JSON_IS(U64(UINT64_MAX), "18446744073709551615");
	JSON_IS(I64(-1), "-1");
	JSON_IS(I64(-300), "-300");
	JSON_IS(I64(INT64_MIN), "-9223372036854775808");
}
END_TEST

START_TEST(test_floats)
{
	JSON_IS(F64(1.5), "1.5");
	JSON_IS(F64(-0.25), "-0.25");
	JSON_IS(F64(0), "0");
	JSON_IS(F64(1e300), "1.0000000000000001e+300");
	JSON_IS(F32(0.5), "0.5");
	/* JSON has no NaN or infinity. */
	JSON_IS(F64(NAN), "null");
	JSON_IS(F64(-NAN), "null");
	JSON_IS(F64(INFINITY), "null");
	JSON_IS(F64(-INFINITY), "null");
	JSON_IS(F32(NAN), "null");
	JSON_IS(F32(INFINITY), "null");
}
END_TEST

/* Every double comes back as itself when its text is read again. */
START_TEST(test_float_precision)
{
	static const double vals[] = {0.1, 1.0 / 3, -2.5e-300, 123456789.125,
	    1.7976931348623157e308, 4.9e-324};
	size_t i;

	for (i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		char *s = json_string(&F64(vals[i]));
		ck_assert_msg(strtod(s, NULL) == vals[i], "%s", s);
		free(s);
	}
}
END_TEST

START_TEST(test_strings)
{
	JSON_IS(STR(""), "\"\"");
	JSON_IS(STR("plain"), "\"plain\"");
	JSON_IS(STR("say \"hi\""), "\"say \\\"hi\\\"\"");
	JSON_IS(STR("a\\b"), "\"a\\\\b\"");
	JSON_IS(STR("l1\nl2\r\tx"), "\"l1\\nl2\\r\\tx\"");
	JSON_IS(STR("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
	JSON_IS(STR("\b\f"), "\"\\u0008\\u000c\"");
	JSON_IS(STR("a\0b"), "\"a\\u0000b\"");
	JSON_IS(STR(" ~/"), "\" ~/\"");
	/* UTF-8 passes through as it is. */
	JSON_IS(STR("h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x9a\xa2"),
	    "\"h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x9a\xa2\"");
	/* The length given, not a NUL, ends a string. */
	JSON_IS(STRN("abcdef", 3), "\"abc\"");
}
END_TEST

/* bin becomes {"$bin": base64}, checked against RFC 4648's vectors and
 * the two characters past the letters and digits. */
START_TEST(test_bin)
{
	JSON_IS(BIN(""), "{\"$bin\":\"\"}");
	JSON_IS(BIN("f"), "{\"$bin\":\"Zg==\"}");
	JSON_IS(BIN("fo"), "{\"$bin\":\"Zm8=\"}");
	JSON_IS(BIN("foo"), "{\"$bin\":\"Zm9v\"}");
	JSON_IS(BIN("foob"), "{\"$bin\":\"Zm9vYg==\"}");
	JSON_IS(BIN("fooba"), "{\"$bin\":\"Zm9vYmE=\"}");
	JSON_IS(BIN("foobar"), "{\"$bin\":\"Zm9vYmFy\"}");
	JSON_IS(BIN("\0"), "{\"$bin\":\"AA==\"}");
	JSON_IS(BIN("\0\0\0\0"), "{\"$bin\":\"AAAAAA==\"}");
	JSON_IS(BIN("\xfb\xef\xbe"), "{\"$bin\":\"++++\"}");
	JSON_IS(BIN("\xff\xff\xff\xff"), "{\"$bin\":\"/////w==\"}");
}
END_TEST

START_TEST(test_containers)
{
	JSON_IS(ARR0, "[]");
	JSON_IS(MAP0, "{}");
	JSON_IS(ARR(U64(1)), "[1]");
	JSON_IS(ARR(U64(1), ARR(I64(-2), ARR0), MAP0), "[1,[-2,[]],{}]");
	JSON_IS(MAP(KV(STR("a"), ARR(BOOL(true), NIL)),
	            KV(STR("b"), MAP(KV(STR("c"), STR("d"))))),
	    "{\"a\":[true,null],\"b\":{\"c\":\"d\"}}");
	JSON_IS(ARR(ARR(ARR(ARR(ARR(STR("deep")))))), "[[[[[\"deep\"]]]]]");
	JSON_IS(MAP(KV(STR("x"), BIN("hi")), KV(STR("y"), F64(NAN))),
	    "{\"x\":{\"$bin\":\"aGk=\"},\"y\":null}");
}
END_TEST

/* A key that is not a string becomes its own JSON text, in a string. */
START_TEST(test_keys)
{
	JSON_IS(MAP(KV(U64(1), STR("one"))), "{\"1\":\"one\"}");
	JSON_IS(MAP(KV(I64(-7), NIL)), "{\"-7\":null}");
	JSON_IS(MAP(KV(NIL, U64(0))), "{\"null\":0}");
	JSON_IS(MAP(KV(BOOL(true), U64(1))), "{\"true\":1}");
	JSON_IS(MAP(KV(F64(2.5), U64(2))), "{\"2.5\":2}");
	JSON_IS(
	    MAP(KV(ARR(U64(1), STR("a")), U64(3))), "{\"[1,\\\"a\\\"]\":3}");
	JSON_IS(
	    MAP(KV(BIN("f"), U64(4))), "{\"{\\\"$bin\\\":\\\"Zg==\\\"}\":4}");
	JSON_IS(MAP(KV(STR("k\"\n"), U64(5))), "{\"k\\\"\\n\":5}");
	JSON_IS(
	    MAP(KV(STR("a"), U64(1)), KV(U64(2), U64(2))), "{\"a\":1,\"2\":2}");
}
END_TEST

/* A type JSON cannot carry renders as null rather than as nothing. */
START_TEST(test_ext)
{
	msgpack_object ext = {.type = MSGPACK_OBJECT_EXT};

	ext.via.ext.type = 1;
	ext.via.ext.size = 1;
	ext.via.ext.ptr = "x";
	JSON_IS(ext, "null");
	JSON_IS(ARR(ext, U64(1)), "[null,1]");
}
END_TEST

/* json_write and json_write_str to a stream: the same text, no newline. */
START_TEST(test_write)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	msgpack_object o = MAP(KV(STR("n"), U64(1)));

	ck_assert_ptr_nonnull(f);
	json_write(f, &o);
	fputc('|', f);
	json_write_str(f, "q\"\\", 3);
	fputc('|', f);
	json_write_str(f, "", 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_str_eq(buf, "{\"n\":1}|\"q\\\"\\\\\"|\"\"");
	free(buf);
}
END_TEST

static Suite *
json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, test_scalars);
	tcase_add_test(tc, test_floats);
	tcase_add_test(tc, test_float_precision);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_bin);
	tcase_add_test(tc, test_containers);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_ext);
	tcase_add_test(tc, test_write);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tap_run(json_suite());
}
