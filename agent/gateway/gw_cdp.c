/* gw_cdp: relay 1, the TCP relay to Chromium's DevTools. Reads each
 * client's request head, checks its token, sends Chromium the rewritten
 * head on a connection of its own, rewrites /json listings on the way
 * back, and relays bytes both ways once a WebSocket upgrade succeeded.
 * Owns the relay's vhost and every struct gw_cdp. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gw_cdp_http.h"
#include "gateway.h"
#include "gw_auth.h"
#include "gw_buf.h"
#include "gw_check.h"
#include "gw_cdp.h"
#include "gw_grant.h"
#include "gw_refusal.h"
#include "gw_sock.h"
#include "log.h"
#include "xmalloc.h"

/* Reading a side stops while this much waits for the other, and goes on
 * once it drained to the low mark. */
#define GW_CDP_HIGH_WATER (256u * 1024)
#define GW_CDP_LOW_WATER (64u * 1024)
/* Connections served at once. Beyond, the oldest still sending its head
 * is closed to make room (and the newcomer refused with a 503 if there
 * is none), so that half-sent heads cannot starve the relay; connections
 * closing still count, up to twice as many. */
#define GW_CDP_MAX_CONNS 64
/* How long each part may take: the request head, Chromium's whole
 * answer (connecting included), the last bytes to the client, and the
 * wait for the client to close after them. */
#define GW_CDP_HEAD_US (5 * LWS_USEC_PER_SEC)
#define GW_CDP_ANSWER_US (30 * LWS_USEC_PER_SEC)
#define GW_CDP_FLUSH_US (10 * LWS_USEC_PER_SEC)
#define GW_CDP_LINGER_US (2 * LWS_USEC_PER_SEC)

enum gw_cdp_state {
	GW_CDP_HEAD,   /* reading the client's request head */
	GW_CDP_ANSWER, /* the request goes to Chromium; its answer's head
	                  comes back */
	GW_CDP_BODY,   /* the answer's body comes back */
	GW_CDP_RELAY,  /* the upgrade succeeded: bytes both ways */
	GW_CDP_FLUSH,  /* the client gets what is left for it */
	GW_CDP_LINGER, /* its side is shut; what it still sends is dropped
	                  until it closes, so that closing with unread bytes
	                  does not reset the connection under the answer */
};

/*
 * One client of the relay and its connection to Chromium. Allocated when
 * lws accepts the client, freed once both wsi are closed; each wsi's
 * opaque user data points here until its close.
 */
struct gw_cdp {
	struct lws *client;
	struct lws *up; /* NULL until connecting, and after its close */
	enum gw_cdp_state state;
	int connected;      /* up's connect() completed */
	int up_closing;     /* we close up: its close is no news */
	int answered;       /* bytes of an answer went to the client */
	int client_paused;  /* rx flow control is on for the client */
	int up_paused;      /* ... and for up */
	int connect_errno;  /* why up's connect() failed */
	uint64_t req_left;  /* request body bytes still for Chromium */
	uint64_t resp_left; /* answer body bytes still for the client */
	struct gw_cdp_http_request req;
	struct gw_cdp_http_response resp;
	struct gw_buf in;  /* the client's bytes not yet used: its head,
	                          then what follows an upgrade until the 101 */
	struct gw_buf ans; /* Chromium's answer head (and body, when it
	                          is to be rewritten) so far */
	struct gw_buf to_up;
	struct gw_buf to_client;
	lws_sorted_usec_list_t sul; /* the deadline of the current state */
	struct gw_grant_hold hold;  /* the grant the client came with, if any */
	char peer[GATEWAY_PEER_MAX];
	struct gw_cdp *prev, *next; /* every connection, oldest first */
};

static int gw_cdp_client_cb(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len);
static int gw_cdp_up_cb(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len);

