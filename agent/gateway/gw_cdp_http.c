/* gw_cdp_http: the TCP CDP relay's HTTP/1.1 heads, read in place with limits
 * and written anew for the other side. Owns nothing: what it builds
 * belongs to the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gw_buf.h"
#include "gw_cdp_http.h"
#include "xmalloc.h"

/* A growing output buffer; p belongs to whoever takes it at the end. */
/* What a request's checker gathers on its way through the head. */
struct gw_cdp_http_req_scan {
	struct gw_cdp_http_request *req;
	struct gw_cdp_http_line line;
	const char *upgrade;
	size_t upgradelen;
	int hosts;
	int lengths;
	int auths;
	int upgrades;
	int conn_upgrade; /* Connection lists "upgrade" */
};

struct gw_cdp_http_resp_scan {
	struct gw_cdp_http_response *resp;
	int lengths;
	int encodings;
};

int
gw_cdp_http_fail(unsigned *status, char *err, unsigned code, const char *msg)
{
	*status = code;
	snprintf(err, GW_CDP_HTTP_ERR_MAX, "%s", msg);
	return -1;
}

static int
gw_cdp_http_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int
gw_cdp_http_alnum(char c)
{
	return gw_cdp_http_digit(c) || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z');
}

/* RFC 9110's tchar: what names and methods are made of. */
int
gw_cdp_http_tchar(char c)
{
	return gw_cdp_http_alnum(c) ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* What a header value may hold: tabs, spaces, visible ASCII and the
 * bytes above it (obs-text), never a control character. */
static int
gw_cdp_http_field_char(char c)
{
	unsigned char u = (unsigned char)c;

	return u == '\t' || (u >= ' ' && u != 0x7f);
}

int
gw_cdp_http_named(const char *l, size_t namelen, const char *name)
{
	return strlen(name) == namelen && strncasecmp(l, name, namelen) == 0;
}

/* The value of a checked header line, without the spaces around it. */
void
gw_cdp_http_value(
    const char *l, size_t n, size_t namelen, const char **v, size_t *vlen)
{
	size_t a = namelen + 1, b = n;

	while (a < b && (l[a] == ' ' || l[a] == '\t'))
		a++;
	while (b > a && (l[b - 1] == ' ' || l[b - 1] == '\t'))
		b--;
	*v = l + a;
	*vlen = b - a;
}

/* A Content-Length: digits only, and few enough never to overflow. */
int
gw_cdp_http_number(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	if (n == 0 || n > 18)
		return -1;
	for (i = 0; i < n; i++) {
		if (!gw_cdp_http_digit(v[i]))
			return -1;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

int
gw_cdp_http_length(const char *v, size_t vlen, int *count, uint64_t *out,
    unsigned code, unsigned *status, char *err)
{
	if ((*count)++ != 0)
		return gw_cdp_http_fail(
		    status, err, code, "more than one Content-Length header");
	if (gw_cdp_http_number(v, vlen, out) < 0)
		return gw_cdp_http_fail(
		    status, err, code, "Content-Length is not a number");
	return 0;
}

/* Whether the comma-separated list v[0..n) holds tok, in any case. */
int
gw_cdp_http_has_token(const char *v, size_t n, const char *tok)
{
	size_t i = 0, a, b;

	while (i < n) {
		a = i;
		while (i < n && v[i] != ',')
			i++;
		b = i++;
		while (a < b && (v[a] == ' ' || v[a] == '\t'))
			a++;
		while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
			b--;
		if (gw_cdp_http_named(v + a, b - a, tok))
			return 1;
	}
	return 0;
}

int
gw_cdp_http_host_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > GW_CDP_HTTP_HOST_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		if (!gw_cdp_http_alnum(s[i]) && s[i] != '.' && s[i] != '-' &&
		    s[i] != ':' && s[i] != '[' && s[i] != ']')
			return 0;
	}
	return 1;
}

/*
 * Splits a head into lines and hands each to cb, the last one as far as
 * it has arrived. Only the first GW_CDP_HTTP_HEAD_MAX bytes are looked at,
 * so a client sending more costs no more. A head must end in a blank
 * line; every line ends in CRLF.
 */
enum gw_cdp_http_result
gw_cdp_http_scan(const char *buf, size_t len, gw_cdp_http_line_cb cb, void *arg,
    size_t *headlen, unsigned *status, char *err)
{
	size_t lim = len < GW_CDP_HTTP_HEAD_MAX ? len : GW_CDP_HTTP_HEAD_MAX;
	size_t pos = 0, end;
	unsigned lineno = 0;
	const char *cr;
	int ended, whole;

	/* Each line is checked before what follows it, its end included, so
	 * that the first fault in the bytes is the one reported however
	 * many of them have arrived. */
	for (;;) {
		cr = memchr(buf + pos, '\r', lim - pos);
		end = cr != NULL ? (size_t)(cr - buf) : lim;
		ended = cr != NULL && end + 1 < lim;
		whole = ended && buf[end + 1] == '\n';
		if (whole && lineno > 0 && end == pos) {
			*headlen = end + 2;
			return GW_CDP_HTTP_OK;
		}
		if (cb(arg, lineno, buf + pos, end - pos, whole) < 0)
			return GW_CDP_HTTP_ERROR;
		if (ended && !whole) {
			gw_cdp_http_fail(
			    status, err, 400, "a CR not followed by LF");
			return GW_CDP_HTTP_ERROR;
		}
		if (whole && lineno > GW_CDP_HTTP_LINES_MAX) {
			gw_cdp_http_fail(
			    status, err, 431, "more than 64 header lines");
			return GW_CDP_HTTP_ERROR;
		}
		if (!whole)
			break;
		pos = end + 2;
		lineno++;
	}
	if (len >= GW_CDP_HTTP_HEAD_MAX) {
		gw_cdp_http_fail(
		    status, err, 431, "the head is longer than 16384 bytes");
		return GW_CDP_HTTP_ERROR;
	}
	return GW_CDP_HTTP_MORE;
}

/* A header line's syntax: NAME ":" VALUE; *namelen once the colon is in. */
int
gw_cdp_http_header_syntax(const char *l, size_t n, int whole, size_t *namelen,
    unsigned *status, char *err)
{
	size_t i;

	if (n > 0 && (l[0] == ' ' || l[0] == '\t'))
		return gw_cdp_http_fail(
		    status, err, 400, "folded header lines are not accepted");
	for (i = 0; i < n && gw_cdp_http_tchar(l[i]); i++)
		;
	if (i < n && (i == 0 || l[i] != ':'))
		return gw_cdp_http_fail(status, err, 400,
		    "a header name must be a token followed by a colon");
	if (i == n)
		return whole ? gw_cdp_http_fail(status, err, 400,
		                   "a header line without a colon")
		             : 0;
	*namelen = i;
	for (i++; i < n; i++) {
		if (!gw_cdp_http_field_char(l[i]))
			return gw_cdp_http_fail(status, err, 400,
			    "a control character in a header value");
	}
	return 0;
}

int
gw_cdp_http_request_line(const char *l, size_t n, int whole, unsigned *status,
    char *err, struct gw_cdp_http_line *out)
{
	static const char pat[] = "HTTP/d.d";
	const char *bad = "the request line is not METHOD PATH HTTP/1.1";
	size_t i, t, m;
	const char *q;

	for (i = 0; i < n && gw_cdp_http_tchar(l[i]); i++)
		;
	if (i < n && (i == 0 || l[i] != ' '))
		return gw_cdp_http_fail(status, err, 400, bad);
	if (i == n)
		goto partial;
	t = ++i;
	if (i < n && l[i] != '/')
		return gw_cdp_http_fail(
		    status, err, 400, "the request target must be a path");
	while (i < n && (unsigned char)l[i] > ' ' && (unsigned char)l[i] < 0x7f)
		i++;
	if (i < n && l[i] != ' ')
		return gw_cdp_http_fail(status, err, 400, bad);
	if (i == n)
		goto partial;
	out->method = l;
	out->methodlen = t - 1;
	out->target = l + t;
	out->targetlen = i - t;
	q = memchr(out->target, '?', i - t);
	out->pathlen = q != NULL ? (size_t)(q - out->target) : i - t;
	for (i++, m = 0; i + m < n; m++) {
		if (m == sizeof pat - 1 ||
		    (pat[m] == 'd' ? !gw_cdp_http_digit(l[i + m])
		                   : l[i + m] != pat[m]))
			return gw_cdp_http_fail(status, err, 400, bad);
	}
	if (!whole)
		return 0;
	if (m != sizeof pat - 1)
		return gw_cdp_http_fail(status, err, 400, bad);
	if (memcmp(l + i, "HTTP/1.1", m) != 0 &&
	    memcmp(l + i, "HTTP/1.0", m) != 0)
		return gw_cdp_http_fail(
		    status, err, 505, "only HTTP/1.1 is served");
	return 0;
partial:
	return whole ? gw_cdp_http_fail(status, err, 400, bad) : 0;
}

/* What one whole request header means. */
static int
gw_cdp_http_request_header(
    struct gw_cdp_http_req_scan *s, const char *l, size_t n, size_t namelen)
{
	struct gw_cdp_http_request *req = s->req;
	unsigned *st = &req->status;
	const char *v;
	size_t vlen;

	gw_cdp_http_value(l, n, namelen, &v, &vlen);
	if (gw_cdp_http_named(l, namelen, "host")) {
		if (s->hosts++ != 0)
			return gw_cdp_http_fail(
			    st, req->err, 400, "more than one Host header");
		if (!gw_cdp_http_host_valid(v, vlen))
			return gw_cdp_http_fail(st, req->err, 400,
			    "the Host header must be a host and port of "
			    "letters, digits and . - : [ ]");
		memcpy(req->host, v, vlen);
		req->host[vlen] = '\0';
	} else if (gw_cdp_http_named(l, namelen, "content-length")) {
		if (gw_cdp_http_length(v, vlen, &s->lengths, &req->bodylen, 400,
		        st, req->err) < 0)
			return -1;
		if (req->bodylen > GW_CDP_HTTP_BODY_MAX)
			return gw_cdp_http_fail(st, req->err, 413,
			    "the request body is larger than 1 MiB");
	} else if (gw_cdp_http_named(l, namelen, "transfer-encoding"))
		return gw_cdp_http_fail(st, req->err, 501,
		    "requests with Transfer-Encoding (chunked) are not "
		    "relayed");
	else if (gw_cdp_http_named(l, namelen, "authorization")) {
		if (s->auths++ != 0)
			return gw_cdp_http_fail(st, req->err, 400,
			    "more than one Authorization header");
		req->authz = v;
		req->authzlen = vlen;
	} else if (gw_cdp_http_named(l, namelen, "upgrade")) {
		if (s->upgrades++ != 0)
			return gw_cdp_http_fail(
			    st, req->err, 400, "more than one Upgrade header");
		s->upgrade = v;
		s->upgradelen = vlen;
	} else if (gw_cdp_http_named(l, namelen, "connection")) {
		if (gw_cdp_http_has_token(v, vlen, "upgrade"))
			s->conn_upgrade = 1;
	}
	return 0;
}

static int
gw_cdp_http_request_line_cb(
    void *arg, unsigned lineno, const char *l, size_t n, int whole)
{
	struct gw_cdp_http_req_scan *s = arg;
	size_t namelen = 0;

	if (lineno == 0)
		return gw_cdp_http_request_line(
		    l, n, whole, &s->req->status, s->req->err, &s->line);
	if (gw_cdp_http_header_syntax(
	        l, n, whole, &namelen, &s->req->status, s->req->err) < 0)
		return -1;
	return whole ? gw_cdp_http_request_header(s, l, n, namelen) : 0;
}

/* The paths whose answers list Chromium's WebSocket URLs. */
static int
gw_cdp_http_listing(const char *path, size_t len)
{
	static const char *const paths[] = {
	    "/json", "/json/list", "/json/version"};
	size_t i, pl;

	if (len > 1 && path[len - 1] == '/')
		len--;
	for (i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		pl = strlen(paths[i]);
		if (len == pl && memcmp(path, paths[i], pl) == 0)
			return 1;
	}
	return 0;
}

/* What the whole head says, once its blank line is in. */
static int
gw_cdp_http_request_done(struct gw_cdp_http_req_scan *s)
{
	struct gw_cdp_http_request *req = s->req;
	const struct gw_cdp_http_line *rl = &s->line;
	int get = rl->methodlen == 3 && memcmp(rl->method, "GET", 3) == 0;

	if (s->hosts == 0)
		return gw_cdp_http_fail(
		    &req->status, req->err, 400, "a Host header is required");
	if (s->upgrades != 0) {
		if (!gw_cdp_http_named(s->upgrade, s->upgradelen, "websocket"))
			return gw_cdp_http_fail(&req->status, req->err, 400,
			    "only WebSocket upgrades are relayed");
		if (!s->conn_upgrade)
			return gw_cdp_http_fail(&req->status, req->err, 400,
			    "Upgrade needs Connection: upgrade");
		if (!get || req->bodylen != 0)
			return gw_cdp_http_fail(&req->status, req->err, 400,
			    "a WebSocket upgrade is a GET without a body");
		req->upgrade = 1;
	}
	req->head = rl->methodlen == 4 && memcmp(rl->method, "HEAD", 4) == 0;
	req->rewrite = get && gw_cdp_http_listing(rl->target, rl->pathlen);
	return 0;
}

enum gw_cdp_http_result
gw_cdp_http_request_parse(
    const char *buf, size_t len, struct gw_cdp_http_request *req)
{
	struct gw_cdp_http_req_scan s;
	enum gw_cdp_http_result r;

	memset(req, 0, sizeof *req);
	memset(&s, 0, sizeof s);
	s.req = req;
	r = gw_cdp_http_scan(buf, len, gw_cdp_http_request_line_cb, &s,
	    &req->headlen, &req->status, req->err);
	if (r == GW_CDP_HTTP_OK && gw_cdp_http_request_done(&s) < 0)
		return GW_CDP_HTTP_ERROR;
	return r;
}

static void
gw_cdp_http_copy_head(struct gw_buf *o, const char *buf, size_t headlen,
    const char *extra, const char *const *drop)
{
	size_t pos = 0, end, namelen, i;
	const char *colon;
	int keep;

	while (pos + 2 < headlen) {
		end = (size_t)((const char *)memchr(
		                   buf + pos, '\r', headlen - pos) -
		    buf);
		keep = 1;
		colon = memchr(buf + pos, ':', end - pos);
		if (pos != 0 && colon != NULL) {
			namelen = (size_t)(colon - (buf + pos));
			for (i = 0; drop[i] != NULL; i++) {
				if (gw_cdp_http_named(
				        buf + pos, namelen, drop[i]))
					keep = 0;
			}
		}
		if (keep)
			gw_buf_add(o, buf + pos, end + 2 - pos);
		if (pos == 0 && extra != NULL)
			gw_buf_puts(o, extra);
		pos = end + 2;
	}
}

char *
gw_cdp_http_request_head(const char *buf, const struct gw_cdp_http_request *req,
    const char *authority, size_t *len)
{
	static const char *const drop_upgrade[] = {"host", "origin",
	    "authorization", "proxy-authorization", "cookie", NULL};
	static const char *const drop[] = {"host", "origin", "authorization",
	    "proxy-authorization", "cookie", "connection", "keep-alive",
	    "proxy-connection", NULL};
	struct gw_buf o = {0};
	char *host;

	host = xasprintf("Host: %s\r\n", authority);
	gw_cdp_http_copy_head(
	    &o, buf, req->headlen, host, req->upgrade ? drop_upgrade : drop);
	free(host);
	if (!req->upgrade)
		gw_buf_puts(&o, "Connection: close\r\n");
	gw_buf_puts(&o, "\r\n");
	return gw_buf_string(&o, len);
}

int
gw_cdp_http_status_line(
    const char *l, size_t n, int whole, unsigned *status, char *err)
{
	static const char pat[] = "HTTP/1.d ddd";
	const char *bad = "not an HTTP/1.1 status line";
	size_t i, m = sizeof pat - 1;

	for (i = 0; i < n && i < m; i++) {
		if (pat[i] == 'd' ? !gw_cdp_http_digit(l[i]) : l[i] != pat[i])
			return gw_cdp_http_fail(status, err, 502, bad);
	}
	if (i < m)
		return whole ? gw_cdp_http_fail(status, err, 502, bad) : 0;
	if (n > m && l[m] != ' ')
		return gw_cdp_http_fail(status, err, 502, bad);
	for (i = m + 1; i < n; i++) {
		if (!gw_cdp_http_field_char(l[i]))
			return gw_cdp_http_fail(status, err, 502, bad);
	}
	if (!whole)
		return 0;
	*status =
	    (unsigned)((l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0'));
	if (*status < 100)
		return gw_cdp_http_fail(status, err, 502, bad);
	return 0;
}

int
gw_cdp_http_answer_line(unsigned lineno, const char *l, size_t n, int whole,
    unsigned *status, char *err, size_t *namelen, const char **v, size_t *vlen)
{
	*namelen = 0;
	if (lineno == 0)
		return gw_cdp_http_status_line(l, n, whole, status, err);
	if (gw_cdp_http_header_syntax(l, n, whole, namelen, status, err) < 0)
		return -1;
	if (!whole)
		return 0;
	gw_cdp_http_value(l, n, *namelen, v, vlen);
	return 1;
}

static int
gw_cdp_http_response_line_cb(
    void *arg, unsigned lineno, const char *l, size_t n, int whole)
{
	struct gw_cdp_http_resp_scan *s = arg;
	struct gw_cdp_http_response *resp = s->resp;
	size_t namelen, vlen;
	const char *v;
	int r;

	r = gw_cdp_http_answer_line(
	    lineno, l, n, whole, &resp->status, resp->err, &namelen, &v, &vlen);
	if (r <= 0)
		return r;
	if (gw_cdp_http_named(l, namelen, "content-length")) {
		if (gw_cdp_http_length(v, vlen, &s->lengths, &resp->bodylen,
		        502, &resp->status, resp->err) < 0)
			return -1;
	} else if (gw_cdp_http_named(l, namelen, "transfer-encoding"))
		s->encodings++;
	return 0;
}

/* How the answer to req goes on, once its head is whole. */
static int
gw_cdp_http_response_done(
    struct gw_cdp_http_resp_scan *s, const struct gw_cdp_http_request *req)
{
	struct gw_cdp_http_response *resp = s->resp;
	unsigned st = resp->status;

	if (req->upgrade && st == 101) {
		resp->relay = 1;
		resp->body = GW_CDP_HTTP_BODY_NONE;
		return 0;
	}
	if (st < 200) {
		resp->status = 502;
		snprintf(resp->err, sizeof resp->err,
		    "an interim answer (%u) is not relayed", st);
		return -1;
	}
	if (req->head || st == 204 || st == 304)
		resp->body = GW_CDP_HTTP_BODY_NONE;
	else if (s->encodings != 0 || s->lengths == 0)
		resp->body = GW_CDP_HTTP_BODY_UNTIL_CLOSE;
	else
		resp->body = GW_CDP_HTTP_BODY_LENGTH;
	if (resp->body != GW_CDP_HTTP_BODY_LENGTH)
		resp->bodylen = 0;
	resp->rewrite = req->rewrite && resp->body == GW_CDP_HTTP_BODY_LENGTH &&
	    resp->bodylen <= GW_CDP_HTTP_BODY_MAX;
	return 0;
}

enum gw_cdp_http_result
gw_cdp_http_response_parse(const char *buf, size_t len,
    const struct gw_cdp_http_request *req, struct gw_cdp_http_response *resp)
{
	struct gw_cdp_http_resp_scan s;
	enum gw_cdp_http_result r;

	memset(resp, 0, sizeof *resp);
	memset(&s, 0, sizeof s);
	s.resp = resp;
	r = gw_cdp_http_scan(buf, len, gw_cdp_http_response_line_cb, &s,
	    &resp->headlen, &resp->status, resp->err);
	if (r == GW_CDP_HTTP_OK && gw_cdp_http_response_done(&s, req) < 0)
		r = GW_CDP_HTTP_ERROR;
	if (r == GW_CDP_HTTP_ERROR)
		resp->status = 502;
	return r;
}

char *
gw_cdp_http_response_head(
    const char *buf, const struct gw_cdp_http_response *resp, size_t *len)
{
	static const char *const drop[] = {
	    "connection", "keep-alive", "proxy-connection", NULL};
	struct gw_buf o = {0};

	gw_cdp_http_copy_head(&o, buf, resp->headlen, NULL, drop);
	gw_buf_puts(&o, "Connection: close\r\n\r\n");
	return gw_buf_string(&o, len);
}

/* Whether from occurs whole at b[i]: not the end of a longer name, and
 * not followed by more digits of a longer port. */
static int
gw_cdp_http_at(const char *b, size_t n, size_t i, const char *from, size_t flen)
{
	if (n - i < flen || memcmp(b + i, from, flen) != 0)
		return 0;
	if (i > 0 &&
	    (gw_cdp_http_alnum(b[i - 1]) || b[i - 1] == '.' || b[i - 1] == '-'))
		return 0;
	return i + flen == n || !gw_cdp_http_digit(b[i + flen]);
}

char *
gw_cdp_http_response_rewrite(const char *buf,
    const struct gw_cdp_http_response *resp, const char *from, const char *to,
    size_t *len)
{
	static const char *const drop[] = {"connection", "keep-alive",
	    "proxy-connection", "content-length", NULL};
	const char *body = buf + resp->headlen;
	size_t n = (size_t)resp->bodylen, flen = strlen(from);
	size_t tlen = strlen(to), count = 0, i, start;
	struct gw_buf o = {0};
	char line[64];

	for (i = 0; flen != 0 && i < n; i++) {
		if (gw_cdp_http_at(body, n, i, from, flen)) {
			count++;
			i += flen - 1;
		}
	}
	gw_cdp_http_copy_head(&o, buf, resp->headlen, NULL, drop);
	snprintf(line, sizeof line,
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	    n - count * flen + count * tlen);
	gw_buf_puts(&o, line);
	for (i = start = 0; count != 0 && i < n; i++) {
		if (gw_cdp_http_at(body, n, i, from, flen)) {
			gw_buf_add(&o, body + start, i - start);
			gw_buf_add(&o, to, tlen);
			start = i + flen;
			i = start - 1;
		}
	}
	gw_buf_add(&o, body + start, n - start);
	return gw_buf_string(&o, len);
}

const char *
gw_cdp_http_reason(unsigned status, const char **slug)
{
	switch (status) {
	case 400: *slug = "bad_request"; return "Bad Request";
	case 401: *slug = "unauthorized"; return "Unauthorized";
	case 404: *slug = "not_found"; return "Not Found";
	case 408: *slug = "request_timeout"; return "Request Timeout";
	case 413: *slug = "too_large"; return "Content Too Large";
	case 431:
		*slug = "header_too_large";
		return "Request Header Fields Too Large";
	case 501: *slug = "not_implemented"; return "Not Implemented";
	case 502: *slug = "bad_gateway"; return "Bad Gateway";
	case 503: *slug = "unavailable"; return "Service Unavailable";
	case 504: *slug = "gateway_timeout"; return "Gateway Timeout";
	case 505:
		*slug = "version_not_supported";
		return "HTTP Version Not Supported";
	default: *slug = "error"; return "Error";
	}
}

char *
gw_cdp_http_error(unsigned status, const char *message, size_t *len)
{
	struct gw_buf body = {0}, o = {0};
	const char *reason, *slug, *p;
	char line[160];

	reason = gw_cdp_http_reason(status, &slug);
	gw_buf_puts(&body, "{\"error\":\"");
	gw_buf_puts(&body, slug);
	gw_buf_puts(&body, "\",\"message\":\"");
	for (p = message; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\') {
			gw_buf_add(&body, "\\", 1);
			gw_buf_add(&body, p, 1);
		} else if ((unsigned char)*p < ' ') {
			snprintf(line, sizeof line, "\\u%04x",
			    (unsigned)(unsigned char)*p);
			gw_buf_puts(&body, line);
		} else
			gw_buf_add(&body, p, 1);
	}
	gw_buf_puts(&body, "\"}\n");
	snprintf(line, sizeof line,
	    "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n",
	    status, reason, body.len);
	gw_buf_puts(&o, line);
	gw_buf_puts(&o, "Cache-Control: no-store\r\nConnection: close\r\n");
	if (status == 401)
		gw_buf_puts(&o, "WWW-Authenticate: Bearer\r\n");
	gw_buf_puts(&o, "\r\n");
	gw_buf_add(&o, gw_buf_at(&body), body.len);
	gw_buf_free(&body);
	return gw_buf_string(&o, len);
}
