/* gw_cdpws: the CDP WebSocket relay between a client of /v1/cdp and an
 * lws WebSocket client of Chromium's DevTools. Owns every struct
 * gw_cdpws and the message pieces waiting in it for either side. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "gateway.h"
#include "gw_cdpws.h"
#include "gw_grant.h"
#include "gw_http.h"
#include "log.h"
#include "xmalloc.h"

/* How long a closing side may take to accept its close frame. */
#define GW_CDPWS_CLOSE_GRACE_S 5
/* RFC 6455 leaves 123 bytes of a close frame for the reason. */
#define GW_CDPWS_REASON_MAX 123
/* The largest /json/version answer read; Chromium's is under 1 KiB. */
#define GW_CDPWS_VERSION_MAX (64u * 1024)

/* One piece of a message on its way: its bytes, and the lws_write flags
 * that keep it in its place (first, continuation, last). Allocated on
 * receipt, freed once written or when its side goes. */
struct gw_cdpws_piece {
	STAILQ_ENTRY(gw_cdpws_piece) entry;
	size_t len;
	int flags;
	unsigned char buf[]; /* LWS_PRE headroom, then len bytes */
};

/* One end of the relay: a WebSocket and what waits to be written to it. */
struct gw_cdpws_side {
	const char *name; /* for logs and close reasons */
	struct lws *wsi;  /* NULL once lws closed it */
	STAILQ_HEAD(, gw_cdpws_piece) out;
	size_t outbytes;
	int in_message; /* a message from this side is half relayed */
	int paused;     /* this side is not read while the other catches up */
	/* The close to send this side once out has drained; 0 if none. */
	int close_code;
	char close_reason[GW_CDPWS_REASON_MAX + 1];
};

/* Where the connection to Chromium is. */
enum gw_cdpws_state {
	GW_CDPWS_FETCH,   /* GET /json/version, for the browser target */
	GW_CDPWS_UPGRADE, /* the WebSocket client's upgrade */
	GW_CDPWS_UP,      /* the upgrade completed */
	GW_CDPWS_DOWN,    /* it ended, or never came */
};

/*
 * One relayed connection. Allocated by gw_cdpws_open. The client's wsi
 * and Chromium's WebSocket each clear their side's pointer when lws
 * closes them, and whichever goes last frees the struct. The fetch of
 * /json/version holds no claim on it: when the fetch ends, or the client
 * goes while it runs (and it is killed), it is cut loose, its opaque user
 * data cleared, so that its last callbacks find nothing. The wsi of the
 * fetch or of the WebSocket client is kept once lws_client_connect_via_info
 * returns, unless state says it already ended during that call.
 */
struct gw_cdpws {
	enum gw_http_relay relay; /* first: see gw_http.h */
	struct gw_cdpws_side client;
	struct gw_cdpws_side chrome;
	enum gw_cdpws_state state;
	struct lws *fetch; /* the /json/version client while it runs */
	char *body;        /* its answer's body so far; owned here */
	size_t bodylen;
	char peer[GATEWAY_PEER_MAX];
	char path[GW_CDPWS_PATH_MAX + 1];
	struct gw_grant_hold hold; /* the grant it was opened for, if any */
};

int
gw_cdpws_path_ok(const char *path)
{
	const char *p;

	if (strncmp(path, "/devtools/", 10) != 0 || path[10] == '\0' ||
	    strlen(path) > GW_CDPWS_PATH_MAX || strstr(path, "..") != NULL ||
	    strstr(path, "//") != NULL)
		return 0;
	for (p = path; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		        (*p >= '0' && *p <= '9') || strchr("/._-", *p) != NULL))
			return 0;
	}
	return 1;
}

static struct gw_cdpws_side *
gw_cdpws_other(struct gw_cdpws *c, struct gw_cdpws_side *s)
{
	return s == &c->client ? &c->chrome : &c->client;
}

static void
gw_cdpws_side_clear(struct gw_cdpws_side *s)
{
	struct gw_cdpws_piece *p;

	while ((p = STAILQ_FIRST(&s->out)) != NULL) {
		STAILQ_REMOVE_HEAD(&s->out, entry);
		free(p);
	}
	s->outbytes = 0;
}

