/* probe_http: ready when GET URL answers with the wanted status (and a body
 * holding the wanted text). Owns the HTTP/1.x requests and the response
 * parser, which the WebSocket, cdp and novnc checks use too; the parser
 * works on buffers, fed by probe_http_exchange. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "probe.h"
#include "xmalloc.h"

/* 1xx responses a server may send before its answer; more is a loop. */
#define PROBE_HTTP_MAX_INTERIM 8

/* The check's state, allocated by parse and kept for good. */
struct probe_http_check {
	struct probe_addr addr;
	char *request;
	int want;
	char *text; /* the body must hold it; NULL: any body */
};

static enum probe_verdict probe_http_fail(struct probe_http *h, const char *fmt,
    ...) __attribute__((format(printf, 2, 3)));
static enum probe_verdict
probe_http_fail(struct probe_http *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->err, sizeof h->err, fmt, ap);
	va_end(ap);
	h->state = PROBE_HTTP_FAILED;
	return PROBE_FAIL;
}

void
probe_http_init(struct probe_http *h, size_t maxbody)
{
	memset(h, 0, sizeof *h);
	h->state = PROBE_HTTP_HEAD;
	h->maxbody = maxbody;
}

void
probe_http_free(struct probe_http *h)
{
	free(h->body);
	h->body = NULL;
	h->bodylen = h->bodysize = 0;
}

/* A character of a header name (a token of RFC 9110). */
static bool
probe_http_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* A character of a header value or reason phrase: no controls but tab. */
static bool
probe_http_vchar(unsigned char c)
{
	return c == '\t' || (c >= ' ' && c != 0x7f);
}

static bool
probe_http_vchars(const char *p, const char *end)
{
	for (; p < end; p++)
		if (!probe_http_vchar((unsigned char)*p))
			return false;
	return true;
}

/* The end of the line at p (its CR), within the head. */
static const char *
probe_http_eol(const struct probe_http *h, const char *p)
{
	return memmem(p, (size_t)(h->head + h->headlen - p), "\r\n", 2);
}

/* "HTTP/1.x", a three-digit code, and an optional reason phrase. */
static int
probe_http_status_line(struct probe_http *h, const char *p, const char *eol)
{
	size_t len = (size_t)(eol - p);
	int i;

	if (len < 12 || memcmp(p, "HTTP/1.", 7) != 0 ||
	    (p[7] != '0' && p[7] != '1') || p[8] != ' ' || p[9] < '1' ||
	    p[9] > '5' || (len > 12 && p[12] != ' ') ||
	    !probe_http_vchars(p + 12, eol))
		return -1;
	h->status = 0;
	for (i = 9; i < 12; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		h->status = h->status * 10 + (p[i] - '0');
	}
	return 0;
}

/* The header lines: a name, a colon, a value. No folding. */
static int
probe_http_header_lines(struct probe_http *h, const char *p)
{
	const char *eol, *colon;

	while ((eol = probe_http_eol(h, p)) != p) {
		colon = memchr(p, ':', (size_t)(eol - p));
		if (colon == NULL || colon == p)
			return -1;
		for (; p < colon; p++)
			if (!probe_http_tchar((unsigned char)*p))
				return -1;
		if (!probe_http_vchars(colon + 1, eol))
			return -1;
		p = eol + 2;
	}
	return 0;
}

/* The next header called name from *pos on, trimmed; *pos moves past it. */
static const char *
probe_http_next(
    const struct probe_http *h, const char **pos, const char *name, size_t *len)
{
	size_t namelen = strlen(name);
	const char *p, *eol, *v;

	while ((eol = probe_http_eol(h, *pos)) != *pos) {
		p = *pos;
		*pos = eol + 2;
		if ((size_t)(eol - p) <= namelen || p[namelen] != ':' ||
		    strncasecmp(p, name, namelen) != 0)
			continue;
		v = p + namelen + 1;
		while (v < eol && (*v == ' ' || *v == '\t'))
			v++;
		while (eol > v && (eol[-1] == ' ' || eol[-1] == '\t'))
			eol--;
		*len = (size_t)(eol - v);
		return v;
	}
	return NULL;
}

const char *
probe_http_header(const struct probe_http *h, const char *name, size_t *len)
{
	const char *pos;

	if (h->state == PROBE_HTTP_HEAD || h->state == PROBE_HTTP_FAILED)
		return NULL;
	pos = probe_http_eol(h, h->head) + 2;
	return probe_http_next(h, &pos, name, len);
}

/* Content-Length: 1 and *n if there is one (every copy agreeing), 0 if
 * not, -1 if it is bad. */
