/* cli_xfer: the transfer engine of berth's streaming commands (see
 * cli_xfer.h): capped doubling between tries, one limit, a signal that
 * ends the pauses; a queue of requests in flight; a read that asks ahead
 * and resumes at the byte it reached; a temp file renamed into place. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "cli_print.h"
#include "cli_xfer.h"
#include "clock.h"
#include "xmalloc.h"

/* The longest name of a file, the temp's "." and suffix included. */
#define CLI_XFER_NAME_MAX 255

/* The signal that interrupted the run, to exit with. */
static volatile sig_atomic_t cli_xfer_caught;

/* Whether another try may mend what this one met: a connection that
 * broke, or an answer that did not come in time. */
static bool
cli_xfer_retryable(int status)
{
	return status == CLI_CONN_LOST || status == CLI_CONN_TIMEOUT;
}

static int
cli_xfer_pause(struct cli_xfer_outage *o, int ms)
{
	if (o->pause != NULL)
		return o->pause(o->arg, ms);
	return cli_conn_pause(ms);
}

int
cli_xfer_mend(
    struct cli *cli, struct cli_xfer_outage *o, char *why, char **cause)
{
	uint64_t limit = (uint64_t)(cli->timeout_ms > CLI_XFER_RECONNECT_MS
	        ? cli->timeout_ms
	        : CLI_XFER_RECONNECT_MS);
	uint64_t give_up = clock_mono_ms() + limit;
	struct backoff b;
	int status, ms = 0;

	backoff_init(&b, CLI_XFER_BACKOFF_MIN_MS, CLI_XFER_BACKOFF_MAX_MS);
	for (o->tries = 0;;) {
		if ((status = cli_xfer_pause(o, ms)) != CLI_CONN_OK) {
			*cause = xstrdup("interrupted");
			break;
		}
		o->tries++;
		status = o->retry(o->arg, cause);
		if (status == CLI_CONN_OK || !cli_xfer_retryable(status) ||
		    (!o->forever && clock_mono_ms() >= give_up))
			break;
		free(*cause);
		if (o->tries == 1 && o->quiet)
			cli_print_warn("%s; reconnecting", why);
		ms = (int)backoff_next(&b);
	}
	free(why);
	return status;
}

static void
cli_xfer_caught_cb(int sig)
{
	cli_xfer_caught = sig;
	cli_conn_interrupt();
}

void
cli_xfer_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cli_xfer_caught_cb;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int
cli_xfer_exit(int status, char *cause)
{
	if (status == CLI_CONN_INTERRUPTED && cli_xfer_caught != 0) {
		free(cause);
		return CLI_EXIT_SIGNAL + cli_xfer_caught;
	}
	return cli_fail(status, cause);
}

int
cli_xfer_write(int fd, const void *buf, size_t len)
{
	struct pollfd pfd = {fd, POLLOUT, 0};
	const uint8_t *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			poll(&pfd, 1, -1);
			continue;
		}
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
cli_xfer_turn(struct cli_conn *conn, const struct cli_xfer_talk *t, void *arg,
    char **cause)
{
	const struct proto_msg *m;
	int status;

	if ((status = t->flush(arg, cause)) == CLI_CONN_OK &&
	    (status = cli_conn_recv(conn, t->slice(arg), &m, cause)) ==
	        CLI_CONN_OK)
		return t->handle(arg, m, cause);
	if (status != CLI_CONN_TIMEOUT)
		return status;
	free(*cause);
	return CLI_CONN_OK;
}

/* ---- the link ---- */

void
cli_xfer_link_init(struct cli_xfer_link *l, struct cli *cli)
{
	memset(l, 0, sizeof *l);
	l->cli = cli;
	l->rid = CLI_CONN_RAW_ID;
}

int
cli_xfer_open(struct cli_xfer_link *l, char **cause)
{
	int status;

	l->phead = l->npend = 0;
	if ((status = cli_open(l->cli, &l->conn, cause)) != CLI_CONN_OK)
		l->conn = NULL;
	return status;
}

void
cli_xfer_close(struct cli_xfer_link *l)
{
	cli_conn_forget(&l->conn);
	l->phead = l->npend = 0;
}

int
cli_xfer_push(struct cli_xfer_link *l, const char *op, cli_conn_pack_cb pack,
    void *ctx, const struct cli_xfer_req *req, char **cause)
{
	size_t slot;
	int status;

	status = cli_conn_push(l->conn, l->rid, op, pack, ctx, cause);
	if (status != CLI_CONN_OK)
		return status;
	slot = (l->phead + l->npend++) % CLI_XFER_PIPE;
	l->pend[slot] = *req;
	l->pend[slot].id = l->rid++;
	return CLI_CONN_OK;
}

