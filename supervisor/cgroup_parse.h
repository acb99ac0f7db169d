/* cgroup_parse: the lines of the kernel's files cgroup.c reads to find
 * the hierarchies and what a group holds: /proc/self/mountinfo,
 * /proc/self/cgroup, and the flat keyed control files (cpu.stat,
 * memory.events, memory.oom_control, cgroup.events).
 *
 * Every function takes any bytes: a line of the wrong shape is no match,
 * a number that is not one is refused, nothing is read past the NUL.
 * Ownership: results point into the caller's line, or are the caller's
 * to free where said. */
#ifndef BERTH_CGROUP_PARSE_H
#define BERTH_CGROUP_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* The longest line of mountinfo or /proc/self/cgroup taken; a longer one
 * is no match. */
#define CGROUP_PARSE_LINE_MAX 8192

/* A decimal number at the start of s, ended by NUL, a space or a newline
 * ("max" is UINT64_MAX). No sign, no leading space, no overflow. */
bool cgroup_parse_u64(const char *s, uint64_t *v);
/* The value N of the line "key N" in text, lines ended by newlines. */
bool cgroup_parse_key(const char *text, const char *key, uint64_t *v);
/* Whether list, words separated by sep (mount options by commas,
 * cgroup.controllers by spaces), holds word. */
bool cgroup_parse_has(const char *list, char sep, const char *word);
/* Whether a mountinfo line mounts the hierarchy sought: ctl NULL for
 * cgroup2, else a v1 cgroup with ctl among its super options. If so,
 * *root and *point are its root and mount point, unescaped, in line
 * (which is modified in any case). */
bool cgroup_parse_mount(char *line, const char *ctl, char **root, char **point);
/* Whether a /proc/self/cgroup line is the hierarchy's ("0::PATH" for ctl
 * NULL, else "N:LIST:PATH" with ctl in LIST); if so *path is PATH, in
 * line (which is modified in any case). */
bool cgroup_parse_own(char *line, const char *ctl, char **path);
/* The directory of a cgroup path in a hierarchy mounted at point from
 * root: NULL if path is not below root. Caller frees. */
char *cgroup_parse_dir(const char *root, const char *point, const char *path);

#endif
