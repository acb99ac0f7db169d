/* fuzz_probe: libFuzzer target for berth-probe's readers of what peers
 * send: the HTTP response parser, RFB (the handshake and the server
 * messages after it), the /json/version scanner, WebSocket frames and the
 * messages they make, CDP answers and the RFB banner a noVNC relay sends.
 * The first byte picks one, the second how the bytes are cut: a parser
 * must come to the same answer however the bytes arrive, and never take
 * more than it was given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The checks' socket side is not under test here, and never reached. */
int
probe_addr_parse(
    struct probe_addr *addr, const char *s, int defport, char **cause)
{
	(void)addr, (void)s, (void)defport, (void)cause;
	abort();
}

void
probe_addr_free(struct probe_addr *addr)
{
	(void)addr;
	abort();
}

int
probe_io_connect(
    struct probe_io *io, const struct probe_addr *addr, char **cause)
{
	(void)io, (void)addr, (void)cause;
	abort();
}

int
probe_io_write(struct probe_io *io, const void *buf, size_t len, char **cause)
{
	(void)io, (void)buf, (void)len, (void)cause;
	abort();
}

ssize_t
probe_io_read(struct probe_io *io, void *buf, size_t len, char **cause)
{
	(void)io, (void)buf, (void)len, (void)cause;
	abort();
}

void
probe_io_close(struct probe_io *io)
{
	(void)io;
	abort();
}

int
probe_url_parse(const char *url, const char *scheme, int defport,
    struct probe_addr *addr, char **path, char **cause)
{
	(void)url, (void)scheme, (void)defport, (void)addr, (void)path;
	(void)cause;
	abort();
}

int
probe_token_needed(char **cause)
{
	(void)cause;
	abort();
}

const char *
probe_token(char **cause)
{
	(void)cause;
	abort();
}

void
probe_free_secret(char *s)
{
	(void)s;
	abort();
}

void
probe_cause_wrap(char **cause, const char *fmt, ...)
{
	(void)cause, (void)fmt;
	abort();
}

/* How many bytes arrive at once: cut, or all that is left if cut is 0. */
static size_t
fuzz_step(size_t cut, size_t left)
{
	return cut == 0 || cut > left ? left : cut;
}

/* An error message is a string that fits. */
static void
fuzz_err(const char *err, size_t size)
{
	if (memchr(err, '\0', size) == NULL || err[0] == '\0')
		abort();
}

/* HTTP. */

struct fuzz_http {
	struct probe_http h;
	enum probe_verdict v;
	size_t taken;
};

/* Feeds the response as it would arrive, then the end of the connection. */
static void
fuzz_http_run(
    struct fuzz_http *r, const uint8_t *p, size_t n, size_t cut, size_t maxbody)
{
	size_t step, used;

	probe_http_init(&r->h, maxbody);
	r->v = PROBE_MORE;
	r->taken = 0;
	while (r->taken < n) {
		step = fuzz_step(cut, n - r->taken);
		r->v = probe_http_feed(&r->h, p + r->taken, step, &used);
		if (used > step || (r->v == PROBE_MORE && used != step))
			abort();
		r->taken += used;
		if (r->v != PROBE_MORE)
			break;
	}
	if (r->v == PROBE_MORE)
		r->v = probe_http_eof(&r->h);
	if (r->v == PROBE_MORE || r->h.bodylen > maxbody)
		abort();
	if (r->v == PROBE_FAIL)
		fuzz_err(r->h.err, sizeof r->h.err);
}

static void
fuzz_http_headers(const struct probe_http *h)
{
	static const char *const names[] = {"Content-Length",
	    "Transfer-Encoding", "Upgrade", "Connection",
	    "Sec-WebSocket-Accept", "X"};
	const char *v;
	size_t i, len;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		v = probe_http_header(h, names[i], &len);
		if (v != NULL &&
		    (v < h->head || v + len > h->head + h->headlen))
			abort();
	}
}

static void
fuzz_http(const uint8_t *p, size_t n, uint8_t how)
{
	static const size_t maxbodies[] = {0, 7, 4096, PROBE_HTTP_MAX_BODY};
	size_t maxbody = maxbodies[how & 3], cut = how >> 2;
	struct fuzz_http *a = malloc(sizeof *a), *b = malloc(sizeof *b);

	fuzz_http_run(a, p, n, 0, maxbody);
	fuzz_http_run(b, p, n, cut, maxbody);
	if (a->v != b->v || a->taken != b->taken)
		abort();
	if (a->v == PROBE_FAIL && strcmp(a->h.err, b->h.err) != 0)
		abort();
	if (a->v == PROBE_DONE &&
	    (a->h.status != b->h.status || a->h.bodylen != b->h.bodylen ||
	        a->h.truncated != b->h.truncated ||
	        (a->h.bodylen > 0 &&
	            memcmp(a->h.body, b->h.body, a->h.bodylen) != 0) ||
	        a->h.status < 100 || a->h.status > 599))
		abort();
	fuzz_http_headers(&a->h);
	probe_http_free(&a->h);
	probe_http_free(&b->h);
	free(a);
	free(b);
}

/* RFB. */

struct fuzz_rfb {
	struct probe_rfb r;
	enum probe_verdict v;
	size_t taken;
	uint8_t sent[256];
	size_t sentlen;
};

/* Steps the handshake and what follows as probe_rfb_check does, the
 * server's bytes coming cut at a time; what the client sends is kept to
 * compare. */
