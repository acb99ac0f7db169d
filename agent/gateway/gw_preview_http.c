/* gw_preview_http: the preview proxy's heads, read in place with the
 * limits of gw_cdp_http's line scanner and written anew for the other
 * side. Owns nothing: what it builds belongs to the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gw_buf.h"
#include "gw_preview_http.h"

#define GW_PREVIEW_PATH "/preview/"
#define GW_PREVIEW_RUNTIME_PATH "/runtime/"

/* What a request's checker gathers on its way through the head. */
struct gw_preview_req_scan {
	struct gw_preview_request *req;
	int hosts;
	int lengths;
	int codings;
	int upgrades;
	int conn_upgrade; /* Connection lists "upgrade" */
	int cookies;      /* berth_grant pairs seen */
};

struct gw_preview_resp_scan {
	struct gw_preview_response *resp;
	int lengths;
	int codings;
	int chunked; /* the last transfer coding is chunked */
	int close;   /* Connection lists close */
	int keep;    /* ... keep-alive */
};

static int
gw_preview_http_fail(
    struct gw_preview_request *req, unsigned code, const char *msg)
{
	return gw_cdp_http_fail(&req->status, req->err, code, msg);
}

/* A key of a URL or a cookie's token: 1 to max lowercase letters and
 * digits, as berthd writes ids, tokens and codes. */
static int
gw_preview_http_key_valid(const char *s, size_t n, size_t max)
{
	size_t i;

	if (n == 0 || n > max)
		return 0;
	for (i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') ||
		        (s[i] >= 'a' && s[i] <= 'z')))
			return 0;
	}
	return 1;
}

/* Each pair of a Cookie value in turn: name n[0..nl), value v[0..vl). */
static int
gw_preview_http_cookie_next(const char **p, const char *end, const char **n,
    size_t *nl, const char **v, size_t *vl)
{
	const char *a = *p, *b, *eq;

	while (a < end && (*a == ' ' || *a == '\t' || *a == ';'))
		a++;
	if (a == end)
		return 0;
	b = memchr(a, ';', (size_t)(end - a));
	if (b == NULL)
		b = end;
	*p = b;
	while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
		b--;
	eq = memchr(a, '=', (size_t)(b - a));
	*n = a;
	*nl = eq != NULL ? (size_t)(eq - a) : (size_t)(b - a);
	*v = eq != NULL ? eq + 1 : b;
	*vl = (size_t)(b - *v);
	return 1;
}

static int
gw_preview_http_is_ours(const char *n, size_t nl)
{
	return nl == strlen(GW_PREVIEW_COOKIE) &&
	    memcmp(n, GW_PREVIEW_COOKIE, nl) == 0;
}

/* Finds berth's cookie among a Cookie header's pairs. */
static void
gw_preview_http_cookie(
    struct gw_preview_req_scan *s, const char *v, size_t vlen)
{
	struct gw_preview_request *req = s->req;
	const char *p = v, *n, *cv;
	size_t nl, cl;

	while (gw_preview_http_cookie_next(&p, v + vlen, &n, &nl, &cv, &cl)) {
		if (!gw_preview_http_is_ours(n, nl) || s->cookies++ != 0)
			continue;
		if (gw_preview_http_key_valid(cv, cl, GW_PREVIEW_KEY_MAX)) {
			memcpy(req->cookie, cv, cl);
			req->cookie[cl] = '\0';
		} else
			req->cookie_bad = 1;
	}
}

/* What one whole request header means. */
static int
gw_preview_http_request_header(
    struct gw_preview_req_scan *s, const char *l, size_t n, size_t namelen)
{
	struct gw_preview_request *req = s->req;
	const char *v;
	size_t vlen;

