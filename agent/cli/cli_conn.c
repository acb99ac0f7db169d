/* cli_conn: one blocking connection of the berth CLI to berthd, over the
 * Unix socket (length-prefixed frames) or a WebSocket (libwebsockets on
 * its own service loop, one context per connection). */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <libwebsockets.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_conn.h"
#include "clock.h"
#include "frame.h"
#include "packcheck.h"
#include "xmalloc.h"

/* The largest message, as the wire carries it on the Unix socket. */
#define CLI_CONN_MAX_FRAME (FRAME_HDR + PROTO_MAX_MSG)
#define CLI_CONN_READ_CHUNK 65536
/* How long a WebSocket close may wait for the server's close frame. */
#define CLI_CONN_CLOSE_MS 500

/* One whole message, received or to send. buf holds head bytes of
 * headroom (LWS_PRE for the WebSocket) and then len bytes of message.
 * Owned by whichever queue holds it, or by the connection as cur. */
struct cli_conn_msg {
	TAILQ_ENTRY(cli_conn_msg) entry;
	size_t head;
	size_t len;
	uint8_t buf[];
};
TAILQ_HEAD(cli_conn_queue, cli_conn_msg);

enum cli_conn_kind {
	CLI_CONN_UNIX,
	CLI_CONN_WS,
};

/* A connection: allocated by cli_conn_open_*, freed by cli_conn_close,
 * with every queue and buffer it holds. */
struct cli_conn {
	enum cli_conn_kind kind;
	char *peer; /* the path or URL, for messages */
	uint64_t next_id;

	struct cli_conn_queue inq;  /* received, not yet looked at */
	struct cli_conn_queue held; /* looked at by a request, kept for recv */
	struct cli_conn_msg *cur;   /* the bytes under curmsg */
	struct proto_msg curmsg;

	/* The first failure; once set, the connection is unusable. */
	int fail;
	char *fail_cause;

	/* CLI_CONN_UNIX */
	int fd;
	uint8_t *rbuf;
	size_t rlen;
	size_t rsize;

	/* CLI_CONN_WS */
	struct lws_context *ctx;
	struct lws *wsi;
	bool established;
	bool closing;
	bool timed_out;
	lws_sorted_usec_list_t sul;
	char *auth;                 /* "Bearer TOKEN" */
	struct cli_conn_queue outq; /* waiting for a writeable callback */
	uint8_t *frag;              /* the message being reassembled */
	size_t fraglen;
	size_t fragsize;
};

/* Interruption by signal: a flag, and a pipe that wakes poll(2) (the
 * Unix socket), or lws_cancel_service (the WebSocket's own loop). */
static volatile sig_atomic_t cli_conn_interrupted;
static int cli_conn_wake[2] = {-1, -1};
static struct lws_context *volatile cli_conn_active_ctx;

static int cli_conn_ws_cb(
    struct lws *, enum lws_callback_reasons, void *, void *, size_t);

