/* gw_check: the blocking credential check (see gw_check.h), and the
 * headers it is asked about. Every copy of a credential made here is
 * wiped before it goes out of scope. Owns the one
 * check connection, opened when first needed and closed on any error or
 * missed deadline, so that a late answer is never taken for the next
 * question's. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "gateway.h"
#include "gw_auth.h"
#include "gw_check.h"
#include "log.h"
#include "proto.h"
#include "tokenfile.h"

/* An answer to gateway.check is {}, a grant's fields or a short error;
 * anything longer is not one. */
#define GW_CHECK_ANSWER_MAX 4096

static int gw_check_fd = -1;
static uint64_t gw_check_id;

void
gw_check_close(void)
{
	if (gw_check_fd >= 0)
		close(gw_check_fd);
	gw_check_fd = -1;
}

static int
gw_check_connect(void)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", gateway.socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
		log_warn("credential check: connect %s: %s",
		    gateway.socket_path, strerror(errno));
		close(fd);
		return -1;
	}
	gw_check_fd = fd;
	return 0;
}

/* Waits for events on the connection until the deadline; -1 past it. */
static int
gw_check_wait(short events, lws_usec_t deadline)
{
	struct pollfd p = {gw_check_fd, events, 0};
	lws_usec_t left;
	int n;

	for (;;) {
		left = deadline - lws_now_usecs();
		if (left <= 0)
			return -1;
		n = poll(&p, 1, (int)((left + 999) / 1000));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

static int
gw_check_send(const uint8_t *msg, size_t len, lws_usec_t deadline)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = send(gw_check_fd, msg + off, len - off, MSG_NOSIGNAL);
		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		else if (gw_check_wait(POLLOUT, deadline) < 0)
			return -1;
	}
	return 0;
}

/* Reads exactly len bytes. */
static int
gw_check_recv(uint8_t *buf, size_t len, lws_usec_t deadline)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = recv(gw_check_fd, buf + off, len - off, 0);
		if (n > 0)
			off += (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			return -1;
		else if (gw_check_wait(POLLIN, deadline) < 0)
			return -1;
	}
	return 0;
}

/* Starts a request of op with nargs arguments, framed, in sb; the
 * caller packs the arguments and ends it with gw_check_frame. */
static void
gw_check_begin(
    msgpack_sbuffer *sb, msgpack_packer *pk, const char *op, uint32_t nargs)
{
	uint8_t hdr[FRAME_HDR] = {0};

	msgpack_sbuffer_init(sb);
	msgpack_sbuffer_write(sb, (const char *)hdr, FRAME_HDR);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	proto_pack_request(pk, ++gw_check_id, op);
	msgpack_pack_map(pk, nargs);
}

static void
gw_check_frame(msgpack_sbuffer *sb)
{
	frame_header((uint8_t *)sb->data, (uint32_t)(sb->size - FRAME_HDR));
}

/* The request, framed, into sb; the credential and key are wiped by the
 * caller. */
static void
gw_check_pack(msgpack_sbuffer *sb, const char *door, const char *cred,
    size_t len, const char *key, const char *peer)
{
	msgpack_packer pk;

	gw_check_begin(sb, &pk, "gateway.check", key != NULL ? 4 : 3);
	proto_pack_kv_str(&pk, "door", door);
	proto_pack_kv_str(&pk, "peer", peer);
	proto_pack_str(&pk, "credential");
	msgpack_pack_str(&pk, len);
	msgpack_pack_str_body(&pk, cred, len);
	if (key != NULL)
		proto_pack_kv_str(&pk, "key", key);
	gw_check_frame(sb);
}

/*
 * An admitting answer's fields into *out: 0, or -1 if one is of the
 * wrong type or too long, or a grant comes without its expiry or scope.
 * A field a door does not have is left zero.
 */