int
cli_xfer_answer(struct cli_xfer_link *l, struct cli_xfer_req *req,
    const struct proto_msg **mp, char **cause)
{
	int status;

	for (;;) {
		status = cli_conn_recv(l->conn, l->cli->timeout_ms, mp, cause);
		if (status != CLI_CONN_OK)
			return status;
		if ((*mp)->type == PROTO_RESPONSE && l->npend > 0 &&
		    (*mp)->id == l->pend[l->phead].id)
			break;
	}
	*req = l->pend[l->phead];
	l->phead = (l->phead + 1) % CLI_XFER_PIPE;
	l->npend--;
	return CLI_CONN_OK;
}

/* What a link does to mend a transfer: connect again, then resume's
 * work on the new connection. */
struct cli_xfer_relink {
	struct cli_xfer_link *link;
	cli_xfer_retry_cb resume;
	void *arg;
};

static int
cli_xfer_relink_cb(void *arg, char **cause)
{
	struct cli_xfer_relink *r = arg;
	int status;

	if ((status = cli_xfer_open(r->link, cause)) != CLI_CONN_OK ||
	    r->resume == NULL)
		return status;
	if ((status = r->resume(r->arg, cause)) != CLI_CONN_OK)
		cli_xfer_close(r->link);
	return status;
}

int
cli_xfer_reconnect(struct cli_xfer_link *l, char *why, cli_xfer_retry_cb resume,
    void *arg, char **cause)
{
	struct cli_xfer_relink r = {l, resume, arg};
	struct cli_xfer_outage o = {
	    .quiet = true, .retry = cli_xfer_relink_cb, .arg = &r};
	int status;

	cli_xfer_close(l);
	status = cli_xfer_mend(l->cli, &o, why, cause);
	if (status == CLI_CONN_OK && o.tries > 1)
		cli_print_warn("reconnected; resuming");
	return status;
}

int
cli_xfer_pump(struct cli_xfer_link *l, const struct cli_xfer_pump *p, void *arg,
    char **cause)
{
	const struct proto_msg *m;
	struct cli_xfer_req req;
	int status;

	while (!p->done(arg)) {
		status = p->fill(arg, cause);
		if (status == CLI_CONN_OK)
			status = cli_xfer_answer(l, &req, &m, cause);
		if (status == CLI_CONN_OK)
			status = p->answered(arg, &req, m, cause);
		if (status == CLI_CONN_OK)
			continue;
		if (status != CLI_CONN_LOST)
			return status;
		status = cli_xfer_reconnect(l, *cause, p->resume, arg, cause);
		if (status != CLI_CONN_OK)
			return status;
	}
	return CLI_CONN_OK;
}

/* ---- the ranged read ---- */

static void
cli_xfer_pack_read_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_xfer_read *rd = ctx;

	msgpack_pack_map(pk, 3 + (rd->more != NULL ? rd->nmore : 0));
	proto_pack_kv_str(pk, rd->key, rd->name);
	proto_pack_kv_u64(pk, "offset", rd->next);
	proto_pack_kv_u64(pk, "length", CLI_XFER_READ_CHUNK);
	if (rd->more != NULL)
		rd->more(pk, rd->more_arg);
}

/* Asks for the next chunks, up to CLI_XFER_PIPE in flight: of a fixed
 * size what is left of it, of a file one at a time while its size is
 * unknown or all of it was asked for (it may have grown). */
static int
cli_xfer_read_fill_cb(void *arg, char **cause)
{
	struct cli_xfer_read *rd = arg;
	struct cli_xfer_req req = {.len = CLI_XFER_READ_CHUNK};
	int status;

	while (!rd->eof && rd->link.npend < CLI_XFER_PIPE &&
	    (rd->next < rd->size || (!rd->fixed && rd->next == rd->done))) {
		req.offset = rd->next;
		if (rd->fixed && rd->size - rd->next < CLI_XFER_READ_CHUNK)
			req.len = (size_t)(rd->size - rd->next);
		status = cli_xfer_push(
		    &rd->link, rd->op, cli_xfer_pack_read_cb, rd, &req, cause);
		if (status != CLI_CONN_OK)
			return status;
		rd->next += req.len;
	}
	return CLI_CONN_OK;
}

/* The bytes of one answer, in place: written, hashed and shown. */
static int
cli_xfer_read_take(
    struct cli_xfer_read *rd, const msgpack_object *data, char **cause)
{
	if (cli_xfer_write(rd->fd, data->via.bin.ptr, data->via.bin.size) !=
	    0) {
		*cause =
		    xasprintf("cannot write %s: %s", rd->out, strerror(errno));
		return CLI_CONN_ANSWERED;
	}
	if (rd->sha != NULL)
		sha256_update(rd->sha, data->via.bin.ptr, data->via.bin.size);
	rd->done += data->via.bin.size;
	if (rd->bar != NULL)
		cli_bar_draw(rd->bar, rd->done, false);
	return CLI_CONN_OK;
}