/* Whether side s can be asked for a writeable callback: it is there, and
 * (for Chromium) its upgrade is done. */
static int
gw_cdpws_side_ready(struct gw_cdpws *c, struct gw_cdpws_side *s)
{
	return s->wsi != NULL && (s != &c->chrome || c->state == GW_CDPWS_UP);
}

/* Whether side s is gone for good, so that what is sent to it is
 * dropped. Chromium's side is not there yet during the fetch of
 * /json/version and the start of the connect, and gathers what the
 * client sends meanwhile. */
static int
gw_cdpws_side_gone(struct gw_cdpws *c, struct gw_cdpws_side *s)
{
	if (s == &c->chrome)
		return c->state == GW_CDPWS_DOWN;
	return s->wsi == NULL;
}

/* "ADDR:PORT" of Chromium's DevTools: the Host header it is sent, since
 * Chromium answers only a Host that is an address or localhost. */
static void
gw_cdpws_authority(char *buf, size_t len)
{
	snprintf(buf, len, gateway.cdp.v6 ? "[%s]:%d" : "%s:%d",
	    gateway.cdp.host, gateway.cdp.port);
}

static void gw_cdpws_close(struct gw_cdpws *c, struct gw_cdpws_side *s,
    int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Arranges for side s to be closed with code and reason once what waits
 * for it is written. The first close asked for wins. */
static void
gw_cdpws_close(
    struct gw_cdpws *c, struct gw_cdpws_side *s, int code, const char *fmt, ...)
{
	va_list ap;

	if (s->wsi == NULL || s->close_code != 0)
		return;
	s->close_code = code;
	va_start(ap, fmt);
	vsnprintf(s->close_reason, sizeof s->close_reason, fmt, ap);
	va_end(ap);
	if (gateway.stopping)
		return;
	if (!gw_cdpws_side_ready(c, s)) {
		/* Chromium's upgrade is not done: nothing to say to it. */
		lws_set_timeout(
		    s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
		return;
	}
	if (!s->paused) {
		lws_rx_flow_control(s->wsi, 0);
		s->paused = 1;
	}
	lws_callback_on_writable(s->wsi);
	/* A peer that never reads never becomes writable. */
	lws_set_timeout(
	    s->wsi, PENDING_TIMEOUT_USER_OK, GW_CDPWS_CLOSE_GRACE_S);
}

/*
 * A piece of a message from side `from`, queued for the other side with
 * the flags that put it in its place: lws hands a message over in pieces
 * (fragments, and parts of a frame as its buffer fills), and each is
 * relayed as it comes, so that a large message (a screenshot, say) is
 * never held whole.
 */
static int
gw_cdpws_receive(
    struct gw_cdpws *c, struct gw_cdpws_side *from, const void *in, size_t len)
{
	struct gw_cdpws_side *to = gw_cdpws_other(c, from);
	struct gw_cdpws_piece *p;
	int start, end;

	if (gw_cdpws_side_gone(c, to) || to->close_code != 0)
		return 0;
	start = !from->in_message;
	end = lws_is_final_fragment(from->wsi) &&
	    lws_remaining_packet_payload(from->wsi) == 0;
	from->in_message = !end;
	p = xmalloc(sizeof *p + LWS_PRE + len);
	p->len = len;
	p->flags = lws_write_ws_flags(
	    lws_frame_is_binary(from->wsi) ? LWS_WRITE_BINARY : LWS_WRITE_TEXT,
	    start, end);
	memcpy(p->buf + LWS_PRE, in, len);
	STAILQ_INSERT_TAIL(&to->out, p, entry);
	to->outbytes += len;
	if (gw_cdpws_side_ready(c, to))
		lws_callback_on_writable(to->wsi);
	if (to->outbytes > GW_CDPWS_HIGH_WATER && !from->paused) {
		lws_rx_flow_control(from->wsi, 0);
		from->paused = 1;
	}
	return 0;
}

/* One piece to side s per writeable callback, as lws wants; then the
 * close, once nothing waits. */
static int
gw_cdpws_writeable(struct gw_cdpws *c, struct gw_cdpws_side *s)
{
	struct gw_cdpws_side *other = gw_cdpws_other(c, s);
	struct gw_cdpws_piece *p = STAILQ_FIRST(&s->out);

	if (p == NULL && s->close_code != 0) {
		lws_close_reason(s->wsi, (enum lws_close_status)s->close_code,
		    (unsigned char *)s->close_reason, strlen(s->close_reason));
		return -1;
	}
	if (p != NULL) {
		if (lws_write(s->wsi, p->buf + LWS_PRE, p->len,
		        (enum lws_write_protocol)p->flags) < (int)p->len)
			return -1;
		STAILQ_REMOVE_HEAD(&s->out, entry);
		s->outbytes -= p->len;
		free(p);
	}
	if (!STAILQ_EMPTY(&s->out) || s->close_code != 0)
		lws_callback_on_writable(s->wsi);
	if (other->paused && other->wsi != NULL && other->close_code == 0 &&
	    s->outbytes <= GW_CDPWS_LOW_WATER) {
		lws_rx_flow_control(other->wsi, 1);
		other->paused = 0;
	}
	return 0;
}

/*
 * Side s sent a close frame: the other side is closed with the same code
 * and reason. Codes that may not be sent (1005 "no status", 1006, 1015)
 * or are not codes at all become 1000.
 */
static void
gw_cdpws_peer_close(struct gw_cdpws *c, struct gw_cdpws_side *s,
    const unsigned char *in, size_t len)
{
	struct gw_cdpws_side *to = gw_cdpws_other(c, s);
	int code = LWS_CLOSE_STATUS_NORMAL;

	if (len >= 2)
		code = in[0] << 8 | in[1];
	if (code < 1000 || code > 4999 || code == 1004 || code == 1005 ||
	    code == 1006 || code == 1015 || (code > 1014 && code < 3000))
		code = LWS_CLOSE_STATUS_NORMAL;
	if (len > 2)
		gw_cdpws_close(c, to, code, "%.*s",
		    (int)(len - 2 < GW_CDPWS_REASON_MAX ? len - 2
		                                        : GW_CDPWS_REASON_MAX),
		    (const char *)in + 2);
	else
		gw_cdpws_close(
		    c, to, code, "%s closed the connection", s->name);
}

/* The fetch of /json/version is over: it is cut loose, and what it read
 * is freed. */
static void
gw_cdpws_fetch_end(struct gw_cdpws *c)
{
	lws_set_opaque_user_data(c->fetch, NULL);
	c->fetch = NULL;
	free(c->body);
	c->body = NULL;
	c->bodylen = 0;
}

/* lws closed side s's wsi: the other side is closed after what s sent
 * it, with s's close code if s sent one, else 1011 (an unexpected end)
 * and reason. A fetch the client leaves behind is killed. Frees c once
 * both sides are gone. */
static void
gw_cdpws_gone(struct gw_cdpws *c, struct gw_cdpws_side *s, const char *why)
{
	struct gw_cdpws_side *to = gw_cdpws_other(c, s);
	struct lws *fetch = c->fetch;

	lws_set_opaque_user_data(s->wsi, NULL);
	s->wsi = NULL;
	if (s == &c->client)
		gw_grant_release(&c->hold);
	gw_cdpws_side_clear(s);
	if (s == &c->chrome)
		c->state = GW_CDPWS_DOWN;
	else if (c->state == GW_CDPWS_FETCH) {
		gw_cdpws_fetch_end(c);
		c->state = GW_CDPWS_DOWN;
		/* At exit lws closes it anyway. */
		if (!gateway.stopping)
			lws_set_timeout(
			    fetch, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
	}
	if (to->wsi != NULL) {
		gw_cdpws_close(
		    c, to, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "%s", why);
		return;
	}
	log_info("CDP client %s disconnected", c->peer);
	gw_cdpws_side_clear(&c->client);
	gw_cdpws_side_clear(&c->chrome);
	free(c);
}

static int
gw_cdpws_json_is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

static const char *
gw_cdpws_json_space(const char *p, const char *end)
{
	while (p < end && gw_cdpws_json_is_space(*p))
		p++;
	return p;
}

/* Just past the JSON string whose opening quote is at p; NULL if it does
 * not end before end. */
static const char *
gw_cdpws_json_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '"')
			return p + 1;
		if (*p == '\\' && ++p == end)
			break;
	}
	return NULL;
}

