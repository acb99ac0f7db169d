/* cli_fs: berth cp, ls and cat. An upload goes in chunks of at most
 * 4 MiB, a few in flight, and after a lost connection resumes at what
 * berthd says its partial holds (fs.write {path}); a download is
 * cli_xfer's ranged read of fs.read, and lands in a hidden file beside
 * its target, renamed over it once whole, as berthd does with an
 * upload. */
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
#include "xmalloc.h"

/* fs.write's largest chunk (CLI_XFER_PIPE of them go unanswered). */
#define CLI_FS_CHUNK (4u << 20)
#define CLI_FS_PATH_MAX 4096
#define CLI_FS_DEPTH_MAX 32
#define CLI_FS_DOWNLOAD_SUFFIX ".berth-download"

/*
 * How berthd does a command's file ops: as the user --as names (the op
 * then has that user's rights; "as"), and following symlinks only with
 * --follow-symlinks ("follow_symlinks"), which every fs.* request of the
 * command carries. as points into argv.
 */
struct cli_fs_how {
	const char *as;
	bool follow;
};

enum {
	CLI_FS_OPT_AS = 256,
	CLI_FS_OPT_FOLLOW,
};

/* The options of struct cli_fs_how, in every file command's table. */
#define CLI_FS_HOW_OPTS                                                        \
	{"as", required_argument, NULL, CLI_FS_OPT_AS},                        \
	{                                                                      \
		"follow-symlinks", no_argument, NULL, CLI_FS_OPT_FOLLOW        \
	}

/* Takes option c into how if it is one of CLI_FS_HOW_OPTS: 1 if it was,
 * 0 if not, CLI_STOP after a usage error. */
static int
cli_fs_how_opt(struct cli *cli, int c, struct cli_fs_how *how)
{
	if (c == CLI_FS_OPT_FOLLOW) {
		how->follow = true;
		return 1;
	}
	if (c != CLI_FS_OPT_AS)
		return 0;
	if (optarg[0] == '\0') {
		cli_usage(cli, "--as wants a user's name");
		return CLI_STOP;
	}
	how->as = optarg;
	return 1;
}

/* How many keys how adds to a request. */
static uint32_t
cli_fs_how_keys(const struct cli_fs_how *how)
{
	return (how->as != NULL) + how->follow;
}

static void
cli_fs_how_pack(msgpack_packer *pk, const struct cli_fs_how *how)
{
	if (how->as != NULL)
		proto_pack_kv_str(pk, "as", how->as);
	if (how->follow)
		proto_pack_kv_bool(pk, "follow_symlinks", true);
}

/* cli_xfer_read's more, for fs.read. */
static void
cli_fs_how_more(msgpack_packer *pk, const void *arg)
{
	cli_fs_how_pack(pk, arg);
}

static void
cli_fs_how_read(struct cli_xfer_read *rd, const struct cli_fs_how *how)
{
	rd->nmore = cli_fs_how_keys(how);
	rd->more = cli_fs_how_more;
	rd->more_arg = how;
}

/* A request about one path, done as how says; both borrowed. */
struct cli_fs_at {
	const char *path;
	const struct cli_fs_how *how;
};

/*
 * An upload: chunk after chunk of the local fd to path, at most
 * CLI_XFER_PIPE in flight; next is what goes next, acked what berthd's
 * partial is known to hold. The last chunk says done and sets the mode.
 * Allocated by cli_fs_upload; owns fd, path and buf.
 */
struct cli_fs_up {
	struct cli_xfer_link link;
	const char *local; /* argv */
	struct cli_fs_how how;
	char *path;
	int fd;
	uint64_t size;
	unsigned mode;
	uint64_t next;
	uint64_t acked;
	bool sent_last;
	bool finished;
	uint8_t *buf;
	struct cli_xfer_req chunk; /* the one being packed */
	struct cli_bar bar;
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
	return tame ? cli_print_tame(xstrdup(s)) : xstrdup(s);
}

/* ---- requests ---- */

