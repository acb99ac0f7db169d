/* artifact: the content-addressed store of published files (see
 * artifact.h). Owns the store's directory fd, the index file and its copy
 * in memory, the publications in progress with their temp files, the
 * slice timer that drives them, and the one buffer they share. */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "artifact.h"
#include "catalog.h"
#include "events.h"
#include "fserr.h"
#include "fsopen.h"
#include "fsuser.h"
#include "inflight.h"
#include "frame.h"
#include "log.h"
#include "mpcheck.h"
#include "packcheck.h"
#include "sha256.h"
#include "xmalloc.h"

/* What one turn of the loop copies and hashes for one publication. */
#define ARTIFACT_SLICE (1u << 20)
#define ARTIFACT_READ_MAX (4u << 20)
#define ARTIFACT_FILE_MAX (16ull << 30)
#define ARTIFACT_PENDING_MAX 16
/* The head of a file kept for sniffing its type and for the preview. */
#define ARTIFACT_SNIFF 8192
#define ARTIFACT_PREVIEW 4096
#define ARTIFACT_PREVIEW_LINES 40
#define ARTIFACT_NAME_MAX 255
#define ARTIFACT_TYPE_MAX 127
/* An index record is a few hundred bytes; more is damage. */
#define ARTIFACT_RECORD_MAX 4096
/* artifact.list answers with at most this many (the newest), so that the
 * answer stays far below the message limit. */
#define ARTIFACT_LIST_MAX 10000
/* Temp files start with a dot: never a hex digest, so never an artifact. */
#define ARTIFACT_TEMP_PREFIX ".publish-"
#define ARTIFACT_INDEX "index"

/* One artifact of the index: the latest publication of its content. Held
 * in artifact_all; name and media_type are owned by the entry. */
struct artifact {
	char id[SHA256_HEX];
	uint64_t size;
	uint64_t created;
	char *name;
	char *media_type;
};

/* A publication in progress, allocated by artifact_pub_start and freed by
 * artifact_pub_free with its fds and temp file; cb is told how it ended
 * (cb_arg is its owner's). */
struct artifact_pub {
	artifact_done_fn cb;
	void *cb_arg;
	char *path; /* the source, for the log */
	char *name;
	char *media_type; /* NULL: from the extension or the content */
	int src;
	int tmp;
	char tmpname[32];
	uint64_t want; /* the source's size when it was opened */
	uint64_t done; /* bytes read, hashed and written */
	struct sha256 hash;
	uint8_t head[ARTIFACT_SNIFF];
	size_t nhead;
	struct artifact_pub *next;
};

static struct event *artifact_slice_ev;
static char *artifact_dir;
static int artifact_dirfd = -1;
static int artifact_indexfd = -1;
static uint64_t artifact_index_end; /* bytes of whole records */
static struct artifact *artifact_all;
static size_t artifact_n, artifact_alloc;
static struct artifact_pub *artifact_pubs; /* round-robin: head goes next */
static unsigned artifact_npubs;
static unsigned artifact_temp_counter;
static uint8_t *artifact_buf; /* ARTIFACT_SLICE bytes, for every slice */

