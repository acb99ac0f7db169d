/* report: check.report to berthd over its Unix socket (length-prefixed
 * berth.v1 messages). Owns the connection and the last state reported. */
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

#include "clock.h"
#include "frame.h"
#include "log.h"
#include "packcheck.h"
#include "proto.h"
#include "report.h"
#include "xmalloc.h"

/* What one message from berthd was to the request awaited. */
enum report_answer {
	REPORT_OTHER,  /* not the answer: ignored */
	REPORT_OK,     /* the answer, a success */
	REPORT_REFUSED /* the answer, an error */
};

struct report *
report_create(const char *path, const char *check, char **cause)
{
	struct sockaddr_un sa;
	struct report *rp;

	if (path != NULL && strlen(path) >= sizeof sa.sun_path) {
		*cause = xasprintf("socket path too long (at most %zu bytes): "
		                   "%s",
		    sizeof sa.sun_path - 1, path);
		return NULL;
	}
	rp = xcalloc(1, sizeof *rp);
	rp->path = path != NULL ? xstrdup(path) : NULL;
	rp->check = xstrdup(check);
	rp->fd = -1;
	rp->handed = -1;
	rp->next_id = 1;
	backoff_init(
	    &rp->backoff, REPORT_BACKOFF_MIN_MS, REPORT_BACKOFF_MAX_MS);
	return rp;
}

struct report *
report_adopt(int fd, const char *check)
{
	struct report *rp;
	char *path = xasprintf("berthd's connection (fd %d)", fd);
	char *cause = NULL;

	rp = report_create(NULL, check, &cause);
	rp->path = path;
	rp->handed = fd;
	return rp;
}

static void
report_close(struct report *rp)
{
	if (rp->fd != -1)
		close(rp->fd);
	rp->fd = -1;
	rp->rlen = 0;
	rp->acked = false;
}

void
report_free(struct report *rp)
{
	report_close(rp);
	free(rp->path);
	free(rp->check);
	free(rp->reason);
	free(rp->said);
	free(rp);
}

/* A failed try: the connection goes, and the next try waits. A failure
 * that repeats the last one (berthd away for a while) is logged quietly. */
static void __attribute__((format(printf, 2, 3)))
report_fail(struct report *rp, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		log_fatal("%s: out of memory", __func__);
	va_end(ap);
	if (rp->said != NULL && strcmp(rp->said, msg) == 0)
		log_debug("%s: %s", __func__, msg);
	else
		log_warn("reporting check %s: %s", rp->check, msg);
	free(rp->said);
	rp->said = msg;
	report_close(rp);
	rp->retry_at = clock_mono_ms() + backoff_next(&rp->backoff);
}

void
report_set(struct report *rp, bool ok, const char *reason)
{
	size_t len = strlen(reason);

	/* Cut where a UTF-8 sequence starts, never inside one. */
	if (len > REPORT_REASON_MAX) {
		len = REPORT_REASON_MAX;
		while (len > 0 && ((unsigned char)reason[len] & 0xc0) == 0x80)
			len--;
	}
	if (rp->have && rp->ok == ok && strlen(rp->reason) == len &&
	    strncmp(rp->reason, reason, len) == 0)
		return;
	free(rp->reason);
	rp->reason = xstrndup(reason, len);
	rp->ok = ok;
	rp->have = true;
	rp->acked = false;
	log_info("check %s: %s%s%s", rp->check, ok ? "ok" : "not ok",
	    rp->reason[0] != '\0' ? ": " : "", rp->reason);
}

static int
report_connect(struct report *rp)
{
	struct sockaddr_un sa;

	/* berthd hands one connection per start: once it is gone, only a
	 * new start (which berthd makes) brings another. */
	if (rp->handed == REPORT_HANDED_GONE)
		log_fatal(
		    "reporting check %s: %s is gone", rp->check, rp->path);
	if (rp->handed >= 0) {
		rp->fd = rp->handed;
		rp->handed = REPORT_HANDED_GONE;
		fcntl(rp->fd, F_SETFD, FD_CLOEXEC);
		return 0;
	}
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, rp->path, strlen(rp->path) + 1);
	rp->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (rp->fd == -1) {
		report_fail(rp, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(rp->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		report_fail(
		    rp, "cannot connect to %s: %s", rp->path, strerror(errno));
		return -1;
	}
	log_debug("%s: connected to %s", __func__, rp->path);
	return 0;
}

/* Milliseconds left until deadline, at least 0. */
static int
report_left(uint64_t deadline)
{
	uint64_t now = clock_mono_ms();

	return now >= deadline ? 0 : (int)(deadline - now);
}

static int
report_write(struct report *rp, const void *buf, size_t len, uint64_t deadline)
{
	const unsigned char *p = buf;
	struct pollfd pfd;
	ssize_t n;

	while (len > 0) {
		n = send(rp->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			report_fail(
			    rp, "sending to %s: %s", rp->path, strerror(errno));
			return -1;
		}
		pfd.fd = rp->fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, report_left(deadline)) == 0) {
			report_fail(rp, "%s takes no more bytes", rp->path);
			return -1;
		}
	}
	return 0;
}

/* Reads what is there (waiting up to wait_ms). Returns 0, or -1 with the
 * connection closed: berthd closed it, or it failed. */
