/* xmalloc: allocation that never returns NULL. Running out of memory is
 * not a state berth programs try to limp through; callers never check. */
#ifndef BERTH_XMALLOC_H
#define BERTH_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
