/* tokenfile: reads the bearer token from its file, the one way every berth
 * program does (the gateway checking it, the CLI and berth-probe sending
 * it): trailing whitespace stripped, nothing in it an Authorization header
 * could not carry, at most TOKENFILE_MAX bytes. */
#ifndef BERTH_TOKENFILE_H
#define BERTH_TOKENFILE_H

#include <stddef.h>

#define TOKENFILE_MAX 4096

/* The token in path: 0 with *token (the caller wipes it with
 * explicit_bzero, then frees it) and *len, or -1 with *cause, which names
 * the file and never what is in it. */
int tokenfile_read(const char *path, char **token, size_t *len, char **cause);
/* The same from fd, read to its end (and not closed); path names it in
 * *cause. */
int tokenfile_read_fd(
    int fd, const char *path, char **token, size_t *len, char **cause);

#endif