static int
gw_check_fields(const msgpack_object *r, void *arg)
{
	struct gw_check_answer *out = arg;
	uint64_t port = 0;
	int g;

	if (r->type != MSGPACK_OBJECT_MAP)
		return -1;
	g = proto_arg_str(r, "grant", out->grant, sizeof out->grant);
	if (g < 0)
		return -1;
	if (g == 0)
		return r->via.map.size == 0 ? 0 : -1;
	if (proto_arg_u64(r, "expires_at", &out->expires_at_ms) != 1 ||
	    proto_arg_str(r, "scope", out->scope, sizeof out->scope) != 1 ||
	    proto_arg_bool(r, "control", &out->control) < 0 ||
	    proto_arg_u64(r, "port", &port) < 0 || port > UINT16_MAX ||
	    proto_arg_str(r, "authorization", out->authorization,
	        sizeof out->authorization) < 0 ||
	    proto_arg_str(r, "pty", out->pty, sizeof out->pty) < 0 ||
	    proto_arg_bool(r, "write", &out->write) < 0)
		return -1;
	out->port = (uint16_t)port;
	return 0;
}

/* Reads an admitting answer's result into out: 0, or -1 if it is
 * malformed. */
typedef int (*gw_check_fields_fn)(const msgpack_object *r, void *out);

/* One round trip: the answer's verdict, or -1 if there is none; an
 * admitting answer's fields into out (size bytes, wiped if malformed). */
static int
gw_check_ask(const msgpack_sbuffer *sb, lws_usec_t deadline,
    gw_check_fields_fn fields, void *out, size_t size)
{
	uint8_t hdr[FRAME_HDR], buf[GW_CHECK_ANSWER_MAX];
	struct proto_msg m;
	const char *code;
	char err[128];
	uint32_t n;
	int r;

	if (gw_check_send((const uint8_t *)sb->data, sb->size, deadline) < 0 ||
	    gw_check_recv(hdr, FRAME_HDR, deadline) < 0)
		return -1;
	n = frame_length(hdr);
	if (n == 0 || n > sizeof buf || gw_check_recv(buf, n, deadline) < 0)
		return -1;
	r = proto_decode(buf, n, &m, &code, err, sizeof err);
	if (r < 0) {
		explicit_bzero(buf, n);
		return -1;
	}
	if (m.type != PROTO_RESPONSE || m.id != gw_check_id)
		r = -1;
	else if (m.ok) {
		r = GW_CHECK_OK;
		if (fields(m.result, out) < 0) {
			log_warn("credential check: berthd's answer is "
			         "malformed");
			explicit_bzero(out, size);
			r = -1;
		}
	} else if (strcmp(m.err_code, PROTO_E_UNAUTHORIZED) == 0)
		r = GW_CHECK_REFUSED;
	else {
		log_warn("credential check: berthd: %s: %s", m.err_code,
		    m.err_message);
		r = -1;
	}
	proto_msg_free(&m);
	/* An answer may carry a runtime's Authorization; the decoded
	 * strings point into buf. */
	explicit_bzero(buf, n);
	return r;
}

/* Sends the request in sb and waits for its answer, once more on a new
 * connection if berthd closed the last one, within one deadline. */
static enum gw_check_result
gw_check_round(
    msgpack_sbuffer *sb, gw_check_fields_fn fields, void *out, size_t size)
{
	lws_usec_t deadline =
	    lws_now_usecs() + GW_CHECK_DEADLINE_MS * LWS_US_PER_MS;
	int r = -1;

	if (gw_check_fd >= 0 || gw_check_connect() == 0) {
		r = gw_check_ask(sb, deadline, fields, out, size);
		if (r < 0) {
			gw_check_close();
			if (gw_check_connect() == 0)
				r = gw_check_ask(
				    sb, deadline, fields, out, size);
		}
	}
	explicit_bzero(sb->data, sb->size);
	msgpack_sbuffer_destroy(sb);
	if (r < 0) {
		gw_check_close();
		log_warn("credential check: berthd did not answer");
		return GW_CHECK_UNAVAILABLE;
	}
	return (enum gw_check_result)r;
}

