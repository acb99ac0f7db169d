/* gw_novnc: noVNC's page and its relay to the RFB server. Owns every
 * struct gw_novnc: one per WebSocket on /novnc/websockify, with the TCP
 * connection it opened, the bytes waiting for either side, and a
 * view-only relay's filter. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gateway.h"
#include "gw_grant.h"
#include "gw_http.h"
#include "gw_novnc.h"
#include "gw_queue.h"
#include "gw_rfbview.h"
#include "gw_sock.h"
#include "log.h"
#include "xmalloc.h"

/* How long a closing browser may take to accept its close frame. */
#define GW_NOVNC_CLOSE_GRACE_S 5
/* RFC 6455 leaves 123 bytes of a close frame for the reason. */
#define GW_NOVNC_REASON_MAX 123

/*
 * One noVNC connection: the browser's WebSocket and the TCP connection
 * to the RFB server. Allocated by gw_novnc_open; each wsi clears its
 * pointer when lws closes it, and whichever goes last frees the struct.
 */
struct gw_novnc {
	enum gw_http_relay relay;  /* first: see gw_http.h */
	struct lws *ws;            /* the browser's WebSocket, until closed */
	struct lws *vnc;           /* the RFB server's socket, until closed */
	struct gw_queue to_vnc;    /* the browser's bytes for the server */
	size_t to_vnc_off;         /* bytes of the first already sent */
	struct gw_queue to_ws;     /* the server's bytes, a message each */
	struct gw_rfbview *view;   /* view-only: the filter; else NULL */
	struct gw_grant_hold hold; /* the grant it was opened for, if any */
	lws_usec_t started;        /* when the connect began */
	int connected;             /* the TCP connect completed */
	int ws_paused;             /* the browser is not read */
	int vnc_paused;            /* the server is not read */
	/* A pending close of the WebSocket: code, reason, and whether it
	 * goes at once (else after what waits for the browser). */
	int close_code;
	int close_now;
	char close_reason[GW_NOVNC_REASON_MAX + 1];
	char peer[GATEWAY_PEER_MAX];
};

/* The page's types, by file name extension. noVNC loads its code as ES
 * modules, which browsers run only if served as JavaScript. */
static const struct {
	const char *ext;
	const char *type;
} gw_novnc_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".mp3", "audio/mpeg"},
    {".oga", "audio/ogg"},
    {".ttf", "font/ttf"},
    {".woff", "font/woff"},
    {".woff2", "font/woff2"},
    {".md", "text/plain; charset=utf-8"},
    {".txt", "text/plain; charset=utf-8"},
};

static const char *
gw_novnc_type(const char *path)
{
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
	size_t i;

	if (dot != NULL && (slash == NULL || dot > slash)) {
		for (i = 0;
		     i < sizeof gw_novnc_types / sizeof gw_novnc_types[0]; i++)
			if (strcmp(dot, gw_novnc_types[i].ext) == 0)
				return gw_novnc_types[i].type;
	}
	return "application/octet-stream";
}

/* Reads the whole of a regular file of at most GW_NOVNC_FILE_MAX bytes.
 * -1 if it is none. */
