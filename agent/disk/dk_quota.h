/* dk_quota: a workspace bounded by a project quota, where its filesystem
 * keeps them (ext4 or xfs mounted with prjquota): no image, no mount, the
 * blocks counted where they are.
 *
 * The directory and everything in it get one project id, inherited by
 * what is created there (FS_XFLAG_PROJINHERIT); the id is the directory's
 * inode number (below 2^31), so one workspace's id is stable and another
 * directory's is its own. */
#ifndef BERTH_DK_QUOTA_H
#define BERTH_DK_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

/* Whether dirfd's filesystem keeps project quotas (it answers for them). */
bool dk_quota_usable(int dirfd);
/* Bounds the tree under dirfd to bytes: 0; 1 if it was bounded to bytes
 * already; -1 with dk_why (a smaller bound is refused: "conflict: ..."). */
int dk_quota_bound(int dirfd, uint64_t bytes);

#endif
