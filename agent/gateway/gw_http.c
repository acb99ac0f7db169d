/* gw_http: the probes, the noVNC page's door and the upgrade checks on
 * protocols[0], and the routing of relay WebSockets. Owns no state of
 * its own: it answers from gateway.berthd and gw_metrics. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway.h"
#include "gw_auth.h"
#include "gw_check.h"
#include "gw_cdpws.h"
#include "gw_http.h"
#include "gw_limit.h"
#include "gw_mask.h"
#include "gw_metrics.h"
#include "gw_novnc.h"
#include "gw_refusal.h"
#include "gw_ticket.h"
#include "gw_upstream.h"
#include "json.h"
#include "log.h"
#include "proto.h"
#include "tokenfile.h"
#include "xmalloc.h"

#define GW_HTTP_JSON "application/json"
#define GW_HTTP_PROM "text/plain; version=0.0.4; charset=utf-8"
#define GW_HTTP_TEXT "text/plain; charset=utf-8"
/* Room for the status line and headers ahead of the body, besides the
 * extra headers a reply names. */
#define GW_HTTP_HEADROOM 1024
/* The longest Origin and Host looked at, and the longest Cookie header
 * read for a ticket. */
#define GW_HTTP_ORIGIN_MAX 320
#define GW_HTTP_JAR_MAX 8192
/* Where the token hand-off sends the browser: noVNC's page, told to
 * connect at once to the relay and to scale the desktop to the window. */
#define GW_HTTP_NOVNC_START                                                    \
	GW_HTTP_NOVNC_PATH "vnc.html?autoconnect=1&resize=scale&path=novnc/"   \
	                   "websockify"

/* Where a request goes, by its path. */
enum gw_http_route {
	GW_HTTP_HEALTHZ,
	GW_HTTP_READYZ,
	GW_HTTP_METRICS,
	GW_HTTP_V1,
	GW_HTTP_NOVNC_INDEX, /* /novnc or /novnc/: the token hand-off */
	GW_HTTP_NOVNC_FILE,  /* a file of the page */
	GW_HTTP_NOVNC_WS,
	GW_HTTP_CDP, /* /v1/cdp, or /v1/cdp/devtools/... */
	GW_HTTP_PTY, /* /v1/pty/ID */
	GW_HTTP_OTHER,
};

/* An extra response header; name ends in a colon, as lws wants it. */
struct gw_http_hdr {
	const char *name;
	const char *value;
};

static const char *
gw_http_reason(unsigned int status)
{
	switch (status) {
	case HTTP_STATUS_OK: return "OK";
	case HTTP_STATUS_FOUND: return "Found";
	case HTTP_STATUS_BAD_REQUEST: return "Bad Request";
	case HTTP_STATUS_UNAUTHORIZED: return "Unauthorized";
	case HTTP_STATUS_FORBIDDEN: return "Forbidden";
	case HTTP_STATUS_NOT_FOUND: return "Not Found";
	case HTTP_STATUS_METHOD_NOT_ALLOWED: return "Method Not Allowed";
	case HTTP_STATUS_SERVICE_UNAVAILABLE: return "Service Unavailable";
	default: return "Error";
	}
}

/*
 * The status line. lws learns a request's HTTP version only after the
 * upgrade checks and would answer a refused upgrade with "HTTP/1.0",
 * which WebSocket clients reject; an upgrade is always HTTP/1.1, and lws
 * closes the connection after the refusal, which is said too.
 */
static int
gw_http_status(
    struct lws *wsi, unsigned int status, unsigned char **p, unsigned char *end)
{
	char line[64];
	int n;

	if (lws_hdr_total_length(wsi, WSI_TOKEN_UPGRADE) <= 0)
		return lws_add_http_header_status(wsi, status, p, end);
	n = snprintf(
	    line, sizeof line, "%u %s", status, gw_http_reason(status));
	return lws_add_http_header_by_name(wsi,
	           (const unsigned char *)"HTTP/1.1",
	           (const unsigned char *)line, n, p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION,
	        (const unsigned char *)"close", 5, p, end);
}