static const struct {
	const char *ext;
	const char *type;
} artifact_types[] = {
    {"txt", "text/plain"},
    {"log", "text/plain"},
    {"md", "text/markdown"},
    {"csv", "text/csv"},
    {"html", "text/html"},
    {"css", "text/css"},
    {"js", "text/javascript"},
    {"json", "application/json"},
    {"xml", "application/xml"},
    {"svg", "image/svg+xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"pdf", "application/pdf"},
    {"zip", "application/zip"},
    {"tar", "application/x-tar"},
    {"gz", "application/gzip"},
    {"wasm", "application/wasm"},
};

/* ---- small checks ---- */

static bool
artifact_id_ok(const char *id)
{
	size_t i;

	for (i = 0; i < SHA256_HEX - 1; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		        (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return id[i] == '\0';
}

/*
 * Whether p[0..len) is UTF-8 without NUL bytes. cut says the bytes are the
 * head of something longer, so a sequence broken by the end is accepted.
 */
static bool
artifact_utf8(const uint8_t *p, size_t len, bool cut)
{
	size_t i = 0, n, k;
	uint32_t cp;

	while (i < len) {
		if (p[i] == 0)
			return false;
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if (p[i] >= 0xc2 && p[i] <= 0xdf) {
			n = 1;
			cp = p[i] & 0x1f;
		} else if ((p[i] & 0xf0) == 0xe0) {
			n = 2;
			cp = p[i] & 0x0f;
		} else if (p[i] >= 0xf0 && p[i] <= 0xf4) {
			n = 3;
			cp = p[i] & 0x07;
		} else
			return false;
		for (k = 1; k <= n; k++) {
			if (i + k == len)
				return cut;
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		/* Overlong forms, surrogates, and past U+10FFFF. */
		if (n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
			return false;
		if (n == 3 && (cp < 0x10000 || cp > 0x10ffff))
			return false;
		i += n + 1;
	}
	return true;
}

/* A media type as clients may give it: "type/subtype" and parameters,
 * printable ASCII. */
static bool
artifact_type_ok(const char *t)
{
	const char *p;

	if (strchr(t, '/') == NULL || t[0] == '/')
		return false;
	for (p = t; *p != '\0'; p++)
		if (*p < 0x20 || *p > 0x7e)
			return false;
	return true;
}

static bool
artifact_type_is_text(const char *t)
{
	static const char *const text[] = {"application/json",
	    "application/xml", "application/javascript", "image/svg+xml"};
	size_t i, len = strcspn(t, ";");

	if (strncmp(t, "text/", 5) == 0)
		return true;
	for (i = 0; i < sizeof text / sizeof text[0]; i++)
		if (strlen(text[i]) == len && strncmp(t, text[i], len) == 0)
			return true;
	return len > 5 &&
	    (strncmp(t + len - 5, "+json", 5) == 0 ||
	        strncmp(t + len - 4, "+xml", 4) == 0);
}

/* The type the name's extension says, else what the head looks like. */
static const char *
artifact_type_guess(
    const char *name, const uint8_t *head, size_t nhead, uint64_t size)
{
	const char *dot = strrchr(name, '.');
	size_t i;

	if (dot != NULL && dot != name) {
		for (i = 0;
		     i < sizeof artifact_types / sizeof artifact_types[0]; i++)
			if (strcasecmp(dot + 1, artifact_types[i].ext) == 0)
				return artifact_types[i].type;
	}
	if (artifact_utf8(head, nhead, size > nhead))
		return "text/plain";
	return "application/octet-stream";
}

/*
 * The preview of a text: the first 4 KiB, cut after the last newline in
 * them when more follows (or, in a line longer than that, before the
 * character the cut would split), and after the 40th line. Returns its
 * length in head.
 */
static size_t
artifact_preview_len(const uint8_t *head, size_t nhead, uint64_t size)
{
	const uint8_t *nl;
	size_t len = nhead < ARTIFACT_PREVIEW ? nhead : ARTIFACT_PREVIEW;
	size_t i, lines = 0;

	if (size > len) {
		nl = memrchr(head, '\n', len);
		if (nl != NULL)
			len = (size_t)(nl - head) + 1;
		else {
			/* head[len] exists: nhead > len whenever size is. */
			while (len > 0 && (head[len] & 0xc0) == 0x80)
				len--;
		}
	}
	for (i = 0; i < len; i++)
		if (head[i] == '\n' && ++lines == ARTIFACT_PREVIEW_LINES)
			return i + 1;
	return len;
}

/* ---- the index ---- */

static struct artifact *
artifact_find(const char *id)
{
	size_t i;

	for (i = 0; i < artifact_n; i++)
		if (strcmp(artifact_all[i].id, id) == 0)
			return &artifact_all[i];
	return NULL;
}

static void
artifact_entry_free(struct artifact *a)
{
	free(a->name);
	free(a->media_type);
}

/* Records a publication in memory: the content's entry moves to the end
 * (the newest) and takes the publication's name, type and time. */
static void
artifact_remember(const char *id, uint64_t size, uint64_t created,
    const char *name, const char *media_type)
{
	struct artifact *a = artifact_find(id);

	if (a != NULL) {
		artifact_entry_free(a);
		memmove(a, a + 1,
		    (size_t)(artifact_all + artifact_n - a - 1) * sizeof *a);
		artifact_n--;
	}
	if (artifact_n == artifact_alloc) {
		artifact_alloc = artifact_alloc == 0 ? 64 : artifact_alloc * 2;
		artifact_all = xreallocarray(
		    artifact_all, artifact_alloc, sizeof *artifact_all);
	}
	a = &artifact_all[artifact_n++];
	memcpy(a->id, id, SHA256_HEX);
	a->size = size;
	a->created = created;
	a->name = xstrdup(name);
	a->media_type = xstrdup(media_type);
}

/* Parses one record; returns NULL, or why it is not one. */
static const char *
artifact_record_load(const uint8_t *buf, size_t len)
{
	static const struct mpcheck_limits lim = {4, 64};
	char id[SHA256_HEX + 1], name[ARTIFACT_NAME_MAX + 1];
	char type[ARTIFACT_TYPE_MAX + 1];
	msgpack_unpacked u;
	uint64_t size, created;
	const char *why = NULL;

	if (mpcheck_object(buf, len, &lim, &why) < 0)
		return why;
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, (const char *)buf, len, NULL) !=
	    MSGPACK_UNPACK_SUCCESS)
		why = "not msgpack";
	else if (u.data.type != MSGPACK_OBJECT_MAP)
		why = "not a map";
	else if (proto_arg_str(&u.data, "id", id, sizeof id) != 1 ||
	    !artifact_id_ok(id))
		why = "no id";
	else if (proto_arg_u64(&u.data, "size", &size) != 1 ||
	    proto_arg_u64(&u.data, "created", &created) != 1)
		why = "no size or time";
	else if (proto_arg_str(&u.data, "name", name, sizeof name) != 1 ||
	    proto_arg_str(&u.data, "media_type", type, sizeof type) != 1)
		why = "no name or media type";
	else
		artifact_remember(id, size, created, name, type);
	msgpack_unpacked_destroy(&u);
	return why;
}

/* Forgets entries whose file is gone or has the wrong size (someone
 * removed or damaged it): serving them would serve nothing or garbage. */
static void
artifact_check_files(void)
{
	struct stat st;
	size_t i = 0;

	while (i < artifact_n) {
		struct artifact *a = &artifact_all[i];

		if (fstatat(artifact_dirfd, a->id, &st, 0) == 0 &&
		    S_ISREG(st.st_mode) && (uint64_t)st.st_size == a->size) {
			i++;
			continue;
		}
		log_warn("artifact %s (%s) is missing from %s; forgotten",
		    a->id, a->name, artifact_dir);
		artifact_entry_free(a);
		memmove(a, a + 1, (artifact_n - i - 1) * sizeof *a);
		artifact_n--;
	}
}

/*
 * Reads every record of the index. A record cut short by a crash, or
 * damaged, ends the index: what follows cannot be framed again, so it is
 * truncated away (with a warning) and appends continue after the last
 * good record.
 */
static void
artifact_index_load(void)
{
	uint8_t hdr[FRAME_HDR], *body = xmalloc(ARTIFACT_RECORD_MAX);
	const char *why = NULL;
	uint64_t off = 0;
	uint32_t len;
	ssize_t n;

	for (;;) {
		n = pread(artifact_indexfd, hdr, sizeof hdr, (off_t)off);
		if (n == 0)
			break;
		if (n != (ssize_t)sizeof hdr) {
			why = n < 0 ? strerror(errno) : "a cut header";
			break;
		}
		len = frame_length(hdr);
		if (len == 0 || len > ARTIFACT_RECORD_MAX) {
			why = "a bad length";
			break;
		}
		n = pread(
		    artifact_indexfd, body, len, (off_t)(off + FRAME_HDR));
		if (n != (ssize_t)len) {
			why = n < 0 ? strerror(errno) : "a cut record";
			break;
		}
		if ((why = artifact_record_load(body, len)) != NULL)
			break;
		off += FRAME_HDR + len;
	}
	free(body);
	artifact_index_end = off;
	if (why == NULL)
		return;
	log_warn("%s/%s: %s at offset %llu; the index ends there", artifact_dir,
	    ARTIFACT_INDEX, why, (unsigned long long)off);
	if (ftruncate(artifact_indexfd, (off_t)off) < 0)
		log_warn("%s/%s: cannot truncate: %s", artifact_dir,
		    ARTIFACT_INDEX, strerror(errno));
}

/* Appends a's record and syncs it. Returns 0, or -1 with errno (the
 * index is then cut back to its last whole record). */
static int
artifact_index_append(const struct artifact *a)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t done = 0;
	ssize_t n;
	int err = 0;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_sbuffer_write(&sb, "\0\0\0\0", FRAME_HDR);
	msgpack_pack_map(&pk, 5);
	proto_pack_kv_str(&pk, "id", a->id);
	proto_pack_kv_u64(&pk, "size", a->size);
	proto_pack_kv_u64(&pk, "created", a->created);
	proto_pack_kv_str(&pk, "name", a->name);
	proto_pack_kv_str(&pk, "media_type", a->media_type);
	frame_header((uint8_t *)sb.data, (uint32_t)(sb.size - FRAME_HDR));
	PACKCHECK_SENT(
	    sb.data + FRAME_HDR, sb.size - FRAME_HDR, "artifact.publish");
	while (done < sb.size && err == 0) {
		n = write(artifact_indexfd, sb.data + done, sb.size - done);
		if (n > 0)
			done += (size_t)n;
		else if (n == 0)
			err = ENOSPC;
		else if (errno != EINTR)
			err = errno;
	}
	if (err == 0 && fdatasync(artifact_indexfd) < 0)
		err = errno;
	if (err == 0)
		artifact_index_end += sb.size;
	else if (ftruncate(artifact_indexfd, (off_t)artifact_index_end) < 0)
		log_warn("%s/%s: cannot truncate: %s", artifact_dir,
		    ARTIFACT_INDEX, strerror(errno));
	msgpack_sbuffer_destroy(&sb);
	errno = err;
	return err == 0 ? 0 : -1;
}

/* Removes temp files a crash left behind. */
static void
artifact_sweep_temps(void)
{
	struct dirent *de;
	DIR *d;
	int fd = dup(artifact_dirfd);

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		log_warn("%s: cannot list: %s", artifact_dir, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, ARTIFACT_TEMP_PREFIX,
		        strlen(ARTIFACT_TEMP_PREFIX)) != 0)
			continue;
		if (unlinkat(artifact_dirfd, de->d_name, 0) < 0)
			log_warn("%s/%s: cannot remove: %s", artifact_dir,
			    de->d_name, strerror(errno));
	}
	closedir(d);
}