static int
cli_xfer_read_answered_cb(void *arg, const struct cli_xfer_req *req,
    const struct proto_msg *m, char **cause)
{
	struct cli_xfer_read *rd = arg;
	const msgpack_object *data;
	uint64_t offset, size;
	bool eof = false;
	int status;

	if (!m->ok)
		return cli_conn_refused(m, cause);
	data = proto_map_get(m->result, "data");
	if (data == NULL || data->type != MSGPACK_OBJECT_BIN ||
	    proto_arg_u64(m->result, "offset", &offset) != 1 ||
	    proto_arg_u64(m->result, "size", &size) != 1 ||
	    proto_arg_bool(m->result, "eof", &eof) != 1) {
		*cause = xasprintf(
		    "%s answered without data, offset, size and eof", rd->op);
		return CLI_CONN_PROTOCOL;
	}
	if (rd->fixed &&
	    (offset != req->offset || size != rd->size ||
	        data->via.bin.size != req->len)) {
		*cause = xasprintf("%s answered other bytes than the %zu at "
		                   "%" PRIu64 " asked for",
		    rd->op, req->len, req->offset);
		return CLI_CONN_PROTOCOL;
	}
	/* Stale: asked for past a short answer, or after the end. */
	if (rd->eof || offset != rd->done)
		return CLI_CONN_OK;
	if ((status = cli_xfer_read_take(rd, data, cause)) != CLI_CONN_OK)
		return status;
	if (rd->fixed) {
		rd->eof = rd->done == rd->size;
		return CLI_CONN_OK;
	}
	rd->size = size;
	if ((rd->eof = eof))
		return CLI_CONN_OK;
	if (data->via.bin.size == 0) {
		*cause = xasprintf("%s gave nothing before the end", rd->op);
		return CLI_CONN_PROTOCOL;
	}
	if (data->via.bin.size < req->len)
		rd->next = rd->done;
	return CLI_CONN_OK;
}

/* On a new connection the read asks again from the byte it reached. */
static int
cli_xfer_read_resume_cb(void *arg, char **cause)
{
	struct cli_xfer_read *rd = arg;

	(void)cause;
	rd->next = rd->done;
	return CLI_CONN_OK;
}

static bool
cli_xfer_read_done_cb(void *arg)
{
	struct cli_xfer_read *rd = arg;

	return rd->eof && rd->link.npend == 0;
}

static const struct cli_xfer_pump cli_xfer_read_pump = {
    .done = cli_xfer_read_done_cb,
    .fill = cli_xfer_read_fill_cb,
    .answered = cli_xfer_read_answered_cb,
    .resume = cli_xfer_read_resume_cb,
};

int
cli_xfer_read_run(struct cli_xfer_read *rd, char **cause)
{
	rd->next = rd->done;
	rd->eof = rd->fixed && rd->done >= rd->size;
	return cli_xfer_pump(&rd->link, &cli_xfer_read_pump, rd, cause);
}

/* ---- the landing ---- */

int
cli_xfer_land_open(struct cli_xfer_land *l, const char *target,
    const char *suffix, char **cause)
{
	const char *slash = strrchr(target, '/');
	const char *name = slash != NULL ? slash + 1 : target;
	size_t n = strlen(suffix);
	int keep = CLI_XFER_NAME_MAX - 1 - (int)n;

	l->target = target;
	l->temp =
	    xasprintf("%.*s.%.*s%s", slash != NULL ? (int)(name - target) : 0,
	        target, keep, name, suffix);
	if (n >= 6 && strcmp(suffix + n - 6, "XXXXXX") == 0)
		l->fd = mkostemp(l->temp, O_CLOEXEC);
	else
		l->fd = open(
		    l->temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (l->fd != -1)
		return 0;
	*cause = xasprintf("cannot write %s: %s", target, strerror(errno));
	free(l->temp);
	l->temp = NULL;
	return -1;
}

int
cli_xfer_land_commit(struct cli_xfer_land *l, unsigned mode, char **cause)
{
	mode_t mask = umask(0);
	int fd = l->fd;

	umask(mask);
	if (fchmod(fd, (mode_t)mode & ~mask) != 0 || fsync(fd) != 0)
		goto fail;
	l->fd = -1;
	if (close(fd) != 0 || rename(l->temp, l->target) != 0)
		goto fail;
	free(l->temp);
	l->temp = NULL;
	return 0;
fail:
	*cause = xasprintf("cannot write %s: %s", l->target, strerror(errno));
	cli_xfer_land_discard(l);
	return -1;
}

void
cli_xfer_land_discard(struct cli_xfer_land *l)
{
	int saved = errno;

	if (l->fd != -1)
		close(l->fd);
	if (l->temp != NULL)
		unlink(l->temp);
	free(l->temp);
	l->temp = NULL;
	l->fd = -1;
	errno = saved;
}