/*
 * Writes a whole response: status line, headers, and the body (left out
 * for HEAD, whose Content-Length still says what GET would send). One
 * lws_write, like lws_return_http_status; lws keeps what the socket does
 * not take and sends it before anything else.
 */
static int
gw_http_reply(struct lws *wsi, unsigned int status, const char *ctype,
    const char *body, size_t blen, const struct gw_http_hdr *hdrs, size_t nhdrs)
{
	unsigned char *buf, *start, *p, *end;
	size_t room = GW_HTTP_HEADROOM, i;
	char *uri;
	int head, ulen, n;

	for (i = 0; i < nhdrs; i++)
		room += strlen(hdrs[i].name) + strlen(hdrs[i].value) + 4;
	head = lws_http_get_uri_and_method(wsi, &uri, &ulen) == LWSHUMETH_HEAD;
	buf = xmalloc(LWS_PRE + room + blen);
	start = p = buf + LWS_PRE;
	end = start + room;
	if (gw_http_status(wsi, status, &p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
	        (const unsigned char *)ctype, (int)strlen(ctype), &p, end) ||
	    lws_add_http_header_content_length(wsi, blen, &p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
	        (const unsigned char *)"no-store", 8, &p, end))
		goto fail;
	for (i = 0; i < nhdrs; i++) {
		if (lws_add_http_header_by_name(wsi,
		        (const unsigned char *)hdrs[i].name,
		        (const unsigned char *)hdrs[i].value,
		        (int)strlen(hdrs[i].value), &p, end))
			goto fail;
	}
	if (lws_finalize_http_header(wsi, &p, end))
		goto fail;
	if (!head) {
		memcpy(p, body, blen);
		p += blen;
	}
	n = lws_write(wsi, start, (size_t)(p - start), LWS_WRITE_HTTP_HEADERS);
	explicit_bzero(buf, LWS_PRE + room);
	free(buf);
	return n < 0 ? -1 : 0;
fail:
	explicit_bzero(buf, LWS_PRE + room);
	free(buf);
	return -1;
}

/* A JSON error body {"error":..,"message":..}; both are our own words. */
static int
gw_http_error(struct lws *wsi, unsigned int status, const char *error,
    const char *message, const char *hname, const char *hvalue)
{
	struct gw_http_hdr h = {hname, hvalue};
	char *body;
	int r;

	body =
	    xasprintf("{\"error\":\"%s\",\"message\":\"%s\"}", error, message);
	r = gw_http_reply(wsi, status, GW_HTTP_JSON, body, strlen(body), &h,
	    hname != NULL ? 1 : 0);
	free(body);
	return r;
}

/* s as a JSON string literal; the caller frees it. */
static char *
gw_http_json_str(const char *s)
{
	char *out = NULL;
	size_t len;
	FILE *f;

	f = open_memstream(&out, &len);
	if (f == NULL)
		log_fatal("open_memstream: out of memory");
	json_write_str(f, s, strlen(s));
	if (fclose(f) != 0 || out == NULL)
		log_fatal("open_memstream: out of memory");
	return out;
}

static int
gw_http_reply_json(struct lws *wsi, unsigned int status, char *body)
{
	int r;

	r = gw_http_reply(
	    wsi, status, GW_HTTP_JSON, body, strlen(body), NULL, 0);
	free(body);
	return r;
}

/* The liveness probe: from cached state, no round trip to berthd. */
static int
gw_http_healthz(struct lws *wsi)
{
	const struct gateway_berthd *b = &gateway.berthd;
	const char *reason;
	uint64_t now, uptime = 0;
	char *r;

	if (!gw_upstream_berthd_up(&reason)) {
		r = gw_http_json_str(reason);
		gw_http_reply_json(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE,
		    xasprintf("{\"status\":\"unavailable\",\"reason\":%s}", r));
		free(r);
		return 0;
	}
	now = proto_now_ms();
	if (now > b->started_at)
		uptime = now - b->started_at;
	return gw_http_reply_json(wsi, HTTP_STATUS_OK,
	    xasprintf(
	        "%s%" PRIu64 "%s", b->healthz_head, uptime, b->healthz_tail));
}

