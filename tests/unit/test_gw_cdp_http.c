/* test_cdp_http: unit tests of the CDP relay's HTTP reading and rewriting
 * (gw_cdp_http.c): what a client's head may be, what Chromium gets instead,
 * and how Chromium's answers come back with the client's address. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_cdp_http.h"
#include "gw_auth.h"
#include "tap.h"

#define AUTH "127.0.0.1:9222"

/* What Playwright's connectOverCDP sends first. */
static const char playwright[] = "GET /json/version/ HTTP/1.1\r\n"
                                 "Authorization: Bearer s3cret\r\n"
                                 "Host: 10.0.0.5:9223\r\n"
                                 "Origin: http://evil.example\r\n"
                                 "Cookie: a=1; berth_token=fromcookie; b=2\r\n"
                                 "Connection: keep-alive\r\n"
                                 "User-Agent: Playwright/1.40\r\n"
                                 "\r\n";

static const char upgrade[] = "GET /devtools/browser/abc HTTP/1.1\r\n"
                              "Host: localhost:9223\r\n"
                              "Upgrade: websocket\r\n"
                              "Connection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                              "Sec-WebSocket-Version: 13\r\n"
                              "Authorization: Bearer s3cret\r\n"
                              "\r\n";

/* Parses a copy of exactly len bytes, so that a read past the end is
 * caught by the address sanitizer. */
static enum gw_cdp_http_result
req_parse(const char *buf, size_t len, struct gw_cdp_http_request *req)
{
	char *copy = malloc(len > 0 ? len : 1);
	enum gw_cdp_http_result r;

	memcpy(copy, buf, len);
	r = gw_cdp_http_request_parse(copy, len, req);
	/* Spans point into the copy: moved to the same place in buf. */
	if (req->authz != NULL)
		req->authz = buf + (req->authz - copy);
	free(copy);
	return r;
}

/* gw_auth's verdict on a parsed request, token being what berthd would
 * take: the reason, or "invalid" if what is presented is not the token. */
static const char *
req_auth(const struct gw_cdp_http_request *req, const char *token)
{
	const char *cred, *reason;
	size_t len;

	if (gw_auth_presented(req->authz, req->authzlen, &cred, &len, &reason) <
	    0)
		return reason;
	if (len != strlen(token) || memcmp(cred, token, len) != 0)
		return "invalid";
	return NULL;
}

static enum gw_cdp_http_result
req_str(const char *s, struct gw_cdp_http_request *req)
{
	return req_parse(s, strlen(s), req);
}

/* Expects the head to be refused with status. */
static void
req_refused(const char *s, unsigned status)
{
	struct gw_cdp_http_request req;

	ck_assert_msg(req_str(s, &req) == GW_CDP_HTTP_ERROR, "accepted: %s", s);
	ck_assert_msg(req.status == status, "%s: status %u, not %u (%s)", s,
	    req.status, status, req.err);
	ck_assert_msg(req.err[0] != '\0', "no message for %s", s);
}

static enum gw_cdp_http_result
resp_parse(const char *buf, size_t len, const struct gw_cdp_http_request *req,
    struct gw_cdp_http_response *resp)
{
	char *copy = malloc(len > 0 ? len : 1);
	enum gw_cdp_http_result r;

	memcpy(copy, buf, len);
	r = gw_cdp_http_response_parse(copy, len, req, resp);
	free(copy);
	return r;
}

/* A request parsed from s, which must be good. */
static void
req_ok(const char *s, struct gw_cdp_http_request *req)
{
	ck_assert_msg(req_str(s, req) == GW_CDP_HTTP_OK, "refused: %s (%u %s)",
	    s, req->status, req->err);
}

