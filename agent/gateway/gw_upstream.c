/* gw_upstream: Unix-socket connections to berthd as lws raw sockets, and
 * the gateway's own two: the control connection (hello, state, the
 * subscription to the checks' events) and the liveness connection (hello
 * and ping). Owns every struct gw_upstream and the state of those two,
 * and writes gateway.berthd. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "catalog.h"
#include "frame.h"
#include "gateway.h"
#include "gw_client.h"
#include "gw_grant.h"
#include "gw_metrics.h"
#include "gw_sock.h"
#include "gw_upstream.h"
#include "json.h"
#include "log.h"
#include "packcheck.h"
#include "proto.h"
#include "xmalloc.h"

/* A ping goes every GW_UPSTREAM_PING_US; berthd that has not answered
 * one for GW_UPSTREAM_STALE_US is not up. */
#define GW_UPSTREAM_PING_US (1 * LWS_USEC_PER_SEC)
#define GW_UPSTREAM_STALE_US (3 * LWS_USEC_PER_SEC)
/* The control connection asks for the state this often besides after
 * every check's change: a service failing for good changes no check if
 * nothing requires it, and the gateway's uid sees only checks' events. */
#define GW_UPSTREAM_STATE_US (5 * LWS_USEC_PER_SEC)
/* Reconnect backoff for the gateway's own connections. */
#define GW_UPSTREAM_BACKOFF_MIN_MS 100
#define GW_UPSTREAM_BACKOFF_MAX_MS 2000
/* What may wait to go to berthd on the control connection: refusals are
 * dropped beyond it, so a flood of bad upgrades cannot grow it. */
#define GW_UPSTREAM_CONTROL_QUEUE (1024u * 1024)
/* The liveness connection carries a hello and one ping at a time. */
#define GW_UPSTREAM_LIVENESS_QUEUE (64u * 1024)

/*
 * Requests on the gateway's own connections carry their kind in the low
 * bits of their id, so a response says what it answers without a table
 * of outstanding requests.
 */
enum gw_upstream_req {
	GW_REQ_HELLO = 1,
	GW_REQ_STATE,
	GW_REQ_SUBSCRIBE,
	GW_REQ_PING,
	GW_REQ_AUTH_FAILED,
};
#define GW_REQ_BITS 3
#define GW_REQ_MASK ((1u << GW_REQ_BITS) - 1)

/* One of the gateway's own connections to berthd, which reconnects
 * after its backoff whenever it is lost. */
struct gw_link {
	const char *name; /* for the logs */
	enum gw_upstream_kind kind;
	struct gw_upstream *up;
	lws_sorted_usec_list_t sul_connect;
	struct backoff backoff;
	uint64_t counter; /* makes request ids unique */
	int hello_ok;
	int warned; /* a connect failure was logged since it was up */
};

/* The control connection: hello, state, the subscription to the checks'
 * events, and the refusals the gateway journals. */
static struct {
	struct gw_link link;
	lws_sorted_usec_list_t sul_state;
	int subscribed;    /* events.subscribe sent on this connection */
	int state_pending; /* a state request is outstanding */
	int state_again;   /* ... and another is wanted after it */
} gw_ctl = {.link = {.name = "control", .kind = GW_UPSTREAM_CONTROL}};

/* The liveness connection: hello and pings, nothing else. berthd answers
 * a connection's requests in order, and events share the subscriber's
 * output: a ping on the control connection waits behind every event and
 * state queued there before it. Here nothing can be ahead of a pong. */
static struct {
	struct gw_link link;
	lws_sorted_usec_list_t sul_ping;
	lws_usec_t ping_sent; /* the outstanding ping went then; 0: none */
} gw_live = {.link = {.name = "liveness", .kind = GW_UPSTREAM_LIVENESS}};

static int gw_upstream_control_msg(const uint8_t *msg, size_t len);
static int gw_upstream_live_msg(const uint8_t *msg, size_t len);
static void gw_upstream_link_lost(struct gw_link *l);