/* /readyz's "unready": since when, for how long and why the sandbox is
 * not ready, and which services failed for good, so that a pool manager
 * tells a sandbox that is coming back from a dead one. */
static void
gw_http_unready(FILE *f, uint64_t since, const char *why, const char *failed)
{
	uint64_t now = proto_now_ms();

	fputs(",\"unready\":{\"since\":", f);
	gw_upstream_rfc3339(f, since);
	fprintf(f, ",\"for_ms\":%" PRIu64 ",\"why\":%s,\"failed\":%s}",
	    now > since ? now - since : 0, why, failed != NULL ? failed : "[]");
}

/* The readiness probe: berthd answers and every check is ok. */
static int
gw_http_readyz(struct lws *wsi)
{
	const struct gateway_berthd *b = &gateway.berthd;
	const char *reason;
	char *body = NULL, *why, *r;
	uint64_t since;
	int up, ready;
	size_t len;
	FILE *f;

	up = gw_upstream_berthd_up(&reason);
	ready = up && b->checks_json != NULL && b->checks_ok;
	f = open_memstream(&body, &len);
	if (f == NULL)
		log_fatal("open_memstream: out of memory");
	fprintf(f, "{\"ready\":%s,\"checks\":%s", ready ? "true" : "false",
	    b->checks_json != NULL ? b->checks_json : "{}");
	if (!up) {
		fputs(",\"reason\":", f);
		json_write_str(f, reason, strlen(reason));
	}
	if (ready) {
		since = b->up_since > b->checks_ready_since
		    ? b->up_since
		    : b->checks_ready_since;
		fputs(",\"ready_since\":", f);
		gw_upstream_rfc3339(f, since);
	} else if (!up) {
		r = gw_http_json_str(reason);
		why = xasprintf("[%s]", r);
		gw_http_unready(f, b->answered_at, why, b->failed_json);
		free(why);
		free(r);
	} else if (b->checks_json == NULL)
		gw_http_unready(f, b->up_since,
		    "[\"waiting for berthd's state\"]", b->failed_json);
	else
		gw_http_unready(
		    f, b->checks_unready_since, b->why_json, b->failed_json);
	fputc('}', f);
	if (fclose(f) != 0 || body == NULL)
		log_fatal("open_memstream: out of memory");
	return gw_http_reply_json(wsi,
	    ready ? HTTP_STATUS_OK : HTTP_STATUS_SERVICE_UNAVAILABLE, body);
}

static int
gw_http_metrics(struct lws *wsi)
{
	const char *reason;
	char *text;
	size_t len;
	int r;

	text = gw_metrics_render(gw_upstream_berthd_up(&reason),
	    (double)(lws_now_usecs() - gateway.started) / LWS_USEC_PER_SEC,
	    &len);
	r = gw_http_reply(
	    wsi, HTTP_STATUS_OK, GW_HTTP_PROM, text, len, NULL, 0);
	free(text);
	return r;
}

/* Where a request goes (path NULL: none we could read), counted once in
 * the metrics by the same reading. */
static enum gw_http_route
gw_http_route(const char *path)
{
	enum gw_metrics_path which;
	size_t n = strlen(GW_HTTP_NOVNC_PATH);

	which = path != NULL ? gw_metrics_path(path) : GW_METRICS_OTHER;
	gw_metrics.http_requests[which]++;
	switch (which) {
	case GW_METRICS_HEALTHZ: return GW_HTTP_HEALTHZ;
	case GW_METRICS_READYZ: return GW_HTTP_READYZ;
	case GW_METRICS_METRICS: return GW_HTTP_METRICS;
	case GW_METRICS_V1:
		return gw_http_pty_path(path) ? GW_HTTP_PTY : GW_HTTP_V1;
	case GW_METRICS_CDP:
		path += strlen(GW_HTTP_CDP_PATH);
		if (*path == '\0' || gw_cdpws_path_ok(path))
			return GW_HTTP_CDP;
		return GW_HTTP_OTHER;
	case GW_METRICS_NOVNC:
		if (strcmp(path, GW_HTTP_NOVNC_WS_PATH) == 0)
			return GW_HTTP_NOVNC_WS;
		if (strncmp(path, GW_HTTP_NOVNC_PATH, n) != 0 ||
		    path[n] == '\0')
			return GW_HTTP_NOVNC_INDEX;
		return GW_HTTP_NOVNC_FILE;
	default: return GW_HTTP_OTHER;
	}
}

