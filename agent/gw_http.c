/* gw_http: the probes and the upgrade checks on protocols[0]. Owns no
 * state of its own: it answers from gateway.berthd and gw_metrics. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway.h"
#include "gw_http.h"
#include "gw_metrics.h"
#include "gw_upstream.h"
#include "json.h"
#include "log.h"
#include "proto.h"
#include "xmalloc.h"

#define GW_HTTP_JSON "application/json"
#define GW_HTTP_PROM "text/plain; version=0.0.4; charset=utf-8"
/* Room for the status line and headers ahead of the body. */
#define GW_HTTP_HEADROOM 1024

int
gw_http_token_equal(
    const char *presented, size_t plen, const char *token, size_t tlen)
{
	volatile unsigned char diff = 0;
	size_t i;

	/* Every presented byte is compared (against the token, repeated),
	 * whatever the lengths; the length difference is folded in last. */
	for (i = 0; i < plen; i++)
		diff |= (unsigned char)(presented[i] ^ token[i % tlen]);
	return (diff | (unsigned char)((plen ^ tlen) != 0)) == 0;
}

static const char *
gw_http_reason(unsigned int status)
{
	switch (status) {
	case HTTP_STATUS_OK: return "OK";
	case HTTP_STATUS_BAD_REQUEST: return "Bad Request";
	case HTTP_STATUS_UNAUTHORIZED: return "Unauthorized";
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
    const char *body, size_t blen, const char *hname, const char *hvalue)
{
	unsigned char *buf, *start, *p, *end;
	char *uri;
	int head, ulen, n;

	head = lws_http_get_uri_and_method(wsi, &uri, &ulen) == LWSHUMETH_HEAD;
	buf = xmalloc(LWS_PRE + GW_HTTP_HEADROOM + blen);
	start = p = buf + LWS_PRE;
	end = start + GW_HTTP_HEADROOM;
	if (gw_http_status(wsi, status, &p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
	        (const unsigned char *)ctype, (int)strlen(ctype), &p, end) ||
	    lws_add_http_header_content_length(wsi, blen, &p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
	        (const unsigned char *)"no-store", 8, &p, end) ||
	    (hname != NULL &&
	        lws_add_http_header_by_name(wsi, (const unsigned char *)hname,
	            (const unsigned char *)hvalue, (int)strlen(hvalue), &p,
	            end)) ||
	    lws_finalize_http_header(wsi, &p, end)) {
		free(buf);
		return -1;
	}
	if (!head) {
		memcpy(p, body, blen);
		p += blen;
	}
	n = lws_write(wsi, start, (size_t)(p - start), LWS_WRITE_HTTP_HEADERS);
	free(buf);
	return n < 0 ? -1 : 0;
}

/* A JSON error body {"error":..,"message":..}; both are our own words. */
static int
gw_http_error(struct lws *wsi, unsigned int status, const char *error,
    const char *message, const char *hname, const char *hvalue)
{
	char *body;
	int r;

	body =
	    xasprintf("{\"error\":\"%s\",\"message\":\"%s\"}", error, message);
	r = gw_http_reply(
	    wsi, status, GW_HTTP_JSON, body, strlen(body), hname, hvalue);
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
	    wsi, status, GW_HTTP_JSON, body, strlen(body), NULL, NULL);
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

/* The readiness probe: berthd answers and every check is ok. */
static int
gw_http_readyz(struct lws *wsi)
{
	const struct gateway_berthd *b = &gateway.berthd;
	const char *reason, *checks;
	char *r;
	int up, ready;

	up = gw_upstream_berthd_up(&reason);
	checks = b->checks_json != NULL ? b->checks_json : "{}";
	ready = up && b->checks_json != NULL && b->checks_ok;
	if (up)
		return gw_http_reply_json(wsi,
		    ready ? HTTP_STATUS_OK : HTTP_STATUS_SERVICE_UNAVAILABLE,
		    xasprintf("{\"ready\":%s,\"checks\":%s}",
		        ready ? "true" : "false", checks));
	r = gw_http_json_str(reason);
	gw_http_reply_json(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE,
	    xasprintf(
	        "{\"ready\":false,\"checks\":%s,\"reason\":%s}", checks, r));
	free(r);
	return 0;
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
	    wsi, HTTP_STATUS_OK, GW_HTTP_PROM, text, len, NULL, NULL);
	free(text);
	return r;
}

