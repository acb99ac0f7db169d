/* limit: the values and their ranges (see limit.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "limit.h"

struct limit_range {
	const char *name;
	uint64_t min, max;
};

/* The minimums are where a limit stops making sense: an ext4 image under
 * 16 MiB has little room past its metadata, a process under 4 MiB of
 * memory cannot load a C library, and a dynamic loader needs a handful
 * of descriptors. The maximums are what the kernel could ever grant
 * (pid_max, nr_open) or beyond any machine (1 PiB, 1024 cores), so that
 * a value past them is a mistake, not a wish. */
static const struct limit_range limit_ranges[LIMIT_NKEYS] = {
    [LIMIT_CPU] = {"cpu_millis", 10, 1024000},
    [LIMIT_MEMORY] = {"memory_bytes", 4ull << 20, 1ull << 50},
    [LIMIT_PROCS] = {"max_processes", 1, 4194304},
    [LIMIT_DISK] = {"disk_bytes", 16ull << 20, 1ull << 50},
    [LIMIT_FILES] = {"open_files", 16, 1048576},
};

const char *
limit_name(enum limit_key k)
{
	return limit_ranges[k].name;
}

enum limit_key
limit_key_of(const char *name)
{
	int k;

	for (k = 0; k < LIMIT_NKEYS; k++)
		if (strcmp(name, limit_ranges[k].name) == 0)
			return (enum limit_key)k;
	return LIMIT_NKEYS;
}

bool
limit_in_range(enum limit_key k, uint64_t v, char why[LIMIT_WHY_MAX])
{
	const struct limit_range *r = &limit_ranges[k];

	if (v >= r->min && v <= r->max)
		return true;
	snprintf(why, LIMIT_WHY_MAX,
	    "limits.%s must be an integer from %" PRIu64 " to %" PRIu64,
	    r->name, r->min, r->max);
	return false;
}

/* The key as a name a message may quote: a short word, else "?". */
static const char *
limit_word(const msgpack_object_kv *kv, char *buf, size_t len)
{
	const msgpack_object_str *s = &kv->key.via.str;
	uint32_t i;

	if (kv->key.type != MSGPACK_OBJECT_STR || s->size == 0 ||
	    s->size >= len)
		return "?";
	for (i = 0; i < s->size; i++)
		if (!((s->ptr[i] >= 'a' && s->ptr[i] <= 'z') ||
		        (s->ptr[i] >= '0' && s->ptr[i] <= '9') ||
		        s->ptr[i] == '_'))
			return "?";
	memcpy(buf, s->ptr, s->size);
	buf[s->size] = '\0';
	return buf;
}

static int
limit_parse_one(const msgpack_object_kv *kv, bool disk_ok, struct limit_set *l,
    char why[LIMIT_WHY_MAX])
{
	char name[32];
	enum limit_key k = LIMIT_NKEYS;

	/* An empty string's pointer may be NULL: no copy of it. */
	if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size > 0 &&
	    kv->key.via.str.size < sizeof name) {
		memcpy(name, kv->key.via.str.ptr, kv->key.via.str.size);
		name[kv->key.via.str.size] = '\0';
		if (memchr(name, '\0', kv->key.via.str.size) == NULL)
			k = limit_key_of(name);
	}
	if (k == LIMIT_NKEYS) {
		/* A misspelt limit would leave the target silently unbound. */
		snprintf(why, LIMIT_WHY_MAX,
		    "unknown limit \"%s\" (known: cpu_millis, memory_bytes, "
		    "max_processes, disk_bytes, open_files)",
		    limit_word(kv, name, sizeof name));
		return -1;
	}
	if (k == LIMIT_DISK && !disk_ok) {
		snprintf(why, LIMIT_WHY_MAX,
		    "limits.disk_bytes bounds a runtime's workspace; a command "
		    "or a terminal session has none");
		return -1;
	}
	if (kv->val.type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
		limit_in_range(k, 0, why);
		return -1;
	}
	if (!limit_in_range(k, kv->val.via.u64, why))
		return -1;
	l->v[k] = kv->val.via.u64;
	return 0;
}

int
limit_parse(const msgpack_object *o, bool disk_ok, struct limit_set *l,
    char why[LIMIT_WHY_MAX])
{
	uint32_t i;

	memset(l, 0, sizeof *l);
	if (o == NULL || o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (o->type != MSGPACK_OBJECT_MAP) {
		snprintf(why, LIMIT_WHY_MAX,
		    "\"limits\" must be a map of limit names to integers");
		return -1;
	}
	for (i = 0; i < o->via.map.size; i++)
		if (limit_parse_one(&o->via.map.ptr[i], disk_ok, l, why) < 0)
			return -1;
	return 0;
}

void
limit_merge(struct limit_set *base, const struct limit_set *over)
{
	int k;

	for (k = 0; k < LIMIT_NKEYS; k++)
		if (over->v[k] != 0)
			base->v[k] = over->v[k];
}

bool
limit_any(const struct limit_set *l)
{
	int k;

	for (k = 0; k < LIMIT_NKEYS; k++)
		if (l->v[k] != 0)
			return true;
	return false;
}
