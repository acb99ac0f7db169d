/* fs_write: fs.write — an upload goes to a partial file beside its target
 * and is renamed over it when done, so a reader sees the old file or the
 * new one, never a part. The partial's name follows from the target's, so
 * a client that lost its connection asks how much it holds and goes on
 * from there. Owns nothing in memory; the partials live on disk. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "fs.h"
#include "fs_write.h"
#include "fserr.h"

#define FS_UPLOAD_SUFFIX ".berth-upload"
/* The longest target name kept whole in its partial's name. */
#define FS_UPLOAD_KEEP (NAME_MAX - 1 - (sizeof FS_UPLOAD_SUFFIX - 1))

/* One fs.write request, its arguments read and its target split; lives
 * for the request. dfd is the target's directory, owned. */
struct fs_upload {
	char path[FSERR_PATH_MAX]; /* as the client gave it */
	char dir[FSERR_PATH_MAX];
	char name[NAME_MAX + 1];
	char tmp[NAME_MAX + 1]; /* the partial, in dir */
	int dfd;

	bool has_offset, has_data, done, parents, has_mode;
	uint64_t offset;
	const void *data;
	size_t len;
	uint64_t mode;
	uid_t uid; /* (uid_t)-1: not given */
	gid_t gid;
};

/* FNV-1a: tells apart long names that share the part kept of them. */
static uint32_t
fs_write_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* ".<name>.berth-upload", the name cut (and told apart by a hash) where
 * the whole would pass NAME_MAX. */
static void
fs_write_tmpname(struct fs_upload *u)
{
	size_t len = strlen(u->name);

	if (len <= FS_UPLOAD_KEEP)
		snprintf(
		    u->tmp, sizeof u->tmp, ".%s%s", u->name, FS_UPLOAD_SUFFIX);
	else
		snprintf(u->tmp, sizeof u->tmp, ".%.*s~%08x%s",
		    (int)(FS_UPLOAD_KEEP - 9), u->name, fs_write_hash(u->name),
		    FS_UPLOAD_SUFFIX);
}

/* Splits u->path into dir and name. -1 after an error reply. */
static int
fs_write_split(
    struct server_conn *c, const struct proto_msg *m, struct fs_upload *u)
{
	size_t len = strlen(u->path);
	char *slash;

	while (len > 1 && u->path[len - 1] == '/')
		len--;
	memcpy(u->dir, u->path, len);
	u->dir[len] = '\0';
	if (strcmp(u->dir, "/") == 0) {
		fserr_reply(c, m->id, EISDIR, "write", u->path);
		return -1;
	}
	slash = strrchr(u->dir, '/');
	snprintf(u->name, sizeof u->name, "%s", slash + 1);
	if (strcmp(u->name, ".") == 0 || strcmp(u->name, "..") == 0) {
		server_reply_error_path(c, m->id, PROTO_E_BAD_ARGS, u->path,
		    "write %s: the path must name a file", u->path);
		return -1;
	}
	slash[slash == u->dir ? 1 : 0] = '\0';
	fs_write_tmpname(u);
	return 0;
}

/* Reads "user" or "group": a name or a number. -1 after an error reply. */
static int
fs_write_arg_owner(struct server_conn *c, const struct proto_msg *m,
    const char *key, unsigned *out)
{
	const msgpack_object *o = proto_map_get(m->args, key);
	struct passwd *pw;
	struct group *gr;
	char name[256];

	if (o == NULL)
		return 0;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
	    o->via.u64 < UINT32_MAX) {
		*out = (unsigned)o->via.u64;
		return 0;
	}
	if (proto_arg_str(m->args, key, name, sizeof name) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "fs.write: \"%s\" must be a name or a number", key);
		return -1;
	}
	if (strcmp(key, "user") == 0 && (pw = getpwnam(name)) != NULL) {
		*out = pw->pw_uid;
		return 0;
	}
	if (strcmp(key, "group") == 0 && (gr = getgrnam(name)) != NULL) {
		*out = gr->gr_gid;
		return 0;
	}
	server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
	    "fs.write: no %s named \"%s\"", key, name);
	return -1;
}