static int
gw_novnc_read(const char *path, char **body, size_t *len)
{
	struct stat st;
	size_t have = 0;
	ssize_t n = 0;
	char *buf;
	int fd;

	/* Nonblocking, so that a FIFO cannot hold the open up. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uintmax_t)st.st_size > GW_NOVNC_FILE_MAX) {
		close(fd);
		return -1;
	}
	/* One byte more than the size, to see a file that grew. */
	buf = xmalloc((size_t)st.st_size + 1);
	while (have <= (size_t)st.st_size) {
		n = read(fd, buf + have, (size_t)st.st_size + 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	if (n < 0 || have > (size_t)st.st_size) {
		free(buf);
		return -1;
	}
	*body = buf;
	*len = have;
	return 0;
}

/*
 * The path is checked twice: by its text (no "..", not absolute), and by
 * where it resolves, symbolic links followed, which must be inside the
 * directory's own resolved path. Files are read whole and sent like any
 * other reply rather than with lws_serve_http_file, which in lws 4.1
 * answers a request pipelined after a file with 403.
 */
int
gw_novnc_file(const char *rel, char **body, size_t *len, const char **type)
{
	char dir[PATH_MAX], path[PATH_MAX], *full;
	size_t dlen;

	if (*rel == '\0' || *rel == '/' || strstr(rel, "..") != NULL ||
	    strlen(rel) >= PATH_MAX)
		return -1;
	if (realpath(gateway.novnc_dir, dir) == NULL) {
		log_info(
		    "noVNC's page: %s: %s", gateway.novnc_dir, strerror(errno));
		return -1;
	}
	full = xasprintf("%s/%s", dir, rel);
	if (realpath(full, path) == NULL) {
		free(full);
		return -1;
	}
	free(full);
	dlen = strlen(dir);
	if (dlen > 1 && (strncmp(path, dir, dlen) != 0 || path[dlen] != '/'))
		return -1;
	if (gw_novnc_read(path, body, len) < 0)
		return -1;
	*type = gw_novnc_type(path);
	return 0;
}

static void gw_novnc_close(struct gw_novnc *n, int code, int now,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Arranges for the WebSocket to be closed with code and reason: at once
 * if now is set, else once what waits for the browser is sent. */
static void
gw_novnc_close(struct gw_novnc *n, int code, int now, const char *fmt, ...)
{
	va_list ap;

	if (n->ws == NULL || n->close_code != 0)
		return;
	n->close_code = code;
	n->close_now = now;
	va_start(ap, fmt);
	vsnprintf(n->close_reason, sizeof n->close_reason, fmt, ap);
	va_end(ap);
	log_info("noVNC client %s: closing: %s", n->peer, n->close_reason);
	if (!n->ws_paused) {
		lws_rx_flow_control(n->ws, 0);
		n->ws_paused = 1;
	}
	lws_callback_on_writable(n->ws);
	/* A browser that never reads never becomes writable. */
	lws_set_timeout(n->ws, PENDING_TIMEOUT_USER_OK, GW_NOVNC_CLOSE_GRACE_S);
}

/* A nonblocking connect to the Unix socket at path. -1 with *cause if
 * it failed at once (a full backlog too: the browser is told so). */
static int
gw_novnc_connect_unix(const char *path, char **cause)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*cause = xasprintf("socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
		*cause = xstrdup(strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* A nonblocking connect to gateway.vnc, adopted into lws as a raw
 * socket. -1 with *cause if it failed at once. */
static int
gw_novnc_connect(struct gw_novnc *n, char **cause)
{
	struct lws *wsi;
	int fd;

	fd = gateway.vnc.path != NULL
	    ? gw_novnc_connect_unix(gateway.vnc.path, cause)
	    : gw_sock_connect_tcp(&gateway.vnc, cause);
	if (fd < 0)
		return -1;
	wsi = gw_sock_adopt(gateway.vhost, fd, "berth-vnc", n, cause);
	if (wsi == NULL)
		return -1;
	n->vnc = wsi;
	n->started = lws_now_usecs();
	lws_set_timeout(
	    wsi, PENDING_TIMEOUT_USER_OK, GW_NOVNC_CONNECT_TIMEOUT_S);
	/* Not read until connected: a read would take the connect's error
	 * (and lws would just close), which the browser is to be told. */
	lws_rx_flow_control(wsi, 0);
	lws_callback_on_writable(wsi);
	return 0;
}

/* The grant ended: nothing more of the browser's reaches the server,
 * whose connection goes, and the browser is told why at once. */
static void
gw_novnc_cut(struct gw_grant_hold *h, const char *why)
{
	struct gw_novnc *n = lws_container_of(h, struct gw_novnc, hold);

	gw_queue_clear(&n->to_vnc);
	n->to_vnc_off = 0;
	if (n->vnc != NULL)
		lws_set_timeout(
		    n->vnc, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
	gw_novnc_close(
	    n, LWS_CLOSE_STATUS_POLICY_VIOLATION, 1, "grant %s", why);
}

void
gw_novnc_open(struct lws *wsi, const struct gw_check_answer *who)
{
	struct gw_novnc *n;
	char *cause;

	n = xcalloc(1, sizeof *n);
	n->relay = GW_HTTP_RELAY_NOVNC;
	n->ws = wsi;
	/* Only a grant that says control may send input. */
	if (who->grant[0] != '\0' && !who->control) {
		n->view = xmalloc(sizeof *n->view);
		gw_rfbview_init(n->view);
	}
	/* Flow control bounds both queues, one read past the high mark. */
	gw_queue_init(&n->to_vnc, SIZE_MAX);
	gw_queue_init(&n->to_ws, SIZE_MAX);
	gateway_peer(wsi, n->peer, sizeof n->peer);
	lws_set_opaque_user_data(wsi, n);
	n->hold.cut = gw_novnc_cut;
	if (who->grant[0] != '\0' &&
	    gw_grant_admit(&n->hold, wsi, who->grant, who->expires_at_ms) < 0) {
		gw_novnc_close(
		    n, LWS_CLOSE_STATUS_POLICY_VIOLATION, 1, "grant expired");
		return;
	}
	if (gw_novnc_connect(n, &cause) < 0) {
		gw_novnc_close(n, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, 1,
		    "VNC server %s unreachable: %s",
		    gateway_addr_name(&gateway.vnc), cause);
		free(cause);
		return;
	}
	if (who->grant[0] == '\0')
		log_info("noVNC client %s connected", n->peer);
	else
		log_info("noVNC client %s connected, grant %s%s", n->peer,
		    who->grant, n->view != NULL ? ", view only" : "");
}

static void
gw_novnc_free(struct gw_novnc *n)
{
	gw_queue_clear(&n->to_vnc);
	gw_queue_clear(&n->to_ws);
	free(n->view);
	free(n);
}

/* A view-only relay's browser bytes: what of them may reach the server,
 * queued. -1 if the relay is being closed, at what may not pass. */
static int
gw_novnc_view(struct gw_novnc *n, const void *in, size_t len)
{
	struct gw_queue_msg *m = gw_queue_msg_new(len);

	m->len = gw_rfbview_from_client(n->view, in, len, gw_queue_payload(m));
	if (gw_rfbview_error(n->view) != NULL) {
		free(m);
		gw_novnc_close(n, LWS_CLOSE_STATUS_POLICY_VIOLATION, 1,
		    "view only: %s", gw_rfbview_error(n->view));
		return -1;
	}
	if (m->len == 0)
		free(m);
	else
		gw_queue_push(&n->to_vnc, m);
	return 0;
}

/* The browser's bytes, whatever the message boundaries: RFB is a byte
 * stream, and noVNC sends it as binary messages. */
static int
gw_novnc_ws_receive(struct gw_novnc *n, const void *in, size_t len)
{
	if (n->close_code != 0)
		return 0;
	if (!lws_frame_is_binary(n->ws)) {
		log_info("noVNC client %s sent a text message", n->peer);
		lws_close_reason(n->ws, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE,
		    (unsigned char *)"binary messages only", 20);
		return -1;
	}
	if (len + lws_remaining_packet_payload(n->ws) > GW_NOVNC_FRAME_MAX) {
		log_info("noVNC client %s: a frame over %u bytes", n->peer,
		    GW_NOVNC_FRAME_MAX);
		lws_close_reason(n->ws, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
		    (unsigned char *)"frame too large", 15);
		return -1;
	}
	if (n->vnc == NULL || len == 0)
		return 0;
	if (n->view != NULL) {
		if (gw_novnc_view(n, in, len) < 0)
			return 0;
	} else
		gw_queue_push_copy(&n->to_vnc, in, len, 0);
	if (n->connected)
		lws_callback_on_writable(n->vnc);
	if (n->to_vnc.bytes > GW_NOVNC_HIGH_WATER && !n->ws_paused) {
		lws_rx_flow_control(n->ws, 0);
		n->ws_paused = 1;
	}
	return 0;
}

/* One message to the browser per writeable callback, as lws wants. */
static int
gw_novnc_ws_writeable(struct gw_novnc *n)
{
	struct gw_queue_msg *m;

	if (n->close_code != 0 && (n->close_now || n->to_ws.count == 0)) {
		lws_close_reason(n->ws, (enum lws_close_status)n->close_code,
		    (unsigned char *)n->close_reason, strlen(n->close_reason));
		return -1;
	}
	m = gw_queue_first(&n->to_ws);
	if (m != NULL) {
		if (lws_write(n->ws, gw_queue_payload(m), m->len,
		        LWS_WRITE_BINARY) < (int)m->len)
			return -1;
		gw_queue_pop(&n->to_ws);
	}
	if (n->to_ws.count != 0 || n->close_code != 0)
		lws_callback_on_writable(n->ws);
	if (n->vnc_paused && n->vnc != NULL &&
	    n->to_ws.bytes <= GW_NOVNC_LOW_WATER) {
		lws_rx_flow_control(n->vnc, 1);
		n->vnc_paused = 0;
	}
	return 0;
}

/* The browser went: the server's connection goes too. */
static void
gw_novnc_ws_closed(struct gw_novnc *n, struct lws *wsi)
{
	lws_set_opaque_user_data(wsi, NULL);
	n->ws = NULL;
	gw_grant_release(&n->hold);
	log_info("noVNC client %s disconnected", n->peer);
	if (n->vnc == NULL) {
		gw_novnc_free(n);
		return;
	}
	gw_queue_clear(&n->to_ws);
	/* At exit lws is closing everything itself. */
	if (!gateway.stopping)
		lws_set_timeout(
		    n->vnc, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

int
gw_novnc_ws_cb(
    struct lws *wsi, enum lws_callback_reasons reason, void *in, size_t len)
{
	struct gw_novnc *n = lws_get_opaque_user_data(wsi);

	switch (reason) {
	case LWS_CALLBACK_RECEIVE: return gw_novnc_ws_receive(n, in, len);
	case LWS_CALLBACK_SERVER_WRITEABLE: return gw_novnc_ws_writeable(n);
	case LWS_CALLBACK_CLOSED: gw_novnc_ws_closed(n, wsi); return 0;
	default: return 0;
	}
}

/* The connect completed, one way or the other: SO_ERROR says which. */
static int
gw_novnc_connected(struct gw_novnc *n)
{
	int err = 0;
	socklen_t sl = sizeof err;

	if (getsockopt(lws_get_socket_fd(n->vnc), SOL_SOCKET, SO_ERROR, &err,
	        &sl) != 0)
		err = errno;
	if (err != 0) {
		gw_novnc_close(n, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, 1,
		    "VNC server %s unreachable: %s",
		    gateway_addr_name(&gateway.vnc), strerror(err));
		return -1;
	}
	n->connected = 1;
	lws_set_timeout(n->vnc, NO_PENDING_TIMEOUT, 0);
	lws_rx_flow_control(n->vnc, 1);
	return 0;
}

/*
 * Writes what the browser sent while the socket takes it, with send() on
 * the descriptor, as gw_upstream does: lws would keep a partial write and
 * stop reading the server until it is gone, and a server blocked on
 * sending to us while we wait on it would wait forever.
 */
static int
gw_novnc_vnc_writeable(struct gw_novnc *n)
{
	if (!n->connected && gw_novnc_connected(n) < 0)
		return -1;
	if (gw_sock_flush(n->vnc, &n->to_vnc, &n->to_vnc_off) < 0)
		return -1;
	if (n->ws_paused && n->close_code == 0 && n->ws != NULL &&
	    n->to_vnc.bytes <= GW_NOVNC_LOW_WATER) {
		lws_rx_flow_control(n->ws, 1);
		n->ws_paused = 0;
	}
	return 0;
}

static int
gw_novnc_vnc_rx(struct gw_novnc *n, const void *in, size_t len)
{
	if (n->ws == NULL || n->close_code != 0)
		return 0;
	/* Seen before the browser is: what the browser answers comes
	 * after it. */
	if (n->view != NULL) {
		gw_rfbview_from_server(n->view, in, len);
		if (gw_rfbview_error(n->view) != NULL) {
			gw_novnc_close(n, LWS_CLOSE_STATUS_POLICY_VIOLATION, 1,
			    "view only: %s", gw_rfbview_error(n->view));
			return 0;
		}
	}
	gw_queue_push_copy(&n->to_ws, in, len, 0);
	lws_callback_on_writable(n->ws);
	if (n->to_ws.bytes > GW_NOVNC_HIGH_WATER && !n->vnc_paused) {
		lws_rx_flow_control(n->vnc, 0);
		n->vnc_paused = 1;
	}
	return 0;
}

/* The server's connection went: the browser is told why, after what
 * the server sent before. */
static void
gw_novnc_vnc_closed(struct gw_novnc *n, struct lws *wsi)
{
	lws_usec_t took = lws_now_usecs() - n->started;
	const char *why = "the connection failed";
	int err = 0;
	socklen_t sl = sizeof err;

	lws_set_opaque_user_data(wsi, NULL);
	n->vnc = NULL;
	if (n->ws == NULL) {
		gw_novnc_free(n);
		return;
	}
	gw_queue_clear(&n->to_vnc);
	if (gateway.stopping)
		return;
	if (n->connected) {
		gw_novnc_close(n, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, 0,
		    "the VNC server closed the connection");
		return;
	}
	/* The socket was not read, so the connect's error waits in it;
	 * without one, only the time taken tells a timeout. */
	if (getsockopt(
	        lws_get_socket_fd(wsi), SOL_SOCKET, SO_ERROR, &err, &sl) == 0 &&
	    err != 0)
		why = strerror(err);
	else if (took >= GW_NOVNC_CONNECT_TIMEOUT_S * LWS_USEC_PER_SEC)
		why = "no answer in time";
	gw_novnc_close(n, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, 1,
	    "VNC server %s unreachable: %s", gateway_addr_name(&gateway.vnc),
	    why);
}

int
gw_novnc_vnc_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct gw_novnc *n = lws_get_opaque_user_data(wsi);

	(void)user;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX:
		if (n == NULL)
			return -1;
		return gw_novnc_vnc_rx(n, in, len);
	case LWS_CALLBACK_RAW_WRITEABLE:
		if (n == NULL)
			return -1;
		return gw_novnc_vnc_writeable(n);
	case LWS_CALLBACK_RAW_CLOSE:
		if (n != NULL)
			gw_novnc_vnc_closed(n, wsi);
		return 0;
	default: return 0;
	}
}
