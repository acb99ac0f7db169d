/* wsreport: berth-workspace's report lines (see wsreport.h). */
#include <string.h>

#include "wsreport.h"

/* A cursor over the line: each field is taken up to the next space. */
struct wsreport_cur {
	const char *p, *end;
};

static bool
wsreport_field(struct wsreport_cur *c, const char **f, size_t *n)
{
	const char *sp;

	if (c->p >= c->end)
		return false;
	sp = memchr(c->p, ' ', (size_t)(c->end - c->p));
	*f = c->p;
	*n = (size_t)((sp != NULL ? sp : c->end) - c->p);
	c->p = sp != NULL ? sp + 1 : c->end;
	/* A space that ends the line would hide an empty last field. */
	return *n > 0 && !(sp != NULL && c->p == c->end);
}

#define WSREPORT_COUNT(a) (sizeof(a) / sizeof *(a))

/* The next field as one of words[0..n): its index, or -1. */
static int
wsreport_word(struct wsreport_cur *c, const char *const *words, size_t n)
{
	const char *f;
	size_t len, i;

	if (!wsreport_field(c, &f, &len))
		return -1;
	for (i = 0; i < n; i++)
		if (len == strlen(words[i]) && memcmp(f, words[i], len) == 0)
			return (int)i;
	return -1;
}

static bool
wsreport_u64(struct wsreport_cur *c, uint64_t *v)
{
	const char *f;
	size_t n, i;

	if (!wsreport_field(c, &f, &n) || n > 19 || (n > 1 && f[0] == '0'))
		return false;
	*v = 0;
	for (i = 0; i < n; i++) {
		if (f[i] < '0' || f[i] > '9')
			return false;
		*v = *v * 10 + (uint64_t)(f[i] - '0');
	}
	return *v <= INT64_MAX;
}

/* The rest of the line as a text of 1 to max bytes, no control byte. */
static bool
wsreport_rest(
    struct wsreport_cur *c, size_t max, const char **text, size_t *len)
{
	size_t n = (size_t)(c->end - c->p), i;

	if (n == 0 || n > max)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)c->p[i] < 0x20 || c->p[i] == 0x7f)
			return false;
	*text = c->p;
	*len = n;
	c->p = c->end;
	return true;
}

static bool
wsreport_text(struct wsreport_cur *c, size_t max, struct wsreport *r)
{
	return wsreport_rest(c, max, &r->text, &r->textlen);
}

/* A commit's id: 40 lowercase hex digits, into out (41 bytes). */
static bool
wsreport_hex40(struct wsreport_cur *c, char *out)
{
	const char *f;
	size_t n, i;

	if (!wsreport_field(c, &f, &n) || n != 40)
		return false;
	for (i = 0; i < n; i++)
		if (!((f[i] >= '0' && f[i] <= '9') ||
		        (f[i] >= 'a' && f[i] <= 'f')))
			return false;
	memcpy(out, f, 40);
	out[40] = '\0';
	return true;
}

/* A flag: "0" or "1". */
static bool
wsreport_flag(struct wsreport_cur *c, bool *v)
{
	const char *f;
	size_t n;

	if (!wsreport_field(c, &f, &n) || n != 1 ||
	    (f[0] != '0' && f[0] != '1'))
		return false;
	*v = f[0] == '1';
	return true;
}

static const char *const wsreport_phases[] = {
    "counting", "compressing", "receiving", "resolving", "checkout"};

static bool
wsreport_progress(struct wsreport_cur *c, struct wsreport *r)
{
	int i =
	    wsreport_word(c, wsreport_phases, WSREPORT_COUNT(wsreport_phases));

	if (i < 0)
		return false;
	r->phase = wsreport_phases[i];
	return wsreport_u64(c, &r->objects) && wsreport_u64(c, &r->total) &&
	    wsreport_u64(c, &r->bytes);
}

static const char *const wsreport_conflicts[] = {
    [WSREPORT_CONFLICT_DIRTY] = "dirty",
    [WSREPORT_CONFLICT_ORIGIN] = "origin",
    [WSREPORT_CONFLICT_NOTREPO] = "notrepo",
};

static bool
wsreport_conflict(struct wsreport_cur *c, struct wsreport *r)
{
	int i = wsreport_word(
	    c, wsreport_conflicts, WSREPORT_COUNT(wsreport_conflicts));

	if (i < 0)
		return false;
	r->conflict = (enum wsreport_conflict)i;
	return r->conflict != WSREPORT_CONFLICT_DIRTY ||
	    (wsreport_u64(c, &r->count) && r->count > 0);
}