struct gw_upstream *
gw_upstream_open(enum gw_upstream_kind kind, char **cause)
{
	struct sockaddr_un sun;
	struct gw_upstream *up;
	struct lws *wsi;
	int fd, err;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(gateway.socket_path) >= sizeof sun.sun_path) {
		*cause = xasprintf("socket path too long");
		return NULL;
	}
	strcpy(sun.sun_path, gateway.socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*cause = xasprintf("socket: %s", strerror(errno));
		return NULL;
	}
	/* A Unix connect completes or fails at once; EAGAIN means berthd's
	 * backlog is full, for the caller to try again. */
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
		err = errno;
		*cause = xasprintf("connect: %s", strerror(err));
		close(fd);
		errno = err;
		return NULL;
	}
	up = xcalloc(1, sizeof *up);
	up->kind = kind;
	gw_queue_init(&up->out,
	    kind == GW_UPSTREAM_CONTROL        ? GW_UPSTREAM_CONTROL_QUEUE
	        : kind == GW_UPSTREAM_LIVENESS ? GW_UPSTREAM_LIVENESS_QUEUE
	                                       : SIZE_MAX);
	wsi = gw_sock_adopt(gateway.vhost, fd, "berth-upstream", up, cause);
	if (wsi == NULL) {
		free(up);
		return NULL;
	}
	up->wsi = wsi;
	return up;
}

int
gw_upstream_send(struct gw_upstream *up, const void *msg, size_t len)
{
	struct gw_queue_msg *m;
	unsigned char *p;

	m = gw_queue_msg_new(FRAME_HDR + len);
	p = gw_queue_payload(m);
	frame_header(p, (uint32_t)len);
	memcpy(p + FRAME_HDR, msg, len);
	if (gw_queue_push(&up->out, m) < 0) {
		free(m);
		return -1;
	}
	lws_callback_on_writable(up->wsi);
	return 0;
}

int
gw_upstream_send_secret(struct gw_upstream *up, const void *msg, size_t len)
{
	unsigned char buf[FRAME_HDR + GW_UPSTREAM_SECRET_MAX];
	ssize_t n = -1;
	int r;

	if (len > GW_UPSTREAM_SECRET_MAX)
		return -1;
	frame_header(buf, (uint32_t)len);
	memcpy(buf + FRAME_HDR, msg, len);
	/* Nothing is queued before it, and a fresh Unix socket's buffer
	 * takes it whole: the queue, whose copies are freed unwiped, is for
	 * the rare case it does not. */
	if (gw_queue_first(&up->out) == NULL)
		n = send(lws_get_socket_fd(up->wsi), buf, FRAME_HDR + len,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n == (ssize_t)(FRAME_HDR + len))
		r = 0;
	else if (n <= 0)
		r = gw_upstream_send(up, msg, len);
	else
		r = -1;
	explicit_bzero(buf, sizeof buf);
	return r;
}

