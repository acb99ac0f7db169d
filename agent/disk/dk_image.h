/* dk_image: a workspace's filesystem image, in "<state>/disks/".
 *
 * The state directory is root's (0700): the runtime's user can neither
 * reach the image nor grow it. The image is sparse: it takes on the
 * outer filesystem only what the workspace holds, and never more than
 * its size. Its size bounds the filesystem, not what the user can store:
 * ext4 keeps part of it for its own metadata (about 6 MiB of 32). */
#ifndef BERTH_DK_IMAGE_H
#define BERTH_DK_IMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DK_IMAGE_PATH_MAX 4096

/* The image's path for dir ("<state>/disks/<dir's tail>-<hash>.img"),
 * creating "<state>/disks" if missing. 0, or -1 with dk_why. */
int dk_image_path(
    const char *state, const char *dir, char out[DK_IMAGE_PATH_MAX]);
/* A new image of bytes at path, ext4 with no root reserve and its root
 * owned by uid:gid: its fd (O_RDWR), or -1 with dk_why and no file left. */
int dk_image_create(const char *path, uint64_t bytes, uid_t uid, gid_t gid);
/* Grows the image open as fd, attached at loopfd, from its size had to
 * bytes (the filesystem in it is left as it was). 0, or -1 with dk_why
 * and the image's size as it was. */
int dk_image_grow(int fd, int loopfd, uint64_t had, uint64_t bytes);
/* The image's size back to had, after a grow whose filesystem did not. */
void dk_image_ungrow(int fd, int loopfd, uint64_t had);
/* Grows the filesystem on the loop device to the device's size: online
 * if it is mounted, else after a check. 0, or -1 with dk_why. */
int dk_image_resize(const char *loop, bool mounted);

#endif