static int
probe_http_content_length(struct probe_http *h, uint64_t *n)
{
	const char *pos = probe_http_eol(h, h->head) + 2, *v;
	uint64_t value;
	size_t len, i;
	int found = 0;

	while ((v = probe_http_next(h, &pos, "Content-Length", &len)) != NULL) {
		if (len == 0 || len > 18)
			return -1;
		value = 0;
		for (i = 0; i < len; i++) {
			if (v[i] < '0' || v[i] > '9')
				return -1;
			value = value * 10 + (uint64_t)(v[i] - '0');
		}
		if (found && value != *n)
			return -1;
		*n = value;
		found = 1;
	}
	return found;
}

/* Whether the last transfer coding of the last Transfer-Encoding is
 * chunked: any other coding's body ends with the connection. */
static bool
probe_http_chunked(const struct probe_http *h, bool *present)
{
	const char *pos = probe_http_eol(h, h->head) + 2, *v, *last = NULL;
	size_t len, lastlen = 0;

	while (
	    (v = probe_http_next(h, &pos, "Transfer-Encoding", &len)) != NULL) {
		last = v;
		lastlen = len;
	}
	*present = last != NULL;
	if (last == NULL)
		return false;
	for (v = last + lastlen; v > last && v[-1] != ','; v--)
		continue;
	while (v < last + lastlen && (*v == ' ' || *v == '\t'))
		v++;
	return (size_t)(last + lastlen - v) == 7 &&
	    strncasecmp(v, "chunked", 7) == 0;
}

/* The head is whole: check it, then see how the body is framed. */
static enum probe_verdict
probe_http_head_done(struct probe_http *h)
{
	const char *eol = probe_http_eol(h, h->head);
	bool te;
	int r;

	if (probe_http_status_line(h, h->head, eol) != 0)
		return probe_http_fail(h, "bad status line \"%.*s\"",
		    (int)(eol - h->head > 64 ? 64 : eol - h->head), h->head);
	if (probe_http_header_lines(h, eol + 2) != 0)
		return probe_http_fail(h, "bad header line");
	if (h->status < 200 && h->status != 101) {
		if (++h->interim > PROBE_HTTP_MAX_INTERIM)
			return probe_http_fail(h, "over %d interim responses",
			    PROBE_HTTP_MAX_INTERIM);
		h->headlen = 0;
		h->crlfs = 0;
		return PROBE_MORE;
	}
	if (h->status == 101 || h->status == 204 || h->status == 304) {
		h->state = PROBE_HTTP_DONE;
		return PROBE_DONE;
	}
	if (probe_http_chunked(h, &te)) {
		h->state = PROBE_HTTP_CHUNK_SIZE;
		return PROBE_MORE;
	}
	h->state = PROBE_HTTP_UNTIL_EOF;
	if (te)
		return PROBE_MORE;
	if ((r = probe_http_content_length(h, &h->left)) < 0)
		return probe_http_fail(h, "bad Content-Length");
	if (r == 1)
		h->state = h->left == 0 ? PROBE_HTTP_DONE : PROBE_HTTP_LENGTH;
	return h->state == PROBE_HTTP_DONE ? PROBE_DONE : PROBE_MORE;
}

static enum probe_verdict
probe_http_head_byte(struct probe_http *h, uint8_t c)
{
	static const char end[] = "\r\n\r\n";

	if (h->headlen == sizeof h->head)
		return probe_http_fail(
		    h, "response headers over %d bytes", PROBE_HTTP_MAX_HEAD);
	h->head[h->headlen++] = (char)c;
	if (c == (uint8_t)end[h->crlfs])
		h->crlfs++;
	else
		h->crlfs = c == '\r';
	if (h->crlfs < 4)
		return PROBE_MORE;
	return probe_http_head_done(h);
}

/* Keeps up to n body bytes (*taken of them), maxbody in all: a byte that
 * does not fit ends the response there, truncated. */
static enum probe_verdict
probe_http_keep(struct probe_http *h, const uint8_t *p, size_t n, size_t *taken)
{
	size_t room = h->maxbody - h->bodylen, size;
	bool full = n > room;

	if (full)
		n = room;
	if (n > 0 && h->bodylen + n > h->bodysize) {
		size = h->bodysize < 4096 ? 4096 : h->bodysize;
		while (size < h->bodylen + n)
			size *= 2;
		h->bodysize = size > h->maxbody ? h->maxbody : size;
		h->body = xrealloc(h->body, h->bodysize);
	}
	if (n > 0)
		memcpy(h->body + h->bodylen, p, n);
	h->bodylen += n;
	*taken = n;
	if (!full)
		return PROBE_MORE;
	h->truncated = 1;
	h->state = PROBE_HTTP_DONE;
	return PROBE_DONE;
}

/* Body bytes counted by left: Content-Length's, or a chunk's. */
static enum probe_verdict
probe_http_counted(
    struct probe_http *h, const uint8_t *p, size_t n, size_t *taken)
{
	enum probe_verdict v;

