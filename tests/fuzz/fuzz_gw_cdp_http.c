/* fuzz_cdp_http: libFuzzer target for the CDP relay's HTTP reading and
 * rewriting (gw_cdp_http.c). The first byte picks what the bytes are (a
 * client's request head, or Chromium's answer to one of a few requests,
 * or an error message of ours), the second how they are cut: a head must
 * come to the same verdict however far it has arrived, and whatever is
 * built from a head must read back as what it claims to be. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_cdp_http.h"
#include "gw_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_AUTH "127.0.0.1:9222"
#define FUZZ_HOST "h:1"

/* The requests an answer may be to. */
static const char fuzz_get[] =
    "GET /json/version/ HTTP/1.1\r\nHost: h:1\r\n\r\n";
static const char fuzz_upgrade[] =
    "GET /devtools/page/x HTTP/1.1\r\nHost: h:1\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\n\r\n";
static const char fuzz_head[] = "HEAD /json HTTP/1.1\r\nHost: h:1\r\n\r\n";
static const char fuzz_put[] = "PUT /json/new HTTP/1.1\r\nHost: h:1\r\n\r\n";
static const char *const fuzz_requests[] = {
    fuzz_get, fuzz_upgrade, fuzz_head, fuzz_put};

/* Parses buf[0..len) from a copy of exactly len bytes, so that a read
 * past the end is caught. */
static enum gw_cdp_http_result
fuzz_req(
    const char *buf, size_t len, struct gw_cdp_http_request *req, char **copy)
{
	*copy = malloc(len > 0 ? len : 1);
	memcpy(*copy, buf, len);
	return gw_cdp_http_request_parse(*copy, len, req);
}

static enum gw_cdp_http_result
fuzz_resp(const char *buf, size_t len, const struct gw_cdp_http_request *req,
    struct gw_cdp_http_response *resp)
{
	char *copy = malloc(len > 0 ? len : 1);
	enum gw_cdp_http_result r;

	memcpy(copy, buf, len);
	r = gw_cdp_http_response_parse(copy, len, req, resp);
	free(copy);
	return r;
}

static void
fuzz_err(const char *err, size_t size)
{
	if (memchr(err, '\0', size) == NULL || err[0] == '\0')
		abort();
}

/* How far apart the prefixes tried are: at least cut, and few enough
 * that a long input stays quick. */
static size_t
fuzz_step(size_t cut, size_t n)
{
	size_t min = n / 64 + 1;

	return cut < min ? min : cut;
}

/* A span of the request must lie within its head. */
static void
fuzz_span(const char *p, size_t len, const char *head, size_t headlen)
{
	if (p != NULL && (p < head || p + len > head + headlen))
		abort();
}

/* Whether a head (NUL-terminated) carries a Cookie header: the relay
 * never forwards the client's cookies. */
static int
fuzz_has_cookie(const char *head)
{
	return strcasestr(head, "\r\ncookie:") != NULL;
}

/* What the relay sends Chromium must read back as the same request, with
 * Chromium's Host and no credentials. */
static void
fuzz_req_out(const char *buf, const struct gw_cdp_http_request *req)
{
	struct gw_cdp_http_request again;
	enum gw_cdp_http_result r;
	char *out, *copy;
	size_t n;

	out = gw_cdp_http_request_head(buf, req, FUZZ_AUTH, &n);
	if (strlen(out) != n || n < 4 || memcmp(out + n - 4, "\r\n\r\n", 4))
		abort();
	r = fuzz_req(out, n, &again, &copy);
	/* Adding Host and Connection may take a head at the limits past
	 * them, and nothing else may fail. */
	if (r == GW_CDP_HTTP_ERROR && again.status == 431)
		goto done;
	if (r != GW_CDP_HTTP_OK || again.headlen != n ||
	    again.upgrade != req->upgrade || again.rewrite != req->rewrite ||
	    again.head != req->head || again.bodylen != req->bodylen ||
	    strcmp(again.host, FUZZ_AUTH) != 0 || again.authz != NULL ||
	    fuzz_has_cookie(out))
		abort();
done:
	free(copy);
	free(out);
}

/* The credential the gateway finds in the request: the bearer of its
 * Authorization header, inside that header, never from a cookie. */
static void
fuzz_auth(const struct gw_cdp_http_request *req)
{
	const char *cred, *reason;
	size_t len;

	if (gw_auth_presented(req->authz, req->authzlen, &cred, &len, &reason) <
	    0) {
		if (strcmp(reason, "missing") != 0 &&
		    strcmp(reason, "malformed") != 0)
			abort();
		if ((req->authz == NULL) != (strcmp(reason, "missing") == 0))
			abort();
		return;
	}
	if (req->authz == NULL || len == 0 || cred < req->authz ||
	    cred + len > req->authz + req->authzlen)
		abort();
}

