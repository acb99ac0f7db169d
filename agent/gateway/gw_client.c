/* gw_client: one berth.v1 WebSocket client and its relay to berthd. Owns
 * the client's outgoing queue and reassembly buffer; its upstream is
 * owned by gw_upstream and only borrowed here. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "gw_check.h"
#include "gw_client.h"
#include "gw_http.h"
#include "gw_mask.h"
#include "gw_metrics.h"
#include "gw_upstream.h"
#include "log.h"
#include "packcheck.h"
#include "proto.h"
#include "tokenfile.h"
#include "xmalloc.h"

/* Close codes beyond RFC 6455's: the client fell too far behind and
 * must reconnect and resume from the last seq it saw. */
#define GW_CLIENT_CLOSE_SLOW 4008
/* What a client is told when berthd cannot take it now: a client that
 * comes back later is served. */
#define GW_CLIENT_UNAVAILABLE "berthd unavailable: retry"
/* A connect to berthd whose backlog is full is tried again after
 * GW_CLIENT_CONNECT_MIN_MS, doubling up to GW_CLIENT_CONNECT_MAX_MS,
 * until GW_CLIENT_CONNECT_DEADLINE_MS after the first try. */
#define GW_CLIENT_CONNECT_MIN_MS 10
#define GW_CLIENT_CONNECT_MAX_MS 200
#define GW_CLIENT_CONNECT_DEADLINE_MS 5000
/* How long a closing client may take to accept its close frame. */
#define GW_CLIENT_CLOSE_GRACE_S 5
/* At most this many bytes go to one client per writeable callback, so
 * that one busy client does not hold up the others. */
#define GW_CLIENT_WRITE_BURST (1024u * 1024)

static void
gw_client_pause_rx(struct gw_client *c)
{
	if (!c->rx_paused) {
		lws_rx_flow_control(c->wsi, 0);
		c->rx_paused = 1;
	}
}

static void
gw_client_resume_rx(struct gw_client *c)
{
	if (c->rx_paused) {
		lws_rx_flow_control(c->wsi, 1);
		c->rx_paused = 0;
	}
}

/* Arranges for the client to be closed with code and reason: at once if
 * now is set (what is queued is dropped), else once the queue drained. */
static void
gw_client_close(struct gw_client *c, int code, const char *reason, int now)
{
	if (c->close_code != 0)
		return;
	c->close_code = code;
	snprintf(c->close_reason, sizeof c->close_reason, "%s", reason);
	c->close_now = now;
	if (now)
		gw_queue_clear(&c->out);
	lws_sul_cancel(&c->sul_stall);
	c->up_paused = 0;
	if (c->up != NULL) {
		gw_upstream_close(c->up);
		c->up = NULL;
	}
	/* What the client sends now is read and dropped (its close frame
	 * among it): a socket closed with bytes unread is reset, and the
	 * reset can discard the close frame before the client reads it. */
	gw_client_resume_rx(c);
	lws_callback_on_writable(c->wsi);
	/* A client that never reads never becomes writable; do not keep it
	 * (and its socket) forever. */
	lws_set_timeout(
	    c->wsi, PENDING_TIMEOUT_USER_OK, GW_CLIENT_CLOSE_GRACE_S);
}

/* Drops a client too far behind (why says how), with 4008. */
static void
gw_client_drop_slow(struct gw_client *c, const char *why)
{
	log_warn("client %s too slow: %zu bytes waiting%s; dropped", c->peer,
	    c->out.bytes, why);
	gw_metrics.slow_consumer_drops++;
	gw_client_close(
	    c, GW_CLIENT_CLOSE_SLOW, "slow consumer: resume with from_seq", 1);
}

static void
gw_client_stalled(lws_sorted_usec_list_t *sul)
{
	struct gw_client *c =
	    lws_container_of(sul, struct gw_client, sul_stall);
	char why[64];

	snprintf(
	    why, sizeof why, ", none taken for %u ms", gateway.client_stall_ms);
	gw_client_drop_slow(c, why);
}

