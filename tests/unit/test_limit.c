/* test_limit: unit tests of the limits a request or the catalog gives
 * (limit.c): each key in its range, every other value, type, key or a
 * disk limit on a target without a workspace refused with a message that
 * names the key and its range. */
#include <msgpack.h>
#include <string.h>

#include "limit.h"
#include "tap.h"

/* Parses a msgpack map packed by fill into l; returns limit_parse's. */
static int
parse(void (*fill)(msgpack_packer *), bool disk_ok, struct limit_set *l,
    char why[LIMIT_WHY_MAX])
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked u;
	int rc;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	fill(&pk);
	msgpack_unpacked_init(&u);
	ck_assert_int_eq(msgpack_unpack_next(&u, sb.data, sb.size, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	why[0] = '\0';
	rc = limit_parse(&u.data, disk_ok, l, why);
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

static void
kv(msgpack_packer *pk, const char *k)
{
	msgpack_pack_str(pk, strlen(k));
	msgpack_pack_str_body(pk, k, strlen(k));
}

static void
fill_all(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 5);
	kv(pk, "cpu_millis");
	msgpack_pack_uint64(pk, 250);
	kv(pk, "memory_bytes");
	msgpack_pack_uint64(pk, 64u << 20);
	kv(pk, "max_processes");
	msgpack_pack_uint64(pk, 64);
	kv(pk, "disk_bytes");
	msgpack_pack_uint64(pk, 32u << 20);
	kv(pk, "open_files");
	msgpack_pack_uint64(pk, 32);
}

START_TEST(test_taken)
{
	char why[LIMIT_WHY_MAX];
	struct limit_set l;

	ck_assert_int_eq(parse(fill_all, true, &l, why), 0);
	ck_assert_uint_eq(l.v[LIMIT_CPU], 250);
	ck_assert_uint_eq(l.v[LIMIT_MEMORY], 64u << 20);
	ck_assert_uint_eq(l.v[LIMIT_PROCS], 64);
	ck_assert_uint_eq(l.v[LIMIT_DISK], 32u << 20);
	ck_assert_uint_eq(l.v[LIMIT_FILES], 32);
	ck_assert(limit_any(&l));
	ck_assert_int_eq(limit_parse(NULL, false, &l, why), 0);
	ck_assert(!limit_any(&l));
}
END_TEST

static void
fill_negative(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	kv(pk, "memory_bytes");
	msgpack_pack_int64(pk, -1);
}

static void
fill_zero(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	kv(pk, "max_processes");
	msgpack_pack_uint64(pk, 0);
}

static void
fill_absurd(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	kv(pk, "cpu_millis");
	msgpack_pack_uint64(pk, UINT64_C(1) << 63);
}

static void
fill_string(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	kv(pk, "open_files");
	kv(pk, "32");
}

static void
fill_unknown(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	kv(pk, "memry_bytes");
	msgpack_pack_uint64(pk, 1u << 30);
}

static void
fill_not_map(msgpack_packer *pk)
{
	msgpack_pack_array(pk, 0);
}

static void
fill_odd_key(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	kv(pk, "a\x01\"b");
	msgpack_pack_uint64(pk, 1);
}

static void
fill_empty_key(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 1);
	msgpack_pack_str(pk, 0);
	msgpack_pack_uint64(pk, 1);
}

static void
refused(void (*fill)(msgpack_packer *), bool disk_ok, const char *want)
{
	char why[LIMIT_WHY_MAX];
	struct limit_set l;

	ck_assert_int_eq(parse(fill, disk_ok, &l, why), -1);
	ck_assert_msg(
	    strstr(why, want) != NULL, "\"%s\" lacks \"%s\"", why, want);
}

START_TEST(test_refused)
{
	refused(fill_negative, true,
	    "limits.memory_bytes must be an integer from 4194304 to "
	    "1125899906842624");
	refused(fill_zero, true,
	    "limits.max_processes must be an integer from 1 to 4194304");
	refused(fill_absurd, true,
	    "limits.cpu_millis must be an integer from 10 to 1024000");
	refused(fill_string, true, "limits.open_files must be an integer");
	refused(fill_unknown, true, "unknown limit \"memry_bytes\"");
	refused(fill_not_map, true, "\"limits\" must be a map");
	refused(fill_all, false, "disk_bytes bounds a runtime's workspace");
	/* A key that is no word is not quoted into the message. */
	refused(fill_odd_key, true, "unknown limit \"?\"");
	refused(fill_empty_key, true, "unknown limit \"?\"");
}
END_TEST

START_TEST(test_ranges)
{
	char why[LIMIT_WHY_MAX];
	struct limit_set a = {{0}}, b = {{0}};

	ck_assert(limit_in_range(LIMIT_DISK, 16u << 20, why));
	ck_assert(!limit_in_range(LIMIT_DISK, (16u << 20) - 1, why));
	ck_assert(limit_in_range(LIMIT_FILES, 1048576, why));
	ck_assert(!limit_in_range(LIMIT_FILES, 1048577, why));
	ck_assert_int_eq(limit_key_of("open_files"), LIMIT_FILES);
	ck_assert_int_eq(limit_key_of("open"), LIMIT_NKEYS);
	a.v[LIMIT_CPU] = 500;
	a.v[LIMIT_MEMORY] = 1u << 30;
	b.v[LIMIT_CPU] = 250;
	limit_merge(&a, &b);
	ck_assert_uint_eq(a.v[LIMIT_CPU], 250);
	ck_assert_uint_eq(a.v[LIMIT_MEMORY], 1u << 30);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("limit");
	TCase *tc = tcase_create("limit");

	tcase_add_test(tc, test_taken);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_ranges);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
