/* tokenfile: the token file's reader (see tokenfile.h). Owns nothing: the
 * token it returns is the caller's, and its buffer is wiped. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "tokenfile.h"
#include "xmalloc.h"

/* The file's first TOKENFILE_MAX + 1 bytes (one more than a token may
 * have, to tell a longer one). */
static int
tokenfile_load(int fd, const char *path, char *buf, size_t *len, char **cause)
{
	ssize_t n;

	*len = 0;
	while (*len <= TOKENFILE_MAX) {
		n = read(fd, buf + *len, TOKENFILE_MAX + 1 - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*cause = xasprintf(
			    "token file %s: %s", path, strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	return 0;
}

int
tokenfile_read_fd(
    int fd, const char *path, char **token, size_t *len, char **cause)
{
	char buf[TOKENFILE_MAX + 1];
	size_t n = 0, i;
	int r = -1;

	if (tokenfile_load(fd, path, buf, &n, cause) < 0)
		goto out;
	while (n > 0 &&
	    (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r' ||
	        buf[n - 1] == '\n'))
		n--;
	if (n == 0) {
		*cause = xasprintf("token file %s is empty", path);
		goto out;
	}
	if (n > TOKENFILE_MAX) {
		*cause = xasprintf(
		    "token file %s: longer than %d bytes", path, TOKENFILE_MAX);
		goto out;
	}
	for (i = 0; i < n; i++) {
		if ((unsigned char)buf[i] <= ' ' ||
		    (unsigned char)buf[i] >= 0x7f) {
			*cause =
			    xasprintf("token file %s: the token may hold "
			              "only printable ASCII without spaces",
			        path);
			goto out;
		}
	}
	*token = xstrndup(buf, n);
	*len = n;
	r = 0;
out:
	explicit_bzero(buf, sizeof buf);
	return r;
}

int
tokenfile_read(const char *path, char **token, size_t *len, char **cause)
{
	int fd, r;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		*cause = xasprintf("token file %s: %s", path, strerror(errno));
		return -1;
	}
	r = tokenfile_read_fd(fd, path, token, len, cause);
	close(fd);
	return r;
}