/* Reads every argument but path. -1 after an error reply. */
static int
fs_write_args(
    struct server_conn *c, const struct proto_msg *m, struct fs_upload *u)
{
	const msgpack_object *data = proto_map_get(m->args, "data");
	unsigned uid = (unsigned)-1, gid = (unsigned)-1;

	u->has_offset = proto_map_get(m->args, "offset") != NULL;
	u->has_mode = proto_map_get(m->args, "mode") != NULL;
	u->mode = 0644;
	if (args_range(
	        c, m, "offset", 0, INT64_MAX - FS_CHUNK_MAX, &u->offset) < 0 ||
	    args_range(c, m, "mode", 0, 07777, &u->mode) < 0 ||
	    args_flag(c, m, "done", &u->done) < 0 ||
	    args_flag(c, m, "parents", &u->parents) < 0 ||
	    fs_write_arg_owner(c, m, "user", &uid) < 0 ||
	    fs_write_arg_owner(c, m, "group", &gid) < 0)
		return -1;
	u->uid = (uid_t)uid;
	u->gid = (gid_t)gid;
	if (data != NULL) {
		if (data->type != MSGPACK_OBJECT_BIN ||
		    data->via.bin.size > FS_CHUNK_MAX) {
			server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
			    "fs.write: \"data\" must be bin of at most %u "
			    "bytes",
			    FS_CHUNK_MAX);
			return -1;
		}
		u->has_data = true;
		u->data = data->via.bin.ptr;
		u->len = data->via.bin.size;
	}
	if (u->has_data && !u->has_offset) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "fs.write: \"data\" needs \"offset\" (0 starts afresh)");
		return -1;
	}
	return 0;
}