void
gw_upstream_close(struct gw_upstream *up)
{
	up->client = NULL;
	/* At exit lws is closing everything itself. */
	if (!gateway.stopping)
		lws_set_timeout(
		    up->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

void
gw_upstream_pause(struct gw_upstream *up, int on)
{
	lws_rx_flow_control(up->wsi, on ? 0 : 1);
}

/* The first response on a client's connection answers gateway.attach;
 * the client never sees it. Returns -1 if berthd refused. */
static int
gw_upstream_attach_done(struct gw_upstream *up, const uint8_t *msg, size_t len)
{
	struct proto_msg m;
	const char *code;
	char err[256];
	int ok;

	up->attach_pending = 0;
	if (proto_decode(msg, len, &m, &code, err, sizeof err) < 0) {
		log_warn("berthd's answer to gateway.attach: %s", err);
		return -1;
	}
	ok = m.type == PROTO_RESPONSE && m.ok;
	if (m.type == PROTO_RESPONSE && !m.ok)
		log_warn("berthd refused gateway.attach: %s: %s", m.err_code,
		    m.err_message);
	else if (!ok)
		log_warn("berthd did not answer gateway.attach first");
	proto_msg_free(&m);
	return ok ? 0 : -1;
}

/* One whole message from berthd. Returns -1 to close the connection. */
static int
gw_upstream_dispatch(struct gw_upstream *up, const uint8_t *msg, size_t len)
{
	if (up->kind == GW_UPSTREAM_CONTROL)
		return gw_upstream_control_msg(msg, len);
	if (up->kind == GW_UPSTREAM_LIVENESS)
		return gw_upstream_live_msg(msg, len);
	if (up->client == NULL)
		return 0;
	if (up->attach_pending) {
		if (gw_upstream_attach_done(up, msg, len) < 0) {
			gw_client_upstream_gone(up->client);
			up->client = NULL;
			return -1;
		}
		return 0;
	}
	gw_client_deliver(up->client, msg, len);
	return 0;
}

/*
 * Splits what berthd sent into frames. Whole frames in `in` are handled
 * where they lie; only a trailing partial frame is copied, so a stream of
 * small messages costs no copying at all.
 */
static int
gw_upstream_rx(struct gw_upstream *up, const uint8_t *in, size_t len)
{
	const uint8_t *buf = in, *payload;
	size_t have = len, off = 0, plen, need;
	enum frame_result r;

	if (up->inlen != 0) {
		need = up->inlen + len;
		if (need > up->incap) {
			up->incap = need < 2 * up->incap ? 2 * up->incap : need;
			up->in = xrealloc(up->in, up->incap);
		}
		memcpy(up->in + up->inlen, in, len);
		up->inlen = need;
		buf = up->in;
		have = need;
	}
	for (;;) {
		r = frame_parse(
		    buf + off, have - off, PROTO_MAX_MSG, &payload, &plen);
		if (r == FRAME_TOO_LARGE) {
			log_warn(
			    "berthd sent a frame over %u bytes", PROTO_MAX_MSG);
			return -1;
		}
		if (r == FRAME_NEED_MORE)
			break;
		if (gw_upstream_dispatch(up, payload, plen) < 0)
			return -1;
		off += FRAME_HDR + plen;
	}
	if (buf == up->in) {
		memmove(up->in, up->in + off, have - off);
		up->inlen = have - off;
	} else if (off < have) {
		if (have - off > up->incap) {
			free(up->in);
			up->incap = have - off;
			up->in = xmalloc(up->incap);
		}
		memcpy(up->in, buf + off, have - off);
		up->inlen = have - off;
	}
	return 0;
}

/*
 * Writes what is queued while berthd's socket takes it. This is send()
 * on the descriptor rather than lws_write: lws keeps what a raw socket
 * did not take and stops reading that socket until it is gone, so a
 * berthd blocked on sending a large answer to us, while we were blocked
 * on sending a large request to it, would wait on us forever. Here a
 * partial write stays in our queue (up->outoff) and lws keeps reading.
 */
static int
gw_upstream_writeable(struct gw_upstream *up)
{
	if (gw_sock_flush(up->wsi, &up->out, &up->outoff) < 0)
		return -1;
	if (up->client != NULL && up->out.bytes <= GW_UPSTREAM_LOW_WATER)
		gw_client_resume(up->client);
	return 0;
}

static void
gw_upstream_free(struct gw_upstream *up)
{
	if (up->client != NULL)
		gw_client_upstream_gone(up->client);
	if (up == gw_ctl.link.up)
		gw_upstream_link_lost(&gw_ctl.link);
	else if (up == gw_live.link.up)
		gw_upstream_link_lost(&gw_live.link);
	gw_queue_clear(&up->out);
	free(up->in);
	free(up);
}

int
gw_upstream_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct gw_upstream *up = lws_get_opaque_user_data(wsi);

	(void)user;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX:
		if (up == NULL)
			return -1;
		return gw_upstream_rx(up, in, len);
	case LWS_CALLBACK_RAW_WRITEABLE:
		if (up == NULL)
			return -1;
		return gw_upstream_writeable(up);
	case LWS_CALLBACK_RAW_CLOSE:
		if (up != NULL) {
			lws_set_opaque_user_data(wsi, NULL);
			gw_upstream_free(up);
		}
		return 0;
	default: return 0;
	}
}

/*
 * The gateway's own connections.
 */

/* Starts a request of the given kind on l: *pk packs into *sb; the
 * caller packs the args map next and sends with gw_upstream_link_send. */
static void
gw_upstream_begin(struct gw_link *l, msgpack_sbuffer *sb, msgpack_packer *pk,
    enum gw_upstream_req kind, const char *op)
{
	uint64_t id = ++l->counter << GW_REQ_BITS | kind;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	proto_pack_request(pk, id, op);
}

static int
gw_upstream_link_send(struct gw_link *l, msgpack_sbuffer *sb)
{
	int r = -1;

	PACKCHECK_SENT(sb->data, sb->size, NULL);
	if (l->up != NULL)
		r = gw_upstream_send(l->up, sb->data, sb->size);
	msgpack_sbuffer_destroy(sb);
	return r;
}

