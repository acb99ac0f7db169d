/* fs: the fs.* ops but uploads (fs_write.c) — stat, bounded listings,
 * ranged reads, mkdir, move, remove, chmod. Nothing is kept between
 * requests; every answer is built and sent within the request. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "args.h"
#include "fs.h"
#include "fs_write.h"
#include "fserr.h"
#include "fsopen.h"
#include "fsuser.h"
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

/* Sets the mode of the directory just made as name in dfd, exactly
 * (mkdirat's is masked by the umask), through the directory itself. */
static int
fs_mkdir_mode(int dfd, const char *name, mode_t mode)
{
	int fd =
	    openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rv = fd >= 0 && fchmod(fd, mode) == 0 ? 0 : -1, err = errno;

	if (fd >= 0)
		close(fd);
	errno = err;
	return rv;
}

/* Makes one directory; an existing one is fine if ok_exists (a symlink
 * there only if follow, and then to a directory). */
static int
fs_mkdir_one(const char *path, mode_t mode, bool ok_exists, bool follow)
{
	char name[NAME_MAX + 1];
	struct stat st;
	int dfd, rv = -1, err;

	if ((dfd = fsopen_parent(path, follow, name)) < 0)
		return -1;
	if (mkdirat(dfd, name, mode) == 0)
		rv = fs_mkdir_mode(dfd, name, mode);
	else if (errno == EEXIST && ok_exists &&
	    fstatat(dfd, name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode))
			rv = 0;
		else
			errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
	}
	err = errno;
	close(dfd);
	errno = err;
	return rv;
}

int
fs_mkdirs(const char *path, mode_t mode, bool parents, bool follow, char **at)
{
	char *p = xstrdup(path), *slash;
	int saved;

	for (slash = p + 1; parents && (slash = strchr(slash, '/')) != NULL;
	     slash++) {
		if (slash[1] == '/' || slash[1] == '\0')
			continue;
		*slash = '\0';
		if (fs_mkdir_one(p, 0755, true, follow) != 0)
			goto fail;
		*slash = '/';
	}
	if (fs_mkdir_one(p, mode, parents, follow) != 0)
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

/* lstat of path, no symlink followed above it; *target is the text of
 * a symlink (the caller frees it). Returns 0, or -1 with errno set. */
static int
fs_lstat(const char *path, struct stat *st, char **target)
{
	char name[NAME_MAX + 1];
	int dfd = fsopen_parent(path, false, name), rv, err;

	if (dfd < 0)
		return -1;
	rv = fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW);
	err = errno;
	if (rv == 0 && S_ISLNK(st->st_mode))
		*target = fs_link_text(dfd, name);
	close(dfd);
	errno = err;
	return rv;
}

static void
fs_do_stat(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX], *target = NULL;
	struct passwd *pw;
	struct group *gr;
	msgpack_packer *pk;
	struct stat st;
	bool follow = false, follow_all = false;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_flag(c, m, "follow", &follow) < 0 ||
	    fserr_arg_follow(c, m, &follow_all) < 0)
		return;
	if ((follow || follow_all ? stat(path, &st)
	                          : fs_lstat(path, &st, &target)) != 0) {
		fserr_reply(c, m->id, errno, "stat", path);
		return;
	}
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

static void
fs_do_list(struct server_conn *c, const struct proto_msg *m)
{
	struct fs_listing l = {0};
	char path[FSERR_PATH_MAX];
	uint64_t depth = 1, limit = 10000;
	msgpack_packer *pk;
	bool follow;
	size_t i;
	int fd;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_range(c, m, "depth", 1, FS_DEPTH_MAX, &depth) < 0 ||
	    args_range(c, m, "limit", 1, FS_LIST_MAX, &limit) < 0 ||
	    fserr_arg_follow(c, m, &follow) < 0)
		return;
	fd = fsopen_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, follow);
	if (fd < 0) {
		fserr_reply(c, m->id, errno, "list", path);
		return;
	}
	l.limit = limit;
	fs_list_dir(&l, fd, path, depth);
	if (l.n > 0) /* an empty directory has no array to sort */
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