int
gw_http_pty_path(const char *path)
{
	size_t n = strlen(GW_HTTP_PTY_PATH), i;

	if (path == NULL || strncmp(path, GW_HTTP_PTY_PATH, n) != 0)
		return 0;
	for (i = 0; i < GW_HTTP_PTY_ID_LEN; i++)
		if (!isxdigit((unsigned char)path[n + i]) ||
		    isupper((unsigned char)path[n + i]))
			return 0;
	return path[n + i] == '\0';
}

int
gw_http_pty_credential(struct lws *wsi, char *buf, size_t size)
{
	const char *value;
	size_t n;

	if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION) > 0)
		return gw_check_copy(wsi, buf, size);
	/* lws copies "token=VALUE" and points past the name. */
	value = lws_get_urlarg_by_name(wsi, "token=", buf, (int)size);
	if (value == NULL)
		return -1;
	n = strlen(value);
	memmove(buf, value, n + 1);
	/* Cut short by lws, the value is no credential. */
	return n > 0 && n + sizeof "token=" < size ? (int)n : -1;
}

/* A terminal session's door: NULL if its credential opens it, else the
 * refusal's reason. */
static const char *
gw_http_pty_auth(struct lws *wsi)
{
	char cred[TOKENFILE_MAX + 2], peer[GATEWAY_PEER_MAX];
	const char *reason;
	int n;

	if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION) > 0)
		return gw_check_request(wsi, GW_CHECK_PTY, NULL);
	n = gw_http_pty_credential(wsi, cred, sizeof cred);
	gateway_peer(wsi, peer, sizeof peer);
	reason = n < 0
	    ? "missing"
	    : gw_check_token(GW_CHECK_PTY, cred, (size_t)n, peer, NULL);
	explicit_bzero(cred, sizeof cred);
	return reason;
}

/* Whether the request's Origin is the gateway's own, as the request's
 * Host names it (gw_ticket.h has the rule). */
static int
gw_http_same_origin(struct lws *wsi)
{
	char origin[GW_HTTP_ORIGIN_MAX], host[GW_HTTP_ORIGIN_MAX];
	int olen, hlen;

	olen = gw_check_header(wsi, WSI_TOKEN_ORIGIN, origin, sizeof origin);
	hlen = gw_check_header(wsi, WSI_TOKEN_HOST, host, sizeof host);
	if (olen <= 0 || hlen <= 0)
		return 0;
	return gw_ticket_origin_ok(origin, (size_t)olen, host, (size_t)hlen);
}

/*
 * noVNC's doors take the bearer token (the master token or a desktop
 * grant's), or a session ticket in the cookie when there is no
 * Authorization header (a browser cannot put one on its WebSocket); an
 * upgrade the ticket authenticates must also come from the gateway's own
 * origin. NULL if the request may pass, with whom it was admitted for in
 * *who, else the reason of the refusal.
 */
static const char *
gw_http_novnc_auth(struct lws *wsi, int upgrade, struct gw_check_answer *who)
{
	char jar[GW_HTTP_JAR_MAX];
	const char *reason;
	int jlen;

	if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION) > 0)
		return gw_check_request(wsi, GW_CHECK_NOVNC, who);
	jlen = gw_check_header(wsi, WSI_TOKEN_HTTP_COOKIE, jar, sizeof jar);
	if (jlen == -2) {
		memset(who, 0, sizeof *who);
		return "malformed";
	}
	reason = gw_ticket_check(jlen >= 0 ? jar : NULL,
	    jlen >= 0 ? (size_t)jlen : 0, lws_now_usecs(), who);
	explicit_bzero(jar, sizeof jar);
	if (reason == NULL && upgrade && !gw_http_same_origin(wsi))
		reason = "origin";
	return reason;
}

