/* test_gw_preview_http: unit tests of the preview proxy's heads
 * (gw_preview_http.c) and chunked framing (gw_preview_chunk.c): routing
 * by host and by path, the credentials found and written out of what the
 * app gets, the redirect that sets berth's cookie, the app's answers read
 * for where they end, and malformed input of each refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_preview_chunk.h"
#include "gw_preview_http.h"
#include "tap.h"

#define DOMAIN "preview.example.test"
#define TOKEN "0123456789abcdef0123456789abcdef01234567"
#define ID "g0123456789abcdef"

/* Parses a copy of exactly len bytes, so that a read past the end is
 * caught by the address sanitizer; the copy is the caller's to free. */
static enum gw_cdp_http_result
parse(const char *s, const char *domain, struct gw_preview_request *req,
    char **copy)
{
	size_t len = strlen(s);

	*copy = malloc(len > 0 ? len : 1);
	memcpy(*copy, s, len);
	return gw_preview_http_request_parse(*copy, len, domain, req);
}

static void
refused(const char *s, const char *domain, unsigned status)
{
	struct gw_preview_request req;
	char *copy;

	ck_assert_msg(parse(s, domain, &req, &copy) == GW_CDP_HTTP_ERROR,
	    "accepted: %s", s);
	ck_assert_msg(req.status == status, "%s: status %u, not %u (%s)", s,
	    req.status, status, req.err);
	free(copy);
}