static void
fs_do_read(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX];
	uint64_t offset = 0, length = FS_CHUNK_MAX;
	msgpack_packer *pk;
	struct stat st;
	bool follow;
	uint8_t *buf;
	ssize_t n;
	int fd;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_range(c, m, "offset", 0, INT64_MAX - FS_CHUNK_MAX, &offset) <
	        0 ||
	    args_range(c, m, "length", 1, FS_CHUNK_MAX, &length) < 0 ||
	    fserr_arg_follow(c, m, &follow) < 0)
		return;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	fd = fsopen_open(
	    path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0, follow);
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

static void
fs_do_mkdir(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX], *at = NULL;
	uint64_t mode = 0755;
	bool parents = false, follow;
	msgpack_packer *pk;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_flag(c, m, "parents", &parents) < 0 ||
	    args_range(c, m, "mode", 0, 07777, &mode) < 0 ||
	    fserr_arg_follow(c, m, &follow) < 0)
		return;
	if (fs_mkdirs(path, (mode_t)mode, parents, follow, &at) != 0) {
		int err = errno;

		if (strcmp(at, path) == 0 || err == ELOOP)
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

/* Both ends of a move: each its directory (owned) and its name there. */
struct fs_move {
	char from[FSERR_PATH_MAX], to[FSERR_PATH_MAX];
	char fname[NAME_MAX + 1], tname[NAME_MAX + 1];
	int fdir, tdir;
};

/* The path a failed rename is about. */
static const char *
fs_move_blame(int err, const struct fs_move *mv)
{
	struct stat st;

	if (err == EEXIST || err == ENOTEMPTY || err == EISDIR || err == EXDEV)
		return mv->to;
	return fstatat(mv->fdir, mv->fname, &st, AT_SYMLINK_NOFOLLOW) == 0
	    ? mv->to
	    : mv->from;
}

static int
fs_move_rename(const struct fs_move *mv, bool overwrite)
{
	struct stat st;
	int r = renameat2(mv->fdir, mv->fname, mv->tdir, mv->tname,
	    overwrite ? 0 : RENAME_NOREPLACE);

	if (r != 0 && errno == EINVAL && !overwrite) {
		/* A filesystem without RENAME_NOREPLACE: check, then rename
		 * (racy, but only against someone creating "to" meanwhile). */
		if (fstatat(mv->tdir, mv->tname, &st, AT_SYMLINK_NOFOLLOW) ==
		    0) {
			errno = EEXIST;
			return -1;
		}
		r = renameat(mv->fdir, mv->fname, mv->tdir, mv->tname);
	}
	return r;
}

static void
fs_move_reply(struct server_conn *c, const struct proto_msg *m,
    const struct fs_move *mv, bool overwrite)
{
	msgpack_packer *pk;
	int err;

	if (fs_move_rename(mv, overwrite) == 0) {
		pk = server_reply_begin(c, m->id);
		msgpack_pack_map(pk, 2);
		proto_pack_kv_str(pk, "from", mv->from);
		proto_pack_kv_str(pk, "to", mv->to);
		server_reply_end(c);
		return;
	}
	err = errno;
	if (err == EXDEV)
		server_reply_error_path(c, m->id, PROTO_E_BAD_ARGS, mv->to,
		    "move %s to %s: a different filesystem (copy it instead)",
		    mv->from, mv->to);
	else
		fserr_reply(c, m->id, err, "move", fs_move_blame(err, mv));
}

static void
fs_do_move(struct server_conn *c, const struct proto_msg *m)
{
	struct fs_move mv = {.fdir = -1, .tdir = -1};
	bool overwrite = false, follow;

	if (fserr_arg_path(c, m, "from", mv.from) < 0 ||
	    fserr_arg_path(c, m, "to", mv.to) < 0 ||
	    args_flag(c, m, "overwrite", &overwrite) < 0 ||
	    fserr_arg_follow(c, m, &follow) < 0)
		return;
	if ((mv.fdir = fsopen_parent(mv.from, follow, mv.fname)) < 0)
		fserr_reply(c, m->id, errno, "move", mv.from);
	else if ((mv.tdir = fsopen_parent(mv.to, follow, mv.tname)) < 0)
		fserr_reply(c, m->id, errno, "move", mv.to);
	else
		fs_move_reply(c, m, &mv, overwrite);
	if (mv.fdir >= 0)
		close(mv.fdir);
	if (mv.tdir >= 0)
		close(mv.tdir);
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

/* Removes name in dfd, path as the client gave it, into r. */
static void
fs_remove_at(struct fs_remove *r, int dfd, const char *name, const char *path,
    bool recursive)
{
	struct stat st;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		fs_remove_fail(r, errno, path, NULL);
	else if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dfd, name, 0) != 0)
			fs_remove_fail(r, errno, path, NULL);
		else
			r->removed = 1;
	} else if (!recursive) {
		/* rmdir may say EEXIST for a directory with entries. */
		if (unlinkat(dfd, name, AT_REMOVEDIR) != 0)
			fs_remove_fail(
			    r, errno == EEXIST ? ENOTEMPTY : errno, path, NULL);
		else
			r->removed = 1;
	} else {
		fd = openat(
		    dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			fs_remove_fail(r, errno, path, NULL);
		else if (fs_remove_tree(r, fd, path, 1) == 0) {
			if (unlinkat(dfd, name, AT_REMOVEDIR) != 0)
				fs_remove_fail(r, errno, path, NULL);
			else
				r->removed++;
		}
	}
}