static void
gw_upstream_link_hello(struct gw_link *l)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	gw_upstream_begin(l, &sb, &pk, GW_REQ_HELLO, "hello");
	msgpack_pack_map(&pk, 2);
	proto_pack_kv_str(&pk, "version", PROTO_VERSION);
	proto_pack_kv_str(&pk, "client", "berth-gateway/" BERTH_VERSION);
	gw_upstream_link_send(l, &sb);
}

static void
gw_upstream_control_state(void)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	if (gw_ctl.state_pending) {
		gw_ctl.state_again = 1;
		return;
	}
	gw_upstream_begin(&gw_ctl.link, &sb, &pk, GW_REQ_STATE, "state");
	msgpack_pack_map(&pk, 0);
	if (gw_upstream_link_send(&gw_ctl.link, &sb) == 0)
		gw_ctl.state_pending = 1;
}

static void
gw_upstream_control_subscribe(uint64_t from_seq)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	gw_upstream_begin(
	    &gw_ctl.link, &sb, &pk, GW_REQ_SUBSCRIBE, "events.subscribe");
	msgpack_pack_map(&pk, 1);
	proto_pack_kv_u64(&pk, "from_seq", from_seq);
	if (gw_upstream_link_send(&gw_ctl.link, &sb) == 0)
		gw_ctl.subscribed = 1;
}

void
gw_upstream_auth_failed(const char *peer, const char *reason, uint64_t count)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	/* berthd takes nothing but hello before hello. */
	if (gw_ctl.link.up == NULL || !gw_ctl.link.hello_ok) {
		log_info(
		    "refusal of %s not journaled: berthd not connected", peer);
		return;
	}
	gw_upstream_begin(
	    &gw_ctl.link, &sb, &pk, GW_REQ_AUTH_FAILED, "gateway.auth_failed");
	msgpack_pack_map(&pk, 3);
	proto_pack_kv_str(&pk, "peer", peer);
	proto_pack_kv_str(&pk, "reason", reason);
	proto_pack_kv_u64(&pk, "count", count);
	if (gw_upstream_link_send(&gw_ctl.link, &sb) < 0)
		log_warn("refusal of %s not journaled: berthd is behind", peer);
}

static void gw_upstream_set_reason(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static void
gw_upstream_set_reason(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(gateway.berthd.reason, sizeof gateway.berthd.reason, fmt, ap);
	va_end(ap);
}

/* A string field of a result map as a JSON string literal. */
static void
gw_upstream_json_field(FILE *f, const msgpack_object *map, const char *key)
{
	const msgpack_object *v = proto_map_get(map, key);

	if (v != NULL && v->type == MSGPACK_OBJECT_STR)
		json_write_str(f, v->via.str.ptr, v->via.str.size);
	else
		fputs("\"\"", f);
}

/* A stream that replaces *buf; *len is written as it is, so it must
 * outlive the stream. */
static FILE *
gw_upstream_memstream(char **buf, size_t *len)
{
	FILE *f;

	free(*buf);
	*buf = NULL;
	f = open_memstream(buf, len);
	if (f == NULL)
		log_fatal("open_memstream: out of memory");
	return f;
}

static void
gw_upstream_memstream_done(FILE *f)
{
	if (fclose(f) != 0)
		log_fatal("open_memstream: out of memory");
}

/* hello's result on the liveness connection becomes the body of
 * /healthz, split where uptime_ms goes, so that a probe costs one
 * formatted number. */
static void
gw_upstream_hello_done(const msgpack_object *result)
{
	struct gateway_berthd *b = &gateway.berthd;
	const msgpack_object *labels;
	uint64_t started_at = 0;
	size_t len;
	FILE *f;

	f = gw_upstream_memstream(&b->healthz_head, &len);
	fputs("{\"status\":\"ok\",\"boot_id\":", f);
	gw_upstream_json_field(f, result, "boot_id");
	fputs(",\"version\":", f);
	gw_upstream_json_field(f, result, "agent_version");
	fputs(",\"uptime_ms\":", f);
	gw_upstream_memstream_done(f);
	f = gw_upstream_memstream(&b->healthz_tail, &len);
	fputs(",\"labels\":", f);
	labels = proto_map_get(result, "labels");
	if (labels != NULL && labels->type == MSGPACK_OBJECT_MAP)
		json_write(f, labels);
	else
		fputs("{}", f);
	fputs("}", f);
	gw_upstream_memstream_done(f);
	proto_arg_u64(result, "started_at", &started_at);
	b->started_at = started_at;
	b->hello_ok = 1;
	b->answered_at = b->up_since = proto_now_ms();
	log_info("berthd answers");
}

void
gw_upstream_rfc3339(FILE *f, uint64_t ms)
{
	time_t secs = (time_t)(ms / 1000);
	char when[32];
	struct tm tm;

	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		fputs("\"1970-01-01T00:00:00.000Z\"", f);
		return;
	}
	fprintf(f, "\"%s.%03uZ\"", when, (unsigned)(ms % 1000));
}

