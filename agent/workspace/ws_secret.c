/* ws_secret: the credential of one run, and tamed reports (see
 * ws_secret.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ws_secret.h"

int
ws_secret_read(struct ws_secret *s, int fd)
{
	ssize_t r;

	while (s->len < WS_SECRET_MAX) {
		r = read(fd, s->buf + s->len, WS_SECRET_MAX - s->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		s->len += (size_t)r;
	}
	close(fd);
	if (s->len == 0 || s->buf[s->len - 1] != '\n') {
		ws_secret_wipe(s);
		return -1;
	}
	return 0;
}

/* The part of the credential at in[0..n) (a username or password of at
 * least 4 bytes, shorter ones would match everywhere): its length, or 0.
 * A tail of in that begins a part counts too. */
static size_t
ws_secret_at(const struct ws_secret *s, const char *in, size_t n)
{
	const char *part = s->buf, *end = s->buf + s->len, *nl;
	size_t plen;

	for (; part < end; part = nl + 1) {
		if ((nl = memchr(part, '\n', (size_t)(end - part))) == NULL)
			break;
		plen = (size_t)(nl - part);
		if (plen >= 4 && plen <= n && memcmp(in, part, plen) == 0)
			return plen;
		if (plen >= 4 && n >= 4 && n < plen && memcmp(in, part, n) == 0)
			return n;
	}
	return 0;
}

size_t
ws_secret_tame(
    const struct ws_secret *s, const char *in, size_t n, char *out, size_t max)
{
	static const char mark[] = "[redacted]";
	size_t o = 0, i = 0, k;

	while (i < n && o < max) {
		if ((k = ws_secret_at(s, in + i, n - i)) > 0) {
			if (max - o < sizeof mark - 1)
				break;
			memcpy(out + o, mark, sizeof mark - 1);
			o += sizeof mark - 1;
			i += k;
			continue;
		}
		out[o++] =
		    (unsigned char)in[i] < 0x20 || in[i] == 0x7f ? '?' : in[i];
		i++;
	}
	out[o] = '\0';
	return o;
}

void
ws_secret_failed(const struct ws_secret *s, const char *reason)
{
	char t[WS_SECRET_REASON_MAX + 1];

	if (ws_secret_tame(
	        s, reason, strlen(reason), t, WS_SECRET_REASON_MAX) == 0)
		snprintf(t, sizeof t, "git failed");
	printf("failed %s\n", t);
}

void
ws_secret_wipe(struct ws_secret *s)
{
	explicit_bzero(s->buf, sizeof s->buf);
	s->len = 0;
}
