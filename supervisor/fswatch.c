/* fswatch: fs.watch (see fswatch.h). One inotify instance serves every
 * watch; a watch holds one node per directory it watches (a file watch:
 * the file's directory, filtered to its name) and the changes of the
 * current window, coalesced per path and told when the window closes.
 * A directory is resolved as every file op resolves a path (fsopen) and
 * given to inotify as its descriptor's /proc/self/fd name, so the watch
 * is on what was checked, never on what a link swapped in meanwhile. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "clock.h"
#include "events.h"
#include "fserr.h"
#include "fsopen.h"
#include "fsuser.h"
#include "fswatch.h"
#include "log.h"
#include "rand.h"
#include "xmalloc.h"

#define FSWATCH_MAX 64
#define FSWATCH_ID_LEN 8
/* How long changes are gathered before they are told. */
#define FSWATCH_WINDOW_MS 100
/* One fs.changed event carries at most this many changes, or bytes. */
#define FSWATCH_EVENT_CHANGES 1000
#define FSWATCH_EVENT_BYTES (1u << 20)
/* Distinct paths one window lists before it only counts. */
#define FSWATCH_PATHS_MAX 20000
/* A recursive watch holds at most this many directories, this deep. */
#define FSWATCH_DIRS_MAX 65536
#define FSWATCH_DEPTH_MAX 64
/* inotify bytes taken per loop turn, so a flood cannot hold the loop. */
#define FSWATCH_READ_MAX (1u << 20)
#define FSWATCH_MASK                                                           \
	(IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM |       \
	    IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_EXCL_UNLINK)

enum fswatch_kind {
	FSWATCH_CREATED,
	FSWATCH_MODIFIED,
	FSWATCH_DELETED,
	FSWATCH_MOVED,
};

static const char *fswatch_kinds[] = {
    "created", "modified", "deleted", "moved"};

/* A path's net change in the current window; owned by its watch. */
struct fswatch_change {
	char *path;
	char *from; /* moved only */
	enum fswatch_kind kind;
	TAILQ_ENTRY(fswatch_change) entry; /* in order of first sight */
};
TAILQ_HEAD(fswatch_changes, fswatch_change);

/* A MOVED_FROM waiting for its MOVED_TO; owned by its watch. */
struct fswatch_move {
	uint32_t cookie;
	char *path;
	bool dir;
	bool hidden; /* not the file of a file watch: told only if paired */
	LIST_ENTRY(fswatch_move) entry;
};

/* One inotify watch held for a watch, on the directory at path. Owned by
 * its watch; also listed under its wd (several watches may share one). */
struct fswatch_node {
	struct fswatch *w;
	int wd;
	char *path;
	bool root;
	LIST_ENTRY(fswatch_node) in_watch;
	LIST_ENTRY(fswatch_node) in_wd;
};

/* The nodes on one wd; an entry of fswatch_wds, freed with its last node. */
struct fswatch_wd {
	int wd;
	LIST_HEAD(, fswatch_node) nodes;
};

/* A watch: created by fs.watch, freed by fs.unwatch, by its root going
 * away, or at shutdown. */
struct fswatch {
	char id[FSWATCH_ID_LEN + 1];
	char *path;
	const char *only; /* a file watch: the file's name, in path */
	bool recursive;
	bool follow;        /* follow_symlinks: the paths below too */
	struct fsuser user; /* "as": every directory is watched as them */
	LIST_HEAD(, fswatch_node) nodes;
	unsigned ndirs;

	struct fswatch_changes changes;
	void *index; /* tsearch tree of changes by path */
	unsigned nchanges;
	uint64_t lost;
	LIST_HEAD(, fswatch_move) moves;
	bool kernel_overflow; /* the kernel dropped events */
	bool limited;         /* a directory could not be watched */
	bool ended;           /* the root is gone: freed at the flush */
	TAILQ_ENTRY(fswatch) entry;
};

static TAILQ_HEAD(, fswatch) fswatch_list = TAILQ_HEAD_INITIALIZER(
    fswatch_list);
static unsigned fswatch_count;
static void *fswatch_wds; /* tsearch tree of struct fswatch_wd */
static int fswatch_fd = -1;
static struct event *fswatch_rev, *fswatch_timer;