static const struct lws_protocols cli_conn_protocols[] = {
    {PROTO_VERSION, cli_conn_ws_cb, 0, CLI_CONN_READ_CHUNK, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static int64_t
cli_conn_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : (int64_t)clock_mono_ms() + timeout_ms;
}

/* What is left of a deadline, in poll(2)'s terms. */
static int
cli_conn_left(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - (int64_t)clock_mono_ms();
	return left < 0 ? 0 : (int)left;
}

static void
cli_conn_wake_init(void)
{
	if (cli_conn_wake[0] == -1 &&
	    pipe2(cli_conn_wake, O_CLOEXEC | O_NONBLOCK) != 0)
		cli_conn_wake[0] = cli_conn_wake[1] = -1;
}

void
cli_conn_interrupt(void)
{
	int saved = errno;
	struct lws_context *ctx = cli_conn_active_ctx;

	cli_conn_interrupted = 1;
	if (cli_conn_wake[1] != -1 && write(cli_conn_wake[1], "", 1) < 0) {
		/* Full: a wake-up is already pending. */
	}
	if (ctx != NULL)
		lws_cancel_service(ctx);
	errno = saved;
}

int
cli_conn_pause(int ms)
{
	struct pollfd pfd;

	cli_conn_wake_init();
	if (cli_conn_interrupted)
		return CLI_CONN_INTERRUPTED;
	pfd.fd = cli_conn_wake[0];
	pfd.events = POLLIN;
	if (poll(&pfd, pfd.fd == -1 ? 0 : 1, ms) < 0 && errno != EINTR)
		return CLI_CONN_OK;
	return cli_conn_interrupted ? CLI_CONN_INTERRUPTED : CLI_CONN_OK;
}

/* Appends a copy of buf[0..len) to q, with head bytes of headroom. */
static void
cli_conn_queue_add(
    struct cli_conn_queue *q, size_t head, const void *buf, size_t len)
{
	struct cli_conn_msg *m = xmalloc(sizeof *m + head + len);

	m->head = head;
	m->len = len;
	memcpy(m->buf + head, buf, len);
	TAILQ_INSERT_TAIL(q, m, entry);
}

static void
cli_conn_queue_free(struct cli_conn_queue *q)
{
	struct cli_conn_msg *m;

	while ((m = TAILQ_FIRST(q)) != NULL) {
		TAILQ_REMOVE(q, m, entry);
		free(m);
	}
}

/* Records the first failure; later ones are consequences of it. */
static int cli_conn_failf(struct cli_conn *conn, int status, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));
static int
cli_conn_failf(struct cli_conn *conn, int status, const char *fmt, ...)
{
	va_list ap;

	if (conn->fail != CLI_CONN_OK)
		return conn->fail;
	va_start(ap, fmt);
	if (vasprintf(&conn->fail_cause, fmt, ap) < 0)
		conn->fail_cause = xstrdup("connection failed");
	va_end(ap);
	conn->fail = status;
	return status;
}

static int
cli_conn_failed(struct cli_conn *conn, char **cause)
{
	*cause = xstrdup(conn->fail_cause);
	return conn->fail;
}

static struct cli_conn *
cli_conn_new(enum cli_conn_kind kind, const char *peer)
{
	struct cli_conn *conn = xcalloc(1, sizeof *conn);

	conn->kind = kind;
	conn->peer = xstrdup(peer);
	conn->next_id = 1;
	conn->fd = -1;
	TAILQ_INIT(&conn->inq);
	TAILQ_INIT(&conn->held);
	TAILQ_INIT(&conn->outq);
	return conn;
}

static void
cli_conn_drop_cur(struct cli_conn *conn)
{
	if (conn->cur == NULL)
		return;
	proto_msg_free(&conn->curmsg);
	free(conn->cur);
	conn->cur = NULL;
}

/* Unix socket. */

/* Moves every whole frame at the start of rbuf to inq. */
static int
cli_conn_unix_frames(struct cli_conn *conn)
{
	const uint8_t *payload;
	size_t plen, used = 0;
	enum frame_result r;

	for (;;) {
		r = frame_parse(conn->rbuf + used, conn->rlen - used,
		    PROTO_MAX_MSG, &payload, &plen);
		if (r == FRAME_NEED_MORE)
			break;
		if (r == FRAME_TOO_LARGE)
			return cli_conn_failf(conn, CLI_CONN_PROTOCOL,
			    "%s announced a message over %u bytes", conn->peer,
			    PROTO_MAX_MSG);
		cli_conn_queue_add(&conn->inq, 0, payload, plen);
		used += FRAME_HDR + plen;
	}
	memmove(conn->rbuf, conn->rbuf + used, conn->rlen - used);
	conn->rlen -= used;
	return CLI_CONN_OK;
}

