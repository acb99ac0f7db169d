/* probe_ws: the client end of a WebSocket (RFC 6455), as much of it as the
 * cdp, cdp-ws and novnc checks need: the upgrade, masked frames out, and
 * frames in, put together into whole messages.
 *
 * The client is written here rather than taken from libwebsockets: one
 * message or two go each way, and a check must run under the same
 * deadline, the same poll(2) and the same buffers as the HTTP request
 * before it. An lws context per check (every second, for as long as the
 * service runs) would bring its own loop and timers for a handshake, one
 * masked frame out and a frame parser in. libwebsockets still computes
 * the handshake's SHA-1 and base64. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libwebsockets.h>

#include "probe.h"
#include "rand.h"
#include "xmalloc.h"

#define PROBE_WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

enum probe_verdict
probe_ws_frame(const uint8_t *buf, size_t len, struct probe_ws_frame *f,
    char *err, size_t errsize)
{
	uint64_t n;
	size_t i;

	if (len < 2)
		return PROBE_MORE;
	f->fin = buf[0] >> 7;
	f->opcode = buf[0] & 0x0f;
	if ((buf[0] & 0x70) != 0)
		return probe_fail(err, errsize, "a frame with RSV bits");
	if (buf[1] & 0x80)
		return probe_fail(err, errsize, "a masked frame");
	switch (f->opcode) {
	case PROBE_WS_CONT:
	case PROBE_WS_TEXT:
	case PROBE_WS_BINARY: break;
	case PROBE_WS_CLOSE:
	case PROBE_WS_PING:
	case PROBE_WS_PONG:
		if (!f->fin || (buf[1] & 0x7f) > 125)
			return probe_fail(err, errsize, "a bad control frame");
		break;
	default:
		return probe_fail(
		    err, errsize, "a frame of opcode %d", f->opcode);
	}
	n = buf[1] & 0x7f;
	f->hdrlen = 2;
	if (n >= 126) {
		f->hdrlen = n == 126 ? 4 : 10;
		if (len < f->hdrlen)
			return PROBE_MORE;
		for (n = 0, i = 2; i < f->hdrlen; i++)
			n = n << 8 | buf[i];
		/* The shortest form is the only form. */
		if (n < 126 || (f->hdrlen == 10 && n < 65536))
			return probe_fail(
			    err, errsize, "a frame length in the long form");
	}
	if (n > PROBE_WS_MAX_MSG)
		return probe_fail(err, errsize,
		    "a frame of %llu bytes, over %d", (unsigned long long)n,
		    PROBE_WS_MAX_MSG);
	f->len = (size_t)n;
	return len - f->hdrlen < f->len ? PROBE_MORE : PROBE_DONE;
}

/* Control frames are passed over (the connection is about to end, so a
 * ping needs no pong); data frames make up a message. */
enum probe_verdict
probe_ws_take(struct probe_ws_msg *m, const struct probe_ws_frame *f,
    const uint8_t *payload, char *err, size_t errsize)
{
	switch (f->opcode) {
	case PROBE_WS_PING:
	case PROBE_WS_PONG: return PROBE_MORE;
	case PROBE_WS_CLOSE:
		if (f->len >= 2)
			return probe_fail(err, errsize,
			    "the server closed the WebSocket (%u)",
			    (unsigned)payload[0] << 8 | payload[1]);
		return probe_fail(
		    err, errsize, "the server closed the WebSocket");
	case PROBE_WS_TEXT:
	case PROBE_WS_BINARY:
		if (m->open)
			return probe_fail(
			    err, errsize, "a message inside a message");
		m->open = 1;
		m->opcode = f->opcode;
		m->len = 0;
		break;
	case PROBE_WS_CONT:
		if (!m->open)
			return probe_fail(
			    err, errsize, "a continuation of no message");
		break;
	default:
		return probe_fail(
		    err, errsize, "a frame of opcode %d", f->opcode);
	}
	if (f->len > PROBE_WS_MAX_MSG - m->len)
		return probe_fail(
		    err, errsize, "a message over %d bytes", PROBE_WS_MAX_MSG);
	if (f->len > 0)
		memcpy(m->buf + m->len, payload, f->len);
	m->len += f->len;
	if (!f->fin)
		return PROBE_MORE;
	m->open = 0;
	return PROBE_DONE;
}

void
probe_ws_init(struct probe_ws *ws)
{
	memset(ws, 0, sizeof *ws);
	ws->in = xmalloc(PROBE_WS_IN);
	ws->msg.buf = xmalloc(PROBE_WS_MAX_MSG);
}

void
probe_ws_free(struct probe_ws *ws)
{
	free(ws->in);
	free(ws->msg.buf);
	memset(ws, 0, sizeof *ws);
}

int
probe_ws_send(struct probe_io *io, int opcode, const void *payload, size_t len,
    char **cause)
{
	uint8_t frame[6 + 125];
	const uint8_t *in = payload;
	size_t i;

	frame[0] = (uint8_t)(0x80 | opcode);
	frame[1] = (uint8_t)(0x80 | len);
	rand_bytes(frame + 2, 4);
	for (i = 0; i < len; i++)
		frame[6 + i] = in[i] ^ frame[2 + i % 4];
	return probe_io_write(io, frame, 6 + len, cause);
}

