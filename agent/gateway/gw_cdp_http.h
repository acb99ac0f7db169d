/* gw_cdp_http: the HTTP/1.1 that the TCP relay to Chromium's DevTools
 * (gw_cdp.c) reads and rewrites: a client's request head, checked with
 * limits and rewritten for Chromium, and Chromium's answer, whose /json
 * listings name Chromium's own address and are rewritten to name the one
 * the client dialed. Its reading of a head's syntax, line by line, is the
 * preview proxy's too (gw_preview_http.c). Pure: no sockets, no lws. */
#ifndef BERTH_GW_CDP_HTTP_H
#define BERTH_GW_CDP_HTTP_H

#include <stddef.h>
#include <stdint.h>

/* A head, its blank line included, is at most this long and has at most
 * this many header lines; a Host at most this long. */
#define GW_CDP_HTTP_HEAD_MAX (16u * 1024)
#define GW_CDP_HTTP_LINES_MAX 64
#define GW_CDP_HTTP_HOST_MAX 255
/* The largest request body relayed, and the largest answer body that is
 * rewritten (a larger one passes through as it is). */
#define GW_CDP_HTTP_BODY_MAX (1024u * 1024)
#define GW_CDP_HTTP_ERR_MAX 128

enum gw_cdp_http_result {
	GW_CDP_HTTP_MORE,  /* the head is not whole yet: read on */
	GW_CDP_HTTP_OK,    /* the head is whole and good */
	GW_CDP_HTTP_ERROR, /* status and err say what is wrong */
};

/*
 * A client's request head. Filled by gw_cdp_http_request_parse; authz
 * points into the caller's buffer, which must outlive it.
 */
struct gw_cdp_http_request {
	size_t headlen;  /* bytes of the head, the blank line included */
	unsigned status; /* GW_CDP_HTTP_ERROR: the status to answer with */
	char err[GW_CDP_HTTP_ERR_MAX];
	int upgrade;      /* a WebSocket upgrade */
	int rewrite;      /* a /json listing: the answer names Chromium */
	int head;         /* a HEAD request: the answer has no body */
	uint64_t bodylen; /* the request's Content-Length, 0 if none */
	char host[GW_CDP_HTTP_HOST_MAX + 1]; /* the Host the client sent */
	const char *authz; /* the Authorization header's value, or NULL */
	size_t authzlen;
};

/* How the body of an answer ends. */
enum gw_cdp_http_body {
	GW_CDP_HTTP_BODY_NONE,        /* there is none */
	GW_CDP_HTTP_BODY_LENGTH,      /* after bodylen bytes */
	GW_CDP_HTTP_BODY_UNTIL_CLOSE, /* when Chromium closes */
};

/* Chromium's answer's head, as gw_cdp_http_response_parse read it. */
struct gw_cdp_http_response {
	size_t headlen;
	unsigned status; /* the answer's status code */
	char err[GW_CDP_HTTP_ERR_MAX];
	enum gw_cdp_http_body body;
	uint64_t bodylen;
	int relay;   /* 101 to an upgrade: bytes flow both ways from here */
	int rewrite; /* buffer the whole body and rewrite it */
};

/*
 * Reads the request head at the start of buf[0..len), which may hold
 * more. Syntax is checked as far as the bytes go, so garbage is refused
 * at once rather than when 16 KiB have arrived.
 */
enum gw_cdp_http_result gw_cdp_http_request_parse(
    const char *buf, size_t len, struct gw_cdp_http_request *req);
/* Every head or response built here is NUL-terminated; *len does not
 * count the NUL. */

/*
 * The head to send Chromium for a parsed request: Host is authority;
 * Origin, Authorization, Proxy-Authorization and Cookie are dropped;
 * anything but an upgrade carries Connection: close. The caller frees
 * the result; *len is its length.
 */
char *gw_cdp_http_request_head(const char *buf,
    const struct gw_cdp_http_request *req, const char *authority, size_t *len);

/* Reads the answer's head at the start of buf[0..len) for req. */
enum gw_cdp_http_result gw_cdp_http_response_parse(const char *buf, size_t len,
    const struct gw_cdp_http_request *req, struct gw_cdp_http_response *resp);
/*
 * The answer's head for the client when its body passes as it is: the
 * same, with Connection: close. The caller frees it.
 */
char *gw_cdp_http_response_head(
    const char *buf, const struct gw_cdp_http_response *resp, size_t *len);