/* ---- publishing ---- */

static void artifact_slice_cb(evutil_socket_t, short, void *);

static void
artifact_pub_free(struct artifact_pub *p)
{
	if (p->src >= 0)
		close(p->src);
	if (p->tmp >= 0) {
		close(p->tmp);
		unlinkat(artifact_dirfd, p->tmpname, 0);
	}
	free(p->path);
	free(p->name);
	free(p->media_type);
	free(p);
}

/* Tells p's owner the error and frees p (out of the queue already). */
static void
artifact_pub_fail(
    struct artifact_pub *p, int err, const char *what, const char *path)
{
	struct artifact_done d = {.err = err, .what = what, .path = path};

	log_warn(
	    "publishing %s: %s %s: %s", p->path, what, path, strerror(err));
	p->cb(p->cb_arg, &d);
	artifact_pub_free(p);
}

static void
artifact_pack_ref(msgpack_packer *pk, const struct artifact *a, size_t extra)
{
	msgpack_pack_map(pk, 5 + extra);
	proto_pack_kv_str(pk, "id", a->id);
	proto_pack_kv_str(pk, "sha256", a->id);
	proto_pack_kv_u64(pk, "size", a->size);
	proto_pack_kv_str(pk, "media_type", a->media_type);
	proto_pack_kv_str(pk, "name", a->name);
}

