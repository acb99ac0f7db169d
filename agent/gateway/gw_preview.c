/* gw_preview: the preview proxy's connections. Each client gets at most
 * one connection to an app at a time; its requests go there in order,
 * each head rewritten, each body passed on as it comes, and the app's
 * answers come back as they are, read only for where each ends, so that
 * the proxy knows when the app's connection is idle (a request for
 * another grant, or an answer of the proxy's own, waits for that). Owns
 * the proxy's vhost and every struct gw_preview. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway.h"
#include "gw_buf.h"
#include "gw_check.h"
#include "gw_grant.h"
#include "gw_preview.h"
#include "gw_preview_chunk.h"
#include "gw_preview_http.h"
#include "gw_refusal.h"
#include "gw_sock.h"
#include "log.h"
#include "xmalloc.h"

/* Reading a side stops while this much waits for the other, and goes on
 * once it drained to the low mark: what one connection holds is bounded
 * whatever the bodies' sizes. */
#define GW_PREVIEW_HIGH_WATER (256u * 1024)
#define GW_PREVIEW_LOW_WATER (64u * 1024)
/* Requests sent to the app whose answers have not ended yet. */
#define GW_PREVIEW_PIPELINE 16
/* Connections served at once; past it a newcomer gets a 503. */
#define GW_PREVIEW_MAX_CONNS 256
/* A connection silent this long (outside a relayed upgrade) closes. */
#define GW_PREVIEW_IDLE_S 120

enum gw_preview_state {
	GW_PREVIEW_HEAD,    /* reading the next request head */
	GW_PREVIEW_CONNECT, /* a request waits for the app's connection */
	GW_PREVIEW_BODY,    /* a request's body goes to the app */
	GW_PREVIEW_SKIP,    /* a refused request's body is dropped */
	GW_PREVIEW_RELAY,   /* an upgrade succeeded: bytes both ways */
	GW_PREVIEW_FLUSH,   /* the client gets what is left, then closes */
};

/* How far the app's current answer has come. */
enum gw_preview_answer {
	GW_PREVIEW_ANSWER_HEAD,
	GW_PREVIEW_ANSWER_BODY,
};

/*
 * One client of the proxy and its connection to an app. Allocated when
 * lws accepts the client, freed once both wsi are closed; each wsi's
 * opaque user data points here until its close. authz is a secret,
 * wiped with the struct.
 */
struct gw_preview {
	struct lws *client;
	struct lws *up; /* NULL while there is no app connection */
	enum gw_preview_state state;
	int connected;     /* up's connect() completed */
	int up_closing;    /* we close up: its close is no news */
	int client_paused; /* rx flow control is on for the client */
	int up_paused;
	int upgrading; /* the last request asked for an upgrade */
	int dying;     /* its grant ended: the client is being killed */
	int shut;      /* FLUSH: all is sent, our side is shut */
	/* The request being read or passed on. */
	struct gw_preview_request req;
	uint64_t req_left;
	struct gw_preview_chunk req_chunk;
	/* The grant and app the connection is with. */
	enum gw_preview_door door;
	char key[GW_PREVIEW_KEY_MAX + 1];
	uint16_t port;
	int prefix; /* the key is the grant's id, no credential */
	char authz[GW_CHECK_AUTHZ_MAX];
	int has_authz;
	/* The answers the app owes, oldest first: HEAD, upgrade flags. */
	unsigned char owed[GW_PREVIEW_PIPELINE];
	unsigned owed_first, owed_n;
	enum gw_preview_answer answer;
	struct gw_preview_response resp;
	uint64_t resp_left;
	struct gw_preview_chunk resp_chunk;
	struct gw_buf in;  /* the client's bytes not yet used */
	struct gw_buf ans; /* the app's answer head so far */
	struct gw_buf to_up;
	struct gw_buf to_client;
	struct gw_grant_hold hold;
	char peer[GATEWAY_PEER_MAX];
	char peer_ip[GATEWAY_PEER_MAX];
};

#define GW_PREVIEW_OWED_HEAD 1
#define GW_PREVIEW_OWED_UPGRADE 2

static int gw_preview_client_cb(struct lws *wsi,
    enum lws_callback_reasons reason, void *user, void *in, size_t len);
static int gw_preview_up_cb(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len);