static int
cli_conn_unix_read(struct cli_conn *conn)
{
	ssize_t n;

	if (conn->rsize - conn->rlen < CLI_CONN_READ_CHUNK &&
	    conn->rsize < CLI_CONN_MAX_FRAME) {
		conn->rsize =
		    conn->rsize == 0 ? CLI_CONN_READ_CHUNK : conn->rsize * 2;
		if (conn->rsize > CLI_CONN_MAX_FRAME)
			conn->rsize = CLI_CONN_MAX_FRAME;
		conn->rbuf = xrealloc(conn->rbuf, conn->rsize);
	}
	n = read(conn->fd, conn->rbuf + conn->rlen, conn->rsize - conn->rlen);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return CLI_CONN_OK;
	if (n < 0)
		return cli_conn_failf(conn, CLI_CONN_LOST,
		    "connection to %s lost: %s", conn->peer, strerror(errno));
	if (n == 0)
		return cli_conn_failf(conn, CLI_CONN_LOST,
		    "connection to %s lost: berthd closed it", conn->peer);
	conn->rlen += (size_t)n;
	return cli_conn_unix_frames(conn);
}

/* Waits until inq holds a message, or the deadline, or a failure. */
static int
cli_conn_unix_wait(struct cli_conn *conn, int64_t deadline)
{
	struct pollfd pfd[2];
	int n, status;

	while (TAILQ_EMPTY(&conn->inq)) {
		if (cli_conn_interrupted)
			return CLI_CONN_INTERRUPTED;
		pfd[0].fd = conn->fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = cli_conn_wake[0];
		pfd[1].events = POLLIN;
		n = poll(pfd, cli_conn_wake[0] == -1 ? 1 : 2,
		    cli_conn_left(deadline));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_conn_failf(
			    conn, CLI_CONN_LOST, "poll: %s", strerror(errno));
		if (n == 0)
			return CLI_CONN_TIMEOUT;
		if (pfd[0].revents == 0)
			continue;
		if ((status = cli_conn_unix_read(conn)) != CLI_CONN_OK)
			return status;
	}
	return CLI_CONN_OK;
}