/* A request answered before anything else goes on the link: an error
 * answer is a failure (CLI_CONN_ANSWERED). */
static int
cli_fs_call(struct cli_xfer_link *l, const char *op, cli_conn_pack_cb pack,
    void *ctx, const struct proto_msg **respp, char **cause)
{
	return cli_conn_call(
	    l->conn, op, pack, ctx, l->cli->timeout_ms, respp, cause);
}

/* A file error here: the message names the path. */
static int
cli_fs_local_error(const char *what, const char *path, char **cause)
{
	*cause = xasprintf("%s %s: %s", what, path, strerror(errno));
	return CLI_CONN_ANSWERED;
}

static void
cli_fs_pack_path_cb(msgpack_packer *pk, void *ctx)
{
	const struct cli_fs_at *at = ctx;

	msgpack_pack_map(pk, 1 + cli_fs_how_keys(at->how));
	proto_pack_kv_str(pk, "path", at->path);
	cli_fs_how_pack(pk, at->how);
}

/* fs.stat of path: the result, owned by the connection. */
static int
cli_fs_stat(struct cli_xfer_link *l, const char *path,
    const struct cli_fs_how *how, const msgpack_object **resultp, char **cause)
{
	struct cli_fs_at at = {.path = path, .how = how};
	const struct proto_msg *resp;
	int status;

	status =
	    cli_fs_call(l, "fs.stat", cli_fs_pack_path_cb, &at, &resp, cause);
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

/* ---- upload ---- */

static void
cli_fs_pack_write_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_fs_up *up = ctx;

	msgpack_pack_map(pk, 4 + up->chunk.last + cli_fs_how_keys(&up->how));
	proto_pack_kv_str(pk, "path", up->path);
	cli_fs_how_pack(pk, &up->how);
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
cli_fs_up_read(struct cli_fs_up *up, char **cause)
{
	size_t got = 0;
	ssize_t n;

	while (got < up->chunk.len) {
		n = pread(up->fd, up->buf + got, up->chunk.len - got,
		    (off_t)(up->chunk.offset + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cli_fs_local_error(
			    "cannot read", up->local, cause);
		if (n == 0) {
			*cause = xasprintf(
			    "%s shrank while it was copied", up->local);
			return CLI_CONN_ANSWERED;
		}
		got += (size_t)n;
	}
	return CLI_CONN_OK;
}

/* Sends chunks while fewer than CLI_XFER_PIPE are unanswered. */
static int
cli_fs_up_fill_cb(void *arg, char **cause)
{
	struct cli_fs_up *up = arg;
	uint64_t left;
	int status;

	while (!up->sent_last && up->link.npend < CLI_XFER_PIPE) {
		left = up->size - up->next;
		up->chunk.offset = up->next;
		up->chunk.len = left > CLI_FS_CHUNK ? CLI_FS_CHUNK : left;
		up->chunk.last = up->chunk.len == left;
		if ((status = cli_fs_up_read(up, cause)) != CLI_CONN_OK)
			return status;
		status = cli_xfer_push(&up->link, "fs.write",
		    cli_fs_pack_write_cb, up, &up->chunk, cause);
		if (status != CLI_CONN_OK)
			return status;
		up->next += up->chunk.len;
		up->sent_last = up->chunk.last;
	}
	return CLI_CONN_OK;
}

static int
cli_fs_up_answered_cb(void *arg, const struct cli_xfer_req *req,
    const struct proto_msg *m, char **cause)
{
	struct cli_fs_up *up = arg;
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
		return cli_conn_refused(m, cause);
	up->acked = req->offset + req->len;
	up->finished = req->last;
	cli_bar_draw(&up->bar, up->acked, false);
	return CLI_CONN_OK;
}

/* On a new connection: where berthd's partial upload stands, which is
 * where the upload goes on. */
static int
cli_fs_up_resume_cb(void *arg, char **cause)
{
	struct cli_fs_up *up = arg;
	struct cli_fs_at at = {.path = up->path, .how = &up->how};
	const struct proto_msg *resp;
	uint64_t pending = 0;
	int status;

	status = cli_fs_call(
	    &up->link, "fs.write", cli_fs_pack_path_cb, &at, &resp, cause);
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

static bool
cli_fs_up_done_cb(void *arg)
{
	struct cli_fs_up *up = arg;

	return up->finished;
}

static const struct cli_xfer_pump cli_fs_up_pump = {
    .done = cli_fs_up_done_cb,
    .fill = cli_fs_up_fill_cb,
    .answered = cli_fs_up_answered_cb,
    .resume = cli_fs_up_resume_cb,
};

/* Where an upload of local to remote lands: remote, or the file of
 * local's name in it when it is a directory. */
static int
cli_fs_up_target(
    struct cli_fs_up *up, const char *local, const char *remote, char **cause)
{
	const msgpack_object *st;
	char *name;
	int status;

	status = cli_fs_stat(&up->link, remote, &up->how, &st, cause);
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
    const struct cli_fs_how *how, bool quiet, char **cause)
{
	struct cli_fs_up *up = xcalloc(1, sizeof *up);
	struct stat sb;
	int status;

	cli_xfer_link_init(&up->link, cli);
	up->local = local;
	up->how = *how;
	if ((up->fd = open(local, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(up->fd, &sb) != 0)
		status = cli_fs_local_error("cannot read", local, cause);
	else if (!S_ISREG(sb.st_mode)) {
		*cause = xasprintf("%s is not a regular file", local);
		status = CLI_CONN_ANSWERED;
	} else
		status = cli_xfer_open(&up->link, cause);
	if (status == CLI_CONN_OK) {
		up->size = (uint64_t)sb.st_size;
		up->mode = sb.st_mode & 0777;
		up->buf = xmalloc(CLI_FS_CHUNK);
		status = cli_fs_up_target(up, local, remote, cause);
	}
	if (status == CLI_CONN_OK) {
		cli_bar_init(&up->bar, quiet, local, up->size);
		status = cli_xfer_pump(&up->link, &cli_fs_up_pump, up, cause);
		if (status == CLI_CONN_OK)
			cli_bar_draw(&up->bar, up->acked, true);
		cli_bar_end(&up->bar);
	}
	cli_xfer_close(&up->link);
	if (up->fd != -1)
		close(up->fd);
	free(up->buf);
	free(up->path);
	free(up);
	return status;
}

/* ---- cp, from the sandbox ---- */

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

/* A regular file in the sandbox, read into the landing of its target
 * here, with its mode. */
static int
cli_fs_down_run(struct cli_xfer_read *rd, const char *local, bool quiet,
    const msgpack_object *st, char **cause)
{
	struct cli_xfer_land land = {.fd = -1};
	struct cli_bar bar;
	char *target = cli_fs_down_target(local, rd->name);
	uint64_t mode = 0644;
	int status = CLI_CONN_OK;

	proto_arg_u64(st, "size", &rd->size);
	proto_arg_u64(st, "mode", &mode);
	if (cli_xfer_land_open(&land, target, CLI_FS_DOWNLOAD_SUFFIX, cause) !=
	    0)
		status = CLI_CONN_ANSWERED;
	if (status == CLI_CONN_OK) {
		cli_bar_init(&bar, quiet, rd->name, rd->size);
		rd->fd = land.fd;
		rd->bar = &bar;
		status = cli_xfer_read_run(rd, cause);
		if (status == CLI_CONN_OK) {
			bar.total = rd->done;
			cli_bar_draw(&bar, rd->done, true);
			if (cli_xfer_land_commit(
			        &land, (unsigned)mode & 0777, cause) != 0)
				status = CLI_CONN_ANSWERED;
		}
		cli_bar_end(&bar);
	}
	cli_xfer_land_discard(&land);
	free(target);
	return status;
}

static int
cli_fs_download(struct cli *cli, const char *remote, const char *local,
    const struct cli_fs_how *how, bool quiet, char **cause)
{
	struct cli_xfer_read rd = {.op = "fs.read",
	    .key = "path",
	    .name = remote,
	    .out = "the output"};
	const msgpack_object *st;
	int status;

	cli_fs_how_read(&rd, how);
	cli_xfer_link_init(&rd.link, cli);
	if ((status = cli_xfer_open(&rd.link, cause)) == CLI_CONN_OK)
		status = cli_fs_stat(&rd.link, remote, how, &st, cause);
	if (status == CLI_CONN_OK && !cli_fs_is(st, "file")) {
		*cause = xasprintf("%s in the sandbox is not a regular file "
		                   "(cp copies files)",
		    remote);
		status = CLI_CONN_ANSWERED;
	}
	if (status == CLI_CONN_OK)
		status = cli_fs_down_run(&rd, local, quiet, st, cause);
	cli_xfer_close(&rd.link);
	return status;
}

/* ---- cp ---- */

static int
cli_fs_cp(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"quiet", no_argument, NULL, 'q'},
	    CLI_FS_HOW_OPTS,
	    {NULL, 0, NULL, 0},
	};
	char *words[2] = {NULL, NULL}, *word, *cause;
	struct cli_fs_how how = {0};
	const char *remote;
	bool quiet = false, up;
	int c, n = 0, status, took;

	while ((c = cli_next(cli, argc, argv, opts, "q", &word)) != -1) {
		if (c == CLI_STOP ||
		    (took = cli_fs_how_opt(cli, c, &how)) == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (took)
			continue;
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
		status =
		    cli_fs_upload(cli, words[0], remote, &how, quiet, &cause);
	else
		status =
		    cli_fs_download(cli, remote, words[1], &how, quiet, &cause);
	return status == CLI_CONN_OK ? CLI_EXIT_OK
	                             : cli_xfer_exit(status, cause);
}

/* ---- cat ---- */

static int
cli_fs_cat(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    CLI_FS_HOW_OPTS,
	    {NULL, 0, NULL, 0},
	};
	struct cli_xfer_read rd = {.op = "fs.read",
	    .key = "path",
	    .fd = STDOUT_FILENO,
	    .out = "the output"};
	const char **paths = xcalloc((size_t)argc, sizeof *paths);
	struct cli_fs_how how = {0};
	char *word, *cause;
	int c, i, n = 0, status = CLI_EXIT_OK, failed = 0, took;

	while (status == CLI_EXIT_OK &&
	    (c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		if (c == CLI_STOP ||
		    (took = cli_fs_how_opt(cli, c, &how)) == CLI_STOP)
			status = CLI_EXIT_USAGE;
		else if (!took)
			status = cli_fs_remote_path(cli, word, &paths[n++]);
	}
	cli_fs_how_read(&rd, &how);
	if (status == CLI_EXIT_OK && n == 0)
		status = cli_usage(cli, "cat wants a path");
	if (status == CLI_EXIT_OK)
		status = cli_ready(cli);
	cli_xfer_link_init(&rd.link, cli);
	if (status == CLI_EXIT_OK &&
	    (status = cli_xfer_open(&rd.link, &cause)) != CLI_CONN_OK)
		status = cli_fail(status, cause);
	if (rd.link.conn == NULL) {
		free(paths);
		return status;
	}
	/* Like cat(1): a file that fails is said so, and the rest go on. */
	for (i = 0; i < n; i++) {
		rd.name = paths[i];
		rd.done = rd.size = 0;
		status = cli_xfer_read_run(&rd, &cause);
		if (status == CLI_CONN_ANSWERED) {
			cli_print_warn("%s", cause);
			free(cause);
			failed = 1;
			/* The answers after the failed one come too. */
			cli_xfer_close(&rd.link);
			status = i + 1 < n ? cli_xfer_open(&rd.link, &cause)
			                   : CLI_CONN_OK;
		}
		if (status != CLI_CONN_OK)
			break;
	}
	cli_xfer_close(&rd.link);
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
	struct cli_fs_how how;
};

static void
cli_fs_pack_list_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_fs_list_args *a = ctx;

	msgpack_pack_map(pk, 2 + cli_fs_how_keys(&a->how));
	proto_pack_kv_str(pk, "path", a->path);
	proto_pack_kv_u64(pk, "depth", a->depth);
	cli_fs_how_pack(pk, &a->how);
}

static void
cli_fs_pack_lstat_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_fs_list_args *a = ctx;

	msgpack_pack_map(pk, 2 + cli_fs_how_keys(&a->how));
	proto_pack_kv_str(pk, "path", a->path);
	proto_pack_kv_bool(pk, "follow", a->follow);
	cli_fs_how_pack(pk, &a->how);
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
cli_fs_ls_lone(struct cli *cli, struct cli_fs_ls *ls, struct cli_xfer_link *l,
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
	    CLI_FS_HOW_OPTS,
	    {NULL, 0, NULL, 0},
	};
	struct cli_xfer_link l;
	struct cli_fs_list_args a = {.depth = 1};
	struct cli_fs_ls ls = {.tame = isatty(STDOUT_FILENO)};
	const struct proto_msg *resp;
	char *word, *cause;
	int c, status, took;

	while ((c = cli_next(cli, argc, argv, opts, "laR", &word)) != -1) {
		if ((took = cli_fs_how_opt(cli, c, &a.how)) == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (took)
			continue;
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
	cli_xfer_link_init(&l, cli);
	if ((status = cli_xfer_open(&l, &cause)) != CLI_CONN_OK)
		return cli_fail(status, cause);
	status = cli_conn_request(l.conn, "fs.list", cli_fs_pack_list_cb, &a,
	    cli->timeout_ms, &resp, &cause);
	if (status == CLI_CONN_OK && !resp->ok &&
	    strcmp(resp->err_code, PROTO_E_NOT_A_DIRECTORY) == 0)
		status = cli_fs_ls_lone(cli, &ls, &l, &a, &cause);
	else if (status == CLI_CONN_OK && !resp->ok)
		status = cli_conn_refused(resp, &cause);
	else if (status == CLI_CONN_OK && cli->json)
		cli_print_json(resp->result);
	else if (status == CLI_CONN_OK)
		cli_fs_ls_show(&ls, resp->result);
	fflush(stdout);
	cli_xfer_close(&l);
	if (status != CLI_CONN_OK)
		return cli_fail(status, cause);
	return CLI_EXIT_OK;
}

/* What --help says of CLI_FS_HOW_OPTS, in each file command's summary. */
#define CLI_FS_HOW_HELP                                                        \
	"--as USER: with USER's rights; --follow-symlinks:\n"                  \
	"through symlinks in sandbox paths (else refused)"

const struct cli_cmd_entry cli_fs_cp_entry = {
    .name = "cp",
    .usage =
        "[-q] [--as USER] [--follow-symlinks] LOCAL :REMOTE | :REMOTE LOCAL",
    .summary =
        "copy a file into the sandbox or out of it\n"
        "(:PATH is in the sandbox; into a directory,\n"
        "the file keeps its name); -q: no progress bar;\n" CLI_FS_HOW_HELP,
    .exec = cli_fs_cp,
};

const struct cli_cmd_entry cli_fs_ls_entry = {
    .name = "ls",
    .usage = "[-l] [-a] [-R] [--as USER] [--follow-symlinks] PATH",
    .summary = "list a directory in the sandbox: -l with mode,\n"
               "size and time (UTC), -a dot files too, -R all\n"
               "below it; --json: fs.list's result;\n" CLI_FS_HOW_HELP,
    .exec = cli_fs_ls,
};

const struct cli_cmd_entry cli_fs_cat_entry = {
    .name = "cat",
    .usage = "[--as USER] [--follow-symlinks] PATH...",
    .summary = "print files of the sandbox;\n" CLI_FS_HOW_HELP,
    .exec = cli_fs_cat,
};