	gw_cdp_http_value(l, n, namelen, &v, &vlen);
	if (gw_cdp_http_named(l, namelen, "host")) {
		if (s->hosts++ != 0)
			return gw_preview_http_fail(
			    req, 400, "more than one Host header");
		if (!gw_cdp_http_host_valid(v, vlen))
			return gw_preview_http_fail(req, 400,
			    "the Host header must be a host and port of "
			    "letters, digits and . - : [ ]");
		memcpy(req->host, v, vlen);
		req->host[vlen] = '\0';
	} else if (gw_cdp_http_named(l, namelen, "content-length")) {
		if (gw_cdp_http_length(v, vlen, &s->lengths, &req->bodylen, 400,
		        &req->status, req->err) < 0)
			return -1;
	} else if (gw_cdp_http_named(l, namelen, "transfer-encoding")) {
		if (s->codings++ != 0)
			return gw_preview_http_fail(
			    req, 400, "more than one Transfer-Encoding header");
		if (!gw_cdp_http_named(v, vlen, "chunked"))
			return gw_preview_http_fail(req, 501,
			    "the only transfer coding of a request relayed is "
			    "chunked");
	} else if (gw_cdp_http_named(l, namelen, "upgrade"))
		s->upgrades++;
	else if (gw_cdp_http_named(l, namelen, "connection")) {
		if (gw_cdp_http_has_token(v, vlen, "upgrade"))
			s->conn_upgrade = 1;
	} else if (gw_cdp_http_named(l, namelen, "cookie"))
		gw_preview_http_cookie(s, v, vlen);
	return 0;
}

static int
gw_preview_http_request_line_cb(
    void *arg, unsigned lineno, const char *l, size_t n, int whole)
{
	struct gw_preview_req_scan *s = arg;
	struct gw_preview_request *req = s->req;
	size_t namelen = 0;

	if (lineno == 0)
		return gw_cdp_http_request_line(
		    l, n, whole, &req->status, req->err, &req->line);
	if (gw_cdp_http_header_syntax(
	        l, n, whole, &namelen, &req->status, req->err) < 0)
		return -1;
	return whole ? gw_preview_http_request_header(s, l, n, namelen) : 0;
}

/* PORT-KEY.DOMAIN: the port (1-65535, no leading zero) and the key of a
 * host name's first label. */
static int
gw_preview_http_label(struct gw_preview_request *req, const char *h, size_t n)
{
	const char *dash = memchr(h, '-', n);
	size_t i, dl;
	unsigned port = 0;

	if (dash == NULL)
		return -1;
	dl = (size_t)(dash - h);
	if (dl == 0 || dl > 5 || h[0] == '0')
		return -1;
	for (i = 0; i < dl; i++) {
		if (h[i] < '0' || h[i] > '9')
			return -1;
		port = port * 10 + (unsigned)(h[i] - '0');
	}
	if (port > 65535 ||
	    !gw_preview_http_key_valid(
	        dash + 1, n - dl - 1, GW_PREVIEW_KEY_MAX))
		return -1;
	req->host_port = port;
	memcpy(req->key, dash + 1, n - dl - 1);
	req->key[n - dl - 1] = '\0';
	return 0;
}

/* Routes by host name: 1 if the Host is one of the domain's, 0 if it is
 * not, -1 if it is but names no preview. */
static int
gw_preview_http_route_host(struct gw_preview_request *req, const char *domain)
{
	const char *h = req->host, *colon = strrchr(h, ':');
	size_t n =
	    colon != NULL && h[0] != '[' ? (size_t)(colon - h) : strlen(h);
	size_t dl = domain != NULL ? strlen(domain) : 0;

	if (dl == 0 || n <= dl + 1 || h[n - dl - 1] != '.' ||
	    strncasecmp(h + n - dl, domain, dl) != 0)
		return 0;
	if (memchr(h, '.', n - dl - 1) != NULL ||
	    gw_preview_http_label(req, h, n - dl - 1) < 0)
		return gw_preview_http_fail(req, 404,
		    "this host name names no preview: previews are at "
		    "PORT-KEY.DOMAIN");
	req->by_host = 1;
	req->door = GW_PREVIEW_DOOR_PREVIEW;
	return 1;
}

/* Routes by path: /preview/KEY/... (without a domain) or
 * /runtime/TOKEN/...; the prefix goes, the rest is the app's. */
