/* cli_print: what the berth CLI shows, for people or as JSON. Everything
 * the server sends is untrusted text: control characters never reach the
 * terminal raw. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_print.h"
#include "json.h"
#include "xmalloc.h"

/* A table for people: rows of cells, each column as wide as its widest
 * cell. Owns its cells (allocated by cli_print_row, freed by the flush). */
struct cli_print_table {
	size_t ncols;
	size_t nrows;
	char **cells; /* nrows * ncols */
};

char *
cli_print_tame(char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	return s;
}

void
cli_print_vwarn(const char *fmt, va_list ap)
{
	char *msg;

	if (vasprintf(&msg, fmt, ap) < 0)
		return;
	fflush(stdout);
	fprintf(stderr, "berth: %s\n", cli_print_tame(msg));
	free(msg);
}

void
cli_print_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_print_vwarn(fmt, ap);
	va_end(ap);
}

void
cli_print_json(const msgpack_object *obj)
{
	json_write(stdout, obj);
	fputc('\n', stdout);
}

/* A copy of a string object that is safe on a terminal; "-" if obj is
 * absent or not a string. */
static char *
cli_print_text(const msgpack_object *obj)
{
	if (obj == NULL || obj->type != MSGPACK_OBJECT_STR)
		return xstrdup("-");
	/* A NUL inside ends the copy early. */
	return cli_print_tame(xstrndup(obj->via.str.ptr, obj->via.str.size));
}

uint64_t
cli_print_u64(const msgpack_object *map, const char *key)
{
	uint64_t v = 0;

	proto_arg_u64(map, key, &v);
	return v;
}

/* The two largest units are enough to read at a glance. */
char *
cli_print_duration(uint64_t ms)
{
	uint64_t s = ms / 1000;

	if (s < 60)
		return xasprintf("%" PRIu64 "s", s);
	if (s < 3600)
		return xasprintf("%" PRIu64 "m%" PRIu64 "s", s / 60, s % 60);
	if (s < 86400)
		return xasprintf(
		    "%" PRIu64 "h%" PRIu64 "m", s / 3600, s % 3600 / 60);
	return xasprintf(
	    "%" PRIu64 "d%" PRIu64 "h", s / 86400, s % 86400 / 3600);
}

/* How long ago since was, by the server's clock. */
static char *
cli_print_since(uint64_t now, uint64_t since)
{
	return cli_print_duration(now > since ? now - since : 0);
}

/* ms since the epoch in UTC to the second, "2006-01-02T15:04:05", into
 * buf: false if it has no such date. */
static bool
cli_print_utc_buf(uint64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	return gmtime_r(&t, &tm) != NULL &&
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm) != 0;
}

char *
cli_print_utc(uint64_t ms)
{
	char buf[32];

	if (ms == 0)
		return xstrdup("-");
	if (!cli_print_utc_buf(ms, buf, sizeof buf))
		return xasprintf("%" PRIu64 " ms", ms);
	return xasprintf("%sZ", buf);
}

static void
cli_print_time(FILE *f, uint64_t ms)
{
	char buf[32];

	if (!cli_print_utc_buf(ms, buf, sizeof buf)) {
		fprintf(f, "%" PRIu64 "ms", ms);
		return;
	}
	fprintf(f, "%s.%03uZ", buf, (unsigned)(ms % 1000));
}

static void
cli_print_row(struct cli_print_table *t, ...)
{
	va_list ap;
	size_t i;

	t->cells = xreallocarray(
	    t->cells, (t->nrows + 1) * t->ncols, sizeof *t->cells);
	va_start(ap, t);
	for (i = 0; i < t->ncols; i++)
		t->cells[t->nrows * t->ncols + i] = va_arg(ap, char *);
	va_end(ap);
	t->nrows++;
}

/* Starts a table of ncols columns with its header row (copied). */
static void
cli_print_header(struct cli_print_table *t, size_t ncols, ...)
{
	va_list ap;
	size_t i;

	t->ncols = ncols;
	t->nrows = 1;
	t->cells = xreallocarray(NULL, ncols, sizeof *t->cells);
	va_start(ap, ncols);
	for (i = 0; i < ncols; i++)
		t->cells[i] = xstrdup(va_arg(ap, const char *));
	va_end(ap);
}