static int
cli_conn_unix_send(struct cli_conn *conn, const void *buf, size_t len)
{
	uint8_t hdr[FRAME_HDR];
	struct iovec iov[2];
	struct msghdr mh;
	ssize_t n;

	frame_header(hdr, (uint32_t)len);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof hdr;
	iov[1].iov_base = (void *)buf;
	iov[1].iov_len = len;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	while (mh.msg_iovlen > 0) {
		n = sendmsg(conn->fd, &mh, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_conn_failf(conn, CLI_CONN_LOST,
			    "connection to %s lost: %s", conn->peer,
			    strerror(errno));
		while (mh.msg_iovlen > 0 && (size_t)n >= mh.msg_iov->iov_len) {
			n -= (ssize_t)mh.msg_iov->iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen > 0) {
			mh.msg_iov->iov_base =
			    (uint8_t *)mh.msg_iov->iov_base + n;
			mh.msg_iov->iov_len -= (size_t)n;
		}
	}
	return CLI_CONN_OK;
}

static int
cli_conn_unix_connect(struct cli_conn *conn, const char *path)
{
	struct sockaddr_un sa;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path)
		return cli_conn_failf(conn, CLI_CONN_LOST,
		    "cannot connect to %s: the path is too long", path);
	strcpy(sa.sun_path, path);
	conn->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (conn->fd == -1)
		return cli_conn_failf(
		    conn, CLI_CONN_LOST, "socket: %s", strerror(errno));
	if (connect(conn->fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		return cli_conn_failf(conn, CLI_CONN_LOST,
		    "cannot connect to %s: %s", path, strerror(errno));
	return CLI_CONN_OK;
}

/* WebSocket. */

static void
cli_conn_ws_timeout_cb(lws_sorted_usec_list_t *sul)
{
	struct cli_conn *conn = lws_container_of(sul, struct cli_conn, sul);

	/* lws runs timers just before it polls, in the same lws_service
	 * call: wake that poll so the wait sees the flag at once. */
	conn->timed_out = true;
	lws_cancel_service(conn->ctx);
}

/* The waits of the WebSocket: service lws until done says so, or the
 * connection fails, or the deadline passes, or a signal interrupts. */
enum cli_conn_until {
	CLI_CONN_UNTIL_ESTABLISHED,
	CLI_CONN_UNTIL_SENT,
	CLI_CONN_UNTIL_RECEIVED,
	CLI_CONN_UNTIL_CLOSED,
};

static bool
cli_conn_ws_done(struct cli_conn *conn, enum cli_conn_until until)
{
	switch (until) {
	case CLI_CONN_UNTIL_ESTABLISHED: return conn->established;
	case CLI_CONN_UNTIL_SENT: return TAILQ_EMPTY(&conn->outq);
	case CLI_CONN_UNTIL_RECEIVED: return !TAILQ_EMPTY(&conn->inq);
	case CLI_CONN_UNTIL_CLOSED: return conn->wsi == NULL;
	}
	return true;
}

static int
cli_conn_ws_wait(
    struct cli_conn *conn, enum cli_conn_until until, int64_t deadline)
{
	int status = CLI_CONN_OK;

	conn->timed_out = false;
	if (deadline >= 0)
		lws_sul_schedule(conn->ctx, 0, &conn->sul,
		    cli_conn_ws_timeout_cb,
		    (lws_usec_t)cli_conn_left(deadline) * LWS_US_PER_MS);
	while (!cli_conn_ws_done(conn, until)) {
		if (conn->fail != CLI_CONN_OK &&
		    until != CLI_CONN_UNTIL_CLOSED) {
			status = conn->fail;
			break;
		}
		/* A close is short and bounded: a signal does not cut it. */
		if (cli_conn_interrupted && until != CLI_CONN_UNTIL_CLOSED) {
			status = CLI_CONN_INTERRUPTED;
			break;
		}
		if (conn->timed_out) {
			status = CLI_CONN_TIMEOUT;
			break;
		}
		if (lws_service(conn->ctx, 0) < 0) {
			status = cli_conn_failf(conn, CLI_CONN_LOST,
			    "connection to %s lost", conn->peer);
			break;
		}
	}
	lws_sul_cancel(&conn->sul);
	return status;
}

static int
cli_conn_ws_send(
    struct cli_conn *conn, const void *buf, size_t len, int64_t deadline)
{
	if (conn->wsi == NULL)
		return conn->fail;
	cli_conn_queue_add(&conn->outq, LWS_PRE, buf, len);
	lws_callback_on_writable(conn->wsi);
	return cli_conn_ws_wait(conn, CLI_CONN_UNTIL_SENT, deadline);
}

static int
cli_conn_ws_writeable(struct cli_conn *conn, struct lws *wsi)
{
	struct cli_conn_msg *m = TAILQ_FIRST(&conn->outq);

	if (conn->closing) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
		return -1;
	}
	if (m == NULL)
		return 0;
	TAILQ_REMOVE(&conn->outq, m, entry);
	if (lws_write(wsi, m->buf + m->head, m->len, LWS_WRITE_BINARY) <
	    (int)m->len) {
		free(m);
		cli_conn_failf(conn, CLI_CONN_LOST,
		    "connection to %s lost while sending", conn->peer);
		return -1;
	}
	free(m);
	if (!TAILQ_EMPTY(&conn->outq))
		lws_callback_on_writable(wsi);
	return 0;
}

/* Adds one fragment to the message being reassembled; a whole message
 * goes to inq. Fragments may split a message anywhere, so the limit is
 * checked on the sum. */
static int
cli_conn_ws_receive(
    struct cli_conn *conn, struct lws *wsi, const void *in, size_t len)
{
	if (!lws_frame_is_binary(wsi)) {
		cli_conn_failf(conn, CLI_CONN_PROTOCOL,
		    "%s sent a text message; berth.v1 uses binary ones",
		    conn->peer);
		lws_close_reason(
		    wsi, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE, NULL, 0);
		return -1;
	}
	if (len > PROTO_MAX_MSG - conn->fraglen) {
		cli_conn_failf(conn, CLI_CONN_PROTOCOL,
		    "%s sent a message over %u bytes", conn->peer,
		    PROTO_MAX_MSG);
		lws_close_reason(
		    wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, NULL, 0);
		return -1;
	}
	if (conn->fraglen + len > conn->fragsize) {
		while (conn->fraglen + len > conn->fragsize)
			conn->fragsize = conn->fragsize == 0
			    ? CLI_CONN_READ_CHUNK
			    : conn->fragsize * 2;
		conn->frag = xrealloc(conn->frag, conn->fragsize);
	}
	memcpy(conn->frag + conn->fraglen, in, len);
	conn->fraglen += len;
	if (lws_is_final_fragment(wsi)) {
		cli_conn_queue_add(&conn->inq, 0, conn->frag, conn->fraglen);
		conn->fraglen = 0;
	}
	return 0;
}

/* Why the handshake failed. lws reports a 401 as its own error string,
 * and keeps the status code while the handshake headers still exist. */
static void
cli_conn_ws_refused(
    struct cli_conn *conn, struct lws *wsi, const char *in, size_t len)
{
	unsigned int code =
	    wsi == NULL ? 0 : lws_http_client_http_response(wsi);
	int n = in == NULL ? 0 : (int)strnlen(in, len);

	if (code == 401 ||
	    (in != NULL && memmem(in, (size_t)n, "unauthorized", 12) != NULL))
		cli_conn_failf(conn, CLI_CONN_AUTH,
		    "%s refused the token (HTTP 401)", conn->peer);
	else if (code != 0 && code != 101)
		cli_conn_failf(conn, CLI_CONN_LOST,
		    "cannot connect to %s: HTTP %u instead of a WebSocket",
		    conn->peer, code);
	else
		cli_conn_failf(conn, CLI_CONN_LOST,
		    "cannot connect to %s: %.*s", conn->peer, n,
		    n == 0 ? "connection failed" : in);
}

/* The close frame's status and reason, if the server sent them. */
static void
cli_conn_ws_peer_closed(struct cli_conn *conn, const uint8_t *in, size_t len)
{
	if (len < 2) {
		cli_conn_failf(conn, CLI_CONN_LOST,
		    "connection to %s lost: the server closed it", conn->peer);
		return;
	}
	cli_conn_failf(conn, CLI_CONN_LOST,
	    "connection to %s lost: the server closed it (%u%s%.*s)",
	    conn->peer, (unsigned)in[0] << 8 | in[1], len > 2 ? ": " : "",
	    (int)(len - 2), (const char *)in + 2);
}

static int
cli_conn_ws_append_auth(
    struct cli_conn *conn, struct lws *wsi, void *in, size_t len)
{
	unsigned char **p = in, *end = *p + len;

	return lws_add_http_header_by_name(wsi,
	    (const unsigned char *)"authorization:",
	    (const unsigned char *)conn->auth, (int)strlen(conn->auth), p, end);
}

static int
cli_conn_ws_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct cli_conn *conn = lws_context_user(lws_get_context(wsi));

	(void)user;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
		return cli_conn_ws_append_auth(conn, wsi, in, len) != 0 ? -1
		                                                        : 0;
	case LWS_CALLBACK_CLIENT_ESTABLISHED: conn->established = true; break;
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		cli_conn_ws_refused(conn, wsi, in, len);
		conn->wsi = NULL;
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		return cli_conn_ws_receive(conn, wsi, in, len);
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		return cli_conn_ws_writeable(conn, wsi);
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		cli_conn_ws_peer_closed(conn, in, len);
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		cli_conn_failf(conn, CLI_CONN_LOST,
		    "connection to %s lost: the server closed it", conn->peer);
		conn->wsi = NULL;
		break;
	default: break;
	}
	return 0;
}

