/* serve: berth-desktop's side of the desktop ops (see serve.h). Owns the
 * serving connection to berthd, its buffers and the op table. */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "clock.h"
#include "frame.h"
#include "log.h"
#include "packcheck.h"
#include "serve.h"
#include "xmalloc.h"

#define SERVE_BACKOFF_MIN_MS 100
#define SERVE_BACKOFF_MAX_MS 5000
/* The ids of serve's own requests: hello, then desktop.provide. */
#define SERVE_HELLO_ID 1
#define SERVE_PROVIDE_ID 2

struct serve_op {
	serve_op_cb cb; /* NULL: not added */
	void *arg;
};

/* A request of berth-desktop's own, waiting for its answer. */
struct serve_asked {
	uint64_t id;
	serve_answer_cb cb;
	void *arg;
};

struct serve {
	char *path;
	int fd;        /* -1 while not connected */
	int handed;    /* berthd's handed fd, not yet used; -1: none */
	bool started;  /* serve_start found every op added */
	bool provided; /* berthd took desktop.provide */
	uint64_t gen;
	uint64_t retry_at;
	struct backoff backoff;
	struct serve_op ops[CATALOG_NOPS]; /* by id */
	uint8_t *in; /* bytes read, not yet a whole frame */
	size_t inlen, incap;
	uint8_t *out; /* bytes to write, from outoff on */
	size_t outoff, outlen, outcap;
	struct serve_asked asked[SERVE_ASKED_MAX];
	size_t nasked;
	uint64_t next_id;   /* of the next request of its own */
	msgpack_sbuffer sb; /* the answer being packed */
	msgpack_packer pk;
	uint64_t reply_id;
	const char *serving; /* the op being dispatched, to name it */
};

struct serve *
serve_create(const char *path)
{
	struct serve *sv = xcalloc(1, sizeof *sv);

	sv->path = path != NULL ? xstrdup(path) : NULL;
	sv->fd = -1;
	sv->handed = -1;
	backoff_init(&sv->backoff, SERVE_BACKOFF_MIN_MS, SERVE_BACKOFF_MAX_MS);
	msgpack_sbuffer_init(&sv->sb);
	msgpack_packer_init(&sv->pk, &sv->sb, msgpack_sbuffer_write);
	return sv;
}

struct serve *
serve_adopt(int fd)
{
	struct serve *sv = serve_create(NULL);

	sv->path = xasprintf("berthd's connection (fd %d)", fd);
	sv->handed = fd;
	return sv;
}

static void
serve_close(struct serve *sv)
{
	struct serve_asked a;

	if (sv->fd != -1)
		close(sv->fd);
	sv->fd = -1;
	/* Answers that will never come: said once, as none. */
	while (sv->nasked > 0) {
		a = sv->asked[--sv->nasked];
		a.cb(sv, NULL, a.arg);
	}
	sv->provided = false;
	sv->inlen = sv->outoff = sv->outlen = 0;
}

void
serve_free(struct serve *sv)
{
	serve_close(sv);
	msgpack_sbuffer_destroy(&sv->sb);
	free(sv->in);
	free(sv->out);
	free(sv->path);
	free(sv);
}

void
serve_add(struct serve *sv, enum catalog_op_id op, serve_op_cb cb, void *arg)
{
	if (catalog_ops[op].server != CATALOG_DESKTOP)
		log_fatal("%s: %s is not berth-desktop's op", __func__,
		    catalog_ops[op].name);
	if (sv->ops[op].cb != NULL)
		log_fatal("%s: %s added twice", __func__, catalog_ops[op].name);
	sv->ops[op] = (struct serve_op){cb, arg};
}

void
serve_start(struct serve *sv)
{
	size_t i;

	for (i = 0; i < CATALOG_NOPS; i++)
		if (catalog_ops[i].server == CATALOG_DESKTOP &&
		    sv->ops[i].cb == NULL)
			log_fatal("berth-desktop serves no %s, which the "
			          "catalog gives it",
			    catalog_ops[i].name);
	sv->started = true;
}

uint64_t
serve_generation(const struct serve *sv)
{
	return sv->gen;
}

/* The connection failed: it goes, and the next try waits. */
static void __attribute__((format(printf, 2, 3)))
serve_fail(struct serve *sv, const char *fmt, ...)
{
	unsigned wait = backoff_next(&sv->backoff);
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* Only the first failure in a row is news: the first wait is the
	 * floor, every later one more. */
	if (wait == SERVE_BACKOFF_MIN_MS)
		log_warn("serving the desktop ops: %s", msg);
	else
		log_debug("serving the desktop ops: %s", msg);
	serve_close(sv);
	sv->retry_at = clock_mono_ms() + wait;
}

