/* server: the protocol on berthd's Unix socket (see server.h). Owns the
 * listener, every connection, and the reply buffer. */
#include <errno.h>
#include <limits.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "catalog.h"
#include "events.h"
#include "frame.h"
#include "idem.h"
#include "inflight.h"
#include "journal.h"
#include "log.h"
#include "ops.h"
#include "packcheck.h"
#include "proto.h"
#include "provider.h"
#include "server.h"
#include "stream.h"
#include "taskout.h"
#include "xmalloc.h"

static struct evconnlistener *server_listener;
static struct server_conn *server_conns;
static char *server_path;
static uid_t server_gw_uid;
static msgpack_sbuffer server_sb;
static msgpack_packer server_pk;
static uint64_t server_serial;
/* The op of the request being dispatched, to name it if its answer was
 * packed wrong. */
static const char *server_serving;
/* The answer being packed with server_reply_begin: its id, and where its
 * result starts in server_sb. */
static uint64_t server_reply_id;
static size_t server_reply_head;
/* Where the answer to a request whose connection has gone goes when a
 * key still waits for it (server_conn_answer): it is recorded, not sent. */
static struct server_conn server_sink;

static void server_free(struct server_conn *c);

size_t
server_out_room(const struct server_conn *c)
{
	size_t len = evbuffer_get_length(bufferevent_get_output(c->bev));

	return c->closing || len >= SERVER_OUT_HIGH ? 0 : SERVER_OUT_HIGH - len;
}

void
server_send(struct server_conn *c, const void *msg, size_t len)
{
	uint8_t hdr[FRAME_HDR];
	struct evbuffer *out;

	PACKCHECK_SENT(msg, len, server_serving);
	if (c == &server_sink)
		return;
	out = bufferevent_get_output(c->bev);
	frame_header(hdr, (uint32_t)len);
	evbuffer_add(out, hdr, sizeof hdr);
	evbuffer_add(out, msg, len);
}

/* Sends the answer to id packed in server_sb, whose result or error map
 * starts at head, and shows it to idem, which may answer repeats of it
 * (reusing server_sb, so after the send). */
static void
server_reply_sent(struct server_conn *c, uint64_t id, bool ok, size_t head)
{
	server_send(c, server_sb.data, server_sb.size);
	idem_answered(
	    c->serial, id, ok, server_sb.data + head, server_sb.size - head);
}

msgpack_packer *
server_reply_begin(struct server_conn *c, uint64_t id)
{
	(void)c;
	msgpack_sbuffer_clear(&server_sb);
	proto_pack_result(&server_pk, id);
	server_reply_id = id;
	server_reply_head = server_sb.size;
	return &server_pk;
}

void
server_reply_end(struct server_conn *c)
{
	server_reply_sent(c, server_reply_id, true, server_reply_head);
}

void
server_reply_packed(
    struct server_conn *c, uint64_t id, bool ok, const void *obj, size_t len)
{
	size_t head;

	msgpack_sbuffer_clear(&server_sb);
	if (ok)
		proto_pack_result(&server_pk, id);
	else
		proto_pack_error_head(&server_pk, id);
	head = server_sb.size;
	msgpack_sbuffer_write(&server_sb, obj, len);
	server_reply_sent(c, id, ok, head);
}

void
server_reply_empty(struct server_conn *c, uint64_t id)
{
	msgpack_pack_map(server_reply_begin(c, id), 0);
	server_reply_end(c);
}

static void __attribute__((format(printf, 5, 0)))
server_reply_failure(struct server_conn *c, uint64_t id, const char *code,
    const char *path, const char *fmt, va_list ap)
{
	char msg[512];
	size_t head;

	vsnprintf(msg, sizeof msg, fmt, ap);
	msgpack_sbuffer_clear(&server_sb);
	proto_pack_error_head(&server_pk, id);
	head = server_sb.size;
	proto_pack_error_map(&server_pk, code, path, msg);
	server_reply_sent(c, id, false, head);
}

void
server_reply_error(
    struct server_conn *c, uint64_t id, const char *code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	server_reply_failure(c, id, code, NULL, fmt, ap);
	va_end(ap);
}

void
server_reply_error_path(struct server_conn *c, uint64_t id, const char *code,
    const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	server_reply_failure(c, id, code, path, fmt, ap);
	va_end(ap);
}

