/* fs: the fs.* ops but uploads (fs_write.c) — stat, bounded listings,
 * ranged reads, mkdir, move, remove, chmod. Nothing is kept between
 * requests; every answer is built and sent within the request. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "fs.h"
#include "fs_write.h"
#include "fserr.h"
#include "xmalloc.h"

/* A listing stops before its answer could outgrow a message. */
#define FS_LIST_BYTES (6u << 20)
/* What one entry costs in an answer besides its strings. */
#define FS_LIST_ENTRY_COST 96
/* A recursive remove refuses trees deeper than this. */
#define FS_REMOVE_DEPTH 256
/* Passes over one directory before a remove gives up on a tree that
 * someone keeps filling. */
#define FS_REMOVE_PASSES 8

/* Makes one directory; an existing one is fine if ok_exists. */
static int
fs_mkdir_one(const char *path, mode_t mode, bool ok_exists)
{
	struct stat st;

	if (mkdir(path, mode) == 0)
		return fchmodat(AT_FDCWD, path, mode, 0);
	if (errno != EEXIST || !ok_exists)
		return -1;
	if (stat(path, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

int
fs_mkdirs(const char *path, mode_t mode, bool parents, char **at)
{
	char *p = xstrdup(path), *slash;
	int saved;

	for (slash = p + 1; parents && (slash = strchr(slash, '/')) != NULL;
	     slash++) {
		if (slash[1] == '/' || slash[1] == '\0')
			continue;
		*slash = '\0';
		if (fs_mkdir_one(p, 0755, true) != 0)
			goto fail;
		*slash = '/';
	}
	if (fs_mkdir_one(p, mode, parents) != 0)
		goto fail;
	free(p);
	return 0;
fail:
	saved = errno;
	*at = p;
	errno = saved;
	return -1;
}

static const char *
fs_type(mode_t mode)
{
	if (S_ISREG(mode))
		return "file";
	if (S_ISDIR(mode))
		return "dir";
	if (S_ISLNK(mode))
		return "symlink";
	return "other";
}

static int64_t
fs_mtime_ms(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000 +
	    st->st_mtim.tv_nsec / 1000000;
}

/* The text of symlink name in dirfd, or NULL if it cannot be read. */
static char *
fs_link_text(int dirfd, const char *name)
{
	char buf[FSERR_PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof buf - 1);

	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

static void
fs_pack_kv_nstr(msgpack_packer *pk, const char *key, const char *val)
{
	proto_pack_str(pk, key);
	if (val == NULL)
		msgpack_pack_nil(pk);
	else
		proto_pack_str(pk, val);
}

/* ---- fs.stat ---- */

void
fs_op_stat(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX], *target = NULL;
	struct passwd *pw;
	struct group *gr;
	msgpack_packer *pk;
	struct stat st;
	bool follow = true;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_flag(c, m, "follow", &follow) < 0)
		return;
	if (fstatat(AT_FDCWD, path, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) !=
	    0) {
		fserr_reply(c, m->id, errno, "stat", path);
		return;
	}
	if (S_ISLNK(st.st_mode))
		target = fs_link_text(AT_FDCWD, path);
	pw = getpwuid(st.st_uid);
	gr = getgrgid(st.st_gid);

	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, target != NULL ? 10 : 9);
	proto_pack_kv_str(pk, "path", path);
	proto_pack_kv_str(pk, "type", fs_type(st.st_mode));
	proto_pack_kv_u64(pk, "size", (uint64_t)st.st_size);
	proto_pack_kv_u64(pk, "mode", st.st_mode & 07777);
	proto_pack_kv_u64(pk, "uid", st.st_uid);
	proto_pack_kv_u64(pk, "gid", st.st_gid);
	fs_pack_kv_nstr(pk, "user", pw != NULL ? pw->pw_name : NULL);
	fs_pack_kv_nstr(pk, "group", gr != NULL ? gr->gr_name : NULL);
	proto_pack_kv_i64(pk, "mtime", fs_mtime_ms(&st));
	if (target != NULL)
		proto_pack_kv_str(pk, "target", target);
	server_reply_end(c);
	free(target);
}

/* ---- fs.list ---- */

/* One entry of a listing; owns its strings. */
struct fs_entry {
	char *path;
	const char *name; /* inside path */
	char *target;     /* symlinks only */
	struct stat st;
};

/* A listing being gathered; owns the entries. */
struct fs_listing {
	struct fs_entry *v;
	size_t n, cap;
	size_t limit;
	size_t bytes; /* what the answer will roughly take */
	unsigned skipped;
	bool truncated;
};

static char *
fs_join(const char *dir, const char *name)
{
	return xasprintf("%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name);
}

static void
fs_list_add(struct fs_listing *l, int dirfd, const char *dpath,
    const char *name, const struct stat *st)
{
	struct fs_entry *e;

	if (l->n == l->cap) {
		l->cap = l->cap == 0 ? 64 : l->cap * 2;
		l->v = xreallocarray(l->v, l->cap, sizeof *l->v);
	}
	e = &l->v[l->n++];
	e->path = fs_join(dpath, name);
	e->name = e->path + strlen(e->path) - strlen(name);
	e->st = *st;
	e->target = S_ISLNK(st->st_mode) ? fs_link_text(dirfd, name) : NULL;
	l->bytes += FS_LIST_ENTRY_COST + strlen(e->path) + strlen(name) +
	    (e->target != NULL ? strlen(e->target) : 0);
}

/*
 * Lists the directory open on fd (which this takes) as dpath, descending
 * depth - 1 more levels. Entries are taken in directory order and the
 * walk stops at the listing's limits, so a huge tree costs no more than
 * the answer it gives; the sort comes after.
 */
static void
fs_list_dir(struct fs_listing *l, int fd, const char *dpath, unsigned depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	struct stat st;
	int sub;

	if (d == NULL) {
		close(fd);
		l->skipped++;
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (l->n >= l->limit || l->bytes >= FS_LIST_BYTES) {
			l->truncated = true;
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) !=
		    0)
			continue; /* gone since readdir */
		fs_list_add(l, dirfd(d), dpath, de->d_name, &st);
		if (!S_ISDIR(st.st_mode) || depth <= 1)
			continue;
		sub = openat(dirfd(d), de->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			l->skipped++;
		else
			fs_list_dir(l, sub, l->v[l->n - 1].path, depth - 1);
	}
	closedir(d);
}

static int
fs_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fs_entry *)a)->path,
	    ((const struct fs_entry *)b)->path);
}