	if (n > h->left)
		n = (size_t)h->left;
	if ((v = probe_http_keep(h, p, n, taken)) != PROBE_MORE)
		return v;
	h->left -= *taken;
	if (h->left > 0)
		return PROBE_MORE;
	if (h->state == PROBE_HTTP_CHUNK_DATA) {
		h->state = PROBE_HTTP_CHUNK_END;
		h->linelen = 0;
		return PROBE_MORE;
	}
	h->state = PROBE_HTTP_DONE;
	return PROBE_DONE;
}

/* A chunk-size line: hex digits, maybe extensions, CRLF. The last chunk
 * (size 0) ends the response: its trailers say nothing a probe needs. */
static enum probe_verdict
probe_http_chunk_line(struct probe_http *h)
{
	const char *p = h->line, *end;
	uint64_t size = 0;
	int digits = 0, d;

	if (h->linelen < 2 || h->line[h->linelen - 2] != '\r')
		return probe_http_fail(h, "bad chunk-size line");
	end = h->line + h->linelen - 2;
	for (; p < end; p++, digits++) {
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'f')
			d = (*p | 0x20) - 'a' + 10;
		else
			break;
		size = size << 4 | (uint64_t)d;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (digits == 0 || digits > 15 || (p < end && *p != ';') ||
	    !probe_http_vchars(p, end))
		return probe_http_fail(h, "bad chunk-size line");
	h->linelen = 0;
	if (size == 0) {
		h->state = PROBE_HTTP_DONE;
		return PROBE_DONE;
	}
	h->left = size;
	h->state = PROBE_HTTP_CHUNK_DATA;
	return PROBE_MORE;
}

static enum probe_verdict
probe_http_chunk_byte(struct probe_http *h, uint8_t c)
{
	if (h->linelen == sizeof h->line)
		return probe_http_fail(
		    h, "chunk-size line over %d bytes", PROBE_HTTP_MAX_LINE);
	h->line[h->linelen++] = (char)c;
	return c == '\n' ? probe_http_chunk_line(h) : PROBE_MORE;
}

static enum probe_verdict
probe_http_chunk_end(struct probe_http *h, uint8_t c)
{
	if (c != (uint8_t) "\r\n"[h->linelen])
		return probe_http_fail(h, "no CRLF after a chunk");
	if (++h->linelen == 2) {
		h->linelen = 0;
		h->state = PROBE_HTTP_CHUNK_SIZE;
	}
	return PROBE_MORE;
}

enum probe_verdict
probe_http_feed(
    struct probe_http *h, const uint8_t *buf, size_t len, size_t *used)
{
	enum probe_verdict v = PROBE_MORE;
	size_t i = 0, n;

	*used = 0;
	if (h->state == PROBE_HTTP_DONE)
		return PROBE_DONE;
	if (h->state == PROBE_HTTP_FAILED)
		return PROBE_FAIL;
	while (v == PROBE_MORE && i < len) {
		n = 1;
		switch (h->state) {
		case PROBE_HTTP_HEAD:
			v = probe_http_head_byte(h, buf[i]);
			break;
		case PROBE_HTTP_LENGTH:
		case PROBE_HTTP_CHUNK_DATA:
			v = probe_http_counted(h, buf + i, len - i, &n);
			break;
		case PROBE_HTTP_UNTIL_EOF:
			v = probe_http_keep(h, buf + i, len - i, &n);
			break;
		case PROBE_HTTP_CHUNK_SIZE:
			v = probe_http_chunk_byte(h, buf[i]);
			break;
		case PROBE_HTTP_CHUNK_END:
			v = probe_http_chunk_end(h, buf[i]);
			break;
		case PROBE_HTTP_DONE:
		case PROBE_HTTP_FAILED: break;
		}
		i += n;
	}
	*used = i;
	return v;
}

enum probe_verdict
probe_http_eof(struct probe_http *h)
{
	switch (h->state) {
	case PROBE_HTTP_DONE: return PROBE_DONE;
	case PROBE_HTTP_FAILED: return PROBE_FAIL;
	case PROBE_HTTP_UNTIL_EOF:
		h->state = PROBE_HTTP_DONE;
		return PROBE_DONE;
	case PROBE_HTTP_HEAD:
		if (h->headlen == 0 && h->interim == 0)
			return probe_http_fail(
			    h, "the server closed the connection, no response");
		return probe_http_fail(
		    h, "the server closed the connection inside the headers");
	case PROBE_HTTP_LENGTH:
		return probe_http_fail(h,
		    "the server closed the connection after %zu of %llu "
		    "body bytes",
		    h->bodylen, (unsigned long long)(h->bodylen + h->left));
	case PROBE_HTTP_CHUNK_SIZE:
	case PROBE_HTTP_CHUNK_DATA:
	case PROBE_HTTP_CHUNK_END: break;
	}
	return probe_http_fail(
	    h, "the server closed the connection inside the chunked body");
}