static char *
fswatch_join(const char *dir, const char *name)
{
	return xasprintf("%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name);
}

/* Whether path is under (or is) dir. */
static bool
fswatch_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/');
}

static void
fswatch_arm(void)
{
	struct timeval tv = clock_tv(FSWATCH_WINDOW_MS);

	if (!evtimer_pending(fswatch_timer, NULL))
		evtimer_add(fswatch_timer, &tv);
}

/* ---- nodes ---- */

static int
fswatch_wd_cmp(const void *a, const void *b)
{
	int x = ((const struct fswatch_wd *)a)->wd;
	int y = ((const struct fswatch_wd *)b)->wd;

	return (x > y) - (x < y);
}

static struct fswatch_wd *
fswatch_wd_find(int wd)
{
	struct fswatch_wd key = {.wd = wd};
	void *p = tfind(&key, &fswatch_wds, fswatch_wd_cmp);

	return p != NULL ? *(struct fswatch_wd **)p : NULL;
}

static bool
fswatch_has_wd(const struct fswatch *w, int wd)
{
	struct fswatch_wd *e = fswatch_wd_find(wd);
	struct fswatch_node *n;

	if (e != NULL)
		for (n = LIST_FIRST(&e->nodes); n != NULL;
		     n = LIST_NEXT(n, in_wd))
			if (n->w == w)
				return true;
	return false;
}

static void
fswatch_node_add(struct fswatch *w, int wd, const char *path, bool root)
{
	struct fswatch_node *n = xcalloc(1, sizeof *n);
	struct fswatch_wd *e = fswatch_wd_find(wd);

	if (e == NULL) {
		e = xcalloc(1, sizeof *e);
		e->wd = wd;
		LIST_INIT(&e->nodes);
		tsearch(e, &fswatch_wds, fswatch_wd_cmp);
	}
	n->w = w;
	n->wd = wd;
	n->path = xstrdup(path);
	n->root = root;
	LIST_INSERT_HEAD(&e->nodes, n, in_wd);
	LIST_INSERT_HEAD(&w->nodes, n, in_watch);
	w->ndirs++;
}

/* Frees n; its inotify watch goes with the last node on it (unless the
 * kernel dropped it already). */
static void
fswatch_node_free(struct fswatch_node *n, bool rm)
{
	struct fswatch_wd *e = fswatch_wd_find(n->wd);

	LIST_REMOVE(n, in_watch);
	LIST_REMOVE(n, in_wd);
	n->w->ndirs--;
	if (e != NULL && LIST_EMPTY(&e->nodes)) {
		if (rm)
			inotify_rm_watch(fswatch_fd, e->wd);
		tdelete(e, &fswatch_wds, fswatch_wd_cmp);
		free(e);
	}
	free(n->path);
	free(n);
}

/* ---- changes ---- */

static int
fswatch_change_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fswatch_change *)a)->path,
	    ((const struct fswatch_change *)b)->path);
}

static struct fswatch_change *
fswatch_change_find(struct fswatch *w, const char *path)
{
	struct fswatch_change key = {.path = (char *)path};
	void *p = tfind(&key, &w->index, fswatch_change_cmp);

	return p != NULL ? *(struct fswatch_change **)p : NULL;
}

/* A new change for path; takes from. Counted as lost past the limit. */
static void
fswatch_change_add(
    struct fswatch *w, const char *path, enum fswatch_kind kind, char *from)
{
	struct fswatch_change *ch;

	if (w->nchanges >= FSWATCH_PATHS_MAX) {
		w->lost++;
		free(from);
		return;
	}
	ch = xcalloc(1, sizeof *ch);
	ch->path = xstrdup(path);
	ch->from = from;
	ch->kind = kind;
	TAILQ_INSERT_TAIL(&w->changes, ch, entry);
	tsearch(ch, &w->index, fswatch_change_cmp);
	w->nchanges++;
	fswatch_arm();
}

static void
fswatch_change_free(struct fswatch *w, struct fswatch_change *ch)
{
	TAILQ_REMOVE(&w->changes, ch, entry);
	tdelete(ch, &w->index, fswatch_change_cmp);
	w->nchanges--;
	free(ch->path);
	free(ch->from);
	free(ch);
}