/* One failing check as an entry of /readyz's "why". */
static void
gw_upstream_why(
    FILE *f, const msgpack_object *name, const msgpack_object *reason)
{
	char *s;

	if (reason != NULL && reason->type == MSGPACK_OBJECT_STR)
		s = xasprintf("check %.*s: %.*s", (int)name->via.str.size,
		    name->via.str.ptr, (int)reason->via.str.size,
		    reason->via.str.ptr);
	else
		s = xasprintf("check %.*s: not ok", (int)name->via.str.size,
		    name->via.str.ptr);
	json_write_str(f, s, strlen(s));
	free(s);
}

/*
 * state's checks become the JSON object /readyz returns, and the failing
 * ones its "why". A check that does not say ok=true counts as failing:
 * readiness is strict. A check's since is when its verdict last changed:
 * the sandbox is unready since the earliest of the failing ones, and
 * ready since the latest of them all.
 */
static void
gw_upstream_checks(const msgpack_object *checks)
{
	struct gateway_berthd *b = &gateway.berthd;
	const msgpack_object *k, *v, *reason;
	uint64_t since, earliest = UINT64_MAX, latest = 0;
	int all_ok = 1, nwhy = 0;
	size_t len, wlen;
	uint32_t i;
	FILE *f, *why;
	bool ok;

	f = gw_upstream_memstream(&b->checks_json, &len);
	why = gw_upstream_memstream(&b->why_json, &wlen);
	fputc('{', f);
	fputc('[', why);
	for (i = 0; checks != NULL && checks->type == MSGPACK_OBJECT_MAP &&
	     i < checks->via.map.size;
	     i++) {
		k = &checks->via.map.ptr[i].key;
		v = &checks->via.map.ptr[i].val;
		if (k->type != MSGPACK_OBJECT_STR) {
			all_ok = 0;
			continue;
		}
		ok = false;
		since = 0;
		if (proto_arg_bool(v, "ok", &ok) <= 0)
			ok = false;
		proto_arg_u64(v, "since", &since);
		reason = proto_map_get(v, "reason");
		if (i != 0)
			fputc(',', f);
		json_write_str(f, k->via.str.ptr, k->via.str.size);
		fprintf(f, ":{\"ok\":%s,\"reason\":", ok ? "true" : "false");
		if (reason != NULL && reason->type == MSGPACK_OBJECT_STR)
			json_write_str(
			    f, reason->via.str.ptr, reason->via.str.size);
		else
			fputs("\"\"", f);
		fputs(",\"since\":", f);
		gw_upstream_rfc3339(f, since);
		fputc('}', f);
		if (since > latest)
			latest = since;
		if (!ok) {
			all_ok = 0;
			if (since < earliest)
				earliest = since;
			if (nwhy++ != 0)
				fputc(',', why);
			gw_upstream_why(why, k, reason);
		}
	}
	fputc('}', f);
	fputc(']', why);
	gw_upstream_memstream_done(f);
	gw_upstream_memstream_done(why);
	b->checks_ok = all_ok;
	b->checks_ready_since = latest;
	b->checks_unready_since = earliest != UINT64_MAX ? earliest : latest;
}

