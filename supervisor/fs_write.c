/* fs_write: fs.write — an upload goes to a partial file beside its target
 * and is renamed over it when done, so a reader sees the old file or the
 * new one, never a part. The partial is made afresh (O_EXCL) under a name
 * with a random part, so nobody can have made or opened it first; it is
 * found again by its target's name and its owner (the uid berthd writes
 * as), so a client that lost its connection asks how much it holds and
 * goes on from there. Owns nothing in memory; the partials live on disk. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "fs.h"
#include "fs_write.h"
#include "fserr.h"
#include "fsopen.h"
#include "fsuser.h"

#define FS_UPLOAD_SUFFIX ".berth-upload"
/* The random part of a partial's name: hex digits. */
#define FS_UPLOAD_RAND 16
/* The longest target name kept whole in its partial's name,
 * ".<name>.<random>.berth-upload". */
#define FS_UPLOAD_KEEP                                                         \
	(NAME_MAX - 2 - FS_UPLOAD_RAND - (sizeof FS_UPLOAD_SUFFIX - 1))

/* One fs.write request, its arguments read and its target split; lives
 * for the request. dfd is the target's directory, owned. */
struct fs_upload {
	char path[FSERR_PATH_MAX]; /* as the client gave it */
	char dir[FSERR_PATH_MAX];
	char name[NAME_MAX + 1];
	char stem[NAME_MAX + 1]; /* ".<name>.": what the partials' start */
	/* the partial, in dir: at most NAME_MAX (FS_UPLOAD_KEEP), the room
	 * is what snprintf can be shown to need */
	char tmp[NAME_MAX + 1 + FS_UPLOAD_RAND + sizeof FS_UPLOAD_SUFFIX];
	int dfd;

	bool has_offset, has_data, done, parents, has_mode, follow;
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

/* ".<name>.", the name cut (and told apart by a hash) where the
 * partial's whole name would pass NAME_MAX. */
static void
fs_write_stem(struct fs_upload *u)
{
	size_t len = strlen(u->name);

	if (len <= FS_UPLOAD_KEEP)
		snprintf(u->stem, sizeof u->stem, ".%s.", u->name);
	else
		snprintf(u->stem, sizeof u->stem, ".%.*s~%08x.",
		    (int)(FS_UPLOAD_KEEP - 9), u->name, fs_write_hash(u->name));
}

/* Whether name is a partial of u's target: stem, random, suffix. */
static bool
fs_write_is_partial(const struct fs_upload *u, const char *name)
{
	size_t n = strlen(u->stem);

	return strncmp(name, u->stem, n) == 0 &&
	    strspn(name + n, "0123456789abcdef") == FS_UPLOAD_RAND &&
	    strcmp(name + n + FS_UPLOAD_RAND, FS_UPLOAD_SUFFIX) == 0;
}

/* Whether st is a partial berthd made as it writes now: a regular file
 * of the uid it writes as, with no other link to it. */
static bool
fs_write_is_ours(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_nlink == 1 &&
	    st->st_uid == (uid_t)setfsuid((uid_t)-1);
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
	fs_write_stem(u);
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
	    fs_write_arg_owner(c, m, "group", &gid) < 0 ||
	    fserr_arg_follow(c, m, &u->follow) < 0)
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

	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

	u->dfd = fsopen_open(u->dir, flags, 0, u->follow);
	if (u->dfd >= 0 || errno != ENOENT || !u->parents)
		return u->dfd;
	if (fs_mkdirs(u->dir, 0755, true, u->follow, &at) != 0) {
		free(at);
		return -1;
	}
	u->dfd = fsopen_open(u->dir, flags, 0, u->follow);
	return u->dfd;
}

/*
 * Finds u's partial (fs_write_is_partial and fs_write_is_ours) into
 * u->tmp and *st; with discard, removes every one found instead. Returns
 * 0, or -1 with errno set (ENOENT: none).
 */
static int
fs_write_find(struct fs_upload *u, struct stat *st, bool discard)
{
	int fd = openat(u->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	u->tmp[0] = '\0';
	while ((de = readdir(d)) != NULL) {
		if (!fs_write_is_partial(u, de->d_name) ||
		    fstatat(u->dfd, de->d_name, st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !fs_write_is_ours(st))
			continue;
		if (discard) {
			unlinkat(u->dfd, de->d_name, 0);
			continue;
		}
		snprintf(u->tmp, sizeof u->tmp, "%s", de->d_name);
		break;
	}
	closedir(d);
	if (u->tmp[0] == '\0') {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* Makes a new partial of u, named with a random part, O_EXCL. */
static int
fs_write_create(struct fs_upload *u)
{
	uint8_t r[FS_UPLOAD_RAND / 2];
	char hex[FS_UPLOAD_RAND + 1];
	size_t i;

	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return -1;
	for (i = 0; i < sizeof r; i++)
		snprintf(hex + 2 * i, 3, "%02x", r[i]);
	snprintf(
	    u->tmp, sizeof u->tmp, "%s%s%s", u->stem, hex, FS_UPLOAD_SUFFIX);
	return openat(u->dfd, u->tmp,
	    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/*
 * Opens the partial: a new one with fresh (any earlier one of ours goes),
 * else the one there is — the file found, still regular, still ours and
 * with no other link. O_NONBLOCK keeps a FIFO swapped in from hanging us.
 */
static int
fs_write_open(struct fs_upload *u, bool fresh, struct stat *st)
{
	struct stat found;
	int fd, err;

	if (fresh) {
		fs_write_find(u, st, true);
		if ((fd = fs_write_create(u)) < 0)
			return -1;
	} else {
		if (fs_write_find(u, &found, false) != 0)
			return -1;
		fd = openat(u->dfd, u->tmp,
		    O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return -1;
	}
	if (fstat(fd, st) != 0)
		goto fail;
	if (!fs_write_is_ours(st) ||
	    (!fresh &&
	        (st->st_dev != found.st_dev || st->st_ino != found.st_ino))) {
		errno = ENOENT;
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

/* Whether the partial open on fd is still the file berthd made: ours, no
 * other link to it (a hard link would keep it after the rename), and what
 * its name in the directory is. Returns 0, or -1. */
static int
fs_write_check(const struct fs_upload *u, int fd)
{
	struct stat st, at;

	if (fstat(fd, &st) != 0 || !fs_write_is_ours(&st) ||
	    fstatat(u->dfd, u->tmp, &at, AT_SYMLINK_NOFOLLOW) != 0 ||
	    at.st_dev != st.st_dev || at.st_ino != st.st_ino)
		return -1;
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

	if (fs_write_check(u, fd) != 0) {
		unlinkat(u->dfd, u->tmp, 0);
		close(fd);
		server_reply_error_path(c, m->id, PROTO_E_CONFLICT, u->path,
		    "write %s: the partial upload was linked or replaced by "
		    "someone else; it is removed, start again at offset 0",
		    u->path);
		return;
	}
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

	if (fs_write_find(u, &st, false) == 0)
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
		/* A fresh partial that cannot be made is the directory's
		 * fault, whatever errno: no upload is in question. */
		if (errno != ENOENT || fresh)
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

static void
fs_do_write(struct server_conn *c, const struct proto_msg *m)
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

void
fs_op_write(struct server_conn *c, const struct proto_msg *m)
{
	fsuser_run(c, m, fs_do_write);
}
