/* dk_loop: the loop device an image is attached to.
 *
 * Attached with LO_FLAGS_AUTOCLEAR: the kernel detaches it when the last
 * user (the fd returned here, or a mount of it) is gone, so that a mount
 * that ends, or a mount namespace that dies, leaves no device behind.
 * The caller therefore keeps the fd open until the device is mounted. */
#ifndef BERTH_DK_LOOP_H
#define BERTH_DK_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define DK_LOOP_PATH_MAX 32

/* Attaches the image open as imgfd (named image, for the record) to a
 * free loop device: its fd (O_RDWR, close-on-exec) and path, or -1 with
 * dk_why. */
int dk_loop_attach(int imgfd, const char *image, char path[DK_LOOP_PATH_MAX]);
/* Whether dev is a loop device backed by the file st describes; if so
 * its fd and path (the caller closes the fd). */
bool dk_loop_backs(
    dev_t dev, const struct stat *st, int *fd, char path[DK_LOOP_PATH_MAX]);
/* Makes the device see its file's new size. 0, or -1 with dk_why. */
int dk_loop_grow(int loopfd);

#endif