/* The services in state "failed", as a JSON array of their names. */
static void
gw_upstream_failed(const msgpack_object *services)
{
	const msgpack_object *name, *st;
	uint32_t i;
	size_t len;
	int n = 0;
	FILE *f;

	f = gw_upstream_memstream(&gateway.berthd.failed_json, &len);
	fputc('[', f);
	for (i = 0;
	     services != NULL && services->type == MSGPACK_OBJECT_ARRAY &&
	     i < services->via.array.size;
	     i++) {
		name = proto_map_get(&services->via.array.ptr[i], "name");
		st = proto_map_get(&services->via.array.ptr[i], "state");
		if (name == NULL || name->type != MSGPACK_OBJECT_STR ||
		    st == NULL || st->type != MSGPACK_OBJECT_STR ||
		    st->via.str.size != 6 ||
		    memcmp(st->via.str.ptr, "failed", 6) != 0)
			continue;
		if (n++ != 0)
			fputc(',', f);
		json_write_str(f, name->via.str.ptr, name->via.str.size);
	}
	fputc(']', f);
	gw_upstream_memstream_done(f);
}

static void
gw_upstream_state_done(const msgpack_object *result)
{
	uint64_t last_seq = 0;

	gw_upstream_checks(proto_map_get(result, "checks"));
	gw_upstream_failed(proto_map_get(result, "services"));
	/* Subscribe after the first state, from just past what it saw, so
	 * that no check change falls between the two. */
	if (!gw_ctl.subscribed) {
		proto_arg_u64(result, "last_seq", &last_seq);
		gw_upstream_control_subscribe(last_seq + 1);
	}
}

/* The answer to a request whose refusal does no harm: logged. */
static void
gw_upstream_refused(const struct gw_link *l, const struct proto_msg *m)
{
	switch (m->id & GW_REQ_MASK) {
	case GW_REQ_SUBSCRIBE:
	case GW_REQ_AUTH_FAILED:
		if (!m->ok)
			log_warn("berthd refused a request of the gateway: "
			         "%s: %s",
			    m->err_code, m->err_message);
		return;
	default:
		log_warn("berthd answered request %" PRIu64
		         " on the %s connection, which the gateway never sent",
		    m->id, l->name);
		return;
	}
}

/* hello's answer on l: -1 to close the connection if berthd refused. */
static int
gw_upstream_link_hello_done(struct gw_link *l, const struct proto_msg *m)
{
	if (!m->ok) {
		log_warn("berthd refused the %s connection's hello: %s: %s",
		    l->name, m->err_code, m->err_message);
		if (l->kind == GW_UPSTREAM_LIVENESS)
			gw_upstream_set_reason(
			    "berthd refused hello: %s", m->err_code);
		return -1;
	}
	l->hello_ok = 1;
	backoff_reset(&l->backoff);
	l->warned = 0;
	return 0;
}

static int
gw_upstream_control_response(const struct proto_msg *m)
{
	switch (m->id & GW_REQ_MASK) {
	case GW_REQ_HELLO:
		if (gw_upstream_link_hello_done(&gw_ctl.link, m) < 0)
			return -1;
		gw_upstream_control_state();
		return 0;
	case GW_REQ_STATE:
		gw_ctl.state_pending = 0;
		if (m->ok)
			gw_upstream_state_done(m->result);
		else
			log_warn("berthd refused state: %s: %s", m->err_code,
			    m->err_message);
		if (gw_ctl.state_again) {
			gw_ctl.state_again = 0;
			gw_upstream_control_state();
		}
		return 0;
	default: gw_upstream_refused(&gw_ctl.link, m); return 0;
	}
}

static int
gw_upstream_decode(const uint8_t *msg, size_t len, struct proto_msg *m)
{
	const char *code;
	char err[256];

	if (proto_decode(msg, len, m, &code, err, sizeof err) < 0) {
		log_warn("bad message from berthd: %s", err);
		return -1;
	}
	return 0;
}

/* A grant's end: what it opened is closed now. */
static void
gw_upstream_grant_ended(const struct proto_msg *m)
{
	char id[GW_GRANT_ID_MAX];

	if (proto_arg_str(m->data, "id", id, sizeof id) == 1)
		gw_grant_ended(id,
		    strcmp(m->kind, EV_GRANT_REVOKED) == 0 ? "revoked"
		                                           : "expired");
}

