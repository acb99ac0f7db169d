/* gw_preview_http: the preview proxy's HTTP/1.1 heads (gw_preview.c).
 * A client's request head, read with limits and routed to a grant (by
 * host PORT-KEY.DOMAIN, or by path /preview/KEY/ and /runtime/TOKEN/),
 * its credentials found and written out of the head the app gets; the
 * app's answer heads, read for where each answer ends; and the answers
 * of the proxy's own (a redirect that sets its cookie, error pages).
 * Pure: no sockets, no lws. */
#ifndef BERTH_GW_PREVIEW_HTTP_H
#define BERTH_GW_PREVIEW_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "gw_cdp_http.h"

/* A key in a URL: a grant's id ("g" and 16 hex) or token (40 hex). */
#define GW_PREVIEW_KEY_MAX 40
/* A one-time link's code, as berth_link carries it. */
#define GW_PREVIEW_CODE_MAX 40
/* The cookie a private preview's link is exchanged for, and the query
 * parameter that carries the link's code. */
#define GW_PREVIEW_COOKIE "berth_grant"
#define GW_PREVIEW_LINK "berth_link"

enum gw_preview_door {
	GW_PREVIEW_DOOR_PREVIEW, /* preview:PORT */
	GW_PREVIEW_DOOR_RUNTIME, /* runtime:NAME */
};

/* How a message's body ends. */
enum gw_preview_body {
	GW_PREVIEW_BODY_NONE,
	GW_PREVIEW_BODY_LENGTH,  /* after bodylen bytes */
	GW_PREVIEW_BODY_CHUNKED, /* at its last chunk (gw_preview_chunk) */
	GW_PREVIEW_BODY_CLOSE,   /* when the app closes (answers only) */
};

/*
 * A client's request head, as gw_preview_http_request_parse read and
 * routed it. Plain values, the caller's; line points into the caller's
 * buffer, which must outlive it.
 */
struct gw_preview_request {
	size_t headlen;  /* bytes of the head, the blank line included */
	unsigned status; /* GW_CDP_HTTP_ERROR: the status to answer with */
	char err[GW_CDP_HTTP_ERR_MAX];
	struct gw_cdp_http_line line;
	enum gw_preview_door door;
	int by_host;        /* routed by PORT-KEY.DOMAIN */
	unsigned host_port; /* by host: its PORT */
	char key[GW_PREVIEW_KEY_MAX + 1];
	size_t prefixlen; /* by path: the target's first bytes the app does
	                     not get ("/preview/KEY") */
	char code[GW_PREVIEW_CODE_MAX + 1];  /* berth_link's, or "" */
	char cookie[GW_PREVIEW_KEY_MAX + 1]; /* berth_grant's, or "" */
	int cookie_bad;                      /* one that is no token */
	enum gw_preview_body body;
	uint64_t bodylen;
	int upgrade; /* asks for an upgrade (WebSocket or other) */
	int head;    /* a HEAD: its answer has no body */
	char host[GW_CDP_HTTP_HOST_MAX + 1];
};

/*
 * Reads the request head at the start of buf[0..len), which may hold
 * more, and routes it: domain (NULL: none) is the previews' host-name
 * suffix. Errors: 400 malformed, 431 too large, 404 a head that names
 * no preview, 501 a transfer coding other than chunked.
 */
enum gw_cdp_http_result gw_preview_http_request_parse(const char *buf,
    size_t len, const char *domain, struct gw_preview_request *req);

/* What the app's head adds to the client's. */
struct gw_preview_forward {
	const char *peer;          /* the client's address: X-Forwarded-For */
	const char *authorization; /* replaces the client's; NULL: keep it */
	int prefix;                /* send X-Forwarded-Prefix */
};

/*
 * The head the app gets for a parsed request: the target without the
 * routing prefix; berth's cookie taken out of Cookie (dropped if nothing
 * is left); the client's X-Forwarded-* replaced by the proxy's;
 * Authorization as fw says. Every head or answer built here is
 * NUL-terminated; *len does not count the NUL; the caller frees it.
 */
char *gw_preview_http_forward(const char *buf,
    const struct gw_preview_request *req, const struct gw_preview_forward *fw,
    size_t *len);

/*
 * A private preview's link was redeemed for token: a 302 to the same
 * target without berth_link, setting berth's cookie (HttpOnly,
 * SameSite=Lax, its Path the preview's prefix by path, "/" by host,
 * which keeps it to that host).
 */
char *gw_preview_http_redirect(
    const struct gw_preview_request *req, const char *token, size_t *len);

/* An error answer of the proxy's own: a short HTML page saying message;
 * with close, Connection: close. */
char *gw_preview_http_page(
    unsigned status, const char *message, int close, size_t *len);

/* The app's answer head, as gw_preview_http_response_parse read it. */
struct gw_preview_response {
	size_t headlen;
	unsigned status;
	char err[GW_CDP_HTTP_ERR_MAX];
	enum gw_preview_body body;
	uint64_t bodylen;
	int interim; /* a 1xx other than an accepted upgrade: more follows */
	int relay;   /* 101 to an upgrade: bytes flow both ways from here */
	int last;    /* the app closes after it: Connection: close, or
	                HTTP/1.0 without Connection: keep-alive */
};

/* Reads the answer's head at the start of buf[0..len) to a request that
 * was a HEAD (head) or asked for an upgrade (upgrade). Errors are 502. */
enum gw_cdp_http_result gw_preview_http_response_parse(const char *buf,
    size_t len, int head, int upgrade, struct gw_preview_response *resp);

#endif
