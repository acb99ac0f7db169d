/* wsreport: the lines berth-workspace reports on its pipe, read by berthd.
 *
 * berth-workspace runs git as the runtime's user and tells berthd what
 * happened in a strict line format (one report a line, "\n" ended, at
 * most WSREPORT_LINE_MAX bytes):
 *
 *	progress PHASE OBJECTS TOTAL BYTES   PHASE: counting compressing
 *	                                      receiving resolving checkout
 *	dirty PATH                            a changed file (1 to 4096 bytes)
 *	conflict dirty COUNT                  the workspace has COUNT changes
 *	conflict origin                       a clone of another repository
 *	conflict notrepo                      not empty and not a clone
 *	failed REASON                         git's reason (1 to 1024 bytes)
 *	done COMMIT CLONED BRANCH             40 hex, 0 or 1, the branch
 *
 * Numbers are decimal without sign or leading zero, at most 2^63-1; texts
 * have no control byte. Anything else is refused whole. Pure: no I/O.
 * (The lines of berth-workspace's deliver mode are below.)
 * Ownership: a parsed report's text points into the caller's line. */
#ifndef BERTH_WSREPORT_H
#define BERTH_WSREPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WSREPORT_LINE_MAX 4200
#define WSREPORT_PATH_MAX 4096
#define WSREPORT_REASON_MAX 1024
#define WSREPORT_BRANCH_MAX 255

enum wsreport_kind {
	WSREPORT_PROGRESS,
	WSREPORT_DIRTY,
	WSREPORT_CONFLICT,
	WSREPORT_FAILED,
	WSREPORT_DONE,
};

enum wsreport_conflict {
	WSREPORT_CONFLICT_DIRTY,
	WSREPORT_CONFLICT_ORIGIN,
	WSREPORT_CONFLICT_NOTREPO,
};

struct wsreport {
	enum wsreport_kind kind;
	const char *phase; /* progress: a static name */
	uint64_t objects, total, bytes;
	enum wsreport_conflict conflict;
	uint64_t count;   /* conflict dirty */
	const char *text; /* dirty's path, failed's reason, done's branch */
	size_t textlen;
	char commit[41]; /* done */
	bool cloned;     /* done */
};

/* Parses line[0..len) (without its "\n"). Returns 0, or -1 if it is not
 * exactly one report of the format above. */
int wsreport_parse(const char *line, size_t len, struct wsreport *r);

/* berth-workspace deliver (task.deliver) reports in the same format
 * with lines of its own:
 *
 *	conflict notrepo                      no clone at the directory
 *	conflict nohead                       HEAD is no commit
 *	conflict exists                       the branch exists already
 *	conflict nochange                     the files are HEAD's
 *	failed REASON                         git's reason (1 to 1024 bytes)
 *	stat FILES INSERTIONS DELETIONS       git diff --shortstat's counts
 *	diffstat LINE                         one line of git diff --stat
 *	                                      (1 to 4096 bytes)
 *	delivered COMMIT BASE PUSHED          40 hex, 40 hex, 0 or 1
 */
#define WSREPORT_DIFFSTAT_LINE_MAX 4096

enum wsreport_deliver_kind {
	WSREPORT_DELIVER_CONFLICT,
	WSREPORT_DELIVER_FAILED,
	WSREPORT_DELIVER_STAT,
	WSREPORT_DELIVER_DIFFSTAT,
	WSREPORT_DELIVER_DELIVERED,
};

enum wsreport_deliver_conflict {
	WSREPORT_DELIVER_NOTREPO,
	WSREPORT_DELIVER_NOHEAD,
	WSREPORT_DELIVER_EXISTS,
	WSREPORT_DELIVER_NOCHANGE,
};

struct wsreport_deliver {
	enum wsreport_deliver_kind kind;
	enum wsreport_deliver_conflict conflict;
	uint64_t files, insertions, deletions; /* stat */
	const char *text; /* failed's reason, diffstat's line */
	size_t textlen;
	char commit[41], base[41]; /* delivered */
	bool pushed;               /* delivered */
};

/* Parses one line of deliver's as wsreport_parse does. */
int wsreport_deliver_parse(
    const char *line, size_t len, struct wsreport_deliver *r);

#endif