static void
fs_do_remove(struct server_conn *c, const struct proto_msg *m)
{
	struct fs_remove r = {0};
	char path[FSERR_PATH_MAX], name[NAME_MAX + 1];
	bool recursive = false, follow;
	int dfd;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    args_flag(c, m, "recursive", &recursive) < 0 ||
	    fserr_arg_follow(c, m, &follow) < 0)
		return;
	if (path[strspn(path, "/")] == '\0') {
		server_reply_error_path(c, m->id, PROTO_E_BAD_ARGS, path,
		    "remove: refusing to remove /");
		return;
	}
	if ((dfd = fsopen_parent(path, follow, name)) < 0) {
		fserr_reply(c, m->id, errno, "remove", path);
		return;
	}
	fs_remove_at(&r, dfd, name, path, recursive);
	close(dfd);
	if (r.at != NULL && r.removed == 0 && strcmp(r.at, path) == 0) {
		fserr_reply(c, m->id, r.err, "remove", path);
		free(r.at);
		return;
	}
	fs_remove_reply(c, m, path, &r);
}

/* ---- fs.chmod ---- */

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

/* chmod of the file open on O_PATH fd: fchmodat2 where the kernel has it
 * (6.6), else through /proc — never through a path that could be swapped
 * since it was resolved. */
static int
fs_chmod_fd(int fd, mode_t mode)
{
	char proc[64];

	if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOSYS && errno != EINVAL)
		return -1;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return chmod(proc, mode);
}

static void
fs_do_chmod(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX];
	uint64_t mode = UINT64_MAX;
	msgpack_packer *pk;
	struct stat st;
	bool follow;
	int fd, err = 0;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    fserr_arg_follow(c, m, &follow) < 0)
		return;
	if (proto_map_get(m->args, "mode") == NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "fs.chmod needs \"mode\" (an integer in 0-4095)");
		return;
	}
	if (args_range(c, m, "mode", 0, 07777, &mode) < 0)
		return;
	fd = fsopen_open(
	    path, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW), 0, follow);
	if (fd < 0 || fstat(fd, &st) != 0)
		err = errno;
	else if (S_ISLNK(st.st_mode))
		err = ELOOP;
	else if (fs_chmod_fd(fd, (mode_t)mode) != 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	if (err != 0) {
		fserr_reply(c, m->id, err, "chmod", path);
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "path", path);
	proto_pack_kv_u64(pk, "mode", mode);
	server_reply_end(c);
}

/* Every op is done with the rights of the user "as" names, if any. */

void
fs_op_stat(struct server_conn *c, const struct proto_msg *m)
{
	fsuser_run(c, m, fs_do_stat);
}

void
fs_op_list(struct server_conn *c, const struct proto_msg *m)
{
	fsuser_run(c, m, fs_do_list);
}

void
fs_op_read(struct server_conn *c, const struct proto_msg *m)
{
	fsuser_run(c, m, fs_do_read);
}

void
fs_op_mkdir(struct server_conn *c, const struct proto_msg *m)
{
	fsuser_run(c, m, fs_do_mkdir);
}

void
fs_op_move(struct server_conn *c, const struct proto_msg *m)
{
	fsuser_run(c, m, fs_do_move);
}

void
fs_op_remove(struct server_conn *c, const struct proto_msg *m)
{
	fsuser_run(c, m, fs_do_remove);
}

void
fs_op_chmod(struct server_conn *c, const struct proto_msg *m)
{
	fsuser_run(c, m, fs_do_chmod);
}
