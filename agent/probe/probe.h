/* probe: berth-probe, the network readiness checks berthd runs as a child
 * (one per probed service) so that berthd never reads a network byte. The
 * checks' parsers work on buffers, apart from the socket I/O that feeds them.
 */
#ifndef BERTH_PROBE_H
#define BERTH_PROBE_H

#include <sys/types.h>
#include <sys/socket.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Room for a parser's failure message; output lines are shorter anyway. */
#define PROBE_ERR_MAX 256

/* What a parser makes of the bytes it has been given so far. */
enum probe_verdict {
	PROBE_MORE, /* not finished: needs more bytes, or has some to send */
	PROBE_DONE, /* finished, and the peer said what was wanted */
	PROBE_FAIL, /* malformed or refused; the parser's err says why */
};

/* The parsers' way to fail: the reason into err, and PROBE_FAIL. */
static inline enum probe_verdict probe_fail(char *err, size_t errsize,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline enum probe_verdict
probe_fail(char *err, size_t errsize, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsize, fmt, ap);
	va_end(ap);
	return PROBE_FAIL;
}

/*
 * A HOST:PORT from the command line. HOST is an IP address or "localhost"
 * and nothing else: a name needs a resolver, and the resolver blocks with
 * no deadline. Filled by probe_addr_parse, emptied by probe_addr_free.
 */
struct probe_addr {
	char *given; /* as given, for Host headers */
	char *name;  /* HOST:PORT, for messages */
	struct sockaddr_storage sa[2];
	socklen_t salen[2];
	int nsa; /* localhost: 127.0.0.1, then ::1 */
};

/*
 * The connection of one check, and the deadline of the whole check. The
 * check runner owns it and closes fd; a check may close it and connect
 * again within the same deadline. A check that passed may set watch: its
 * connection is a session the component keeps open while it lives (an
 * RFB client, a DevTools WebSocket), and the runner holds it until the
 * next check, checking again the moment the component hangs it up. Only
 * where can_watch says the runner would: else a check ends its session
 * politely (a WebSocket close), which a watched one must not do.
 */
struct probe_io {
	int fd;
	int can_watch;
	int watch;
	uint64_t deadline; /* clock_mono_ms */
	int timeout_ms;    /* what the deadline was made of, for messages */
	const char *peer;  /* borrowed from the probe_addr */
	char doing[96];    /* what a timeout would interrupt */
	int expired;       /* the deadline came: the failure was a timeout */
};

/*
 * A kind of check. parse turns the arguments after TYPE into the check's
 * state, which free frees, or fills cause; check runs once against io,
 * returning 0 if ready, else -1 with cause (the caller frees it).
 */
struct probe_type {
	const char *name;
	const char *args; /* for the usage message */
	int minargs;
	int maxargs;
	void *(*parse)(int argc, char **argv, char **cause);
	int (*check)(void *state, struct probe_io *io, char **cause);
	void (*free)(void *state);
};

/* probe.c */
int probe_addr_parse(
    struct probe_addr *addr, const char *s, int defport, char **cause);
void probe_addr_free(struct probe_addr *addr);
/* SCHEME://HOST[:PORT][/PATH][?QUERY][#FRAGMENT]: fills addr (freed by
 * probe_addr_free) and *path, the path and query without the fragment,
 * starting with a slash (freed by the caller). */
int probe_url_parse(const char *url, const char *scheme, int defport,
    struct probe_addr *addr, char **path, char **cause);
/* For the parse of a check that sends the token: -1 with cause if there
 * was no --token-file. */
int probe_token_needed(char **cause);
/* The token read from --token-file at start, or NULL with cause if it
 * could not be read. Never to be printed. */