/* Tells p's owner that a is stored, with the preview of a text. */
static void
artifact_pub_done(struct artifact_pub *p, const struct artifact *a)
{
	struct artifact_done d = {.ref = a, .id = a->id};

	if (artifact_type_is_text(a->media_type)) {
		d.preview = p->head;
		d.npreview = artifact_preview_len(p->head, p->nhead, a->size);
	}
	p->cb(p->cb_arg, &d);
}

void
artifact_pack_done(msgpack_packer *pk, const struct artifact_done *d)
{
	artifact_pack_ref(pk, d->ref, 2);
	proto_pack_kv_u64(pk, "created", d->ref->created);
	proto_pack_str(pk, "preview");
	if (d->preview != NULL) {
		msgpack_pack_bin(pk, d->npreview);
		msgpack_pack_bin_body(pk, d->preview, d->npreview);
	} else
		msgpack_pack_nil(pk);
}

/*
 * Puts p's copy in the store under id. It is synced before the rename and
 * the directory after it, so that an indexed id always names a whole
 * file. A file already stored under id is kept (the copy goes with p)
 * unless its size says it is damaged. Returns 0 or -1 with errno.
 */
static int
artifact_pub_store(struct artifact_pub *p, const char *id)
{
	struct stat st;

	if (fsync(p->tmp) < 0 || fchmod(p->tmp, 0600) < 0)
		return -1;
	if (fstatat(artifact_dirfd, id, &st, 0) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == p->done)
		return 0;
	if (renameat(artifact_dirfd, p->tmpname, artifact_dirfd, id) < 0)
		return -1;
	close(p->tmp);
	p->tmp = -1;
	if (fsync(artifact_dirfd) < 0)
		log_warn("%s: fsync: %s", artifact_dir, strerror(errno));
	return 0;
}

/* The copy is whole: store it, index it, journal it, answer. */
static void
artifact_pub_finish(struct artifact_pub *p)
{
	struct artifact a, *stored;
	uint8_t digest[SHA256_LEN];

	sha256_final(&p->hash, digest);
	memset(&a, 0, sizeof a);
	sha256_hex(digest, a.id);
	a.size = p->done;
	if (artifact_pub_store(p, a.id) < 0) {
		artifact_pub_fail(p, errno,
		    "cannot write to the artifact store", artifact_dir);
		return;
	}
	if (p->media_type == NULL)
		p->media_type = xstrdup(
		    artifact_type_guess(p->name, p->head, p->nhead, a.size));
	a.created = proto_now_ms();
	a.name = p->name;
	a.media_type = p->media_type;
	if (artifact_index_append(&a) < 0) {
		artifact_pub_fail(
		    p, errno, "cannot write the index of", artifact_dir);
		return;
	}
	artifact_remember(a.id, a.size, a.created, a.name, a.media_type);
	stored = &artifact_all[artifact_n - 1];

	artifact_pack_ref(events_begin(EV_ARTIFACT_PUBLISHED), stored, 0);
	events_commit();
	log_info("published %s as artifact %s (%llu bytes, %s)", p->path,
	    stored->id, (unsigned long long)stored->size, stored->media_type);
	artifact_pub_done(p, stored);
	artifact_pub_free(p);
}

