/* probe_novnc: ready when the gateway serves noVNC's page and its
 * WebSocket relays a VNC server's RFB banner. A relay that answers the
 * upgrade proves nothing (websockify says 101 with the VNC server dead);
 * the banner comes from the VNC server itself. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "xmalloc.h"

#define PROBE_NOVNC_PAGE "vnc.html"
#define PROBE_NOVNC_SOCKET "websockify"
#define PROBE_NOVNC_MARK "noVNC" /* the page says what it is */

/* The check's state, allocated by parse and kept for good. */
struct probe_novnc_check {
	struct probe_addr addr;
	char *page;   /* PREFIX + vnc.html */
	char *socket; /* PREFIX + websockify */
};

/* "RFB 003.00" and a digit and a newline: 3.3, 3.7 and 3.8 are what
 * VNC servers send, and what noVNC speaks. The relay may cut the banner
 * into messages as TCP gave it the bytes. */
enum probe_verdict
probe_novnc_banner(uint8_t *banner, size_t *have, const uint8_t *msg,
    size_t len, char *err, size_t errsize)
{
	size_t n = PROBE_NOVNC_BANNER - *have;
	size_t i;

	if (len < n)
		n = len;
	memcpy(banner + *have, msg, n);
	*have += n;
	if (*have < PROBE_NOVNC_BANNER)
		return PROBE_MORE;
	if (memcmp(banner, "RFB 003.00", 10) == 0 && banner[10] >= '0' &&
	    banner[10] <= '9' && banner[11] == '\n')
		return PROBE_DONE;
	for (i = 0; i < PROBE_NOVNC_BANNER; i++)
		if (banner[i] < ' ' || banner[i] > '~')
			break;
	return probe_fail(err, errsize,
	    "the banner is \"%.*s\", not RFB 003.00x", (int)i,
	    (const char *)banner);
}

static void *
probe_novnc_parse(int argc, char **argv, char **cause)
{
	struct probe_novnc_check *c;
	char *prefix;

	(void)argc;
	if (probe_token_needed(cause) != 0)
		return NULL;
	c = xcalloc(1, sizeof *c);
	if (probe_url_parse(argv[0], "http", 80, &c->addr, &prefix, cause) !=
	    0) {
		free(c);
		return NULL;
	}
	if (prefix[strlen(prefix) - 1] != '/' || strchr(prefix, '?') != NULL) {
		*cause = xasprintf("%s: want a URL that ends in / (the "
		                   "directory of " PROBE_NOVNC_PAGE ")",
		    argv[0]);
		free(prefix);
		probe_addr_free(&c->addr);
		free(c);
		return NULL;
	}
	c->page = xasprintf("%s" PROBE_NOVNC_PAGE, prefix);
	c->socket = xasprintf("%s" PROBE_NOVNC_SOCKET, prefix);
	free(prefix);
	return c;
}

/* GET vnc.html: 200, and noVNC's page. */
static int
probe_novnc_page(struct probe_io *io, const struct probe_novnc_check *c,
    const char *token, char **cause)
{
	uint8_t *in = xmalloc(PROBE_HTTP_READ);
	struct probe_http h;
	size_t extra;
	char *req;
	int r;

	req = probe_http_request(&c->addr, c->page, token,
	    "Accept: text/html\r\nConnection: close\r\n");
	probe_http_init(&h, PROBE_HTTP_MAX_BODY);
	r = probe_http_exchange(
	    io, req, &h, in, PROBE_HTTP_READ, &extra, cause);
	probe_free_secret(req);
	free(in);
	if (r == 0 && h.status != 200) {
		*cause = xasprintf("http status %d, want 200", h.status);
		r = -1;
	} else if (r == 0 &&
	    (h.bodylen == 0 ||
	        memmem(h.body, h.bodylen, PROBE_NOVNC_MARK,
	            strlen(PROBE_NOVNC_MARK)) == NULL)) {
		*cause = xstrdup("the page does not say " PROBE_NOVNC_MARK);
		r = -1;
	}
	probe_http_free(&h);
	if (r != 0)
		probe_cause_wrap(cause, PROBE_NOVNC_PAGE);
	return r;
}

/* The relay's WebSocket, then binary messages until the banner is whole.
 * A timeout here is the VNC server's silence, and is told so. */
static int
probe_novnc_socket(struct probe_io *io, const struct probe_novnc_check *c,
    const char *token, char **cause)
{
	uint8_t banner[PROBE_NOVNC_BANNER];
	char err[PROBE_ERR_MAX];
	enum probe_verdict v = PROBE_MORE;
	struct probe_ws ws;
	size_t have = 0;
	int r;

	probe_ws_init(&ws);
	r = probe_ws_upgrade(io, &ws, &c->addr, c->socket, token, cause);
	snprintf(io->doing, sizeof io->doing, "waiting for the RFB banner");
	while (r == 0 && v == PROBE_MORE) {
		if (probe_ws_recv(io, &ws, cause) != 0) {
			if (io->expired) {
				free(*cause);
				*cause = xasprintf("no RFB banner within %d ms",
				    io->timeout_ms);
			}
			r = -1;
		} else if (ws.msg.opcode != PROBE_WS_BINARY)
			v = probe_fail(err, sizeof err,
			    "a text message, where RFB is binary");
		else
			v = probe_novnc_banner(banner, &have, ws.msg.buf,
			    ws.msg.len, err, sizeof err);
	}
	if (v == PROBE_FAIL) {
		*cause = xstrdup(err);
		r = -1;
	}
	if (r == 0 && io->can_watch)
		io->watch = 1;
	else if (r == 0)
		probe_ws_close(io);
	probe_ws_free(&ws);
	if (r != 0)
		probe_cause_wrap(cause, PROBE_NOVNC_SOCKET);
	return r;
}

/* Two connections under one deadline: the page, then the WebSocket. */
static int
probe_novnc_check(void *state, struct probe_io *io, char **cause)
{
	struct probe_novnc_check *c = state;
	const char *token;

	if ((token = probe_token(cause)) == NULL)
		goto fail;
	if (probe_io_connect(io, &c->addr, cause) != 0)
		return -1;
	if (probe_novnc_page(io, c, token, cause) != 0)
		goto fail;
	probe_io_close(io);
	if (probe_io_connect(io, &c->addr, cause) != 0)
		return -1;
	if (probe_novnc_socket(io, c, token, cause) != 0)
		goto fail;
	return 0;
fail:
	probe_cause_wrap(cause, "novnc");
	return -1;
}

static void
probe_novnc_free(void *state)
{
	struct probe_novnc_check *c = state;

	probe_addr_free(&c->addr);
	free(c->page);
	free(c->socket);
	free(c);
}

const struct probe_type probe_novnc_type = {
    .name = "novnc",
    .args = "http://HOST[:PORT]/PREFIX/",
    .minargs = 1,
    .maxargs = 1,
    .parse = probe_novnc_parse,
    .check = probe_novnc_check,
    .free = probe_novnc_free,
};