START_TEST(test_playwright_get)
{
	struct gw_cdp_http_request req;
	size_t n;
	char *out;

	req_ok(playwright, &req);
	ck_assert_uint_eq(req.headlen, strlen(playwright));
	ck_assert_str_eq(req.host, "10.0.0.5:9223");
	ck_assert_int_eq(req.rewrite, 1);
	ck_assert_int_eq(req.upgrade, 0);
	ck_assert_int_eq(req.head, 0);
	ck_assert_uint_eq(req.authzlen, 13);
	ck_assert_mem_eq(req.authz, "Bearer s3cret", 13);

	out = gw_cdp_http_request_head(playwright, &req, AUTH, &n);
	ck_assert_uint_eq(n, strlen(out == NULL ? "" : out));
	ck_assert_str_eq(out,
	    "GET /json/version/ HTTP/1.1\r\n"
	    "Host: " AUTH "\r\n"
	    "User-Agent: Playwright/1.40\r\n"
	    "Connection: close\r\n"
	    "\r\n");
	free(out);
}
END_TEST

START_TEST(test_upgrade_head)
{
	struct gw_cdp_http_request req;
	size_t n;
	char *out;

	req_ok(upgrade, &req);
	ck_assert_int_eq(req.upgrade, 1);
	ck_assert_int_eq(req.rewrite, 0);
	ck_assert_str_eq(req.host, "localhost:9223");
	out = gw_cdp_http_request_head(upgrade, &req, AUTH, &n);
	ck_assert_str_eq(out,
	    "GET /devtools/browser/abc HTTP/1.1\r\n"
	    "Host: " AUTH "\r\n"
	    "Upgrade: websocket\r\n"
	    "Connection: Upgrade\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n"
	    "\r\n");
	ck_assert_uint_eq(n, strlen(out));
	free(out);
}
END_TEST

/* Every prefix of a good head asks for more; bytes after the head (a
 * body, the next request) are not part of it. */
START_TEST(test_prefixes)
{
	struct gw_cdp_http_request req;
	char buf[sizeof upgrade + 16];
	size_t n, len = strlen(upgrade);

	for (n = 0; n < len; n++)
		ck_assert_msg(req_parse(upgrade, n, &req) == GW_CDP_HTTP_MORE,
		    "prefix of %zu bytes: %u %s", n, req.status, req.err);
	memcpy(buf, upgrade, len);
	memcpy(buf + len, "\x81\x85garbage", 9);
	ck_assert_int_eq(req_parse(buf, len + 9, &req), GW_CDP_HTTP_OK);
	ck_assert_uint_eq(req.headlen, len);
}
END_TEST

/* Bytes that cannot start a request are refused at once, without
 * waiting for a whole head or 16 KiB. */
START_TEST(test_garbage_early)
{
	struct gw_cdp_http_request req;

	ck_assert_int_eq(
	    req_parse("\x16\x03\x01\x02", 4, &req), GW_CDP_HTTP_ERROR);
	ck_assert_uint_eq(req.status, 400);
	ck_assert_int_eq(req_str("GET", &req), GW_CDP_HTTP_MORE);
	ck_assert_int_eq(req_str("GET ", &req), GW_CDP_HTTP_MORE);
	ck_assert_int_eq(req_str("GET x", &req), GW_CDP_HTTP_ERROR);
	ck_assert_int_eq(
	    req_str("GET /a HTTP/1.1\r\nX", &req), GW_CDP_HTTP_MORE);
	ck_assert_int_eq(
	    req_str("GET /a HTTP/1.1\r\nX Y", &req), GW_CDP_HTTP_ERROR);
	ck_assert_int_eq(req_str("GET /a HTTQ", &req), GW_CDP_HTTP_ERROR);
	ck_assert_int_eq(req_str("\r\n", &req), GW_CDP_HTTP_ERROR);
}
END_TEST