/* A grant's expiry (ms since the epoch) on lws's clock, whose now is
 * now; 0 for the master token, which has none. */
static lws_usec_t
gw_http_grant_until(const struct gw_check_answer *who, lws_usec_t now)
{
	uint64_t wall = proto_now_ms();

	if (who->grant[0] == '\0')
		return 0;
	if (who->expires_at_ms <= wall)
		return now;
	return now + (lws_usec_t)(who->expires_at_ms - wall) * LWS_US_PER_MS;
}

/* A refusal for want of the token: logged, counted and journaled, never
 * with the token itself, and summed per peer (gw_refusal.h). */
static void
gw_http_auth_failed(struct lws *wsi, const char *what, const char *reason)
{
	char peer[GATEWAY_PEER_MAX];

	gateway_peer(wsi, peer, sizeof peer);
	gw_refusal_note(peer, what, reason);
}

static int
gw_http_unauthorized(struct lws *wsi, const char *reason)
{
	if (strcmp(reason, GW_AUTH_UNAVAILABLE) == 0)
		return gw_http_error(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE,
		    "unavailable", "berthd cannot check the token now", NULL,
		    NULL);
	gw_http_auth_failed(wsi, "a request", reason);
	return gw_http_error(wsi, HTTP_STATUS_UNAUTHORIZED, "unauthorized",
	    "a valid token is required: open " GW_HTTP_NOVNC_PATH
	    "?token=TOKEN",
	    "www-authenticate:", "Bearer");
}

/*
 * The token hand-off: /novnc/?token=T, T right, mints a session ticket,
 * sets it as the cookie and sends the browser on to the page with
 * location.replace, which puts the page in the place of the ?token= entry
 * in the history; a redirect would leave that entry in the browser's
 * history. The page's Referrer-Policy keeps the address, token and all,
 * out of the next request. Without ?token=, a request that carries a
 * ticket or the token already is sent on with a redirect.
 */
static int
gw_http_novnc_index(struct lws *wsi)
{
	static const char page[] =
	    "<!doctype html><meta charset=\"utf-8\"><title>noVNC</title>"
	    "<script>location.replace(\"" GW_HTTP_NOVNC_START "\")</script>"
	    "<noscript><a href=\"" GW_HTTP_NOVNC_START
	    "\">noVNC</a></noscript>\n";
	char arg[TOKENFILE_MAX + 16], cookie[GW_TICKET_SET_COOKIE_MAX];
	char peer[GATEWAY_PEER_MAX];
	struct gw_check_answer who;
	struct gw_http_hdr hdrs[2];
	const char *value, *reason;
	lws_usec_t now;
	int r;

	value = lws_get_urlarg_by_name(wsi, "token=", arg, sizeof arg);
	if (value == NULL) {
		reason = gw_http_novnc_auth(wsi, 0, &who);
		if (reason != NULL)
			return gw_http_unauthorized(wsi, reason);
		hdrs[0].name = "location:";
		hdrs[0].value = GW_HTTP_NOVNC_START;
		return gw_http_reply(wsi, HTTP_STATUS_FOUND, GW_HTTP_TEXT,
		    "to the page\n", 12, hdrs, 1);
	}
	gateway_peer(wsi, peer, sizeof peer);
	reason =
	    gw_check_token(GW_CHECK_NOVNC, value, strlen(value), peer, &who);
	explicit_bzero(arg, sizeof arg);
	if (reason != NULL)
		return gw_http_unauthorized(wsi, reason);
	now = lws_now_usecs();
	gw_ticket_mint(
	    now, &who, gw_http_grant_until(&who, now), cookie, sizeof cookie);
	hdrs[0].name = "set-cookie:";
	hdrs[0].value = cookie;
	hdrs[1].name = "referrer-policy:";
	hdrs[1].value = "no-referrer";
	r = gw_http_reply(wsi, HTTP_STATUS_OK, "text/html; charset=utf-8", page,
	    sizeof page - 1, hdrs, 2);
	explicit_bzero(cookie, sizeof cookie);
	return r;
}