static int
gw_preview_http_route_path(struct gw_preview_request *req, const char *domain)
{
	const char *t = req->line.target, *k;
	size_t tl = req->line.targetlen, pl, kl;

	if (tl >= strlen(GW_PREVIEW_RUNTIME_PATH) &&
	    memcmp(t, GW_PREVIEW_RUNTIME_PATH,
	        strlen(GW_PREVIEW_RUNTIME_PATH)) == 0) {
		req->door = GW_PREVIEW_DOOR_RUNTIME;
		pl = strlen(GW_PREVIEW_RUNTIME_PATH);
	} else if (domain == NULL && tl >= strlen(GW_PREVIEW_PATH) &&
	    memcmp(t, GW_PREVIEW_PATH, strlen(GW_PREVIEW_PATH)) == 0) {
		req->door = GW_PREVIEW_DOOR_PREVIEW;
		pl = strlen(GW_PREVIEW_PATH);
	} else
		return gw_preview_http_fail(req, 404,
		    domain == NULL ? "no preview here: previews are at "
		                     "/preview/KEY/ and runtimes at "
		                     "/runtime/TOKEN/"
		                   : "no preview here: previews are at "
		                     "PORT-KEY.DOMAIN and runtimes at "
		                     "/runtime/TOKEN/");
	k = t + pl;
	for (kl = 0; pl + kl < tl && k[kl] != '/' && k[kl] != '?'; kl++)
		;
	if (!gw_preview_http_key_valid(k, kl, GW_PREVIEW_KEY_MAX))
		return gw_preview_http_fail(req, 404,
		    "the path names no preview: its key is malformed");
	memcpy(req->key, k, kl);
	req->key[kl] = '\0';
	req->prefixlen = pl + kl;
	return 0;
}

/* Each parameter of the target's query in turn, a[0..*b); *pos (start
 * at the '?' or the target's end) moves on. */
static int
gw_preview_http_param(const struct gw_preview_request *req, const char **pos,
    const char **a, const char **b)
{
	const char *end = req->line.target + req->line.targetlen;

	if (*pos >= end)
		return 0;
	*a = *pos + 1;
	*b = memchr(*a, '&', (size_t)(end - *a));
	if (*b == NULL)
		*b = end;
	*pos = *b;
	return 1;
}

/* Whether the parameter a[0..b) is berth_link=...; its value at *v. */
static int
gw_preview_http_is_link(const char *a, const char *b, const char **v)
{
	size_t ll = strlen(GW_PREVIEW_LINK);

	if ((size_t)(b - a) <= ll || memcmp(a, GW_PREVIEW_LINK, ll) != 0 ||
	    a[ll] != '=')
		return 0;
	*v = a + ll + 1;
	return 1;
}

/* The value of berth_link in the target's query, if any. */
static int
gw_preview_http_link(struct gw_preview_request *req)
{
	const char *pos = req->line.target + req->line.pathlen, *a, *b, *v;

	while (gw_preview_http_param(req, &pos, &a, &b)) {
		if (!gw_preview_http_is_link(a, b, &v))
			continue;
		if (req->code[0] != '\0' ||
		    !gw_preview_http_key_valid(
		        v, (size_t)(b - v), GW_PREVIEW_CODE_MAX))
			return gw_preview_http_fail(
			    req, 400, "a malformed berth_link");
		memcpy(req->code, v, (size_t)(b - v));
		req->code[b - v] = '\0';
	}
	return 0;
}

/* What the whole head says, once its blank line is in. */
static int
gw_preview_http_request_done(struct gw_preview_req_scan *s, const char *domain)
{
	struct gw_preview_request *req = s->req;
	const struct gw_cdp_http_line *rl = &req->line;
	int r;

	if (s->hosts == 0)
		return gw_preview_http_fail(
		    req, 400, "a Host header is required");
	if (s->lengths != 0 && s->codings != 0)
		return gw_preview_http_fail(
		    req, 400, "both Content-Length and Transfer-Encoding");
	if (s->codings != 0)
		req->body = GW_PREVIEW_BODY_CHUNKED;
	else if (req->bodylen != 0)
		req->body = GW_PREVIEW_BODY_LENGTH;
	req->upgrade = s->upgrades != 0 && s->conn_upgrade;
	req->head = rl->methodlen == 4 && memcmp(rl->method, "HEAD", 4) == 0;
	r = gw_preview_http_route_host(req, domain);
	if (r < 0)
		return -1;
	if (r == 0 && gw_preview_http_route_path(req, domain) < 0)
		return -1;
	return req->door == GW_PREVIEW_DOOR_PREVIEW ? gw_preview_http_link(req)
	                                            : 0;
}

