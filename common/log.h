/* log: one-line diagnostics on stderr, prefixed with the program's name.
 * berthd's stderr is the container's log, so every line must stand alone. */
#ifndef BERTH_LOG_H
#define BERTH_LOG_H

#define LOG_PRINTF(a, b) __attribute__((format(printf, a, b)))

void log_init(const char *prog, int debug);
void log_debug(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_info(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_warn(const char *fmt, ...) LOG_PRINTF(1, 2);
/* An impossible state or a failure at start-up: log and exit(1). */
_Noreturn void log_fatal(const char *fmt, ...) LOG_PRINTF(1, 2);

#endif
