/* cli_fs: berth cp, ls and cat. Transfers go in chunks of at most 4 MiB,
 * a few requests in flight; after a lost connection they resume at the
 * byte they had reached: an upload from what berthd says its partial
 * holds (fs.write {path}), a download from what was written here. A
 * download lands in a hidden file beside its target, renamed over it
 * once whole, as berthd does with an upload. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_fs.h"
#include "cli_print.h"
#include "cli_xfer.h"
#include "clock.h"
#include "xmalloc.h"

/* fs.write's largest chunk, and how many requests go unanswered. */
#define CLI_FS_CHUNK (4u << 20)
/* A download's chunks are smaller: the gateway holds at most client_queue
 * (8 MiB by default) of answers for a client, and drops one that has more
 * in flight, so four reads in flight stay well below it. */
#define CLI_FS_READ_CHUNK (1u << 20)
#define CLI_FS_PIPE 4
#define CLI_FS_PATH_MAX 4096
#define CLI_FS_NAME_MAX 255
#define CLI_FS_DEPTH_MAX 32
#define CLI_FS_DOWNLOAD_SUFFIX ".berth-download"
/* The ids of requests sent without waiting, far above those
 * cli_conn_request hands out, so that the two never meet. */
#define CLI_FS_RAW_ID (UINT64_C(1) << 32)
/* How often the progress bar is drawn again. */
#define CLI_FS_BAR_MS 200

/* A request sent without waiting, for the answer to say which. */
struct cli_fs_req {
	uint64_t id;
	uint64_t offset;
	size_t len;
	bool last; /* fs.write: done */
};

/*
 * A connection that is made again when lost. Requests sent without
 * waiting are answered in order: pend is a queue. Embedded in the
 * transfer that uses it; owns conn.
 */
struct cli_fs_link {
	struct cli *cli;
	struct cli_conn *conn;
	uint64_t rid; /* the id of the next request sent without waiting */
	struct cli_fs_req pend[CLI_FS_PIPE];
	size_t phead;
	size_t npend;
};

/* The progress of a copy on stderr, when stderr is a terminal. name is
 * owned. */
struct cli_fs_bar {
	bool on;
	char *name;
	uint64_t total;
	uint64_t started;
	uint64_t drawn;
	bool midline; /* a bar is drawn and its line not ended */
};

/*
 * An upload: chunk after chunk of the local fd to path, at most
 * CLI_FS_PIPE in flight; next is what goes next, acked what berthd's
 * partial is known to hold. The last chunk says done and sets the mode.
 * Allocated by cli_fs_upload; owns fd, path and buf.
 */
struct cli_fs_up {
	struct cli_fs_link link;
	char *path;
	int fd;
	uint64_t size;
	unsigned mode;
	uint64_t next;
	uint64_t acked;
	bool sent_last;
	bool finished;
	uint8_t *buf;
	struct cli_fs_req chunk; /* the one being packed */
	struct cli_fs_bar bar;
};

/*
 * A download, for cp and cat: fs.read after fs.read of path into fd,
 * written in order. done is what fd has; next is the offset of the next
 * request; size the file's size as last answered. A short answer makes
 * the requests after it stale (their offsets are not done): they are
 * read and dropped, and the next one asks from done.
 */
struct cli_fs_down {
	struct cli_fs_link link;
	const char *path;
	int fd;
	uint64_t done;
	uint64_t next;
	uint64_t size;
	bool eof;
	struct cli_fs_bar bar;
};

/* A path in the sandbox: absolute, as every fs.* op wants it. A leading
 * ':' (cp's mark) is allowed and skipped. */
static int
cli_fs_remote_path(struct cli *cli, const char *arg, const char **path)
{
	*path = arg[0] == ':' ? arg + 1 : arg;
	if ((*path)[0] != '/')
		return cli_usage(
		    cli, "a path in the sandbox must be absolute: %s", arg);
	if (strlen(*path) >= CLI_FS_PATH_MAX)
		return cli_usage(cli, "a path of at most %d bytes: %.64s...",
		    CLI_FS_PATH_MAX - 1, arg);
	return CLI_EXIT_OK;
}

/* The last component of path (trailing slashes aside), allocated; ""
 * for "/". */
static char *
cli_fs_basename(const char *path)
{
	size_t end = strlen(path), start;

	while (end > 0 && path[end - 1] == '/')
		end--;
	for (start = end; start > 0 && path[start - 1] != '/'; start--)
		;
	return xstrndup(path + start, end - start);
}

static char *
cli_fs_join(const char *dir, const char *name)
{
	size_t n = strlen(dir);

	return xasprintf(
	    "%s%s%s", dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name);
}

/* Names from the sandbox reach a terminal without control characters;
 * a pipe gets them as they are, as ls(1) does. */