/* Splits ws://HOST[:PORT][/PATH] and starts connecting. */
static int
cli_conn_ws_connect(struct cli_conn *conn, const char *url)
{
	struct lws_context_creation_info info;
	struct lws_client_connect_info ci;
	const char *scheme, *host, *path;
	char *copy = xstrdup(url), *fullpath, *hosthdr;
	int port;

	if (lws_parse_uri(copy, &scheme, &host, &port, &path) != 0 ||
	    strcmp(scheme, "ws") != 0 || *host == '\0') {
		free(copy);
		return cli_conn_failf(conn, CLI_CONN_LOST,
		    "%s is not a URL of the form ws://HOST:PORT/PATH", url);
	}
	lws_set_log_level(0, NULL);
	memset(&info, 0, sizeof info);
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = cli_conn_protocols;
	info.gid = -1;
	info.uid = -1;
	info.user = conn;
	conn->ctx = lws_create_context(&info);
	if (conn->ctx == NULL) {
		free(copy);
		return cli_conn_failf(
		    conn, CLI_CONN_LOST, "cannot create a WebSocket context");
	}
	cli_conn_active_ctx = conn->ctx;

	fullpath = xasprintf("/%s", path);
	hosthdr = xasprintf(
	    strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
	memset(&ci, 0, sizeof ci);
	ci.context = conn->ctx;
	ci.address = host;
	ci.port = port;
	ci.path = fullpath;
	ci.host = hosthdr;
	ci.protocol = PROTO_VERSION;
	ci.local_protocol_name = PROTO_VERSION;
	ci.pwsi = &conn->wsi;
	if (lws_client_connect_via_info(&ci) == NULL)
		cli_conn_failf(
		    conn, CLI_CONN_LOST, "cannot connect to %s", url);
	free(hosthdr);
	free(fullpath);
	free(copy);
	return conn->fail;
}

void
cli_conn_close(struct cli_conn *conn)
{
	if (conn == NULL)
		return;
	cli_conn_drop_cur(conn);
	if (conn->wsi != NULL && conn->established) {
		/* A close frame, so the server sees an end, not a failure. */
		conn->closing = true;
		lws_callback_on_writable(conn->wsi);
		cli_conn_ws_wait(conn, CLI_CONN_UNTIL_CLOSED,
		    cli_conn_deadline(CLI_CONN_CLOSE_MS));
	}
	if (conn->ctx != NULL) {
		cli_conn_active_ctx = NULL;
		lws_context_destroy(conn->ctx);
	}
	if (conn->fd != -1)
		close(conn->fd);
	cli_conn_queue_free(&conn->inq);
	cli_conn_queue_free(&conn->held);
	cli_conn_queue_free(&conn->outq);
	free(conn->rbuf);
	free(conn->frag);
	if (conn->auth != NULL)
		explicit_bzero(conn->auth, strlen(conn->auth));
	free(conn->auth);
	free(conn->fail_cause);
	free(conn->peer);
	free(conn);
}

void
cli_conn_forget(struct cli_conn **connp)
{
	cli_conn_close(*connp);
	*connp = NULL;
}

/* Both transports. */

static int
cli_conn_wait(struct cli_conn *conn, int64_t deadline)
{
	if (!TAILQ_EMPTY(&conn->inq))
		return CLI_CONN_OK;
	if (conn->fail != CLI_CONN_OK)
		return conn->fail;
	cli_conn_wake_init();
	if (conn->kind == CLI_CONN_UNIX)
		return cli_conn_unix_wait(conn, deadline);
	return cli_conn_ws_wait(conn, CLI_CONN_UNTIL_RECEIVED, deadline);
}

/* Turns a status into its cause; timeout_ms is what the caller allowed. */
static int
cli_conn_status(struct cli_conn *conn, int status, int timeout_ms, char **cause)
{
	switch (status) {
	case CLI_CONN_OK: break;
	case CLI_CONN_TIMEOUT:
		*cause = xasprintf("no answer from %s within %g s", conn->peer,
		    timeout_ms / 1000.0);
		break;
	case CLI_CONN_INTERRUPTED: *cause = xstrdup("interrupted"); break;
	default: return cli_conn_failed(conn, cause);
	}
	return status;
}

/* Decodes m into curmsg, which then owns m. */
static int
cli_conn_decode(struct cli_conn *conn, struct cli_conn_msg *m)
{
	const char *code;
	char err[256];

	cli_conn_drop_cur(conn);
	if (proto_decode(m->buf + m->head, m->len, &conn->curmsg, &code, err,
	        sizeof err) != 0) {
		free(m);
		return cli_conn_failf(conn, CLI_CONN_PROTOCOL,
		    "%s sent a bad message (%s: %s)", conn->peer, code, err);
	}
	conn->cur = m;
	return CLI_CONN_OK;
}

/* Decodes the next message that nobody has looked at yet. */
static int
cli_conn_next(struct cli_conn *conn, int64_t deadline)
{
	struct cli_conn_msg *m;
	int status;

	if ((status = cli_conn_wait(conn, deadline)) != CLI_CONN_OK)
		return status;
	m = TAILQ_FIRST(&conn->inq);
	TAILQ_REMOVE(&conn->inq, m, entry);
	return cli_conn_decode(conn, m);
}

int
cli_conn_recv(struct cli_conn *conn, int timeout_ms,
    const struct proto_msg **msgp, char **cause)
{
	struct cli_conn_msg *m;
	int status;

	if ((m = TAILQ_FIRST(&conn->held)) != NULL) {
		TAILQ_REMOVE(&conn->held, m, entry);
		status = cli_conn_decode(conn, m);
	} else
		status = cli_conn_next(conn, cli_conn_deadline(timeout_ms));
	if (status != CLI_CONN_OK)
		return cli_conn_status(conn, status, timeout_ms, cause);
	*msgp = &conn->curmsg;
	return CLI_CONN_OK;
}

static int
cli_conn_send_by(
    struct cli_conn *conn, const void *buf, size_t len, int64_t deadline)
{
	PACKCHECK_SENT(buf, len, NULL);
	if (conn->fail != CLI_CONN_OK)
		return conn->fail;
	if (conn->kind == CLI_CONN_UNIX)
		return cli_conn_unix_send(conn, buf, len);
	return cli_conn_ws_send(conn, buf, len, deadline);
}

int
cli_conn_send(struct cli_conn *conn, const void *buf, size_t len, char **cause)
{
	if (len > PROTO_MAX_MSG) {
		*cause = xasprintf("a message of %zu bytes is over the limit "
		                   "of %u",
		    len, PROTO_MAX_MSG);
		return CLI_CONN_PROTOCOL;
	}
	return cli_conn_status(
	    conn, cli_conn_send_by(conn, buf, len, -1), -1, cause);
}

/* Packs a request for op with id and args from pack (NULL: an empty
 * map) into sb. */
static void
cli_conn_pack_request(msgpack_sbuffer *sb, uint64_t id, const char *op,
    cli_conn_pack_cb pack, void *ctx)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	proto_pack_request(&pk, id, op);
	if (pack != NULL)
		pack(&pk, ctx);
	else
		msgpack_pack_map(&pk, 0);
}