int
probe_http_exchange(struct probe_io *io, const char *req, struct probe_http *h,
    uint8_t *buf, size_t bufsize, size_t *extra, char **cause)
{
	enum probe_verdict v;
	size_t used = 0;
	ssize_t n;

	snprintf(
	    io->doing, sizeof io->doing, "waiting for %s to answer", io->peer);
	if (probe_io_write(io, req, strlen(req), cause) != 0)
		return -1;
	do {
		if ((n = probe_io_read(io, buf, bufsize, cause)) < 0)
			return -1;
		v = n == 0 ? probe_http_eof(h)
		           : probe_http_feed(h, buf, (size_t)n, &used);
	} while (v == PROBE_MORE);
	if (v == PROBE_FAIL) {
		*cause = xstrdup(h->err);
		return -1;
	}
	*extra = n == 0 ? 0 : (size_t)n - used;
	memmove(buf, buf + used, *extra);
	return 0;
}

char *
probe_http_request(const struct probe_addr *addr, const char *path,
    const char *token, const char *headers)
{
	return xasprintf("GET %s HTTP/1.1\r\nHost: %s\r\n"
	                 "User-Agent: berth-probe\r\n%s%s%s%s\r\n",
	    path, addr->given, token != NULL ? "Authorization: Bearer " : "",
	    token != NULL ? token : "", token != NULL ? "\r\n" : "", headers);
}

/* The check. */

/* http://AUTHORITY[/PATH][?QUERY][#FRAGMENT], into the request to send. */
static int
probe_http_url(struct probe_http_check *c, const char *url, char **cause)
{
	char *path;

	if (probe_url_parse(url, "http", 80, &c->addr, &path, cause) != 0)
		return -1;
	c->request = probe_http_request(
	    &c->addr, path, NULL, "Accept: */*\r\nConnection: close\r\n");
	free(path);
	return 0;
}

static void
probe_http_check_free(void *state)
{
	struct probe_http_check *c = state;

	probe_addr_free(&c->addr);
	free(c->request);
	free(c->text);
	free(c);
}

static void *
probe_http_parse(int argc, char **argv, char **cause)
{
	struct probe_http_check *c = xcalloc(1, sizeof *c);
	const char *s;

	c->want = 200;
	if (argc > 1) {
		s = argv[1];
		if (strlen(s) != 3 || s[0] < '1' || s[0] > '5' || s[1] < '0' ||
		    s[1] > '9' || s[2] < '0' || s[2] > '9') {
			*cause = xasprintf("%s is not an HTTP status", s);
			free(c);
			return NULL;
		}
		c->want = atoi(s);
	}
	if (argc > 2 && *argv[2] != '\0')
		c->text = xstrdup(argv[2]);
	if (probe_http_url(c, argv[0], cause) != 0) {
		probe_http_check_free(c);
		return NULL;
	}
	return c;
}

static int
probe_http_verdict(
    const struct probe_http_check *c, const struct probe_http *h, char **cause)
{
	if (h->status != c->want) {
		*cause =
		    xasprintf("http status %d, want %d", h->status, c->want);
		return -1;
	}
	if (c->text != NULL &&
	    (h->bodylen == 0 ||
	        memmem(h->body, h->bodylen, c->text, strlen(c->text)) ==
	            NULL)) {
		*cause = xasprintf("http body lacks \"%s\"%s", c->text,
		    h->truncated ? " in its first MiB" : "");
		return -1;
	}
	return 0;
}

static int
probe_http_check(void *state, struct probe_io *io, char **cause)
{
	struct probe_http_check *c = state;
	struct probe_http h;
	uint8_t buf[PROBE_HTTP_READ];
	size_t extra;
	char *why;
	int r = -1;

	if (probe_io_connect(io, &c->addr, cause) != 0)
		return -1;
	probe_http_init(&h, PROBE_HTTP_MAX_BODY);
	if (probe_http_exchange(
	        io, c->request, &h, buf, sizeof buf, &extra, cause) == 0)
		r = probe_http_verdict(c, &h, cause);
	else if (h.state == PROBE_HTTP_FAILED) {
		why = *cause;
		*cause = xasprintf("http: %s", why);
		free(why);
	}
	probe_http_free(&h);
	return r;
}

const struct probe_type probe_http_type = {
    .name = "http",
    .args = "URL [STATUS [BODY-SUBSTRING]]",
    .minargs = 1,
    .maxargs = 3,
    .parse = probe_http_parse,
    .check = probe_http_check,
    .free = probe_http_check_free,
};