/* A file of the page, for a request that carries the token. */
static int
gw_http_novnc_file(struct lws *wsi, const char *path)
{
	struct gw_http_hdr h = {"x-content-type-options:", "nosniff"};
	struct gw_check_answer who;
	const char *reason, *type;
	size_t len;
	char *body;
	int r;

	reason = gw_http_novnc_auth(wsi, 0, &who);
	if (reason != NULL)
		return gw_http_unauthorized(wsi, reason);
	if (gw_novnc_file(
	        path + strlen(GW_HTTP_NOVNC_PATH), &body, &len, &type) < 0)
		return gw_http_error(wsi, HTTP_STATUS_NOT_FOUND, "not_found",
		    "no such file", NULL, NULL);
	r = gw_http_reply(wsi, HTTP_STATUS_OK, type, body, len, &h, 1);
	free(body);
	return r;
}

static int
gw_http_request(struct lws *wsi, const char *in, size_t len)
{
	char path[GW_HTTP_PATH_MAX], *uri;
	enum gw_http_route route;
	int meth, ulen, r;

	gw_limit_head_done(wsi);
	/* A path too long, or with a NUL in it, is no path of ours. */
	if (len < sizeof path && memchr(in, '\0', len) == NULL) {
		memcpy(path, in, len);
		path[len] = '\0';
		route = gw_http_route(path);
	} else
		route = gw_http_route(NULL);
	meth = lws_http_get_uri_and_method(wsi, &uri, &ulen);
	if (meth != LWSHUMETH_GET && meth != LWSHUMETH_HEAD) {
		r = gw_http_error(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED,
		    "method_not_allowed", "only GET and HEAD are served",
		    "allow:", "GET, HEAD");
		goto done;
	}
	switch (route) {
	case GW_HTTP_HEALTHZ: r = gw_http_healthz(wsi); break;
	case GW_HTTP_READYZ: r = gw_http_readyz(wsi); break;
	case GW_HTTP_METRICS: r = gw_http_metrics(wsi); break;
	case GW_HTTP_V1:
	case GW_HTTP_PTY:
		r = gw_http_error(wsi, HTTP_STATUS_BAD_REQUEST, "bad_request",
		    "this is a WebSocket endpoint "
		    "(subprotocol " GATEWAY_SUBPROTOCOL ")",
		    NULL, NULL);
		break;
	case GW_HTTP_NOVNC_WS:
	case GW_HTTP_CDP:
		r = gw_http_error(wsi, HTTP_STATUS_BAD_REQUEST, "bad_request",
		    "this is a WebSocket endpoint", NULL, NULL);
		break;
	case GW_HTTP_NOVNC_INDEX: r = gw_http_novnc_index(wsi); break;
	case GW_HTTP_NOVNC_FILE: r = gw_http_novnc_file(wsi, path); break;
	default:
		r = gw_http_error(wsi, HTTP_STATUS_NOT_FOUND, "not_found",
		    "no such path", NULL, NULL);
		break;
	}
done:
	if (r < 0 || lws_http_transaction_completed(wsi))
		return -1;
	gw_limit_idle(wsi);
	return 0;
}

/*
 * The offered subprotocols must include berth.v1 and name no other
 * protocol of this vhost: lws binds the first offered name it knows, and
 * that must not be the HTTP, a relay or the upstream handler.
 */
static int
gw_http_subprotocol_ok(struct lws *wsi)
{
	char buf[256], *tok, *save;
	int found = 0;

	if (lws_hdr_copy(wsi, buf, sizeof buf, WSI_TOKEN_PROTOCOL) <= 0)
		return 0;
	for (tok = strtok_r(buf, ", \t", &save); tok != NULL;
	     tok = strtok_r(NULL, ", \t", &save)) {
		if (strcmp(tok, GATEWAY_SUBPROTOCOL) == 0)
			found = 1;
		else if (lws_vhost_name_to_protocol(gateway.vhost, tok) != NULL)
			return 0;
	}
	return found;
}

/*
 * A relay WebSocket offers no subprotocol (noVNC, CDP clients) or just
 * "binary" (websockify's name for raw bytes). lws binds the former to
 * protocols[0] and the latter to the "binary" entry; both hand the
 * connection on to gw_http_relay_cb. Any other name could bind it to a
 * handler it must not reach.
 */