static int
gw_http_request(struct lws *wsi, const char *in, size_t len)
{
	enum gw_metrics_path path;
	char name[32];
	char *uri;
	int meth, ulen, r;

	snprintf(name, sizeof name, "%.*s", (int)len, in);
	path = len < sizeof name ? gw_metrics_path(name) : GW_METRICS_OTHER;
	gw_metrics.http_requests[path]++;
	meth = lws_http_get_uri_and_method(wsi, &uri, &ulen);
	if (meth != LWSHUMETH_GET && meth != LWSHUMETH_HEAD)
		r = gw_http_error(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED,
		    "method_not_allowed", "only GET and HEAD are served",
		    "allow:", "GET, HEAD");
	else if (path == GW_METRICS_HEALTHZ)
		r = gw_http_healthz(wsi);
	else if (path == GW_METRICS_READYZ)
		r = gw_http_readyz(wsi);
	else if (path == GW_METRICS_METRICS)
		r = gw_http_metrics(wsi);
	else if (path == GW_METRICS_V1)
		r = gw_http_error(wsi, HTTP_STATUS_BAD_REQUEST, "bad_request",
		    "this is a WebSocket endpoint "
		    "(subprotocol " GATEWAY_SUBPROTOCOL ")",
		    NULL, NULL);
	else
		r = gw_http_error(wsi, HTTP_STATUS_NOT_FOUND, "not_found",
		    "no such path", NULL, NULL);
	if (r < 0 || lws_http_transaction_completed(wsi))
		return -1;
	return 0;
}

/*
 * The offered subprotocols must include berth.v1 and name no other
 * protocol of this vhost: lws binds the first offered name it knows, and
 * that must not be the HTTP or the upstream handler.
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

/* Checks the bearer token; NULL if it is right, else the reason the
 * refusal is journaled with. */
static const char *
gw_http_auth(struct lws *wsi)
{
	char hdr[GATEWAY_TOKEN_MAX + 64], *p;
	const char *reason = "malformed";
	size_t plen;
	int n;

	n = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION);
	if (n <= 0)
		return "missing";
	if ((size_t)n >= sizeof hdr)
		return reason;
	n = lws_hdr_copy(wsi, hdr, sizeof hdr, WSI_TOKEN_HTTP_AUTHORIZATION);
	if (n > 0 && strncasecmp(hdr, "Bearer ", 7) == 0) {
		p = hdr + 7;
		while (*p == ' ')
			p++;
		plen = strlen(p);
		while (plen > 0 && (p[plen - 1] == ' ' || p[plen - 1] == '\t'))
			plen--;
		if (plen != 0 &&
		    gw_http_token_equal(
		        p, plen, gateway.token, gateway.tokenlen))
			reason = NULL;
		else if (plen != 0)
			reason = "invalid";
	}
	explicit_bzero(hdr, sizeof hdr);
	return reason;
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

/*
 * Every WebSocket upgrade stops here before lws answers it: a refusal is
 * written as an ordinary HTTP response and the 101 never goes out.
 * Returns 0 to let the upgrade proceed, 1 if a response was written, -1
 * to hang up.
 */
static int
gw_http_confirm_upgrade(struct lws *wsi, const char *upgrade)
{
	char path[64], peer[GATEWAY_PEER_MAX];
	enum gw_metrics_path which = GW_METRICS_OTHER;
	const char *reason;
	int n;

	n = lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI);
	if (n > 0)
		which = gw_metrics_path(path);
	gw_metrics.http_requests[which]++;
	if (strcasecmp(upgrade, "websocket") != 0)
		return gw_http_refuse(wsi, HTTP_STATUS_BAD_REQUEST,
		    "bad_request", "only WebSocket upgrades are served", NULL,
		    NULL);
	if (which != GW_METRICS_V1)
		return gw_http_refuse(wsi, HTTP_STATUS_NOT_FOUND, "not_found",
		    "WebSocket clients connect to " GATEWAY_WS_PATH, NULL,
		    NULL);
	if (!gw_http_subprotocol_ok(wsi))
		return gw_http_refuse(wsi, HTTP_STATUS_BAD_REQUEST,
		    "bad_request",
		    "the subprotocol must be " GATEWAY_SUBPROTOCOL, NULL, NULL);
	reason = gw_http_auth(wsi);
	if (reason == NULL)
		return 0;
	gateway_peer(wsi, peer, sizeof peer);
	log_info("refused upgrade from %s: token %s", peer, reason);
	gw_metrics.auth_failures++;
	gw_upstream_auth_failed(peer, reason);
	return gw_http_refuse(wsi, HTTP_STATUS_UNAUTHORIZED, "unauthorized",
	    "a valid bearer token is required", "www-authenticate:", "Bearer");
}

int
gw_http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	switch (reason) {
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		return gw_http_confirm_upgrade(wsi, in);
	case LWS_CALLBACK_HTTP: return gw_http_request(wsi, in, len);
	default: return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}
