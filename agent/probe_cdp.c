/* probe_cdp: ready when Chromium's DevTools answer Browser.getVersion over
 * the WebSocket that /json/version names. Owns a strict little JSON
 * scanner and the few pieces of a WebSocket client the check needs.
 *
 * The WebSocket client is written here rather than taken from
 * libwebsockets: one text message goes each way, and the check must run
 * under the same deadline, the same poll(2) and the same buffers as the
 * HTTP request before it. An lws context per check (every second, for as
 * long as the browser runs) would bring its own loop and timers for a
 * handshake, one masked frame out and a frame parser in. libwebsockets
 * still computes the handshake's SHA-1 and base64. */
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

#define PROBE_CDP_MAX_DEPTH 32
#define PROBE_CDP_KEY_MAX 64 /* longer keys are not ones we look for */
#define PROBE_CDP_REQUEST "{\"id\":1,\"method\":\"Browser.getVersion\"}"
#define PROBE_CDP_WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* A whole frame fits: payload limit and the longest header. */
#define PROBE_CDP_IN (PROBE_CDP_MAX_JSON + 14)

enum probe_cdp_opcode {
	PROBE_CDP_CONT = 0x0,
	PROBE_CDP_TEXT = 0x1,
	PROBE_CDP_BINARY = 0x2,
	PROBE_CDP_CLOSE = 0x8,
	PROBE_CDP_PING = 0x9,
	PROBE_CDP_PONG = 0xa,
};

/* The check's state, allocated by parse and kept for good. */
struct probe_cdp_check {
	struct probe_addr addr;
};

static enum probe_verdict probe_cdp_fail(char *err, size_t errsize,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static enum probe_verdict
probe_cdp_fail(char *err, size_t errsize, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsize, fmt, ap);
	va_end(ap);
	return PROBE_FAIL;
}

/*
 * JSON (RFC 8259), strictly: each function takes the text from p to end
 * and returns where the thing it read ends, or NULL if it is not JSON.
 * Nesting deeper than PROBE_CDP_MAX_DEPTH is refused, so the recursion is
 * bounded. Bytes over 0x7f inside strings are passed over unchecked: what
 * is taken out of a string is checked again by whoever uses it.
 */
static const char *probe_cdp_json_value(
    const char *p, const char *end, int depth);

static const char *
probe_cdp_json_space(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int
probe_cdp_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
		return (c | 0x20) - 'a' + 10;
	return -1;
}

static const char *
probe_cdp_json_string(const char *p, const char *end)
{
	int i;

	if (p == end || *p++ != '"')
		return NULL;
	while (p < end && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p++ != '\\')
			continue;
		if (p == end)
			return NULL;
		if (*p == 'u') {
			if (end - p < 5)
				return NULL;
			for (i = 1; i <= 4; i++)
				if (probe_cdp_hex(p[i]) < 0)
					return NULL;
			p += 5;
		} else if (*p != '\0' && strchr("\"\\/bfnrt", *p) != NULL)
			p++;
		else
			return NULL;
	}
	return p < end ? p + 1 : NULL;
}

static const char *
probe_cdp_json_digits(const char *p, const char *end)
{
	const char *start = p;

	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p == start ? NULL : p;
}

static const char *
probe_cdp_json_number(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if ((p = probe_cdp_json_digits(p, end)) == NULL)
		return NULL;
	if (p < end && *p == '.' &&
	    (p = probe_cdp_json_digits(p + 1, end)) == NULL)
		return NULL;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		p = probe_cdp_json_digits(p, end);
	}
	return p;
}

/* An object or an array: open, members separated by commas, close. */
static const char *
probe_cdp_json_container(const char *p, const char *end, int depth)
{
	char close = *p == '{' ? '}' : ']';

	if (depth >= PROBE_CDP_MAX_DEPTH)
		return NULL;
	p = probe_cdp_json_space(p + 1, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		if (close == '}') {
			p = probe_cdp_json_string(p, end);
			if (p == NULL)
				return NULL;
			p = probe_cdp_json_space(p, end);
			if (p == end || *p != ':')
				return NULL;
			p = probe_cdp_json_space(p + 1, end);
		}
		if ((p = probe_cdp_json_value(p, end, depth + 1)) == NULL)
			return NULL;
		p = probe_cdp_json_space(p, end);
		if (p == end)
			return NULL;
		if (*p == close)
			return p + 1;
		if (*p != ',')
			return NULL;
		p = probe_cdp_json_space(p + 1, end);
	}
}