enum gw_cdp_http_result
gw_preview_http_request_parse(const char *buf, size_t len, const char *domain,
    struct gw_preview_request *req)
{
	struct gw_preview_req_scan s;
	enum gw_cdp_http_result r;

	memset(req, 0, sizeof *req);
	memset(&s, 0, sizeof s);
	s.req = req;
	r = gw_cdp_http_scan(buf, len, gw_preview_http_request_line_cb, &s,
	    &req->headlen, &req->status, req->err);
	if (r == GW_CDP_HTTP_OK && gw_preview_http_request_done(&s, domain) < 0)
		return GW_CDP_HTTP_ERROR;
	return r;
}

static void
gw_preview_http_put_cookie(
    struct gw_buf *o, const char *l, size_t n, size_t namelen)
{
	const char *v, *p, *cn, *cv;
	size_t vlen, nl, cl;
	int kept = 0;

	gw_cdp_http_value(l, n, namelen, &v, &vlen);
	p = v;
	while (gw_preview_http_cookie_next(&p, v + vlen, &cn, &nl, &cv, &cl)) {
		if (gw_preview_http_is_ours(cn, nl))
			continue;
		gw_buf_puts(o, kept++ ? "; " : "Cookie: ");
		gw_buf_add(o, cn, (size_t)(cv + cl - cn));
	}
	if (kept)
		gw_buf_puts(o, "\r\n");
}

static int
gw_preview_http_dropped(
    const char *l, size_t namelen, const struct gw_preview_forward *fw)
{
	static const char *const drop[] = {"x-forwarded-for",
	    "x-forwarded-proto", "x-forwarded-host", "x-forwarded-prefix",
	    NULL};
	size_t i;

	for (i = 0; drop[i] != NULL; i++) {
		if (gw_cdp_http_named(l, namelen, drop[i]))
			return 1;
	}
	return fw->authorization != NULL &&
	    gw_cdp_http_named(l, namelen, "authorization");
}

/* The request line with the routing prefix taken out of its target. */
static void
gw_preview_http_put_line(
    struct gw_buf *o, const char *buf, const struct gw_preview_request *req)
{
	const struct gw_cdp_http_line *rl = &req->line;
	const char *rest = rl->target + req->prefixlen;
	size_t restlen = rl->targetlen - req->prefixlen;
	const char *ver = rl->target + rl->targetlen;
	const char *eol = memchr(ver, '\r', req->headlen - (size_t)(ver - buf));

	gw_buf_add(o, rl->method, rl->methodlen + 1);
	if (restlen == 0 || rest[0] != '/')
		gw_buf_add(o, "/", 1);
	gw_buf_add(o, rest, restlen);
	gw_buf_add(o, ver, (size_t)(eol - ver) + 2);
}

