/* dk_quota: project quotas (see dk_quota.h).
 *
 * No filesystem of the machines berth is tested on keeps project quotas,
 * so this path is kept to the few calls it needs; the loop image is the
 * one exercised. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/quota.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dk_quota.h"
#include "dk_tree.h"
#include "dk_why.h"

#define DK_XFS_MAGIC 0x58465342
/* quotactl's block limits count in units of this many bytes. */
#define DK_QUOTA_BLOCK 1024

static int
dk_quotactl(int dirfd, int cmd, uint32_t id, void *addr)
{
	/* QCMD's shift overflows an int for the Q_ commands (0x80000N). */
	unsigned qcmd =
	    ((unsigned)cmd << SUBCMDSHIFT) | (PRJQUOTA & SUBCMDMASK);

	return (int)syscall(SYS_quotactl_fd, dirfd, qcmd, id, addr);
}

bool
dk_quota_usable(int dirfd)
{
	struct statfs sf;
	struct if_dqinfo info;
	int fd;
	bool ok;

	/* quotactl_fd wants an fd of the filesystem, not an O_PATH one. */
	if ((fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return false;
	ok = fstatfs(fd, &sf) == 0 &&
	    (sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == DK_XFS_MAGIC) &&
	    dk_quotactl(fd, Q_GETINFO, 0, &info) == 0;
	close(fd);
	return ok;
}

/* nftw's callback takes no argument of ours. */
static uint32_t dk_quota_id;

static int
dk_quota_mark(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	struct fsxattr fx;
	int fd;

	(void)f;
	/* A link or a special file has no project of its own to set. */
	if (flag == FTW_SL || flag == FTW_NS ||
	    !(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)))
		return 0;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return 0;
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fx) == 0) {
		fx.fsx_projid = dk_quota_id;
		if (S_ISDIR(st->st_mode))
			fx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
		ioctl(fd, FS_IOC_FSSETXATTR, &fx);
	}
	close(fd);
	return 0;
}

int
dk_quota_bound(int dirfd, uint64_t bytes)
{
	struct stat st;
	struct if_dqblk q;
	char top[64];
	uint64_t used, limit = bytes / DK_QUOTA_BLOCK;
	int fd;

	if ((fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return dk_why("cannot open the workspace: %s", strerror(errno));
	}
	dk_quota_id = (uint32_t)(st.st_ino & 0x7fffffff);
	if (dk_quota_id == 0)
		dk_quota_id = 1;
	memset(&q, 0, sizeof q);
	if (dk_quotactl(fd, Q_GETQUOTA, dk_quota_id, &q) == 0 &&
	    q.dqb_bhardlimit >= limit) {
		close(fd);
		if (q.dqb_bhardlimit == limit)
			return 1;
		return dk_why("conflict: the workspace is bounded to "
		              "%llu bytes; it cannot shrink to %llu",
		    (unsigned long long)q.dqb_bhardlimit * DK_QUOTA_BLOCK,
		    (unsigned long long)bytes);
	}
	if (dk_tree_usage(dirfd, &used) != 0) {
		close(fd);
		return -1;
	}
	if (used > bytes) {
		close(fd);
		return dk_why("the workspace holds %llu bytes, more than "
		              "disk_bytes (%llu)",
		    (unsigned long long)used, (unsigned long long)bytes);
	}
	snprintf(top, sizeof top, "/proc/self/fd/%d/.", fd);
	nftw(top, dk_quota_mark, 16, FTW_PHYS | FTW_MOUNT);
	memset(&q, 0, sizeof q);
	q.dqb_bhardlimit = limit;
	q.dqb_bsoftlimit = limit;
	q.dqb_valid = QIF_BLIMITS;
	if (dk_quotactl(fd, Q_SETQUOTA, dk_quota_id, &q) != 0) {
		close(fd);
		return dk_why(
		    "cannot set the project quota: %s", strerror(errno));
	}
	close(fd);
	return 0;
}
