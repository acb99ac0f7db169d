/* mpcheck: validates untrusted msgpack bytes before anything is allocated.
 *
 * msgpack-c allocates count x sizeof(msgpack_object) the moment it reads an
 * array or map header, so five hostile bytes can ask for gigabytes. This
 * walker reads headers only: it proves the buffer holds exactly one object,
 * no deeper than a bound, with no more objects in all than a bound, every
 * container count possible given the bytes that remain, and no ext types.
 * Only then may msgpack-c unpack it. */
#ifndef BERTH_MPCHECK_H
#define BERTH_MPCHECK_H

#include <stddef.h>
#include <stdint.h>

/* No caller may allow deeper nesting than this. */
#define MPCHECK_DEPTH_CEILING 64

struct mpcheck_limits {
	unsigned max_depth; /* containers nested deeper fail (<= ceiling) */
	size_t max_objects; /* objects in all (containers and leaves) */
};

/* Returns 0 if buf[0..len) is exactly one acceptable object, else -1 with
 * *why set to a static, human-readable reason. Allocates nothing. */
int mpcheck_object(const uint8_t *buf, size_t len,
    const struct mpcheck_limits *lim, const char **why);

#endif