char *
gw_preview_http_forward(const char *buf, const struct gw_preview_request *req,
    const struct gw_preview_forward *fw, size_t *len)
{
	struct gw_buf o = {NULL, 0, 0, 0};
	size_t pos, end, namelen;
	const char *colon;
	char line[GW_CDP_HTTP_HOST_MAX + GW_PREVIEW_KEY_MAX + 64];

	gw_preview_http_put_line(&o, buf, req);
	pos = (size_t)((const char *)memchr(buf, '\n', req->headlen) - buf) + 1;
	while (pos + 2 < req->headlen) {
		end = (size_t)((const char *)memchr(
		                   buf + pos, '\r', req->headlen - pos) -
		    buf);
		colon = memchr(buf + pos, ':', end - pos);
		namelen = (size_t)(colon - (buf + pos));
		if (gw_cdp_http_named(buf + pos, namelen, "cookie"))
			gw_preview_http_put_cookie(
			    &o, buf + pos, end - pos, namelen);
		else if (!gw_preview_http_dropped(buf + pos, namelen, fw))
			gw_buf_add(&o, buf + pos, end + 2 - pos);
		pos = end + 2;
	}
	snprintf(line, sizeof line,
	    "X-Forwarded-For: %s\r\nX-Forwarded-Proto: http\r\n"
	    "X-Forwarded-Host: %s\r\n",
	    fw->peer, req->host);
	gw_buf_puts(&o, line);
	if (fw->prefix && req->prefixlen != 0) {
		gw_buf_puts(&o, "X-Forwarded-Prefix: ");
		gw_buf_add(&o, req->line.target, req->prefixlen);
		gw_buf_puts(&o, "\r\n");
	}
	if (fw->authorization != NULL && fw->authorization[0] != '\0') {
		gw_buf_puts(&o, "Authorization: ");
		gw_buf_puts(&o, fw->authorization);
		gw_buf_puts(&o, "\r\n");
	}
	gw_buf_puts(&o, "\r\n");
	return gw_buf_string(&o, len);
}

/* The target's query without berth_link, '?' included if anything is
 * left. */
static void
gw_preview_http_put_query(
    struct gw_buf *o, const struct gw_preview_request *req)
{
	const char *pos = req->line.target + req->line.pathlen, *a, *b, *v;
	int kept = 0;

	while (gw_preview_http_param(req, &pos, &a, &b)) {
		if (b == a || gw_preview_http_is_link(a, b, &v))
			continue;
		gw_buf_add(o, kept++ ? "&" : "?", 1);
		gw_buf_add(o, a, (size_t)(b - a));
	}
}

char *
gw_preview_http_redirect(
    const struct gw_preview_request *req, const char *token, size_t *len)
{
	struct gw_buf o = {NULL, 0, 0, 0};

	gw_buf_puts(&o, "HTTP/1.1 302 Found\r\nLocation: ");
	gw_buf_add(&o, req->line.target, req->line.pathlen);
	gw_preview_http_put_query(&o, req);
	gw_buf_puts(&o, "\r\nSet-Cookie: " GW_PREVIEW_COOKIE "=");
	gw_buf_puts(&o, token);
	gw_buf_puts(&o, "; Path=");
	if (req->by_host)
		gw_buf_puts(&o, "/");
	else {
		gw_buf_add(&o, req->line.target, req->prefixlen);
		gw_buf_puts(&o, "/");
	}
	gw_buf_puts(&o,
	    "; HttpOnly; SameSite=Lax\r\nCache-Control: no-store\r\n"
	    "Referrer-Policy: no-referrer\r\nContent-Length: 0\r\n\r\n");
	return gw_buf_string(&o, len);
}

/* message with & < > " written as entities. */
static void
gw_preview_http_put_escaped(struct gw_buf *o, const char *message)
{
	const char *p;

	for (p = message; *p != '\0'; p++) {
		switch (*p) {
		case '&': gw_buf_puts(o, "&amp;"); break;
		case '<': gw_buf_puts(o, "&lt;"); break;
		case '>': gw_buf_puts(o, "&gt;"); break;
		case '"': gw_buf_puts(o, "&quot;"); break;
		default: gw_buf_add(o, p, 1);
		}
	}
}

