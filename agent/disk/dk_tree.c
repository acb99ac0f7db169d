/* dk_tree: a workspace's existing content (see dk_tree.h). */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dk_run.h"
#include "dk_tree.h"
#include "dk_why.h"

/* nftw's callback takes no argument of ours. */
static uint64_t dk_tree_bytes;

static int
dk_tree_add(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path;
	(void)f;
	if (flag != FTW_NS)
		dk_tree_bytes += (uint64_t)st->st_blocks * 512;
	return 0;
}

/* "/proc/PID/fd/N/.": a path to dirfd that a child process can use too;
 * the "/." makes even a walk that follows no link enter it. */
static void
dk_tree_fd_path(int dirfd, char *out, size_t len)
{
	snprintf(out, len, "/proc/%d/fd/%d/.", (int)getpid(), dirfd);
}

int
dk_tree_usage(int dirfd, uint64_t *bytes)
{
	char path[64];

	dk_tree_fd_path(dirfd, path, sizeof path);
	dk_tree_bytes = 0;
	if (nftw(path, dk_tree_add, 16, FTW_PHYS | FTW_MOUNT) != 0)
		return dk_why(
		    "cannot measure the workspace: %s", strerror(errno));
	*bytes = dk_tree_bytes;
	return 0;
}

int
dk_tree_copy(int dirfd, const char *to)
{
	char from[64];
	const char *const cp[] = {
	    "/usr/bin/cp", "-a", "--one-file-system", from, to, NULL};

	dk_tree_fd_path(dirfd, from, sizeof from);
	return dk_run("copying the workspace", cp, 0);
}
