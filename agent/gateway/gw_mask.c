/* gw_mask: RFC 6455 section 5.1 for the gateway's WebSocket servers (see
 * gw_mask.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gw_frames.h"
#include "gw_mask.h"
#include "log.h"
#include "xmalloc.h"

/* One followed connection, in a table indexed by its descriptor. */
struct gw_mask_conn {
	struct lws *wsi; /* NULL: the descriptor is not followed */
	struct gw_frames frames;
};

static struct gw_mask_conn *gw_mask_conns;
static size_t gw_mask_nconns;
static size_t gw_mask_live; /* entries with a wsi */

static struct gw_mask_conn *
gw_mask_find(int fd)
{
	if (fd < 0 || (size_t)fd >= gw_mask_nconns ||
	    gw_mask_conns[fd].wsi == NULL)
		return NULL;
	return &gw_mask_conns[fd];
}

static void
gw_mask_watch(struct lws *wsi)
{
	int fd = lws_get_socket_fd(wsi);
	size_t n;

	if (fd < 0)
		return;
	if ((size_t)fd >= gw_mask_nconns) {
		n = (size_t)fd + 64;
		gw_mask_conns =
		    xreallocarray(gw_mask_conns, n, sizeof *gw_mask_conns);
		memset(gw_mask_conns + gw_mask_nconns, 0,
		    (n - gw_mask_nconns) * sizeof *gw_mask_conns);
		gw_mask_nconns = n;
	}
	if (gw_mask_conns[fd].wsi == NULL)
		gw_mask_live++;
	gw_mask_conns[fd] = (struct gw_mask_conn){.wsi = wsi};
}

static void
gw_mask_clear(struct gw_mask_conn *m)
{
	m->wsi = NULL;
	gw_mask_live--;
}

/* A followed connection that goes. At CLOSED, which lws gives every
 * established WebSocket before it closes the descriptor, the descriptor
 * finds it; if lws had let go of it already, the pointer does. At
 * WSI_DESTROY, which every connection gets (each /healthz too), only the
 * descriptor is tried: that stays O(1). */
static void
gw_mask_forget(struct lws *wsi, int scan)
{
	struct gw_mask_conn *m;
	size_t i;

	if (gw_mask_live == 0)
		return;
	m = gw_mask_find(lws_get_socket_fd(wsi));
	if (m != NULL && m->wsi == wsi) {
		gw_mask_clear(m);
		return;
	}
	for (i = 0; scan && i < gw_mask_nconns; i++)
		if (gw_mask_conns[i].wsi == wsi) {
			gw_mask_clear(&gw_mask_conns[i]);
			return;
		}
}

/* libwebsockets reads its sockets with recv(); this definition is the one
 * its calls bind to. Descriptors not followed read as they would. */
ssize_t
recv(int fd, void *buf, size_t len, int flags)
{
	struct gw_mask_conn *m = gw_mask_find(fd);
	ssize_t n;
	size_t keep;

	if (m != NULL && m->frames.at == GW_FRAMES_REFUSED) {
		errno = EAGAIN;
		return -1;
	}
	n = syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
	if (n <= 0 || m == NULL || (flags & MSG_PEEK))
		return n;
	keep = gw_frames_follow(&m->frames, buf, (size_t)n);
	if (m->frames.at != GW_FRAMES_REFUSED)
		return n;
	log_info("a WebSocket client sent an unmasked frame: closing with "
	         "1002");
	lws_callback_on_writable(m->wsi);
	if (keep > 0)
		return (ssize_t)keep;
	errno = EAGAIN;
	return -1;
}

int
gw_mask_filter(struct lws *wsi, enum lws_callback_reasons reason)
{
	struct gw_mask_conn *m;

	switch (reason) {
	case LWS_CALLBACK_ESTABLISHED: gw_mask_watch(wsi); return 0;
	case LWS_CALLBACK_CLOSED: gw_mask_forget(wsi, 1); return 0;
	case LWS_CALLBACK_WSI_DESTROY: gw_mask_forget(wsi, 0); return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		m = gw_mask_find(lws_get_socket_fd(wsi));
		if (m == NULL || m->wsi != wsi ||
		    m->frames.at != GW_FRAMES_REFUSED)
			return 0;
		lws_close_reason(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR,
		    (unsigned char *)"unmasked frame", 14);
		return -1;
	default: return 0;
	}
}