void
cli_print_table(size_t ncols, size_t nrows, char **cells)
{
	size_t *width = xcalloc(ncols, sizeof *width), r, c, n;
	char *cell;

	for (r = 0; r < nrows; r++)
		for (c = 0; c < ncols; c++) {
			n = strlen(cells[r * ncols + c]);
			if (n > width[c])
				width[c] = n;
		}
	for (r = 0; r < nrows; r++) {
		for (c = 0; c < ncols; c++) {
			cell = cells[r * ncols + c];
			if (c + 1 == ncols)
				printf("%s\n", cell);
			else
				printf("%-*s  ", (int)width[c], cell);
			free(cell);
		}
	}
	free(cells);
	free(width);
}

char **
cli_print_cells(const char *const *head, size_t ncols, size_t nrows)
{
	char **cells = xcalloc((nrows + 1) * ncols, sizeof *cells);
	size_t c;

	for (c = 0; c < ncols; c++)
		cells[c] = xstrdup(head[c]);
	return cells;
}

char **
cli_print_list_cells(const msgpack_object *result, const char *key,
    const char *none, const char *const *head, size_t ncols,
    const msgpack_object **items, uint32_t *n)
{
	const msgpack_object *list = proto_map_get(result, key);

	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY ||
	    list->via.array.size == 0) {
		printf("%s\n", none);
		return NULL;
	}
	*items = list->via.array.ptr;
	*n = list->via.array.size;
	return cli_print_cells(head, ncols, *n);
}

static void
cli_print_flush(struct cli_print_table *t)
{
	cli_print_table(t->ncols, t->nrows, t->cells);
	t->cells = NULL;
}

void
cli_print_ping(const msgpack_object *result, double rtt_ms, bool json)
{
	char *boot;

	if (json) {
		printf("{\"rtt_ms\":%.3f,\"result\":", rtt_ms);
		json_write(stdout, result);
		printf("}\n");
		return;
	}
	boot = cli_print_text(proto_map_get(result, "boot_id"));
	printf("pong from %s in %.2f ms\n", boot, rtt_ms);
	free(boot);
}