static bool
wsreport_done(struct wsreport_cur *c, struct wsreport *r)
{
	if (!wsreport_hex40(c, r->commit) || !wsreport_flag(c, &r->cloned) ||
	    !wsreport_text(c, WSREPORT_BRANCH_MAX, r))
		return false;
	return memchr(r->text, ' ', r->textlen) == NULL;
}

/* Reads line[0..len) as a report whose first word is one of
 * kinds[0..n): body reads the rest into r, its kind the word's index. */
static int
wsreport_read(const char *line, size_t len, const char *const *kinds, size_t n,
    bool (*body)(struct wsreport_cur *, int, void *), void *r)
{
	struct wsreport_cur c = {line, line + len};
	int k;

	if (len > WSREPORT_LINE_MAX || (k = wsreport_word(&c, kinds, n)) < 0)
		return -1;
	return body(&c, k, r) && c.p == c.end ? 0 : -1;
}

static const char *const wsreport_kinds[] = {
    [WSREPORT_PROGRESS] = "progress",
    [WSREPORT_DIRTY] = "dirty",
    [WSREPORT_CONFLICT] = "conflict",
    [WSREPORT_FAILED] = "failed",
    [WSREPORT_DONE] = "done",
};

/* The rest of a report of kind k (wsreport_kinds's index) into arg. */
static bool
wsreport_body(struct wsreport_cur *c, int k, void *arg)
{
	struct wsreport *r = arg;

	r->kind = (enum wsreport_kind)k;
	switch (r->kind) {
	case WSREPORT_PROGRESS: return wsreport_progress(c, r);
	case WSREPORT_DIRTY: return wsreport_text(c, WSREPORT_PATH_MAX, r);
	case WSREPORT_CONFLICT: return wsreport_conflict(c, r);
	case WSREPORT_FAILED: return wsreport_text(c, WSREPORT_REASON_MAX, r);
	case WSREPORT_DONE: return wsreport_done(c, r);
	}
	return false;
}

int
wsreport_parse(const char *line, size_t len, struct wsreport *r)
{
	memset(r, 0, sizeof *r);
	return wsreport_read(line, len, wsreport_kinds,
	    WSREPORT_COUNT(wsreport_kinds), wsreport_body, r);
}

static const char *const wsreport_deliver_kinds[] = {
    [WSREPORT_DELIVER_CONFLICT] = "conflict",
    [WSREPORT_DELIVER_FAILED] = "failed",
    [WSREPORT_DELIVER_STAT] = "stat",
    [WSREPORT_DELIVER_DIFFSTAT] = "diffstat",
    [WSREPORT_DELIVER_DELIVERED] = "delivered",
};

static const char *const wsreport_deliver_conflicts[] = {
    [WSREPORT_DELIVER_NOTREPO] = "notrepo",
    [WSREPORT_DELIVER_NOHEAD] = "nohead",
    [WSREPORT_DELIVER_EXISTS] = "exists",
    [WSREPORT_DELIVER_NOCHANGE] = "nochange",
};

/* The rest of a deliver report of kind k into arg. */
static bool
wsreport_deliver_body(struct wsreport_cur *c, int k, void *arg)
{
	struct wsreport_deliver *r = arg;
	int i;

	r->kind = (enum wsreport_deliver_kind)k;
	switch (r->kind) {
	case WSREPORT_DELIVER_FAILED:
		return wsreport_rest(
		    c, WSREPORT_REASON_MAX, &r->text, &r->textlen);
	case WSREPORT_DELIVER_DIFFSTAT:
		return wsreport_rest(
		    c, WSREPORT_DIFFSTAT_LINE_MAX, &r->text, &r->textlen);
	case WSREPORT_DELIVER_STAT:
		return wsreport_u64(c, &r->files) &&
		    wsreport_u64(c, &r->insertions) &&
		    wsreport_u64(c, &r->deletions);
	case WSREPORT_DELIVER_DELIVERED:
		return wsreport_hex40(c, r->commit) &&
		    wsreport_hex40(c, r->base) && wsreport_flag(c, &r->pushed);
	case WSREPORT_DELIVER_CONFLICT:
		if ((i = wsreport_word(c, wsreport_deliver_conflicts,
		         WSREPORT_COUNT(wsreport_deliver_conflicts))) < 0)
			return false;
		r->conflict = (enum wsreport_deliver_conflict)i;
		return true;
	}
	return false;
}

int
wsreport_deliver_parse(const char *line, size_t len, struct wsreport_deliver *r)
{
	memset(r, 0, sizeof *r);
	return wsreport_read(line, len, wsreport_deliver_kinds,
	    WSREPORT_COUNT(wsreport_deliver_kinds), wsreport_deliver_body, r);
}
