/* token: creates the token file when it is missing (see token.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "rand.h"
#include "token.h"
#include "xmalloc.h"

/* 32 random bytes, written as 64 hex digits. */
#define TOKEN_BYTES 32

static int
token_create(const char *path, char **cause)
{
	char tok[2 * TOKEN_BYTES + 2];
	int fd;
	ssize_t n;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		*cause = xasprintf(
		    "cannot create token file %s: %s", path, strerror(errno));
		return -1;
	}
	rand_hex(tok, TOKEN_BYTES);
	tok[2 * TOKEN_BYTES] = '\n';
	n = write(fd, tok, 2 * TOKEN_BYTES + 1);
	if (n != 2 * TOKEN_BYTES + 1 || fsync(fd) != 0) {
		*cause = xasprintf("cannot write token file %s: %s", path,
		    n < 0 ? strerror(errno) : "short write");
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	log_info("created token file %s", path);
	return 0;
}

int
token_ensure(const char *path, char **cause)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		if (errno != ENOENT) {
			*cause = xasprintf(
			    "token file %s: %s", path, strerror(errno));
			return -1;
		}
		return token_create(path, cause);
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		*cause =
		    xasprintf("token file %s is not a non-empty file", path);
		return -1;
	}
	if ((st.st_mode & 077) != 0)
		log_warn("token file %s is readable by others (mode %03o)",
		    path, st.st_mode & 0777);
	return 0;
}