static void
fs_pack_entry(msgpack_packer *pk, const struct fs_entry *e)
{
	msgpack_pack_map(pk, e->target != NULL ? 7 : 6);
	proto_pack_kv_str(pk, "path", e->path);
	proto_pack_kv_str(pk, "name", e->name);
	proto_pack_kv_str(pk, "type", fs_type(e->st.st_mode));
	proto_pack_kv_u64(pk, "size", (uint64_t)e->st.st_size);
	proto_pack_kv_u64(pk, "mode", e->st.st_mode & 07777);
	proto_pack_kv_i64(pk, "mtime", fs_mtime_ms(&e->st));
	if (e->target != NULL)
		proto_pack_kv_str(pk, "target", e->target);
}

void
fs_op_list(struct server_conn *c, const struct proto_msg *m)
{
	struct fs_listing l = {0};
	char path[FSERR_PATH_MAX];
	uint64_t depth = 1, limit = 10000;
	msgpack_packer *pk;
	size_t i;
	int fd;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_range(c, m, "depth", 1, FS_DEPTH_MAX, &depth) < 0 ||
	    args_range(c, m, "limit", 1, FS_LIST_MAX, &limit) < 0)
		return;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fserr_reply(c, m->id, errno, "list", path);
		return;
	}
	l.limit = limit;
	fs_list_dir(&l, fd, path, depth);
	qsort(l.v, l.n, sizeof *l.v, fs_entry_cmp);

	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 4);
	proto_pack_kv_str(pk, "path", path);
	proto_pack_str(pk, "entries");
	msgpack_pack_array(pk, l.n);
	for (i = 0; i < l.n; i++)
		fs_pack_entry(pk, &l.v[i]);
	proto_pack_kv_bool(pk, "truncated", l.truncated);
	proto_pack_kv_u64(pk, "skipped", l.skipped);
	server_reply_end(c);
	for (i = 0; i < l.n; i++) {
		free(l.v[i].path);
		free(l.v[i].target);
	}
	free(l.v);
}

/* ---- fs.read ---- */