/* (Re)starts the time the client has to take a byte of its full queue. */
static void
gw_client_stall_arm(struct gw_client *c)
{
	lws_sul_schedule(gateway.ctx, 0, &c->sul_stall, gw_client_stalled,
	    (lws_usec_t)gateway.client_stall_ms * LWS_US_PER_MS);
}

/*
 * Paces berthd's side by the client's queue: once client_queue bytes
 * wait, berthd's messages for this client are no longer read, so berthd
 * holds its output back (its streams and the journal wait for this client
 * alone) rather than the gateway dropping a client that reads, only more
 * slowly than berthd writes; reading resumes once half was written. A
 * client that takes nothing for client_stall_ms meanwhile has stopped
 * reading, and is dropped.
 */
static void
gw_client_pace(struct gw_client *c)
{
	if (c->up == NULL || c->close_code != 0)
		return;
	if (!c->up_paused && c->out.bytes >= gateway.client_queue) {
		c->up_paused = 1;
		gw_upstream_pause(c->up, 1);
		gw_client_stall_arm(c);
	} else if (c->up_paused && c->out.bytes <= gateway.client_queue / 2) {
		c->up_paused = 0;
		lws_sul_cancel(&c->sul_stall);
		gw_upstream_pause(c->up, 0);
	}
}

/* Queues a message for the client. The queue's own bound is past what
 * can come once berthd's side is paused (the rest of one read of it, with
 * one message that read completed); reaching it drops the client. answer
 * marks berthd's responses, which end a request in flight once written. */
static void
gw_client_queue(struct gw_client *c, const void *msg, size_t len, int answer)
{
	if (c->close_code != 0)
		return;
	if (gw_queue_push_copy(&c->out, msg, len, answer) < 0) {
		gw_client_drop_slow(c, " past the queue's bound");
		return;
	}
	gw_client_pace(c);
	lws_callback_on_writable(c->wsi);
}

static void gw_client_error(struct gw_client *c, uint64_t id, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
gw_client_error(
    struct gw_client *c, uint64_t id, const char *code, const char *fmt, ...)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_pack_error(&pk, id, code, "%s", message);
	PACKCHECK_SENT(sb.data, sb.size, NULL);
	gw_client_queue(c, sb.data, sb.size, 0);
	msgpack_sbuffer_destroy(&sb);
}

/* Marks the connection as remote before the client can say a word, so
 * berthd refuses it what only local programs may do; berthd takes
 * nothing from the gateway's uid without the client's own credential,
 * which the upgrade's check let through. */
static void
gw_client_attach(struct gw_client *c, const char *cred)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int n;

	c->up->client = c;
	c->up->attach_pending = 1;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	/* Its answer is told by coming first (attach_pending), not by its
	 * id; 0 is no request's. */
	proto_pack_request(&pk, 1, "gateway.attach");
	msgpack_pack_map(&pk, 3);
	proto_pack_kv_str(&pk, "peer", c->peer);
	proto_pack_kv_str(&pk, "door", c->door);
	proto_pack_kv_str(&pk, "credential", cred);
	PACKCHECK_SENT(sb.data, sb.size, NULL);
	n = gw_upstream_send_secret(c->up, sb.data, sb.size);
	explicit_bzero(sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	if (n < 0) {
		gw_client_close(c, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION,
		    GW_CLIENT_UNAVAILABLE, 1);
		return;
	}
	log_info("client %s connected", c->peer);
}

static void gw_client_connect_cb(lws_sorted_usec_list_t *sul);

/* Forgets the credential held for a delayed attach. */
static void
gw_client_forget_cred(struct gw_client *c)
{
	if (c->cred == NULL)
		return;
	explicit_bzero(c->cred, strlen(c->cred));
	free(c->cred);
	c->cred = NULL;
}

