/* wscred: a request's one-shot git credential (see wscred.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "proto.h"
#include "redact.h"
#include "wscred.h"
#include "xmalloc.h"

struct wscred {
	char username[WSCRED_USERNAME_MAX + 1];
	char password[WSCRED_PASSWORD_MAX + 1];
};

/* A locked, undumpable mapping for one credential; NULL if there is no
 * memory for it. */
static struct wscred *
wscred_new(void)
{
	struct wscred *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return NULL;
	/* The system call itself: the sanitizers' mlock() does nothing. */
	if (syscall(SYS_mlock, c, sizeof *c) != 0)
		log_warn("cannot lock a credential's memory (%s): it may be "
		         "swapped out",
		    strerror(errno));
	madvise(c, sizeof *c, MADV_DONTDUMP);
	madvise(c, sizeof *c, MADV_WIPEONFORK);
	return c;
}

void
wscred_free(struct wscred *c)
{
	if (c == NULL)
		return;
	explicit_bzero(c, sizeof *c);
	munmap(c, sizeof *c);
}

/* A credential part: 1 to max bytes, no NUL or line end (the pipe's
 * format is a line each). */
static bool
wscred_part(const msgpack_object *v, char *out, size_t max)
{
	if (v->type != MSGPACK_OBJECT_STR || v->via.str.size == 0 ||
	    v->via.str.size > max ||
	    memchr(v->via.str.ptr, '\0', v->via.str.size) != NULL ||
	    memchr(v->via.str.ptr, '\n', v->via.str.size) != NULL ||
	    memchr(v->via.str.ptr, '\r', v->via.str.size) != NULL)
		return false;
	memcpy(out, v->via.str.ptr, v->via.str.size);
	out[v->via.str.size] = '\0';
	return true;
}

static bool
wscred_key_ok(const msgpack_object *k)
{
	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == 8 &&
	    (memcmp(k->via.str.ptr, "username", 8) == 0 ||
	        memcmp(k->via.str.ptr, "password", 8) == 0);
}

static const char *
wscred_fill(struct wscred *c, const msgpack_object *o)
{
	const msgpack_object *u = proto_map_get(o, "username"),
	                     *p = proto_map_get(o, "password");

	if (p == NULL || !wscred_part(p, c->password, WSCRED_PASSWORD_MAX))
		return "credential's password must be 1 to 1024 bytes without "
		       "NUL or line ends";
	if (u != NULL && !wscred_part(u, c->username, WSCRED_USERNAME_MAX))
		return "credential's username must be 1 to 256 bytes without "
		       "NUL or line ends";
	if (u == NULL)
		snprintf(c->username, sizeof c->username, "git");
	return NULL;
}

const char *
wscred_parse(const msgpack_object *o, struct wscred **out)
{
	const char *why;
	uint32_t i;

	*out = NULL;
	if (o == NULL)
		return NULL;
	if (o->type != MSGPACK_OBJECT_MAP)
		return "credential must be a map {username?, password}";
	for (i = 0; i < o->via.map.size; i++)
		if (!wscred_key_ok(&o->via.map.ptr[i].key))
			return "credential takes only username and password";
	if ((*out = wscred_new()) == NULL)
		return "no memory for the credential";
	if ((why = wscred_fill(*out, o)) != NULL) {
		wscred_free(*out);
		*out = NULL;
	}
	return why;
}

int
wscred_pipe(const struct wscred *c)
{
	struct iovec iov[4] = {{(void *)c->username, strlen(c->username)},
	    {"\n", 1}, {(void *)c->password, strlen(c->password)}, {"\n", 1}};
	size_t n = iov[0].iov_len + iov[2].iov_len + 2;
	int p[2];
	bool ok;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	/* A pipe holds far more than a credential: one write, whole. Written
	 * from the locked mapping, with no copy on the way. */
	ok = writev(p[1], iov, 4) == (ssize_t)n;
	close(p[1]);
	if (!ok) {
		close(p[0]);
		return -1;
	}
	return p[0];
}

/* Collects redact_feed's output into a string. */
struct wscred_buf {
	char *p;
	size_t len, cap;
};

static void
wscred_buf_out(void *arg, const void *data, size_t len)
{
	struct wscred_buf *b = arg;

	if (b->len + len + 1 > b->cap) {
		b->cap = (b->len + len + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
}

char *
wscred_redact(const struct wscred *c, const char *s, size_t n)
{
	struct redact_secret v[2];
	struct redact_set set = {v, 0, 0};
	struct wscred_buf b = {xstrdup(""), 0, 1};
	struct redact *r = redact_new();
	size_t i;

	if (c != NULL) {
		v[set.n++] = (struct redact_secret){"credential",
		    (const uint8_t *)c->password, strlen(c->password)};
		v[set.n++] = (struct redact_secret){"credential",
		    (const uint8_t *)c->username, strlen(c->username)};
		for (i = 0; i < set.n; i++)
			if (v[i].len >= REDACT_MIN && v[i].len > set.maxlen)
				set.maxlen = v[i].len;
	}
	redact_feed(r, &set, s, n, wscred_buf_out, &b);
	redact_flush(r, &set, wscred_buf_out, &b);
	redact_free(r);
	return b.p;
}

void
wscred_wipe_object(const msgpack_object *o)
{
	uint32_t i;

	if (o == NULL || o->type != MSGPACK_OBJECT_MAP)
		return;
	for (i = 0; i < o->via.map.size; i++)
		if (o->via.map.ptr[i].val.type == MSGPACK_OBJECT_STR)
			explicit_bzero(
			    (void *)o->via.map.ptr[i].val.via.str.ptr,
			    o->via.map.ptr[i].val.via.str.size);
}