static char *
cli_fs_shown(const char *s, bool tame)
{
	char *copy = xstrdup(s), *p;

	for (p = copy; tame && *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return copy;
}

/* ---- the progress bar ---- */

static void
cli_fs_bar_init(
    struct cli_fs_bar *b, bool quiet, const char *name, uint64_t total)
{
	memset(b, 0, sizeof *b);
	b->on = !quiet && isatty(STDERR_FILENO);
	b->name = cli_fs_shown(name, true);
	b->total = total;
	b->started = clock_mono_ms();
}

/* "12.5 MiB" */
static void
cli_fs_human(char *buf, size_t len, double n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	size_t u = 0;

	while (n >= 1024 && u < sizeof units / sizeof units[0] - 1) {
		n /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", n);
	else
		snprintf(buf, len, "%.1f %s", n, units[u]);
}

/* Draws the bar again if it is due (always when last), and ends its line
 * when last. */
static void
cli_fs_bar_draw(struct cli_fs_bar *b, uint64_t done, bool last)
{
	uint64_t now = clock_mono_ms(), pct;
	char have[32], all[32], rate[32];
	double secs;

	if (!b->on || (!last && now - b->drawn < CLI_FS_BAR_MS))
		return;
	b->drawn = now;
	secs = (double)(now - b->started) / 1000;
	pct = b->total == 0 ? 100 : done * 100 / b->total;
	cli_fs_human(have, sizeof have, (double)done);
	cli_fs_human(all, sizeof all, (double)b->total);
	cli_fs_human(rate, sizeof rate, secs > 0 ? (double)done / secs : 0);
	fprintf(stderr, "\r%s  %s / %s  %3" PRIu64 "%%  %s/s\033[K%s", b->name,
	    have, all, pct, rate, last ? "\n" : "");
	fflush(stderr);
	b->midline = !last;
}

/* An interrupted or failed copy: the bar's line ends where it stands. */
static void
cli_fs_bar_end(struct cli_fs_bar *b)
{
	if (b->midline)
		fputc('\n', stderr);
	b->on = false;
	free(b->name);
	b->name = NULL;
}

/* ---- the connection ---- */

static int
cli_fs_open(struct cli_fs_link *l, char **cause)
{
	int status;

	l->phead = l->npend = 0;
	status = cli_open(l->cli, &l->conn, cause);
	if (status != CLI_CONN_OK)
		l->conn = NULL;
	return status;
}

static void
cli_fs_close(struct cli_fs_link *l)
{
	cli_conn_close(l->conn);
	l->conn = NULL;
	l->phead = l->npend = 0;
}

/* A request answered before anything else goes: an error answer is a
 * failure (CLI_CONN_ANSWERED). */
static int
cli_fs_call(struct cli_fs_link *l, const char *op, cli_conn_pack_cb pack,
    void *ctx, const struct proto_msg **respp, char **cause)
{
	return cli_conn_call(
	    l->conn, op, pack, ctx, l->cli->timeout_ms, respp, cause);
}

/* Sends a request without waiting for its answer; req says what it is
 * for when the answer comes. */
static int
cli_fs_push(struct cli_fs_link *l, const char *op, cli_conn_pack_cb pack,
    void *ctx, const struct cli_fs_req *req, char **cause)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t slot;
	int status;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	proto_pack_request(&pk, l->rid, op);
	pack(&pk, ctx);
	status = cli_conn_send(l->conn, sb.data, sb.size, cause);
	msgpack_sbuffer_destroy(&sb);
	if (status != CLI_CONN_OK)
		return status;
	slot = (l->phead + l->npend++) % CLI_FS_PIPE;
	l->pend[slot] = *req;
	l->pend[slot].id = l->rid++;
	return CLI_CONN_OK;
}

/* Waits for the answer to the oldest request in flight: *req is that
 * request, *mp its answer (owned by the connection). */
static int
cli_fs_answer(struct cli_fs_link *l, struct cli_fs_req *req,
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
	l->phead = (l->phead + 1) % CLI_FS_PIPE;
	l->npend--;
	return CLI_CONN_OK;
}

static int
cli_fs_refused(const struct proto_msg *m, char **cause)
{
	*cause = xasprintf("%s: %s", m->err_code, m->err_message);
	return CLI_CONN_ANSWERED;
}

/* What a link does to mend a transfer: connect again, then resume's
 * work on the new connection. */
struct cli_fs_mend {
	struct cli_fs_link *link;
	int (*resume)(void *, char **);
	void *arg;
};

static int
cli_fs_retry_cb(void *arg, char **cause)
{
	struct cli_fs_mend *m = arg;
	int status;

	if ((status = cli_fs_open(m->link, cause)) != CLI_CONN_OK)
		return status;
	if ((status = m->resume(m->arg, cause)) != CLI_CONN_OK)
		cli_fs_close(m->link);
	return status;
}

/* After a lost connection (why says how; taken): connected again and
 * resumed (resume's work, with arg), or a failure that retrying cannot
 * mend. */
static int
cli_fs_reconnect(struct cli_fs_link *l, char *why,
    int (*resume)(void *, char **), void *arg, char **cause)
{
	struct cli_fs_mend m = {l, resume, arg};
	struct cli_xfer_outage o = {
	    .quiet = true, .retry = cli_fs_retry_cb, .arg = &m};
	int status;

	cli_fs_close(l);
	status = cli_xfer_mend(l->cli, &o, why, cause);
	if (status == CLI_CONN_OK && o.tries > 1)
		cli_print_warn("reconnected; resuming");
	return status;
}

/* A file error here: the message names the path. */
static int
cli_fs_local_error(const char *what, const char *path, char **cause)
{
	*cause = xasprintf("%s %s: %s", what, path, strerror(errno));
	return CLI_CONN_ANSWERED;
}

static int
cli_fs_write_all(
    int fd, const void *buf, size_t len, const char *name, char **cause)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_fs_local_error("cannot write", name, cause);
		p += n;
		len -= (size_t)n;
	}
	return CLI_CONN_OK;
}

