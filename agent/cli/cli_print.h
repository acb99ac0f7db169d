/* cli_print: what the berth CLI shows — results and events as lines for
 * people (aligned tables, UTC times, durations) or as JSON for scripts,
 * and its own messages on stderr. Owns no state. */
#ifndef BERTH_CLI_PRINT_H
#define BERTH_CLI_PRINT_H

#include <msgpack.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* Makes s (NUL-terminated, changed in place) safe on a terminal: every
 * control character becomes '?', so server text never moves the cursor or
 * starts an escape. Returns s. */
char *cli_print_tame(char *s);

/* "berth: MESSAGE" on stderr. */
void cli_print_vwarn(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0)));
void cli_print_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A table for people on stdout: nrows rows of ncols cells (row after row,
 * the first the header; the array and its strings taken and freed), each
 * column but the last padded to its widest cell. */
void cli_print_table(size_t ncols, size_t nrows, char **cells);
/* The cells of such a table of nrows rows under the header head (ncols
 * names, copied): the rows start at ncols, for the caller to fill. */
char **cli_print_cells(const char *const *head, size_t ncols, size_t nrows);
/* The same for the array at result's key, its n items at *items; NULL,
 * with the line none printed, if there is none. */
char **cli_print_list_cells(const msgpack_object *result, const char *key,
    const char *none, const char *const *head, size_t ncols,
    const msgpack_object **items, uint32_t *n);

/* An exit ({code} or {signal, core}) in words, allocated: "-" (none),
 * "exit 3", "SIGKILL" or "SIGSEGV (core)". */
char *cli_print_exit(const msgpack_object *e);

/* A time (ms since the epoch) in UTC to the second, allocated:
 * "2006-01-02T15:04:05Z", or "-" for 0 (none, or not yet). */
char *cli_print_utc(uint64_t ms);

/* A map's unsigned integer at key: 0 if absent or of another type. */
uint64_t cli_print_u64(const msgpack_object *map, const char *key);

/* A span of time in its two largest units, allocated: "42s", "3m5s",
 * "3h12m", "2d4h". */
char *cli_print_duration(uint64_t ms);

/* Any result as one line of JSON on stdout. */
void cli_print_json(const msgpack_object *obj);

/* The result of ping, with the round trip measured by the caller. */
void cli_print_ping(const msgpack_object *result, double rtt_ms, bool json);
/* The result of state: a header line, services and checks. */
void cli_print_state(const msgpack_object *result, bool json);
void cli_print_service_list(const msgpack_object *result, bool json);
void cli_print_service(const msgpack_object *result, bool json);
/* The PTY sessions of a pty.list result, as a table. */
void cli_print_pty_list(const msgpack_object *result);
/* A runtime's status (runtime.status, runtime.start, workspace.prepare's
 * result too) as key value lines, without what is nil. */
void cli_print_runtime(const msgpack_object *result, bool json);
/* The runtimes of a runtime.list result, as a table. */
void cli_print_runtime_list(const msgpack_object *result);
/* One event message: a line of text, or the whole message as JSON. */
void cli_print_event(const struct proto_msg *msg, bool json);
/* An events.gap event, on stderr for people (and on stdout with json). */
void cli_print_gap(const struct proto_msg *msg, bool json);

#endif