char *
cli_print_exit(const msgpack_object *e)
{
	const msgpack_object *code = proto_map_get(e, "code");
	const char *name;
	uint64_t sig = 0;
	bool core = false;

	if (code != NULL && code->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		return xasprintf("exit %" PRIu64, code->via.u64);
	if (code != NULL && code->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		return xasprintf("exit %" PRId64, code->via.i64);
	if (proto_arg_u64(e, "signal", &sig) != 1)
		return xstrdup("-");
	proto_arg_bool(e, "core", &core);
	name = sig < 128 ? sigabbrev_np((int)sig) : NULL;
	if (name == NULL)
		return xasprintf(
		    "signal %" PRIu64 "%s", sig, core ? " (core)" : "");
	return xasprintf("SIG%s%s", name, core ? " (core)" : "");
}

static void
cli_print_services(const msgpack_object *list)
{
	struct cli_print_table t = {0};
	const msgpack_object *s;
	char *state;
	uint32_t i;

	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY ||
	    list->via.array.size == 0) {
		printf("no services\n");
		return;
	}
	cli_print_header(&t, 7, "NAME", "KIND", "STATE", "PID", "UPTIME",
	    "RESTARTS", "LAST EXIT");
	for (i = 0; i < list->via.array.size; i++) {
		s = &list->via.array.ptr[i];
		state = cli_print_text(proto_map_get(s, "state"));
		cli_print_row(&t, cli_print_text(proto_map_get(s, "name")),
		    cli_print_text(proto_map_get(s, "kind")), state,
		    cli_print_u64(s, "pid") == 0
		        ? xstrdup("-")
		        : xasprintf("%" PRIu64, cli_print_u64(s, "pid")),
		    cli_print_u64(s, "pid") == 0
		        ? xstrdup("-")
		        : cli_print_duration(cli_print_u64(s, "uptime_ms")),
		    xasprintf("%" PRIu64, cli_print_u64(s, "restarts")),
		    cli_print_exit(proto_map_get(s, "last_exit")));
	}
	cli_print_flush(&t);
}

static void
cli_print_checks(const msgpack_object *map, uint64_t now)
{
	struct cli_print_table t = {0};
	const msgpack_object *k, *v;
	bool ok;
	uint32_t i;

	if (map == NULL || map->type != MSGPACK_OBJECT_MAP ||
	    map->via.map.size == 0)
		return;
	printf("\n");
	cli_print_header(&t, 4, "CHECK", "STATUS", "FOR", "REASON");
	for (i = 0; i < map->via.map.size; i++) {
		k = &map->via.map.ptr[i].key;
		v = &map->via.map.ptr[i].val;
		ok = false;
		proto_arg_bool(v, "ok", &ok);
		cli_print_row(&t, cli_print_text(k),
		    xstrdup(ok ? "ok" : "failing"),
		    cli_print_since(now, cli_print_u64(v, "since")),
		    cli_print_text(proto_map_get(v, "reason")));
	}
	cli_print_flush(&t);
}

void
cli_print_state(const msgpack_object *result, bool json)
{
	char *boot, *version, *up;
	uint64_t now, last;

	if (json) {
		cli_print_json(result);
		return;
	}
	/* The server's clock, so that a skewed local clock does not lie. */
	now = cli_print_u64(result, "started_at") +
	    cli_print_u64(result, "uptime_ms");
	boot = cli_print_text(proto_map_get(result, "boot_id"));
	version = cli_print_text(proto_map_get(result, "agent_version"));
	up = cli_print_duration(cli_print_u64(result, "uptime_ms"));
	last = cli_print_u64(result, "last_seq");
	printf("berthd %s  pid %" PRIu64 "  boot %s  up %s  ", version,
	    cli_print_u64(result, "pid"), boot, up);
	if (last == 0)
		printf("no events\n");
	else
		printf("events %" PRIu64 "..%" PRIu64 "\n",
		    cli_print_u64(result, "first_seq"), last);
	free(up);
	free(version);
	free(boot);
	printf("\n");
	cli_print_services(proto_map_get(result, "services"));
	cli_print_checks(proto_map_get(result, "checks"), now);
}

/* A string goes bare unless a reader could mistake where it ends. */
static void
cli_print_value(const msgpack_object *v)
{
	const char *p;
	uint32_t i, n;
	bool bare;

	if (v->type != MSGPACK_OBJECT_STR) {
		json_write(stdout, v);
		return;
	}
	p = v->via.str.ptr;
	n = v->via.str.size;
	bare = n > 0;
	for (i = 0; i < n && bare; i++)
		if ((unsigned char)p[i] <= 0x20 || p[i] == '"' ||
		    p[i] == '\\' || p[i] == 0x7f)
			bare = false;
	if (bare)
		fwrite(p, 1, n, stdout);
	else
		json_write_str(stdout, p, n);
}

void
cli_print_event(const struct proto_msg *msg, bool json)
{
	const msgpack_object *data = msg->data, *k;
	char *kind;
	uint32_t i;

	if (json) {
		cli_print_json(&msg->unpacked.data);
		return;
	}
	kind = cli_print_tame(xstrdup(msg->kind));
	printf("%" PRIu64 "  ", msg->seq);
	cli_print_time(stdout, msg->ts);
	printf("  %s", kind);
	free(kind);
	for (i = 0; i < data->via.map.size; i++) {
		k = &data->via.map.ptr[i].key;
		fputs(i == 0 ? "  " : " ", stdout);
		if (k->type == MSGPACK_OBJECT_STR)
			cli_print_value(k);
		else
			json_write(stdout, k);
		fputc('=', stdout);
		cli_print_value(&data->via.map.ptr[i].val);
	}
	fputc('\n', stdout);
}

void
cli_print_gap(const struct proto_msg *msg, bool json)
{
	if (json)
		cli_print_json(&msg->unpacked.data);
	cli_print_warn("%" PRIu64
	               " events lost: the journal starts at seq %" PRIu64,
	    cli_print_u64(msg->data, "lost"),
	    cli_print_u64(msg->data, "first_seq"));
}

void
cli_print_service_list(const msgpack_object *result, bool json)
{
	if (json) {
		cli_print_json(result);
		return;
	}
	cli_print_services(proto_map_get(result, "services"));
}

/* A result as "key value" lines, in the order berthd sent them; without
 * the keys whose value is nil if skip_nil. */
static void
cli_print_fields(const msgpack_object *result, bool json, bool skip_nil)
{
	const msgpack_object *k, *v;
	uint32_t i;

	if (json || result->type != MSGPACK_OBJECT_MAP) {
		cli_print_json(result);
		return;
	}
	for (i = 0; i < result->via.map.size; i++) {
		k = &result->via.map.ptr[i].key;
		v = &result->via.map.ptr[i].val;
		if (skip_nil && v->type == MSGPACK_OBJECT_NIL)
			continue;
		if (k->type == MSGPACK_OBJECT_STR)
			printf(
			    "%-15.*s ", (int)k->via.str.size, k->via.str.ptr);
		cli_print_value(v);
		fputc('\n', stdout);
	}
}

void
cli_print_service(const msgpack_object *result, bool json)
{
	cli_print_fields(result, json, false);
}

void
cli_print_runtime(const msgpack_object *result, bool json)
{
	cli_print_fields(result, json, true);
}

/* An array of strings as one line, sep between them (a session's
 * command, a runtime's modes). */
static char *
cli_print_join(const msgpack_object *list, const char *sep)
{
	char *s = xstrdup(""), *word, *t;
	uint32_t i;

	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY)
		return s;
	for (i = 0; i < list->via.array.size; i++) {
		word = cli_print_text(&list->via.array.ptr[i]);
		t = xasprintf("%s%s%s", s, i > 0 ? sep : "", word);
		free(word);
		free(s);
		s = t;
	}
	return s;
}