/* Writes all of buf[0..len) to fd. Returns 0 or -1 with errno. */
static int
artifact_write_all(int fd, const uint8_t *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * One slice of p: read up to ARTIFACT_SLICE bytes of the source, hash
 * them, write them to the temp. Returns 1 when the copy is whole (the
 * size the source had when it was opened, or its end if it shrank), 0 if
 * more remains, -1 after failing p.
 *
 * Writeback of this slice starts now and the one before is waited for,
 * so dirty pages stay bounded and the final fsync has little left to do:
 * the loop never stalls on one long flush.
 */
static int
artifact_pub_step(struct artifact_pub *p)
{
	uint64_t left = p->want - p->done;
	size_t want = left < ARTIFACT_SLICE ? (size_t)left : ARTIFACT_SLICE;
	size_t got = 0, keep;
	ssize_t n;

	while (got < want) {
		n = read(p->src, artifact_buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			artifact_pub_fail(p, errno, "cannot read", p->path);
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	sha256_update(&p->hash, artifact_buf, got);
	if (p->nhead < ARTIFACT_SNIFF) {
		keep = ARTIFACT_SNIFF - p->nhead < got
		    ? ARTIFACT_SNIFF - p->nhead
		    : got;
		memcpy(p->head + p->nhead, artifact_buf, keep);
		p->nhead += keep;
	}
	if (artifact_write_all(p->tmp, artifact_buf, got) < 0) {
		artifact_pub_fail(p, errno,
		    "cannot write to the artifact store", artifact_dir);
		return -1;
	}
	/* Errors here are the final fsync's to report. */
	sync_file_range(
	    p->tmp, (off_t)p->done, (off_t)got, SYNC_FILE_RANGE_WRITE);
	if (p->done >= ARTIFACT_SLICE)
		sync_file_range(p->tmp, (off_t)(p->done - ARTIFACT_SLICE),
		    ARTIFACT_SLICE,
		    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		        SYNC_FILE_RANGE_WAIT_AFTER);
	p->done += got;
	return got < want || p->done == p->want ? 1 : 0;
}

static void
artifact_schedule(void)
{
	static const struct timeval now = {0, 0};

	if (artifact_pubs != NULL && !evtimer_pending(artifact_slice_ev, NULL))
		evtimer_add(artifact_slice_ev, &now);
}

/*
 * One slice of the publication at the head of the queue, which then goes
 * to the back: many publications share the loop, and the loop is never
 * held longer than one slice. The driver is a zero-delay timer rather
 * than an event made active again from its own callback: libevent runs
 * active callbacks until none is left before it polls again, so that
 * would starve every socket until the copy ended; a due timer is run only
 * after a poll.
 */
static void
artifact_slice_cb(evutil_socket_t fd, short what, void *arg)
{
	struct artifact_pub *p = artifact_pubs, **tail;
	int r;

	(void)fd;
	(void)what;
	(void)arg;
	if (p == NULL)
		return;
	artifact_pubs = p->next;
	p->next = NULL;
	r = artifact_pub_step(p);
	if (r == 0) {
		for (tail = &artifact_pubs; *tail != NULL;
		     tail = &(*tail)->next)
			;
		*tail = p;
	} else {
		artifact_npubs--;
		if (r == 1)
			artifact_pub_finish(p);
	}
	artifact_schedule();
}

/* Opens path for publishing: a regular file, opened without waiting (a
 * FIFO's open would block until a writer came). Returns the fd, or -1
 * after replying. */
static int
artifact_open_source(struct server_conn *c, const struct proto_msg *m,
    const char *path, struct stat *st)
{
	struct fsuser u;
	bool follow;
	int fd, err;

	if (fserr_arg_follow(c, m, &follow) < 0 || fsuser_arg(c, m, &u) < 0)
		return -1;
	if (c->desktop)
		follow = false;
	/* Only the open is the user's: the copy is berthd's, into its store. */
	if (fsuser_enter(&u) != 0) {
		server_reply_error(c, m->id, PROTO_E_INTERNAL,
		    "%s: cannot take the user's identity: %s", m->op,
		    strerror(errno));
		return -1;
	}
	fd = fsopen_open(
	    path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0, follow);
	err = errno;
	fsuser_leave(&u);
	if (fd < 0) {
		fserr_reply(c, m->id, err, "cannot open", path);
		return -1;
	}
	if (fstat(fd, st) < 0) {
		fserr_reply(c, m->id, errno, "cannot stat", path);
		close(fd);
		return -1;
	}
	/* berth-desktop publishes its recordings: files of its own user,
	 * never one it could not read itself. */
	if (c->desktop && (st->st_uid != c->desktop_uid || st->st_nlink != 1)) {
		server_reply_error_path(c, m->id, PROTO_E_FORBIDDEN, path,
		    "cannot publish %s: berth-desktop publishes its own files "
		    "only",
		    path);
		close(fd);
		return -1;
	}
	if (S_ISDIR(st->st_mode)) {
		fserr_reply(c, m->id, EISDIR, "cannot publish", path);
		close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		server_reply_error_path(c, m->id, PROTO_E_BAD_ARGS, path,
		    "cannot publish %s: not a regular file", path);
		close(fd);
		return -1;
	}
	if ((uint64_t)st->st_size > ARTIFACT_FILE_MAX) {
		server_reply_error_path(c, m->id, PROTO_E_BAD_ARGS, path,
		    "cannot publish %s: %llu bytes is more than 16 GiB", path,
		    (unsigned long long)st->st_size);
		close(fd);
		return -1;
	}
	return fd;
}

/* Creates p's temp file in the store. Returns 0 or -1 with errno. */
static int
artifact_temp_create(struct artifact_pub *p)
{
	int tries;

	for (tries = 0; tries < 100; tries++) {
		snprintf(p->tmpname, sizeof p->tmpname, "%s%u",
		    ARTIFACT_TEMP_PREFIX, artifact_temp_counter++);
		p->tmp = openat(artifact_dirfd, p->tmpname,
		    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (p->tmp >= 0 || errno != EEXIST)
			break;
	}
	return p->tmp >= 0 ? 0 : -1;
}

/* Reads name and media_type; returns 0, or -1 after replying. */
static int
artifact_arg_labels(struct server_conn *c, const struct proto_msg *m,
    const char *path, char *name, char *type)
{
	size_t end = strlen(path), start;
	int r;

	r = proto_arg_str(m->args, "name", name, ARTIFACT_NAME_MAX + 1);
	if (r == 0) {
		/* The last component; "/" names itself. */
		while (end > 1 && path[end - 1] == '/')
			end--;
		for (start = end; start > 0 && path[start - 1] != '/'; start--)
			;
		if (start == end)
			start--;
		snprintf(name, ARTIFACT_NAME_MAX + 1, "%.*s",
		    (int)(end - start), path + start);
	}
	if (r < 0 || name[0] == '\0' ||
	    !artifact_utf8((const uint8_t *)name, strlen(name), false)) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "artifact.publish: \"name\" (by default the file's "
		    "name) must be UTF-8 text of 1 to %d bytes",
		    ARTIFACT_NAME_MAX);
		return -1;
	}
	type[0] = '\0';
	r = proto_arg_str(m->args, "media_type", type, ARTIFACT_TYPE_MAX + 1);
	if (r < 0 || (r == 1 && !artifact_type_ok(type))) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "artifact.publish: \"media_type\" must be a media type "
		    "(type/subtype) of at most %d bytes",
		    ARTIFACT_TYPE_MAX);
		return -1;
	}
	return 0;
}

