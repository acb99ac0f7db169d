/* fuzz_taskrec: libFuzzer target for a task's record file (taskrec.c),
 * which berthd reads back when it starts. Whatever the bytes, a refusal's
 * reason is a NUL-ended string within its buffer; a record taken is one
 * taskrec_encode would write: encoded again it is the same msgpack (its
 * keys in any order), and that decodes to a record that encodes to the
 * very same bytes. */
#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpcheck.h"
#include "proto.h"
#include "taskrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const msgpack_object *a, const msgpack_object *b);

/* Maps with the same pairs, in any order (a record has no key twice). */
static bool
same_map(const msgpack_object *a, const msgpack_object *b)
{
	const msgpack_object *v;
	char key[64];
	uint32_t i;

	if (a->via.map.size != b->via.map.size)
		return false;
	for (i = 0; i < a->via.map.size; i++) {
		const msgpack_object *k = &a->via.map.ptr[i].key;
		if (k->type != MSGPACK_OBJECT_STR ||
		    k->via.str.size >= sizeof key)
			return false;
		memcpy(key, k->via.str.ptr, k->via.str.size);
		key[k->via.str.size] = '\0';
		if ((v = proto_map_get(b, key)) == NULL ||
		    !same(&a->via.map.ptr[i].val, v))
			return false;
	}
	return true;
}

static bool
same(const msgpack_object *a, const msgpack_object *b)
{
	uint32_t i;

	if (a->type != b->type)
		return false;
	if (a->type == MSGPACK_OBJECT_MAP)
		return same_map(a, b);
	if (a->type != MSGPACK_OBJECT_ARRAY)
		return msgpack_object_equal(*a, *b);
	if (a->via.array.size != b->via.array.size)
		return false;
	for (i = 0; i < a->via.array.size; i++)
		if (!same(&a->via.array.ptr[i], &b->via.array.ptr[i]))
			return false;
	return true;
}

/* The input (which mpcheck let through, as decode did) and enc, one
 * msgpack object each, are the same. */
static bool
same_bytes(const uint8_t *data, size_t size, const char *enc, size_t len)
{
	msgpack_unpacked a, b;
	bool ok;

	msgpack_unpacked_init(&a);
	msgpack_unpacked_init(&b);
	ok = msgpack_unpack_next(&a, (const char *)data, size, NULL) ==
	        MSGPACK_UNPACK_SUCCESS &&
	    msgpack_unpack_next(&b, enc, len, NULL) == MSGPACK_UNPACK_SUCCESS &&
	    same(&a.data, &b.data);
	msgpack_unpacked_destroy(&a);
	msgpack_unpacked_destroy(&b);
	return ok;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct taskrec r, back;
	char why[256], *enc, *again;
	size_t len, alen;

	taskrec_init(&r);
	memset(why, 'x', sizeof why);
	if (taskrec_decode(data, size, &r, why, sizeof why) < 0) {
		if (memchr(why, '\0', sizeof why) == NULL || r.prompt != NULL ||
		    r.nchecks != 0 || r.env != NULL)
			abort();
		return 0;
	}
	taskrec_encode(&r, &enc, &len);
	if (!same_bytes(data, size, enc, len))
		abort();
	taskrec_init(&back);
	if (taskrec_decode(enc, len, &back, why, sizeof why) < 0)
		abort();
	taskrec_encode(&back, &again, &alen);
	if (alen != len || memcmp(enc, again, len) != 0)
		abort();
	free(again);
	free(enc);
	taskrec_free(&back);
	taskrec_free(&r);
	return 0;
}
