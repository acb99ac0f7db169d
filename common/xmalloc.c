/* xmalloc: allocation that never returns NULL (aborts with a message). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xmalloc.h"

void *
xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p == NULL)
		log_fatal("out of memory (%zu bytes)", size);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		log_fatal("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *
xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);

	if (q == NULL)
		log_fatal("out of memory (%zu bytes)", size);
	return q;
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	if (size != 0 && n > (size_t)-1 / size)
		log_fatal("allocation overflow (%zu x %zu bytes)", n, size);
	return xrealloc(p, n * size);
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		log_fatal("out of memory formatting a string");
	va_end(ap);
	return s;
}