void
cli_print_pty_list(const msgpack_object *result)
{
	const msgpack_object *list = proto_map_get(result, "sessions"), *s;
	struct cli_print_table t = {0};
	uint32_t i;

	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY ||
	    list->via.array.size == 0) {
		printf("no sessions\n");
		return;
	}
	cli_print_header(&t, 8, "ID", "PID", "SIZE", "VIEWERS", "BYTES",
	    "STATE", "EXIT", "COMMAND");
	for (i = 0; i < list->via.array.size; i++) {
		s = &list->via.array.ptr[i];
		cli_print_row(&t, cli_print_text(proto_map_get(s, "id")),
		    xasprintf("%" PRIu64, cli_print_u64(s, "pid")),
		    xasprintf("%" PRIu64 "x%" PRIu64, cli_print_u64(s, "cols"),
		        cli_print_u64(s, "rows")),
		    xasprintf("%" PRIu64, cli_print_u64(s, "viewers")),
		    xasprintf("%" PRIu64, cli_print_u64(s, "bytes")),
		    cli_print_text(proto_map_get(s, "state")),
		    cli_print_exit(proto_map_get(s, "exit")),
		    cli_print_join(proto_map_get(s, "command"), " "));
	}
	cli_print_flush(&t);
}

/* A runtime's state, and why when it is unavailable. */
static char *
cli_print_runtime_state(const msgpack_object *r)
{
	const msgpack_object *why = proto_map_get(r, "reason");
	char *state = cli_print_text(proto_map_get(r, "state")), *reason, *s;

	if (why == NULL || why->type != MSGPACK_OBJECT_STR)
		return state;
	reason = cli_print_text(proto_map_get(r, "reason"));
	s = xasprintf("%s: %s", state, reason);
	free(state);
	free(reason);
	return s;
}

/* What a runtime runs now: "MODE STATE pid N", or "-". */
static char *
cli_print_runtime_running(const msgpack_object *run)
{
	char *mode, *state, *s;

	if (run == NULL || run->type != MSGPACK_OBJECT_MAP)
		return xstrdup("-");
	mode = cli_print_text(proto_map_get(run, "mode"));
	state = cli_print_text(proto_map_get(run, "state"));
	s = xasprintf(
	    "%s %s pid %" PRIu64, mode, state, cli_print_u64(run, "pid"));
	free(mode);
	free(state);
	return s;
}

void
cli_print_runtime_list(const msgpack_object *result)
{
	const msgpack_object *list = proto_map_get(result, "runtimes"), *r;
	struct cli_print_table t = {0};
	uint32_t i;

	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY ||
	    list->via.array.size == 0) {
		printf("no runtimes\n");
		return;
	}
	cli_print_header(&t, 5, "NAME", "VERSION", "MODES", "RUNNING", "STATE");
	for (i = 0; i < list->via.array.size; i++) {
		r = &list->via.array.ptr[i];
		cli_print_row(&t, cli_print_text(proto_map_get(r, "name")),
		    cli_print_text(proto_map_get(r, "version")),
		    cli_print_join(proto_map_get(r, "modes"), ","),
		    cli_print_runtime_running(proto_map_get(r, "running")),
		    cli_print_runtime_state(r));
	}
	cli_print_flush(&t);
}