void
probe_ws_close(struct probe_io *io)
{
	char *ignored = NULL;

	if (probe_ws_send(io, PROBE_WS_CLOSE, "\x03\xe8", 2, &ignored) != 0)
		free(ignored);
}

/* Whether the comma-separated list [v, v+len) holds token (any case). */
static bool
probe_ws_listed(const char *v, size_t len, const char *token)
{
	const char *end = v + len, *comma;
	size_t n = strlen(token), tlen;

	while (v < end) {
		while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
			v++;
		comma = memchr(v, ',', (size_t)(end - v));
		tlen = (size_t)((comma == NULL ? end : comma) - v);
		while (tlen > 0 && (v[tlen - 1] == ' ' || v[tlen - 1] == '\t'))
			tlen--;
		if (tlen == n && strncasecmp(v, token, n) == 0)
			return true;
		v += tlen;
	}
	return false;
}

/* The answer: 101, Upgrade: websocket, Connection: upgrade, the accept
 * that proves it is to this key, and no subprotocol, as none was asked
 * for. */
static int
probe_ws_upgraded(const struct probe_http *h, const char *key, char **cause)
{
	char accept[64], digest[20], *concat;
	const char *v;
	size_t len;

	if (h->status != 101) {
		*cause =
		    xasprintf("the WebSocket upgrade got status %d", h->status);
		return -1;
	}
	v = probe_http_header(h, "Upgrade", &len);
	if (v == NULL || len != 9 || strncasecmp(v, "websocket", 9) != 0) {
		*cause = xstrdup("the upgrade answer lacks Upgrade: websocket");
		return -1;
	}
	v = probe_http_header(h, "Connection", &len);
	if (v == NULL || !probe_ws_listed(v, len, "upgrade")) {
		*cause = xstrdup("the upgrade answer lacks Connection: "
		                 "upgrade");
		return -1;
	}
	concat = xasprintf("%s%s", key, PROBE_WS_GUID);
	lws_SHA1((const unsigned char *)concat, strlen(concat),
	    (unsigned char *)digest);
	free(concat);
	lws_b64_encode_string(digest, sizeof digest, accept, sizeof accept);
	v = probe_http_header(h, "Sec-WebSocket-Accept", &len);
	if (v == NULL || len != strlen(accept) || memcmp(v, accept, len) != 0) {
		*cause = xstrdup("the upgrade answer has the wrong "
		                 "Sec-WebSocket-Accept");
		return -1;
	}
	if (probe_http_header(h, "Sec-WebSocket-Protocol", &len) != NULL) {
		*cause = xstrdup("the upgrade answer names a subprotocol, "
		                 "and none was asked for");
		return -1;
	}
	return 0;
}

/* The request carries the token (when there is one), so it is wiped
 * before it is freed; frames read with the answer stay in ws->in. */
int
probe_ws_upgrade(struct probe_io *io, struct probe_ws *ws,
    const struct probe_addr *addr, const char *path, const char *token,
    char **cause)
{
	struct probe_http h;
	uint8_t nonce[16];
	char key[32], *headers, *req;
	int r;

	rand_bytes(nonce, sizeof nonce);
	lws_b64_encode_string(
	    (const char *)nonce, sizeof nonce, key, sizeof key);
	headers = xasprintf("Upgrade: websocket\r\nConnection: Upgrade\r\n"
	                    "Sec-WebSocket-Key: %s\r\n"
	                    "Sec-WebSocket-Version: 13\r\n",
	    key);
	req = probe_http_request(addr, path, token, headers);
	free(headers);
	probe_http_init(&h, 0);
	ws->inlen = 0;
	ws->msg.open = 0;
	r = probe_http_exchange(
	    io, req, &h, ws->in, PROBE_WS_IN, &ws->inlen, cause);
	probe_free_secret(req);
	if (r == 0)
		r = probe_ws_upgraded(&h, key, cause);
	else if (h.state == PROBE_HTTP_FAILED)
		probe_cause_wrap(cause, "the WebSocket upgrade");
	probe_http_free(&h);
	return r;
}

int
probe_ws_recv(struct probe_io *io, struct probe_ws *ws, char **cause)
{
	struct probe_ws_frame f;
	char err[PROBE_ERR_MAX];
	enum probe_verdict v;
	ssize_t n;

	for (;;) {
		v = probe_ws_frame(ws->in, ws->inlen, &f, err, sizeof err);
		if (v == PROBE_MORE) {
			n = probe_io_read(io, ws->in + ws->inlen,
			    PROBE_WS_IN - ws->inlen, cause);
			if (n < 0)
				return -1;
			if (n == 0) {
				*cause = xstrdup("the server closed the "
				                 "connection");
				return -1;
			}
			ws->inlen += (size_t)n;
			continue;
		}
		if (v == PROBE_DONE)
			v = probe_ws_take(
			    &ws->msg, &f, ws->in + f.hdrlen, err, sizeof err);
		if (v == PROBE_FAIL) {
			*cause = xstrdup(err);
			return -1;
		}
		ws->inlen -= f.hdrlen + f.len;
		memmove(ws->in, ws->in + f.hdrlen + f.len, ws->inlen);
		if (v == PROBE_DONE)
			return 0;
	}
}
