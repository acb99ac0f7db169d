/* packcheck: whether what berth packed is one whole message (see
 * packcheck.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mpcheck.h"
#include "packcheck.h"

int
packcheck_whole(const void *buf, size_t len, const char **why)
{
	static const struct mpcheck_limits lim = {
	    MPCHECK_DEPTH_CEILING, SIZE_MAX};

	return mpcheck_object(buf, len, &lim, why);
}

#ifdef BERTH_CHECKED
/* The first bytes of buf, printable as they are and \xNN otherwise: the
 * envelope's head (type, id, op or kind) reads plainly in them. */
static void
packcheck_head(const uint8_t *buf, size_t len, char *out, size_t outlen)
{
	size_t i, n = 0;

	for (i = 0; i < len && i < 64 && n + 5 < outlen; i++)
		n += (size_t)snprintf(out + n, outlen - n,
		    buf[i] >= 0x20 && buf[i] < 0x7f && buf[i] != '\\'
		        ? "%c"
		        : "\\x%02x",
		    buf[i]);
	out[n] = '\0';
}

void
packcheck_sent(const void *buf, size_t len, const char *serving)
{
	const char *why;
	char head[300];

	if (packcheck_whole(buf, len, &why) == 0)
		return;
	packcheck_head(buf, len, head, sizeof head);
	log_warn("packed a bad message%s%s: %s; a map or array count is "
	         "wrong; it begins %s",
	    serving != NULL ? " while serving " : "",
	    serving != NULL ? serving : "", why, head);
	abort();
}
#endif
