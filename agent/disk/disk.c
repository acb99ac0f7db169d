/* berth-disk: bounds a runtime's workspace on disk, run as root by berthd
 * (disk.h) and reporting one line on stdout:
 *
 *	ok loop          dir is a loop-mounted ext4 image of the size
 *	ok quota         dir's tree is under a project quota of the size
 *	error: WHY       nothing was changed (WHY begins "conflict: " when
 *	                 dir is bounded to more than the size asked)
 *
 *	berth-disk --dir DIR --bytes N --uid U --gid G --state STATE
 *
 * A project quota where DIR's filesystem keeps them; else an image in
 * "STATE/disks/" (dk_image.h), with DIR's content copied in first, then
 * mounted on DIR (nosuid, nodev). What lay in DIR stays under the mount,
 * untouched: nothing is lost whatever fails. An image that is there
 * already, left by an earlier bound whose mount has gone, holds the
 * workspace as it was last and is mounted again as it is. DIR bounded by
 * its image already: the same size is nothing to do, a larger one grows
 * it online, a smaller one is refused.
 *
 * DIR is opened once, refusing every symbolic link on its way (its
 * parents may be the runtime's user's), and reached through that fd
 * from then on: a link put in its place cannot turn the mount elsewhere. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dk_args.h"
#include "dk_image.h"
#include "dk_loop.h"
#include "dk_quota.h"
#include "dk_tree.h"
#include "dk_why.h"

#define DK_MOUNT_FLAGS (MS_NOSUID | MS_NODEV)

/* What one run works on. Every fd is closed, and a half-made image and
 * its staging mount undone, by dk_undo. */
struct dk {
	struct dk_args a;
	int parentfd, dirfd; /* O_PATH of DIR's parent and of DIR */
	const char *name;    /* DIR's last component */
	char dirpath[64];    /* "/proc/self/fd/N": DIR through dirfd */
	char mntpath[DK_ARGS_PATH_MAX + 32]; /* DIR through parentfd */
	char image[DK_IMAGE_PATH_MAX], stage[DK_IMAGE_PATH_MAX + 8];
	char loop[DK_LOOP_PATH_MAX];
	int imgfd, loopfd;
	bool made, staged; /* the image is new; it is mounted at stage */
};

/* DIR itself, in its parent, no link followed. */
static int
dk_open_name(struct dk *d)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};

	d->dirfd =
	    (int)syscall(SYS_openat2, d->parentfd, d->name, &how, sizeof how);
	if (d->dirfd < 0)
		return dk_why("%s: %s", d->a.dir,
		    errno == ELOOP ? "a symbolic link" : strerror(errno));
	snprintf(d->dirpath, sizeof d->dirpath, "/proc/self/fd/%d", d->dirfd);
	return 0;
}

static int
dk_open_dir(struct dk *d)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	char parent[DK_ARGS_PATH_MAX + 1];
	const char *slash = strrchr(d->a.dir, '/');

	snprintf(parent, sizeof parent, "%.*s",
	    slash == d->a.dir ? 1 : (int)(slash - d->a.dir), d->a.dir);
	d->name = slash + 1;
	d->parentfd =
	    (int)syscall(SYS_openat2, AT_FDCWD, parent, &how, sizeof how);
	if (d->parentfd < 0)
		return dk_why("%s: %s", parent,
		    errno == ELOOP ? "a symbolic link is on its way"
		                   : strerror(errno));
	snprintf(d->mntpath, sizeof d->mntpath, "/proc/self/fd/%d/%s",
	    d->parentfd, d->name);
	return dk_open_name(d);
}

static void
dk_undo(struct dk *d)
{
	if (d->staged) {
		umount2(d->stage, MNT_DETACH);
		rmdir(d->stage);
	}
	if (d->loopfd >= 0)
		close(d->loopfd);
	if (d->imgfd >= 0)
		close(d->imgfd);
	if (d->dirfd >= 0)
		close(d->dirfd);
	if (d->parentfd >= 0)
		close(d->parentfd);
	if (d->made)
		unlink(d->image);
}