/* Tells a subscriber that seqs [c->next_seq, first) are gone for good. */
static void
server_send_gap(struct server_conn *c, uint64_t first)
{
	msgpack_sbuffer_clear(&server_sb);
	proto_pack_event(&server_pk, 0, proto_now_ms(), EV_EVENTS_GAP);
	msgpack_pack_map(&server_pk, 3);
	proto_pack_kv_u64(&server_pk, "requested", c->next_seq);
	proto_pack_kv_u64(&server_pk, "first_seq", first);
	proto_pack_kv_u64(&server_pk, "lost", first - c->next_seq);
	server_send(c, server_sb.data, server_sb.size);
}

/* Whether c is shown the event p[0..len): the gateway's uid, until a
 * client's credential attached its connection, sees only the checks'
 * events, which its probes answer from, and the ends of grants, upon
 * which it closes what they opened; the journal's other events (the
 * commands started, the files changed) are a client's to read. */
static bool
server_shows(const struct server_conn *c, const uint8_t *p, size_t len)
{
	struct proto_msg m;
	const char *code;
	char err[64];
	bool shown;

	if (!c->gateway || c->remote)
		return true;
	if (proto_decode(p, len, &m, &code, err, sizeof err) < 0)
		return false;
	shown = m.type == PROTO_EVENT &&
	    (strncmp(m.kind, "check.", 6) == 0 ||
	        strcmp(m.kind, EV_GRANT_REVOKED) == 0 ||
	        strcmp(m.kind, EV_GRANT_EXPIRED) == 0);
	proto_msg_free(&m);
	return shown;
}

/* Moves journal records into c's output until it holds SERVER_OUT_HIGH
 * bytes or c has caught up. Journal records are whole event messages. */
static void
server_pump(struct server_conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	const uint8_t *p;
	uint8_t hdr[FRAME_HDR];
	size_t len;
	uint64_t seq;
	char *cause = NULL;
	int r;

	while (c->cursor != NULL && !c->closing &&
	    evbuffer_get_length(out) < SERVER_OUT_HIGH) {
		r = journal_cursor_next(c->cursor, &p, &len, &seq, &cause);
		if (r == 0)
			break;
		if (r < 0) {
			log_warn("subscriber %s: %s", c->peer, cause);
			free(cause);
			server_reply_error(c, 0, PROTO_E_INTERNAL,
			    "the journal cannot be read");
			c->closing = true;
			break;
		}
		if (seq < c->next_seq)
			continue;
		if (seq > c->next_seq)
			server_send_gap(c, seq);
		c->next_seq = seq + 1;
		if (!server_shows(c, p, len))
			continue;
		frame_header(hdr, (uint32_t)len);
		evbuffer_add(out, hdr, sizeof hdr);
		evbuffer_add(out, p, len);
	}
}

void
server_subscribe(struct server_conn *c, uint64_t from_seq)
{
	if (c->cursor != NULL)
		journal_cursor_close(c->cursor);
	c->cursor = journal_cursor_open(events_journal(), from_seq);
	c->next_seq = from_seq;
	server_pump(c);
}

void
server_unsubscribe(struct server_conn *c)
{
	if (c->cursor != NULL)
		journal_cursor_close(c->cursor);
	c->cursor = NULL;
}

static void
server_events_cb(void)
{
	struct server_conn *c;

	for (c = server_conns; c != NULL; c = c->next)
		if (c->cursor != NULL)
			server_pump(c);
}

/*
 * The whole frame of len bytes at the head of in, contiguous: where it
 * lies if it is in one piece, else copied into *copy (which the caller
 * wipes and frees). Unlike evbuffer_pullup, this frees no buffer that
 * still holds the frame's bytes: a request may carry secret values.
 */
static const uint8_t *
server_frame(struct evbuffer *in, size_t len, uint8_t **copy)
{
	struct evbuffer_iovec v;

	*copy = NULL;
	if (evbuffer_peek(in, (ssize_t)len, NULL, &v, 1) == 1 &&
	    v.iov_len >= len)
		return v.iov_base;
	*copy = xmalloc(len);
	evbuffer_copyout(in, *copy, len);
	return *copy;
}

/* Wipes the first len bytes of in where they lie, then drains them. */
static void
server_consume(struct evbuffer *in, size_t len, uint8_t *copy)
{
	struct evbuffer_iovec *v;
	size_t left = len, k;
	int i, n;

	n = evbuffer_peek(in, (ssize_t)len, NULL, NULL, 0);
	v = xcalloc((size_t)n, sizeof *v);
	n = evbuffer_peek(in, (ssize_t)len, NULL, v, n);
	for (i = 0; i < n && left > 0; i++) {
		k = v[i].iov_len < left ? v[i].iov_len : left;
		explicit_bzero(v[i].iov_base, k);
		left -= k;
	}
	free(v);
	if (copy != NULL) {
		explicit_bzero(copy, len);
		free(copy);
	}
	evbuffer_drain(in, len);
}

