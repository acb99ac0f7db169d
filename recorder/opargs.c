/* opargs: a desktop op's arguments, read with their limits (see
 * opargs.h). Messages quote only our own key names, never a client's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opargs.h"
#include "xmalloc.h"

/* The value of key in args; NULL if absent or nil. */
static const msgpack_object *
opargs_get(const msgpack_object *args, const char *key)
{
	size_t klen = strlen(key);
	const msgpack_object *k;
	uint32_t i;

	if (args == NULL || args->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (i = 0; i < args->via.map.size; i++) {
		k = &args->via.map.ptr[i].key;
		if (k->type != MSGPACK_OBJECT_STR || k->via.str.size != klen ||
		    memcmp(k->via.str.ptr, key, klen) != 0)
			continue;
		if (args->via.map.ptr[i].val.type == MSGPACK_OBJECT_NIL)
			return NULL;
		return &args->via.map.ptr[i].val;
	}
	return NULL;
}

static bool
opargs_listed(const msgpack_object_str *s, const char *const *keys)
{
	for (; *keys != NULL; keys++)
		if (strlen(*keys) == s->size &&
		    memcmp(*keys, s->ptr, s->size) == 0)
			return true;
	return false;
}

/* keys as "a, b, c" for a message; the caller frees it. */
static char *
opargs_list(const char *const *keys)
{
	char *list = xstrdup(""), *next;

	for (; *keys != NULL; keys++) {
		next = xasprintf("%s%s%s", list, *list ? ", " : "", *keys);
		free(list);
		list = next;
	}
	return list;
}

/* Whether key i of args is a string key named before it. */
static bool
opargs_repeated(const msgpack_object *args, uint32_t i)
{
	const msgpack_object_str *s = &args->via.map.ptr[i].key.via.str, *t;
	uint32_t j;

	for (j = 0; j < i; j++) {
		if (args->via.map.ptr[j].key.type != MSGPACK_OBJECT_STR)
			continue;
		t = &args->via.map.ptr[j].key.via.str;
		if (t->size == s->size && memcmp(t->ptr, s->ptr, s->size) == 0)
			return true;
	}
	return false;
}

/* Unknown keys, strings or not, are ignored as the envelope promises (a
 * newer client may send what this berth-desktop does not read); a known
 * one given twice is refused, since which value counts is not said. */
int
opargs_known(const msgpack_object *args, const char *const *keys, char **cause)
{
	const msgpack_object *k;
	uint32_t i;

	if (args->type != MSGPACK_OBJECT_MAP) {
		*cause = xstrdup("args must be a map");
		return -1;
	}
	for (i = 0; i < args->via.map.size; i++) {
		k = &args->via.map.ptr[i].key;
		if (k->type != MSGPACK_OBJECT_STR ||
		    !opargs_listed(&k->via.str, keys))
			continue;
		if (opargs_repeated(args, i)) {
			*cause = xasprintf("\"%.*s\" is given twice",
			    (int)k->via.str.size, k->via.str.ptr);
			return -1;
		}
	}
	return 0;
}

/* An integer object's value, if it is one. */
static bool
opargs_integer(const msgpack_object *v, int64_t *out)
{
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		if (v->via.u64 > INT64_MAX)
			*out = INT64_MAX;
		else
			*out = (int64_t)v->via.u64;
		return true;
	}
	if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*out = v->via.i64;
		return true;
	}
	return false;
}

int
opargs_int(const msgpack_object *args, const char *key, int64_t lo, int64_t hi,
    int64_t *out, char **cause)
{
	const msgpack_object *v = opargs_get(args, key);
	int64_t n;

	if (v == NULL)
		return 0;
	if (!opargs_integer(v, &n) || n < lo || n > hi) {
		*cause = xasprintf("\"%s\" must be an integer in %lld-%lld",
		    key, (long long)lo, (long long)hi);
		return -1;
	}
	*out = n;
	return 1;
}

int
opargs_number(const msgpack_object *args, const char *key, double lo, double hi,
    double *out, char **cause)
{
	const msgpack_object *v = opargs_get(args, key);
	int64_t n;
	double f;

	if (v == NULL)
		return 0;
	if (opargs_integer(v, &n))
		f = (double)n;
	else if (v->type == MSGPACK_OBJECT_FLOAT32 ||
	    v->type == MSGPACK_OBJECT_FLOAT64)
		f = v->via.f64;
	else
		f = NAN;
	/* NaN fails both comparisons, so it is refused too. */
	if (!(f >= lo && f <= hi)) {
		*cause =
		    xasprintf("\"%s\" must be a number in %g-%g", key, lo, hi);
		return -1;
	}
	*out = f;
	return 1;
}

int
opargs_bool(
    const msgpack_object *args, const char *key, bool *out, char **cause)
{
	const msgpack_object *v = opargs_get(args, key);

	if (v == NULL)
		return 0;
	if (v->type != MSGPACK_OBJECT_BOOLEAN) {
		*cause = xasprintf("\"%s\" must be a bool", key);
		return -1;
	}
	*out = v->via.boolean;
	return 1;
}

int
opargs_word(const msgpack_object *args, const char *key,
    const char *const *words, int *out, char **cause)
{
	const msgpack_object *v = opargs_get(args, key);
	char *list;
	int i;

	if (v == NULL)
		return 0;
	if (v->type == MSGPACK_OBJECT_STR) {
		for (i = 0; words[i] != NULL; i++) {
			if (strlen(words[i]) == v->via.str.size &&
			    memcmp(words[i], v->via.str.ptr, v->via.str.size) ==
			        0) {
				*out = i;
				return 1;
			}
		}
	}
	list = opargs_list(words);
	*cause = xasprintf("\"%s\" must be one of: %s", key, list);
	free(list);
	return -1;
}

int
opargs_rect(const msgpack_object *args, const char *key, int width, int height,
    struct opargs_rect *out, char **cause)
{
	static const char *const keys[] = {"x", "y", "width", "height", NULL};
	const msgpack_object *v = opargs_get(args, key);
	int64_t f[4];
	char *why = NULL;
	int i, r;

	if (v == NULL)
		return 0;
	if (v->type != MSGPACK_OBJECT_MAP) {
		*cause = xasprintf(
		    "\"%s\" must be a map {x, y, width, height}", key);
		return -1;
	}
	if (opargs_known(v, keys, &why) < 0)
		goto fail;
	for (i = 0; i < 4; i++) {
		r = opargs_int(v, keys[i], INT32_MIN, INT32_MAX, &f[i], &why);
		if (r < 0)
			goto fail;
		if (r == 0) {
			why = xasprintf("\"%s\" is missing", keys[i]);
			goto fail;
		}
	}
	if (f[0] < 0 || f[1] < 0 || f[2] < 1 || f[3] < 1 || f[0] >= width ||
	    f[1] >= height || f[2] > width - f[0] || f[3] > height - f[1]) {
		*cause = xasprintf("\"%s\" {x %lld, y %lld, width %lld, "
		                   "height %lld} must lie within the screen "
		                   "(%dx%d) and be at least 1x1",
		    key, (long long)f[0], (long long)f[1], (long long)f[2],
		    (long long)f[3], width, height);
		return -1;
	}
	out->x = (int)f[0];
	out->y = (int)f[1];
	out->width = (int)f[2];
	out->height = (int)f[3];
	return 1;

fail:
	*cause = xasprintf("\"%s\": %s", key, why);
	free(why);
	return -1;
}