static int
gw_upstream_control_msg(const uint8_t *msg, size_t len)
{
	struct proto_msg m;
	int r = 0;

	if (gw_upstream_decode(msg, len, &m) < 0)
		return -1;
	switch (m.type) {
	case PROTO_RESPONSE: r = gw_upstream_control_response(&m); break;
	case PROTO_EVENT:
		gw_metrics.events++;
		if (strncmp(m.kind, "check.", 6) == 0)
			gw_upstream_control_state();
		else if (strcmp(m.kind, EV_GRANT_REVOKED) == 0 ||
		    strcmp(m.kind, EV_GRANT_EXPIRED) == 0)
			gw_upstream_grant_ended(&m);
		break;
	default: break;
	}
	proto_msg_free(&m);
	return r;
}

/* The answer to the ping sent at sent. */
static void
gw_upstream_pong(lws_usec_t sent)
{
	struct gateway_berthd *b = &gateway.berthd;

	/* berthd that was not up is up again from now. */
	if (lws_now_usecs() - sent > GW_UPSTREAM_STALE_US)
		b->up_since = proto_now_ms();
	b->answered_at = proto_now_ms();
}

static int
gw_upstream_live_msg(const uint8_t *msg, size_t len)
{
	struct proto_msg m;
	int r = 0;

	if (gw_upstream_decode(msg, len, &m) < 0)
		return -1;
	if (m.type != PROTO_RESPONSE) {
		proto_msg_free(&m);
		return 0;
	}
	switch (m.id & GW_REQ_MASK) {
	case GW_REQ_HELLO:
		r = gw_upstream_link_hello_done(&gw_live.link, &m);
		if (r == 0)
			gw_upstream_hello_done(m.result);
		break;
	case GW_REQ_PING:
		if (m.ok && gw_live.ping_sent != 0)
			gw_upstream_pong(gw_live.ping_sent);
		gw_live.ping_sent = 0;
		break;
	default: gw_upstream_refused(&gw_live.link, &m); break;
	}
	proto_msg_free(&m);
	return r;
}

static void gw_upstream_connect_cb(lws_sorted_usec_list_t *sul);

/* The next try to connect l, after its backoff. */
static void
gw_upstream_retry(struct gw_link *l)
{
	lws_sul_schedule(gateway.ctx, 0, &l->sul_connect,
	    gw_upstream_connect_cb,
	    (lws_usec_t)backoff_next(&l->backoff) * LWS_US_PER_MS);
}

static void
gw_upstream_connect_cb(lws_sorted_usec_list_t *sul)
{
	struct gw_link *l = lws_container_of(sul, struct gw_link, sul_connect);
	int live = l->kind == GW_UPSTREAM_LIVENESS;
	char *cause;

	if (gateway.stopping || l->up != NULL)
		return;
	l->up = gw_upstream_open(l->kind, &cause);
	if (l->up == NULL) {
		if (live)
			gw_upstream_set_reason("berthd unreachable: %s", cause);
		if (!l->warned)
			log_warn("berthd unreachable at %s (%s connection): "
			         "%s; retrying",
			    gateway.socket_path, l->name, cause);
		else
			log_debug("%s: %s", __func__, cause);
		l->warned = 1;
		free(cause);
		gw_upstream_retry(l);
		return;
	}
	if (live) {
		gateway.berthd.connected = 1;
		gw_upstream_set_reason("waiting for berthd's hello");
	}
	gw_upstream_link_hello(l);
}

/* l's socket closed: forget what this connection set up and try again
 * after the backoff. */
static void
gw_upstream_link_lost(struct gw_link *l)
{
	struct gateway_berthd *b = &gateway.berthd;
	int was_ok = l->hello_ok;

	l->up = NULL;
	l->hello_ok = 0;
	if (l->kind == GW_UPSTREAM_CONTROL) {
		gw_ctl.subscribed = 0;
		gw_ctl.state_pending = 0;
		gw_ctl.state_again = 0;
	} else {
		gw_live.ping_sent = 0;
		b->connected = 0;
		b->hello_ok = 0;
		/* A refused hello says more than that the connection
		 * closed. */
		if (strncmp(b->reason, "berthd refused", 14) != 0)
			gw_upstream_set_reason("connection to berthd lost");
	}
	if (gateway.stopping)
		return;
	if (was_ok)
		log_warn(
		    "lost the %s connection to berthd; reconnecting", l->name);
	gw_upstream_retry(l);
}

/* One ping outstanding at most: a berthd that stopped answering gets no
 * pile of pings, only an old one. It is written to the socket at once,
 * as a secret is, not at the loop's next turn: its age is then berthd's
 * alone. */