/*
 * Folds a change of path into the window: created then modified is
 * created, created then deleted nothing, deleted then created modified,
 * and a moved path that is then deleted leaves its origin deleted.
 */
static void
fswatch_record(struct fswatch *w, const char *path, enum fswatch_kind kind)
{
	struct fswatch_change *ch = fswatch_change_find(w, path), *src;

	if (ch == NULL) {
		fswatch_change_add(w, path, kind, NULL);
		return;
	}
	switch (ch->kind) {
	case FSWATCH_CREATED:
		if (kind == FSWATCH_DELETED)
			fswatch_change_free(w, ch);
		break;
	case FSWATCH_MODIFIED:
		if (kind == FSWATCH_DELETED)
			ch->kind = kind;
		break;
	case FSWATCH_DELETED:
		if (kind != FSWATCH_DELETED)
			ch->kind = FSWATCH_MODIFIED;
		break;
	case FSWATCH_MOVED:
		if (kind != FSWATCH_DELETED)
			break;
		src = fswatch_change_find(w, ch->from);
		if (src == NULL)
			fswatch_change_add(w, ch->from, FSWATCH_DELETED, NULL);
		else if (src->kind == FSWATCH_CREATED)
			src->kind = FSWATCH_MODIFIED;
		fswatch_change_free(w, ch);
		break;
	}
}

/* Folds "from was moved to path" into the window: the origin's own change
 * goes, and what it was carries over (created stays created). */
static void
fswatch_record_move(struct fswatch *w, const char *path, const char *from)
{
	struct fswatch_change *ch, *src = fswatch_change_find(w, from);
	enum fswatch_kind kind = FSWATCH_MOVED;
	char *origin = xstrdup(from);

	if (src != NULL) {
		if (src->kind == FSWATCH_CREATED) {
			kind = FSWATCH_CREATED;
			free(origin);
			origin = NULL;
		} else if (src->kind == FSWATCH_MOVED) {
			free(origin);
			origin = src->from;
			src->from = NULL;
		}
		fswatch_change_free(w, src);
	}
	if ((ch = fswatch_change_find(w, path)) == NULL) {
		fswatch_change_add(w, path, kind, origin);
		return;
	}
	if (ch->kind == FSWATCH_DELETED && kind == FSWATCH_CREATED)
		kind = FSWATCH_MODIFIED;
	ch->kind = kind;
	free(ch->from);
	ch->from = origin;
}

/* ---- walking ---- */

/* An inotify watch on the file open on fd (any kind of descriptor, O_PATH
 * too): through the magic link, which names the open file itself. */
static int
fswatch_add_fd(int fd, uint32_t mask)
{
	char proc[32];

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return inotify_add_watch(fswatch_fd, proc, mask);
}

/* Whether entry de of d is a directory, never following a symlink. */
static bool
fswatch_is_dir(DIR *d, const struct dirent *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_DIR;
	return fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode);
}

static int fswatch_add_dir(struct fswatch *w, int fd, const char *path,
    bool root, bool report, unsigned depth);

/* Reads the directory open on fd for a recursive watch: each entry told
 * as created with report, each directory watched in turn, opened in its
 * parent without following a symlink. */
static void
fswatch_add_entries(
    struct fswatch *w, int fd, const char *path, bool report, unsigned depth)
{
	struct dirent *de;
	bool dir;
	char *sub;
	int rfd, sfd;
	DIR *d;