START_TEST(test_syntax)
{
	req_refused("get\t/ HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	req_refused("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	req_refused("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\nHost: a\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost: a\n\r\n", 400);
	req_refused("GET / HTTP/1.1\rHost: a\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01"
	            "b\r\n\r\n",
	    400);
	req_refused("GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", 400);
	req_refused("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
	req_refused("GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400);
}
END_TEST

START_TEST(test_version_and_obs_text)
{
	struct gw_cdp_http_request req;

	req_ok("GET /json HTTP/1.0\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n", &req);
	ck_assert_int_eq(req.rewrite, 1);
}
END_TEST

START_TEST(test_host)
{
	struct gw_cdp_http_request req;
	char big[GW_CDP_HTTP_HOST_MAX + 64], head[1024];

	req_refused("GET / HTTP/1.1\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost:\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost: evil.com/x\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400);
	req_ok("GET / HTTP/1.1\r\nHost:   [::1]:9223  \r\n\r\n", &req);
	ck_assert_str_eq(req.host, "[::1]:9223");

	memset(big, 'h', GW_CDP_HTTP_HOST_MAX);
	big[GW_CDP_HTTP_HOST_MAX] = '\0';
	snprintf(head, sizeof head, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", big);
	req_ok(head, &req);
	ck_assert_uint_eq(strlen(req.host), GW_CDP_HTTP_HOST_MAX);
	strcat(big, "h");
	snprintf(head, sizeof head, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", big);
	req_refused(head, 400);

	ck_assert_int_eq(gw_cdp_http_host_valid("127.0.0.1:9223", 14), 1);
	ck_assert_int_eq(gw_cdp_http_host_valid("", 0), 0);
	ck_assert_int_eq(gw_cdp_http_host_valid("a_b", 3), 0);
	ck_assert_int_eq(gw_cdp_http_host_valid("a\0b", 3), 0);
}
END_TEST

/* A head of exactly GW_CDP_HTTP_HEAD_MAX bytes passes; one byte more is a
 * 431, said as soon as the limit is passed, not when the head ends. */
static char *
head_of(size_t total)
{
	static const char start[] = "GET / HTTP/1.1\r\nHost: a\r\nX: ";
	char *h = malloc(total + 1);
	size_t pad = total - strlen(start) - 4;

	memcpy(h, start, strlen(start));
	memset(h + strlen(start), 'x', pad);
	memcpy(h + strlen(start) + pad, "\r\n\r\n", 5);
	return h;
}

START_TEST(test_head_limit)
{
	struct gw_cdp_http_request req;
	char *h;

	h = head_of(GW_CDP_HTTP_HEAD_MAX);
	ck_assert_int_eq(
	    req_parse(h, GW_CDP_HTTP_HEAD_MAX, &req), GW_CDP_HTTP_OK);
	ck_assert_uint_eq(req.headlen, GW_CDP_HTTP_HEAD_MAX);
	free(h);
	h = head_of(GW_CDP_HTTP_HEAD_MAX + 1);
	ck_assert_int_eq(
	    req_parse(h, GW_CDP_HTTP_HEAD_MAX - 1, &req), GW_CDP_HTTP_MORE);
	ck_assert_int_eq(
	    req_parse(h, GW_CDP_HTTP_HEAD_MAX, &req), GW_CDP_HTTP_ERROR);
	ck_assert_uint_eq(req.status, 431);
	ck_assert_int_eq(
	    req_parse(h, GW_CDP_HTTP_HEAD_MAX + 1, &req), GW_CDP_HTTP_ERROR);
	ck_assert_uint_eq(req.status, 431);
	free(h);
}
END_TEST

START_TEST(test_line_limit)
{
	struct gw_cdp_http_request req;
	char head[4096];
	size_t n;
	int i;

	n = (size_t)snprintf(
	    head, sizeof head, "GET / HTTP/1.1\r\nHost: a\r\n");
	for (i = 1; i < GW_CDP_HTTP_LINES_MAX; i++)
		n += (size_t)snprintf(
		    head + n, sizeof head - n, "X%d: y\r\n", i);
	snprintf(head + n, sizeof head - n, "\r\n");
	req_ok(head, &req);
	snprintf(head + n, sizeof head - n, "One: more\r\n\r\n");
	req_refused(head, 431);
}
END_TEST

START_TEST(test_body_and_encoding)
{
	struct gw_cdp_http_request req;

	req_ok("PUT /json/new?about:blank HTTP/1.1\r\nHost: a\r\n"
	       "Content-Length: 12\r\n\r\n",
	    &req);
	ck_assert_uint_eq(req.bodylen, 12);
	ck_assert_int_eq(req.rewrite, 0);
	req_refused("POST / HTTP/1.1\r\nHost: a\r\n"
	            "Transfer-Encoding: chunked\r\n\r\n",
	    501);
	req_refused("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
	            "Content-Length: 1\r\n\r\n",
	    400);
	req_refused(
	    "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400);
	req_refused(
	    "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", 400);
	req_refused("POST / HTTP/1.1\r\nHost: a\r\n"
	            "Content-Length: 99999999999999999999\r\n\r\n",
	    400);
	req_refused("POST / HTTP/1.1\r\nHost: a\r\n"
	            "Content-Length: 1048577\r\n\r\n",
	    413);
}
END_TEST

START_TEST(test_upgrade_rules)
{
	struct gw_cdp_http_request req;

	req_refused(
	    "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n", 400);
	req_refused("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\n"
	            "Connection: upgrade\r\n\r\n",
	    400);
	req_refused("POST / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
	            "Connection: upgrade\r\n\r\n",
	    400);
	req_refused("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
	            "Upgrade: websocket\r\nConnection: upgrade\r\n\r\n",
	    400);
	req_ok("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: WebSocket\r\n"
	       "Connection: keep-alive, Upgrade\r\n\r\n",
	    &req);
	ck_assert_int_eq(req.upgrade, 1);
	/* Connection: upgrade alone is no upgrade, and is not passed on. */
	req_ok(
	    "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\n\r\n", &req);
	ck_assert_int_eq(req.upgrade, 0);
}
END_TEST

START_TEST(test_rewrite_paths)
{
	static const char *const yes[] = {"/json", "/json/", "/json/list",
	    "/json/list/", "/json/version", "/json/version/",
	    "/json/version?x=1", "/json/list/?a"};
	static const char *const no[] = {"/json/new", "/jsonx",
	    "/json/versionx", "/json//", "/", "/devtools/browser/x",
	    "/json/protocol"};
	struct gw_cdp_http_request req;
	char head[256];
	size_t i;

	for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		snprintf(head, sizeof head,
		    "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", yes[i]);
		req_ok(head, &req);
		ck_assert_msg(req.rewrite == 1, "%s not rewritten", yes[i]);
	}
	for (i = 0; i < sizeof no / sizeof no[0]; i++) {
		snprintf(head, sizeof head,
		    "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", no[i]);
		req_ok(head, &req);
		ck_assert_msg(req.rewrite == 0, "%s rewritten", no[i]);
	}
	req_ok("HEAD /json HTTP/1.1\r\nHost: a\r\n\r\n", &req);
	ck_assert_int_eq(req.rewrite, 0);
	ck_assert_int_eq(req.head, 1);
}
END_TEST

START_TEST(test_credentials)
{
	struct gw_cdp_http_request req;

	/* The spans the relay judges the request by, and the verdict of the
	 * gateway's one rule (gw_auth) on them: a cookie is never a
	 * credential. */
	req_ok("GET / HTTP/1.1\r\nHost: a\r\nCookie: berth_token=\"q\"\r\n\r\n",
	    &req);
	ck_assert_ptr_null(req.authz);
	ck_assert_str_eq(req_auth(&req, "q"), "missing");
	req_ok("GET / HTTP/1.1\r\nHost: a\r\nCookie: berth_token=q\r\n"
	       "Authorization: Basic Zm9v\r\n\r\n",
	    &req);
	ck_assert_str_eq(req_auth(&req, "q"), "malformed");
	/* A cookie with the right value does not save a wrong bearer. */
	req_ok("GET / HTTP/1.1\r\nHost: a\r\nCookie: berth_token=q\r\n"
	       "Authorization: Bearer nope\r\n\r\n",
	    &req);
	ck_assert_str_eq(req_auth(&req, "q"), "invalid");
	req_ok("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: bearer   tok  "
	       "\r\n\r\n",
	    &req);
	ck_assert_ptr_null(req_auth(&req, "tok"));
	ck_assert_str_eq(req_auth(&req, "to"), "invalid");
	ck_assert_str_eq(req_auth(&req, "tokk"), "invalid");
	req_ok("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &req);
	ck_assert_str_eq(req_auth(&req, "tok"), "missing");
	req_refused("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer a\r\n"
	            "Authorization: Bearer b\r\n\r\n",
	    400);
}
END_TEST

static const char version_body[] =
    "{\n   \"Browser\": \"Chrome/120.0.6099.224\",\n"
    "   \"webSocketDebuggerUrl\": \"ws://" AUTH "/devtools/browser/u1\"\n"
    "}\n";

/* Chromium's /json/version answer, as its DevTools server writes it. */
static char *
version_answer(size_t *len)
{
	char *s;
	int n;

	n = asprintf(&s,
	    "HTTP/1.1 200 OK\r\nContent-Length:%zu\r\n"
	    "Content-Type:application/json; charset=UTF-8\r\n\r\n%s",
	    strlen(version_body), version_body);
	ck_assert_int_gt(n, 0);
	*len = (size_t)n;
	return s;
}

START_TEST(test_rewrite_answer)
{
	struct gw_cdp_http_request req;
	struct gw_cdp_http_response resp;
	char *ans, *out, *body, cl[64];
	size_t len, n, k;

	req_ok(playwright, &req);
	ans = version_answer(&len);
	for (k = 0; k < len - strlen(version_body); k++)
		ck_assert_int_eq(
		    resp_parse(ans, k, &req, &resp), GW_CDP_HTTP_MORE);
	ck_assert_int_eq(resp_parse(ans, len, &req, &resp), GW_CDP_HTTP_OK);
	ck_assert_uint_eq(resp.status, 200);
	ck_assert_int_eq(resp.body, GW_CDP_HTTP_BODY_LENGTH);
	ck_assert_uint_eq(resp.bodylen, strlen(version_body));
	ck_assert_int_eq(resp.rewrite, 1);
	ck_assert_int_eq(resp.relay, 0);

	out = gw_cdp_http_response_rewrite(ans, &resp, AUTH, req.host, &n);
	body = strstr(out, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	body += 4;
	ck_assert_uint_eq((size_t)(out + n - body),
	    strlen(version_body) + strlen("10.0.0.5:9223") - strlen(AUTH));
	ck_assert_ptr_nonnull(
	    strstr(body, "ws://10.0.0.5:9223/devtools/browser/u1"));
	ck_assert_ptr_null(strstr(out, AUTH));
	snprintf(cl, sizeof cl, "Content-Length: %zu\r\n",
	    strlen(version_body) + strlen("10.0.0.5:9223") - strlen(AUTH));
	ck_assert_ptr_nonnull(strstr(out, cl));
	ck_assert_ptr_nonnull(strstr(out, "Connection: close\r\n"));
	ck_assert_ptr_null(strstr(out, "Content-Length:111"));
	free(out);
	free(ans);
}
END_TEST

/* Only Chromium's whole address is replaced: not one with a longer port
 * or a longer host name, and every occurrence of it. */
START_TEST(test_rewrite_boundaries)
{
	static const char body[] = "[\"" AUTH "\",\"" AUTH "0\",\"1" AUTH
	                           "\",\"x." AUTH "\",\"?ws=" AUTH "/p\"]";
	static const char want[] = "[\"h:1\",\"" AUTH "0\",\"1" AUTH
	                           "\",\"x." AUTH "\",\"?ws=h:1/p\"]";
	struct gw_cdp_http_request req;
	struct gw_cdp_http_response resp;
	char ans[512], *out;
	size_t n;

	req_ok("GET /json/list HTTP/1.1\r\nHost: h:1\r\n\r\n", &req);
	n = (size_t)snprintf(ans, sizeof ans,
	    "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
	    "Connection: keep-alive\r\n\r\n%s",
	    strlen(body), body);
	ck_assert_int_eq(resp_parse(ans, n, &req, &resp), GW_CDP_HTTP_OK);
	ck_assert_int_eq(resp.rewrite, 1);
	out = gw_cdp_http_response_rewrite(ans, &resp, AUTH, req.host, &n);
	ck_assert_ptr_nonnull(strstr(out, want));
	ck_assert_ptr_null(strstr(out, "keep-alive"));
	ck_assert_uint_eq(
	    n, (size_t)(strstr(out, "\r\n\r\n") + 4 - out) + strlen(want));
	free(out);
}
END_TEST

START_TEST(test_answer_kinds)
{
	struct gw_cdp_http_request get, head, up, list;
	struct gw_cdp_http_response resp;
	char big[128], *out;
	size_t n;

	req_ok("GET /x HTTP/1.1\r\nHost: a\r\n\r\n", &get);
	req_ok("HEAD /json HTTP/1.1\r\nHost: a\r\n\r\n", &head);
	req_ok(upgrade, &up);
	req_ok("GET /json HTTP/1.1\r\nHost: a\r\n\r\n", &list);

#define ANS(s, r) resp_parse(s, strlen(s), r, &resp)
	ck_assert_int_eq(ANS("HTTP/1.1 101 Switching Protocols\r\n"
	                     "Upgrade: websocket\r\n\r\n\x81\x01x",
	                     &up),
	    GW_CDP_HTTP_OK);
	ck_assert_int_eq(resp.relay, 1);
	ck_assert_int_eq(ANS("HTTP/1.1 101 Switching Protocols\r\n\r\n", &get),
	    GW_CDP_HTTP_ERROR);
	ck_assert_uint_eq(resp.status, 502);
	ck_assert_int_eq(
	    ANS("HTTP/1.1 100 Continue\r\n\r\n", &get), GW_CDP_HTTP_ERROR);
	ck_assert_int_eq(
	    ANS("HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\n"
	        "abc",
	        &up),
	    GW_CDP_HTTP_OK);
	ck_assert_int_eq(resp.relay, 0);
	ck_assert_int_eq(resp.body, GW_CDP_HTTP_BODY_LENGTH);
	ck_assert_uint_eq(resp.bodylen, 3);
	ck_assert_int_eq(ANS("HTTP/1.1 200 OK\r\n\r\n", &get), GW_CDP_HTTP_OK);
	ck_assert_int_eq(resp.body, GW_CDP_HTTP_BODY_UNTIL_CLOSE);
	ck_assert_int_eq(ANS("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	                     "Content-Length: 5\r\n\r\n",
	                     &list),
	    GW_CDP_HTTP_OK);
	ck_assert_int_eq(resp.body, GW_CDP_HTTP_BODY_UNTIL_CLOSE);
	ck_assert_int_eq(resp.rewrite, 0);
	ck_assert_int_eq(
	    ANS("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", &head),
	    GW_CDP_HTTP_OK);
	ck_assert_int_eq(resp.body, GW_CDP_HTTP_BODY_NONE);
	ck_assert_int_eq(
	    ANS("HTTP/1.1 204 No Content\r\n\r\n", &get), GW_CDP_HTTP_OK);
	ck_assert_int_eq(resp.body, GW_CDP_HTTP_BODY_NONE);
	ck_assert_int_eq(ANS("HTTP/1.1 200\r\nContent-Length: 1\r\n\r\n", &get),
	    GW_CDP_HTTP_OK);
	ck_assert_uint_eq(resp.status, 200);

	snprintf(big, sizeof big,
	    "HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n",
	    GW_CDP_HTTP_BODY_MAX + 1);
	ck_assert_int_eq(ANS(big, &list), GW_CDP_HTTP_OK);
	ck_assert_int_eq(resp.rewrite, 0);
	ck_assert_int_eq(resp.body, GW_CDP_HTTP_BODY_LENGTH);
	snprintf(big, sizeof big,
	    "HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n",
	    GW_CDP_HTTP_BODY_MAX);
	ck_assert_int_eq(ANS(big, &list), GW_CDP_HTTP_OK);
	ck_assert_int_eq(resp.rewrite, 1);

	ck_assert_int_eq(ANS("SSH-2.0-OpenSSH\r\n", &get), GW_CDP_HTTP_ERROR);
	ck_assert_uint_eq(resp.status, 502);
	ck_assert_int_eq(ANS("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
	                     "Content-Length: 2\r\n\r\n",
	                     &get),
	    GW_CDP_HTTP_ERROR);
	ck_assert_int_eq(
	    ANS("HTTP/1.1 2x0 OK\r\n\r\n", &get), GW_CDP_HTTP_ERROR);

	ck_assert_int_eq(ANS("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\n"
	                     "Connection: keep-alive\r\nX: y\r\n\r\nbody",
	                     &get),
	    GW_CDP_HTTP_OK);
	out = gw_cdp_http_response_head(
	    "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\n"
	    "Connection: keep-alive\r\nX: y\r\n\r\nbody",
	    &resp, &n);
	ck_assert_str_eq(
	    out, "HTTP/1.1 200 OK\r\nX: y\r\nConnection: close\r\n\r\n");
	ck_assert_uint_eq(n, strlen(out));
	free(out);
#undef ANS
}
END_TEST

START_TEST(test_error_response)
{
	char *out;
	size_t n;

	out = gw_cdp_http_error(431, "the head is \"long\"\n", &n);
	ck_assert_uint_eq(n, strlen(out));
	ck_assert_str_eq(out,
	    "HTTP/1.1 431 Request Header Fields Too Large\r\n"
	    "Content-Type: application/json\r\n"
	    "Content-Length: 68\r\n"
	    "Cache-Control: no-store\r\n"
	    "Connection: close\r\n"
	    "\r\n"
	    "{\"error\":\"header_too_large\",\"message\":"
	    "\"the head is \\\"long\\\"\\u000a\"}\n");
	free(out);
	out = gw_cdp_http_error(401, "no", &n);
	ck_assert_ptr_nonnull(strstr(out, "HTTP/1.1 401 Unauthorized\r\n"));
	ck_assert_ptr_nonnull(strstr(out, "WWW-Authenticate: Bearer\r\n"));
	free(out);
	out = gw_cdp_http_error(502, "down", &n);
	ck_assert_ptr_null(strstr(out, "WWW-Authenticate"));
	ck_assert_ptr_nonnull(strstr(out, "\"error\":\"bad_gateway\""));
	free(out);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("gw_cdp_http");
	TCase *tc = tcase_create("gw_cdp_http");

	tcase_add_test(tc, test_playwright_get);
	tcase_add_test(tc, test_upgrade_head);
	tcase_add_test(tc, test_prefixes);
	tcase_add_test(tc, test_garbage_early);
	tcase_add_test(tc, test_syntax);
	tcase_add_test(tc, test_version_and_obs_text);
	tcase_add_test(tc, test_host);
	tcase_add_test(tc, test_head_limit);
	tcase_add_test(tc, test_line_limit);
	tcase_add_test(tc, test_body_and_encoding);
	tcase_add_test(tc, test_upgrade_rules);
	tcase_add_test(tc, test_rewrite_paths);
	tcase_add_test(tc, test_credentials);
	tcase_add_test(tc, test_rewrite_answer);
	tcase_add_test(tc, test_rewrite_boundaries);
	tcase_add_test(tc, test_answer_kinds);
	tcase_add_test(tc, test_error_response);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
