/* wsurl: which repository URLs workspace.prepare takes.
 *
 * Only https://HOST[:PORT]/PATH: no other scheme (git's http, ssh, git,
 * file or ext:: transports), no userinfo (a password or token in a URL
 * ends up in the clone's config and in logs: it travels as the request's
 * credential instead), no query or fragment. Pure: no I/O. */
#ifndef BERTH_WSURL_H
#define BERTH_WSURL_H

#include <stddef.h>

#define WSURL_MAX 2048

/* NULL if url[0..len) is one berth clones from, else why not: a static
 * message that names the part that is wrong and quotes nothing of it. */
const char *wsurl_check(const char *url, size_t len);

#endif
