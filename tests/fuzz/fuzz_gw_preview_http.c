/* fuzz_gw_preview_http: libFuzzer target for the preview proxy's heads
 * and chunked framing (gw_preview_http.c, gw_preview_chunk.c). The first
 * byte picks what the bytes are (a request head without or with a
 * preview domain, an app's answer head, a chunked body), the second how
 * they are cut: a verdict must not depend on how far the bytes arrived,
 * and the head the app gets for a request must read back as one naming
 * the same path, without berth's cookie. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw_preview_chunk.h"
#include "gw_preview_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_DOMAIN "p.example"

static enum gw_cdp_http_result
fuzz_req(const char *buf, size_t len, const char *domain,
    struct gw_preview_request *req, char **copy)
{
	*copy = malloc(len > 0 ? len : 1);
	memcpy(*copy, buf, len);
	return gw_preview_http_request_parse(*copy, len, domain, req);
}

static void
fuzz_err(const char *err, size_t size)
{
	if (memchr(err, '\0', size) == NULL || err[0] == '\0')
		abort();
}

/* Whether the redirect's Location has a berth_link parameter left in
 * its query (the path may hold those bytes). */
static int
fuzz_link_left(const char *out)
{
	const char *loc = strstr(out, "Location: "), *eol, *p;

	if (loc == NULL || (eol = strstr(loc, "\r\n")) == NULL)
		abort();
	p = memchr(loc, '?', (size_t)(eol - loc));
	for (; p != NULL && p < eol;
	     p = memchr(p + 1, '&', (size_t)(eol - p - 1)))
		if ((size_t)(eol - p) > 11 &&
		    memcmp(p + 1, "berth_link=", 11) == 0)
			return 1;
	return 0;
}

/* What a routed request becomes must parse again, by path as the app
 * sees it, with no cookie of berth's left. */
static void
fuzz_forward(const char *copy, const struct gw_preview_request *req)
{
	struct gw_preview_forward fw = {"1.2.3.4", "Basic eA==", 1};
	struct gw_preview_request back;
	char *out, *again;
	size_t n;

	out = gw_preview_http_forward(copy, req, &fw, &n);
	if (strlen(out) != n || n < 4 || memcmp(out + n - 4, "\r\n\r\n", 4))
		abort();
	/* The app's own path may name no preview, or hold what reads as a
	 * bad link; the head's syntax stays good. */
	if (fuzz_req(out, n, NULL, &back, &again) == GW_CDP_HTTP_ERROR &&
	    back.status != 404 && back.status != 431 &&
	    strcmp(back.err, "a malformed berth_link") != 0)
		abort();
	if (back.cookie[0] != '\0' || back.cookie_bad)
		abort();
	free(again);
	free(out);
	if (req->door == GW_PREVIEW_DOOR_PREVIEW) {
		out = gw_preview_http_redirect(req, "t", &n);
		if (strlen(out) != n || fuzz_link_left(out))
			abort();
		free(out);
	}
}

static void
fuzz_request(const char *buf, size_t len, size_t cut, const char *domain)
{
	struct gw_preview_request req, part;
	enum gw_cdp_http_result r, rp;
	char *copy, *pcopy;

	r = fuzz_req(buf, len, domain, &req, &copy);
	rp = fuzz_req(buf, cut, domain, &part, &pcopy);
	free(pcopy);
	if (r == GW_CDP_HTTP_ERROR) {
		fuzz_err(req.err, sizeof req.err);
		if (req.status < 400 || req.status > 505)
			abort();
	}
	/* A prefix of a good head is never refused; a refused prefix
	 * refuses the whole with the same status. */
	if (rp == GW_CDP_HTTP_ERROR && r != GW_CDP_HTTP_ERROR &&
	    part.headlen == 0)
		abort();
	if (r == GW_CDP_HTTP_OK) {
		if (req.headlen > len || req.headlen > GW_CDP_HTTP_HEAD_MAX)
			abort();
		fuzz_forward(copy, &req);
	}
	free(copy);
}

static void
fuzz_answer(const char *buf, size_t len, unsigned flags)
{
	struct gw_preview_response resp;
	enum gw_cdp_http_result r;
	char *copy = malloc(len > 0 ? len : 1);

	memcpy(copy, buf, len);
	r = gw_preview_http_response_parse(
	    copy, len, flags & 1, (flags >> 1) & 1, &resp);
	if (r == GW_CDP_HTTP_ERROR &&
	    (resp.status != 502 || resp.err[0] == '\0'))
		abort();
	if (r == GW_CDP_HTTP_OK && (resp.headlen > len || resp.status < 100))
		abort();
	free(copy);
}

/* Fed whole or in two pieces, a chunked body ends at the same byte. */
static void
fuzz_chunked(const char *buf, size_t len, size_t cut)
{
	struct gw_preview_chunk a, b;
	long long na, nb1, nb2 = 0;
	int da, db;

	gw_preview_chunk_init(&a);
	gw_preview_chunk_init(&b);
	na = gw_preview_chunk_feed(&a, buf, len, &da);
	nb1 = gw_preview_chunk_feed(&b, buf, cut, &db);
	if (nb1 >= 0 && !db)
		nb2 = gw_preview_chunk_feed(&b, buf + cut, len - cut, &db);
	if (na >= 0 && (nb1 < 0 || nb2 < 0 || na != nb1 + nb2 || da != db))
		abort();
	if (na > (long long)len)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data + 2;
	size_t len, cut;

	if (size < 2)
		return 0;
	len = size - 2;
	cut = len == 0 ? 0 : data[1] % (len + 1);
	switch (data[0] % 4) {
	case 0: fuzz_request(buf, len, cut, NULL); break;
	case 1: fuzz_request(buf, len, cut, FUZZ_DOMAIN); break;
	case 2: fuzz_answer(buf, len, data[0] >> 2); break;
	default: fuzz_chunked(buf, len, cut); break;
	}
	return 0;
}