	if ((rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	if ((d = fdopendir(rfd)) == NULL) {
		close(rfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		dir = fswatch_is_dir(d, de);
		if (!dir && !report)
			continue;
		sub = fswatch_join(path, de->d_name);
		if (report)
			fswatch_record(w, sub, FSWATCH_CREATED);
		if (dir &&
		    (sfd = openat(dirfd(d), de->d_name,
		         O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
			fswatch_add_dir(w, sfd, sub, false, report, depth + 1);
			close(sfd);
		}
		free(sub);
	}
	closedir(d);
}

/*
 * Watches the directory open on fd, at path, for w and, for a recursive
 * watch, every directory below it; runs with w's user's rights, so that
 * inotify asks for their right to read each directory. The watch is
 * placed before the directory is read, so nothing made meanwhile is
 * missed; with report, what is found is told as created (it may have
 * appeared before the watch). Returns 0, or -1 with errno if this
 * directory itself could not be watched.
 */
static int
fswatch_add_dir(struct fswatch *w, int fd, const char *path, bool root,
    bool report, unsigned depth)
{
	int wd;

	if (w->ndirs >= FSWATCH_DIRS_MAX || depth > FSWATCH_DEPTH_MAX) {
		w->limited = true;
		errno = ENOSPC;
		return -1;
	}
	if ((wd = fswatch_add_fd(fd, FSWATCH_MASK | IN_ONLYDIR)) < 0) {
		if (errno == ENOSPC)
			w->limited = true;
		return -1;
	}
	if (!fswatch_has_wd(w, wd))
		fswatch_node_add(w, wd, path, root);
	if (w->recursive)
		fswatch_add_entries(w, fd, path, report, depth);
	return 0;
}

/* fswatch_add_dir of the directory at path, resolved as the request's
 * path was (no symlink followed unless w follows them, and never the
 * last component below the root), as w's user. */
static int
fswatch_add_tree(
    struct fswatch *w, const char *path, bool root, bool report, unsigned depth)
{
	int fd, r, err;

	if (fsuser_enter(&w->user) != 0) {
		log_warn("fs.watch %s: cannot take the user's identity: %s",
		    w->id, strerror(errno));
		return -1;
	}
	fd = fsopen_open(path,
	    O_PATH | O_DIRECTORY | O_CLOEXEC | (root ? 0 : O_NOFOLLOW), 0,
	    w->follow);
	r = fd < 0 ? -1 : fswatch_add_dir(w, fd, path, root, report, depth);
	err = errno;
	if (fd >= 0)
		close(fd);
	fsuser_leave(&w->user);
	errno = err;
	return r;
}

/* Forgets the directories of w at or under path (moved out of sight). */
static void
fswatch_drop_tree(struct fswatch *w, const char *path)
{
	struct fswatch_node *n, *next;

	for (n = LIST_FIRST(&w->nodes); n != NULL; n = next) {
		next = LIST_NEXT(n, in_watch);
		if (!n->root && fswatch_under(n->path, path))
			fswatch_node_free(n, true);
	}
}

/* A directory of w moved from one path to another within its sight. */
static void
fswatch_rename_tree(struct fswatch *w, const char *from, const char *to)
{
	struct fswatch_node *n;
	char *p;

	for (n = LIST_FIRST(&w->nodes); n != NULL; n = LIST_NEXT(n, in_watch))
		if (!n->root && fswatch_under(n->path, from)) {
			p = xasprintf("%s%s", to, n->path + strlen(from));
			free(n->path);
			n->path = p;
		}
}

/* ---- inotify events ---- */

static void
fswatch_root_gone(struct fswatch *w)
{
	if (w->ended)
		return;
	fswatch_record(w, w->path, FSWATCH_DELETED);
	w->ended = true;
	fswatch_arm();
}

static void
fswatch_moved_from(
    struct fswatch *w, const struct inotify_event *ev, char *path)
{
	struct fswatch_move *mv = xcalloc(1, sizeof *mv);

	mv->cookie = ev->cookie;
	mv->path = path;
	mv->dir = (ev->mask & IN_ISDIR) != 0;
	mv->hidden = w->only != NULL && strcmp(ev->name, w->only) != 0;
	LIST_INSERT_HEAD(&w->moves, mv, entry);
	fswatch_arm();
}

static void
fswatch_moved_to(
    struct fswatch *w, const struct inotify_event *ev, const char *path)
{
	bool seen = w->only == NULL || strcmp(ev->name, w->only) == 0;
	struct fswatch_move *mv;

	for (mv = LIST_FIRST(&w->moves); mv != NULL; mv = LIST_NEXT(mv, entry))
		if (mv->cookie == ev->cookie)
			break;
	if (mv == NULL) {
		if (!seen)
			return;
		fswatch_record(w, path, FSWATCH_CREATED);
		if ((ev->mask & IN_ISDIR) && w->recursive)
			fswatch_add_tree(w, path, false, true, 1);
		return;
	}
	LIST_REMOVE(mv, entry);
	if (seen || !mv->hidden)
		fswatch_record_move(w, path, mv->path);
	if (mv->dir && w->recursive)
		fswatch_rename_tree(w, mv->path, path);
	if (w->only != NULL && !mv->hidden && !seen) {
		/* The watched file moved away: told as moved, and the watch
		 * ends with it. */
		w->ended = true;
		fswatch_arm();
	}
	free(mv->path);
	free(mv);
}

/* An event on a directory of w, n being its node there. */
static void
fswatch_node_event(struct fswatch_node *n, const struct inotify_event *ev)
{
	struct fswatch *w = n->w;
	char *path;

	if (w->ended)
		return;
	if (ev->len == 0 || ev->name[0] == '\0') {
		if (!n->root)
			return; /* a subdirectory: its parent tells */
		if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT))
			fswatch_root_gone(w);
		else if (w->only == NULL &&
		    (ev->mask & (IN_ATTRIB | IN_MODIFY)))
			fswatch_record(w, w->path, FSWATCH_MODIFIED);
		return;
	}
	path = fswatch_join(n->path, ev->name);
	if (ev->mask & IN_MOVED_FROM) {
		fswatch_moved_from(w, ev, path);
		return;
	}
	if (ev->mask & IN_MOVED_TO)
		fswatch_moved_to(w, ev, path);
	else if (w->only != NULL && strcmp(ev->name, w->only) != 0)
		;
	else if (ev->mask & IN_CREATE) {
		fswatch_record(w, path, FSWATCH_CREATED);
		if ((ev->mask & IN_ISDIR) && w->recursive)
			fswatch_add_tree(w, path, false, true, 1);
	} else if (ev->mask & IN_DELETE) {
		if (w->only != NULL)
			fswatch_root_gone(w);
		else
			fswatch_record(w, path, FSWATCH_DELETED);
	} else if (ev->mask & (IN_MODIFY | IN_ATTRIB))
		fswatch_record(w, path, FSWATCH_MODIFIED);
	free(path);
}

static void
fswatch_event(const struct inotify_event *ev)
{
	struct fswatch_node *n;
	struct fswatch_wd *e;
	struct fswatch *w;

	if (ev->mask & IN_Q_OVERFLOW) {
		for (w = TAILQ_FIRST(&fswatch_list); w != NULL;
		     w = TAILQ_NEXT(w, entry))
			w->kernel_overflow = true;
		fswatch_arm();
		return;
	}
	if ((e = fswatch_wd_find(ev->wd)) == NULL)
		return;
	for (n = LIST_FIRST(&e->nodes); n != NULL; n = LIST_NEXT(n, in_wd))
		fswatch_node_event(n, ev);
	if (!(ev->mask & IN_IGNORED))
		return;
	/* The kernel dropped the watch (the directory is gone): so do we. */
	while ((e = fswatch_wd_find(ev->wd)) != NULL) {
		n = LIST_FIRST(&e->nodes);
		if (n->root)
			fswatch_root_gone(n->w);
		fswatch_node_free(n, false);
	}
}

/* Reads what inotify has, up to FSWATCH_READ_MAX bytes. */
static void
fswatch_read(void)
{
	static char buf[64 * 1024]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev;
	size_t total = 0, off;
	ssize_t n;

	while (total < FSWATCH_READ_MAX) {
		n = read(fswatch_fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			log_warn("inotify: %s", strerror(errno));
		if (n <= 0)
			break;
		for (off = 0; off < (size_t)n; off += sizeof *ev + ev->len) {
			ev = (const struct inotify_event *)(buf + off);
			fswatch_event(ev);
		}
		total += (size_t)n;
	}
}

static void
fswatch_read_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	fswatch_read();
}

/* ---- telling ---- */

/* A MOVED_FROM that no MOVED_TO followed left sight: deleted. */
static void
fswatch_settle_moves(struct fswatch *w)
{
	struct fswatch_move *mv;

	while ((mv = LIST_FIRST(&w->moves)) != NULL) {
		LIST_REMOVE(mv, entry);
		if (!mv->hidden && !w->ended) {
			if (w->only != NULL)
				fswatch_root_gone(w);
			else
				fswatch_record(w, mv->path, FSWATCH_DELETED);
		}
		if (mv->dir && w->recursive)
			fswatch_drop_tree(w, mv->path);
		free(mv->path);
		free(mv);
	}
}

static void
fswatch_noop_free(void *p)
{
	(void)p;
}

static void
fswatch_changes_clear(struct fswatch *w)
{
	struct fswatch_change *ch;

	tdestroy(w->index, fswatch_noop_free);
	w->index = NULL;
	while ((ch = TAILQ_FIRST(&w->changes)) != NULL) {
		TAILQ_REMOVE(&w->changes, ch, entry);
		free(ch->path);
		free(ch->from);
		free(ch);
	}
	w->nchanges = 0;
}

/* Journals w's changes, FSWATCH_EVENT_CHANGES (or bytes) per event. */
static void
fswatch_tell_changes(struct fswatch *w)
{
	struct fswatch_change *ch, *end;
	msgpack_packer *pk;
	size_t n, bytes, cost;

	ch = TAILQ_FIRST(&w->changes);
	while (ch != NULL) {
		n = bytes = 0;
		for (end = ch; end != NULL && n < FSWATCH_EVENT_CHANGES;
		     end = TAILQ_NEXT(end, entry)) {
			cost = 32 + strlen(end->path) +
			    (end->from != NULL ? strlen(end->from) : 0);
			if (n > 0 && bytes + cost > FSWATCH_EVENT_BYTES)
				break;
			bytes += cost;
			n++;
		}
		pk = events_begin(EV_FS_CHANGED);
		msgpack_pack_map(pk, 2);
		proto_pack_kv_str(pk, "watch", w->id);
		proto_pack_str(pk, "changes");
		msgpack_pack_array(pk, n);
		for (; ch != end; ch = TAILQ_NEXT(ch, entry)) {
			msgpack_pack_map(pk, ch->from != NULL ? 3 : 2);
			proto_pack_kv_str(pk, "path", ch->path);
			proto_pack_kv_str(pk, "kind", fswatch_kinds[ch->kind]);
			if (ch->from != NULL)
				proto_pack_kv_str(pk, "from", ch->from);
		}
		events_commit();
	}
	fswatch_changes_clear(w);
}

static void
fswatch_tell_overflow(struct fswatch *w, const char *reason, uint64_t lost)
{
	msgpack_packer *pk = events_begin(EV_FS_OVERFLOW);

	msgpack_pack_map(pk, lost > 0 ? 3 : 2);
	proto_pack_kv_str(pk, "watch", w->id);
	proto_pack_kv_str(pk, "reason", reason);
	if (lost > 0)
		proto_pack_kv_u64(pk, "lost", lost);
	events_commit();
}

static void fswatch_free(struct fswatch *w);

/*
 * The window closed: what inotify still holds is read first (a rename's
 * two halves must meet), then each watch's changes are journaled, then
 * what could not be told. After a kernel overflow a recursive watch looks
 * for directories it missed; the client was told to rescan the rest.
 */
static void
fswatch_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fswatch *w, *next;

	(void)fd;
	(void)what;
	(void)arg;
	fswatch_read();
	for (w = TAILQ_FIRST(&fswatch_list); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		fswatch_settle_moves(w);
		fswatch_tell_changes(w);
		if (w->lost > 0)
			fswatch_tell_overflow(w, "burst", w->lost);
		w->lost = 0;
		if (w->kernel_overflow) {
			fswatch_tell_overflow(w, "kernel", 0);
			if (w->recursive && !w->ended && w->only == NULL)
				fswatch_add_tree(w, w->path, true, false, 0);
		}
		w->kernel_overflow = false;
		if (w->limited)
			fswatch_tell_overflow(w, "limit", 0);
		w->limited = false;
		if (w->ended)
			fswatch_free(w);
	}
	evtimer_del(fswatch_timer);
}

/* ---- watches ---- */

static struct fswatch *
fswatch_find(const char *id)
{
	struct fswatch *w;

	for (w = TAILQ_FIRST(&fswatch_list); w != NULL;
	     w = TAILQ_NEXT(w, entry))
		if (strcmp(w->id, id) == 0 && !w->ended)
			return w;
	return NULL;
}

/* A new watch of path, done as user (copied into it). */
static struct fswatch *
fswatch_new(
    const char *path, bool recursive, bool follow, const struct fsuser *user)
{
	struct fswatch *w = xcalloc(1, sizeof *w);

	do
		rand_hex(w->id, FSWATCH_ID_LEN / 2);
	while (fswatch_find(w->id) != NULL);
	w->path = xstrdup(path);
	w->recursive = recursive;
	w->follow = follow;
	w->user = *user;
	LIST_INIT(&w->nodes);
	TAILQ_INIT(&w->changes);
	LIST_INIT(&w->moves);
	TAILQ_INSERT_TAIL(&fswatch_list, w, entry);
	fswatch_count++;
	return w;
}

static void
fswatch_free(struct fswatch *w)
{
	struct fswatch_move *mv;

	while (!LIST_EMPTY(&w->nodes))
		fswatch_node_free(LIST_FIRST(&w->nodes), true);
	while ((mv = LIST_FIRST(&w->moves)) != NULL) {
		LIST_REMOVE(mv, entry);
		free(mv->path);
		free(mv);
	}
	fswatch_changes_clear(w);
	TAILQ_REMOVE(&fswatch_list, w, entry);
	fswatch_count--;
	free(w->path);
	free(w);
}

/* Strips trailing slashes from path (in place), but of "/" itself. */
static void
fswatch_trim(char *path)
{
	size_t len = strlen(path);

	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
}

/* Watches the file at w's path through its directory, filtered to its
 * name; the directory is resolved as the file was. */
static int
fswatch_add_file(struct fswatch *w)
{
	char name[NAME_MAX + 1], *slash = strrchr(w->path, '/'), *dir;
	int dfd = fsopen_parent(w->path, w->follow, name), wd, err;

	w->only = slash + 1;
	if (dfd < 0)
		return -1;
	wd = fswatch_add_fd(dfd, FSWATCH_MASK | IN_ONLYDIR);
	err = errno;
	if (wd >= 0) {
		dir = slash == w->path
		    ? xstrdup("/")
		    : xstrndup(w->path, (size_t)(slash - w->path));
		fswatch_node_add(w, wd, dir, true);
		free(dir);
	}
	close(dfd);
	errno = err;
	return wd < 0 ? -1 : 0;
}

/* Watches the directory or file at w's path, as w's user; *err is the
 * failure's errno. Returns 0 or -1. */
static int
fswatch_start(struct fswatch *w, bool dir, int fd, int *err)
{
	int r;

	if (fsuser_enter(&w->user) != 0) {
		*err = errno;
		return -1;
	}
	r = dir ? fswatch_add_dir(w, fd, w->path, true, false, 0)
	        : fswatch_add_file(w);
	*err = errno;
	fsuser_leave(&w->user);
	return r;
}

/* Resolves path as the op's user, as every file op does: the O_PATH fd
 * of what the watch is on, or -1 with errno. */
static int
fswatch_resolve(const char *path, bool follow, struct fsuser *u, bool *dir)
{
	struct stat st;
	int fd, err;

	if (fsuser_enter(u) != 0)
		return -1;
	fd = fsopen_open(path, O_PATH | O_CLOEXEC, 0, follow);
	err = errno;
	fsuser_leave(u);
	if (fd >= 0 && fstat(fd, &st) != 0)
		err = errno;
	/* fsopen's walk opens a last symlink itself, where openat2 fails. */
	else if (fd >= 0 && S_ISLNK(st.st_mode))
		err = ELOOP;
	else if (fd >= 0) {
		*dir = S_ISDIR(st.st_mode);
		return fd;
	}
	if (fd >= 0)
		close(fd);
	errno = err;
	return -1;
}

/* Reads fs.watch's args into path, *recursive, *follow and u. Returns 0,
 * or -1 after replying bad_args. */
static int
fswatch_args(struct server_conn *c, const struct proto_msg *m, char *path,
    bool *recursive, bool *follow, struct fsuser *u)
{
	if (fserr_arg_path(c, m, "path", path) < 0)
		return -1;
	if (proto_arg_bool(m->args, "recursive", recursive) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "fs.watch: \"recursive\" must be a bool");
		return -1;
	}
	if (fserr_arg_follow(c, m, follow) < 0 || fsuser_arg(c, m, u) < 0)
		return -1;
	fswatch_trim(path);
	return 0;
}

void
fswatch_op_watch(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX];
	bool recursive = false, follow, dir;
	msgpack_packer *pk;
	struct fsuser u;
	struct fswatch *w;
	int fd, r, err;

