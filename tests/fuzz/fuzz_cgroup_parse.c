/* fuzz_cgroup_parse: libFuzzer target for the kernel's cgroup lines
 * berthd reads (mountinfo, /proc/self/cgroup, flat keyed control files).
 * Whatever the bytes: a match points inside the line, a root and a mount
 * point are absolute, a directory starts with its mount point. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_inside(const char *p, const char *line, size_t size)
{
	if (p < line || p > line + size)
		abort();
}

static void
fuzz_mount(const char *data, size_t size, const char *ctl)
{
	char *line = malloc(size + 1), *root, *point, *dir;

	memcpy(line, data, size);
	line[size] = '\0';
	if (cgroup_parse_mount(line, ctl, &root, &point)) {
		check_inside(root, line, size);
		check_inside(point, line, size);
		if (root[0] != '/' || point[0] != '/')
			abort();
		dir = cgroup_parse_dir(root, point, "/a/b");
		if (dir != NULL && strncmp(dir, point, strlen(point)) != 0)
			abort();
		free(dir);
	}
	free(line);
}

static void
fuzz_own(const char *data, size_t size, const char *ctl)
{
	char *line = malloc(size + 1), *path, *dir;

	memcpy(line, data, size);
	line[size] = '\0';
	if (cgroup_parse_own(line, ctl, &path)) {
		check_inside(path, line, size);
		if (path[0] != '/')
			abort();
		dir = cgroup_parse_dir("/", "/sys/fs/cgroup", path);
		if (dir == NULL || strncmp(dir, "/sys/fs/cgroup", 14) != 0)
			abort();
		free(dir);
	}
	free(line);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	uint64_t v;

	memcpy(text, data, size);
	text[size] = '\0';
	fuzz_mount(text, size, NULL);
	fuzz_mount(text, size, "cpu");
	fuzz_own(text, size, NULL);
	fuzz_own(text, size, "memory");
	cgroup_parse_key(text, "oom_kill", &v);
	cgroup_parse_u64(text, &v);
	cgroup_parse_has(text, ',', "pids");
	free(text);
	return 0;
}
