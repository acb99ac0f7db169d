/* dk_args: berth-disk's command line (see dk_args.h). */
#include <stdbool.h>
#include <string.h>

#include "dk_args.h"
#include "dk_why.h"

/* A decimal of 1 to 20 digits without sign or leading zero, at most max. */
static bool
dk_args_num(const char *s, uint64_t max, uint64_t *v)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
		return false;
	*v = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' ||
		    *v > (max - (uint64_t)(s[i] - '0')) / 10)
			return false;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
	}
	return true;
}

static bool
dk_args_path(const char *s)
{
	const char *c = s, *end;
	size_t n = strlen(s);

	if (n < 2 || n > DK_ARGS_PATH_MAX || s[0] != '/' || s[n - 1] == '/')
		return false;
	/* A path is quoted in the report, a line without control bytes. */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	while (*c == '/') {
		c++;
		end = strchrnul(c, '/');
		if (end == c || (end - c == 1 && c[0] == '.') ||
		    (end - c == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = end;
	}
	return true;
}

static int
dk_args_value(struct dk_args *a, const char *key, const char *val)
{
	uint64_t v;

	if (strcmp(key, "--dir") == 0 && dk_args_path(val))
		a->dir = val;
	else if (strcmp(key, "--state") == 0 && dk_args_path(val))
		a->state = val;
	else if (strcmp(key, "--bytes") == 0 &&
	    dk_args_num(val, DK_ARGS_BYTES_MAX, &v) && v >= DK_ARGS_BYTES_MIN)
		a->bytes = v;
	else if (strcmp(key, "--uid") == 0 &&
	    dk_args_num(val, UINT32_MAX - 1, &v))
		a->uid = (uid_t)v;
	else if (strcmp(key, "--gid") == 0 &&
	    dk_args_num(val, UINT32_MAX - 1, &v))
		a->gid = (gid_t)v;
	else
		return -1;
	return 0;
}

int
dk_args_parse(int argc, char **argv, struct dk_args *a)
{
	unsigned seen = 0;
	int i;

	memset(a, 0, sizeof *a);
	a->uid = (uid_t)-1;
	a->gid = (gid_t)-1;
	for (i = 1; i + 1 < argc; i += 2)
		if (dk_args_value(a, argv[i], argv[i + 1]) != 0)
			return dk_why("bad argument %s (usage: berth-disk "
			              "--dir DIR --bytes N --uid U --gid G "
			              "--state STATE)",
			    argv[i]);
		else
			seen++;
	if (i != argc || seen != 5 || a->dir == NULL || a->state == NULL ||
	    a->bytes == 0 || a->uid == (uid_t)-1 || a->gid == (gid_t)-1)
		return dk_why("usage: berth-disk --dir DIR --bytes N --uid U "
		              "--gid G --state STATE (each once)");
	return 0;
}
