/* diskreport: the one line berth-disk reports on its pipe, read by berthd.
 *
 * berth-disk (run as root) bounds a workspace and says how it went in one
 * "\n"-ended line of at most DISKREPORT_LINE_MAX bytes:
 *
 *	ok loop            a loop-mounted ext4 image of the size
 *	ok quota           a project quota of the size
 *	error: WHY         WHY 1 to DISKREPORT_WHY_MAX bytes, no control byte;
 *	                   "error: conflict: WHY" when the workspace is
 *	                   bounded to more than the size asked
 *
 * Anything else is refused whole. Pure: no I/O. Ownership: a parsed
 * report's why points into the caller's line. */
#ifndef BERTH_DISKREPORT_H
#define BERTH_DISKREPORT_H

#include <stdbool.h>
#include <stddef.h>

#define DISKREPORT_WHY_MAX 1024
#define DISKREPORT_LINE_MAX (DISKREPORT_WHY_MAX + 8)

struct diskreport {
	bool ok;
	const char *how; /* ok: "loop ext4 image" or "project quota" */
	bool conflict;   /* error: conflict */
	const char *why; /* error: after "error: " (conflict's prefix kept) */
	size_t whylen;
};

/* Parses line[0..len) (without its "\n"). Returns 0, or -1 if it is not
 * exactly one report of the format above. */
int diskreport_parse(const char *line, size_t len, struct diskreport *r);

#endif