int
cli_conn_push(struct cli_conn *conn, uint64_t id, const char *op,
    cli_conn_pack_cb pack, void *ctx, char **cause)
{
	msgpack_sbuffer sb;
	int status;

	msgpack_sbuffer_init(&sb);
	cli_conn_pack_request(&sb, id, op, pack, ctx);
	status = cli_conn_send(conn, sb.data, sb.size, cause);
	msgpack_sbuffer_destroy(&sb);
	return status;
}

/* Sends a request and decodes messages until its response is curmsg;
 * the others are kept in held, in order. */
static int
cli_conn_exchange(struct cli_conn *conn, const char *op, cli_conn_pack_cb pack,
    void *ctx, int64_t deadline)
{
	msgpack_sbuffer sb;
	uint64_t id = conn->next_id++;
	int status;

	msgpack_sbuffer_init(&sb);
	cli_conn_pack_request(&sb, id, op, pack, ctx);
	status = cli_conn_send_by(conn, sb.data, sb.size, deadline);
	msgpack_sbuffer_destroy(&sb);
	while (status == CLI_CONN_OK) {
		if ((status = cli_conn_next(conn, deadline)) != CLI_CONN_OK)
			break;
		if (conn->curmsg.type == PROTO_RESPONSE &&
		    conn->curmsg.id == id)
			break;
		/* Not ours: keep the bytes for recv, to decode again there. */
		proto_msg_free(&conn->curmsg);
		TAILQ_INSERT_TAIL(&conn->held, conn->cur, entry);
		conn->cur = NULL;
	}
	return status;
}