/* Reads up to len bytes at off, short only at the end of the file. */
static ssize_t
fs_pread_full(int fd, uint8_t *buf, size_t len, off_t off)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = pread(fd, buf + got, len - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

void
fs_op_read(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX];
	uint64_t offset = 0, length = FS_CHUNK_MAX;
	msgpack_packer *pk;
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	int fd;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_range(c, m, "offset", 0, INT64_MAX - FS_CHUNK_MAX, &offset) <
	        0 ||
	    args_range(c, m, "length", 1, FS_CHUNK_MAX, &length) < 0)
		return;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		fserr_reply(c, m->id, errno, "read", path);
		return;
	}
	if (fstat(fd, &st) != 0) {
		fserr_reply(c, m->id, errno, "read", path);
		close(fd);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			fserr_reply(c, m->id, EISDIR, "read", path);
		else
			server_reply_error_path(c, m->id, PROTO_E_BAD_ARGS,
			    path, "read %s: not a regular file", path);
		close(fd);
		return;
	}
	buf = xmalloc(length);
	n = fs_pread_full(fd, buf, length, (off_t)offset);
	if (n < 0 || fstat(fd, &st) != 0) {
		fserr_reply(c, m->id, errno, "read", path);
		free(buf);
		close(fd);
		return;
	}
	close(fd);

	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 4);
	proto_pack_str(pk, "data");
	msgpack_pack_bin(pk, (size_t)n);
	msgpack_pack_bin_body(pk, buf, (size_t)n);
	proto_pack_kv_u64(pk, "offset", offset);
	proto_pack_kv_u64(pk, "size", (uint64_t)st.st_size);
	/* A short read is the end even where the size says 0 (/proc). */
	proto_pack_kv_bool(pk, "eof",
	    (uint64_t)n < length ||
	        (st.st_size > 0 &&
	            offset + (uint64_t)n >= (uint64_t)st.st_size));
	server_reply_end(c);
	free(buf);
}

/* ---- fs.mkdir ---- */

void
fs_op_mkdir(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX], *at = NULL;
	uint64_t mode = 0755;
	bool parents = false;
	msgpack_packer *pk;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_flag(c, m, "parents", &parents) < 0 ||
	    args_range(c, m, "mode", 0, 07777, &mode) < 0)
		return;
	if (fs_mkdirs(path, (mode_t)mode, parents, &at) != 0) {
		int err = errno;

		if (strcmp(at, path) == 0)
			fserr_reply(c, m->id, err, "mkdir", path);
		else
			server_reply_error_path(c, m->id, fserr_code(err), path,
			    "mkdir %s (at %s): %s", path, at, strerror(err));
		free(at);
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "path", path);
	server_reply_end(c);
}

/* ---- fs.move ---- */

/* The path a failed rename of from to to is about. */
static const char *
fs_move_blame(int err, const char *from, const char *to)
{
	struct stat st;

	if (err == EEXIST || err == ENOTEMPTY || err == EISDIR || err == EXDEV)
		return to;
	return lstat(from, &st) == 0 ? to : from;
}

void
fs_op_move(struct server_conn *c, const struct proto_msg *m)
{
	char from[FSERR_PATH_MAX], to[FSERR_PATH_MAX];
	bool overwrite = false;
	msgpack_packer *pk;
	struct stat st;
	int r, err;

	if (fserr_arg_path(c, m, "from", from) < 0 ||
	    fserr_arg_path(c, m, "to", to) < 0 ||
	    args_flag(c, m, "overwrite", &overwrite) < 0)
		return;
	r = renameat2(
	    AT_FDCWD, from, AT_FDCWD, to, overwrite ? 0 : RENAME_NOREPLACE);
	if (r != 0 && errno == EINVAL && !overwrite) {
		/* A filesystem without RENAME_NOREPLACE: check, then rename
		 * (racy, but only against someone creating "to" meanwhile). */
		if (lstat(to, &st) == 0)
			errno = EEXIST;
		else
			r = rename(from, to);
	}
	if (r != 0) {
		err = errno;
		if (err == EXDEV) {
			server_reply_error_path(c, m->id, PROTO_E_BAD_ARGS, to,
			    "move %s to %s: a different filesystem (copy it "
			    "instead)",
			    from, to);
			return;
		}
		fserr_reply(
		    c, m->id, err, "move", fs_move_blame(err, from, to));
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "from", from);
	proto_pack_kv_str(pk, "to", to);
	server_reply_end(c);
}

/* ---- fs.remove ---- */

/* A recursive remove in progress: what it removed, where it failed. */
struct fs_remove {
	uint64_t removed;
	int err;
	bool too_deep;
	char *at; /* the path that failed, owned */
};

static void
fs_remove_fail(
    struct fs_remove *r, int err, const char *dpath, const char *name)
{
	if (r->at != NULL)
		return;
	r->err = err;
	r->at = name != NULL ? fs_join(dpath, name) : xstrdup(dpath);
}

static int fs_remove_tree(
    struct fs_remove *r, int fd, const char *dpath, unsigned depth);