static const struct lws_protocols gw_preview_protocols[] = {
    {"berth-preview", gw_preview_client_cb, 0, 65536, 0, NULL, 0},
    {"berth-preview-up", gw_preview_up_cb, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static struct lws_vhost *gw_preview_vhost;
static unsigned gw_preview_count;

static void gw_preview_pump(struct gw_preview *c);

static void
gw_preview_kill(struct lws *wsi)
{
	if (wsi != NULL && !gateway.stopping)
		lws_set_timeout(
		    wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static void
gw_preview_drop_up(struct gw_preview *c)
{
	if (c->up != NULL && !c->up_closing) {
		c->up_closing = 1;
		gw_preview_kill(c->up);
	}
}

/* The app's connection, closing, is none of c's any more. */
static void
gw_preview_forget_up(struct gw_preview *c)
{
	if (c->up == NULL)
		return;
	gw_preview_drop_up(c);
	lws_set_opaque_user_data(c->up, NULL);
	c->up = NULL;
	c->connected = 0;
	c->up_closing = 0;
}

/* The client's deadline, unless its grant's end already killed it. */
static void
gw_preview_timeout(struct gw_preview *c, enum pending_timeout why, int secs)
{
	if (!c->dying && !gateway.stopping)
		lws_set_timeout(c->client, why, secs);
}

static int
gw_preview_room(const struct gw_buf *b, size_t extra, int paused)
{
	size_t n = b->len + extra;

	return paused ? n <= GW_PREVIEW_LOW_WATER : n < GW_PREVIEW_HIGH_WATER;
}

static void
gw_preview_flow_set(struct lws *wsi, int *paused, int want)
{
	if (wsi == NULL || want == !*paused)
		return;
	*paused = !want;
	lws_rx_flow_control(wsi, want);
}

/* Each side is read while what it feeds has room. */
static void
gw_preview_flow(struct gw_preview *c)
{
	int client = c->state != GW_PREVIEW_CONNECT &&
	    gw_preview_room(&c->to_up, c->in.len, c->client_paused);
	int up =
	    c->connected && gw_preview_room(&c->to_client, 0, c->up_paused);

	if (c->state == GW_PREVIEW_FLUSH)
		client = 1;
	gw_preview_flow_set(c->client, &c->client_paused, client);
	if (c->up != NULL && !c->up_closing)
		gw_preview_flow_set(c->up, &c->up_paused, up);
}

/* What is queued goes out, and the client closes after it. */
static void
gw_preview_finish(struct gw_preview *c)
{
	gw_preview_drop_up(c);
	c->state = GW_PREVIEW_FLUSH;
	gw_buf_free(&c->in);
	gw_preview_timeout(c, PENDING_TIMEOUT_USER_OK, 10);
	lws_callback_on_writable(c->client);
}

static void
gw_preview_to_client(struct gw_preview *c, const void *p, size_t n)
{
	gw_buf_add(&c->to_client, p, n);
	lws_callback_on_writable(c->client);
}

static void
gw_preview_to_up(struct gw_preview *c, const void *p, size_t n)
{
	gw_buf_add(&c->to_up, p, n);
	if (c->up != NULL && c->connected)
		lws_callback_on_writable(c->up);
}

/* The current request's body, its head gone from in, is next: to the
 * app (state), or dropped. */
static void
gw_preview_body_next(struct gw_preview *c, enum gw_preview_state state)
{
	c->req_left = c->req.bodylen;
	gw_preview_chunk_init(&c->req_chunk);
	c->state =
	    c->req.body != GW_PREVIEW_BODY_NONE ? state : GW_PREVIEW_HEAD;
}

/*
 * An answer of the proxy's own to the current request, which the app
 * never saw: the app owes nothing now, so it goes out in order. With
 * close the connection ends after it.
 */
static void
gw_preview_answer(
    struct gw_preview *c, unsigned status, const char *msg, int close)
{
	char *out;
	size_t n;

	if (status != 401)
		log_info("preview: %u to %s: %s", status, c->peer, msg);
	out = gw_preview_http_page(status, msg, close, &n);
	gw_preview_to_client(c, out, n);
	free(out);
	if (close)
		gw_preview_finish(c);
}

/* The same, for a request whose head is still in in: it goes, and its
 * body after it. */
static void
gw_preview_refuse(struct gw_preview *c, unsigned status, const char *msg)
{
	gw_preview_answer(c, status, msg, 0);
	gw_buf_take(&c->in, c->req.headlen);
	gw_preview_body_next(c, GW_PREVIEW_SKIP);
}

/* The client's address without its port, for X-Forwarded-For. */
static void
gw_preview_peer_ip(struct gw_preview *c)
{
	char *colon;

	snprintf(c->peer_ip, sizeof c->peer_ip, "%s",
	    c->peer[0] == '[' ? c->peer + 1 : c->peer);
	colon = strrchr(c->peer_ip, c->peer[0] == '[' ? ']' : ':');
	if (colon != NULL)
		*colon = '\0';
}

/* Opens a connection to the app on 127.0.0.1:port, in the background. */
static int
gw_preview_connect(struct gw_preview *c, char **cause)
{
	struct gateway_addr a = {"127.0.0.1", 0, c->port, NULL};
	struct lws *wsi;
	int fd;

	if ((fd = gw_sock_connect_tcp(&a, cause)) < 0)
		return -1;
	wsi = gw_sock_adopt(gw_preview_vhost, fd, "berth-preview-up", c, cause);
	if (wsi == NULL)
		return -1;
	c->up = wsi;
	c->connected = 0;
	c->up_closing = 0;
	c->answer = GW_PREVIEW_ANSWER_HEAD;
	c->up_paused = 1;
	lws_rx_flow_control(wsi, 0);
	lws_callback_on_writable(wsi);
	return 0;
}

static void
gw_preview_no_app(struct gw_preview *c, const char *why)
{
	char msg[160];

	c->to_up.len = c->to_up.off = 0;
	c->owed_n = 0;
	c->upgrading = 0;
	snprintf(msg, sizeof msg, "nothing listens on port %u yet (%s)",
	    (unsigned)c->port, why);
	gw_preview_answer(c, 502, msg, 0);
	gw_preview_body_next(c, GW_PREVIEW_SKIP);
}

/* The request's head goes to the app, rewritten. */
static void
gw_preview_forward(struct gw_preview *c)
{
	struct gw_preview_forward fw = {
	    c->peer_ip, c->has_authz ? c->authz : NULL, c->prefix};
	char *head;
	size_t n;

	head = gw_preview_http_forward(gw_buf_at(&c->in), &c->req, &fw, &n);
	gw_preview_to_up(c, head, n);
	free(head);
	gw_buf_take(&c->in, c->req.headlen);
	c->owed[(c->owed_first + c->owed_n++) % GW_PREVIEW_PIPELINE] =
	    (unsigned char)((c->req.head ? GW_PREVIEW_OWED_HEAD : 0) |
	        (c->req.upgrade ? GW_PREVIEW_OWED_UPGRADE : 0));
	c->upgrading = c->req.upgrade;
	gw_preview_body_next(c, GW_PREVIEW_BODY);
}

/* A private preview's link: its code for the token, in a cookie. */
static void
gw_preview_redeem(struct gw_preview *c)
{
	char token[GW_PREVIEW_KEY_MAX + 1], *out;
	enum gw_check_result r;
	size_t n;

	r = gw_check_redeem(c->req.key, c->req.code, token, sizeof token);
	if (r == GW_CHECK_UNAVAILABLE) {
		gw_preview_refuse(c, 503, "berthd cannot check the link now");
		return;
	}
	if (r != GW_CHECK_OK) {
		gw_refusal_note(c->peer, "a preview link", "invalid");
		gw_preview_refuse(c, 401,
		    "this link was used already, or it ended: ask for a new "
		    "one");
		return;
	}
	out = gw_preview_http_redirect(&c->req, token, &n);
	explicit_bzero(token, sizeof token);
	gw_buf_take(&c->in, c->req.headlen);
	gw_preview_to_client(c, out, n);
	explicit_bzero(out, n);
	free(out);
	gw_preview_body_next(c, GW_PREVIEW_SKIP);
}

/* Whether the grant the head names admits it; the connection takes up
 * its grant and app if so. */
static int
gw_preview_admit(struct gw_preview *c)
{
	struct gw_check_answer who;
	const char *door = c->req.door == GW_PREVIEW_DOOR_RUNTIME
	    ? GW_CHECK_RUNTIME
	    : GW_CHECK_PREVIEW;
	enum gw_check_result r;

	r = gw_check_grant(door, c->req.cookie, strlen(c->req.cookie),
	    c->req.key, c->peer, &who);
	if (r == GW_CHECK_UNAVAILABLE) {
		gw_preview_refuse(c, 503, "berthd cannot check the grant now");
		return -1;
	}
	if (r != GW_CHECK_OK || who.grant[0] == '\0' ||
	    (c->req.by_host && who.port != c->req.host_port) ||
	    gw_grant_admit(&c->hold, c->client, who.grant, who.expires_at_ms) <
	        0) {
		explicit_bzero(&who, sizeof who);
		gw_refusal_note(c->peer, "a preview request", "invalid");
		gw_preview_refuse(c, 401,
		    "this preview needs a valid link: open the link you were "
		    "given (a private one works once), or ask for a new one");
		return -1;
	}
	if (c->up != NULL && c->port != who.port)
		gw_preview_forget_up(c);
	c->door = c->req.door;
	c->port = who.port;
	c->prefix = strcmp(c->req.key, who.grant) == 0;
	snprintf(c->key, sizeof c->key, "%s", c->req.key);
	c->has_authz = c->door == GW_PREVIEW_DOOR_RUNTIME;
	memcpy(c->authz, who.authorization, sizeof c->authz);
	explicit_bzero(&who, sizeof who);
	if (c->door == GW_PREVIEW_DOOR_RUNTIME && c->port == 0) {
		gw_preview_refuse(
		    c, 502, "the runtime's server is not running");
		return -1;
	}
	return 0;
}

/* A whole request head: on to the app, or an answer of our own. */
static void
gw_preview_request(struct gw_preview *c)
{
	char *cause;

	if (c->req.code[0] != '\0') {
		gw_preview_redeem(c);
		return;
	}
	if (gw_preview_admit(c) < 0)
		return;
	gw_preview_forward(c);
	if (c->up != NULL && !c->up_closing)
		return;
	gw_preview_forget_up(c);
	if (gw_preview_connect(c, &cause) < 0) {
		gw_preview_no_app(c, cause);
		free(cause);
		return;
	}
	c->state = GW_PREVIEW_CONNECT;
}

/* Whether the head just read may pass without asking berthd: the same
 * grant as the last, its app's connection still up. */
static int
gw_preview_same(const struct gw_preview *c)
{
	return c->up != NULL && !c->up_closing && c->req.code[0] == '\0' &&
	    c->req.door == c->door && strcmp(c->req.key, c->key) == 0 &&
	    c->req.cookie_bad == 0;
}

/* Reads the next head; 0 to go on pumping, -1 to wait for more. */
static int
gw_preview_head(struct gw_preview *c)
{
	enum gw_cdp_http_result r;

	if (c->upgrading || c->owed_n == GW_PREVIEW_PIPELINE || c->in.len == 0)
		return -1;
	r = gw_preview_http_request_parse(
	    gw_buf_at(&c->in), c->in.len, gateway.preview_domain, &c->req);
	if (r == GW_CDP_HTTP_MORE)
		return -1;
	if (r == GW_CDP_HTTP_ERROR) {
		/* An answer of ours waits for the app's to end first. */
		if (c->owed_n != 0)
			return -1;
		gw_preview_answer(c, c->req.status, c->req.err, 1);
		return -1;
	}
	if (gw_preview_same(c)) {
		gw_preview_forward(c);
		return 0;
	}
	if (c->owed_n != 0)
		return -1;
	gw_preview_request(c);
	return c->state == GW_PREVIEW_CONNECT || c->state == GW_PREVIEW_FLUSH
	    ? -1
	    : 0;
}

/* Moves the current request's body from in (to the app, or away);
 * 0 to go on pumping, -1 to wait. */
static int
gw_preview_body(struct gw_preview *c)
{
	size_t n = c->in.len;
	long long k;
	int done = 0;

	if (n == 0)
		return -1;
	if (c->state == GW_PREVIEW_BODY &&
	    c->to_up.len >= GW_PREVIEW_HIGH_WATER)
		return -1;
	if (c->req.body == GW_PREVIEW_BODY_LENGTH) {
		if (n > c->req_left)
			n = (size_t)c->req_left;
		c->req_left -= n;
		done = c->req_left == 0;
	} else {
		k = gw_preview_chunk_feed(
		    &c->req_chunk, gw_buf_at(&c->in), n, &done);
		if (k < 0) {
			log_info("preview: dropped %s: a malformed chunked "
			         "body: %s",
			    c->peer, c->req_chunk.err);
			gw_preview_finish(c);
			return -1;
		}
		n = (size_t)k;
	}
	if (c->state == GW_PREVIEW_BODY)
		gw_preview_to_up(c, gw_buf_at(&c->in), n);
	gw_buf_take(&c->in, n);
	if (done)
		c->state = GW_PREVIEW_HEAD;
	return 0;
}

/* Uses what the client sent as far as the state allows. */
static void
gw_preview_pump(struct gw_preview *c)
{
	int go = 1;

	while (go) {
		switch (c->state) {
		case GW_PREVIEW_HEAD: go = gw_preview_head(c) == 0; break;
		case GW_PREVIEW_BODY:
		case GW_PREVIEW_SKIP: go = gw_preview_body(c) == 0; break;
		case GW_PREVIEW_RELAY:
			gw_preview_to_up(c, gw_buf_at(&c->in), c->in.len);
			gw_buf_take(&c->in, c->in.len);
			go = 0;
			break;
		default: go = 0; break;
		}
	}
	gw_preview_flow(c);
}

/* The answer the app owed first has ended. */
static void
gw_preview_answered(struct gw_preview *c)
{
	c->owed_first = (c->owed_first + 1) % GW_PREVIEW_PIPELINE;
	c->owed_n--;
	c->answer = GW_PREVIEW_ANSWER_HEAD;
	if (c->owed_n == 0)
		c->upgrading = 0;
	/* The app said it closes now: the next request waits for a new
	 * connection rather than go to one about to close under it, and
	 * requests already sent on it will not be answered. */
	if (c->resp.last && c->up != NULL && c->state != GW_PREVIEW_FLUSH) {
		if (c->owed_n != 0)
			gw_preview_finish(c);
		else
			gw_preview_forget_up(c);
	}
}

/* The app's answer head is whole: on its way, and its body after. */
static size_t
gw_preview_answer_head(struct gw_preview *c)
{
	unsigned char owed = c->owed[c->owed_first];
	size_t headlen = c->resp.headlen;

	gw_preview_to_client(c, gw_buf_at(&c->ans), headlen);
	gw_buf_free(&c->ans);
	if (c->resp.relay) {
		c->state = GW_PREVIEW_RELAY;
		c->upgrading = 0;
		gw_preview_timeout(c, NO_PENDING_TIMEOUT, 0);
		return headlen;
	}
	if (c->resp.interim)
		return headlen;
	if (owed & GW_PREVIEW_OWED_UPGRADE)
		c->upgrading = 0;
	c->resp_left = c->resp.bodylen;
	gw_preview_chunk_init(&c->resp_chunk);
	if (c->resp.body == GW_PREVIEW_BODY_NONE)
		gw_preview_answered(c);
	else
		c->answer = GW_PREVIEW_ANSWER_BODY;
	return headlen;
}

/* Reads the app's answer head from ans; how many of the n bytes just
 * added it took, or -1 once the connection is done for. */
static long long
gw_preview_answer_read(struct gw_preview *c, size_t n)
{
	unsigned char owed;
	size_t before = c->ans.len - n;
	enum gw_cdp_http_result r;

	if (c->owed_n == 0) {
		log_info("preview: the app on port %u sent bytes unasked",
		    (unsigned)c->port);
		gw_preview_finish(c);
		return -1;
	}
	owed = c->owed[c->owed_first];
	r = gw_preview_http_response_parse(gw_buf_at(&c->ans), c->ans.len,
	    owed & GW_PREVIEW_OWED_HEAD, owed & GW_PREVIEW_OWED_UPGRADE,
	    &c->resp);
	if (r == GW_CDP_HTTP_MORE)
		return (long long)n;
	if (r == GW_CDP_HTTP_ERROR) {
		log_info("preview: the app on port %u answered: %s",
		    (unsigned)c->port, c->resp.err);
		gw_preview_finish(c);
		return -1;
	}
	return (long long)(gw_preview_answer_head(c) - before);
}

/* Passes body bytes of the app's answer; how many belonged to it. */
static long long
gw_preview_answer_body(struct gw_preview *c, const char *p, size_t n)
{
	long long k;
	int done = 0;

	switch (c->resp.body) {
	case GW_PREVIEW_BODY_LENGTH:
		if (n > c->resp_left)
			n = (size_t)c->resp_left;
		c->resp_left -= n;
		done = c->resp_left == 0;
		break;
	case GW_PREVIEW_BODY_CHUNKED:
		k = gw_preview_chunk_feed(&c->resp_chunk, p, n, &done);
		if (k < 0) {
			log_info("preview: the app on port %u sent a "
			         "malformed chunked body: %s",
			    (unsigned)c->port, c->resp_chunk.err);
			gw_preview_finish(c);
			return -1;
		}
		n = (size_t)k;
		break;
	default: break;
	}
	gw_preview_to_client(c, p, n);
	if (done)
		gw_preview_answered(c);
	return (long long)n;
}

static void
gw_preview_up_rx(struct gw_preview *c, const char *p, size_t len)
{
	long long k;

	if (c->state != GW_PREVIEW_RELAY && c->state != GW_PREVIEW_FLUSH)
		gw_preview_timeout(
		    c, PENDING_TIMEOUT_USER_OK, GW_PREVIEW_IDLE_S);
	while (len != 0 && c->state != GW_PREVIEW_FLUSH) {
		if (c->state == GW_PREVIEW_RELAY) {
			gw_preview_to_client(c, p, len);
			break;
		}
		if (c->answer == GW_PREVIEW_ANSWER_HEAD) {
			gw_buf_add(&c->ans, p, len);
			k = gw_preview_answer_read(c, len);
		} else
			k = gw_preview_answer_body(c, p, len);
		if (k < 0)
			return;
		p += k;
		len -= (size_t)k;
	}
	gw_preview_pump(c);
}

static void
gw_preview_client_rx(struct gw_preview *c, const void *in, size_t len)
{
	if (c->state == GW_PREVIEW_FLUSH)
		return;
	if (c->state != GW_PREVIEW_RELAY)
		gw_preview_timeout(
		    c, PENDING_TIMEOUT_USER_OK, GW_PREVIEW_IDLE_S);
	gw_buf_add(&c->in, in, len);
	gw_preview_pump(c);
}

static int
gw_preview_client_writeable(struct gw_preview *c)
{
	if (gw_buf_send(c->client, &c->to_client) < 0)
		return -1;
	if (c->state == GW_PREVIEW_FLUSH && c->to_client.len == 0 && !c->shut) {
		/* What the client still sends is read and dropped until it
		 * closes (or 2 s), so that closing with unread bytes does not
		 * reset the connection under the answer. */
		shutdown(lws_get_socket_fd(c->client), SHUT_WR);
		c->shut = 1;
		gw_preview_timeout(c, PENDING_TIMEOUT_USER_OK, 2);
	}
	gw_preview_flow(c);
	return 0;
}

static int
gw_preview_up_writeable(struct gw_preview *c)
{
	socklen_t el = sizeof(int);
	int fd = lws_get_socket_fd(c->up), err = 0;

	if (!c->connected) {
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
			err = errno;
		if (err != 0) {
			gw_preview_forget_up(c);
			gw_preview_no_app(c, strerror(err));
			gw_preview_pump(c);
			return 0;
		}
		c->connected = 1;
		if (c->state == GW_PREVIEW_CONNECT)
			c->state = c->req.body != GW_PREVIEW_BODY_NONE
			    ? GW_PREVIEW_BODY
			    : GW_PREVIEW_HEAD;
		gw_preview_pump(c);
	}
	if (gw_buf_send(c->up, &c->to_up) < 0)
		return -1;
	gw_preview_pump(c);
	return 0;
}

static void
gw_preview_free(struct gw_preview *c)
{
	gw_buf_free(&c->in);
	gw_buf_free(&c->ans);
	gw_buf_free(&c->to_up);
	gw_buf_free(&c->to_client);
	explicit_bzero(c, sizeof *c);
	free(c);
	gw_preview_count--;
}

/* The app's side closed: between answers the client stays and the next
 * request connects anew; within one, the client's connection ends. */
static void
gw_preview_up_closed(struct gw_preview *c)
{
	int closing = c->up_closing;

	c->up = NULL;
	c->up_closing = 0;
	if (c->client == NULL) {
		gw_preview_free(c);
		return;
	}
	if (closing || c->state == GW_PREVIEW_FLUSH)
		return;
	if (!c->connected && c->state == GW_PREVIEW_CONNECT) {
		gw_preview_no_app(c, "connection refused");
		gw_preview_pump(c);
		return;
	}
	c->connected = 0;
	if (c->answer == GW_PREVIEW_ANSWER_BODY &&
	    c->resp.body == GW_PREVIEW_BODY_CLOSE)
		gw_preview_answered(c);
	if (c->state == GW_PREVIEW_RELAY || c->owed_n != 0 || c->ans.len != 0 ||
	    c->state == GW_PREVIEW_BODY) {
		gw_preview_finish(c);
		return;
	}
	c->to_up.len = c->to_up.off = 0;
	gw_preview_pump(c);
}

static void
gw_preview_client_closed(struct gw_preview *c)
{
	c->client = NULL;
	gw_grant_release(&c->hold);
	if (c->up == NULL) {
		gw_preview_free(c);
		return;
	}
	gw_preview_drop_up(c);
}

/* The grant ended: the client goes now, and the app's connection with
 * it. */
static void
gw_preview_cut(struct gw_grant_hold *h, const char *why)
{
	struct gw_preview *c = lws_container_of(h, struct gw_preview, hold);

	(void)why;
	gw_grant_release(h);
	gw_preview_drop_up(c);
	gw_preview_kill(c->client);
	c->dying = 1;
}

static int
gw_preview_accept(struct lws *wsi)
{
	struct gw_preview *c = xcalloc(1, sizeof *c);

	c->client = wsi;
	c->state = GW_PREVIEW_HEAD;
	c->hold.cut = gw_preview_cut;
	gateway_peer(wsi, c->peer, sizeof c->peer);
	gw_preview_peer_ip(c);
	lws_set_opaque_user_data(wsi, c);
	gw_preview_count++;
	gw_preview_timeout(c, PENDING_TIMEOUT_USER_OK, GW_PREVIEW_IDLE_S);
	if (gw_preview_count > GW_PREVIEW_MAX_CONNS)
		gw_preview_answer(
		    c, 503, "too many connections to the preview proxy", 1);
	return 0;
}

static int
gw_preview_client_cb(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len)
{
	struct gw_preview *c = lws_get_opaque_user_data(wsi);

	(void)user;
	switch (reason) {
	case LWS_CALLBACK_RAW_ADOPT: return gw_preview_accept(wsi);
	case LWS_CALLBACK_RAW_RX:
		if (c == NULL)
			return -1;
		gw_preview_client_rx(c, in, len);
		return 0;
	case LWS_CALLBACK_RAW_WRITEABLE:
		if (c == NULL)
			return -1;
		return gw_preview_client_writeable(c);
	case LWS_CALLBACK_RAW_CLOSE:
		if (c != NULL) {
			lws_set_opaque_user_data(wsi, NULL);
			gw_preview_client_closed(c);
		}
		return 0;
	default: return 0;
	}
}

static int
gw_preview_up_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct gw_preview *c = lws_get_opaque_user_data(wsi);

	(void)user;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX:
		if (c == NULL || c->client == NULL || c->up_closing)
			return -1;
		gw_preview_up_rx(c, in, len);
		return 0;
	case LWS_CALLBACK_RAW_WRITEABLE:
		if (c == NULL || c->client == NULL || c->up_closing)
			return -1;
		return gw_preview_up_writeable(c);
	case LWS_CALLBACK_RAW_CLOSE:
		if (c != NULL) {
			lws_set_opaque_user_data(wsi, NULL);
			gw_preview_up_closed(c);
		}
		return 0;
	default: return 0;
	}
}

void
gw_preview_listen(void)
{
	const struct gateway_addr *a = &gateway.preview_listen;

	if (a->port == 0)
		return;
	gw_preview_vhost =
	    gw_sock_listen_raw(a, "preview proxy", gw_preview_protocols);
	log_info("preview proxy listening on %s%s%s:%d%s%s", a->v6 ? "[" : "",
	    a->host, a->v6 ? "]" : "",
	    lws_get_vhost_listen_port(gw_preview_vhost),
	    gateway.preview_domain != NULL ? ", hosts *." : "",
	    gateway.preview_domain != NULL ? gateway.preview_domain : "");
}