static void
cli_fs_pack_path_cb(msgpack_packer *pk, void *ctx)
{
	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "path", ctx);
}

/* fs.stat of path: the result, owned by the connection. */
static int
cli_fs_stat(struct cli_fs_link *l, const char *path,
    const msgpack_object **resultp, char **cause)
{
	const struct proto_msg *resp;
	int status;

	status = cli_fs_call(
	    l, "fs.stat", cli_fs_pack_path_cb, (void *)path, &resp, cause);
	if (status == CLI_CONN_OK)
		*resultp = resp->result;
	return status;
}

static bool
cli_fs_is(const msgpack_object *stat, const char *type)
{
	char got[16] = "";

	proto_arg_str(stat, "type", got, sizeof got);
	return strcmp(got, type) == 0;
}

/* ---- download (cp and cat) ---- */

static void
cli_fs_pack_read_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_fs_down *d = ctx;

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "path", d->path);
	proto_pack_kv_u64(pk, "offset", d->next);
	proto_pack_kv_u64(pk, "length", CLI_FS_READ_CHUNK);
}

/* Asks for the next chunks: one while the size is unknown or all of it
 * was asked for (the file may have grown), up to CLI_FS_PIPE otherwise. */
static int
cli_fs_down_fill(struct cli_fs_down *d, char **cause)
{
	struct cli_fs_req req = {.len = CLI_FS_READ_CHUNK};
	int status;

	while (!d->eof && d->link.npend < CLI_FS_PIPE &&
	    (d->next == d->done || d->next < d->size)) {
		req.offset = d->next;
		status = cli_fs_push(
		    &d->link, "fs.read", cli_fs_pack_read_cb, d, &req, cause);
		if (status != CLI_CONN_OK)
			return status;
		d->next += CLI_FS_READ_CHUNK;
	}
	return CLI_CONN_OK;
}

static int
cli_fs_down_answered(struct cli_fs_down *d, const struct cli_fs_req *req,
    const struct proto_msg *m, char **cause)
{
	const msgpack_object *data;
	uint64_t offset, size;
	bool eof = false;
	int status;

	if (!m->ok)
		return cli_fs_refused(m, cause);
	data = proto_map_get(m->result, "data");
	if (data == NULL || data->type != MSGPACK_OBJECT_BIN ||
	    proto_arg_u64(m->result, "offset", &offset) != 1 ||
	    proto_arg_u64(m->result, "size", &size) != 1 ||
	    proto_arg_bool(m->result, "eof", &eof) != 1) {
		*cause = xstrdup("fs.read answered without data, offset, "
		                 "size and eof");
		return CLI_CONN_PROTOCOL;
	}
	/* Stale: asked for past a short answer, or after the end. */
	if (d->eof || offset != d->done)
		return CLI_CONN_OK;
	status = cli_fs_write_all(
	    d->fd, data->via.bin.ptr, data->via.bin.size, "the output", cause);
	if (status != CLI_CONN_OK)
		return status;
	d->done += data->via.bin.size;
	d->size = size;
	d->eof = eof;
	cli_fs_bar_draw(&d->bar, d->done, false);
	if (eof)
		return CLI_CONN_OK;
	if (data->via.bin.size == 0) {
		*cause = xstrdup("fs.read gave nothing before the end");
		return CLI_CONN_PROTOCOL;
	}
	if (data->via.bin.size < req->len)
		d->next = d->done;
	return CLI_CONN_OK;
}

static int
cli_fs_down_resume_cb(void *arg, char **cause)
{
	struct cli_fs_down *d = arg;

	(void)cause;
	d->next = d->done;
	return CLI_CONN_OK;
}

/* Reads the whole file into d->fd, on d->link's connection (open). Every
 * answer is read before it returns, so the connection can go on. */