static int
gw_http_relay_subprotocol_ok(struct lws *wsi)
{
	char buf[64];
	int n;

	n = lws_hdr_total_length(wsi, WSI_TOKEN_PROTOCOL);
	if (n <= 0)
		return 1;
	if ((size_t)n >= sizeof buf ||
	    lws_hdr_copy(wsi, buf, sizeof buf, WSI_TOKEN_PROTOCOL) < 0)
		return 0;
	return strcmp(buf, "binary") == 0;
}

/* Answers an upgrade with an HTTP error instead of the 101: 1 as
 * LWS_CALLBACK_HTTP_CONFIRM_UPGRADE wants it, or -1 to hang up. */
static int
gw_http_refuse(struct lws *wsi, unsigned int status, const char *error,
    const char *message, const char *hname, const char *hvalue)
{
	if (gw_http_error(wsi, status, error, message, hname, hvalue) < 0)
		return -1;
	return 1;
}

/* Whether the relay at route is configured; if not, *why says so. */
static int
gw_http_relay_configured(enum gw_http_route route, const char **why)
{
	if (route == GW_HTTP_NOVNC_WS && gateway.vnc.port == 0) {
		*why = "no VNC server is configured (vnc)";
		return 0;
	}
	if (route == GW_HTTP_CDP && gateway.cdp.port == 0) {
		*why = "no DevTools endpoint is configured (cdp)";
		return 0;
	}
	return 1;
}

/*
 * Whom the last relay upgrade let through was admitted for, until its
 * relay opens: lws calls ESTABLISHED on the same connection within the
 * call that asked LWS_CALLBACK_HTTP_CONFIRM_UPGRADE, so one slot does.
 * Every upgrade clears it first, and a relay that does not find its own
 * wsi here is closed rather than opened with another's rights.
 */
static struct {
	struct lws *wsi;
	struct gw_check_answer who;
} gw_http_admitted;

static void
gw_http_admitted_clear(void)
{
	explicit_bzero(&gw_http_admitted, sizeof gw_http_admitted);
}

/*
 * Every WebSocket upgrade stops here before lws answers it: a refusal is
 * written as an ordinary HTTP response and the 101 never goes out.
 * /v1 wants subprotocol berth.v1 and the bearer token; noVNC's relay
 * takes a session ticket in the cookie too, from the gateway's own
 * origin, as a browser cannot send the header; the CDP relay wants the
 * bearer token. A relay let through is admitted as gw_http_admitted
 * says. Returns 0 to let the upgrade proceed, 1 if a response was
 * written, -1 to hang up.
 */
