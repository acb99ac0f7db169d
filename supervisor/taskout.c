/* taskout: a task's output streams, kept whole in files (see taskout.h).
 * Every viewer of every stream is in one list: few connections watch a
 * task at once, so a stream's or a connection's viewers are found by
 * walking it, and neither a stream nor a server_conn needs a field for
 * them. */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proto.h"
#include "taskout.h"
#include "xmalloc.h"

/* A data message carries at most this much of the file. */
#define TASKOUT_CHUNK (64u << 10)

struct taskout {
	char *path;
	char *name;
	int fd;        /* -1: no file, an empty stream */
	uint64_t size; /* bytes in the file */
	bool ended;
	bool refused;     /* a write failed: nothing more is written */
	uint64_t unsaved; /* bytes not kept since */
	bool read_warned;
};

struct taskout_viewer {
	struct taskout *o;
	struct server_conn *conn;
	uint64_t offset; /* the next byte it gets */
	bool eof_sent;
	struct taskout_viewer *next;
};

static struct taskout_viewer *taskout_viewers;
static msgpack_sbuffer taskout_sb;
static uint8_t taskout_buf[TASKOUT_CHUNK];

/* The size of the stream read back from fd: its file's, which must be a
 * regular one. 0, or an errno. */
static int
taskout_file_size(int fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return EINVAL;
	*size = (uint64_t)st.st_size;
	return 0;
}

struct taskout *
taskout_open(const char *path, const char *name, bool create)
{
	int flags = create ? O_RDWR | O_CREAT | O_TRUNC | O_APPEND : O_RDONLY;
	struct taskout *o;
	uint64_t size = 0;
	int fd, e;

	fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && (create || errno != ENOENT))
		return NULL;
	if (fd >= 0 && !create && (e = taskout_file_size(fd, &size)) != 0) {
		close(fd);
		errno = e;
		return NULL;
	}
	o = xcalloc(1, sizeof *o);
	o->path = xstrdup(path);
	o->name = xstrdup(name);
	o->fd = fd;
	o->size = size;
	o->ended = !create;
	return o;
}

/* Sends v's connection what it has room for, from v's offset on, and the
 * end of the stream once v has had every byte. */
static void
taskout_viewer_pump(struct taskout_viewer *v)
{
	struct taskout *o = v->o;
	msgpack_packer pk;
	size_t want;
	ssize_t n;

	msgpack_packer_init(&pk, &taskout_sb, msgpack_sbuffer_write);
	while (v->offset < o->size && server_out_room(v->conn) > 0) {
		want = o->size - v->offset < TASKOUT_CHUNK
		    ? (size_t)(o->size - v->offset)
		    : TASKOUT_CHUNK;
		do
			n = pread(o->fd, taskout_buf, want, (off_t)v->offset);
		while (n < 0 && errno == EINTR);
		if (n <= 0) {
			/* The file lost what was written to it: the viewer
			 * waits rather than be sent a gap. */
			if (!o->read_warned)
				log_warn("%s: %s at %llu", o->path,
				    n < 0 ? strerror(errno) : "ends early",
				    (unsigned long long)v->offset);
			o->read_warned = true;
			return;
		}
		msgpack_sbuffer_clear(&taskout_sb);
		proto_pack_data(
		    &pk, o->name, v->offset, taskout_buf, (size_t)n);
		server_send(v->conn, taskout_sb.data, taskout_sb.size);
		v->offset += (uint64_t)n;
	}
	if (o->ended && !v->eof_sent && v->offset == o->size &&
	    server_out_room(v->conn) > 0) {
		v->eof_sent = true;
		msgpack_sbuffer_clear(&taskout_sb);
		proto_pack_data_end(&pk, o->name, o->size);
		server_send(v->conn, taskout_sb.data, taskout_sb.size);
	}
}

void
taskout_pump(struct taskout *o)
{
	struct taskout_viewer *v;

	for (v = taskout_viewers; v != NULL; v = v->next)
		if (v->o == o)
			taskout_viewer_pump(v);
}

void
taskout_write(struct taskout *o, const void *data, size_t len)
{
	const char *p = data;
	ssize_t n;

	while (len > 0 && !o->refused) {
		n = write(o->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_warn("%s: %s; the rest of %s is not kept", o->path,
			    n < 0 ? strerror(errno) : "nothing written",
			    o->name);
			o->refused = true;
			break;
		}
		p += n;
		len -= (size_t)n;
		o->size += (uint64_t)n;
	}
	o->unsaved += len;
	taskout_pump(o);
}

void
taskout_end(struct taskout *o)
{
	o->ended = true;
	taskout_pump(o);
}

uint64_t
taskout_size(const struct taskout *o)
{
	return o->size;
}

bool
taskout_ended(const struct taskout *o)
{
	return o->ended;
}

uint64_t
taskout_unsaved(const struct taskout *o)
{
	return o->unsaved;
}

const char *
taskout_name(const struct taskout *o)
{
	return o->name;
}

static struct taskout_viewer *
taskout_viewer_of(const struct taskout *o, const struct server_conn *c)
{
	struct taskout_viewer *v;

	for (v = taskout_viewers; v != NULL; v = v->next)
		if (v->o == o && v->conn == c)
			return v;
	return NULL;
}

int
taskout_attach(struct taskout *o, struct server_conn *c, uint64_t from)
{
	struct taskout_viewer *v;

	if (from > o->size)
		return -1;
	if ((v = taskout_viewer_of(o, c)) == NULL) {
		v = xcalloc(1, sizeof *v);
		v->o = o;
		v->conn = c;
		v->next = taskout_viewers;
		taskout_viewers = v;
	}
	v->offset = from;
	v->eof_sent = false;
	return 0;
}

bool
taskout_attached(const struct taskout *o, const struct server_conn *c)
{
	return taskout_viewer_of(o, c) != NULL;
}

/* Frees the viewers of o (if not NULL) and those of c (if not NULL). */
static void
taskout_drop(const struct taskout *o, const struct server_conn *c)
{
	struct taskout_viewer **pp = &taskout_viewers, *v;

	while ((v = *pp) != NULL) {
		if ((o != NULL && v->o == o) || (c != NULL && v->conn == c)) {
			*pp = v->next;
			free(v);
		} else
			pp = &v->next;
	}
}

void
taskout_close(struct taskout *o)
{
	if (o == NULL)
		return;
	taskout_drop(o, NULL);
	if (o->fd >= 0)
		close(o->fd);
	free(o->path);
	free(o->name);
	free(o);
}

void
taskout_conn_pump(struct server_conn *c)
{
	struct taskout_viewer *v;

	for (v = taskout_viewers; v != NULL; v = v->next)
		if (v->conn == c)
			taskout_viewer_pump(v);
}

void
taskout_conn_gone(struct server_conn *c)
{
	taskout_drop(NULL, c);
}