/* A publication of src (taken), queued: NULL with errno (src closed)
 * if the store has no room for its temp file. */
static struct artifact_pub *
artifact_pub_start(int src, uint64_t size, const char *path, const char *name,
    const char *media_type, artifact_done_fn done, void *arg)
{
	struct artifact_pub *p = xcalloc(1, sizeof *p), **tail;
	int err;

	posix_fadvise(src, 0, 0, POSIX_FADV_SEQUENTIAL);
	p->cb = done;
	p->cb_arg = arg;
	p->path = xstrdup(path);
	p->name = xstrdup(name);
	p->media_type = media_type != NULL ? xstrdup(media_type) : NULL;
	p->src = src;
	p->want = size;
	sha256_init(&p->hash);
	if (artifact_temp_create(p) < 0) {
		err = errno;
		artifact_pub_free(p);
		errno = err;
		return NULL;
	}
	for (tail = &artifact_pubs; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = p;
	artifact_npubs++;
	artifact_schedule();
	return p;
}

/* The request an artifact.publish answers once its copy ends. */
struct artifact_req {
	uint64_t serial, id; /* the connection may go first */
};

static void
artifact_req_done(void *arg, const struct artifact_done *d)
{
	struct artifact_req *r = arg;
	struct server_conn *c = server_conn_answer(r->serial, r->id);

	if (c != NULL && d->err != 0)
		fserr_reply(c, r->id, d->err, d->what, d->path);
	else if (c != NULL) {
		artifact_pack_done(server_reply_begin(c, r->id), d);
		server_reply_end(c);
	}
	inflight_end(r->serial, r->id);
	free(r);
}

void
artifact_op_publish(struct server_conn *c, const struct proto_msg *m)
{
	char path[FSERR_PATH_MAX], name[ARTIFACT_NAME_MAX + 1];
	char type[ARTIFACT_TYPE_MAX + 1];
	struct artifact_req *r;
	struct stat st;
	int fd;

	if (fserr_arg_path(c, m, "path", path) < 0 ||
	    artifact_arg_labels(c, m, path, name, type) < 0)
		return;
	if (artifact_npubs >= ARTIFACT_PENDING_MAX) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%d publications are in progress; publish again when one "
		    "is done",
		    ARTIFACT_PENDING_MAX);
		return;
	}
	if ((fd = artifact_open_source(c, m, path, &st)) < 0)
		return;
	r = xcalloc(1, sizeof *r);
	r->serial = c->serial;
	r->id = m->id;
	inflight_add(c, m->id, inflight_cancel_serial, &r->serial);
	if (artifact_pub_start(fd, (uint64_t)st.st_size, path, name,
	        type[0] != '\0' ? type : NULL, artifact_req_done, r) == NULL) {
		fserr_reply(
		    c, m->id, errno, "cannot create a file in", artifact_dir);
		inflight_end(c->serial, m->id);
		free(r);
	}
}