static void
fuzz_request(const char *p, size_t n, size_t cut)
{
	struct gw_cdp_http_request full, part;
	enum gw_cdp_http_result r, rp;
	char *copy, *pcopy;
	size_t k;

	r = fuzz_req(p, n, &full, &copy);
	for (k = 0; k < n; k += fuzz_step(cut, n)) {
		rp = fuzz_req(p, k, &part, &pcopy);
		free(pcopy);
		if (rp == GW_CDP_HTTP_MORE)
			continue;
		if (rp != r || part.status != full.status ||
		    strcmp(part.err, full.err) != 0 ||
		    (rp == GW_CDP_HTTP_OK && part.headlen != full.headlen))
			abort();
	}
	switch (r) {
	case GW_CDP_HTTP_MORE:
		if (n >= GW_CDP_HTTP_HEAD_MAX)
			abort();
		break;
	case GW_CDP_HTTP_ERROR:
		fuzz_err(full.err, sizeof full.err);
		if (full.status != 400 && full.status != 413 &&
		    full.status != 431 && full.status != 501 &&
		    full.status != 505)
			abort();
		break;
	case GW_CDP_HTTP_OK:
		if (full.headlen > n || full.headlen > GW_CDP_HTTP_HEAD_MAX ||
		    !gw_cdp_http_host_valid(full.host, strlen(full.host)) ||
		    full.bodylen > GW_CDP_HTTP_BODY_MAX)
			abort();
		fuzz_span(full.authz, full.authzlen, copy, full.headlen);
		fuzz_auth(&full);
		fuzz_req_out(copy, &full);
		break;
	}
	free(copy);
}

/* A rewritten /json answer reads back as an answer whose Content-Length
 * is its body's, which is the old body with whole addresses replaced. */
static void
fuzz_rewrite(const char *buf, const struct gw_cdp_http_request *req,
    const struct gw_cdp_http_response *resp)
{
	struct gw_cdp_http_response again;
	size_t n, oldlen = (size_t)resp->bodylen, newlen, shrink;
	char *out;

	out = gw_cdp_http_response_rewrite(buf, resp, FUZZ_AUTH, FUZZ_HOST, &n);
	if (strlen(out) > n)
		abort();
	if (fuzz_resp(out, n, req, &again) == GW_CDP_HTTP_OK) {
		newlen = n - again.headlen;
		shrink = strlen(FUZZ_AUTH) - strlen(FUZZ_HOST);
		if (again.body != GW_CDP_HTTP_BODY_LENGTH ||
		    again.bodylen != newlen || newlen > oldlen ||
		    (oldlen - newlen) % shrink != 0 ||
		    again.status != resp->status)
			abort();
	} else if (again.status != 502)
		abort();
	free(out);
}

static void
fuzz_response(const char *p, size_t n, size_t cut, unsigned which)
{
	struct gw_cdp_http_request req;
	struct gw_cdp_http_response full, part, again;
	const char *rq = fuzz_requests[which % 4];
	enum gw_cdp_http_result r, rp;
	char *rcopy, *out;
	size_t k, len;

	if (fuzz_req(rq, strlen(rq), &req, &rcopy) != GW_CDP_HTTP_OK)
		abort();
	r = fuzz_resp(p, n, &req, &full);
	for (k = 0; k < n; k += fuzz_step(cut, n)) {
		rp = fuzz_resp(p, k, &req, &part);
		if (rp == GW_CDP_HTTP_MORE)
			continue;
		if (rp != r || strcmp(part.err, full.err) != 0 ||
		    (rp == GW_CDP_HTTP_OK && part.headlen != full.headlen))
			abort();
	}
	if (r == GW_CDP_HTTP_ERROR) {
		fuzz_err(full.err, sizeof full.err);
		if (full.status != 502)
			abort();
	}
	if (r != GW_CDP_HTTP_OK)
		goto done;
	if (full.relay && !req.upgrade)
		abort();
	if (full.rewrite && n >= full.headlen + full.bodylen)
		fuzz_rewrite(p, &req, &full);
	if (!full.relay && !full.rewrite) {
		out = gw_cdp_http_response_head(p, &full, &len);
		if (fuzz_resp(out, len, &req, &again) == GW_CDP_HTTP_OK &&
		    (again.status != full.status || again.body != full.body))
			abort();
		free(out);
	}
done:
	free(rcopy);
}

/* Our own error responses read back with their status and a body of
 * their Content-Length, free of control characters. */
static void
fuzz_error(const char *p, size_t n, unsigned status)
{
	static const unsigned codes[] = {
	    400, 401, 408, 413, 431, 501, 502, 503, 504, 505, 599};
	struct gw_cdp_http_request req;
	struct gw_cdp_http_response resp;
	char *msg, *out, *rcopy;
	size_t len, i;

	if (fuzz_req(fuzz_requests[0], strlen(fuzz_requests[0]), &req,
	        &rcopy) != GW_CDP_HTTP_OK)
		abort();
	msg = malloc(n + 1);
	memcpy(msg, p, n);
	msg[n] = '\0';
	status = codes[status % (sizeof codes / sizeof codes[0])];
	out = gw_cdp_http_error(status, msg, &len);
	if (fuzz_resp(out, len, &req, &resp) != GW_CDP_HTTP_OK ||
	    resp.status != status || resp.body != GW_CDP_HTTP_BODY_LENGTH ||
	    resp.headlen + resp.bodylen != len)
		abort();
	for (i = resp.headlen; i < len; i++) {
		if ((unsigned char)out[i] < ' ' && out[i] != '\n')
			abort();
	}
	free(out);
	free(msg);
	free(rcopy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 2;

	if (size < 2)
		return 0;
	switch (data[0] % 3) {
	case 0: fuzz_request(p, size - 2, data[1]); break;
	case 1: fuzz_response(p, size - 2, data[1] >> 2, data[1] & 3); break;
	case 2: fuzz_error(p, size - 2, data[1]); break;
	}
	return 0;
}
