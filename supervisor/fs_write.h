/* fs_write: what fs.c and fs_write.c share — making directories.
 * fs_op_write itself is declared in fs.h with the other ops. */
#ifndef BERTH_FS_WRITE_H
#define BERTH_FS_WRITE_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Makes directory path (mode exactly mode, not masked by the umask) and,
 * with parents, every missing directory above it (mode 0755); an existing
 * directory is then no error. No symlink on the way is followed unless
 * follow (ELOOP). Returns 0, or -1 with errno set and *at the path that
 * failed (a copy the caller frees).
 */
int fs_mkdirs(
    const char *path, mode_t mode, bool parents, bool follow, char **at);

#endif