/* Whether DIR is the root of a mount of this image. */
static bool
dk_mounted_here(struct dk *d, const struct stat *img)
{
	struct statx sx;

	if (statx(d->dirfd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) != 0 ||
	    !(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	    !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return false;
	return dk_loop_backs(makedev(sx.stx_dev_major, sx.stx_dev_minor), img,
	    &d->loopfd, d->loop);
}

static const char *
dk_mib(uint64_t bytes, char *buf, size_t len)
{
	snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes >> 20));
	return buf;
}

/* The workspace is the user's: a directory of fsck's in it would make it
 * neither empty nor a clone to git. Made again by a check, it goes again. */
static void
dk_no_lost_found(const char *root)
{
	char lf[DK_IMAGE_PATH_MAX + 32];
	struct stat st;

	snprintf(lf, sizeof lf, "%s/lost+found", root);
	if (lstat(lf, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0)
		rmdir(lf);
}

static int
dk_mount(struct dk *d, const char *on)
{
	if (mount(d->loop, on, "ext4", DK_MOUNT_FLAGS, NULL) != 0)
		return dk_why("cannot mount %s on %s: %s", d->loop,
		    on == d->dirpath ? d->a.dir : on, strerror(errno));
	return 0;
}

/* Online growth needs CAP_SYS_RESOURCE, which a container may lack:
 * then DIR is unmounted, grown and mounted again, if nothing uses it. */
static int
dk_grow_offline(struct dk *d, uint64_t had)
{
	int rc;

	dk_why_clear();
	close(d->dirfd);
	d->dirfd = -1;
	if (umount2(d->mntpath, UMOUNT_NOFOLLOW) != 0) {
		rc = errno;
		dk_image_ungrow(d->imgfd, d->loopfd, had);
		return dk_why("cannot grow %s online here, nor offline while "
		              "it is in use: %s",
		    d->a.dir, strerror(rc));
	}
	if ((rc = dk_image_resize(d->loop, false)) != 0)
		dk_image_ungrow(d->imgfd, d->loopfd, had);
	if (dk_open_name(d) != 0 || dk_mount(d, d->dirpath) != 0)
		return -1;
	dk_no_lost_found(d->mntpath);
	return rc;
}

/* DIR is this image's mount already: the same size, or grown. */
static int
dk_resize(struct dk *d, const struct stat *img)
{
	uint64_t had = (uint64_t)img->st_size;
	char was[32], want[32];

	if (had == d->a.bytes)
		return 0;
	if (had > d->a.bytes)
		return dk_why("conflict: %s is bounded to %s; it cannot shrink "
		              "to %s",
		    d->a.dir, dk_mib(had, was, sizeof was),
		    dk_mib(d->a.bytes, want, sizeof want));
	if ((d->imgfd = open(d->image, O_RDWR | O_CLOEXEC)) < 0)
		return dk_why("%s: %s", d->image, strerror(errno));
	if (dk_image_grow(d->imgfd, d->loopfd, had, d->a.bytes) != 0)
		return -1;
	if (dk_image_resize(d->loop, true) == 0)
		return 0;
	return dk_grow_offline(d, had);
}

/* The new image mounted at stage, DIR's content copied in, if it fits. */
static int
dk_fill(struct dk *d, uint64_t used)
{
	struct statfs sf;
	struct stat st;

	snprintf(d->stage, sizeof d->stage, "%.*s.mnt",
	    (int)(strlen(d->image) - 4), d->image);
	if (mkdir(d->stage, 0700) != 0 && errno != EEXIST)
		return dk_why("%s: %s", d->stage, strerror(errno));
	if (dk_mount(d, d->stage) != 0) {
		rmdir(d->stage);
		return -1;
	}
	d->staged = true;
	dk_no_lost_found(d->stage);
	if (statfs(d->stage, &sf) != 0)
		return dk_why("%s: %s", d->stage, strerror(errno));
	if (used > (uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize)
		return dk_why("the workspace holds %llu bytes, more than "
		              "disk_bytes leaves free in its filesystem (%llu)",
		    (unsigned long long)used,
		    (unsigned long long)sf.f_bavail * sf.f_bsize);
	if (dk_tree_copy(d->dirfd, d->stage) != 0)
		return -1;
	/* The workspace is its runtime's user's, whoever made the
	 * directory; its mode stays as it was. */
	if (stat(d->stage, &st) != 0 ||
	    chown(d->stage, d->a.uid, d->a.gid) != 0 ||
	    chmod(d->stage, st.st_mode & 07777) != 0)
		return dk_why("cannot give the workspace to %u:%u: %s",
		    (unsigned)d->a.uid, (unsigned)d->a.gid, strerror(errno));
	return 0;
}

/* DIR bounded by an image of its own: made and filled, or the one an
 * earlier bound left. */
static int
dk_loop_new(struct dk *d)
{
	struct stat img;
	uint64_t used = 0;
	bool left = stat(d->image, &img) == 0;

	if (left && (uint64_t)img.st_size > d->a.bytes)
		return dk_why("conflict: %s, an earlier bound of %s, is larger "
		              "than %llu bytes",
		    d->image, d->a.dir, (unsigned long long)d->a.bytes);
	if (!left) {
		if (dk_tree_usage(d->dirfd, &used) != 0)
			return -1;
		if (used > d->a.bytes)
			return dk_why("the workspace holds %llu bytes, more "
			              "than disk_bytes (%llu)",
			    (unsigned long long)used,
			    (unsigned long long)d->a.bytes);
		d->imgfd =
		    dk_image_create(d->image, d->a.bytes, d->a.uid, d->a.gid);
		if (d->imgfd < 0)
			return -1;
		d->made = true;
	} else if ((d->imgfd = open(d->image, O_RDWR | O_CLOEXEC)) < 0)
		return dk_why("%s: %s", d->image, strerror(errno));
	if ((d->loopfd = dk_loop_attach(d->imgfd, d->image, d->loop)) < 0)
		return -1;
	if (d->made && dk_fill(d, used) != 0)
		return -1;
	if (left && (uint64_t)img.st_size < d->a.bytes) {
		if (dk_image_grow(d->imgfd, d->loopfd, (uint64_t)img.st_size,
		        d->a.bytes) != 0)
			return -1;
		if (dk_image_resize(d->loop, false) != 0) {
			dk_image_ungrow(
			    d->imgfd, d->loopfd, (uint64_t)img.st_size);
			return -1;
		}
	}
	if (dk_mount(d, d->dirpath) != 0)
		return -1;
	d->made = false;
	dk_no_lost_found(d->mntpath);
	return 0;
}

static int
dk_bound(struct dk *d, const char **how)
{
	struct stat img;

	if (dk_open_dir(d) != 0 ||
	    dk_image_path(d->a.state, d->a.dir, d->image) != 0)
		return -1;
	*how = "loop";
	if (stat(d->image, &img) == 0 && dk_mounted_here(d, &img))
		return dk_resize(d, &img);
	if (dk_quota_usable(d->dirfd)) {
		*how = "quota";
		return dk_quota_bound(d->dirfd, d->a.bytes) < 0 ? -1 : 0;
	}
	return dk_loop_new(d);
}

int
main(int argc, char **argv)
{
	struct dk d = {.parentfd = -1, .dirfd = -1, .imgfd = -1, .loopfd = -1};
	const char *how = NULL;
	int rc;

	umask(077);
	rc = dk_args_parse(argc, argv, &d.a);
	if (rc == 0)
		rc = dk_bound(&d, &how);
	/* The staging mount goes whether this worked or not; the image and
	 * its loop device stay while DIR's mount holds them. */
	dk_undo(&d);
	if (rc != 0) {
		printf("error: %s\n", dk_why_get());
		return 1;
	}
	printf("ok %s\n", how);
	return 0;
}
