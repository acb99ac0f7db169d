/* cgroup_parse: the kernel's cgroup lines (see cgroup_parse.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_parse.h"
#include "xmalloc.h"

bool
cgroup_parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (strncmp(s, "max", 3) == 0 &&
	    (s[3] == '\0' || s[3] == '\n' || s[3] == ' ')) {
		*v = UINT64_MAX;
		return true;
	}
	/* strtoull would take a sign and leading space. */
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno == 0 && (*end == '\0' || *end == '\n' || *end == ' ');
}

bool
cgroup_parse_key(const char *text, const char *key, uint64_t *v)
{
	size_t klen = strlen(key);
	const char *line = text, *next;

	for (; *line != '\0'; line = next) {
		next = strchr(line, '\n');
		next = next != NULL ? next + 1 : line + strlen(line);
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return cgroup_parse_u64(line + klen + 1, v);
	}
	return false;
}

bool
cgroup_parse_has(const char *list, char sep, const char *word)
{
	size_t len = strlen(word);
	const char *at = list;

	if (len == 0)
		return false;
	while ((at = strstr(at, word)) != NULL) {
		if ((at == list || at[-1] == sep) &&
		    (at[len] == sep || at[len] == '\n' || at[len] == '\0'))
			return true;
		at += len;
	}
	return false;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void
cg_unescape(char *s)
{
	char *out = s;

	for (; *s != '\0'; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			    (s[3] - '0'));
			s += 3;
		} else
			*out++ = *s;
	}
	*out = '\0';
}

/* Fields: id parent dev root point opts [optional...] - fstype source
 * superopts. */
bool
cgroup_parse_mount(char *line, const char *ctl, char **root, char **point)
{
	char *f[5], *sep = strstr(line, " - "), *save = NULL, *type, *opts;
	size_t i;

	if (sep == NULL || strlen(line) > CGROUP_PARSE_LINE_MAX)
		return false;
	*sep = '\0';
	type = strtok_r(sep + 3, " \n", &save);
	if (type == NULL || strtok_r(NULL, " \n", &save) == NULL ||
	    (opts = strtok_r(NULL, " \n", &save)) == NULL)
		return false;
	if (ctl == NULL ? strcmp(type, "cgroup2") != 0
	                : strcmp(type, "cgroup") != 0 ||
	            !cgroup_parse_has(opts, ',', ctl))
		return false;
	save = NULL;
	for (i = 0; i < 5; i++)
		if ((f[i] = strtok_r(i == 0 ? line : NULL, " ", &save)) == NULL)
			return false;
	cg_unescape(f[3]);
	cg_unescape(f[4]);
	if (f[3][0] != '/' || f[4][0] != '/')
		return false;
	*root = f[3];
	*point = f[4];
	return true;
}

bool
cgroup_parse_own(char *line, const char *ctl, char **path)
{
	char *list, *at;

	if (strlen(line) > CGROUP_PARSE_LINE_MAX)
		return false;
	line[strcspn(line, "\n")] = '\0';
	if ((list = strchr(line, ':')) == NULL ||
	    (at = strchr(list + 1, ':')) == NULL)
		return false;
	*list++ = '\0';
	*at++ = '\0';
	if (*at != '/')
		return false;
	if (ctl == NULL ? strcmp(line, "0") != 0 || *list != '\0'
	                : !cgroup_parse_has(list, ',', ctl))
		return false;
	*path = at;
	return true;
}

char *
cgroup_parse_dir(const char *root, const char *point, const char *path)
{
	size_t rlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
	const char *rest = path + rlen;

	if (strncmp(path, root, rlen) != 0 || (*rest != '/' && *rest != '\0'))
		return NULL;
	/* "/" adds nothing, so that a group at the root is "<point>/x". */
	return xasprintf("%s%s", point, strcmp(rest, "/") == 0 ? "" : rest);
}