	if (fswatch_args(c, m, path, &recursive, &follow, &u) < 0)
		return;
	if (fswatch_fd < 0) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "fs.watch: inotify is not available");
		return;
	}
	if (fswatch_count >= FSWATCH_MAX) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "fs.watch: at most %d watches", FSWATCH_MAX);
		return;
	}
	if ((fd = fswatch_resolve(path, follow, &u, &dir)) < 0) {
		fserr_reply(c, m->id, errno, "watch", path);
		return;
	}
	w = fswatch_new(path, recursive && dir, follow, &u);
	r = fswatch_start(w, dir, fd, &err);
	close(fd);
	if (r != 0 || w->limited) {
		fswatch_free(w);
		if (r != 0 && err != ENOSPC)
			fserr_reply(c, m->id, err, "watch", path);
		else
			server_reply_error_path(c, m->id, PROTO_E_UNAVAILABLE,
			    path,
			    "watch %s: more than %d directories, deeper than "
			    "%d, or past the system's inotify limit",
			    path, FSWATCH_DIRS_MAX, FSWATCH_DEPTH_MAX);
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "id", w->id);
	proto_pack_kv_str(pk, "path", w->path);
	server_reply_end(c);
}

void
fswatch_op_unwatch(struct server_conn *c, const struct proto_msg *m)
{
	char id[FSWATCH_ID_LEN + 2];
	struct fswatch *w;

	if (proto_arg_str(m->args, "id", id, sizeof id) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "fs.unwatch needs \"id\" (a watch id)");
		return;
	}
	if ((w = fswatch_find(id)) == NULL) {
		server_reply_error(
		    c, m->id, PROTO_E_NOT_FOUND, "no watch \"%s\"", id);
		return;
	}
	fswatch_free(w);
	server_reply_empty(c, m->id);
}

