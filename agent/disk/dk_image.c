/* dk_image: creating and growing an image (see dk_image.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dk_image.h"
#include "dk_loop.h"
#include "dk_run.h"
#include "dk_why.h"
#include "sha256.h"

/* Enough of dir's last component to tell images apart by eye. */
#define DK_IMAGE_TAIL_MAX 40

int
dk_image_path(const char *state, const char *dir, char out[DK_IMAGE_PATH_MAX])
{
	uint8_t digest[SHA256_LEN];
	char hex[SHA256_LEN * 2 + 1], tail[DK_IMAGE_TAIL_MAX + 1], disks[4096];
	const char *base = strrchr(dir, '/');
	struct sha256 h;
	size_t n = 0;

	sha256_init(&h);
	sha256_update(&h, dir, strlen(dir));
	sha256_final(&h, digest);
	sha256_hex(digest, hex);
	for (base = base != NULL ? base + 1 : dir;
	     *base != '\0' && n < DK_IMAGE_TAIL_MAX; base++)
		tail[n++] = (*base >= 'a' && *base <= 'z') ||
		        (*base >= 'A' && *base <= 'Z') ||
		        (*base >= '0' && *base <= '9') || *base == '-' ||
		        *base == '_'
		    ? *base
		    : '_';
	tail[n] = '\0';
	if ((size_t)snprintf(disks, sizeof disks, "%s/disks", state) >=
	        sizeof disks ||
	    (size_t)snprintf(out, DK_IMAGE_PATH_MAX, "%s/%s-%.16s.img", disks,
	        n > 0 ? tail : "root", hex) >= DK_IMAGE_PATH_MAX)
		return dk_why("the state directory's path is too long");
	if (mkdir(disks, 0700) != 0 && errno != EEXIST)
		return dk_why("%s: %s", disks, strerror(errno));
	return 0;
}

int
dk_image_create(const char *path, uint64_t bytes, uid_t uid, gid_t gid)
{
	char ext[128];
	const char *const mkfs[] = {"/usr/sbin/mkfs.ext4", "-q", "-F", "-m",
	    "0", "-E", ext, path, NULL};
	int fd;

	snprintf(ext, sizeof ext,
	    "root_owner=%u:%u,lazy_itable_init=1,lazy_journal_init=1",
	    (unsigned)uid, (unsigned)gid);
	if ((fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		return dk_why("%s: %s", path, strerror(errno));
	if (ftruncate(fd, (off_t)bytes) != 0) {
		dk_why("cannot size %s: %s", path, strerror(errno));
		goto fail;
	}
	if (dk_run("mkfs.ext4", mkfs, 0) != 0)
		goto fail;
	return fd;
fail:
	close(fd);
	unlink(path);
	return -1;
}

int
dk_image_grow(int fd, int loopfd, uint64_t had, uint64_t bytes)
{
	if (ftruncate(fd, (off_t)bytes) != 0)
		return dk_why("cannot grow the image: %s", strerror(errno));
	if (dk_loop_grow(loopfd) != 0) {
		dk_image_ungrow(fd, loopfd, had);
		return -1;
	}
	return 0;
}

void
dk_image_ungrow(int fd, int loopfd, uint64_t had)
{
	if (ftruncate(fd, (off_t)had) == 0)
		dk_loop_grow(loopfd);
}

int
dk_image_resize(const char *loop, bool mounted)
{
	const char *const check[] = {
	    "/usr/sbin/e2fsck", "-f", "-p", loop, NULL};
	const char *const resize[] = {"/usr/sbin/resize2fs", loop, NULL};

	if (!mounted && dk_run("e2fsck", check, 1) != 0)
		return -1;
	return dk_run("resize2fs", resize, 0);
}