/*
 * Connects the client's upstream and attaches it with cred. A full
 * backlog is berthd busy, not gone: the connect is tried again on a
 * timer, the client's messages wait in its socket meanwhile (reading is
 * paused), and only past the deadline does the client get 1011. lws
 * frees the upgrade's headers once the client is established, so a
 * delayed attach takes a copy of the credential along, wiped once used.
 */
static void
gw_client_connect(struct gw_client *c, const char *cred)
{
	char *cause;

	if (c->close_code != 0)
		return;
	c->up = gw_upstream_open(GW_UPSTREAM_CLIENT, &cause);
	if (c->up == NULL && errno == EAGAIN &&
	    lws_now_usecs() < c->connect_deadline) {
		free(cause);
		gw_metrics.upstream_connect_retries++;
		if (c->cred == NULL)
			c->cred = xstrdup(cred);
		gw_client_pause_rx(c);
		lws_sul_schedule(gateway.ctx, 0, &c->sul_connect,
		    gw_client_connect_cb,
		    (lws_usec_t)backoff_next(&c->connect_backoff) *
		        LWS_US_PER_MS);
		return;
	}
	if (c->up == NULL) {
		log_warn("client %s: berthd unreachable at %s: %s", c->peer,
		    gateway.socket_path, cause);
		free(cause);
		gw_client_close(c, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION,
		    GW_CLIENT_UNAVAILABLE, 1);
		return;
	}
	gw_client_attach(c, cred);
	gw_client_resume(c);
}

static void
gw_client_connect_cb(lws_sorted_usec_list_t *sul)
{
	struct gw_client *c =
	    lws_container_of(sul, struct gw_client, sul_connect);

	gw_client_connect(c, c->cred);
	if (c->up != NULL || c->close_code != 0)
		gw_client_forget_cred(c);
}

static void
gw_client_established(struct gw_client *c, struct lws *wsi)
{
	char cred[TOKENFILE_MAX + 2], path[64];
	int n;

	c->wsi = wsi;
	/* The upgrade's check let only /v1 and the sessions' doors here. */
	c->door = lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) > 0 &&
	        gw_http_pty_path(path)
	    ? GW_CHECK_PTY
	    : GW_CHECK_V1;
	gw_queue_init(
	    &c->out, gateway.client_queue + GATEWAY_READ_MAX + PROTO_MAX_MSG);
	gateway_peer(wsi, c->peer, sizeof c->peer);
	gw_metrics.connections_total++;
	gw_metrics.connections_active++;
	c->counted = 1;
	backoff_init(&c->connect_backoff, GW_CLIENT_CONNECT_MIN_MS,
	    GW_CLIENT_CONNECT_MAX_MS);
	c->connect_deadline = lws_now_usecs() +
	    (lws_usec_t)GW_CLIENT_CONNECT_DEADLINE_MS * LWS_US_PER_MS;
	n = strcmp(c->door, GW_CHECK_PTY) == 0
	    ? gw_http_pty_credential(wsi, cred, sizeof cred)
	    : gw_check_copy(wsi, cred, sizeof cred);
	gw_client_connect(c, n >= 0 ? cred : "");
	explicit_bzero(cred, sizeof cred);
}

/* A request past PROTO_MAX_IN_FLIGHT unanswered ones: the client is not
 * reading its answers, or does not wait for them. What is queued still
 * goes out before the close; the answers still at berthd are lost. */
static void
gw_client_too_many(struct gw_client *c)
{
	char reason[GW_CLIENT_REASON_MAX];

	log_warn("client %s: %zu requests in flight; dropped", c->peer,
	    c->in_flight + 1);
	gw_metrics.slow_consumer_drops++;
	snprintf(reason, sizeof reason,
	    "slow consumer: %zu requests in flight; resume with from_seq and "
	    "resend unanswered requests",
	    c->in_flight + 1);
	gw_client_close(c, GW_CLIENT_CLOSE_SLOW, reason, 0);
}

