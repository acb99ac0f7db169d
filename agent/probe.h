/* probe: berth-probe, the network readiness checks berthd runs as a child
 * (one per probed service) so that berthd never reads a network byte. The
 * checks' parsers work on buffers, apart from the socket I/O that feeds them.
 */
#ifndef BERTH_PROBE_H
#define BERTH_PROBE_H

#include <sys/types.h>
#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

/* Room for a parser's failure message; output lines are shorter anyway. */
#define PROBE_ERR_MAX 256

/* What a parser makes of the bytes it has been given so far. */
enum probe_verdict {
	PROBE_MORE, /* not finished: needs more bytes, or has some to send */
	PROBE_DONE, /* finished, and the peer said what was wanted */
	PROBE_FAIL, /* malformed or refused; the parser's err says why */
};

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
 * again within the same deadline.
 */
struct probe_io {
	int fd;
	uint64_t deadline; /* clock_mono_ms */
	int timeout_ms;    /* what the deadline was made of, for messages */
	const char *peer;  /* borrowed from the probe_addr */
	char doing[96];    /* what a timeout would interrupt */
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
/* Sends req on io and reads until h holds the whole response. The bytes
 * read past its end (a WebSocket's first frames) are left at the start of
 * buf, *extra of them; buf must hold bufsize > 0 bytes. */
int probe_http_exchange(struct probe_io *io, const char *req,
    struct probe_http *h, uint8_t *buf, size_t bufsize, size_t *extra,
    char **cause);
extern const struct probe_type probe_http_type;

/* probe_rfb.c */
#define PROBE_RFB_MAX_TEXT 4096 /* a reason or a desktop name */
/* The longest message the handshake waits for whole: a 3.8 failed
 * SecurityResult with its reason. */
#define PROBE_RFB_MAX_MSG (8 + PROBE_RFB_MAX_TEXT)

enum probe_rfb_state {
	PROBE_RFB_VERSION,
	PROBE_RFB_TYPES,  /* 3.7 and 3.8: a count and a list */
	PROBE_RFB_TYPE33, /* 3.3: the server's choice, a u32 */
	PROBE_RFB_RESULT,
	PROBE_RFB_SERVERINIT,
	PROBE_RFB_DONE,
	PROBE_RFB_FAILED,
};

/*
 * The client side of the RFB handshake (RFC 6143), up to ServerInit. Each
 * probe_rfb_step takes at most one whole message from the start of the
 * bytes received and may leave bytes in out, which the caller sends before
 * it steps again. The caller provides the struct; nothing is allocated.
 */
struct probe_rfb {
	enum probe_rfb_state state;
	int minor;       /* the version spoken: 3, 7 or 8 */
	unsigned want_w; /* 0: any size */
	unsigned want_h;
	unsigned width;
	unsigned height;
	uint8_t out[16];
	size_t outlen;
	char err[PROBE_ERR_MAX];
};

void probe_rfb_init(struct probe_rfb *r, unsigned want_w, unsigned want_h);
enum probe_verdict probe_rfb_step(
    struct probe_rfb *r, const uint8_t *buf, size_t len, size_t *used);
/* What the handshake waits for, for messages. */
const char *probe_rfb_awaited(const struct probe_rfb *r);
extern const struct probe_type probe_rfb_type;

/* probe_cdp.c */
#define PROBE_CDP_MAX_JSON (64 * 1024) /* /json/version, or one message */
#define PROBE_CDP_MAX_PATH 1024

/* One WebSocket frame from the browser, as probe_cdp_frame found it. */
struct probe_cdp_frame {
	int fin;
	int opcode;
	size_t hdrlen;
	size_t len; /* of the payload, after hdrlen */
};

/* The path of webSocketDebuggerUrl in a /json/version document, into
 * path (pathsize bytes, NUL-terminated). DONE or FAIL. */
enum probe_verdict probe_cdp_ws_path(const char *json, size_t len, char *path,
    size_t pathsize, char *err, size_t errsize);
/* The frame at the start of buf: DONE when all of it is there. */
enum probe_verdict probe_cdp_frame(const uint8_t *buf, size_t len,
    struct probe_cdp_frame *f, char *err, size_t errsize);
/* One message from the browser: DONE if it answers Browser.getVersion
 * with a product, MORE if it is about something else. */
enum probe_verdict probe_cdp_answer(
    const char *json, size_t len, char *err, size_t errsize);
extern const struct probe_type probe_cdp_type;

#endif
