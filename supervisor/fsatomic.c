/* fsatomic: whole-file replacement, synced. */
#include "fsatomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* Writes all of buf to fd, a short write or EINTR resumed. */
static int
fsatomic_write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int
fsatomic_replace(int dirfd, const char *name, const void *buf, size_t len)
{
	char tmp[256];
	int fd, e;

	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", name) >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = openat(dirfd, tmp,
	    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (fsatomic_write_all(fd, buf, len) < 0 || fsync(fd) < 0) {
		e = errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		errno = e;
		return -1;
	}
	if (close(fd) < 0 || renameat(dirfd, tmp, dirfd, name) < 0) {
		e = errno;
		unlinkat(dirfd, tmp, 0);
		errno = e;
		return -1;
	}
	return fsync(dirfd);
}
