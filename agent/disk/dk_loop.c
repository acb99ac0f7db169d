/* dk_loop: attaching an image to a loop device (see dk_loop.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dk_loop.h"
#include "dk_why.h"

#define DK_LOOP_MAJOR 7
/* Another attach may take the device LOOP_CTL_GET_FREE named between the
 * two calls: then ask again, a bounded number of times. */
#define DK_LOOP_TRIES 32

/* LOOP_CONFIGURE (Linux 5.8) sets the file and the flags at once; older
 * kernels need the two steps. */
static int
dk_loop_configure(int loopfd, int imgfd, const char *image)
{
	struct loop_config cfg;
	struct loop_info64 info;

	memset(&cfg, 0, sizeof cfg);
	cfg.fd = (unsigned)imgfd;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	snprintf((char *)cfg.info.lo_file_name, LO_NAME_SIZE, "%s", image);
	if (ioctl(loopfd, LOOP_CONFIGURE, &cfg) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOTTY)
		return -1;
	if (ioctl(loopfd, LOOP_SET_FD, imgfd) != 0)
		return -1;
	memset(&info, 0, sizeof info);
	info.lo_flags = LO_FLAGS_AUTOCLEAR;
	snprintf((char *)info.lo_file_name, LO_NAME_SIZE, "%s", image);
	if (ioctl(loopfd, LOOP_SET_STATUS64, &info) != 0) {
		int e = errno;
		ioctl(loopfd, LOOP_CLR_FD, 0);
		errno = e;
		return -1;
	}
	return 0;
}

int
dk_loop_attach(int imgfd, const char *image, char path[DK_LOOP_PATH_MAX])
{
	int ctl, n, fd, tries;

	if ((ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) < 0)
		return dk_why(
		    "no loop devices: /dev/loop-control: %s", strerror(errno));
	for (tries = 0; tries < DK_LOOP_TRIES; tries++) {
		if ((n = ioctl(ctl, LOOP_CTL_GET_FREE)) < 0) {
			close(ctl);
			return dk_why(
			    "no free loop device: %s", strerror(errno));
		}
		snprintf(path, DK_LOOP_PATH_MAX, "/dev/loop%d", n);
		if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
			close(ctl);
			return dk_why("%s: %s", path, strerror(errno));
		}
		if (dk_loop_configure(fd, imgfd, image) == 0) {
			close(ctl);
			return fd;
		}
		close(fd);
		if (errno != EBUSY) {
			close(ctl);
			return dk_why("cannot attach %s to %s: %s", image, path,
			    strerror(errno));
		}
	}
	close(ctl);
	return dk_why("no free loop device after %d tries", DK_LOOP_TRIES);
}

bool
dk_loop_backs(
    dev_t dev, const struct stat *st, int *fd, char path[DK_LOOP_PATH_MAX])
{
	struct loop_info64 info;
	struct stat ls;

	if (major(dev) != DK_LOOP_MAJOR)
		return false;
	/* Without partitions a loop device's minor is its number; the
	 * device opened is checked to be dev all the same. */
	snprintf(path, DK_LOOP_PATH_MAX, "/dev/loop%u", minor(dev));
	if ((*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	if (fstat(*fd, &ls) != 0 || !S_ISBLK(ls.st_mode) || ls.st_rdev != dev ||
	    ioctl(*fd, LOOP_GET_STATUS64, &info) != 0 ||
	    info.lo_device != st->st_dev || info.lo_inode != st->st_ino) {
		close(*fd);
		*fd = -1;
		return false;
	}
	return true;
}

int
dk_loop_grow(int loopfd)
{
	if (ioctl(loopfd, LOOP_SET_CAPACITY, 0) != 0)
		return dk_why(
		    "cannot grow the loop device: %s", strerror(errno));
	return 0;
}
