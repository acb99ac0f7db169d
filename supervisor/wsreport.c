/* wsreport: berth-workspace's report lines (see wsreport.h). */
#include <string.h>

#include "wsreport.h"

static const char *const wsreport_phases[] = {
    "counting", "compressing", "receiving", "resolving", "checkout"};

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

static bool
wsreport_is(const char *f, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(f, word, n) == 0;
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

static bool
wsreport_progress(struct wsreport_cur *c, struct wsreport *r)
{
	const char *f;
	size_t n, i;

	if (!wsreport_field(c, &f, &n))
		return false;
	r->phase = NULL;
	for (i = 0; i < sizeof wsreport_phases / sizeof *wsreport_phases; i++)
		if (wsreport_is(f, n, wsreport_phases[i]))
			r->phase = wsreport_phases[i];
	return r->phase != NULL && wsreport_u64(c, &r->objects) &&
	    wsreport_u64(c, &r->total) && wsreport_u64(c, &r->bytes);
}

static bool
wsreport_conflict(struct wsreport_cur *c, struct wsreport *r)
{
	const char *f;
	size_t n;

	if (!wsreport_field(c, &f, &n))
		return false;
	if (wsreport_is(f, n, "dirty")) {
		r->conflict = WSREPORT_CONFLICT_DIRTY;
		return wsreport_u64(c, &r->count) && r->count > 0;
	}
	if (wsreport_is(f, n, "origin"))
		r->conflict = WSREPORT_CONFLICT_ORIGIN;
	else if (wsreport_is(f, n, "notrepo"))
		r->conflict = WSREPORT_CONFLICT_NOTREPO;
	else
		return false;
	return true;
}

static bool
wsreport_done(struct wsreport_cur *c, struct wsreport *r)
{
	if (!wsreport_hex40(c, r->commit) || !wsreport_flag(c, &r->cloned) ||
	    !wsreport_text(c, WSREPORT_BRANCH_MAX, r))
		return false;
	return memchr(r->text, ' ', r->textlen) == NULL;
}

int
wsreport_parse(const char *line, size_t len, struct wsreport *r)
{
	struct wsreport_cur c = {line, line + len};
	const char *f;
	size_t n;
	bool ok;

	memset(r, 0, sizeof *r);
	if (len > WSREPORT_LINE_MAX || !wsreport_field(&c, &f, &n))
		return -1;
	if (wsreport_is(f, n, "progress")) {
		r->kind = WSREPORT_PROGRESS;
		ok = wsreport_progress(&c, r);
	} else if (wsreport_is(f, n, "dirty")) {
		r->kind = WSREPORT_DIRTY;
		ok = wsreport_text(&c, WSREPORT_PATH_MAX, r);
	} else if (wsreport_is(f, n, "conflict")) {
		r->kind = WSREPORT_CONFLICT;
		ok = wsreport_conflict(&c, r);
	} else if (wsreport_is(f, n, "failed")) {
		r->kind = WSREPORT_FAILED;
		ok = wsreport_text(&c, WSREPORT_REASON_MAX, r);
	} else if (wsreport_is(f, n, "done")) {
		r->kind = WSREPORT_DONE;
		ok = wsreport_done(&c, r);
	} else
		ok = false;
	return ok && c.p == c.end ? 0 : -1;
}

static const char *const wsreport_deliver_conflicts[] = {
    [WSREPORT_DELIVER_NOTREPO] = "notrepo",
    [WSREPORT_DELIVER_NOHEAD] = "nohead",
    [WSREPORT_DELIVER_EXISTS] = "exists",
    [WSREPORT_DELIVER_NOCHANGE] = "nochange",
};

static bool
wsreport_deliver_conflict(struct wsreport_cur *c, struct wsreport_deliver *r)
{
	const char *f;
	size_t n, i;

	if (!wsreport_field(c, &f, &n))
		return false;
	for (i = 0; i < sizeof wsreport_deliver_conflicts /
	         sizeof *wsreport_deliver_conflicts;
	     i++)
		if (wsreport_is(f, n, wsreport_deliver_conflicts[i])) {
			r->conflict = (enum wsreport_deliver_conflict)i;
			return true;
		}
	return false;
}

int
wsreport_deliver_parse(const char *line, size_t len, struct wsreport_deliver *r)
{
	struct wsreport_cur c = {line, line + len};
	const char *f;
	size_t n;
	bool ok;

	memset(r, 0, sizeof *r);
	if (len > WSREPORT_LINE_MAX || !wsreport_field(&c, &f, &n))
		return -1;
	if (wsreport_is(f, n, "conflict")) {
		r->kind = WSREPORT_DELIVER_CONFLICT;
		ok = wsreport_deliver_conflict(&c, r);
	} else if (wsreport_is(f, n, "failed")) {
		r->kind = WSREPORT_DELIVER_FAILED;
		ok = wsreport_rest(
		    &c, WSREPORT_REASON_MAX, &r->text, &r->textlen);
	} else if (wsreport_is(f, n, "stat")) {
		r->kind = WSREPORT_DELIVER_STAT;
		ok = wsreport_u64(&c, &r->files) &&
		    wsreport_u64(&c, &r->insertions) &&
		    wsreport_u64(&c, &r->deletions);
	} else if (wsreport_is(f, n, "diffstat")) {
		r->kind = WSREPORT_DELIVER_DIFFSTAT;
		ok = wsreport_rest(
		    &c, WSREPORT_DIFFSTAT_LINE_MAX, &r->text, &r->textlen);
	} else if (wsreport_is(f, n, "delivered")) {
		r->kind = WSREPORT_DELIVER_DELIVERED;
		ok = wsreport_hex40(&c, r->commit) &&
		    wsreport_hex40(&c, r->base) &&
		    wsreport_flag(&c, &r->pushed);
	} else
		ok = false;
	return ok && c.p == c.end ? 0 : -1;
}