/* Queues one framed message. */
static void
serve_queue(struct serve *sv, const void *msg, size_t len)
{
	uint8_t hdr[FRAME_HDR];

	PACKCHECK_SENT(msg, len, sv->serving);
	if (sv->fd == -1)
		return;
	if (sv->outoff > 0) {
		memmove(sv->out, sv->out + sv->outoff, sv->outlen);
		sv->outoff = 0;
	}
	if (sv->outlen + FRAME_HDR + len > sv->outcap) {
		sv->outcap = sv->outlen + FRAME_HDR + len + 65536;
		sv->out = xrealloc(sv->out, sv->outcap);
	}
	frame_header(hdr, (uint32_t)len);
	memcpy(sv->out + sv->outlen, hdr, FRAME_HDR);
	memcpy(sv->out + sv->outlen + FRAME_HDR, msg, len);
	sv->outlen += FRAME_HDR + len;
}

/* Queues a request of serve's own: hello or desktop.provide. */
static void
serve_queue_request(struct serve *sv, uint64_t id, const char *op)
{
	msgpack_sbuffer_clear(&sv->sb);
	proto_pack_request(&sv->pk, id, op);
	if (id == SERVE_HELLO_ID) {
		msgpack_pack_map(&sv->pk, 2);
		proto_pack_kv_str(&sv->pk, "version", PROTO_VERSION);
		proto_pack_kv_str(&sv->pk, "client", "berth-desktop");
	} else
		msgpack_pack_map(&sv->pk, 0);
	serve_queue(sv, sv->sb.data, sv->sb.size);
}

/* A new connection: hello and desktop.provide go first. */
static void
serve_greet(struct serve *sv)
{
	sv->gen++;
	sv->next_id = SERVE_PROVIDE_ID + 1;
	serve_queue_request(sv, SERVE_HELLO_ID, "hello");
	serve_queue_request(sv, SERVE_PROVIDE_ID, "desktop.provide");
}

void
serve_connect(struct serve *sv)
{
	struct sockaddr_un sa;

	if (!sv->started || sv->path == NULL || sv->fd != -1 ||
	    clock_mono_ms() < sv->retry_at)
		return;
	if (sv->handed == SERVE_HANDED_GONE)
		log_fatal("serving the desktop ops: %s is gone", sv->path);
	if (sv->handed >= 0) {
		sv->fd = sv->handed;
		sv->handed = SERVE_HANDED_GONE;
		fcntl(sv->fd, F_SETFD, FD_CLOEXEC);
		fcntl(sv->fd, F_SETFL, fcntl(sv->fd, F_GETFL) | O_NONBLOCK);
		serve_greet(sv);
		return;
	}
	if (strlen(sv->path) >= sizeof sa.sun_path) {
		serve_fail(sv, "socket path too long: %s", sv->path);
		return;
	}
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, sv->path, strlen(sv->path) + 1);
	sv->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sv->fd == -1) {
		serve_fail(sv, "socket: %s", strerror(errno));
		return;
	}
	if (connect(sv->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		serve_fail(
		    sv, "cannot connect to %s: %s", sv->path, strerror(errno));
		return;
	}
	serve_greet(sv);
}

int
serve_fd(const struct serve *sv)
{
	return sv->fd;
}

short
serve_events(const struct serve *sv)
{
	return (short)(POLLIN | (sv->outlen > 0 ? POLLOUT : 0));
}

int
serve_wait_ms(const struct serve *sv, uint64_t now)
{
	if (!sv->started || sv->path == NULL || sv->fd != -1)
		return -1;
	return sv->retry_at > now ? (int)(sv->retry_at - now) : 0;
}

msgpack_packer *
serve_reply_begin(struct serve *sv, uint64_t id)
{
	msgpack_sbuffer_clear(&sv->sb);
	proto_pack_result(&sv->pk, id);
	sv->reply_id = id;
	return &sv->pk;
}

void
serve_reply_end(struct serve *sv)
{
	if (sv->sb.size > SERVE_REPLY_MAX) {
		serve_reply_error(sv, sv->reply_id, PROTO_E_TOO_LARGE,
		    "the answer would take %zu bytes, more than %u",
		    sv->sb.size, (unsigned)SERVE_REPLY_MAX);
		return;
	}
	serve_queue(sv, sv->sb.data, sv->sb.size);
}

void
serve_reply_error(
    struct serve *sv, uint64_t id, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	msgpack_sbuffer_clear(&sv->sb);
	proto_pack_error(&sv->pk, id, code, "%s", msg);
	serve_queue(sv, sv->sb.data, sv->sb.size);
}

int
serve_request(struct serve *sv, const char *op, serve_pack_cb pack, void *ctx,
    serve_answer_cb cb, void *arg)
{
	if (sv->fd == -1 || !sv->provided || sv->nasked == SERVE_ASKED_MAX)
		return -1;
	sv->asked[sv->nasked++] = (struct serve_asked){sv->next_id, cb, arg};
	msgpack_sbuffer_clear(&sv->sb);
	proto_pack_request(&sv->pk, sv->next_id++, op);
	pack(&sv->pk, ctx);
	serve_queue(sv, sv->sb.data, sv->sb.size);
	return 0;
}