/* One whole message from the client: checked, then forwarded as is. */
static void
gw_client_message(struct gw_client *c, const unsigned char *buf, size_t len)
{
	struct proto_msg m;
	const char *code;
	char err[256];

	gw_metrics.messages_in++;
	gw_metrics.bytes_in += len;
	if (proto_decode(buf, len, &m, &code, err, sizeof err) < 0) {
		/* A newer client's message, or a request without an id to
		 * answer under: refused here, where no answer of berthd's
		 * will come to end it in flight; the connection kept. */
		if (strcmp(code, PROTO_E_UNKNOWN_TYPE) == 0 ||
		    strcmp(code, PROTO_E_BAD_ID) == 0) {
			gw_client_error(c, m.id, code, "%s", err);
			return;
		}
		log_info("client %s sent a bad message: %s", c->peer, err);
		gw_client_error(c, 0, code, "%s", err);
		if (strcmp(code, PROTO_E_TOO_LARGE) == 0)
			gw_client_close(c, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
			    "message too large", 0);
		else
			gw_client_close(c, LWS_CLOSE_STATUS_POLICY_VIOLATION,
			    "bad message", 0);
		return;
	}
	if (m.type != PROTO_REQUEST) {
		gw_client_error(c, m.id, PROTO_E_UNKNOWN_TYPE,
		    "clients send requests only");
		goto out;
	}
	if (c->in_flight >= PROTO_MAX_IN_FLIGHT) {
		gw_client_too_many(c);
		goto out;
	}
	/* Local ops are refused by berthd, which knows this connection is
	 * attached; answering here would break the order of responses. */
	if (c->up == NULL)
		goto out;
	gw_upstream_send(c->up, buf, len);
	c->in_flight++;
	if (c->up->out.bytes > GW_UPSTREAM_HIGH_WATER)
		gw_client_pause_rx(c);
out:
	proto_msg_free(&m);
}

/*
 * A piece of a message. Fragments (and pieces of one frame that lws hands
 * over in turn) are gathered into one buffer; a message that would pass
 * PROTO_MAX_MSG is refused from what has been announced so far, before
 * more of it is buffered.
 */
static int
gw_client_receive(struct gw_client *c, const unsigned char *in, size_t len)
{
	size_t announced, need;

	if (c->close_code != 0)
		return 0;
	if (!c->in_message) {
		if (!lws_frame_is_binary(c->wsi)) {
			lws_close_reason(c->wsi,
			    LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE,
			    (unsigned char *)"binary messages only", 20);
			return -1;
		}
		c->in_message = 1;
		c->rxlen = 0;
	}
	announced = c->rxlen + len + lws_remaining_packet_payload(c->wsi);
	if (announced > PROTO_MAX_MSG) {
		log_info(
		    "client %s: message over %u bytes", c->peer, PROTO_MAX_MSG);
		gw_client_error(c, 0, PROTO_E_TOO_LARGE,
		    "message of at least %zu bytes exceeds the limit of %u",
		    announced, PROTO_MAX_MSG);
		/* The rest of it is read and dropped, until the client's
		 * close frame behind it. */
		gw_client_close(c, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
		    "message too large", 0);
		return 0;
	}
	if (!lws_is_final_fragment(c->wsi) || c->rxlen != 0) {
		need = c->rxlen + len;
		if (need > c->rxcap) {
			c->rxcap =
			    announced > 2 * c->rxcap ? announced : 2 * c->rxcap;
			if (c->rxcap > PROTO_MAX_MSG)
				c->rxcap = PROTO_MAX_MSG;
			c->rx = xrealloc(c->rx, c->rxcap);
		}
		memcpy(c->rx + c->rxlen, in, len);
		c->rxlen = need;
		if (!lws_is_final_fragment(c->wsi))
			return 0;
		in = c->rx;
		len = c->rxlen;
	}
	c->in_message = 0;
	c->rxlen = 0;
	gw_client_message(c, in, len);
	return 0;
}