char *
gw_preview_http_page(
    unsigned status, const char *message, int close, size_t *len)
{
	struct gw_buf body = {NULL, 0, 0, 0}, o = {NULL, 0, 0, 0};
	const char *reason, *slug;
	char line[192];

	reason = gw_cdp_http_reason(status, &slug);
	snprintf(line, sizeof line,
	    "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
	    "<title>%u %s</title></head>\n<body><h1>%u %s</h1>\n<p>",
	    status, reason, status, reason);
	gw_buf_puts(&body, line);
	gw_preview_http_put_escaped(&body, message);
	gw_buf_puts(&body, "</p></body></html>\n");
	snprintf(line, sizeof line,
	    "HTTP/1.1 %u %s\r\nContent-Type: text/html; charset=utf-8\r\n"
	    "Content-Length: %zu\r\nCache-Control: no-store\r\n%s\r\n",
	    status, reason, body.len, close ? "Connection: close\r\n" : "");
	gw_buf_puts(&o, line);
	gw_buf_add(&o, body.data, body.len);
	gw_buf_free(&body);
	return gw_buf_string(&o, len);
}

static int
gw_preview_http_response_line_cb(
    void *arg, unsigned lineno, const char *l, size_t n, int whole)
{
	struct gw_preview_resp_scan *s = arg;
	struct gw_preview_response *resp = s->resp;
	size_t namelen, vlen;
	const char *v, *last;
	int r;

	r = gw_cdp_http_answer_line(
	    lineno, l, n, whole, &resp->status, resp->err, &namelen, &v, &vlen);
	if (r <= 0)
		return r;
	if (gw_cdp_http_named(l, namelen, "content-length")) {
		if (gw_cdp_http_length(v, vlen, &s->lengths, &resp->bodylen,
		        502, &resp->status, resp->err) < 0)
			return -1;
	} else if (gw_cdp_http_named(l, namelen, "connection")) {
		s->close |= gw_cdp_http_has_token(v, vlen, "close");
		s->keep |= gw_cdp_http_has_token(v, vlen, "keep-alive");
	} else if (gw_cdp_http_named(l, namelen, "transfer-encoding")) {
		s->codings++;
		for (last = v + vlen; last > v && last[-1] != ','; last--)
			;
		s->chunked = gw_cdp_http_has_token(
		    last, (size_t)(v + vlen - last), "chunked");
	}
	return 0;
}

/* How the answer goes on, once its head is whole. */
static int
gw_preview_http_response_done(
    struct gw_preview_resp_scan *s, int head, int upgrade)
{
	struct gw_preview_response *resp = s->resp;
	unsigned st = resp->status;

	if (st == 101 && !upgrade)
		return gw_cdp_http_fail(&resp->status, resp->err, 502,
		    "a 101 to a request that asked for no upgrade");
	if (st == 101)
		resp->relay = 1;
	else if (st < 200)
		resp->interim = 1;
	else if (head || st == 204 || st == 304)
		resp->body = GW_PREVIEW_BODY_NONE;
	else if (s->codings != 0)
		resp->body = s->chunked ? GW_PREVIEW_BODY_CHUNKED
		                        : GW_PREVIEW_BODY_CLOSE;
	else if (s->lengths != 0)
		resp->body = resp->bodylen != 0 ? GW_PREVIEW_BODY_LENGTH
		                                : GW_PREVIEW_BODY_NONE;
	else
		resp->body = GW_PREVIEW_BODY_CLOSE;
	if (resp->body != GW_PREVIEW_BODY_LENGTH)
		resp->bodylen = 0;
	return 0;
}

enum gw_cdp_http_result
gw_preview_http_response_parse(const char *buf, size_t len, int head,
    int upgrade, struct gw_preview_response *resp)
{
	struct gw_preview_resp_scan s;
	enum gw_cdp_http_result r;

	memset(resp, 0, sizeof *resp);
	memset(&s, 0, sizeof s);
	s.resp = resp;
	r = gw_cdp_http_scan(buf, len, gw_preview_http_response_line_cb, &s,
	    &resp->headlen, &resp->status, resp->err);
	if (r == GW_CDP_HTTP_OK &&
	    gw_preview_http_response_done(&s, head, upgrade) < 0)
		r = GW_CDP_HTTP_ERROR;
	if (r == GW_CDP_HTTP_OK)
		resp->last =
		    s.close || (memcmp(buf, "HTTP/1.0", 8) == 0 && !s.keep);
	if (r == GW_CDP_HTTP_ERROR)
		resp->status = 502;
	return r;
}
