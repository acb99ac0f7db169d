/* fsopen: paths resolved without following symlinks (see fsopen.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fsopen.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* After an O_NOFOLLOW open of name failed with err: ELOOP if name is a
 * symlink (O_DIRECTORY and O_PATH say ENOTDIR, or open the link), else
 * err. */
static int
fsopen_why(int dirfd, const char *name, int err)
{
	struct stat st;

	if (err == ENOTDIR &&
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return ELOOP;
	return err;
}

/* Opens name in dirfd with flags and closes dirfd, keeping errno. */
static int
fsopen_last(int dirfd, const char *name, int flags, mode_t mode)
{
	int fd = openat(dirfd, name, flags, mode);
	int err = fd < 0 ? fsopen_why(dirfd, name, errno) : 0;

	close(dirfd);
	errno = err;
	return fd;
}

int
fsopen_walk(int dirfd, const char *path, int flags, mode_t mode)
{
	char comp[NAME_MAX + 1];
	const char *p = path;
	size_t len;
	int cur;

	if (*p == '/' || dirfd == AT_FDCWD)
		cur = open(
		    *p == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else
		cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	for (; cur >= 0;) {
		p += strspn(p, "/");
		len = strcspn(p, "/");
		if (len == 0) /* "/" itself, or a trailing slash */
			return fsopen_last(
			    cur, ".", flags & ~(O_CREAT | O_EXCL), mode);
		if (len > NAME_MAX) {
			close(cur);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		p += len;
		if (*p == '\0')
			return fsopen_last(cur, comp, flags | O_NOFOLLOW, mode);
		cur = fsopen_last(cur, comp,
		    O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC, 0);
	}
	return -1;
}

int
fsopen_open(const char *path, int flags, mode_t mode, bool follow)
{
	struct open_how how = {
	    .flags = (uint64_t)flags,
	    .mode = flags & (O_CREAT | __O_TMPFILE) ? mode : 0,
	    .resolve = RESOLVE_NO_SYMLINKS,
	};
	long fd;

	if (follow)
		return open(path, flags, mode);
	/* O_PATH | O_NOFOLLOW opens a last symlink itself; openat2 would
	 * refuse it, so such an open resolves the parent and then the name. */
	if ((flags & (O_PATH | O_NOFOLLOW)) == (O_PATH | O_NOFOLLOW)) {
		char name[NAME_MAX + 1];
		int dfd = fsopen_parent(path, false, name), err;

		if (dfd < 0)
			return -1;
		fd = openat(dfd, name, flags, mode);
		err = errno;
		close(dfd);
		errno = err;
		return (int)fd;
	}
	fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd < 0 && errno == ENOSYS)
		return fsopen_walk(AT_FDCWD, path, flags, mode);
	return (int)fd;
}

int
fsopen_parent(const char *path, bool follow, char name[NAME_MAX + 1])
{
	char dir[PATH_MAX];
	size_t len = strlen(path), cut;

	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len >= sizeof dir) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, len);
	dir[len] = '\0';
	if (strcmp(dir, "/") == 0) {
		strcpy(name, ".");
		return open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	cut = (size_t)(strrchr(dir, '/') - dir);
	if (len - cut - 1 > NAME_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(name, NAME_MAX + 1, "%s", dir + cut + 1);
	dir[cut == 0 ? 1 : cut] = '\0';
	return fsopen_open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, follow);
}