struct artifact_pub *
artifact_publish_fd(int fd, const char *name, const char *media_type,
    const char *label, artifact_done_fn done, void *arg)
{
	struct stat st;
	int err = 0;

	if (fstat(fd, &st) < 0)
		err = errno;
	else if (!S_ISREG(st.st_mode))
		err = EINVAL;
	else if ((uint64_t)st.st_size > ARTIFACT_FILE_MAX)
		err = EFBIG;
	else if (lseek(fd, 0, SEEK_SET) < 0)
		err = errno;
	if (err != 0) {
		close(fd);
		errno = err;
		return NULL;
	}
	return artifact_pub_start(
	    fd, (uint64_t)st.st_size, label, name, media_type, done, arg);
}

void
artifact_publish_cancel(struct artifact_pub *p)
{
	struct artifact_pub **pp;

	for (pp = &artifact_pubs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			artifact_npubs--;
			artifact_pub_free(p);
			return;
		}
}

/* ---- reading and listing ---- */

/* Reads the "id" argument and finds it; NULL after replying. */
static struct artifact *
artifact_arg_find(struct server_conn *c, const struct proto_msg *m)
{
	char id[SHA256_HEX + 1];
	struct artifact *a;

	if (proto_arg_str(m->args, "id", id, sizeof id) != 1 ||
	    !artifact_id_ok(id)) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s needs \"id\" (64 lowercase hex digits)", m->op);
		return NULL;
	}
	if ((a = artifact_find(id)) == NULL)
		server_reply_error(
		    c, m->id, PROTO_E_NOT_FOUND, "no artifact %s", id);
	return a;
}

