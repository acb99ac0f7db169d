/* probe_cdp: ready when Chromium's DevTools answer Browser.getVersion over
 * the WebSocket that /json/version names (cdp), or over a WebSocket URL
 * given outright (cdp-ws, a relay's). Owns a strict little JSON scanner;
 * the WebSocket is probe_ws's. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "probe.h"
#include "xmalloc.h"

#define PROBE_CDP_MAX_DEPTH 32
#define PROBE_CDP_KEY_MAX 64 /* longer keys are not ones we look for */
#define PROBE_CDP_REQUEST "{\"id\":1,\"method\":\"Browser.getVersion\"}"

/* The state of a cdp or cdp-ws check, allocated by parse and kept for
 * good. */
struct probe_cdp_check {
	const char *name; /* of the check, for messages */
	struct probe_addr addr;
	char *path; /* cdp-ws: the URL's; cdp: NULL */
	int auth;   /* the requests carry the token */
};

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
		probe_fail(err, errsize, "%s twice", key);
	else if (r < 0)
		probe_fail(err, errsize, "not a JSON object");
	else if (r == 0)
		probe_fail(err, errsize, "no %s", key);
	else if (*v != '"')
		probe_fail(err, errsize, "%s is not a string", key);
	else if (probe_cdp_json_decode(v, vend, out, outsize) != 0)
		probe_fail(err, errsize,
		    "%s is over %zu bytes or holds U+0000 or a lone surrogate",
		    key, outsize - 5);
	else
		return 0;
	return -1;
}

enum probe_verdict
probe_cdp_ws_url(const char *json, size_t len, char *authority, size_t authsize,
    char *path, size_t pathsize, char *err, size_t errsize)
{
	char url[PROBE_CDP_MAX_AUTHORITY + PROBE_CDP_MAX_PATH + 8], *p, *slash;

	if (probe_cdp_json_text(json, json + len, "webSocketDebuggerUrl", url,
	        sizeof url, err, errsize) != 0)
		return PROBE_FAIL;
	if (strncmp(url, "ws://", 5) != 0 ||
	    (slash = strchr(url + 5, '/')) == NULL || slash == url + 5)
		return probe_fail(err, errsize,
		    "webSocketDebuggerUrl %.80s is not ws://HOST/PATH", url);
	for (p = url + 5; *p != '\0'; p++)
		if (*p <= ' ' || *p >= 0x7f || *p == '#' ||
		    (p < slash && (*p == '@' || *p == '?')))
			return probe_fail(err, errsize,
			    "webSocketDebuggerUrl has a bad %s",
			    p < slash ? "host" : "path");
	if ((size_t)(slash - url - 5) >= authsize || strlen(slash) >= pathsize)
		return probe_fail(
		    err, errsize, "webSocketDebuggerUrl is too long");
	memcpy(authority, url + 5, (size_t)(slash - url - 5));
	authority[slash - url - 5] = '\0';
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
		return probe_fail(err, errsize,
		    "a message that is not a "
		    "JSON object");
	if (r == -2)
		return probe_fail(err, errsize, "a message with id twice");
	if (r == 0 || vend - v != 1 || *v != '1')
		return PROBE_MORE;
	if (probe_cdp_json_member(json, end, "error", &v, &vend) == 1) {
		if (*v == '{' &&
		    probe_cdp_json_text(v, vend, "message", message,
		        sizeof message, err, errsize) == 0)
			return probe_fail(err, errsize,
			    "Browser.getVersion failed: %s", message);
		return probe_fail(err, errsize, "Browser.getVersion failed");
	}
	if (probe_cdp_json_member(json, end, "result", &v, &vend) != 1 ||
	    *v != '{')
		return probe_fail(
		    err, errsize, "Browser.getVersion: no result");
	if (probe_cdp_json_member(v, vend, "product", &v, &vend) != 1 ||
	    *v != '"')
		return probe_fail(err, errsize,
		    "Browser.getVersion: no product in the result");
	return PROBE_DONE;
}

/* The checks. */

/* Sends Browser.getVersion and reads messages until its answer. */
static int
probe_cdp_ask(struct probe_io *io, struct probe_ws *ws, char **cause)
{
	char err[PROBE_ERR_MAX];
	enum probe_verdict v = PROBE_MORE;

	snprintf(io->doing, sizeof io->doing,
	    "waiting for Browser.getVersion's answer");
	if (probe_ws_send(io, PROBE_WS_TEXT, PROBE_CDP_REQUEST,
	        strlen(PROBE_CDP_REQUEST), cause) != 0)
		return -1;
	while (v == PROBE_MORE) {
		if (probe_ws_recv(io, ws, cause) != 0)
			return -1;
		if (ws->msg.opcode != PROBE_WS_TEXT)
			v = probe_fail(err, sizeof err, "a binary message");
		else
			v = probe_cdp_answer((const char *)ws->msg.buf,
			    ws->msg.len, err, sizeof err);
	}
	if (v == PROBE_FAIL) {
		*cause = xstrdup(err);
		return -1;
	}
	return 0;
}

/* The WebSocket on a connected io, then the question; a close frame
 * ends it politely, unless the session is left open to be watched. */