static int
cli_fs_down_run(struct cli_fs_down *d, char **cause)
{
	const struct proto_msg *m;
	struct cli_fs_req req;
	int status;

	d->next = d->done;
	while (!d->eof || d->link.npend > 0) {
		status = cli_fs_down_fill(d, cause);
		if (status == CLI_CONN_OK)
			status = cli_fs_answer(&d->link, &req, &m, cause);
		if (status == CLI_CONN_OK)
			status = cli_fs_down_answered(d, &req, m, cause);
		if (status == CLI_CONN_OK)
			continue;
		if (status != CLI_CONN_LOST)
			return status;
		status = cli_fs_reconnect(
		    &d->link, *cause, cli_fs_down_resume_cb, d, cause);
		if (status != CLI_CONN_OK)
			return status;
	}
	return CLI_CONN_OK;
}

/* ---- upload ---- */

static void
cli_fs_pack_write_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_fs_up *up = ctx;

	msgpack_pack_map(pk, 4 + up->chunk.last);
	proto_pack_kv_str(pk, "path", up->path);
	proto_pack_kv_u64(pk, "offset", up->chunk.offset);
	proto_pack_str(pk, "data");
	msgpack_pack_bin(pk, up->chunk.len);
	msgpack_pack_bin_body(pk, up->buf, up->chunk.len);
	proto_pack_kv_bool(pk, "done", up->chunk.last);
	if (up->chunk.last)
		proto_pack_kv_u64(pk, "mode", up->mode);
}