int
cli_conn_request(struct cli_conn *conn, const char *op, cli_conn_pack_cb pack,
    void *ctx, int timeout_ms, const struct proto_msg **respp, char **cause)
{
	int status;

	status = cli_conn_exchange(
	    conn, op, pack, ctx, cli_conn_deadline(timeout_ms));
	if (status != CLI_CONN_OK)
		return cli_conn_status(conn, status, timeout_ms, cause);
	*respp = &conn->curmsg;
	return CLI_CONN_OK;
}

static void
cli_conn_pack_hello(msgpack_packer *pk, void *ctx)
{
	(void)ctx;
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "version", PROTO_VERSION);
	proto_pack_kv_str(pk, "client", "berth/" BERTH_VERSION);
}

/* The first exchange of every connection. */
static int
cli_conn_hello(struct cli_conn *conn, int64_t deadline, char **cause)
{
	const struct proto_msg *resp = &conn->curmsg;
	const msgpack_object *v;
	int status;

	status = cli_conn_exchange(
	    conn, "hello", cli_conn_pack_hello, NULL, deadline);
	if (status != CLI_CONN_OK)
		return status;
	if (!resp->ok)
		return cli_conn_refused(resp, cause);
	v = proto_map_get(resp->result, "version");
	if (v == NULL || v->type != MSGPACK_OBJECT_STR ||
	    v->via.str.size != strlen(PROTO_VERSION) ||
	    memcmp(v->via.str.ptr, PROTO_VERSION, v->via.str.size) != 0) {
		*cause = xasprintf(
		    "%s does not speak %s", conn->peer, PROTO_VERSION);
		return CLI_CONN_PROTOCOL;
	}
	return CLI_CONN_OK;
}

