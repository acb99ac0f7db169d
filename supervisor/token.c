/* token: the credentials and their check (see token.h). Owns both
 * credentials; they are wiped at shutdown. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "rand.h"
#include "token.h"
#include "tokenfile.h"
#include "xmalloc.h"

/* 32 random bytes, written as 64 hex digits. */
#define TOKEN_BYTES 32
#define TOKEN_HEX (2 * TOKEN_BYTES)

static char *token_value;
static size_t token_len;
static char token_probe[TOKEN_HEX + 1];

static const char *const token_doors[TOKEN_NDOORS] = {
    [TOKEN_DOOR_V1] = "v1",
    [TOKEN_DOOR_NOVNC] = "novnc",
    [TOKEN_DOOR_CDP] = "cdp",
    [TOKEN_DOOR_CDP_RELAY] = "cdp-relay",
    [TOKEN_DOOR_PTY] = "pty",
    [TOKEN_DOOR_PREVIEW] = "preview",
    [TOKEN_DOOR_RUNTIME] = "runtime",
};

static int
token_create(const char *path, char **cause)
{
	char tok[TOKEN_HEX + 2];
	int fd;
	ssize_t n;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		*cause = xasprintf(
		    "cannot create token file %s: %s", path, strerror(errno));
		return -1;
	}
	rand_hex(tok, TOKEN_BYTES);
	tok[TOKEN_HEX] = '\n';
	n = write(fd, tok, TOKEN_HEX + 1);
	explicit_bzero(tok, sizeof tok);
	if (n != TOKEN_HEX + 1 || fsync(fd) != 0) {
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

static int
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

int
token_init(const char *path, char **cause)
{
	if (token_ensure(path, cause) < 0 ||
	    tokenfile_read(path, &token_value, &token_len, cause) < 0)
		return -1;
	rand_hex(token_probe, TOKEN_BYTES);
	return 0;
}

void
token_shutdown(void)
{
	if (token_value != NULL)
		explicit_bzero(token_value, token_len);
	free(token_value);
	token_value = NULL;
	explicit_bzero(token_probe, sizeof token_probe);
}

int
token_door_find(const char *name)
{
	int i;

	for (i = 0; i < TOKEN_NDOORS; i++)
		if (strcmp(name, token_doors[i]) == 0)
			return i;
	return -1;
}

/* Whether presented[0..plen) is secret: every presented byte is compared
 * (against the secret, repeated) whatever the lengths, and the length
 * difference is folded in last, so no early exit tells how much of a
 * guess was right. */
int
token_same(const char *presented, size_t plen, const char *secret, size_t slen)
{
	volatile unsigned char diff = 0;
	size_t i;

	for (i = 0; i < plen; i++)
		diff |= (unsigned char)(presented[i] ^ secret[i % slen]);
	return (diff | (unsigned char)((plen ^ slen) != 0)) == 0;
}

int
token_check(enum token_door door, const char *cred, size_t len)
{
	int tok, probe;

	if (token_value == NULL || len == 0)
		return 0;
	/* Both comparisons always run: which one matched takes no
	 * different time. */
	tok = token_same(cred, len, token_value, token_len);
	probe = token_same(cred, len, token_probe, TOKEN_HEX);
	switch (door) {
	case TOKEN_DOOR_NOVNC:
	case TOKEN_DOOR_CDP:
	case TOKEN_DOOR_CDP_RELAY: return tok | probe;
	case TOKEN_DOOR_V1:
	case TOKEN_DOOR_PTY: return tok;
	default: return 0;
	}
}

int
token_probe_fd(void)
{
	int pfd[2];

	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -1;
	/* 64 bytes fit in any pipe's buffer: the write never blocks. */
	if (write(pfd[1], token_probe, TOKEN_HEX) != TOKEN_HEX) {
		close(pfd[0]);
		close(pfd[1]);
		errno = EIO;
		return -1;
	}
	close(pfd[1]);
	return pfd[0];
}