static int
report_fill(struct report *rp, int wait_ms)
{
	struct pollfd pfd = {.fd = rp->fd, .events = POLLIN};
	ssize_t n;
	int r;

	r = poll(&pfd, 1, wait_ms);
	if (r <= 0)
		return 0;
	n = recv(rp->fd, rp->rbuf + rp->rlen, sizeof rp->rbuf - rp->rlen,
	    MSG_DONTWAIT);
	if (n > 0) {
		rp->rlen += (size_t)n;
		return 0;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n == 0)
		report_fail(rp, "berthd closed the connection");
	else
		report_fail(
		    rp, "reading from %s: %s", rp->path, strerror(errno));
	return -1;
}

/* What msg is to the request with id want (0: none awaited). */
static enum report_answer
report_answer(struct report *rp, const struct proto_msg *msg, uint64_t want)
{
	if (msg->type != PROTO_RESPONSE || want == 0 || msg->id != want) {
		log_debug("%s: ignored a message nobody asked for", __func__);
		return REPORT_OTHER;
	}
	if (msg->ok)
		return REPORT_OK;
	report_fail(
	    rp, "berthd refused it: %s: %s", msg->err_code, msg->err_message);
	return REPORT_REFUSED;
}

/*
 * Takes the whole messages from the read buffer, looking for the answer to
 * the request with id want. Returns 1 (the answer, a success), 0 (not
 * there yet), or -1 (refused, or a message that breaks the protocol: the
 * connection is closed).
 */
static int
report_take(struct report *rp, uint64_t want)
{
	enum report_answer a = REPORT_OTHER;
	struct proto_msg msg;
	const uint8_t *payload;
	const char *code;
	char err[128];
	size_t plen, used;

	while (a == REPORT_OTHER) {
		switch (frame_parse(
		    rp->rbuf, rp->rlen, REPORT_MAX_MSG, &payload, &plen)) {
		case FRAME_NEED_MORE: return 0;
		case FRAME_TOO_LARGE:
			report_fail(rp, "berthd sent %u bytes (at most %d)",
			    frame_length(rp->rbuf), REPORT_MAX_MSG);
			return -1;
		case FRAME_OK: break;
		}
		used = FRAME_HDR + plen;
		if (proto_decode(payload, plen, &msg, &code, err, sizeof err) <
		    0) {
			report_fail(rp, "berthd sent a bad message: %s", err);
			return -1;
		}
		a = report_answer(rp, &msg, want);
		proto_msg_free(&msg);
		if (a == REPORT_REFUSED)
			return -1;
		memmove(rp->rbuf, rp->rbuf + used, rp->rlen - used);
		rp->rlen -= used;
	}
	return 1;
}

static size_t
report_pack(struct report *rp, uint64_t id, msgpack_sbuffer *sb)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	proto_pack_request(&pk, id, "check.report");
	msgpack_pack_map(&pk, 3);
	proto_pack_kv_str(&pk, "name", rp->check);
	proto_pack_kv_bool(&pk, "ok", rp->ok);
	proto_pack_kv_str(&pk, "reason", rp->reason);
	return sb->size;
}

/* One request and its answer, within timeout_ms. */
static void
report_send(struct report *rp, int timeout_ms)
{
	uint64_t deadline = clock_mono_ms() + (uint64_t)timeout_ms;
	uint64_t id = rp->next_id++;
	uint8_t hdr[FRAME_HDR];
	msgpack_sbuffer sb;
	int r = 0;

	msgpack_sbuffer_init(&sb);
	frame_header(hdr, (uint32_t)report_pack(rp, id, &sb));
	PACKCHECK_SENT(sb.data, sb.size, NULL);
	if (report_write(rp, hdr, sizeof hdr, deadline) < 0 ||
	    report_write(rp, sb.data, sb.size, deadline) < 0) {
		msgpack_sbuffer_destroy(&sb);
		return;
	}
	msgpack_sbuffer_destroy(&sb);
	while ((r = report_take(rp, id)) == 0) {
		if (report_left(deadline) == 0) {
			report_fail(rp, "no answer from berthd within %d ms",
			    timeout_ms);
			return;
		}
		if (report_fill(rp, report_left(deadline)) < 0)
			return;
	}
	if (r < 0)
		return;
	rp->acked = true;
	backoff_reset(&rp->backoff);
	free(rp->said);
	rp->said = NULL;
	log_debug("%s: berthd holds check %s", __func__, rp->check);
}

void
report_flush(struct report *rp, int timeout_ms)
{
	if (report_wait_ms(rp, clock_mono_ms()) != 0)
		return;
	if (rp->fd == -1 && report_connect(rp) < 0)
		return;
	report_send(rp, timeout_ms);
}

void
report_last(struct report *rp, const char *reason, int timeout_ms)
{
	report_set(rp, false, reason);
	rp->retry_at = 0;
	report_flush(rp, timeout_ms);
}

int
report_fd(const struct report *rp)
{
	return rp->fd;
}

void
report_read(struct report *rp)
{
	if (rp->fd == -1 || report_fill(rp, 0) < 0)
		return;
	/* Nothing is awaited: whatever came is read and let go. The buffer
	 * holds the largest message allowed, so taking always makes room. */
	report_take(rp, 0);
}

int
report_wait_ms(const struct report *rp, uint64_t now)
{
	if (rp->path == NULL || !rp->have || rp->acked)
		return -1;
	if (rp->fd != -1 || rp->retry_at <= now)
		return 0;
	return (int)(rp->retry_at - now);
}