static const struct lws_protocols gw_cdp_protocols[] = {
    {"berth-cdp-relay", gw_cdp_client_cb, 0, 65536, 0, NULL, 0},
    {"berth-cdp-relay-up", gw_cdp_up_cb, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static struct lws_vhost *gw_cdp_vhost;
/* Chromium's address as its Host header and its URLs spell it. */
static char gw_cdp_authority[INET6_ADDRSTRLEN + 16];
static unsigned gw_cdp_count;
static struct gw_cdp *gw_cdp_first, *gw_cdp_last;

static void
gw_cdp_kill(struct lws *wsi)
{
	if (wsi != NULL && !gateway.stopping)
		lws_set_timeout(
		    wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static void gw_cdp_deadline_cb(lws_sorted_usec_list_t *sul);

static void
gw_cdp_deadline(struct gw_cdp *c, lws_usec_t us)
{
	lws_sul_schedule(gateway.ctx, 0, &c->sul, gw_cdp_deadline_cb, us);
}

/* Closes the connection to Chromium at the next turn of the loop. */
static void
gw_cdp_drop_up(struct gw_cdp *c)
{
	if (c->up != NULL && !c->up_closing) {
		c->up_closing = 1;
		gw_cdp_kill(c->up);
	}
}

/* Sets one side's rx flow control to what its state and the buffers it
 * feeds want: off at the high mark, on again at the low one. */
static void
gw_cdp_flow_set(struct lws *wsi, int *paused, int want)
{
	if (wsi == NULL || want == !*paused)
		return;
	*paused = !want;
	lws_rx_flow_control(wsi, want);
}

static int
gw_cdp_room(const struct gw_buf *b, int paused)
{
	return paused ? b->len <= GW_CDP_LOW_WATER : b->len < GW_CDP_HIGH_WATER;
}

static void
gw_cdp_flow(struct gw_cdp *c)
{
	int client = 0, up = 0;

	switch (c->state) {
	case GW_CDP_HEAD:
	case GW_CDP_LINGER: client = 1; break;
	case GW_CDP_ANSWER:
	case GW_CDP_BODY:
		/* An upgrade's further bytes wait for the 101. */
		client = !c->req.upgrade && c->req_left != 0 &&
		    gw_cdp_room(&c->to_up, c->client_paused);
		up = c->connected && gw_cdp_room(&c->to_client, c->up_paused);
		break;
	case GW_CDP_RELAY:
		client = gw_cdp_room(&c->to_up, c->client_paused);
		up = gw_cdp_room(&c->to_client, c->up_paused);
		break;
	case GW_CDP_FLUSH: break;
	}
	gw_cdp_flow_set(c->client, &c->client_paused, client);
	if (c->up != NULL && !c->up_closing)
		gw_cdp_flow_set(c->up, &c->up_paused, up);
}

/* The answer is complete: Chromium's connection goes, the client gets
 * what is left for it. */
static void
gw_cdp_finish(struct gw_cdp *c)
{
	gw_cdp_drop_up(c);
	c->state = GW_CDP_FLUSH;
	gw_cdp_deadline(c, GW_CDP_FLUSH_US);
	gw_cdp_flow(c);
	lws_callback_on_writable(c->client);
}

static void gw_cdp_fail(struct gw_cdp *c, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Ends the connection with an error response of ours, if the client has
 * not had a byte of an answer yet; otherwise the connection just closes,
 * since nothing else could be said without corrupting what it got.
 */
static void
gw_cdp_fail(struct gw_cdp *c, unsigned status, const char *fmt, ...)
{
	char *msg, *out;
	va_list ap;
	size_t n;

	if (c->state == GW_CDP_FLUSH || c->state == GW_CDP_LINGER)
		return;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		log_fatal("vasprintf: out of memory");
	va_end(ap);
	if (c->answered) {
		log_info("CDP relay: dropped %s: %s", c->peer, msg);
		free(msg);
		gw_cdp_drop_up(c);
		gw_cdp_kill(c->client);
		c->state = GW_CDP_FLUSH;
		return;
	}
	/* A refusal for want of the token is logged, sampled, where it is
	 * counted (gw_refusal.h). */
	if (status != 401)
		log_info("CDP relay: %u to %s: %s", status, c->peer, msg);
	out = gw_cdp_http_error(status, msg, &n);
	free(msg);
	c->to_client.len = c->to_client.off = 0;
	gw_buf_add(&c->to_client, out, n);
	free(out);
	c->answered = 1;
	gw_cdp_finish(c);
}

/* Opens a connection to Chromium, connecting in the background, and
 * adopts it into lws. -1 with *cause if it cannot even start. */
static int
gw_cdp_connect(struct gw_cdp *c, char **cause)
{
	struct lws *wsi;
	int fd;

	if ((fd = gw_sock_connect_tcp(&gateway.cdp, cause)) < 0)
		return -1;
	wsi = gw_sock_adopt(gw_cdp_vhost, fd, "berth-cdp-relay-up", c, cause);
	if (wsi == NULL)
		return -1;
	c->up = wsi;
	/* Writeable once the connect completed. Not read before: a read
	 * would take the connect's error, which the close reports. */
	c->up_paused = 1;
	lws_rx_flow_control(wsi, 0);
	lws_callback_on_writable(wsi);
	return 0;
}

/* The request head is whole and good: on to Chromium with it. */
static void
gw_cdp_request(struct gw_cdp *c)
{
	struct gw_check_answer who;
	const char *reason;
	char *head, *cause;
	size_t n;

	/* Bearer only: a browser would send a cookie of this host to this
	 * port too, whatever page made it connect. */
	reason = gw_check_presented(
	    GW_CHECK_CDP_RELAY, c->req.authz, c->req.authzlen, c->peer, &who);
	c->req.authz = NULL;
	if (reason != NULL && strcmp(reason, GW_AUTH_UNAVAILABLE) == 0) {
		gw_cdp_fail(c, 503, "berthd cannot check the token now");
		return;
	}
	if (reason != NULL) {
		gw_refusal_note(c->peer, "a CDP relay request", reason);
		gw_cdp_fail(c, 401,
		    "a valid bearer token is required (token %s)", reason);
		return;
	}
	/* A grant's end kills the client's connection, and Chromium's goes
	 * with it. */
	if (who.grant[0] != '\0' &&
	    gw_grant_admit(&c->hold, c->client, who.grant, who.expires_at_ms) <
	        0) {
		gw_cdp_fail(c, 401, "the grant expired");
		return;
	}
	head = gw_cdp_http_request_head(
	    gw_buf_at(&c->in), &c->req, gw_cdp_authority, &n);
	gw_buf_add(&c->to_up, head, n);
	free(head);
	gw_buf_take(&c->in, c->req.headlen);
	if (!c->req.upgrade) {
		/* The body, and nothing after it: a second request on the
		 * connection would pass unchecked. */
		c->req_left = c->req.bodylen;
		n = c->in.len < c->req_left ? c->in.len : (size_t)c->req_left;
		gw_buf_add(&c->to_up, gw_buf_at(&c->in), n);
		c->req_left -= n;
		gw_buf_free(&c->in);
	}
	c->state = GW_CDP_ANSWER;
	gw_cdp_deadline(c, GW_CDP_ANSWER_US);
	gw_cdp_flow(c);
	if (gw_cdp_connect(c, &cause) < 0) {
		gw_cdp_fail(c, 502,
		    "cannot connect to Chromium's DevTools at %s: %s",
		    gw_cdp_authority, cause);
		free(cause);
	}
}

static void
gw_cdp_client_rx(struct gw_cdp *c, const void *in, size_t len)
{
	enum gw_cdp_http_result r;
	size_t n;

	switch (c->state) {
	case GW_CDP_HEAD:
		gw_buf_add(&c->in, in, len);
		r = gw_cdp_http_request_parse(
		    gw_buf_at(&c->in), c->in.len, &c->req);
		if (r == GW_CDP_HTTP_ERROR)
			gw_cdp_fail(c, c->req.status, "%s", c->req.err);
		else if (r == GW_CDP_HTTP_OK)
			gw_cdp_request(c);
		return;
	case GW_CDP_ANSWER:
	case GW_CDP_BODY:
		if (c->req.upgrade) {
			gw_buf_add(&c->in, in, len);
			return;
		}
		n = len < c->req_left ? len : (size_t)c->req_left;
		gw_buf_add(&c->to_up, in, n);
		c->req_left -= n;
		break;
	case GW_CDP_RELAY: gw_buf_add(&c->to_up, in, len); break;
	case GW_CDP_FLUSH:
	case GW_CDP_LINGER: return;
	}
	if (c->up != NULL && c->to_up.len != 0)
		lws_callback_on_writable(c->up);
	gw_cdp_flow(c);
}

/* Queues body bytes of an answer that passes as it is. */
static void
gw_cdp_body(struct gw_cdp *c, const void *p, size_t n)
{
	switch (c->resp.body) {
	case GW_CDP_HTTP_BODY_NONE: gw_cdp_finish(c); return;
	case GW_CDP_HTTP_BODY_LENGTH:
		if (n > c->resp_left)
			n = (size_t)c->resp_left;
		gw_buf_add(&c->to_client, p, n);
		c->resp_left -= n;
		if (c->resp_left == 0) {
			gw_cdp_finish(c);
			return;
		}
		break;
	case GW_CDP_HTTP_BODY_UNTIL_CLOSE:
		gw_buf_add(&c->to_client, p, n);
		break;
	}
	lws_callback_on_writable(c->client);
}

/* A /json listing is rewritten once it is all in. */
static void
gw_cdp_body_rewrite(struct gw_cdp *c)
{
	char *out;
	size_t n;

	if (c->ans.len < c->resp.headlen + c->resp.bodylen)
		return;
	out = gw_cdp_http_response_rewrite(
	    gw_buf_at(&c->ans), &c->resp, gw_cdp_authority, c->req.host, &n);
	gw_buf_add(&c->to_client, out, n);
	free(out);
	gw_buf_free(&c->ans);
	c->answered = 1;
	gw_cdp_finish(c);
}

/* Looks at what Chromium sent so far of its answer's head. */
static void
gw_cdp_answer(struct gw_cdp *c)
{
	enum gw_cdp_http_result r;
	char *head;
	size_t n;

	r = gw_cdp_http_response_parse(
	    gw_buf_at(&c->ans), c->ans.len, &c->req, &c->resp);
	if (r == GW_CDP_HTTP_MORE)
		return;
	if (r == GW_CDP_HTTP_ERROR) {
		gw_cdp_fail(c, 502, "Chromium's DevTools at %s answered: %s",
		    gw_cdp_authority, c->resp.err);
		return;
	}
	if (c->resp.relay) {
		gw_buf_add(&c->to_client, c->ans.data + c->ans.off, c->ans.len);
		gw_buf_free(&c->ans);
		c->answered = 1;
		c->state = GW_CDP_RELAY;
		lws_sul_cancel(&c->sul);
		gw_buf_add(&c->to_up, c->in.data + c->in.off, c->in.len);
		gw_buf_free(&c->in);
		if (c->to_up.len != 0)
			lws_callback_on_writable(c->up);
		lws_callback_on_writable(c->client);
		gw_cdp_flow(c);
		return;
	}
	c->state = GW_CDP_BODY;
	if (c->resp.rewrite) {
		gw_cdp_body_rewrite(c);
		return;
	}
	head = gw_cdp_http_response_head(gw_buf_at(&c->ans), &c->resp, &n);
	gw_buf_add(&c->to_client, head, n);
	free(head);
	c->answered = 1;
	c->resp_left = c->resp.bodylen;
	gw_cdp_body(c, c->ans.data + c->ans.off + c->resp.headlen,
	    c->ans.len - c->resp.headlen);
	gw_buf_free(&c->ans);
}

static void
gw_cdp_up_rx(struct gw_cdp *c, const void *in, size_t len)
{
	size_t want;

	switch (c->state) {
	case GW_CDP_ANSWER:
		gw_buf_add(&c->ans, in, len);
		gw_cdp_answer(c);
		break;
	case GW_CDP_BODY:
		if (!c->resp.rewrite) {
			gw_cdp_body(c, in, len);
			break;
		}
		want = c->resp.headlen + (size_t)c->resp.bodylen - c->ans.len;
		gw_buf_add(&c->ans, in, len < want ? len : want);
		gw_cdp_body_rewrite(c);
		break;
	case GW_CDP_RELAY:
		gw_buf_add(&c->to_client, in, len);
		lws_callback_on_writable(c->client);
		break;
	default: return;
	}
	gw_cdp_flow(c);
}

static int
gw_cdp_client_writeable(struct gw_cdp *c)
{
	if (gw_buf_send(c->client, &c->to_client) < 0)
		return -1;
	if (c->state == GW_CDP_FLUSH && c->to_client.len == 0) {
		/* Our side ends here; the client's may still hold bytes. */
		shutdown(lws_get_socket_fd(c->client), SHUT_WR);
		c->state = GW_CDP_LINGER;
		gw_cdp_deadline(c, GW_CDP_LINGER_US);
	}
	gw_cdp_flow(c);
	return 0;
}

static int
gw_cdp_up_writeable(struct gw_cdp *c)
{
	socklen_t el = sizeof c->connect_errno;
	int fd = lws_get_socket_fd(c->up);

	if (!c->connected) {
		if (getsockopt(
		        fd, SOL_SOCKET, SO_ERROR, &c->connect_errno, &el) != 0)
			c->connect_errno = errno;
		if (c->connect_errno != 0)
			return -1;
		c->connected = 1;
	}
	if (gw_buf_send(c->up, &c->to_up) < 0)
		return -1;
	gw_cdp_flow(c);
	return 0;
}

static void
gw_cdp_free(struct gw_cdp *c)
{
	lws_sul_cancel(&c->sul);
	gw_buf_free(&c->in);
	gw_buf_free(&c->ans);
	gw_buf_free(&c->to_up);
	gw_buf_free(&c->to_client);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		gw_cdp_first = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	else
		gw_cdp_last = c->prev;
	free(c);
	gw_cdp_count--;
}

/* Chromium's side closed: what it means depends on how far we were. */
static void
gw_cdp_up_closed(struct gw_cdp *c, struct lws *wsi)
{
	socklen_t el = sizeof c->connect_errno;
	int fd = lws_get_socket_fd(wsi);

	c->up = NULL;
	if (c->client == NULL) {
		gw_cdp_free(c);
		return;
	}
	if (c->up_closing)
		return;
	if (!c->connected && c->connect_errno == 0 && fd >= 0)
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &c->connect_errno, &el);
	switch (c->state) {
	case GW_CDP_ANSWER:
		if (!c->connected)
			gw_cdp_fail(c, 502,
			    "cannot connect to Chromium's DevTools at %s: %s",
			    gw_cdp_authority,
			    c->connect_errno != 0 ? strerror(c->connect_errno)
			                          : "connection closed");
		else
			gw_cdp_fail(c, 502,
			    "Chromium's DevTools at %s closed the connection "
			    "before its answer was whole",
			    gw_cdp_authority);
		break;
	case GW_CDP_BODY:
		if (c->resp.rewrite)
			gw_cdp_fail(c, 502,
			    "Chromium's DevTools at %s closed the connection "
			    "before its answer was whole",
			    gw_cdp_authority);
		else
			gw_cdp_finish(c);
		break;
	case GW_CDP_RELAY: gw_cdp_finish(c); break;
	default: break;
	}
}

static void
gw_cdp_client_closed(struct gw_cdp *c)
{
	c->client = NULL;
	gw_grant_release(&c->hold);
	lws_sul_cancel(&c->sul);
	if (c->up == NULL) {
		gw_cdp_free(c);
		return;
	}
	gw_cdp_drop_up(c);
}

static void
gw_cdp_deadline_cb(lws_sorted_usec_list_t *sul)
{
	struct gw_cdp *c = lws_container_of(sul, struct gw_cdp, sul);

	switch (c->state) {
	case GW_CDP_HEAD:
		gw_cdp_fail(c, 408,
		    "the request head did not arrive within %d s",
		    (int)(GW_CDP_HEAD_US / LWS_USEC_PER_SEC));
		break;
	case GW_CDP_ANSWER:
	case GW_CDP_BODY:
		gw_cdp_fail(c, 504,
		    "Chromium's DevTools at %s did not answer within %d s",
		    gw_cdp_authority,
		    (int)(GW_CDP_ANSWER_US / LWS_USEC_PER_SEC));
		break;
	case GW_CDP_RELAY: break;
	case GW_CDP_FLUSH:
	case GW_CDP_LINGER:
		gw_cdp_drop_up(c);
		gw_cdp_kill(c->client);
		break;
	}
}

/* Closes the oldest connection still sending its head for newcomer c,
 * or refuses c if there is none. */
static void
gw_cdp_make_room(struct gw_cdp *c)
{
	struct gw_cdp *old;

	for (old = gw_cdp_first; old != NULL && old != c; old = old->next)
		if (old->state == GW_CDP_HEAD)
			break;
	if (old != NULL && old != c && gw_cdp_count <= 2 * GW_CDP_MAX_CONNS) {
		gw_cdp_fail(old, 503,
		    "closed to make room: more than %d connections to the "
		    "relay",
		    GW_CDP_MAX_CONNS);
		return;
	}
	gw_cdp_fail(
	    c, 503, "more than %d connections to the relay", GW_CDP_MAX_CONNS);
}

/* A client accepted on the relay's port. */
static int
gw_cdp_accept(struct lws *wsi)
{
	struct gw_cdp *c;

	c = xcalloc(1, sizeof *c);
	c->client = wsi;
	c->state = GW_CDP_HEAD;
	gateway_peer(wsi, c->peer, sizeof c->peer);
	lws_set_opaque_user_data(wsi, c);
	gw_cdp_count++;
	c->prev = gw_cdp_last;
	if (gw_cdp_last != NULL)
		gw_cdp_last->next = c;
	else
		gw_cdp_first = c;
	gw_cdp_last = c;
	gw_cdp_deadline(c, GW_CDP_HEAD_US);
	if (gw_cdp_count > GW_CDP_MAX_CONNS)
		gw_cdp_make_room(c);
	return 0;
}

static int
gw_cdp_client_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct gw_cdp *c = lws_get_opaque_user_data(wsi);

	(void)user;
	switch (reason) {
	case LWS_CALLBACK_RAW_ADOPT: return gw_cdp_accept(wsi);
	case LWS_CALLBACK_RAW_RX:
		if (c == NULL)
			return -1;
		gw_cdp_client_rx(c, in, len);
		return 0;
	case LWS_CALLBACK_RAW_WRITEABLE:
		if (c == NULL)
			return -1;
		return gw_cdp_client_writeable(c);
	case LWS_CALLBACK_RAW_CLOSE:
		if (c != NULL) {
			lws_set_opaque_user_data(wsi, NULL);
			gw_cdp_client_closed(c);
		}
		return 0;
	default: return 0;
	}
}

static int
gw_cdp_up_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct gw_cdp *c = lws_get_opaque_user_data(wsi);

	(void)user;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX:
		if (c == NULL || c->client == NULL || c->up_closing)
			return -1;
		gw_cdp_up_rx(c, in, len);
		return 0;
	case LWS_CALLBACK_RAW_WRITEABLE:
		if (c == NULL || c->client == NULL || c->up_closing)
			return -1;
		return gw_cdp_up_writeable(c);
	case LWS_CALLBACK_RAW_CLOSE:
		if (c != NULL) {
			lws_set_opaque_user_data(wsi, NULL);
			gw_cdp_up_closed(c, wsi);
		}
		return 0;
	default: return 0;
	}
}

void
gw_cdp_listen(void)
{
	const struct gateway_addr *a = &gateway.cdp_listen;

	if (a->port == 0)
		return;
	snprintf(gw_cdp_authority, sizeof gw_cdp_authority,
	    gateway.cdp.v6 ? "[%s]:%d" : "%s:%d", gateway.cdp.host,
	    gateway.cdp.port);
	gw_cdp_vhost = gw_sock_listen_raw(a, "CDP relay", gw_cdp_protocols);
	log_info("CDP relay listening on %s%s%s:%d, to %s", a->v6 ? "[" : "",
	    a->host, a->v6 ? "]" : "", lws_get_vhost_listen_port(gw_cdp_vhost),
	    gw_cdp_authority);
}
