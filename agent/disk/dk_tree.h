/* dk_tree: a workspace's existing content — how much it takes, and its
 * copy into the filesystem that will bound it.
 *
 * The tree is reached through an fd of its directory ("/proc/PID/fd/N"),
 * never through its path again: the path was checked once, when the fd
 * was opened. Symbolic links are copied as links, never followed; other
 * filesystems mounted inside are not crossed. */
#ifndef BERTH_DK_TREE_H
#define BERTH_DK_TREE_H

#include <stdint.h>

/* The bytes the tree under dirfd takes on its filesystem (allocated
 * blocks, the directories' own included). 0, or -1 with dk_why. */
int dk_tree_usage(int dirfd, uint64_t *bytes);
/* Copies the tree under dirfd into the directory to (owners, modes,
 * times, links and the top directory's own attributes kept). 0, or -1
 * with dk_why. */
int dk_tree_copy(int dirfd, const char *to);

#endif