static const char *
probe_cdp_json_value(const char *p, const char *end, int depth)
{
	static const char *const words[] = {"true", "false", "null"};
	size_t i, n;

	if (p == end)
		return NULL;
	switch (*p) {
	case '{':
	case '[': return probe_cdp_json_container(p, end, depth);
	case '"': return probe_cdp_json_string(p, end);
	case '-': return probe_cdp_json_number(p, end);
	}
	if (*p >= '0' && *p <= '9')
		return probe_cdp_json_number(p, end);
	for (i = 0; i < sizeof words / sizeof words[0]; i++) {
		n = strlen(words[i]);
		if ((size_t)(end - p) >= n && memcmp(p, words[i], n) == 0)
			return p + n;
	}
	return NULL;
}

static void
probe_cdp_utf8(char *out, size_t *o, uint32_t cp)
{
	if (cp < 0x80)
		out[(*o)++] = (char)cp;
	else if (cp < 0x800) {
		out[(*o)++] = (char)(0xc0 | cp >> 6);
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*o)++] = (char)(0xe0 | cp >> 12);
		out[(*o)++] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*o)++] = (char)(0xf0 | cp >> 18);
		out[(*o)++] = (char)(0x80 | (cp >> 12 & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static uint32_t
probe_cdp_u4(const char *p)
{
	return (uint32_t)(probe_cdp_hex(p[0]) << 12 | probe_cdp_hex(p[1]) << 8 |
	    probe_cdp_hex(p[2]) << 4 | probe_cdp_hex(p[3]));
}

/* One \uXXXX escape at *p (its backslash), or a surrogate pair of
 * them, as a code point; *p moves past it. 0 if it is not a character. */
static uint32_t
probe_cdp_json_escape(const char **p, const char *end)
{
	uint32_t cp = probe_cdp_u4(*p + 2), lo;

	*p += 6;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return 0;
	if (cp < 0xd800 || cp > 0xdbff)
		return cp;
	if (end - *p < 6 || (*p)[0] != '\\' || (*p)[1] != 'u')
		return 0;
	lo = probe_cdp_u4(*p + 2);
	if (lo < 0xdc00 || lo > 0xdfff)
		return 0;
	*p += 6;
	return 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
}

/*
 * Decodes the string at p (checked by probe_cdp_json_string) into out,
 * NUL-terminated. -1 if it holds U+0000 or a lone surrogate, or does not
 * fit in outsize bytes.
 */
static int
probe_cdp_json_decode(const char *p, const char *end, char *out, size_t outsize)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	size_t o = 0;
	uint32_t cp;

	for (p++; p < end && *p != '"';) {
		if (outsize - o < 5)
			return -1;
		if (*p != '\\') {
			out[o++] = *p++;
			continue;
		}
		if (p[1] != 'u') {
			out[o++] = to[strchr(from, p[1]) - from];
			p += 2;
			continue;
		}
		if ((cp = probe_cdp_json_escape(&p, end)) == 0)
			return -1;
		probe_cdp_utf8(out, &o, cp);
	}
	out[o] = '\0';
	return 0;
}

/*
 * Finds key among the members of the object that is the whole of
 * [p, end) (spaces around it allowed), setting [*v, *vend) to its value.
 * 1 if found, 0 if not, -1 if the text is not one JSON object, -2 if it
 * has the key twice (which of the two would count is anyone's guess).
 */
static int
probe_cdp_json_member(const char *p, const char *end, const char *key,
    const char **v, const char **vend)
{
	char name[PROBE_CDP_KEY_MAX];
	const char *k, *kend, *val, *vals;
	int found = 0;

	p = probe_cdp_json_space(p, end);
	if (p == end || *p != '{' ||
	    (vals = probe_cdp_json_value(p, end, 0)) == NULL ||
	    probe_cdp_json_space(vals, end) != end)
		return -1;
	p = probe_cdp_json_space(p + 1, end);
	while (*p == '"') {
		k = p;
		kend = probe_cdp_json_string(k, end);
		val = probe_cdp_json_space(
		    probe_cdp_json_space(kend, end) + 1, end);
		vals = probe_cdp_json_value(val, end, 1);
		if (probe_cdp_json_decode(k, kend, name, sizeof name) == 0 &&
		    strcmp(name, key) == 0) {
			if (found)
				return -2;
			found = 1;
			*v = val;
			*vend = vals;
		}
		p = probe_cdp_json_space(vals, end);
		if (*p == ',')
			p = probe_cdp_json_space(p + 1, end);
	}
	return found;
}

/* The string member key of the object [p, end), decoded into out. */
static int
probe_cdp_json_text(const char *p, const char *end, const char *key, char *out,
    size_t outsize, char *err, size_t errsize)
{
	const char *v, *vend;
	int r;

	r = probe_cdp_json_member(p, end, key, &v, &vend);
	if (r == -2)
		probe_cdp_fail(err, errsize, "%s twice", key);
	else if (r < 0)
		probe_cdp_fail(err, errsize, "not a JSON object");
	else if (r == 0)
		probe_cdp_fail(err, errsize, "no %s", key);
	else if (*v != '"')
		probe_cdp_fail(err, errsize, "%s is not a string", key);
	else if (probe_cdp_json_decode(v, vend, out, outsize) != 0)
		probe_cdp_fail(err, errsize,
		    "%s is over %zu bytes or holds U+0000 or a lone surrogate",
		    key, outsize - 5);
	else
		return 0;
	return -1;
}

enum probe_verdict
probe_cdp_ws_path(const char *json, size_t len, char *path, size_t pathsize,
    char *err, size_t errsize)
{
	char url[PROBE_CDP_MAX_PATH + 64], *p, *slash;

	if (probe_cdp_json_text(json, json + len, "webSocketDebuggerUrl", url,
	        sizeof url, err, errsize) != 0)
		return PROBE_FAIL;
	if (strncmp(url, "ws://", 5) != 0 ||
	    (slash = strchr(url + 5, '/')) == NULL || slash == url + 5)
		return probe_cdp_fail(err, errsize,
		    "webSocketDebuggerUrl %.80s is not ws://HOST/PATH", url);
	for (p = slash; *p != '\0'; p++)
		if (*p <= ' ' || *p >= 0x7f || *p == '#')
			return probe_cdp_fail(err, errsize,
			    "webSocketDebuggerUrl has a bad path");
	if (strlen(slash) >= pathsize)
		return probe_cdp_fail(
		    err, errsize, "webSocketDebuggerUrl is too long");
	memcpy(path, slash, strlen(slash) + 1);
	return PROBE_DONE;
}

enum probe_verdict
probe_cdp_answer(const char *json, size_t len, char *err, size_t errsize)
{
	const char *end = json + len, *v, *vend;
	char message[128];
	int r;

	r = probe_cdp_json_member(json, end, "id", &v, &vend);
	if (r == -1)
		return probe_cdp_fail(err, errsize,
		    "a message that is not a "
		    "JSON object");
	if (r == -2)
		return probe_cdp_fail(err, errsize, "a message with id twice");
	if (r == 0 || vend - v != 1 || *v != '1')
		return PROBE_MORE;
	if (probe_cdp_json_member(json, end, "error", &v, &vend) == 1) {
		if (*v == '{' &&
		    probe_cdp_json_text(v, vend, "message", message,
		        sizeof message, err, errsize) == 0)
			return probe_cdp_fail(err, errsize,
			    "Browser.getVersion failed: %s", message);
		return probe_cdp_fail(
		    err, errsize, "Browser.getVersion failed");
	}
	if (probe_cdp_json_member(json, end, "result", &v, &vend) != 1 ||
	    *v != '{')
		return probe_cdp_fail(
		    err, errsize, "Browser.getVersion: no result");
	if (probe_cdp_json_member(v, vend, "product", &v, &vend) != 1 ||
	    *v != '"')
		return probe_cdp_fail(err, errsize,
		    "Browser.getVersion: no product in the result");
	return PROBE_DONE;
}

/* WebSocket (RFC 6455). */

enum probe_verdict
probe_cdp_frame(const uint8_t *buf, size_t len, struct probe_cdp_frame *f,
    char *err, size_t errsize)
{
	uint64_t n;
	size_t i;

	if (len < 2)
		return PROBE_MORE;
	f->fin = buf[0] >> 7;
	f->opcode = buf[0] & 0x0f;
	if ((buf[0] & 0x70) != 0)
		return probe_cdp_fail(err, errsize, "a frame with RSV bits");
	if (buf[1] & 0x80)
		return probe_cdp_fail(err, errsize, "a masked frame");
	switch (f->opcode) {
	case PROBE_CDP_CONT:
	case PROBE_CDP_TEXT:
	case PROBE_CDP_BINARY: break;
	case PROBE_CDP_CLOSE:
	case PROBE_CDP_PING:
	case PROBE_CDP_PONG:
		if (!f->fin || (buf[1] & 0x7f) > 125)
			return probe_cdp_fail(
			    err, errsize, "a bad control frame");
		break;
	default:
		return probe_cdp_fail(
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
			return probe_cdp_fail(
			    err, errsize, "a frame length in the long form");
	}
	if (n > PROBE_CDP_MAX_JSON)
		return probe_cdp_fail(err, errsize,
		    "a frame of %llu bytes, over %d", (unsigned long long)n,
		    PROBE_CDP_MAX_JSON);
	f->len = (size_t)n;
	return len - f->hdrlen < f->len ? PROBE_MORE : PROBE_DONE;
}

/* One masked frame to the browser (payload under 126 bytes). */
static int
probe_cdp_send(struct probe_io *io, int opcode, const void *payload, size_t len,
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

/* Whether the comma-separated list [v, v+len) holds token (any case). */
static bool
probe_cdp_token(const char *v, size_t len, const char *token)
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

/* The upgrade: 101, Upgrade: websocket, Connection: upgrade, and the
 * accept that proves the answer is to this key. */
static int
probe_cdp_upgraded(const struct probe_http *h, const char *key, char **cause)
{
	char accept[64], digest[20], *concat;
	const char *v;
	size_t len;

	if (h->status != 101) {
		*cause = xasprintf(
		    "cdp: the WebSocket upgrade got status %d", h->status);
		return -1;
	}
	v = probe_http_header(h, "Upgrade", &len);
	if (v == NULL || len != 9 || strncasecmp(v, "websocket", 9) != 0) {
		*cause = xstrdup("cdp: the upgrade answer lacks Upgrade: "
		                 "websocket");
		return -1;
	}
	v = probe_http_header(h, "Connection", &len);
	if (v == NULL || !probe_cdp_token(v, len, "upgrade")) {
		*cause = xstrdup("cdp: the upgrade answer lacks Connection: "
		                 "upgrade");
		return -1;
	}
	concat = xasprintf("%s%s", key, PROBE_CDP_WS_GUID);
	lws_SHA1((const unsigned char *)concat, strlen(concat),
	    (unsigned char *)digest);
	free(concat);
	lws_b64_encode_string(digest, sizeof digest, accept, sizeof accept);
	v = probe_http_header(h, "Sec-WebSocket-Accept", &len);
	if (v == NULL || len != strlen(accept) || memcmp(v, accept, len) != 0) {
		*cause = xstrdup("cdp: the upgrade answer has the wrong "
		                 "Sec-WebSocket-Accept");
		return -1;
	}
	return 0;
}

/* A message being put together from frames; buf holds PROBE_CDP_MAX_JSON
 * bytes, allocated and freed by probe_cdp_ask. */
struct probe_cdp_msg {
	char *buf;
	size_t len;
	bool open; /* a first frame came, not yet the final one */
};

/* One frame: control frames are passed over (the connection is about to
 * end, so a ping needs no pong), text frames make up a message, and a
 * whole message is looked at. */
static enum probe_verdict
probe_cdp_take(struct probe_cdp_msg *m, const struct probe_cdp_frame *f,
    const uint8_t *payload, char *err, size_t errsize)
{
	switch (f->opcode) {
	case PROBE_CDP_PING:
	case PROBE_CDP_PONG: return PROBE_MORE;
	case PROBE_CDP_CLOSE:
		if (f->len >= 2)
			return probe_cdp_fail(err, errsize,
			    "the browser closed the WebSocket (%u)",
			    (unsigned)payload[0] << 8 | payload[1]);
		return probe_cdp_fail(
		    err, errsize, "the browser closed the WebSocket");
	case PROBE_CDP_TEXT:
		if (m->open)
			return probe_cdp_fail(
			    err, errsize, "a message inside a message");
		m->open = true;
		m->len = 0;
		break;
	case PROBE_CDP_CONT:
		if (!m->open)
			return probe_cdp_fail(
			    err, errsize, "a continuation of no message");
		break;
	default: return probe_cdp_fail(err, errsize, "a binary message");
	}
	if (f->len > PROBE_CDP_MAX_JSON - m->len)
		return probe_cdp_fail(err, errsize, "a message over %d bytes",
		    PROBE_CDP_MAX_JSON);
	memcpy(m->buf + m->len, payload, f->len);
	m->len += f->len;
	if (!f->fin)
		return PROBE_MORE;
	m->open = false;
	return probe_cdp_answer(m->buf, m->len, err, errsize);
}

/* Sends Browser.getVersion and reads frames until the answer; in holds
 * inlen bytes already read (PROBE_CDP_IN in all). */
static int
probe_cdp_ask(struct probe_io *io, uint8_t *in, size_t inlen, char **cause)
{
	struct probe_cdp_msg m = {.buf = xmalloc(PROBE_CDP_MAX_JSON)};
	struct probe_cdp_frame f;
	char err[PROBE_ERR_MAX];
	enum probe_verdict v;
	ssize_t n = 0;

	snprintf(io->doing, sizeof io->doing,
	    "cdp: waiting for Browser.getVersion's answer");
	if (probe_cdp_send(io, PROBE_CDP_TEXT, PROBE_CDP_REQUEST,
	        strlen(PROBE_CDP_REQUEST), cause) != 0) {
		free(m.buf);
		return -1;
	}
	for (;;) {
		v = probe_cdp_frame(in, inlen, &f, err, sizeof err);
		if (v == PROBE_MORE) {
			n = probe_io_read(
			    io, in + inlen, PROBE_CDP_IN - inlen, cause);
			if (n <= 0)
				break;
			inlen += (size_t)n;
			continue;
		}
		if (v == PROBE_FAIL)
			break;
		v = probe_cdp_take(&m, &f, in + f.hdrlen, err, sizeof err);
		inlen -= f.hdrlen + f.len;
		memmove(in, in + f.hdrlen + f.len, inlen);
		if (v != PROBE_MORE)
			break;
	}
	free(m.buf);
	if (v == PROBE_MORE && n == 0)
		*cause = xstrdup("cdp: the browser closed the connection "
		                 "before answering");
	else if (v == PROBE_FAIL)
		*cause = xasprintf("cdp: %s", err);
	return v == PROBE_DONE ? 0 : -1;
}

/* The WebSocket upgrade of a connected io, with a fresh key. Frames read
 * with the answer are left in in, *inlen of them. */
static int
probe_cdp_upgrade(struct probe_io *io, const struct probe_cdp_check *c,
    const char *path, uint8_t *in, size_t *inlen, char **cause)
{
	struct probe_http h;
	uint8_t nonce[16];
	char key[32], *req, *why;
	int r;

	rand_bytes(nonce, sizeof nonce);
	lws_b64_encode_string(
	    (const char *)nonce, sizeof nonce, key, sizeof key);
	req = xasprintf("GET %s HTTP/1.1\r\nHost: %s\r\n"
	                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	                "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
	                "User-Agent: berth-probe\r\n\r\n",
	    path, c->addr.given, key);
	probe_http_init(&h, 0);
	r = probe_http_exchange(io, req, &h, in, PROBE_CDP_IN, inlen, cause);
	free(req);
	if (r == 0)
		r = probe_cdp_upgraded(&h, key, cause);
	else if (h.state == PROBE_HTTP_FAILED) {
		why = *cause;
		*cause = xasprintf("cdp: WebSocket upgrade: %s", why);
		free(why);
	}
	probe_http_free(&h);
	return r;
}

/* GET /json/version, for the path of webSocketDebuggerUrl. */
static int
probe_cdp_version(struct probe_io *io, const struct probe_cdp_check *c,
    char *path, uint8_t *in, char **cause)
{
	struct probe_http h;
	char err[PROBE_ERR_MAX], *req, *why;
	size_t extra;
	int r;

	req =
	    xasprintf("GET /json/version HTTP/1.1\r\nHost: %s\r\n"
	              "User-Agent: berth-probe\r\nAccept: application/json\r\n"
	              "Connection: close\r\n\r\n",
	        c->addr.given);
	probe_http_init(&h, PROBE_CDP_MAX_JSON);
	r = probe_http_exchange(io, req, &h, in, PROBE_CDP_IN, &extra, cause);
	free(req);
	if (r != 0 && h.state == PROBE_HTTP_FAILED) {
		why = *cause;
		*cause = xasprintf("cdp: /json/version: %s", why);
		free(why);
	} else if (r == 0 && h.status != 200) {
		*cause = xasprintf("cdp: /json/version status %d", h.status);
		r = -1;
	} else if (r == 0 && h.truncated) {
		*cause = xasprintf(
		    "cdp: /json/version over %d bytes", PROBE_CDP_MAX_JSON);
		r = -1;
	} else if (r == 0 &&
	    probe_cdp_ws_path((const char *)h.body, h.bodylen, path,
	        PROBE_CDP_MAX_PATH, err, sizeof err) != PROBE_DONE) {
		*cause = xasprintf("cdp: %s in /json/version", err);
		r = -1;
	}
	probe_http_free(&h);
	return r;
}

static void *
probe_cdp_parse(int argc, char **argv, char **cause)
{
	struct probe_cdp_check *c = xcalloc(1, sizeof *c);

	(void)argc;
	if (probe_addr_parse(&c->addr, argv[0], -1, cause) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

/* Two connections under one deadline: /json/version, then the WebSocket,
 * to the HOST:PORT given whatever host the URL names (Chromium writes its
 * own idea of itself there, and refuses Host headers that are not an
 * address or localhost). A close frame ends the WebSocket politely. */
static int
probe_cdp_check(void *state, struct probe_io *io, char **cause)
{
	struct probe_cdp_check *c = state;
	uint8_t *in = xmalloc(PROBE_CDP_IN);
	char path[PROBE_CDP_MAX_PATH], *ignored = NULL;
	size_t inlen;
	int r = -1;

	if (probe_io_connect(io, &c->addr, cause) == 0 &&
	    probe_cdp_version(io, c, path, in, cause) == 0) {
		probe_io_close(io);
		if (probe_io_connect(io, &c->addr, cause) == 0 &&
		    probe_cdp_upgrade(io, c, path, in, &inlen, cause) == 0)
			r = probe_cdp_ask(io, in, inlen, cause);
	}
	if (r == 0 &&
	    probe_cdp_send(io, PROBE_CDP_CLOSE, "\x03\xe8", 2, &ignored) != 0)
		free(ignored);
	free(in);
	return r;
}

static void
probe_cdp_free(void *state)
{
	struct probe_cdp_check *c = state;

	probe_addr_free(&c->addr);
	free(c);
}

const struct probe_type probe_cdp_type = {
    .name = "cdp",
    .args = "HOST:PORT",
    .minargs = 1,
    .maxargs = 1,
    .parse = probe_cdp_parse,
    .check = probe_cdp_check,
    .free = probe_cdp_free,
};
