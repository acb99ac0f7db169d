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

/* An answer to gateway.check is {} or a short error; anything longer is
 * not one. */
#define GW_CHECK_ANSWER_MAX 1024

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

/* The request, framed, into sb; the credential is wiped by the caller. */
static void
gw_check_pack(msgpack_sbuffer *sb, const char *door, const char *cred,
    size_t len, const char *peer)
{
	msgpack_packer pk;
	uint8_t hdr[FRAME_HDR] = {0};

	msgpack_sbuffer_init(sb);
	msgpack_sbuffer_write(sb, (const char *)hdr, FRAME_HDR);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	proto_pack_request(&pk, ++gw_check_id, "gateway.check");
	msgpack_pack_map(&pk, 3);
	proto_pack_kv_str(&pk, "door", door);
	proto_pack_kv_str(&pk, "peer", peer);
	proto_pack_str(&pk, "credential");
	msgpack_pack_str(&pk, len);
	msgpack_pack_str_body(&pk, cred, len);
	frame_header((uint8_t *)sb->data, (uint32_t)(sb->size - FRAME_HDR));
}

/* One round trip: the answer's verdict, or -1 if there is none. */
static int
gw_check_ask(const msgpack_sbuffer *sb, lws_usec_t deadline)
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
	if (proto_decode(buf, n, &m, &code, err, sizeof err) < 0)
		return -1;
	if (m.type != PROTO_RESPONSE || m.id != gw_check_id)
		r = -1;
	else if (m.ok)
		r = GW_CHECK_OK;
	else if (strcmp(m.err_code, PROTO_E_UNAUTHORIZED) == 0)
		r = GW_CHECK_REFUSED;
	else {
		log_warn("credential check: berthd: %s: %s", m.err_code,
		    m.err_message);
		r = -1;
	}
	proto_msg_free(&m);
	return r;
}

enum gw_check_result
gw_check(const char *door, const char *cred, size_t len, const char *peer)
{
	lws_usec_t deadline =
	    lws_now_usecs() + GW_CHECK_DEADLINE_MS * LWS_US_PER_MS;
	msgpack_sbuffer sb;
	int r = -1;

	if (gw_check_fd < 0 && gw_check_connect() < 0)
		return GW_CHECK_UNAVAILABLE;
	gw_check_pack(&sb, door, cred, len, peer);
	r = gw_check_ask(&sb, deadline);
	/* A connection berthd closed since the last check: once more on a
	 * new one, within the same deadline. */
	if (r < 0) {
		gw_check_close();
		if (gw_check_connect() == 0)
			r = gw_check_ask(&sb, deadline);
	}
	explicit_bzero(sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	if (r < 0) {
		gw_check_close();
		log_warn("credential check: berthd did not answer");
		return GW_CHECK_UNAVAILABLE;
	}
	return (enum gw_check_result)r;
}

const char *
gw_check_token(const char *door, const char *p, size_t len, const char *peer)
{
	if (gw_auth_trim(&p, &len) < 0)
		return "malformed";
	switch (gw_check(door, p, len, peer)) {
	case GW_CHECK_OK: return NULL;
	case GW_CHECK_REFUSED: return "invalid";
	default: return GW_AUTH_UNAVAILABLE;
	}
}

const char *
gw_check_presented(
    const char *door, const char *authz, size_t alen, const char *peer)
{
	const char *cred, *reason;
	size_t len;

	if (gw_auth_presented(authz, alen, &cred, &len, &reason) < 0)
		return reason;
	return gw_check_token(door, cred, len, peer);
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
gw_check_request(struct lws *wsi, const char *door)
{
	char authz[TOKENFILE_MAX + 64], peer[GATEWAY_PEER_MAX];
	const char *reason;
	int alen;

	gateway_peer(wsi, peer, sizeof peer);
	alen = gw_check_header(
	    wsi, WSI_TOKEN_HTTP_AUTHORIZATION, authz, sizeof authz);
	if (alen == -2)
		reason = "malformed";
	else
		reason = gw_check_presented(door, alen >= 0 ? authz : NULL,
		    alen >= 0 ? (size_t)alen : 0, peer);
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
