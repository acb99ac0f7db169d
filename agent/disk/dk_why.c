/* dk_why: the reason berth-disk failed (see dk_why.h). */
#include <stdarg.h>
#include <stdio.h>

#include "dk_why.h"

static char dk_why_text[DK_WHY_MAX + 1];

int
dk_why(const char *fmt, ...)
{
	va_list ap;

	if (dk_why_text[0] != '\0')
		return -1;
	va_start(ap, fmt);
	vsnprintf(dk_why_text, sizeof dk_why_text, fmt, ap);
	va_end(ap);
	return -1;
}

void
dk_why_clear(void)
{
	dk_why_text[0] = '\0';
}

const char *
dk_why_get(void)
{
	return dk_why_text[0] != '\0' ? dk_why_text
	                              : "failed for no known reason";
}