/*
 * Just past the JSON value at p: a string; an object or an array, what
 * nests in it skipped over without further checks (but strings whole, so
 * that no bracket or quote in one misleads); or a number or literal, up
 * to what ends it. NULL if it is empty or does not end before end.
 */
static const char *
gw_cdpws_json_value(const char *p, const char *end)
{
	const char *start = p;
	size_t depth = 0;

	while (p < end) {
		if (*p == '"') {
			if ((p = gw_cdpws_json_string(p, end)) == NULL)
				return NULL;
			if (depth == 0)
				return p;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']') {
			if (depth == 0)
				break;
			if (--depth == 0)
				return p + 1;
		} else if (depth == 0 &&
		    (*p == ',' || gw_cdpws_json_is_space(*p)))
			break;
		p++;
	}
	return depth == 0 && p > start ? p : NULL;
}

/* [*url, *urlend) := the value of webSocketDebuggerUrl among the members
 * of the object that is the whole of [p, end). -1 with *why if there is
 * no such object, or it has that member twice or not at all. */
static int
gw_cdpws_json_url(const char *p, const char *end, const char **url,
    const char **urlend, const char **why)
{
	static const char key[] = "\"webSocketDebuggerUrl\"";
	const char *k, *kend, *v, *vend;
	int more;

	*url = NULL;
	p = gw_cdpws_json_space(p, end);
	if (p == end || *p != '{')
		goto bad;
	p = gw_cdpws_json_space(p + 1, end);
	more = p < end && *p != '}';
	while (more) {
		k = p;
		if (p == end || *p != '"' ||
		    (kend = gw_cdpws_json_string(k, end)) == NULL)
			goto bad;
		p = gw_cdpws_json_space(kend, end);
		if (p == end || *p != ':')
			goto bad;
		v = gw_cdpws_json_space(p + 1, end);
		if ((vend = gw_cdpws_json_value(v, end)) == NULL)
			goto bad;
		if ((size_t)(kend - k) == sizeof key - 1 &&
		    memcmp(k, key, sizeof key - 1) == 0) {
			if (*url != NULL) {
				*why = "has webSocketDebuggerUrl twice";
				return -1;
			}
			*url = v;
			*urlend = vend;
		}
		p = gw_cdpws_json_space(vend, end);
		if (p == end || (*p != ',' && *p != '}'))
			goto bad;
		if ((more = *p == ','))
			p = gw_cdpws_json_space(p + 1, end);
	}
	if (p == end || *p != '}' || gw_cdpws_json_space(p + 1, end) != end)
		goto bad;
	if (*url == NULL) {
		*why = "has no webSocketDebuggerUrl";
		return -1;
	}
	return 0;
bad:
	*why = "is not a JSON object";
	return -1;
}