const char *probe_token(char **cause);
/* Frees a string that may hold the token, wiping it first. */
void probe_free_secret(char *s);
/* Puts "PREFIX: " before *cause. */
void probe_cause_wrap(char **cause, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int probe_io_connect(
    struct probe_io *io, const struct probe_addr *addr, char **cause);
int probe_io_write(
    struct probe_io *io, const void *buf, size_t len, char **cause);
/* Returns the number of bytes read (> 0), 0 at the end, -1 on failure. */
ssize_t probe_io_read(struct probe_io *io, void *buf, size_t len, char **cause);
void probe_io_close(struct probe_io *io);

/* probe_tcp.c */
extern const struct probe_type probe_tcp_type;

/* probe_http.c */
#define PROBE_HTTP_MAX_HEAD (16 * 1024)
#define PROBE_HTTP_MAX_BODY (1024 * 1024)
#define PROBE_HTTP_MAX_LINE 1024 /* a chunk-size line */
#define PROBE_HTTP_READ 16384    /* what a check reads at once */

enum probe_http_state {
	PROBE_HTTP_HEAD,
	PROBE_HTTP_LENGTH,    /* a body of Content-Length bytes */
	PROBE_HTTP_UNTIL_EOF, /* a body that ends when the connection does */
	PROBE_HTTP_CHUNK_SIZE,
	PROBE_HTTP_CHUNK_DATA,
	PROBE_HTTP_CHUNK_END, /* the CRLF after a chunk's data */
	PROBE_HTTP_DONE,
	PROBE_HTTP_FAILED,
};

/*
 * The parser of one HTTP/1.x response, fed the bytes as they arrive. The
 * caller provides the struct; probe_http_init readies it and probe_http_free
 * frees the body it holds. Interim (1xx) responses are skipped, except 101,
 * which ends at its headers. The body is kept up to maxbody bytes: if more
 * comes, the parser stops there with truncated set.
 */
struct probe_http {
	enum probe_http_state state;
	size_t maxbody;
	int status;
	int interim; /* 1xx responses skipped so far */

	char head[PROBE_HTTP_MAX_HEAD]; /* status line and headers, CRLFs */
	size_t headlen;
	int crlfs; /* how much of "\r\n\r\n" ends head so far */

	uint64_t left; /* of the Content-Length, or of the chunk */
	char line[PROBE_HTTP_MAX_LINE];
	size_t linelen;

	uint8_t *body;
	size_t bodylen;
	size_t bodysize;
	int truncated;

	char err[PROBE_ERR_MAX];
};

void probe_http_init(struct probe_http *h, size_t maxbody);
void probe_http_free(struct probe_http *h);
/* Takes up to len bytes (*used of them); past the end of the response
 * (DONE) or a failure, takes nothing more. */
enum probe_verdict probe_http_feed(
    struct probe_http *h, const uint8_t *buf, size_t len, size_t *used);
/* The peer closed the connection. */
enum probe_verdict probe_http_eof(struct probe_http *h);
/* The value of the first header called name (without the spaces around
 * it; not NUL-terminated), or NULL. Only once the headers are parsed. */
const char *probe_http_header(
    const struct probe_http *h, const char *name, size_t *len);
/* A GET request for path, as probe_http_exchange sends it: headers (each
 * ending in CRLF) are added, and an Authorization with the bearer token if
 * token is not NULL. Freed with probe_free_secret. */
char *probe_http_request(const struct probe_addr *addr, const char *path,
    const char *token, const char *headers);
/* Sends req on io and reads until h holds the whole response. The bytes
 * read past its end (a WebSocket's first frames) are left at the start of
 * buf, *extra of them; buf must hold bufsize > 0 bytes. */
int probe_http_exchange(struct probe_io *io, const char *req,
    struct probe_http *h, uint8_t *buf, size_t bufsize, size_t *extra,
    char **cause);
extern const struct probe_type probe_http_type;

/* probe_rfb.c */
#define PROBE_RFB_MAX_TEXT 4096 /* a reason or a desktop name */
/* The longest message the check waits for whole: a 3.8 failed
 * SecurityResult with its reason. Pixels, cut texts and colour maps are
 * passed over as they come, never held. */
#define PROBE_RFB_MAX_MSG (8 + PROBE_RFB_MAX_TEXT)

enum probe_rfb_state {
	PROBE_RFB_VERSION,
	PROBE_RFB_TYPES,  /* 3.7 and 3.8: a count and a list */
	PROBE_RFB_TYPE33, /* 3.3: the server's choice, a u32 */
	PROBE_RFB_RESULT,
	PROBE_RFB_SERVERINIT,
	PROBE_RFB_MESSAGE, /* the head of a server message */
	PROBE_RFB_RECT,    /* the head of an update's next rectangle */
	PROBE_RFB_SKIP,    /* pixels, a cut text or colours, passed over */
	PROBE_RFB_DONE,
	PROBE_RFB_FAILED,
};

/*
 * The client side of RFB (RFC 6143): the handshake up to ServerInit, then
 * a request for the pixel at 0,0 (Raw), done when an update carries it.
 * Each probe_rfb_step takes at most one whole message head (or bytes to
 * pass over) from the start of the bytes received and may leave bytes in
 * out, which the caller sends before it steps again. The caller provides
 * the struct; nothing is allocated.
 */
struct probe_rfb {
	enum probe_rfb_state state;
	int minor;       /* the version spoken: 3, 7 or 8 */
	unsigned want_w; /* 0: any size */
	unsigned want_h;
	unsigned width;
	unsigned height;
	unsigned bpp;   /* bits per pixel, of ServerInit's format */
	int updating;   /* inside a FramebufferUpdate */
	unsigned rects; /* of that update, still to come */
	int origin;     /* that update carries the pixel at 0,0 */
	uint64_t skip;  /* bytes still to pass over */
	uint8_t out[32];
	size_t outlen;
	char err[PROBE_ERR_MAX];
};

void probe_rfb_init(struct probe_rfb *r, unsigned want_w, unsigned want_h);
enum probe_verdict probe_rfb_step(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used);
/* What the check waits for, for messages. */
const char *probe_rfb_awaited(const struct probe_rfb *r);
extern const struct probe_type probe_rfb_type;

/* probe_ws.c */
#define PROBE_WS_MAX_MSG (64 * 1024) /* one message, however framed */
/* What is read at once: a whole frame fits, payload and longest header. */
#define PROBE_WS_IN (PROBE_WS_MAX_MSG + 14)

enum probe_ws_opcode {
	PROBE_WS_CONT = 0x0,
	PROBE_WS_TEXT = 0x1,
	PROBE_WS_BINARY = 0x2,
	PROBE_WS_CLOSE = 0x8,
	PROBE_WS_PING = 0x9,
	PROBE_WS_PONG = 0xa,
};

/* One frame from the server, as probe_ws_frame found it. */
struct probe_ws_frame {
	int fin;
	int opcode;
	size_t hdrlen;
	size_t len; /* of the payload, after hdrlen */
};

/* A message being put together from frames, into buf (PROBE_WS_MAX_MSG
 * bytes, the owner's). */
struct probe_ws_msg {
	uint8_t *buf;
	size_t len;
	int opcode; /* text or binary, as its first frame said */
	int open;   /* a first frame came, not yet the final one */
};

/*
 * The client end of one WebSocket over a probe_io: what was read and not
 * yet used, and the message being put together. probe_ws_init allocates
 * the buffers and probe_ws_free frees them; the caller owns the struct.
 */
struct probe_ws {
	uint8_t *in; /* PROBE_WS_IN bytes */
	size_t inlen;
	struct probe_ws_msg msg;
};

/* The frame at the start of buf: DONE when all of it is there. */
enum probe_verdict probe_ws_frame(const uint8_t *buf, size_t len,
    struct probe_ws_frame *f, char *err, size_t errsize);
/* Adds a whole frame to m: DONE when m holds a whole text or binary
 * message, MORE after a fragment or a ping or pong, FAIL on a close
 * frame (err gives its code) or a frame out of turn. */
enum probe_verdict probe_ws_take(struct probe_ws_msg *m,
    const struct probe_ws_frame *f, const uint8_t *payload, char *err,
    size_t errsize);
void probe_ws_init(struct probe_ws *ws);
void probe_ws_free(struct probe_ws *ws);
/* The upgrade of a connected io to a WebSocket on path, with the bearer
 * token if it is not NULL and no subprotocol. */
int probe_ws_upgrade(struct probe_io *io, struct probe_ws *ws,
    const struct probe_addr *addr, const char *path, const char *token,
    char **cause);
/* One masked frame (payload under 126 bytes). */
int probe_ws_send(struct probe_io *io, int opcode, const void *payload,
    size_t len, char **cause);
/* Reads until ws->msg holds a whole message. */
int probe_ws_recv(struct probe_io *io, struct probe_ws *ws, char **cause);
/* A close frame, politely; a failure to send it does not matter. */
void probe_ws_close(struct probe_io *io);

/* probe_cdp.c */
#define PROBE_CDP_MAX_JSON PROBE_WS_MAX_MSG /* /json/version too */
#define PROBE_CDP_MAX_PATH 1024
#define PROBE_CDP_MAX_AUTHORITY 256

/* The authority (HOST:PORT) and path of webSocketDebuggerUrl in a
 * /json/version document, each NUL-terminated into its buffer. DONE or
 * FAIL. */
enum probe_verdict probe_cdp_ws_url(const char *json, size_t len,
    char *authority, size_t authsize, char *path, size_t pathsize, char *err,
    size_t errsize);
/* One message from the browser: DONE if it answers Browser.getVersion
 * with a product, MORE if it is about something else. */
enum probe_verdict probe_cdp_answer(
    const char *json, size_t len, char *err, size_t errsize);
extern const struct probe_type probe_cdp_type;
extern const struct probe_type probe_cdp_ws_type;

/* probe_novnc.c */
#define PROBE_NOVNC_BANNER 12 /* "RFB 003.00x\n" */

/* Adds the start of a binary message from the relay to the banner
 * (*have of PROBE_NOVNC_BANNER bytes so far): MORE until it is whole,
 * then DONE if it is an RFB 3.x banner, FAIL if not. */
enum probe_verdict probe_novnc_banner(uint8_t *banner, size_t *have,
    const uint8_t *msg, size_t len, char *err, size_t errsize);
extern const struct probe_type probe_novnc_type;

#endif