START_TEST(test_route_path)
{
	struct gw_preview_request req;
	char *copy;

	ck_assert(parse("GET /preview/" ID "/a/b?x=1 HTTP/1.1\r\nHost: h:1\r\n"
	                "\r\n",
	              NULL, &req, &copy) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(req.door, GW_PREVIEW_DOOR_PREVIEW);
	ck_assert_str_eq(req.key, ID);
	ck_assert_int_eq(req.prefixlen, strlen("/preview/" ID));
	ck_assert_int_eq(req.by_host, 0);
	ck_assert_int_eq(req.body, GW_PREVIEW_BODY_NONE);
	free(copy);
	ck_assert(parse("GET /runtime/" TOKEN " HTTP/1.1\r\nHost: h\r\n\r\n",
	              DOMAIN, &req, &copy) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(req.door, GW_PREVIEW_DOOR_RUNTIME);
	ck_assert_str_eq(req.key, TOKEN);
	free(copy);
	/* With a domain, previews are by host only: one origin each. */
	refused(
	    "GET /preview/" ID "/ HTTP/1.1\r\nHost: h\r\n\r\n", DOMAIN, 404);
	refused("GET / HTTP/1.1\r\nHost: h\r\n\r\n", NULL, 404);
	refused("GET /preview// HTTP/1.1\r\nHost: h\r\n\r\n", NULL, 404);
	refused("GET /preview/AB/ HTTP/1.1\r\nHost: h\r\n\r\n", NULL, 404);
	refused(
	    "GET /preview/" TOKEN "0/ HTTP/1.1\r\nHost: h\r\n\r\n", NULL, 404);
}
END_TEST

START_TEST(test_route_host)
{
	struct gw_preview_request req;
	char *copy;

	ck_assert(parse("GET /x HTTP/1.1\r\nHost: 3000-" TOKEN "." DOMAIN
	                ":8080\r\n\r\n",
	              DOMAIN, &req, &copy) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(req.by_host, 1);
	ck_assert_int_eq(req.host_port, 3000);
	ck_assert_str_eq(req.key, TOKEN);
	ck_assert_int_eq(req.prefixlen, 0);
	free(copy);
	ck_assert(parse("GET /x HTTP/1.1\r\nHost: 65535-" ID
	                ".PREVIEW.example.TEST\r\n\r\n",
	              DOMAIN, &req, &copy) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(req.host_port, 65535);
	free(copy);
	refused("GET / HTTP/1.1\r\nHost: 0300-" ID "." DOMAIN "\r\n\r\n",
	    DOMAIN, 404);
	refused("GET / HTTP/1.1\r\nHost: 65536-" ID "." DOMAIN "\r\n\r\n",
	    DOMAIN, 404);
	refused("GET / HTTP/1.1\r\nHost: a.3000-" ID "." DOMAIN "\r\n\r\n",
	    DOMAIN, 404);
	refused("GET / HTTP/1.1\r\nHost: 3000" ID "." DOMAIN "\r\n\r\n", DOMAIN,
	    404);
	/* Another domain, or a suffix that is not a whole label. */
	refused("GET / HTTP/1.1\r\nHost: 3000-" ID ".other.test\r\n\r\n",
	    DOMAIN, 404);
	refused("GET / HTTP/1.1\r\nHost: 3000-" ID "x" DOMAIN "\r\n\r\n",
	    DOMAIN, 404);
}
END_TEST

START_TEST(test_credentials_found)
{
	struct gw_preview_request req;
	char *copy;

	ck_assert(parse("GET /preview/" ID "/?a=1&berth_link=" TOKEN
	                "&b=2 HTTP/1.1\r\nHost: h\r\nCookie: x=1; "
	                "berth_grant=" TOKEN "; y=2\r\n\r\n",
	              NULL, &req, &copy) == GW_CDP_HTTP_OK);
	ck_assert_str_eq(req.code, TOKEN);
	ck_assert_str_eq(req.cookie, TOKEN);
	ck_assert_int_eq(req.cookie_bad, 0);
	free(copy);
	ck_assert(parse("GET /preview/" ID "/ HTTP/1.1\r\nHost: h\r\nCookie: "
	                "berth_grant=NOT-A-TOKEN\r\n\r\n",
	              NULL, &req, &copy) == GW_CDP_HTTP_OK);
	ck_assert_str_eq(req.cookie, "");
	ck_assert_int_eq(req.cookie_bad, 1);
	free(copy);
	refused("GET /preview/" ID "/?berth_link=x&berth_link=y HTTP/1.1\r\n"
	        "Host: h\r\n\r\n",
	    NULL, 400);
	refused("GET /preview/" ID "/?berth_link= HTTP/1.1\r\nHost: h\r\n\r\n",
	    NULL, 400);
	refused("GET /preview/" ID "/?berth_link=" TOKEN "0 HTTP/1.1\r\n"
	        "Host: h\r\n\r\n",
	    NULL, 400);
}
END_TEST

START_TEST(test_framing_and_malformed)
{
	struct gw_preview_request req;
	char *copy, big[20000];

	ck_assert(parse("POST /preview/" ID "/ HTTP/1.1\r\nHost: h\r\n"
	                "Content-Length: 12\r\n\r\n",
	              NULL, &req, &copy) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(req.body, GW_PREVIEW_BODY_LENGTH);
	ck_assert_int_eq(req.bodylen, 12);
	free(copy);
	ck_assert(parse("POST /preview/" ID "/ HTTP/1.1\r\nHost: h\r\n"
	                "Transfer-Encoding: Chunked\r\n\r\n",
	              NULL, &req, &copy) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(req.body, GW_PREVIEW_BODY_CHUNKED);
	free(copy);
	ck_assert(parse("GET /preview/" ID "/ HTTP/1.1\r\nHost: h\r\n"
	                "Upgrade: websocket\r\nConnection: keep-alive, "
	                "Upgrade\r\n\r\n",
	              NULL, &req, &copy) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(req.upgrade, 1);
	free(copy);
	ck_assert(parse("GET /preview/" ID "/ HTTP/1.1\r\nHost: h\r\n", NULL,
	              &req, &copy) == GW_CDP_HTTP_MORE);
	free(copy);
	refused("POST /preview/" ID "/ HTTP/1.1\r\nHost: h\r\nContent-Length: "
	        "1\r\nTransfer-Encoding: chunked\r\n\r\n",
	    NULL, 400);
	refused("POST /preview/" ID "/ HTTP/1.1\r\nHost: h\r\n"
	        "Transfer-Encoding: gzip, chunked\r\n\r\n",
	    NULL, 501);
	refused("POST /preview/" ID "/ HTTP/1.1\r\nHost: h\r\nContent-Length: "
	        "1\r\nContent-Length: 1\r\n\r\n",
	    NULL, 400);
	refused("GET /preview/" ID "/ HTTP/1.1\r\n\r\n", NULL, 400);
	refused("GET /preview/" ID "/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	    NULL, 400);
	refused("GET /preview/" ID "/ HTTP/2.0\r\nHost: h\r\n\r\n", NULL, 505);
	refused("GARBAGE\r\n\r\n", NULL, 400);
	refused("GET /\rX", NULL, 400);
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	refused(big, NULL, 431);
}
END_TEST

static char *
forward(const char *s, const char *domain, const char *authz, int prefix)
{
	struct gw_preview_forward fw = {"10.0.0.9", authz, prefix};
	struct gw_preview_request req;
	char *copy, *out;
	size_t n;

	ck_assert(parse(s, domain, &req, &copy) == GW_CDP_HTTP_OK);
	out = gw_preview_http_forward(copy, &req, &fw, &n);
	ck_assert_int_eq(n, strlen(out));
	free(copy);
	return out;
}

START_TEST(test_forward)
{
	char *out;

	out = forward("GET /preview/" ID "/a?q=1 HTTP/1.1\r\nHost: h:1\r\n"
	              "Cookie: a=1; berth_grant=" TOKEN "; b=2\r\n"
	              "X-Forwarded-For: 6.6.6.6\r\nAuthorization: Basic x\r\n"
	              "\r\n",
	    NULL, NULL, 1);
	ck_assert_str_eq(out,
	    "GET /a?q=1 HTTP/1.1\r\nHost: h:1\r\n"
	    "Cookie: a=1; b=2\r\nAuthorization: Basic x\r\n"
	    "X-Forwarded-For: 10.0.0.9\r\n"
	    "X-Forwarded-Proto: http\r\n"
	    "X-Forwarded-Host: h:1\r\n"
	    "X-Forwarded-Prefix: /preview/" ID "\r\n\r\n");
	free(out);
	/* Nothing left of the cookie: no Cookie; a bare prefix is "/". */
	out = forward("GET /preview/" ID "?z HTTP/1.1\r\nHost: h\r\n"
	              "Cookie: berth_grant=" TOKEN "\r\n\r\n",
	    NULL, NULL, 0);
	ck_assert_str_eq(out,
	    "GET /?z HTTP/1.1\r\nHost: h\r\n"
	    "X-Forwarded-For: 10.0.0.9\r\n"
	    "X-Forwarded-Proto: http\r\n"
	    "X-Forwarded-Host: h\r\n\r\n");
	free(out);
	/* A runtime's: the client's Authorization replaced. */
	out = forward("GET /runtime/" TOKEN "/s HTTP/1.1\r\nHost: h\r\n"
	              "Authorization: Bearer mine\r\n\r\n",
	    NULL, "Basic cnVudGltZTpwdw==", 0);
	ck_assert_str_eq(out,
	    "GET /s HTTP/1.1\r\nHost: h\r\n"
	    "X-Forwarded-For: 10.0.0.9\r\n"
	    "X-Forwarded-Proto: http\r\n"
	    "X-Forwarded-Host: h\r\n"
	    "Authorization: Basic cnVudGltZTpwdw==\r\n\r\n");
	free(out);
	out = forward("GET /runtime/" TOKEN "/s HTTP/1.1\r\nHost: h\r\n"
	              "Authorization: Bearer mine\r\n\r\n",
	    NULL, "", 0);
	ck_assert_ptr_null(strstr(out, "Authorization"));
	free(out);
	out = forward("GET /x HTTP/1.1\r\nHost: 80-" ID "." DOMAIN "\r\n\r\n",
	    DOMAIN, NULL, 1);
	ck_assert_ptr_nonnull(strstr(out, "GET /x HTTP/1.1\r\n"));
	ck_assert_ptr_null(strstr(out, "X-Forwarded-Prefix"));
	free(out);
}
END_TEST

START_TEST(test_redirect)
{
	struct gw_preview_request req;
	char *copy, *out;
	size_t n;

	ck_assert(parse("GET /preview/" ID "/p?a=1&berth_link=" TOKEN
	                "&b HTTP/1.1\r\nHost: h\r\n\r\n",
	              NULL, &req, &copy) == GW_CDP_HTTP_OK);
	out = gw_preview_http_redirect(&req, TOKEN, &n);
	ck_assert_str_eq(out,
	    "HTTP/1.1 302 Found\r\n"
	    "Location: /preview/" ID "/p?a=1&b\r\n"
	    "Set-Cookie: berth_grant=" TOKEN "; Path=/preview/" ID
	    "/; HttpOnly; "
	    "SameSite=Lax\r\nCache-Control: no-store\r\n"
	    "Referrer-Policy: no-referrer\r\n"
	    "Content-Length: 0\r\n\r\n");
	free(out);
	free(copy);
	ck_assert(parse("GET /?berth_link=" TOKEN " HTTP/1.1\r\nHost: 8-" ID
	                "." DOMAIN "\r\n\r\n",
	              DOMAIN, &req, &copy) == GW_CDP_HTTP_OK);
	out = gw_preview_http_redirect(&req, TOKEN, &n);
	ck_assert_ptr_nonnull(strstr(out, "Location: /\r\n"));
	ck_assert_ptr_nonnull(strstr(out, "; Path=/; HttpOnly"));
	ck_assert_ptr_null(strstr(out, "Domain="));
	free(out);
	free(copy);
}
END_TEST

START_TEST(test_page)
{
	size_t n;
	char *out = gw_preview_http_page(502, "nothing <on> port 3000", 0, &n);

	ck_assert_ptr_nonnull(strstr(out, "HTTP/1.1 502 Bad Gateway\r\n"));
	ck_assert_ptr_nonnull(strstr(out, "nothing &lt;on&gt; port 3000"));
	ck_assert_ptr_null(strstr(out, "Connection: close"));
	ck_assert_ptr_nonnull(strstr(out, "\r\n\r\n<!doctype html>"));
	free(out);
	out = gw_preview_http_page(400, "bad", 1, &n);
	ck_assert_ptr_nonnull(strstr(out, "Connection: close\r\n"));
	free(out);
}
END_TEST

static enum gw_cdp_http_result
answer(const char *s, int head, int upgrade, struct gw_preview_response *resp)
{
	return gw_preview_http_response_parse(
	    s, strlen(s), head, upgrade, resp);
}

START_TEST(test_answers)
{
	struct gw_preview_response r;

	ck_assert(answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 0,
	              0, &r) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.body, GW_PREVIEW_BODY_LENGTH);
	ck_assert_int_eq(r.bodylen, 5);
	ck_assert_int_eq(r.headlen, 38);
	ck_assert_int_eq(r.last, 0);
	ck_assert(answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 1, 0,
	              &r) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.body, GW_PREVIEW_BODY_NONE);
	ck_assert(answer("HTTP/1.1 304 Not Modified\r\n\r\n", 0, 0, &r) ==
	    GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.body, GW_PREVIEW_BODY_NONE);
	ck_assert(answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, "
	                 "chunked\r\n\r\n",
	              0, 0, &r) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.body, GW_PREVIEW_BODY_CHUNKED);
	ck_assert(answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
	              0, 0, &r) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.body, GW_PREVIEW_BODY_CLOSE);
	ck_assert(
	    answer("HTTP/1.0 200 OK\r\n\r\n", 0, 0, &r) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.body, GW_PREVIEW_BODY_CLOSE);
	ck_assert_int_eq(r.last, 1);
	ck_assert(answer("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n"
	                 "Content-Length: 0\r\n\r\n",
	              0, 0, &r) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.last, 0);
	ck_assert(answer("HTTP/1.1 200 OK\r\nConnection: close\r\n"
	                 "Content-Length: 0\r\n\r\n",
	              0, 0, &r) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.last, 1);
	ck_assert(answer("HTTP/1.1 100 Continue\r\n\r\n", 0, 0, &r) ==
	    GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.interim, 1);
	ck_assert(answer("HTTP/1.1 101 Switching Protocols\r\n\r\n", 0, 1,
	              &r) == GW_CDP_HTTP_OK);
	ck_assert_int_eq(r.relay, 1);
	ck_assert(answer("HTTP/1.1 101 Switching Protocols\r\n\r\n", 0, 0,
	              &r) == GW_CDP_HTTP_ERROR);
	ck_assert(answer("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 0, 0,
	              &r) == GW_CDP_HTTP_ERROR);
	ck_assert_int_eq(r.status, 502);
	ck_assert(
	    answer("SSH-2.0-OpenSSH\r\n\r\n", 0, 0, &r) == GW_CDP_HTTP_ERROR);
}
END_TEST

/* Feeds s to a fresh decoder in pieces of step bytes: how many bytes
 * belonged to the body, -1 if refused, and whether it ended. */
static long long
chunked(const char *s, size_t step, int *done)
{
	struct gw_preview_chunk c;
	size_t len = strlen(s), off = 0, k;
	long long n, used = 0;

	gw_preview_chunk_init(&c);
	*done = 0;
	while (off < len && !*done) {
		k = len - off < step ? len - off : step;
		n = gw_preview_chunk_feed(&c, s + off, k, done);
		if (n < 0)
			return -1;
		used += n;
		off += k;
	}
	return used;
}

START_TEST(test_chunked)
{
	static const char body[] = "5\r\nhello\r\n1;ext=1\r\n!\r\n0\r\n"
	                           "Trailer: x\r\n\r\n";
	char big[GW_PREVIEW_CHUNK_LINE_MAX + 16];
	size_t step;
	int done;

	for (step = 1; step <= sizeof body; step++) {
		ck_assert_int_eq(chunked(body, step, &done), strlen(body));
		ck_assert_int_eq(done, 1);
	}
	/* The next request's bytes are not the body's. */
	ck_assert_int_eq(chunked("0\r\n\r\nGET / HTTP/1.1", 100, &done), 5);
	ck_assert_int_eq(done, 1);
	ck_assert_int_eq(chunked("5\r\nhel", 100, &done), 6);
	ck_assert_int_eq(done, 0);
	ck_assert_int_eq(chunked("A\r\n0123456789\r\n0\r\n\r\n", 3, &done), 20);
	ck_assert_int_eq(chunked("x\r\n", 100, &done), -1);
	ck_assert_int_eq(chunked("\r\n", 100, &done), -1);
	ck_assert_int_eq(chunked("5\r\nhelloX", 100, &done), -1);
	ck_assert_int_eq(chunked("5\rX", 100, &done), -1);
	ck_assert_int_eq(chunked("1000000000000000\r\n", 100, &done), -1);
	ck_assert_int_eq(chunked("5\x01\r\n", 100, &done), -1);
	ck_assert_int_eq(chunked("0\r\nT: \x02\r\n\r\n", 100, &done), -1);
	memset(big, ' ', sizeof big - 1);
	big[0] = '1';
	big[sizeof big - 1] = '\0';
	ck_assert_int_eq(chunked(big, 1000, &done), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("gw_preview_http");
	TCase *tc = tcase_create("gw_preview_http");

	tcase_add_test(tc, test_route_path);
	tcase_add_test(tc, test_route_host);
	tcase_add_test(tc, test_credentials_found);
	tcase_add_test(tc, test_framing_and_malformed);
	tcase_add_test(tc, test_forward);
	tcase_add_test(tc, test_redirect);
	tcase_add_test(tc, test_page);
	tcase_add_test(tc, test_answers);
	tcase_add_test(tc, test_chunked);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
