/* ws_progress: git's --progress lines ("Receiving objects:  45% (450/1000),
 * 1.20 MiB | 1.00 MiB/s") read into a phase and counts. Pure: no I/O. */
#ifndef BERTH_WS_PROGRESS_H
#define BERTH_WS_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ws_progress {
	const char *phase; /* wsreport's names: counting ... checkout */
	uint64_t objects, total, bytes;
};

/* Reads one line (without its "\r" or "\n"; a "remote: " prefix is
 * allowed). Returns true if it is a progress line of a known phase. */
bool ws_progress_parse(const char *line, size_t len, struct ws_progress *p);

#endif
