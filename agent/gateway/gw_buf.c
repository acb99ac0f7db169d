/* gw_buf: a relay's waiting bytes (see gw_buf.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "gw_buf.h"
#include "gw_sock.h"
#include "log.h"
#include "xmalloc.h"

void
gw_buf_add(struct gw_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (b->off != 0 && b->off + b->len + n > b->cap) {
		memmove(b->data, b->data + b->off, b->len);
		b->off = 0;
	}
	if (b->len + n > b->cap) {
		b->cap = b->len + n > 2 * b->cap ? b->len + n : 2 * b->cap;
		b->data = xrealloc(b->data, b->cap);
	}
	memcpy(b->data + b->off + b->len, p, n);
	b->len += n;
}

void
gw_buf_take(struct gw_buf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
}

void
gw_buf_puts(struct gw_buf *b, const char *s)
{
	gw_buf_add(b, s, strlen(s));
}

char *
gw_buf_string(struct gw_buf *b, size_t *len)
{
	char *s;

	gw_buf_add(b, "", 1);
	if (b->off != 0)
		memmove(b->data, b->data + b->off, b->len);
	s = (char *)b->data;
	*len = b->len - 1;
	memset(b, 0, sizeof *b);
	return s;
}

void
gw_buf_free(struct gw_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof *b);
}

const char *
gw_buf_at(const struct gw_buf *b)
{
	return (const char *)b->data + b->off;
}

int
gw_buf_send(struct lws *wsi, struct gw_buf *b)
{
	int fd = lws_get_socket_fd(wsi);
	size_t burst = 0;
	ssize_t n;

	while (b->len != 0 && burst < GW_SOCK_WRITE_BURST) {
		n = send(
		    fd, b->data + b->off, b->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n < 0) {
			log_debug("%s: send: %s", __func__, strerror(errno));
			return -1;
		}
		gw_buf_take(b, (size_t)n);
		burst += (size_t)n;
	}
	if (b->len != 0)
		lws_callback_on_writable(wsi);
	return 0;
}