/* The answer to a request of its own, to whoever asked. */
static void
serve_asked_answer(struct serve *sv, const struct proto_msg *m)
{
	struct serve_asked a;
	size_t i;

	for (i = 0; i < sv->nasked; i++)
		if (sv->asked[i].id == m->id) {
			a = sv->asked[i];
			sv->asked[i] = sv->asked[--sv->nasked];
			a.cb(sv, m, a.arg);
			return;
		}
}

/* An answer to serve's own requests: anything but ok for hello or
 * desktop.provide ends the try. */
static void
serve_answer(struct serve *sv, const struct proto_msg *m)
{
	if (m->id != SERVE_HELLO_ID && m->id != SERVE_PROVIDE_ID) {
		serve_asked_answer(sv, m);
		return;
	}
	if (!m->ok) {
		serve_fail(sv, "berthd refused %s: %s: %s",
		    m->id == SERVE_HELLO_ID ? "hello" : "desktop.provide",
		    m->err_code, m->err_message);
		return;
	}
	if (m->id == SERVE_PROVIDE_ID) {
		sv->provided = true;
		backoff_reset(&sv->backoff);
		log_info("serving the desktop ops for berthd");
	}
}

static void
serve_dispatch(struct serve *sv, const struct proto_msg *m)
{
	enum catalog_op_id id = catalog_op_find(m->op);

	if (id == CATALOG_NOPS || sv->ops[id].cb == NULL) {
		serve_reply_error(sv, m->id, PROTO_E_UNKNOWN_OP,
		    "berth-desktop does not serve \"%s\"", m->op);
		return;
	}
	sv->serving = m->op;
	sv->ops[id].cb(sv, m->id, m->args, sv->ops[id].arg);
	sv->serving = NULL;
}

/* Decodes and handles every whole frame read. */
static void
serve_frames(struct serve *sv)
{
	struct proto_msg m;
	const char *code;
	char err[256];
	size_t used = 0, plen;

	while (sv->fd != -1 && sv->inlen - used >= FRAME_HDR) {
		plen = frame_length(sv->in + used);
		if (plen > PROTO_MAX_MSG) {
			serve_fail(
			    sv, "berthd sent a frame of %zu bytes", plen);
			return;
		}
		if (sv->inlen - used < FRAME_HDR + plen)
			break;
		if (proto_decode(sv->in + used + FRAME_HDR, plen, &m, &code,
		        err, sizeof err) < 0) {
			serve_fail(sv, "berthd sent a bad message: %s", err);
			return;
		}
		used += FRAME_HDR + plen;
		if (m.type == PROTO_RESPONSE)
			serve_answer(sv, &m);
		else if (m.type == PROTO_REQUEST && sv->provided)
			serve_dispatch(sv, &m);
		proto_msg_free(&m);
	}
	if (sv->fd == -1)
		return;
	memmove(sv->in, sv->in + used, sv->inlen - used);
	sv->inlen -= used;
}

static void
serve_read(struct serve *sv)
{
	ssize_t n;

	if (sv->incap - sv->inlen < 65536) {
		sv->incap = sv->incap == 0 ? 1 << 20 : sv->incap * 2;
		if (sv->incap > 2 * (FRAME_HDR + PROTO_MAX_MSG))
			sv->incap = 2 * (FRAME_HDR + PROTO_MAX_MSG);
		sv->in = xrealloc(sv->in, sv->incap);
	}
	n = recv(sv->fd, sv->in + sv->inlen, sv->incap - sv->inlen, 0);
	if (n > 0) {
		sv->inlen += (size_t)n;
		serve_frames(sv);
	} else if (n == 0)
		serve_fail(sv, "berthd closed the connection");
	else if (errno != EAGAIN && errno != EINTR)
		serve_fail(sv, "reading from berthd: %s", strerror(errno));
}

static void
serve_write(struct serve *sv)
{
	ssize_t n;

	n = send(sv->fd, sv->out + sv->outoff, sv->outlen, MSG_NOSIGNAL);
	if (n > 0) {
		sv->outoff += (size_t)n;
		sv->outlen -= (size_t)n;
	} else if (n < 0 && errno != EAGAIN && errno != EINTR)
		serve_fail(sv, "writing to berthd: %s", strerror(errno));
}

void
serve_io(struct serve *sv, short revents)
{
	if (sv->fd != -1 && (revents & (POLLIN | POLLHUP | POLLERR)))
		serve_read(sv);
	if (sv->fd != -1 && sv->outlen > 0)
		serve_write(sv);
}