void
artifact_op_read(struct server_conn *c, const struct proto_msg *m)
{
	uint64_t offset = 0, length = ARTIFACT_READ_MAX;
	struct artifact *a;
	msgpack_packer *pk;
	uint8_t *buf;
	size_t n, got = 0;
	ssize_t r = 0;
	char *path;
	int fd;

	if (proto_arg_u64(m->args, "offset", &offset) < 0 ||
	    proto_arg_u64(m->args, "length", &length) < 0 || length == 0 ||
	    length > ARTIFACT_READ_MAX) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "artifact.read takes \"offset\" (an integer) and "
		    "\"length\" (1 to %u)",
		    ARTIFACT_READ_MAX);
		return;
	}
	if ((a = artifact_arg_find(c, m)) == NULL)
		return;
	if (offset > a->size) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "offset %llu is past the end of artifact %s (%llu bytes)",
		    (unsigned long long)offset, a->id,
		    (unsigned long long)a->size);
		return;
	}
	n = a->size - offset < length ? (size_t)(a->size - offset)
	                              : (size_t)length;
	path = xasprintf("%s/%s", artifact_dir, a->id);
	if ((fd = openat(artifact_dirfd, a->id, O_RDONLY | O_CLOEXEC)) < 0) {
		fserr_reply(c, m->id, errno, "cannot open", path);
		free(path);
		return;
	}
	buf = xmalloc(n > 0 ? n : 1);
	while (got < n) {
		r = pread(fd, buf + got, n - got, (off_t)(offset + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got < n) {
		if (r < 0)
			fserr_reply(c, m->id, errno, "cannot read", path);
		else
			server_reply_error_path(c, m->id, PROTO_E_IO, path,
			    "artifact %s is shorter than its %llu bytes", a->id,
			    (unsigned long long)a->size);
	} else {
		pk = server_reply_begin(c, m->id);
		msgpack_pack_map(pk, 4);
		proto_pack_str(pk, "data");
		msgpack_pack_bin(pk, n);
		msgpack_pack_bin_body(pk, buf, n);
		proto_pack_kv_u64(pk, "offset", offset);
		proto_pack_kv_u64(pk, "size", a->size);
		proto_pack_kv_bool(pk, "eof", offset + n >= a->size);
		server_reply_end(c);
	}
	free(buf);
	free(path);
	close(fd);
}

void
artifact_op_list(struct server_conn *c, const struct proto_msg *m)
{
	size_t i, first = 0;
	msgpack_packer *pk = server_reply_begin(c, m->id);

	if (artifact_n > ARTIFACT_LIST_MAX)
		first = artifact_n - ARTIFACT_LIST_MAX;
	msgpack_pack_map(pk, 2);
	proto_pack_str(pk, "artifacts");
	msgpack_pack_array(pk, artifact_n - first);
	for (i = first; i < artifact_n; i++) {
		artifact_pack_ref(pk, &artifact_all[i], 1);
		proto_pack_kv_u64(pk, "created", artifact_all[i].created);
	}
	proto_pack_kv_bool(pk, "truncated", first > 0);
	server_reply_end(c);
}

/* ---- life ---- */

/* Makes every file of the store 0600, as berthd writes them now: a store
 * from before was 0644 files in a 0755 directory. */
static void
artifact_tighten(void)
{
	int fd =
	    openat(artifact_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;
	int f;

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		f = openat(artifact_dirfd, de->d_name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (f < 0)
			continue;
		if (fchmod(f, 0600) < 0)
			log_warn("%s/%s: chmod: %s", artifact_dir, de->d_name,
			    strerror(errno));
		close(f);
	}
	closedir(d);
}

/* Opens the store, made 0700 (and made so if it was not) and berthd's. */
static int
artifact_open_store(char **cause)
{
	struct stat st;

	if (mkdir(artifact_dir, 0700) < 0 && errno != EEXIST) {
		*cause = xasprintf("%s: %s", artifact_dir, strerror(errno));
		return -1;
	}
	artifact_dirfd =
	    open(artifact_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (artifact_dirfd < 0 || fstat(artifact_dirfd, &st) < 0 ||
	    fchmod(artifact_dirfd, 0700) < 0) {
		*cause = xasprintf("%s: %s", artifact_dir, strerror(errno));
		return -1;
	}
	if (st.st_uid != geteuid()) {
		*cause = xasprintf("%s: owned by uid %u, not berthd's",
		    artifact_dir, (unsigned)st.st_uid);
		return -1;
	}
	artifact_tighten();
	return 0;
}

int
artifact_init(struct event_base *base, const char *state_dir, char **cause)
{
	artifact_dir = xasprintf("%s/artifacts", state_dir);
	if (artifact_open_store(cause) < 0)
		return -1;
	artifact_indexfd = openat(artifact_dirfd, ARTIFACT_INDEX,
	    O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (artifact_indexfd < 0) {
		*cause = xasprintf(
		    "%s/%s: %s", artifact_dir, ARTIFACT_INDEX, strerror(errno));
		return -1;
	}
	artifact_sweep_temps();
	artifact_index_load();
	artifact_check_files();
	artifact_buf = xmalloc(ARTIFACT_SLICE);
	artifact_slice_ev = evtimer_new(base, artifact_slice_cb, NULL);
	log_debug(
	    "%s: %zu artifacts in %s", __func__, artifact_n, artifact_dir);
	return 0;
}

void
artifact_shutdown(void)
{
	struct artifact_pub *p;
	size_t i;

	while ((p = artifact_pubs) != NULL) {
		struct artifact_done d = {.err = ECANCELED,
		    .what = "berthd stopped before it published",
		    .path = p->path};

		artifact_pubs = p->next;
		p->cb(p->cb_arg, &d);
		artifact_pub_free(p);
	}
	artifact_npubs = 0;
	if (artifact_slice_ev != NULL)
		event_free(artifact_slice_ev);
	artifact_slice_ev = NULL;
	for (i = 0; i < artifact_n; i++)
		artifact_entry_free(&artifact_all[i]);
	free(artifact_all);
	artifact_all = NULL;
	artifact_n = artifact_alloc = 0;
	if (artifact_indexfd >= 0)
		close(artifact_indexfd);
	if (artifact_dirfd >= 0)
		close(artifact_dirfd);
	artifact_indexfd = artifact_dirfd = -1;
	free(artifact_buf);
	artifact_buf = NULL;
	free(artifact_dir);
	artifact_dir = NULL;
}