/*
 * Writes what is queued while the socket takes it. One message per
 * writeable callback would drain one message per turn of the loop while
 * a single read from berthd can bring hundreds: the queue would then
 * measure the loop, not the client. lws_send_pipe_choked() is lws's own
 * test for whether another write goes straight to the socket, so no write
 * lands behind a partial one.
 */
static int
gw_client_writeable(struct gw_client *c)
{
	struct gw_queue_msg *m;
	size_t burst = 0;

	if (c->close_begun)
		return 0;
	if (c->close_code != 0 && (c->close_now || c->out.count == 0)) {
		lws_close_reason(c->wsi, (enum lws_close_status)c->close_code,
		    (unsigned char *)c->close_reason, strlen(c->close_reason));
		c->close_begun = 1;
		return -1;
	}
	while ((m = gw_queue_first(&c->out)) != NULL) {
		if (burst != 0 &&
		    (burst >= GW_CLIENT_WRITE_BURST ||
		        lws_send_pipe_choked(c->wsi)))
			break;
		if (lws_write(c->wsi, gw_queue_payload(m), m->len,
		        LWS_WRITE_BINARY) < (int)m->len)
			return -1;
		burst += m->len;
		if (m->mark && c->in_flight > 0)
			c->in_flight--;
		gw_metrics.messages_out++;
		gw_metrics.bytes_out += m->len;
		gw_queue_pop(&c->out);
	}
	gw_client_pace(c);
	if (burst != 0 && c->up_paused)
		gw_client_stall_arm(c);
	if (c->out.count != 0 || c->close_code != 0)
		lws_callback_on_writable(c->wsi);
	return 0;
}

static void
gw_client_closed(struct gw_client *c)
{
	lws_sul_cancel(&c->sul_connect);
	lws_sul_cancel(&c->sul_stall);
	gw_client_forget_cred(c);
	if (c->up != NULL) {
		gw_upstream_close(c->up);
		c->up = NULL;
	}
	gw_queue_clear(&c->out);
	free(c->rx);
	c->rx = NULL;
	if (c->counted) {
		gw_metrics.connections_active--;
		c->counted = 0;
		log_info("client %s disconnected", c->peer);
	}
}

int
gw_client_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct gw_client *c = user;

	if (gw_mask_filter(wsi, reason) < 0)
		return -1;
	switch (reason) {
	case LWS_CALLBACK_ESTABLISHED: gw_client_established(c, wsi); return 0;
	case LWS_CALLBACK_RECEIVE: return gw_client_receive(c, in, len);
	case LWS_CALLBACK_SERVER_WRITEABLE: return gw_client_writeable(c);
	case LWS_CALLBACK_CLOSED: gw_client_closed(c); return 0;
	default: return 0;
	}
}

/* Whether a message of berthd's is a response, from its head: berthd
 * packs every message with proto_pack_*, whose heads proto_peek_type
 * reads (test_proto holds the two to each other). */
static int
gw_client_is_answer(const void *msg, size_t len)
{
	enum proto_type type;

	return proto_peek_type(msg, len, &type) == 0 && type == PROTO_RESPONSE;
}

void
gw_client_deliver(struct gw_client *c, const void *msg, size_t len)
{
	gw_client_queue(c, msg, len, gw_client_is_answer(msg, len));
}

void
gw_client_upstream_gone(struct gw_client *c)
{
	c->up = NULL;
	/* At exit lws is closing everything itself. */
	if (gateway.stopping)
		return;
	gw_client_close(
	    c, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, GW_CLIENT_UNAVAILABLE, 0);
}

void
gw_client_resume(struct gw_client *c)
{
	if (c->close_code == 0)
		gw_client_resume_rx(c);
}