/* Opens the target's directory, making it first if asked to. */
static int
fs_write_opendir(struct fs_upload *u)
{
	char *at = NULL;

	u->dfd = open(u->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (u->dfd >= 0 || errno != ENOENT || !u->parents)
		return u->dfd;
	if (fs_mkdirs(u->dir, 0755, true, &at) != 0) {
		free(at);
		return -1;
	}
	u->dfd = open(u->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return u->dfd;
}

/* Opens the partial: created (or emptied) with fresh, else as it is.
 * It must be a regular file; O_NONBLOCK keeps a FIFO from hanging us. */
static int
fs_write_open(struct fs_upload *u, bool fresh, struct stat *st)
{
	int flags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, fd, err;

	if (fresh)
		flags |= O_CREAT | O_TRUNC;
	if ((fd = openat(u->dfd, u->tmp, flags, 0600)) < 0)
		return -1;
	if (fstat(fd, st) != 0)
		goto fail;
	if (!S_ISREG(st->st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if (fresh && fchmod(fd, 0600) != 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

static void
fs_write_reply(struct server_conn *c, const struct proto_msg *m,
    const struct fs_upload *u, const char *key, uint64_t val)
{
	msgpack_packer *pk = server_reply_begin(c, m->id);

	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "path", u->path);
	proto_pack_kv_u64(pk, key, val);
	server_reply_end(c);
}

/* A failed write or commit: the partial goes, the target stays. */
static void
fs_write_fail(struct server_conn *c, const struct proto_msg *m,
    struct fs_upload *u, int fd, int err)
{
	unlinkat(u->dfd, u->tmp, 0);
	close(fd);
	fserr_reply(c, m->id, err, "write", u->path);
}

static int
fs_write_data(struct fs_upload *u, int fd)
{
	const uint8_t *p = u->data;
	size_t done = 0;
	ssize_t n;

	while (done < u->len) {
		n = pwrite(
		    fd, p + done, u->len - done, (off_t)(u->offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		done += (size_t)n;
	}
	/* Start writing back now, so the fsync at the end has less to do. */
	if (u->len > 0)
		sync_file_range(
		    fd, (off_t)u->offset, (off_t)u->len, SYNC_FILE_RANGE_WRITE);
	return 0;
}

/*
 * Makes the partial open on fd the target: owner and mode (a replaced
 * file's unless given), fsync, rename over the target, fsync the
 * directory so the rename itself survives a crash. Takes fd.
 */
static void
fs_write_commit(struct server_conn *c, const struct proto_msg *m,
    struct fs_upload *u, int fd)
{
	struct stat old, st;
	mode_t mode = (mode_t)u->mode;
	uid_t uid = u->uid;
	gid_t gid = u->gid;

	if (fstatat(u->dfd, u->name, &old, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(old.st_mode)) {
			fs_write_fail(c, m, u, fd, EISDIR);
			return;
		}
		if (S_ISREG(old.st_mode)) {
			if (!u->has_mode)
				mode = old.st_mode & 07777;
			if (uid == (uid_t)-1)
				uid = old.st_uid;
			if (gid == (gid_t)-1)
				gid = old.st_gid;
		}
	}
	/* chown clears setuid bits: chmod comes after it. */
	if (((uid != (uid_t)-1 || gid != (gid_t)-1) &&
	        fchown(fd, uid, gid) != 0) ||
	    fchmod(fd, mode) != 0 || fsync(fd) != 0 || fstat(fd, &st) != 0 ||
	    renameat(u->dfd, u->tmp, u->dfd, u->name) != 0) {
		fs_write_fail(c, m, u, fd, errno);
		return;
	}
	close(fd);
	if (fsync(u->dfd) != 0) {
		fserr_reply(c, m->id, errno, "write", u->path);
		return;
	}
	fs_write_reply(c, m, u, "size", (uint64_t)st.st_size);
}

/* fs.write {path}: how much a partial upload holds. */
static void
fs_write_pending(
    struct server_conn *c, const struct proto_msg *m, struct fs_upload *u)
{
	struct stat st;

	if (fstatat(u->dfd, u->tmp, &st, AT_SYMLINK_NOFOLLOW) == 0)
		fs_write_reply(c, m, u, "pending", (uint64_t)st.st_size);
	else if (errno == ENOENT)
		fs_write_reply(c, m, u, "pending", 0);
	else
		fserr_reply(c, m->id, errno, "write", u->path);
}

/* Writes u's chunk into the partial, then commits it if done. */
static void
fs_write_chunk(
    struct server_conn *c, const struct proto_msg *m, struct fs_upload *u)
{
	bool fresh = u->has_offset && u->offset == 0;
	struct stat st;
	int fd;

	if (fresh && fstatat(u->dfd, u->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode)) {
		fserr_reply(c, m->id, EISDIR, "write", u->path);
		return;
	}
	if ((fd = fs_write_open(u, fresh, &st)) < 0) {
		if (errno != ENOENT)
			fserr_reply(c, m->id, errno, "write", u->path);
		else if (!u->has_offset)
			server_reply_error_path(c, m->id, PROTO_E_NOT_FOUND,
			    u->path, "write %s: no upload is pending", u->path);
		else
			server_reply_error_path(c, m->id, PROTO_E_CONFLICT,
			    u->path,
			    "write %s: no upload is pending (it holds 0 "
			    "bytes); start at offset 0",
			    u->path);
		return;
	}
	if (!u->has_offset)
		u->offset = (uint64_t)st.st_size;
	if ((uint64_t)st.st_size != u->offset) {
		server_reply_error_path(c, m->id, PROTO_E_CONFLICT, u->path,
		    "write %s: the upload holds %llu bytes, not %llu; go on "
		    "from there",
		    u->path, (unsigned long long)st.st_size,
		    (unsigned long long)u->offset);
		close(fd);
		return;
	}
	if (fs_write_data(u, fd) != 0) {
		fs_write_fail(c, m, u, fd, errno);
		return;
	}
	if (u->done) {
		fs_write_commit(c, m, u, fd);
		return;
	}
	close(fd);
	fs_write_reply(c, m, u, "pending", u->offset + u->len);
}

void
fs_op_write(struct server_conn *c, const struct proto_msg *m)
{
	struct fs_upload u = {.dfd = -1};

	if (fserr_arg_path(c, m, "path", u.path) < 0 ||
	    fs_write_args(c, m, &u) < 0 || fs_write_split(c, m, &u) < 0)
		return;
	if (fs_write_opendir(&u) < 0) {
		if (errno == ENOENT && !u.has_offset && !u.done)
			fs_write_reply(c, m, &u, "pending", 0);
		else
			fserr_reply(c, m->id, errno, "write", u.path);
		return;
	}
	if (!u.has_offset && !u.done)
		fs_write_pending(c, m, &u);
	else
		fs_write_chunk(c, m, &u);
	close(u.dfd);
}