/* A request under the id of a waiting one of c. Sent past idem: the
 * waiting one may be a key's first, and this is not its answer. Every
 * request whose answer comes after its dispatch waits in inflight, so
 * this is the one answer under a key's first's id that is not the
 * first's. */
static void
server_refuse_duplicate(struct server_conn *c, uint64_t id)
{
	msgpack_sbuffer_clear(&server_sb);
	proto_pack_error(&server_pk, id, PROTO_E_DUPLICATE_ID,
	    "request %llu of this connection still waits",
	    (unsigned long long)id);
	server_send(c, server_sb.data, server_sb.size);
}

/* Decodes and dispatches every whole frame in c's input. */
static void
server_read_cb(struct bufferevent *bev, void *arg)
{
	struct server_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	const uint8_t *payload;
	uint8_t hdr[FRAME_HDR], *copy;
	const char *code;
	char err[256];
	size_t plen;
	struct proto_msg m;

	while (!c->closing) {
		size_t have = evbuffer_get_length(in);
		if (have < FRAME_HDR)
			break;
		evbuffer_copyout(in, hdr, FRAME_HDR);
		plen = frame_length(hdr);
		if (plen > PROTO_MAX_MSG) {
			server_reply_error(c, 0, PROTO_E_TOO_LARGE,
			    "frame exceeds %u bytes", PROTO_MAX_MSG);
			c->closing = true;
			break;
		}
		if (have < FRAME_HDR + plen)
			break;
		payload = server_frame(in, FRAME_HDR + plen, &copy);
		if (proto_decode(payload + FRAME_HDR, plen, &m, &code, err,
		        sizeof err) < 0) {
			server_consume(in, FRAME_HDR + plen, copy);
			/* A newer peer's message, or a request without an id
			 * to answer under, not a broken one: refused, the
			 * connection kept (as the gateway does). */
			if (strcmp(code, PROTO_E_UNKNOWN_TYPE) == 0 ||
			    strcmp(code, PROTO_E_BAD_ID) == 0) {
				server_reply_error(c, m.id, code, "%s", err);
				continue;
			}
			server_reply_error(c, 0, code, "%s", err);
			c->closing = true;
			break;
		}
		if (m.type == PROTO_RESPONSE && provider_is(c))
			provider_answer(c, &m);
		else if (m.type != PROTO_REQUEST)
			server_reply_error(c, m.id, PROTO_E_UNKNOWN_TYPE,
			    "clients send requests only");
		else if (inflight_has(c, m.id))
			server_refuse_duplicate(c, m.id);
		else {
			server_serving = m.op;
			ops_dispatch(c, &m);
			server_serving = NULL;
		}
		proto_msg_free(&m);
		server_consume(in, FRAME_HDR + plen, copy);
	}
	if (c->closing) {
		bufferevent_disable(bev, EV_READ);
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			server_free(c);
	}
}

static void
server_write_cb(struct bufferevent *bev, void *arg)
{
	struct server_conn *c = arg;

	if (c->closing) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			server_free(c);
		return;
	}
	server_pump(c);
	stream_conn_pump(c);
	taskout_conn_pump(c);
}

static void
server_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct server_conn *c = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		log_debug("%s: %s closed", __func__, c->peer);
		server_free(c);
	}
}

static void
server_free(struct server_conn *c)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		server_conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	server_unsubscribe(c);
	stream_conn_gone(c);
	taskout_conn_gone(c);
	provider_conn_gone(c);
	inflight_conn_gone(c);
	bufferevent_free(c->bev);
	free(c);
}

void
server_close_grant(const char *id)
{
	struct server_conn *c, *next;

	for (c = server_conns; c != NULL; c = next) {
		next = c->next;
		if (c->grant[0] != '\0' && strcmp(c->grant, id) == 0) {
			log_info("%s: grant %s ended: closed", c->peer, id);
			server_free(c);
		}
	}
}

struct server_conn *
server_conn_find(uint64_t serial)
{
	struct server_conn *c;

	for (c = server_conns; c != NULL; c = c->next)
		if (c->serial == serial)
			return c;
	return NULL;
}

struct server_conn *
server_conn_answer(uint64_t serial, uint64_t id)
{
	struct server_conn *c = server_conn_find(serial);

	if (c != NULL || !idem_awaits(serial, id))
		return c;
	server_sink.serial = serial;
	return &server_sink;
}

/* Who the peer is: 1 for berthd's own user (root), 2 for the gateway's,
 * 0 for anyone else, who may not talk to berthd at all. */