/* Reads len bytes at offset of the local file: they must all be there. */
static int
cli_fs_up_read(struct cli_fs_up *up, const char *local, char **cause)
{
	size_t got = 0;
	ssize_t n;

	while (got < up->chunk.len) {
		n = pread(up->fd, up->buf + got, up->chunk.len - got,
		    (off_t)(up->chunk.offset + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_fs_local_error("cannot read", local, cause);
		if (n == 0) {
			*cause =
			    xasprintf("%s shrank while it was copied", local);
			return CLI_CONN_ANSWERED;
		}
		got += (size_t)n;
	}
	return CLI_CONN_OK;
}

/* Sends chunks while fewer than CLI_FS_PIPE are unanswered. */
static int
cli_fs_up_fill(struct cli_fs_up *up, const char *local, char **cause)
{
	uint64_t left;
	int status;

	while (!up->sent_last && up->link.npend < CLI_FS_PIPE) {
		left = up->size - up->next;
		up->chunk.offset = up->next;
		up->chunk.len = left > CLI_FS_CHUNK ? CLI_FS_CHUNK : left;
		up->chunk.last = up->chunk.len == left;
		if ((status = cli_fs_up_read(up, local, cause)) != CLI_CONN_OK)
			return status;
		status = cli_fs_push(&up->link, "fs.write",
		    cli_fs_pack_write_cb, up, &up->chunk, cause);
		if (status != CLI_CONN_OK)
			return status;
		up->next += up->chunk.len;
		up->sent_last = up->chunk.last;
	}
	return CLI_CONN_OK;
}

static int
cli_fs_up_answered(struct cli_fs_up *up, const struct cli_fs_req *req,
    const struct proto_msg *m, char **cause)
{
	char *dir;

	if (!m->ok && req->offset == 0 &&
	    strcmp(m->err_code, PROTO_E_NOT_FOUND) == 0) {
		dir = xstrdup(up->path);
		*strrchr(dir, '/') = '\0';
		*cause = xasprintf("%s: %s (no directory %s in the sandbox)",
		    m->err_code, m->err_message, *dir == '\0' ? "/" : dir);
		free(dir);
		return CLI_CONN_ANSWERED;
	}
	if (!m->ok)
		return cli_fs_refused(m, cause);
	up->acked = req->offset + req->len;
	up->finished = req->last;
	cli_fs_bar_draw(&up->bar, up->acked, false);
	return CLI_CONN_OK;
}

/* On a new connection: where berthd's partial upload stands, which is
 * where the upload goes on. */
static int
cli_fs_up_resume_cb(void *arg, char **cause)
{
	struct cli_fs_up *up = arg;
	const struct proto_msg *resp;
	uint64_t pending = 0;
	int status;

	status = cli_fs_call(
	    &up->link, "fs.write", cli_fs_pack_path_cb, up->path, &resp, cause);
	if (status != CLI_CONN_OK)
		return status;
	proto_arg_u64(resp->result, "pending", &pending);
	/* More than the file holds is no partial of this upload: afresh. */
	if (pending > up->size)
		pending = 0;
	up->next = up->acked = pending;
	up->sent_last = false;
	return CLI_CONN_OK;
}

static int
cli_fs_up_run(struct cli_fs_up *up, const char *local, char **cause)
{
	const struct proto_msg *m;
	struct cli_fs_req req;
	int status;

	while (!up->finished) {
		status = cli_fs_up_fill(up, local, cause);
		if (status == CLI_CONN_OK)
			status = cli_fs_answer(&up->link, &req, &m, cause);
		if (status == CLI_CONN_OK)
			status = cli_fs_up_answered(up, &req, m, cause);
		if (status == CLI_CONN_OK)
			continue;
		if (status != CLI_CONN_LOST)
			return status;
		status = cli_fs_reconnect(
		    &up->link, *cause, cli_fs_up_resume_cb, up, cause);
		if (status != CLI_CONN_OK)
			return status;
	}
	return CLI_CONN_OK;
}

/* Where an upload of local to remote lands: remote, or the file of
 * local's name in it when it is a directory. */
static int
cli_fs_up_target(
    struct cli_fs_up *up, const char *local, const char *remote, char **cause)
{
	const msgpack_object *st;
	char *name;
	int status;

	status = cli_fs_stat(&up->link, remote, &st, cause);
	if (status == CLI_CONN_ANSWERED) {
		/* Not there (or not to be looked at): fs.write says more. */
		free(*cause);
		up->path = xstrdup(remote);
		return CLI_CONN_OK;
	}
	if (status != CLI_CONN_OK)
		return status;
	if (!cli_fs_is(st, "dir")) {
		up->path = xstrdup(remote);
		return CLI_CONN_OK;
	}
	name = cli_fs_basename(local);
	up->path = cli_fs_join(remote, name);
	free(name);
	return CLI_CONN_OK;
}

static int
cli_fs_upload(struct cli *cli, const char *local, const char *remote,
    bool quiet, char **cause)
{
	struct cli_fs_up *up = xcalloc(1, sizeof *up);
	struct stat sb;
	int status;

	up->link.cli = cli;
	up->link.rid = CLI_FS_RAW_ID;
	if ((up->fd = open(local, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(up->fd, &sb) != 0)
		status = cli_fs_local_error("cannot read", local, cause);
	else if (!S_ISREG(sb.st_mode)) {
		*cause = xasprintf("%s is not a regular file", local);
		status = CLI_CONN_ANSWERED;
	} else
		status = cli_fs_open(&up->link, cause);
	if (status == CLI_CONN_OK) {
		up->size = (uint64_t)sb.st_size;
		up->mode = sb.st_mode & 0777;
		up->buf = xmalloc(CLI_FS_CHUNK);
		status = cli_fs_up_target(up, local, remote, cause);
	}
	if (status == CLI_CONN_OK) {
		cli_fs_bar_init(&up->bar, quiet, local, up->size);
		status = cli_fs_up_run(up, local, cause);
		if (status == CLI_CONN_OK)
			cli_fs_bar_draw(&up->bar, up->acked, true);
		cli_fs_bar_end(&up->bar);
	}
	cli_fs_close(&up->link);
	if (up->fd != -1)
		close(up->fd);
	free(up->buf);
	free(up->path);
	free(up);
	return status;
}

/* ---- cp, from the sandbox ---- */

/* The hidden file a download of target is written to: beside it, so
 * that the rename is within one filesystem. */
static char *
cli_fs_temp_name(const char *target)
{
	const char *slash = strrchr(target, '/');
	const char *name = slash != NULL ? slash + 1 : target;
	int keep = CLI_FS_NAME_MAX - 1 - (int)strlen(CLI_FS_DOWNLOAD_SUFFIX);

	return xasprintf("%.*s.%.*s%s",
	    slash != NULL ? (int)(name - target) : 0, target, keep, name,
	    CLI_FS_DOWNLOAD_SUFFIX);
}

/* Where a download of remote lands: local, or the file of remote's name
 * in it when it is a directory. */
static char *
cli_fs_down_target(const char *local, const char *remote)
{
	struct stat sb;
	char *name, *path;

	if (stat(local, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return xstrdup(local);
	name = cli_fs_basename(remote);
	path = cli_fs_join(local, name);
	free(name);
	return path;
}

/* The whole temp file, synced and with its mode, renamed over target. */
static int
cli_fs_down_land(struct cli_fs_down *d, const char *temp, const char *target,
    unsigned mode, char **cause)
{
	mode_t mask = umask(0);

	umask(mask);
	if (fsync(d->fd) != 0 || fchmod(d->fd, (mode_t)mode & ~mask) != 0)
		return cli_fs_local_error("cannot write", temp, cause);
	if (close(d->fd) != 0) {
		d->fd = -1;
		return cli_fs_local_error("cannot write", temp, cause);
	}
	d->fd = -1;
	if (rename(temp, target) != 0)
		return cli_fs_local_error("cannot replace", target, cause);
	return CLI_CONN_OK;
}

static int
cli_fs_download(struct cli *cli, const char *remote, const char *local,
    bool quiet, char **cause)
{
	struct cli_fs_down d = {.link = {.cli = cli, .rid = CLI_FS_RAW_ID},
	    .path = remote,
	    .fd = -1};
	const msgpack_object *st;
	char *target = NULL, *temp = NULL;
	uint64_t mode = 0644;
	int status;

	if ((status = cli_fs_open(&d.link, cause)) == CLI_CONN_OK)
		status = cli_fs_stat(&d.link, remote, &st, cause);
	if (status == CLI_CONN_OK && !cli_fs_is(st, "file")) {
		*cause = xasprintf("%s in the sandbox is not a regular file "
		                   "(cp copies files)",
		    remote);
		status = CLI_CONN_ANSWERED;
	}
	if (status == CLI_CONN_OK) {
		proto_arg_u64(st, "size", &d.size);
		proto_arg_u64(st, "mode", &mode);
		target = cli_fs_down_target(local, remote);
		temp = cli_fs_temp_name(target);
		d.fd =
		    open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (d.fd == -1)
			status =
			    cli_fs_local_error("cannot create", temp, cause);
	}
	if (status == CLI_CONN_OK) {
		cli_fs_bar_init(&d.bar, quiet, remote, d.size);
		status = cli_fs_down_run(&d, cause);
		if (status == CLI_CONN_OK) {
			d.bar.total = d.done;
			cli_fs_bar_draw(&d.bar, d.done, true);
			status = cli_fs_down_land(
			    &d, temp, target, (unsigned)mode & 0777, cause);
		}
		cli_fs_bar_end(&d.bar);
		if (status != CLI_CONN_OK)
			unlink(temp);
	}
	if (d.fd != -1)
		close(d.fd);
	cli_fs_close(&d.link);
	free(temp);
	free(target);
	return status;
}

/* ---- cp ---- */

static int
cli_fs_cp(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"quiet", no_argument, NULL, 'q'},
	    {NULL, 0, NULL, 0},
	};
	char *words[2] = {NULL, NULL}, *word, *cause;
	const char *remote;
	bool quiet = false, up;
	int c, n = 0, status;

	while ((c = cli_next(cli, argc, argv, opts, "q", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (c == 'q')
			quiet = true;
		else if (n == 2)
			return cli_usage(cli, "too many arguments: %s", word);
		else
			words[n++] = word;
	}
	if (n < 2)
		return cli_usage(cli, "cp wants a source and a target");
	if ((words[0][0] == ':') == (words[1][0] == ':'))
		return cli_usage(cli,
		    "one path must be in the sandbox (:PATH), the other here");
	up = words[1][0] == ':';
	if ((status = cli_fs_remote_path(cli, words[up], &remote)) != 0 ||
	    (status = cli_ready(cli)) != 0)
		return status;
	if (*words[!up] == '\0')
		return cli_usage(cli, "an empty local path");
	cli_xfer_signals();
	if (up)
		status = cli_fs_upload(cli, words[0], remote, quiet, &cause);
	else
		status = cli_fs_download(cli, remote, words[1], quiet, &cause);
	if (status == CLI_CONN_INTERRUPTED && cli_xfer_signalled() != 0) {
		free(cause);
		return CLI_EXIT_SIGNAL + cli_xfer_signalled();
	}
	if (status != CLI_CONN_OK)
		return cli_fail(status, cause);
	return CLI_EXIT_OK;
}

/* ---- cat ---- */

static int
cli_fs_cat(struct cli *cli, int argc, char **argv)
{
	struct cli_fs_down d = {
	    .link = {.cli = cli, .rid = CLI_FS_RAW_ID}, .fd = STDOUT_FILENO};
	const char **paths = xcalloc((size_t)argc, sizeof *paths);
	char *word, *cause;
	int c, i, n = 0, status = CLI_EXIT_OK, failed = 0;

	while (status == CLI_EXIT_OK &&
	    (c = cli_next(cli, argc, argv, NULL, "", &word)) != -1) {
		if (c == CLI_STOP)
			status = CLI_EXIT_USAGE;
		else
			status = cli_fs_remote_path(cli, word, &paths[n++]);
	}
	if (status == CLI_EXIT_OK && n == 0)
		status = cli_usage(cli, "cat wants a path");
	if (status == CLI_EXIT_OK)
		status = cli_ready(cli);
	if (status == CLI_EXIT_OK &&
	    (status = cli_fs_open(&d.link, &cause)) != CLI_CONN_OK)
		status = cli_fail(status, cause);
	if (d.link.conn == NULL) {
		free(paths);
		return status;
	}
	/* Like cat(1): a file that fails is said so, and the rest go on. */
	for (i = 0; i < n; i++) {
		d.path = paths[i];
		d.done = d.size = 0;
		d.eof = false;
		status = cli_fs_down_run(&d, &cause);
		if (status == CLI_CONN_ANSWERED) {
			cli_print_warn("%s", cause);
			free(cause);
			failed = 1;
			/* The answers after the failed one come too. */
			cli_fs_close(&d.link);
			status = i + 1 < n ? cli_fs_open(&d.link, &cause)
			                   : CLI_CONN_OK;
		}
		if (status != CLI_CONN_OK)
			break;
	}
	cli_fs_close(&d.link);
	free(paths);
	if (status != CLI_CONN_OK)
		return cli_fail(status, cause);
	return failed ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

/* ---- ls ---- */

/* "drwxr-xr-x", as ls -l writes it. */
static void
cli_fs_modestr(const msgpack_object *e, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	char type[16] = "";
	uint64_t mode = 0;
	int i;

	proto_arg_str(e, "type", type, sizeof type);
	proto_arg_u64(e, "mode", &mode);
	out[0] = strcmp(type, "dir") == 0  ? 'd'
	    : strcmp(type, "symlink") == 0 ? 'l'
	    : strcmp(type, "file") == 0    ? '-'
	                                   : '?';
	for (i = 0; i < 9; i++)
		out[1 + i] = mode & (0400u >> i) ? rwx[i] : '-';
	if (mode & 04000)
		out[3] = mode & 0100 ? 's' : 'S';
	if (mode & 02000)
		out[6] = mode & 0010 ? 's' : 'S';
	if (mode & 01000)
		out[9] = mode & 0001 ? 't' : 'T';
	out[10] = '\0';
}

/* An entry's name as listed: its path below the listed directory (with
 * -R more than one component), or as given for a lone file. */
struct cli_fs_ls {
	bool all;
	bool longfmt;
	bool tame;
	const char *top; /* the listed path, as given */
};

static char *
cli_fs_ls_name(const struct cli_fs_ls *ls, const msgpack_object *e, bool lone)
{
	const msgpack_object *p = proto_map_get(e, "path");
	size_t n = strlen(ls->top);
	char *path;

	if (p == NULL || p->type != MSGPACK_OBJECT_STR)
		return NULL;
	path = xstrndup(p->via.str.ptr, p->via.str.size);
	if (!lone && strncmp(path, ls->top, n) == 0) {
		while (path[n] == '/')
			n++;
		memmove(path, path + n, strlen(path + n) + 1);
	}
	return path;
}

/* Hidden: a name, or a directory above it, that starts with a dot. */
static bool
cli_fs_ls_hidden(const char *name)
{
	const char *p;

	if (name[0] == '.')
		return true;
	for (p = name; (p = strchr(p, '/')) != NULL; p++)
		if (p[1] == '.')
			return true;
	return false;
}

static void
cli_fs_ls_line(const struct cli_fs_ls *ls, const msgpack_object *e,
    const char *name, int width)
{
	const msgpack_object *target = proto_map_get(e, "target");
	char mode[11], when[32], *shown, *raw, *link = NULL;
	uint64_t size = 0, mtime = 0;
	struct tm tm;
	time_t t;

	shown = cli_fs_shown(name, ls->tame);
	if (!ls->longfmt) {
		printf("%s\n", shown);
		free(shown);
		return;
	}
	cli_fs_modestr(e, mode);
	proto_arg_u64(e, "size", &size);
	proto_arg_u64(e, "mtime", &mtime);
	t = (time_t)(mtime / 1000);
	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm) == 0)
		snprintf(when, sizeof when, "?");
	if (target != NULL && target->type == MSGPACK_OBJECT_STR) {
		raw = xstrndup(target->via.str.ptr, target->via.str.size);
		link = cli_fs_shown(raw, ls->tame);
		free(raw);
	}
	printf("%s %*" PRIu64 " %s %s%s%s\n", mode, width, size, when, shown,
	    link != NULL ? " -> " : "", link != NULL ? link : "");
	free(link);
	free(shown);
}

/* The entries of fs.list's result (or one fs.stat result, lone). */
static void
cli_fs_ls_print(
    const struct cli_fs_ls *ls, const msgpack_object *entries, bool lone)
{
	const msgpack_object *e;
	char *name, digits[32];
	uint64_t size;
	int width = 1;
	uint32_t i;

	for (i = 0; i < entries->via.array.size; i++) {
		size = 0;
		proto_arg_u64(&entries->via.array.ptr[i], "size", &size);
		snprintf(digits, sizeof digits, "%" PRIu64, size);
		if ((int)strlen(digits) > width)
			width = (int)strlen(digits);
	}
	for (i = 0; i < entries->via.array.size; i++) {
		e = &entries->via.array.ptr[i];
		if ((name = cli_fs_ls_name(ls, e, lone)) == NULL)
			continue;
		if (lone || ls->all || !cli_fs_ls_hidden(name))
			cli_fs_ls_line(ls, e, name, width);
		free(name);
	}
}

struct cli_fs_list_args {
	const char *path;
	uint64_t depth;
	bool follow;
};

static void
cli_fs_pack_list_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_fs_list_args *a = ctx;

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "path", a->path);
	proto_pack_kv_u64(pk, "depth", a->depth);
}

static void
cli_fs_pack_lstat_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_fs_list_args *a = ctx;

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "path", a->path);
	proto_pack_kv_bool(pk, "follow", a->follow);
}

/* fs.list's answer: the entries, and what the listing left out. */
static void
cli_fs_ls_show(const struct cli_fs_ls *ls, const msgpack_object *result)
{
	const msgpack_object *entries = proto_map_get(result, "entries");
	uint64_t skipped = 0;
	bool truncated = false;

	if (entries != NULL && entries->type == MSGPACK_OBJECT_ARRAY)
		cli_fs_ls_print(ls, entries, false);
	fflush(stdout);
	proto_arg_bool(result, "truncated", &truncated);
	proto_arg_u64(result, "skipped", &skipped);
	if (truncated)
		cli_print_warn("the listing stops at %u entries",
		    entries != NULL && entries->type == MSGPACK_OBJECT_ARRAY
		        ? entries->via.array.size
		        : 0);
	if (skipped > 0)
		cli_print_warn("%" PRIu64 " unreadable directories were "
		               "skipped",
		    skipped);
}

/* A path that is no directory: the one entry fs.stat gives, as ls(1)
 * shows a file it is given. */
static int
cli_fs_ls_lone(struct cli *cli, struct cli_fs_ls *ls, struct cli_fs_link *l,
    struct cli_fs_list_args *a, char **cause)
{
	const struct proto_msg *resp;
	msgpack_object array;
	int status;

	a->follow = false;
	status =
	    cli_fs_call(l, "fs.stat", cli_fs_pack_lstat_cb, a, &resp, cause);
	if (status != CLI_CONN_OK)
		return status;
	if (cli->json) {
		cli_print_json(resp->result);
		return CLI_CONN_OK;
	}
	array.type = MSGPACK_OBJECT_ARRAY;
	array.via.array.size = 1;
	array.via.array.ptr = (msgpack_object *)resp->result;
	cli_fs_ls_print(ls, &array, true);
	return CLI_CONN_OK;
}

static int
cli_fs_ls(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"long", no_argument, NULL, 'l'},
	    {"all", no_argument, NULL, 'a'},
	    {"recursive", no_argument, NULL, 'R'},
	    {NULL, 0, NULL, 0},
	};
	struct cli_fs_link l = {.cli = cli};
	struct cli_fs_list_args a = {.depth = 1};
	struct cli_fs_ls ls = {.tame = isatty(STDOUT_FILENO)};
	const struct proto_msg *resp;
	char *word, *cause;
	int c, status;

	while ((c = cli_next(cli, argc, argv, opts, "laR", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case 'l': ls.longfmt = true; break;
		case 'a': ls.all = true; break;
		case 'R': a.depth = CLI_FS_DEPTH_MAX; break;
		case CLI_WORD:
			if (a.path != NULL)
				return cli_usage(
				    cli, "too many arguments: %s", word);
			if ((status = cli_fs_remote_path(cli, word, &a.path)) !=
			    0)
				return status;
			break;
		}
	}
	if (a.path == NULL)
		return cli_usage(cli, "ls wants a path");
	if ((status = cli_ready(cli)) != 0)
		return status;
	ls.top = a.path;
	if ((status = cli_fs_open(&l, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	status = cli_conn_request(l.conn, "fs.list", cli_fs_pack_list_cb, &a,
	    cli->timeout_ms, &resp, &cause);
	if (status == CLI_CONN_OK && !resp->ok &&
	    strcmp(resp->err_code, PROTO_E_NOT_A_DIRECTORY) == 0)
		status = cli_fs_ls_lone(cli, &ls, &l, &a, &cause);
	else if (status == CLI_CONN_OK && !resp->ok)
		status = cli_fs_refused(resp, &cause);
	else if (status == CLI_CONN_OK && cli->json)
		cli_print_json(resp->result);
	else if (status == CLI_CONN_OK)
		cli_fs_ls_show(&ls, resp->result);
	fflush(stdout);
	cli_fs_close(&l);
	if (status != CLI_CONN_OK)
		return cli_fail(status, cause);
	return CLI_EXIT_OK;
}

const struct cli_cmd_entry cli_fs_cp_entry = {
    .name = "cp",
    .usage = "[-q] LOCAL :REMOTE | :REMOTE LOCAL",
    .summary = "copy a file into the sandbox or out of it\n"
               "(:PATH is in the sandbox; into a directory,\n"
               "the file keeps its name); -q: no progress bar",
    .exec = cli_fs_cp,
};

const struct cli_cmd_entry cli_fs_ls_entry = {
    .name = "ls",
    .usage = "[-l] [-a] [-R] PATH",
    .summary = "list a directory in the sandbox: -l with mode,\n"
               "size and time (UTC), -a dot files too, -R all\n"
               "below it; --json: fs.list's result",
    .exec = cli_fs_ls,
};

const struct cli_cmd_entry cli_fs_cat_entry = {
    .name = "cat",
    .usage = "PATH...",
    .summary = "print files of the sandbox",
    .exec = cli_fs_cat,
};