static int
gw_http_confirm_upgrade(struct lws *wsi, const char *upgrade)
{
	struct gw_check_answer *who = &gw_http_admitted.who;
	char path[GW_HTTP_PATH_MAX];
	enum gw_http_route route;
	const char *reason, *why;

	gw_http_admitted_clear();

	route = gw_http_route(
	    lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) > 0 ? path
	                                                                : NULL);
	if (strcasecmp(upgrade, "websocket") != 0)
		return gw_http_refuse(wsi, HTTP_STATUS_BAD_REQUEST,
		    "bad_request", "only WebSocket upgrades are served", NULL,
		    NULL);
	switch (route) {
	case GW_HTTP_V1:
		if (!gw_http_subprotocol_ok(wsi))
			return gw_http_refuse(wsi, HTTP_STATUS_BAD_REQUEST,
			    "bad_request",
			    "the subprotocol must be " GATEWAY_SUBPROTOCOL,
			    NULL, NULL);
		reason = gw_check_request(wsi, GW_CHECK_V1, NULL);
		break;
	case GW_HTTP_PTY:
		if (!gw_http_subprotocol_ok(wsi))
			return gw_http_refuse(wsi, HTTP_STATUS_BAD_REQUEST,
			    "bad_request",
			    "the subprotocol must be " GATEWAY_SUBPROTOCOL,
			    NULL, NULL);
		reason = gw_http_pty_auth(wsi);
		break;
	case GW_HTTP_NOVNC_WS:
	case GW_HTTP_CDP:
		if (!gw_http_relay_configured(route, &why))
			return gw_http_refuse(wsi, HTTP_STATUS_NOT_FOUND,
			    "not_found", why, NULL, NULL);
		if (!gw_http_relay_subprotocol_ok(wsi))
			return gw_http_refuse(wsi, HTTP_STATUS_BAD_REQUEST,
			    "bad_request",
			    "a relay takes no subprotocol, or \"binary\"", NULL,
			    NULL);
		reason = route == GW_HTTP_NOVNC_WS
		    ? gw_http_novnc_auth(wsi, 1, who)
		    : gw_check_request(wsi, GW_CHECK_CDP, who);
		if (reason == NULL)
			gw_http_admitted.wsi = wsi;
		break;
	default:
		return gw_http_refuse(wsi, HTTP_STATUS_NOT_FOUND, "not_found",
		    "WebSocket clients connect to " GATEWAY_WS_PATH
		    ", " GW_HTTP_NOVNC_WS_PATH " or " GW_HTTP_CDP_PATH,
		    NULL, NULL);
	}
	if (reason == NULL)
		return 0;
	gw_http_admitted_clear();
	if (strcmp(reason, GW_AUTH_UNAVAILABLE) == 0)
		return gw_http_refuse(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE,
		    "unavailable", "berthd cannot check the token now", NULL,
		    NULL);
	gw_http_auth_failed(wsi, "upgrade", reason);
	if (strcmp(reason, "origin") == 0)
		return gw_http_refuse(wsi, HTTP_STATUS_FORBIDDEN, "forbidden",
		    "the session cookie counts only from the gateway's own "
		    "origin",
		    NULL, NULL);
	return gw_http_refuse(wsi, HTTP_STATUS_UNAUTHORIZED, "unauthorized",
	    "a valid bearer token is required", "www-authenticate:", "Bearer");
}

int
gw_http_relay_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	enum gw_http_relay *relay;
	char path[GW_HTTP_PATH_MAX];

	(void)user;
	if (gw_mask_filter(wsi, reason) < 0)
		return -1;
	if (reason == LWS_CALLBACK_ESTABLISHED) {
		/* gw_http_confirm_upgrade let only the relays' paths
		 * through to here. */
		if (gw_http_admitted.wsi != wsi ||
		    lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI) <=
		        0) {
			gw_http_admitted_clear();
			return -1;
		}
		if (strcmp(path, GW_HTTP_NOVNC_WS_PATH) == 0)
			gw_novnc_open(wsi, &gw_http_admitted.who);
		else
			gw_cdpws_open(wsi, path + strlen(GW_HTTP_CDP_PATH),
			    &gw_http_admitted.who);
		gw_http_admitted_clear();
		return 0;
	}
	relay = lws_get_opaque_user_data(wsi);
	if (relay == NULL)
		return 0;
	switch (*relay) {
	case GW_HTTP_RELAY_NOVNC: return gw_novnc_ws_cb(wsi, reason, in, len);
	case GW_HTTP_RELAY_CDP: return gw_cdpws_ws_cb(wsi, reason, in, len);
	default: return 0;
	}
}

int
gw_http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	int r;

	switch (reason) {
	case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
		gw_limit_accepted(wsi);
		return 0;
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		gw_limit_head_done(wsi);
		r = gw_http_confirm_upgrade(wsi, in);
		/* A WebSocket passed the token check: it counts no more. */
		if (r == 0)
			gw_limit_forget(wsi);
		return r;
	case LWS_CALLBACK_WSI_DESTROY:
		gw_limit_forget(wsi);
		return gw_mask_filter(wsi, reason);
	case LWS_CALLBACK_HTTP: return gw_http_request(wsi, in, len);
	/* A WebSocket that offered no subprotocol stays bound here. */
	case LWS_CALLBACK_ESTABLISHED:
	case LWS_CALLBACK_RECEIVE:
	case LWS_CALLBACK_SERVER_WRITEABLE:
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
	case LWS_CALLBACK_CLOSED:
		return gw_http_relay_cb(wsi, reason, user, in, len);
	default: return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}