/* Removes name in the directory open on dirfd (dpath), whatever it is. */
static int
fs_remove_entry(struct fs_remove *r, int dirfd, const char *dpath,
    const char *name, dev_t dev, unsigned depth)
{
	struct stat st;
	char *sub;
	int fd, rv;

	if (unlinkat(dirfd, name, 0) == 0) {
		r->removed++;
		return 0;
	}
	if (errno == ENOENT)
		return 0;
	if (errno != EISDIR) {
		fs_remove_fail(r, errno, dpath, name);
		return -1;
	}
	fd = openat(
	    dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		fs_remove_fail(r, errno, dpath, name);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	sub = fs_join(dpath, name);
	if (st.st_dev != dev) {
		/* Another filesystem is mounted here: not ours to empty. */
		fs_remove_fail(r, EBUSY, sub, NULL);
		close(fd);
		free(sub);
		return -1;
	}
	rv = fs_remove_tree(r, fd, sub, depth + 1);
	free(sub);
	if (rv != 0)
		return -1;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
		fs_remove_fail(r, errno, dpath, name);
		return -1;
	}
	r->removed++;
	return 0;
}

/*
 * Empties the directory open on fd (which this takes), never following a
 * symlink and never leaving its filesystem. Entries are removed while the
 * directory is read, so it is read again until a pass finds it empty.
 */
static int
fs_remove_tree(struct fs_remove *r, int fd, const char *dpath, unsigned depth)
{
	struct dirent *de;
	struct stat st;
	unsigned pass;
	bool again = true;
	DIR *d;

	if (depth > FS_REMOVE_DEPTH) {
		r->too_deep = true;
		fs_remove_fail(r, ENOTEMPTY, dpath, NULL);
		close(fd);
		return -1;
	}
	if (fstat(fd, &st) != 0 || (d = fdopendir(fd)) == NULL) {
		fs_remove_fail(r, errno, dpath, NULL);
		close(fd);
		return -1;
	}
	for (pass = 0; again && pass < FS_REMOVE_PASSES; pass++) {
		again = false;
		rewinddir(d);
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			again = true;
			if (fs_remove_entry(r, dirfd(d), dpath, de->d_name,
			        st.st_dev, depth) != 0) {
				closedir(d);
				return -1;
			}
		}
	}
	closedir(d);
	return 0;
}

static void
fs_remove_reply(struct server_conn *c, const struct proto_msg *m,
    const char *path, struct fs_remove *r)
{
	msgpack_packer *pk;

	if (r->at != NULL) {
		if (r->too_deep)
			server_reply_error_path(c, m->id, PROTO_E_NOT_EMPTY,
			    path,
			    "remove %s: %s is deeper than %d levels (%llu "
			    "removed)",
			    path, r->at, FS_REMOVE_DEPTH,
			    (unsigned long long)r->removed);
		else
			server_reply_error_path(c, m->id, fserr_code(r->err),
			    path, "remove %s: %s: %s (%llu removed)", path,
			    r->at, strerror(r->err),
			    (unsigned long long)r->removed);
		free(r->at);
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "path", path);
	proto_pack_kv_u64(pk, "removed", r->removed);
	server_reply_end(c);
}

void
fs_op_remove(struct server_conn *c, const struct proto_msg *m)
{
	struct fs_remove r = {0};
	char path[FSERR_PATH_MAX];
	bool recursive = false;
	struct stat st;
	int fd;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_flag(c, m, "recursive", &recursive) < 0)
		return;
	if (path[strspn(path, "/")] == '\0') {
		server_reply_error_path(c, m->id, PROTO_E_BAD_ARGS, path,
		    "remove: refusing to remove /");
		return;
	}
	if (lstat(path, &st) != 0) {
		fserr_reply(c, m->id, errno, "remove", path);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) != 0) {
			fserr_reply(c, m->id, errno, "remove", path);
			return;
		}
		r.removed = 1;
	} else if (!recursive) {
		if (rmdir(path) != 0) {
			/* rmdir may say EEXIST for a directory with entries. */
			fserr_reply(c, m->id,
			    errno == EEXIST ? ENOTEMPTY : errno, "remove",
			    path);
			return;
		}
		r.removed = 1;
	} else {
		fd =
		    open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			fs_remove_fail(&r, errno, path, NULL);
		else if (fs_remove_tree(&r, fd, path, 1) == 0) {
			if (rmdir(path) != 0)
				fs_remove_fail(&r, errno, path, NULL);
			else
				r.removed++;
		}
	}
	fs_remove_reply(c, m, path, &r);
}

/* ---- fs.chmod ---- */

void
fs_op_chmod(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX];
	uint64_t mode = UINT64_MAX;
	msgpack_packer *pk;

	if (fserr_arg_path(c, m, "path", path) < 0)
		return;
	if (proto_map_get(m->args, "mode") == NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "fs.chmod needs \"mode\" (an integer in 0-4095)");
		return;
	}
	if (args_range(c, m, "mode", 0, 07777, &mode) < 0)
		return;
	if (fchmodat(AT_FDCWD, path, (mode_t)mode, 0) != 0) {
		fserr_reply(c, m->id, errno, "chmod", path);
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "path", path);
	proto_pack_kv_u64(pk, "mode", mode);
	server_reply_end(c);
}