/*
 * The browser target's path from Chromium's /json/version: the path of
 * webSocketDebuggerUrl ("ws://HOST:PORT/devtools/browser/UUID"), from
 * the first '/' after the authority, into path (GW_CDPWS_PATH_MAX + 1
 * bytes). The authority is not used: the relay dials gateway.cdp. The
 * string's bytes are taken as they are, since an escape in them could
 * only make a path gw_cdpws_path_ok refuses. -1 with *why (static text
 * that follows "Chromium's /json/version") if there is none.
 */
static int
gw_cdpws_version_path(
    const char *body, size_t len, char *path, const char **why)
{
	const char *url, *urlend, *host, *slash;
	size_t n;

	if (gw_cdpws_json_url(body, body + len, &url, &urlend, why) < 0)
		return -1;
	host = url + 6;
	if (*url != '"' || urlend - url < 8 ||
	    strncmp(url + 1, "ws://", 5) != 0 ||
	    (slash = memchr(host, '/', (size_t)(urlend - 1 - host))) == NULL ||
	    slash == host) {
		*why = "has a webSocketDebuggerUrl that is not ws://HOST/PATH";
		return -1;
	}
	n = (size_t)(urlend - 1 - slash);
	if (n > GW_CDPWS_PATH_MAX) {
		*why = "has a webSocketDebuggerUrl with a bad path";
		return -1;
	}
	memcpy(path, slash, n);
	path[n] = '\0';
	if (!gw_cdpws_path_ok(path)) {
		*why = "has a webSocketDebuggerUrl with a bad path";
		return -1;
	}
	return 0;
}

