/* wsbranch: branch names berth hands git (see wsbranch.h). */
#include <string.h>

#include "wsbranch.h"

static bool
wsbranch_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
	    c == '/' || c == '+';
}

/* One component, c[0..n) (between slashes). */
static bool
wsbranch_component(const char *c, size_t n)
{
	return n > 0 && c[0] != '.' &&
	    !(n >= 5 && memcmp(c + n - 5, ".lock", 5) == 0);
}

bool
wsbranch_ok(const char *s, size_t n)
{
	const char *c = s, *slash, *end = s + n;
	size_t i;

	if (n == 0 || n > WSBRANCH_MAX || s[0] == '-' || s[n - 1] == '.' ||
	    (n == 4 && memcmp(s, "HEAD", 4) == 0))
		return false;
	for (i = 0; i < n; i++)
		if (!wsbranch_char(s[i]) ||
		    (i > 0 && s[i] == '.' && s[i - 1] == '.'))
			return false;
	for (;;) {
		slash = memchr(c, '/', (size_t)(end - c));
		if (!wsbranch_component(c, (size_t)((slash ? slash : end) - c)))
			return false;
		if (slash == NULL)
			return true;
		c = slash + 1;
	}
}