/*
 * The whole answer for the client when resp->rewrite is set: buf holds
 * the head and all resp->bodylen bytes of the body, in which every
 * occurrence of from (Chromium's address) becomes to (the client's
 * Host); Content-Length says the new length. The caller frees it.
 */
char *gw_cdp_http_response_rewrite(const char *buf,
    const struct gw_cdp_http_response *resp, const char *from, const char *to,
    size_t *len);

/* Whether s[0..len) may serve as a Host: 1 to GW_CDP_HTTP_HOST_MAX bytes of
 * letters, digits and . - : [ ] only. */
int gw_cdp_http_host_valid(const char *s, size_t len);
/*
 * A whole error response of our own: status, a JSON body
 * {"error":..,"message":..} and Connection: close (401 adds
 * WWW-Authenticate: Bearer). The caller frees it.
 */
char *gw_cdp_http_error(unsigned status, const char *message, size_t *len);

/* The syntax of a head, shared with the preview proxy's reading. */

/* Checks one line of a head: whole, or as far as it has arrived. Returns
 * -1 with the error filled in. */
typedef int (*gw_cdp_http_line_cb)(
    void *arg, unsigned lineno, const char *l, size_t n, int whole);
/* A request line's parts, pointing into the head. */
struct gw_cdp_http_line {
	const char *method;
	size_t methodlen;
	const char *target; /* the whole target, its query included */
	size_t targetlen;
	size_t pathlen; /* the target up to its query */
};

/* Sets *status and err[GW_CDP_HTTP_ERR_MAX]; returns -1. */
int gw_cdp_http_fail(
    unsigned *status, char *err, unsigned code, const char *msg);
/*
 * Splits a head into lines and hands each to cb, the last one as far as
 * it has arrived; *headlen once the blank line is in. 431 past
 * GW_CDP_HTTP_HEAD_MAX bytes or GW_CDP_HTTP_LINES_MAX lines, 400 for a
 * CR without LF.
 */
enum gw_cdp_http_result gw_cdp_http_scan(const char *buf, size_t len,
    gw_cdp_http_line_cb cb, void *arg, size_t *headlen, unsigned *status,
    char *err);
/* METHOD SP PATH SP HTTP/1.x, as far as it has arrived, into *out. */
int gw_cdp_http_request_line(const char *l, size_t n, int whole,
    unsigned *status, char *err, struct gw_cdp_http_line *out);
/* HTTP/1.x SP NNN [SP reason]: the code into *status once whole; errors
 * are 502 (the line comes from a server). */
int gw_cdp_http_status_line(
    const char *l, size_t n, int whole, unsigned *status, char *err);
/*
 * One line of an answer's head, for a line callback: the status line, or
 * a header line's syntax. 1 with the header's name length and value when
 * it is a whole header line to look at, 0 if there is nothing more to do
 * with it, -1 on an error.
 */
int gw_cdp_http_answer_line(unsigned lineno, const char *l, size_t n, int whole,
    unsigned *status, char *err, size_t *namelen, const char **v, size_t *vlen);
/* A header line's syntax: NAME ":" VALUE; *namelen once the colon is in. */
int gw_cdp_http_header_syntax(const char *l, size_t n, int whole,
    size_t *namelen, unsigned *status, char *err);
/* Whether the header name l[0..namelen) is name, in any case. */
int gw_cdp_http_named(const char *l, size_t namelen, const char *name);
/* The value of a checked header line, without the spaces around it. */
void gw_cdp_http_value(
    const char *l, size_t n, size_t namelen, const char **v, size_t *vlen);
/* A Content-Length: digits only, at most 18 of them. 0 or -1. */
int gw_cdp_http_number(const char *v, size_t n, uint64_t *out);
/* A Content-Length's value into *out, *count counting them: more than
 * one, or not a number, fails with code. */
int gw_cdp_http_length(const char *v, size_t vlen, int *count, uint64_t *out,
    unsigned code, unsigned *status, char *err);
/* Whether the comma-separated list v[0..n) holds tok, in any case. */
int gw_cdp_http_has_token(const char *v, size_t n, const char *tok);
/* A status's reason phrase, and the slug of the error it stands for. */
const char *gw_cdp_http_reason(unsigned status, const char **slug);
/* RFC 9110's tchar: what names and methods are made of. */
int gw_cdp_http_tchar(char c);

#endif
