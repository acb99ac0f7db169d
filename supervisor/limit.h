/* limit: what a runtime, a command or a terminal session may use — CPU,
 * memory, processes, its workspace's disk and open files — as values read
 * from a request or the catalog with the same ranges and errors for all.
 * How they are held is enforce.h's. Plain values: no ownership. */
#ifndef BERTH_LIMIT_H
#define BERTH_LIMIT_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

enum limit_key {
	LIMIT_CPU,    /* cpu_millis: thousandths of a core */
	LIMIT_MEMORY, /* memory_bytes */
	LIMIT_PROCS,  /* max_processes */
	LIMIT_DISK,   /* disk_bytes: a runtime's workspace */
	LIMIT_FILES,  /* open_files */
	LIMIT_NKEYS
};

/* What is asked; 0: no limit. */
struct limit_set {
	uint64_t v[LIMIT_NKEYS];
};

#define LIMIT_WHY_MAX 160

/* The request's key, e.g. "memory_bytes". */
const char *limit_name(enum limit_key k);
/* The key named name, or LIMIT_NKEYS. */
enum limit_key limit_key_of(const char *name);
/* Whether v is in k's range; if not, why names the key and the range. */
bool limit_in_range(enum limit_key k, uint64_t v, char why[LIMIT_WHY_MAX]);
/* Reads a request's "limits" map (NULL or nil: none). disk_ok: the target
 * has a workspace. Returns 0, or -1 with why. */
int limit_parse(const msgpack_object *o, bool disk_ok, struct limit_set *l,
    char why[LIMIT_WHY_MAX]);
/* Each limit over asks for in base. */
void limit_merge(struct limit_set *base, const struct limit_set *over);
bool limit_any(const struct limit_set *l);

#endif