/* A client connection of c's to Chromium, for path: Host is Chromium's
 * own address (host, which must outlive the call), and no Origin, which
 * Chromium refuses unless told to allow it. */
static void
gw_cdpws_client_info(struct lws_client_connect_info *ci, struct gw_cdpws *c,
    const char *path, const char *host)
{
	memset(ci, 0, sizeof *ci);
	ci->context = gateway.ctx;
	ci->vhost = gateway.vhost;
	ci->address = gateway.cdp.host;
	ci->port = gateway.cdp.port;
	ci->path = path;
	ci->host = host;
	ci->local_protocol_name = "berth-cdp";
	ci->opaque_user_data = c;
}

/* Starts the lws WebSocket client of Chromium for c->path. -1 with
 * *cause if it failed at once (lws may have called back already). */
static int
gw_cdpws_connect(struct gw_cdpws *c, char **cause)
{
	struct lws_client_connect_info ci;
	char host[GATEWAY_PEER_MAX + 8];
	struct lws *wsi;

	gw_cdpws_authority(host, sizeof host);
	gw_cdpws_client_info(&ci, c, c->path, host);
	c->state = GW_CDPWS_UPGRADE;
	wsi = lws_client_connect_via_info(&ci);
	if (c->state != GW_CDPWS_UPGRADE)
		return 0; /* it failed during the call, and said so */
	if (wsi == NULL) {
		c->chrome.wsi = NULL;
		c->state = GW_CDPWS_DOWN;
		*cause = xasprintf("cannot connect to %s", host);
		return -1;
	}
	c->chrome.wsi = wsi;
	return 0;
}

/* Connects to c->path, or closes the client saying why not. */
static void
gw_cdpws_start(struct gw_cdpws *c)
{
	char *cause;

	if (gw_cdpws_connect(c, &cause) < 0) {
		log_warn("CDP client %s: %s", c->peer, cause);
		gw_cdpws_close(c, &c->client,
		    LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "%s", cause);
		free(cause);
	}
}