static void
fuzz_rfb_run(struct fuzz_rfb *f, const uint8_t *p, size_t n, size_t cut,
    unsigned w, unsigned h)
{
	size_t avail = 0, used;

	probe_rfb_init(&f->r, w, h);
	f->taken = f->sentlen = 0;
	for (;;) {
		f->v = probe_rfb_step(
		    &f->r, p + f->taken, avail - f->taken, &used);
		if (used > avail - f->taken || f->r.outlen > sizeof f->r.out)
			abort();
		f->taken += used;
		if (f->sentlen + f->r.outlen > sizeof f->sent)
			abort();
		memcpy(f->sent + f->sentlen, f->r.out, f->r.outlen);
		f->sentlen += f->r.outlen;
		f->r.outlen = 0;
		if (f->v != PROBE_MORE)
			break;
		if (used > 0)
			continue;
		/* The check's buffer holds any message it must wait for. */
		if (avail - f->taken >= PROBE_RFB_MAX_MSG)
			abort();
		if (avail == n)
			break;
		avail += fuzz_step(cut, n - avail);
	}
	if (f->v == PROBE_FAIL)
		fuzz_err(f->r.err, sizeof f->r.err);
	if (f->v == PROBE_DONE &&
	    ((f->r.want_w != 0 && (f->r.width != w || f->r.height != h)) ||
	        !f->r.origin || f->r.updating))
		abort();
	if (probe_rfb_awaited(&f->r) == NULL)
		abort();
}

static void
fuzz_rfb(const uint8_t *p, size_t n, uint8_t how)
{
	struct fuzz_rfb a, b;
	unsigned w = how & 1 ? 1280 : 0, h = how & 1 ? 800 : 0;

	fuzz_rfb_run(&a, p, n, 0, w, h);
	fuzz_rfb_run(&b, p, n, how >> 1, w, h);
	if (a.v != b.v || a.taken != b.taken || a.sentlen != b.sentlen ||
	    memcmp(a.sent, b.sent, a.sentlen) != 0)
		abort();
	if (a.v == PROBE_FAIL && strcmp(a.r.err, b.r.err) != 0)
		abort();
	if (a.v == PROBE_DONE &&
	    (a.r.width != b.r.width || a.r.height != b.r.height))
		abort();
}

/* JSON and WebSocket. */

/* What webSocketDebuggerUrl gives is printable, without spaces. */
static void
fuzz_printable(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s <= ' ' || *s >= 0x7f)
			abort();
}

static void
fuzz_json(const uint8_t *p, size_t n)
{
	char path[PROBE_CDP_MAX_PATH], err[PROBE_ERR_MAX];
	char authority[PROBE_CDP_MAX_AUTHORITY];

	if (probe_cdp_ws_url((const char *)p, n, authority, sizeof authority,
	        path, sizeof path, err, sizeof err) == PROBE_DONE) {
		if (path[0] != '/' || authority[0] == '\0' ||
		    strchr(authority, '/') != NULL ||
		    strchr(authority, '@') != NULL)
			abort();
		fuzz_printable(path);
		fuzz_printable(authority);
	} else
		fuzz_err(err, sizeof err);
	if (probe_cdp_answer((const char *)p, n, err, sizeof err) == PROBE_FAIL)
		fuzz_err(err, sizeof err);
}

/* Frames one after another, put together into messages as the checks
 * do: a text message is looked at as a CDP answer, binary ones as what a
 * noVNC relay sends. */
static void
fuzz_frames(const uint8_t *p, size_t n)
{
	static uint8_t buf[PROBE_WS_MAX_MSG];
	struct probe_ws_msg m = {.buf = buf};
	struct probe_ws_frame f;
	uint8_t banner[PROBE_NOVNC_BANNER];
	char err[PROBE_ERR_MAX];
	enum probe_verdict v, bv = PROBE_MORE;
	size_t have = 0;

	while ((v = probe_ws_frame(p, n, &f, err, sizeof err)) == PROBE_DONE) {
		if (f.hdrlen > n || f.len > n - f.hdrlen ||
		    f.len > PROBE_WS_MAX_MSG)
			abort();
		v = probe_ws_take(&m, &f, p + f.hdrlen, err, sizeof err);
		if (m.len > PROBE_WS_MAX_MSG)
			abort();
		p += f.hdrlen + f.len;
		n -= f.hdrlen + f.len;
		if (v == PROBE_FAIL)
			break;
		if (v == PROBE_MORE)
			continue;
		if (m.opcode == 0x1 &&
		    probe_cdp_answer((char *)m.buf, m.len, err, sizeof err) ==
		        PROBE_FAIL)
			fuzz_err(err, sizeof err);
		if (m.opcode == 0x2 && bv == PROBE_MORE) {
			bv = probe_novnc_banner(
			    banner, &have, m.buf, m.len, err, sizeof err);
			if (have > PROBE_NOVNC_BANNER ||
			    (bv == PROBE_MORE) != (have < PROBE_NOVNC_BANNER))
				abort();
			if (bv == PROBE_FAIL)
				fuzz_err(err, sizeof err);
			if (bv == PROBE_DONE &&
			    memcmp(banner, "RFB 003.00", 10) != 0)
				abort();
		}
	}
	if (v == PROBE_FAIL)
		fuzz_err(err, sizeof err);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	switch (data[0] & 3) {
	case 0: fuzz_http(data + 2, size - 2, data[1]); break;
	case 1: fuzz_rfb(data + 2, size - 2, data[1]); break;
	case 2: fuzz_json(data + 2, size - 2); break;
	case 3: fuzz_frames(data + 2, size - 2); break;
	}
	return 0;
}