/* Ends an open whose transport is connected (status) or not: says hello,
 * then hands the connection over, or frees it. */
static int
cli_conn_opened(struct cli_conn *conn, int status, int64_t deadline,
    int timeout_ms, struct cli_conn **connp, char **cause)
{
	*cause = NULL;
	if (status == CLI_CONN_OK)
		status = cli_conn_hello(conn, deadline, cause);
	if (status != CLI_CONN_OK) {
		if (*cause == NULL)
			cli_conn_status(conn, status, timeout_ms, cause);
		cli_conn_close(conn);
		return status;
	}
	*connp = conn;
	return CLI_CONN_OK;
}

int
cli_conn_open_unix(
    const char *path, int timeout_ms, struct cli_conn **connp, char **cause)
{
	struct cli_conn *conn = cli_conn_new(CLI_CONN_UNIX, path);
	int64_t deadline = cli_conn_deadline(timeout_ms);

	return cli_conn_opened(conn, cli_conn_unix_connect(conn, path),
	    deadline, timeout_ms, connp, cause);
}

int
cli_conn_open_ws(const char *url, const char *token, int timeout_ms,
    struct cli_conn **connp, char **cause)
{
	struct cli_conn *conn = cli_conn_new(CLI_CONN_WS, url);
	int64_t deadline = cli_conn_deadline(timeout_ms);
	int status;

	conn->auth = xasprintf("Bearer %s", token);
	cli_conn_wake_init();
	status = cli_conn_ws_connect(conn, url);
	if (status == CLI_CONN_OK)
		status = cli_conn_ws_wait(
		    conn, CLI_CONN_UNTIL_ESTABLISHED, deadline);
	return cli_conn_opened(
	    conn, status, deadline, timeout_ms, connp, cause);
}

const struct proto_msg *
cli_conn_last(const struct cli_conn *conn)
{
	return &conn->curmsg;
}

int
cli_conn_call(struct cli_conn *conn, const char *op, cli_conn_pack_cb pack,
    void *ctx, int timeout_ms, const struct proto_msg **respp, char **cause)
{
	int status;

	status =
	    cli_conn_request(conn, op, pack, ctx, timeout_ms, respp, cause);
	if (status != CLI_CONN_OK)
		return status;
	if (!(*respp)->ok)
		return cli_conn_refused(*respp, cause);
	return CLI_CONN_OK;
}

int
cli_conn_refused(const struct proto_msg *resp, char **cause)
{
	*cause = xasprintf("%s: %s", resp->err_code, resp->err_message);
	return CLI_CONN_ANSWERED;
}