static void gw_cdpws_fetch_failed(struct gw_cdpws *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The fetch of /json/version failed: it is cut loose, and the client is
 * closed with 1011 and why. */
static void
gw_cdpws_fetch_failed(struct gw_cdpws *c, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	gw_cdpws_fetch_end(c);
	c->state = GW_CDPWS_DOWN;
	log_warn("CDP client %s: %s", c->peer, why);
	gw_cdpws_close(
	    c, &c->client, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "%s", why);
}

/*
 * The browser target's path is asked of Chromium at each connect, since
 * it changes each time Chromium starts: GET /json/version, with the same
 * Host as the WebSocket and no Origin. lws follows no redirect.
 */
static void
gw_cdpws_fetch_start(struct gw_cdpws *c)
{
	struct lws_client_connect_info ci;
	char host[GATEWAY_PEER_MAX + 8];
	struct lws *wsi;

	gw_cdpws_authority(host, sizeof host);
	gw_cdpws_client_info(&ci, c, "/json/version", host);
	ci.method = "GET";
	ci.ssl_connection = LCCSCF_HTTP_NO_FOLLOW_REDIRECT;
	c->state = GW_CDPWS_FETCH;
	wsi = lws_client_connect_via_info(&ci);
	if (c->state != GW_CDPWS_FETCH)
		return; /* it ended during the call, and said so */
	c->fetch = wsi;
	if (wsi == NULL)
		gw_cdpws_fetch_failed(c,
		    "cannot read Chromium's /json/version at %s: no "
		    "connection could be started",
		    host);
}

void
gw_cdpws_open(
    struct lws *wsi, const char *rest, const struct gw_check_answer *who)
{
	struct gw_cdpws *c;

	c = xcalloc(1, sizeof *c);
	c->relay = GW_HTTP_RELAY_CDP;
	c->client.name = "the client";
	c->client.wsi = wsi;
	STAILQ_INIT(&c->client.out);
	c->chrome.name = "Chromium";
	STAILQ_INIT(&c->chrome.out);
	gateway_peer(wsi, c->peer, sizeof c->peer);
	lws_set_opaque_user_data(wsi, c);

	snprintf(c->path, sizeof c->path, "%s", rest);
	log_info("CDP client %s connected%s%s, for %s", c->peer,
	    who->grant[0] != '\0' ? ", grant " : "", who->grant,
	    *rest == '\0' ? "the browser target" : c->path);
	/* Cut at the grant's end as it is, Chromium's side with it. */
	if (who->grant[0] != '\0' &&
	    gw_grant_admit(&c->hold, wsi, who->grant, who->expires_at_ms) < 0) {
		lws_set_timeout(
		    wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
		return;
	}
	if (*rest == '\0')
		gw_cdpws_fetch_start(c);
	else
		gw_cdpws_start(c);
}

int
gw_cdpws_ws_cb(
    struct lws *wsi, enum lws_callback_reasons reason, void *in, size_t len)
{
	struct gw_cdpws *c = lws_get_opaque_user_data(wsi);

	switch (reason) {
	case LWS_CALLBACK_RECEIVE:
		return gw_cdpws_receive(c, &c->client, in, len);
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return gw_cdpws_writeable(c, &c->client);
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		gw_cdpws_peer_close(c, &c->client, in, len);
		return 0;
	case LWS_CALLBACK_CLOSED:
		gw_cdpws_gone(c, &c->client, "the client went away");
		return 0;
	default: return 0;
	}
}

/* A piece of /json/version's body; -1 once it is too long. */
static int
gw_cdpws_fetch_body(struct gw_cdpws *c, const void *in, size_t len)
{
	char host[GATEWAY_PEER_MAX + 8];

	if (len > GW_CDPWS_VERSION_MAX - c->bodylen) {
		gw_cdpws_authority(host, sizeof host);
		gw_cdpws_fetch_failed(c,
		    "Chromium's /json/version at %s is over %u KiB", host,
		    GW_CDPWS_VERSION_MAX / 1024);
		return -1;
	}
	c->body = xrealloc(c->body, c->bodylen + len);
	memcpy(c->body + c->bodylen, in, len);
	c->bodylen += len;
	return 0;
}

/* /json/version was read whole: its browser target is connected to. */
static void
gw_cdpws_fetched(struct gw_cdpws *c)
{
	char host[GATEWAY_PEER_MAX + 8];
	const char *why;

	if (gw_cdpws_version_path(c->body != NULL ? c->body : "", c->bodylen,
	        c->path, &why) < 0) {
		gw_cdpws_authority(host, sizeof host);
		gw_cdpws_fetch_failed(
		    c, "Chromium's /json/version at %s %s", host, why);
		return;
	}
	gw_cdpws_fetch_end(c);
	log_info("CDP client %s: the browser target is %s", c->peer, c->path);
	gw_cdpws_start(c);
}

/*
 * The events of the fetch of /json/version. It ends in exactly one of
 * COMPLETED_CLIENT_HTTP (the body is whole), CLIENT_CONNECTION_ERROR (no
 * connection, or no answer's head) or CLOSED_CLIENT_HTTP (closed before
 * the body was whole); whichever comes first cuts it loose, and the
 * rest, like the CLOSED_CLIENT_HTTP that follows the first, find no
 * relay.
 */
static int
gw_cdpws_fetch_cb(struct gw_cdpws *c, struct lws *wsi,
    enum lws_callback_reasons reason, void *in, size_t len)
{
	char buf[LWS_PRE + 4096], host[GATEWAY_PEER_MAX + 8], *p;
	unsigned int status;
	int n;

	/* A callback during lws_client_connect_via_info comes before
	 * c->fetch is set. */
	c->fetch = wsi;
	gw_cdpws_authority(host, sizeof host);
	switch (reason) {
	case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
		status = lws_http_client_http_response(wsi);
		if (status == HTTP_STATUS_OK)
			return 0;
		gw_cdpws_fetch_failed(c,
		    "Chromium's /json/version at %s answered %u", host, status);
		return -1;
	case LWS_CALLBACK_RECEIVE_CLIENT_HTTP:
		/* Hands the body to RECEIVE_CLIENT_HTTP_READ, and may
		 * complete the fetch, or fail it: c is not touched after. */
		p = buf + LWS_PRE;
		n = (int)(sizeof buf - LWS_PRE);
		return lws_http_client_read(wsi, &p, &n) < 0 ? -1 : 0;
	case LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ:
		return gw_cdpws_fetch_body(c, in, len);
	case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
		gw_cdpws_fetched(c);
		return -1; /* the connection has served its purpose */
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		gw_cdpws_fetch_failed(c,
		    "cannot read Chromium's /json/version at %s: %s", host,
		    in != NULL ? (const char *)in : "connection failed");
		return 0;
	case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
		gw_cdpws_fetch_failed(c,
		    "cannot read Chromium's /json/version at %s: it closed "
		    "the connection before the answer was whole",
		    host);
		return 0;
	default: return 0;
	}
}

/* Chromium's side is up: what the client sent meanwhile goes now. */
static void
gw_cdpws_chrome_up(struct gw_cdpws *c)
{
	c->state = GW_CDPWS_UP;
	if (!STAILQ_EMPTY(&c->chrome.out) || c->chrome.close_code != 0)
		lws_callback_on_writable(c->chrome.wsi);
}

int
gw_cdpws_chrome_cb(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len)
{
	struct gw_cdpws *c = lws_get_opaque_user_data(wsi);
	char *why;

	(void)user;
	/* A fetch cut loose is on its way out: it reads nothing more. */
	if (c == NULL)
		return reason == LWS_CALLBACK_RECEIVE_CLIENT_HTTP ? -1 : 0;
	/* Only the fetch carries the relay while it runs: the WebSocket
	 * client is started after it was cut loose. */
	if (c->state == GW_CDPWS_FETCH)
		return gw_cdpws_fetch_cb(c, wsi, reason, in, len);
	/* A callback during lws_client_connect_via_info comes before
	 * chrome.wsi is set. */
	c->chrome.wsi = wsi;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_ESTABLISHED: gw_cdpws_chrome_up(c); return 0;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		return gw_cdpws_receive(c, &c->chrome, in, len);
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		return gw_cdpws_writeable(c, &c->chrome);
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		gw_cdpws_peer_close(c, &c->chrome, in, len);
		return 0;
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		why =
		    xasprintf("no connection to Chromium's DevTools at %s:%d: "
		              "%s",
		        gateway.cdp.host, gateway.cdp.port,
		        in != NULL ? (const char *)in : "connection failed");
		log_warn("CDP client %s: %s: %s", c->peer, c->path, why);
		gw_cdpws_gone(c, &c->chrome, why);
		free(why);
		return 0;
	/* Closed after the upgrade, or before it (still an HTTP client). */
	case LWS_CALLBACK_CLIENT_CLOSED:
	case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
		gw_cdpws_gone(c, &c->chrome,
		    c->state == GW_CDPWS_UP
		        ? "Chromium's DevTools connection was lost"
		        : "Chromium's DevTools did not answer");
		return 0;
	default: return 0;
	}
}
