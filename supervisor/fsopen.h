/* fsopen: how every file op resolves a request's path. berthd acts as
 * root for a client inside a sandbox whose users are hostile, so a path
 * is resolved with no symlink followed in any component unless the
 * request asks for it (follow_symlinks): a planted link cannot turn an op
 * on the user's file into one on berthd's. A symlink met is ELOOP, which
 * fserr tells as the "symlink" error. Owns nothing; every fd returned is
 * the caller's. */
#ifndef BERTH_FSOPEN_H
#define BERTH_FSOPEN_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

/*
 * Opens absolute path as open(2) would with flags and mode, but with
 * follow false fails with ELOOP at the first symlink in any component
 * (an O_PATH open of a symlink as the last component opens the link
 * itself, as O_PATH | O_NOFOLLOW does). Uses openat2 RESOLVE_NO_SYMLINKS,
 * else fsopen_walk. Returns the fd, or -1 with errno set.
 */
int fsopen_open(const char *path, int flags, mode_t mode, bool follow);
/*
 * The fallback of fsopen_open for kernels without openat2: walks path
 * (absolute, or relative to dirfd) one component at a time with
 * O_PATH | O_NOFOLLOW | O_DIRECTORY, then opens the last with flags |
 * O_NOFOLLOW. Returns the fd, or -1 with errno set (ELOOP at a symlink).
 */
int fsopen_walk(int dirfd, const char *path, int flags, mode_t mode);
/*
 * Opens the directory that holds path's last component (O_PATH, resolved
 * as fsopen_open does) and copies that component into name: the op then
 * acts on name in the directory (lstat, unlink, rename, mkdir), so a
 * symlink there is the link itself. "/" is the root with name ".".
 * Returns the fd, or -1 with errno set.
 */
int fsopen_parent(const char *path, bool follow, char name[NAME_MAX + 1]);

#endif