static void
gw_upstream_ping_cb(lws_sorted_usec_list_t *sul)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	(void)sul;
	if (gateway.stopping)
		return;
	if (gw_live.link.up != NULL && gw_live.link.hello_ok &&
	    gw_live.ping_sent == 0) {
		gw_upstream_begin(&gw_live.link, &sb, &pk, GW_REQ_PING, "ping");
		msgpack_pack_map(&pk, 0);
		PACKCHECK_SENT(sb.data, sb.size, NULL);
		if (gw_upstream_send_secret(
		        gw_live.link.up, sb.data, sb.size) == 0)
			gw_live.ping_sent = lws_now_usecs();
		else
			gw_upstream_close(gw_live.link.up);
		msgpack_sbuffer_destroy(&sb);
	}
	lws_sul_schedule(gateway.ctx, 0, &gw_live.sul_ping, gw_upstream_ping_cb,
	    GW_UPSTREAM_PING_US);
}

static void
gw_upstream_state_cb(lws_sorted_usec_list_t *sul)
{
	(void)sul;
	if (gateway.stopping)
		return;
	if (gw_ctl.link.up != NULL && gw_ctl.link.hello_ok)
		gw_upstream_control_state();
	lws_sul_schedule(gateway.ctx, 0, &gw_ctl.sul_state,
	    gw_upstream_state_cb, GW_UPSTREAM_STATE_US);
}

void
gw_upstream_control_start(void)
{
	struct gw_link *links[] = {&gw_live.link, &gw_ctl.link};
	size_t i;

	gateway.berthd.answered_at = proto_now_ms();
	gw_upstream_set_reason("not connected to berthd yet");
	for (i = 0; i < sizeof links / sizeof links[0]; i++) {
		backoff_init(&links[i]->backoff, GW_UPSTREAM_BACKOFF_MIN_MS,
		    GW_UPSTREAM_BACKOFF_MAX_MS);
		gw_upstream_connect_cb(&links[i]->sul_connect);
	}
	lws_sul_schedule(gateway.ctx, 0, &gw_live.sul_ping, gw_upstream_ping_cb,
	    GW_UPSTREAM_PING_US);
	lws_sul_schedule(gateway.ctx, 0, &gw_ctl.sul_state,
	    gw_upstream_state_cb, GW_UPSTREAM_STATE_US);
}

void
gw_upstream_control_stop(void)
{
	lws_sul_cancel(&gw_ctl.link.sul_connect);
	lws_sul_cancel(&gw_live.link.sul_connect);
	lws_sul_cancel(&gw_live.sul_ping);
	lws_sul_cancel(&gw_ctl.sul_state);
}

/*
 * Reads what berthd sent on the liveness socket now, outside lws's turn:
 * a loop busy with clients' traffic may not have read a pong that came
 * in time, and that pong counts. What is not a whole frame stays in the
 * connection's buffer for lws's next read.
 */
static void
gw_upstream_live_drain(void)
{
	struct gw_upstream *up = gw_live.link.up;
	uint8_t buf[4096];
	ssize_t n;

	while (up != NULL && gw_live.ping_sent != 0 &&
	    (n = recv(lws_get_socket_fd(up->wsi), buf, sizeof buf,
	         MSG_DONTWAIT)) > 0) {
		if (gw_upstream_rx(up, buf, (size_t)n) < 0) {
			gw_upstream_close(up);
			return;
		}
	}
}

int
gw_upstream_berthd_up(const char **reason)
{
	struct gateway_berthd *b = &gateway.berthd;
	lws_usec_t age;

	if (!b->connected || !b->hello_ok) {
		*reason = b->reason;
		return 0;
	}
	if (gw_live.ping_sent != 0 &&
	    lws_now_usecs() - gw_live.ping_sent > GW_UPSTREAM_STALE_US)
		gw_upstream_live_drain();
	age = gw_live.ping_sent != 0 ? lws_now_usecs() - gw_live.ping_sent : 0;
	if (age > GW_UPSTREAM_STALE_US) {
		gw_upstream_set_reason("berthd has not answered a ping for "
		                       "%lld ms",
		    (long long)(age / 1000));
		*reason = b->reason;
		return 0;
	}
	return 1;
}