void
fswatch_op_list(struct server_conn *c, const struct proto_msg *m)
{
	msgpack_packer *pk = server_reply_begin(c, m->id);
	struct fswatch *w;
	unsigned n = 0;

	for (w = TAILQ_FIRST(&fswatch_list); w != NULL;
	     w = TAILQ_NEXT(w, entry))
		n += !w->ended;
	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "watches");
	msgpack_pack_array(pk, n);
	for (w = TAILQ_FIRST(&fswatch_list); w != NULL;
	     w = TAILQ_NEXT(w, entry)) {
		if (w->ended)
			continue;
		msgpack_pack_map(pk, 4);
		proto_pack_kv_str(pk, "id", w->id);
		proto_pack_kv_str(pk, "path", w->path);
		proto_pack_kv_bool(pk, "recursive", w->recursive);
		proto_pack_kv_u64(pk, "dirs", w->ndirs);
	}
	server_reply_end(c);
}

void
fswatch_init(struct event_base *base)
{
	fswatch_timer = evtimer_new(base, fswatch_flush_cb, NULL);
	fswatch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fswatch_fd < 0) {
		log_warn(
		    "inotify: %s; fs.watch is unavailable", strerror(errno));
		return;
	}
	fswatch_rev = event_new(
	    base, fswatch_fd, EV_READ | EV_PERSIST, fswatch_read_cb, NULL);
	event_add(fswatch_rev, NULL);
}

void
fswatch_shutdown(void)
{
	while (!TAILQ_EMPTY(&fswatch_list))
		fswatch_free(TAILQ_FIRST(&fswatch_list));
	if (fswatch_rev != NULL)
		event_free(fswatch_rev);
	if (fswatch_timer != NULL)
		event_free(fswatch_timer);
	fswatch_rev = fswatch_timer = NULL;
	if (fswatch_fd >= 0)
		close(fswatch_fd);
	fswatch_fd = -1;
}
