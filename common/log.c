/* log: one-line diagnostics on stderr, prefixed with the program's name. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

static const char *log_prog = "berth";
static int log_debug_on;

void
log_init(const char *prog, int debug)
{
	log_prog = prog;
	log_debug_on = debug;
}

static void __attribute__((format(printf, 2, 0)))
log_vwrite(const char *level, const char *fmt, va_list ap)
{
	struct timespec ts;
	struct tm tm;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	/* One fprintf per part would interleave with other writers of the
	 * same stderr; format the whole line first. */
	char line[2048];
	int n = snprintf(line, sizeof line, "%s.%03ldZ %s[%s]: ", when,
	    ts.tv_nsec / 1000000, log_prog, level);
	if (n < 0 || (size_t)n >= sizeof line)
		n = 0;
	vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	fprintf(stderr, "%s\n", line);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_debug_on)
		return;
	va_start(ap, fmt);
	log_vwrite("debug", fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite("info", fmt, ap);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite("warn", fmt, ap);
	va_end(ap);
}

void
log_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite("fatal", fmt, ap);
	va_end(ap);
	exit(1);
}