static int
probe_cdp_session(struct probe_io *io, const struct probe_cdp_check *c,
    const char *path, const char *token, char **cause)
{
	struct probe_ws ws;
	int r;

	probe_ws_init(&ws);
	r = probe_ws_upgrade(io, &ws, &c->addr, path, token, cause);
	if (r == 0 && (r = probe_cdp_ask(io, &ws, cause)) == 0) {
		if (io->can_watch)
			io->watch = 1;
		else
			probe_ws_close(io);
	}
	probe_ws_free(&ws);
	return r;
}

/* GET /json/version, for webSocketDebuggerUrl, whose HOST:PORT must be
 * the one dialed: a relay that forgot to rewrite it hands its clients an
 * address they cannot reach. */
static int
probe_cdp_version(struct probe_io *io, const struct probe_cdp_check *c,
    const char *token, char *path, char **cause)
{
	char err[PROBE_ERR_MAX], authority[PROBE_CDP_MAX_AUTHORITY], *req;
	uint8_t *in = xmalloc(PROBE_HTTP_READ);
	struct probe_http h;
	size_t extra;
	int r;

	req = probe_http_request(&c->addr, "/json/version", token,
	    "Accept: application/json\r\nConnection: close\r\n");
	probe_http_init(&h, PROBE_CDP_MAX_JSON);
	r = probe_http_exchange(
	    io, req, &h, in, PROBE_HTTP_READ, &extra, cause);
	probe_free_secret(req);
	free(in);
	if (r != 0 && h.state == PROBE_HTTP_FAILED)
		probe_cause_wrap(cause, "/json/version");
	else if (r == 0 && h.status != 200) {
		*cause = xasprintf("/json/version status %d", h.status);
		r = -1;
	} else if (r == 0 && h.truncated) {
		*cause = xasprintf(
		    "/json/version over %d bytes", PROBE_CDP_MAX_JSON);
		r = -1;
	} else if (r == 0 &&
	    probe_cdp_ws_url((const char *)h.body, h.bodylen, authority,
	        sizeof authority, path, PROBE_CDP_MAX_PATH, err,
	        sizeof err) != PROBE_DONE) {
		*cause = xasprintf("%s in /json/version", err);
		r = -1;
	} else if (r == 0 && strcasecmp(authority, c->addr.given) != 0) {
		*cause = xasprintf("webSocketDebuggerUrl is on %.64s, "
		                   "not on %s as dialed",
		    authority, c->addr.given);
		r = -1;
	}
	probe_http_free(&h);
	return r;
}

/*
 * cdp: two connections under one deadline, /json/version then the
 * WebSocket; cdp-ws: the WebSocket alone. Failures that are not the
 * connect's own say which check they come from.
 */
static int
probe_cdp_check(void *state, struct probe_io *io, char **cause)
{
	struct probe_cdp_check *c = state;
	char path[PROBE_CDP_MAX_PATH];
	const char *token = NULL;

	if (c->auth && (token = probe_token(cause)) == NULL)
		goto fail;
	if (probe_io_connect(io, &c->addr, cause) != 0)
		return -1;
	if (c->path == NULL) {
		if (probe_cdp_version(io, c, token, path, cause) != 0)
			goto fail;
		probe_io_close(io);
		if (probe_io_connect(io, &c->addr, cause) != 0)
			return -1;
	}
	if (probe_cdp_session(
	        io, c, c->path != NULL ? c->path : path, token, cause) == 0)
		return 0;
fail:
	probe_cause_wrap(cause, "%s", c->name);
	return -1;
}

static void
probe_cdp_free(void *state)
{
	struct probe_cdp_check *c = state;

	probe_addr_free(&c->addr);
	free(c->path);
	free(c);
}

static void *
probe_cdp_parse(int argc, char **argv, char **cause)
{
	struct probe_cdp_check *c = xcalloc(1, sizeof *c);

	c->name = "cdp";
	if (argc > 1 && strcmp(argv[1], "auth") != 0) {
		*cause = xasprintf("\"%s\" is not auth", argv[1]);
		free(c);
		return NULL;
	}
	c->auth = argc > 1;
	if ((c->auth && probe_token_needed(cause) != 0) ||
	    probe_addr_parse(&c->addr, argv[0], -1, cause) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

static void *
probe_cdp_ws_parse(int argc, char **argv, char **cause)
{
	struct probe_cdp_check *c = xcalloc(1, sizeof *c);

	(void)argc;
	c->name = "cdp-ws";
	c->auth = 1;
	if (probe_token_needed(cause) != 0) {
		free(c);
		return NULL;
	}
	if (probe_url_parse(argv[0], "ws", 80, &c->addr, &c->path, cause) !=
	    0) {
		free(c);
		return NULL;
	}
	return c;
}

const struct probe_type probe_cdp_type = {
    .name = "cdp",
    .args = "HOST:PORT [auth]",
    .minargs = 1,
    .maxargs = 2,
    .parse = probe_cdp_parse,
    .check = probe_cdp_check,
    .free = probe_cdp_free,
};

const struct probe_type probe_cdp_ws_type = {
    .name = "cdp-ws",
    .args = "ws://HOST[:PORT]/PATH",
    .minargs = 1,
    .maxargs = 1,
    .parse = probe_cdp_ws_parse,
    .check = probe_cdp_check,
    .free = probe_cdp_free,
};