static int
server_peer_kind(evutil_socket_t fd, char *peer, size_t len)
{
	struct ucred cred;
	socklen_t clen = sizeof cred;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0)
		return 0;
	snprintf(peer, len, "pid %ld uid %ld", (long)cred.pid, (long)cred.uid);
	if (cred.uid == getuid())
		return 1;
	return cred.uid == server_gw_uid ? 2 : 0;
}

/* A new connection on fd, watched on base. */
static struct server_conn *
server_conn_new(struct event_base *base, evutil_socket_t fd, const char *peer)
{
	struct server_conn *c;

	c = xcalloc(1, sizeof *c);
	c->serial = ++server_serial;
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		free(c);
		return NULL;
	}
	bufferevent_setcb(
	    c->bev, server_read_cb, server_write_cb, server_event_cb, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, SERVER_OUT_LOW, 0);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->next = server_conns;
	if (server_conns != NULL)
		server_conns->prev = c;
	server_conns = c;
	return c;
}

static void
server_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct server_conn *c;
	char peer[64];
	int kind;

	(void)sa;
	(void)salen;
	(void)arg;
	if ((kind = server_peer_kind(fd, peer, sizeof peer)) == 0) {
		log_warn("refused a Unix socket client (%s)", peer);
		close(fd);
		return;
	}
	c = server_conn_new(evconnlistener_get_base(l), fd, peer);
	if (c == NULL) {
		log_warn("cannot watch a Unix socket client (%s)", peer);
		close(fd);
		return;
	}
	c->gateway = kind == 2;
}

struct server_conn *
server_adopt(
    int fd, uid_t uid, const char *check, const char *peer, char **cause)
{
	struct server_conn *c = NULL;

	if (server_listener == NULL || strlen(check) > SERVER_CHECK_MAX ||
	    evutil_make_socket_nonblocking(fd) < 0 ||
	    (c = server_conn_new(
	         evconnlistener_get_base(server_listener), fd, peer)) == NULL) {
		*cause = xasprintf("cannot adopt a connection for %s", peer);
		close(fd);
		return NULL;
	}
	c->desktop = true;
	c->desktop_uid = uid;
	snprintf(c->desktop_check, sizeof c->desktop_check, "%s", check);
	return c;
}

/* A socket file nobody accepts on is left from a previous run. */
static int
server_socket_stale(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int live;

	if (fd < 0)
		return 0;
	live = connect(fd, (const struct sockaddr *)sun, sizeof *sun) == 0;
	close(fd);
	return !live;
}

int
server_listen(struct event_base *base, const char *path, uid_t gw_uid,
    gid_t gw_gid, char **cause)
{
	struct sockaddr_un sun;
	evutil_socket_t fd;
	mode_t old;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		*cause = xasprintf("socket path %s is too long", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	if (access(path, F_OK) == 0) {
		if (!server_socket_stale(&sun)) {
			*cause =
			    xasprintf("%s: another berthd is listening", path);
			return -1;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		*cause = xasprintf("socket: %s", strerror(errno));
		return -1;
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
		umask(old);
		*cause = xasprintf("bind %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	/* Before listen: no one connects while the mode is still 0600. */
	if (chown(path, getuid(), gw_gid) != 0 || chmod(path, 0660) != 0) {
		*cause =
		    xasprintf("%s: cannot give the socket to group %ld: %s",
		        path, (long)gw_gid, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	server_gw_uid = gw_uid;
	/* The system's largest backlog: a connect beyond the backlog fails
	 * with EAGAIN, and a burst of WebSocket clients brings one connect
	 * each. listen() cuts the value down to net.core.somaxconn of the
	 * socket's network namespace, read at this call: asking for the
	 * most is that maximum without reading /proc, which PID 1 may not
	 * have mounted yet. */
	server_listener = evconnlistener_new(base, server_accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, INT_MAX, fd);
	if (server_listener == NULL) {
		*cause = xasprintf("listen %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	server_path = xstrdup(path);
	msgpack_sbuffer_init(&server_sb);
	msgpack_packer_init(&server_pk, &server_sb, msgpack_sbuffer_write);
	events_set_notify(server_events_cb);
	return 0;
}

void
server_shutdown(void)
{
	while (server_conns != NULL)
		server_free(server_conns);
	if (server_listener != NULL)
		evconnlistener_free(server_listener);
	server_listener = NULL;
	if (server_path != NULL)
		unlink(server_path);
	free(server_path);
	server_path = NULL;
	msgpack_sbuffer_destroy(&server_sb);
	events_set_notify(NULL);
}