enum gw_check_result
gw_check_grant(const char *door, const char *cred, size_t len, const char *key,
    const char *peer, struct gw_check_answer *out)
{
	struct gw_check_answer scratch;
	msgpack_sbuffer sb;
	enum gw_check_result r;

	if (out == NULL) {
		r = gw_check_grant(door, cred, len, key, peer, &scratch);
		explicit_bzero(&scratch, sizeof scratch);
		return r;
	}
	memset(out, 0, sizeof *out);
	gw_check_pack(&sb, door, cred, len, key, peer);
	return gw_check_round(&sb, gw_check_fields, out, sizeof *out);
}

/* What a redeeming answer holds: {token}. */
struct gw_check_token_out {
	char *buf;
	size_t size;
};

static int
gw_check_token_field(const msgpack_object *r, void *arg)
{
	struct gw_check_token_out *t = arg;

	return proto_arg_str(r, "token", t->buf, t->size) == 1 ? 0 : -1;
}

enum gw_check_result
gw_check_redeem(const char *grant, const char *code, char *token, size_t size)
{
	struct gw_check_token_out t = {token, size};
	msgpack_sbuffer sb;
	msgpack_packer pk;
	enum gw_check_result r;

	gw_check_begin(&sb, &pk, "gateway.redeem", 2);
	proto_pack_kv_str(&pk, "grant", grant);
	proto_pack_kv_str(&pk, "code", code);
	gw_check_frame(&sb);
	r = gw_check_round(&sb, gw_check_token_field, &t, 0);
	if (r != GW_CHECK_OK)
		explicit_bzero(token, size);
	return r;
}

const char *
gw_check_token(const char *door, const char *p, size_t len, const char *peer,
    struct gw_check_answer *out)
{
	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (gw_auth_trim(&p, &len) < 0)
		return "malformed";
	switch (gw_check_grant(door, p, len, NULL, peer, out)) {
	case GW_CHECK_OK: return NULL;
	case GW_CHECK_REFUSED: return "invalid";
	default: return GW_AUTH_UNAVAILABLE;
	}
}

const char *
gw_check_presented(const char *door, const char *authz, size_t alen,
    const char *peer, struct gw_check_answer *out)
{
	const char *cred, *reason;
	size_t len;

	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (gw_auth_presented(authz, alen, &cred, &len, &reason) < 0)
		return reason;
	return gw_check_token(door, cred, len, peer, out);
}

int
gw_check_header(
    struct lws *wsi, enum lws_token_indexes h, char *buf, size_t size)
{
	int n = lws_hdr_total_length(wsi, h);

	if (n <= 0)
		return -1;
	if ((size_t)n >= size || lws_hdr_copy(wsi, buf, (int)size, h) < 0)
		return -2;
	return n;
}

const char *
gw_check_request(struct lws *wsi, const char *door, struct gw_check_answer *out)
{
	char authz[TOKENFILE_MAX + 64], peer[GATEWAY_PEER_MAX];
	const char *reason;
	int alen;

	gateway_peer(wsi, peer, sizeof peer);
	alen = gw_check_header(
	    wsi, WSI_TOKEN_HTTP_AUTHORIZATION, authz, sizeof authz);
	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (alen == -2)
		reason = "malformed";
	else
		reason = gw_check_presented(door, alen >= 0 ? authz : NULL,
		    alen >= 0 ? (size_t)alen : 0, peer, out);
	explicit_bzero(authz, sizeof authz);
	return reason;
}

int
gw_check_copy(struct lws *wsi, char *buf, size_t size)
{
	char authz[TOKENFILE_MAX + 64];
	const char *cred, *reason;
	int alen, r = -1;
	size_t len;

	alen = gw_check_header(
	    wsi, WSI_TOKEN_HTTP_AUTHORIZATION, authz, sizeof authz);
	if (alen >= 0 &&
	    gw_auth_presented(authz, (size_t)alen, &cred, &len, &reason) == 0 &&
	    len < size) {
		memcpy(buf, cred, len);
		buf[len] = '\0';
		r = (int)len;
	}
	explicit_bzero(authz, sizeof authz);
	return r;
}
