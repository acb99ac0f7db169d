/* grant: the access grants, their file, their expiries and their ops. */
#include "grant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "clock.h"
#include "events.h"
#include "fsatomic.h"
#include "log.h"
#include "pty.h"
#include "rand.h"
#include "runtime.h"
#include "xmalloc.h"

/* A grant and the timer that ends it; allocated once, so that the
 * timer's argument stays the node's address for its life. */
struct grant_live {
	struct grantrec r;
	struct event *timer;
};

static struct event_base *grant_base;
static const struct config *grant_cfg;
static struct grant_live *grant_v[GRANTREC_MAX]; /* oldest first */
static size_t grant_n;
static int grant_dirfd = -1;

#define GRANT_FILE "grants"
/* The longest URL a grant's answer carries. */
#define GRANT_URL_MAX (CONFIG_MAX_URL + CONFIG_MAX_DOMAIN + 160)

/* Writes every grant to the file; -1 with errno if it could not be. */
static int
grant_save(void)
{
	struct grantrec *r = xcalloc(grant_n + 1, sizeof *r);
	char *buf;
	size_t i, len;
	int rc;

	for (i = 0; i < grant_n; i++)
		r[i] = grant_v[i]->r;
	grantrec_encode(r, grant_n, &buf, &len);
	explicit_bzero(r, (grant_n + 1) * sizeof *r);
	free(r);
	rc = grant_dirfd >= 0
	    ? fsatomic_replace(grant_dirfd, GRANT_FILE, buf, len)
	    : -1;
	if (grant_dirfd < 0)
		errno = EBADF;
	explicit_bzero(buf, len);
	free(buf);
	return rc;
}

static void
grant_event(const char *kind, const struct grantrec *r)
{
	char scope[GRANTREC_SCOPE_MAX + 16];
	msgpack_packer *pk = events_begin(kind);
	bool created = strcmp(kind, EV_GRANT_CREATED) == 0;

	grantrec_scope_format(&r->scope, scope, sizeof scope);
	msgpack_pack_map(pk, created ? 5 : 3);
	proto_pack_kv_str(pk, "id", r->id);
	proto_pack_kv_str(pk, "scope", scope);
	proto_pack_kv_str(pk, "label", r->label);
	if (created) {
		proto_pack_kv_str(
		    pk, "visibility", r->public_ ? "public" : "private");
		proto_pack_kv_u64(pk, "expires_at", r->expires_at);
	}
	events_commit();
}

/* Takes g out of the list and frees it, its secrets wiped. */
static void
grant_drop(struct grant_live *g)
{
	size_t i;

	for (i = 0; grant_v[i] != g; i++)
		;
	memmove(&grant_v[i], &grant_v[i + 1],
	    (grant_n - i - 1) * sizeof grant_v[0]);
	grant_v[--grant_n] = NULL;
	event_free(g->timer);
	explicit_bzero(g, sizeof *g);
	free(g);
}

/* Ends g for kind (revoked or expired): dropped, what it opened closed,
 * the file written, journaled. */
static void
grant_end(struct grant_live *g, const char *kind)
{
	struct grantrec r = g->r;

	log_info("grant %s (%s) %s", r.id, r.label,
	    strcmp(kind, EV_GRANT_EXPIRED) == 0 ? "expired" : "revoked");
	grant_drop(g);
	server_close_grant(r.id);
	if (grant_save() < 0)
		log_warn("grants: cannot write the file: %s", strerror(errno));
	grant_event(kind, &r);
	explicit_bzero(&r, sizeof r);
}

/* Arms g's timer at its expiry, by the wall clock it is kept in; the
 * callback arms it again should the clock have been set back. */
static void
grant_arm(struct grant_live *g)
{
	uint64_t now = proto_now_ms();
	struct timeval tv =
	    clock_tv(g->r.expires_at > now ? g->r.expires_at - now : 0);

	evtimer_add(g->timer, &tv);
}

static void
grant_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct grant_live *g = arg;

	(void)fd;
	(void)what;
	if (proto_now_ms() < g->r.expires_at)
		grant_arm(g);
	else
		grant_end(g, EV_GRANT_EXPIRED);
}

/* Puts r at the list's end, its timer made, not armed. */
static struct grant_live *
grant_add(const struct grantrec *r)
{
	struct grant_live *g = xcalloc(1, sizeof *g);

	g->r = *r;
	g->timer = evtimer_new(grant_base, grant_timer_cb, g);
	if (g->timer == NULL)
		log_fatal("grants: cannot make a timer");
	grant_v[grant_n++] = g;
	return g;
}

/* Reads the file into r[n]: 0 (none if it is missing), or -1 if it is
 * unreadable or bad (logged, and renamed aside so that it is kept). */
static int
grant_read(struct grantrec **r, size_t *n)
{
	char why[192], *buf;
	struct stat st;
	ssize_t got;
	int fd, rc;

	*r = NULL;
	*n = 0;
	fd = openat(grant_dirfd, GRANT_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) < 0 || st.st_size > GRANTREC_FILE_MAX) {
		close(fd);
		snprintf(why, sizeof why, "over %u bytes", GRANTREC_FILE_MAX);
		goto bad;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	got = read(fd, buf, (size_t)st.st_size);
	close(fd);
	rc = got == st.st_size
	    ? grantrec_decode(buf, (size_t)got, r, n, why, sizeof why)
	    : (snprintf(why, sizeof why, "a short read"), -1);
	explicit_bzero(buf, (size_t)st.st_size);
	free(buf);
	if (rc == 0)
		return 0;
bad:
	log_warn("grants: %s/%s: %s: set aside as %s.bad, no grant kept",
	    grant_cfg->state_dir, GRANT_FILE, why, GRANT_FILE);
	renameat(grant_dirfd, GRANT_FILE, grant_dirfd, GRANT_FILE ".bad");
	return -1;
}

/* Whether id is taken already. */
static struct grant_live *
grant_find(const char *id)
{
	size_t i;

	for (i = 0; i < grant_n; i++)
		if (strcmp(grant_v[i]->r.id, id) == 0)
			return grant_v[i];
	return NULL;
}

void
grant_init(struct event_base *base, const struct config *cfg)
{
	struct grantrec *r;
	size_t n, i;
	bool changed = false;
	uint64_t now = proto_now_ms();

	grant_base = base;
	grant_cfg = cfg;
	grant_dirfd = open(
	    cfg->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (grant_dirfd < 0) {
		log_warn("grants: %s: %s: none can be made", cfg->state_dir,
		    strerror(errno));
		return;
	}
	if (grant_read(&r, &n) < 0)
		return;
	for (i = 0; i < n; i++) {
		if (r[i].expires_at <= now) {
			grant_event(EV_GRANT_EXPIRED, &r[i]);
			changed = true;
		} else if (grant_find(r[i].id) != NULL)
			changed = true;
		else {
			grant_arm(grant_add(&r[i]));
		}
	}
	if (r != NULL)
		explicit_bzero(r, n * sizeof *r);
	free(r);
	if (changed && grant_save() < 0)
		log_warn("grants: cannot write the file: %s", strerror(errno));
	if (grant_n > 0)
		log_info("grants: %zu kept", grant_n);
}

void
grant_shutdown(void)
{
	while (grant_n > 0)
		grant_drop(grant_v[grant_n - 1]);
	if (grant_dirfd >= 0)
		close(grant_dirfd);
	grant_dirfd = -1;
}

/* The base of the links to the gateway's main port. */
static void
grant_base_url(char *out, size_t size)
{
	const char *l = grant_cfg->listen;

	if (grant_cfg->public_url != NULL)
		snprintf(out, size, "%s", grant_cfg->public_url);
	else if (strncmp(l, "0.0.0.0:", 8) == 0)
		snprintf(out, size, "http://127.0.0.1%s", strrchr(l, ':'));
	else
		snprintf(out, size, "http://%s", l);
}

/* A preview's or a runtime's door, named by key: by host name where a
 * preview domain is set, else by path under the previews' base. */
static void
grant_preview_url(
    const struct grantrec *r, const char *key, char *out, size_t size)
{
	const char *base = grant_cfg->preview_url, *scheme = "http";

	if (base != NULL && strncmp(base, "https:", 6) == 0)
		scheme = "https";
	if (r->scope.kind == GRANTREC_PREVIEW &&
	    grant_cfg->preview_domain != NULL)
		snprintf(out, size, "%s://%u-%s.%s/", scheme,
		    (unsigned)r->scope.port, key, grant_cfg->preview_domain);
	else if (base != NULL)
		snprintf(out, size, "%s/%s/%s/", base,
		    r->scope.kind == GRANTREC_PREVIEW ? "preview" : "runtime",
		    key);
	else
		snprintf(out, size, "http://%s/%s/%s/",
		    grant_cfg->preview_listen,
		    r->scope.kind == GRANTREC_PREVIEW ? "preview" : "runtime",
		    key);
}

/* The link grant.create hands out for r. */
static void
grant_url(const struct grantrec *r, char *out, size_t size)
{
	char base[CONFIG_MAX_URL + 1], door[GRANT_URL_MAX - 64];
	const char *ws;

	grant_base_url(base, sizeof base);
	ws = strncmp(base, "https:", 6) == 0 ? "wss" : "ws";
	switch (r->scope.kind) {
	case GRANTREC_DESKTOP_VIEW:
	case GRANTREC_DESKTOP_CONTROL:
		snprintf(out, size, "%s/novnc/?token=%s", base, r->token);
		break;
	case GRANTREC_CDP:
		snprintf(out, size, "%s%s/v1/cdp", ws, strchr(base, ':'));
		break;
	case GRANTREC_PTY:
		snprintf(out, size, "%s%s/v1/pty/%s", ws, strchr(base, ':'),
		    r->scope.name);
		break;
	case GRANTREC_PREVIEW:
	case GRANTREC_RUNTIME:
		/* A private preview's link is its id and a one-time code; a
		 * public one's, and a runtime's (whose client keeps no
		 * cookie), its token. */
		if (r->scope.kind == GRANTREC_PREVIEW && !r->public_) {
			grant_preview_url(r, r->id, door, sizeof door);
			snprintf(out, size, "%s?berth_link=%s", door, r->code);
		} else
			grant_preview_url(r, r->token, out, size);
		break;
	}
}

/* Why the gateway cannot serve scope s, or NULL if it can; *code is the
 * error's. */
static const char *
grant_unservable(const struct grantrec_scope *s, const char **code)
{
	int offered;

	*code = PROTO_E_UNAVAILABLE;
	switch (s->kind) {
	case GRANTREC_DESKTOP_VIEW:
	case GRANTREC_DESKTOP_CONTROL:
		if (grant_cfg->vnc == NULL || grant_cfg->novnc_dir == NULL)
			return "the gateway serves no desktop ([gateway] vnc "
			       "and novnc_dir)";
		return NULL;
	case GRANTREC_CDP:
		if (grant_cfg->cdp == NULL)
			return "the gateway relays no DevTools ([gateway] cdp)";
		return NULL;
	case GRANTREC_PTY:
		*code = PROTO_E_NOT_FOUND;
		return pty_exists(s->name) ? NULL : "no such terminal session";
	case GRANTREC_RUNTIME:
		offered = runtime_server_offered(s->name);
		if (offered < 0) {
			*code = PROTO_E_NOT_FOUND;
			return "no such runtime in the catalog";
		}
		if (offered == 0)
			return "the runtime offers no server mode";
		/* FALLTHROUGH */
	case GRANTREC_PREVIEW:
		if (grant_cfg->preview_listen == NULL)
			return "the gateway serves no previews "
			       "([gateway] preview_listen)";
		return NULL;
	}
	return NULL;
}

/* grant.create's life: ttl_s or expires_at (not both), within the
 * maximum; *at is the expiry. NULL, or the refusal. */
static const char *
grant_life(const struct proto_msg *m, uint64_t now, uint64_t *at, char *why,
    size_t whylen)
{
	uint64_t ttl = CONFIG_DEFAULT_GRANT_TTL_S,
	         max = grant_cfg->grant_max_ttl_s;
	int rt, ra;

	if (ttl > max)
		ttl = max;
	rt = proto_arg_u64(m->args, "ttl_s", &ttl);
	ra = proto_arg_u64(m->args, "expires_at", at);
	if (rt < 0 || ra < 0 || (rt == 1 && ra == 1))
		return "ttl_s (seconds) or expires_at (ms since the epoch), "
		       "not both, as non-negative integers";
	if (ra == 1) {
		if (*at <= now || *at - now > max * 1000) {
			snprintf(why, whylen,
			    "expires_at must be in the future, at most %llu s "
			    "from now ([gateway] grant_max_ttl_s)",
			    (unsigned long long)max);
			return why;
		}
		return NULL;
	}
	if (ttl < 1 || ttl > max) {
		snprintf(why, whylen,
		    "ttl_s must be 1-%llu seconds ([gateway] grant_max_ttl_s)",
		    (unsigned long long)max);
		return why;
	}
	*at = now + ttl * 1000;
	return NULL;
}

/* grant.create's arguments into r (no id, token or code yet); NULL, or
 * the bad_args refusal in why. */
static const char *
grant_args(
    const struct proto_msg *m, struct grantrec *r, char *why, size_t whylen)
{
	char scope[GRANTREC_SCOPE_MAX + 2], vis[16] = "private";
	const char *life;
	int n;

	memset(r, 0, sizeof *r);
	if (proto_arg_str(m->args, "scope", scope, sizeof scope) <= 0)
		return "grant.create needs \"scope\" (a string)";
	if (grantrec_scope_parse(scope, &r->scope, why, whylen) < 0)
		return why;
	n = proto_arg_str(m->args, "label", r->label, sizeof r->label);
	if (n < 0)
		return "label must be a string of at most 256 bytes";
	if (proto_arg_str(m->args, "visibility", vis, sizeof vis) < 0 ||
	    (strcmp(vis, "private") != 0 && strcmp(vis, "public") != 0))
		return "visibility must be \"private\" or \"public\"";
	r->public_ = strcmp(vis, "public") == 0;
	if (r->public_ && r->scope.kind != GRANTREC_PREVIEW)
		return "visibility public is for preview grants only";
	r->created = proto_now_ms();
	life = grant_life(m, r->created, &r->expires_at, why, whylen);
	return life;
}

static void
grant_reply_made(struct server_conn *c, uint64_t id, const struct grantrec *r)
{
	char url[GRANT_URL_MAX];
	msgpack_packer *pk = server_reply_begin(c, id);

	grant_url(r, url, sizeof url);
	msgpack_pack_map(pk, GRANTREC_PACK_KEYS + 2);
	grantrec_pack_keys(pk, r);
	proto_pack_kv_str(pk, "token", r->token);
	proto_pack_kv_str(pk, "url", url);
	server_reply_end(c);
	explicit_bzero(url, sizeof url);
}

void
grant_op_create(struct server_conn *c, const struct proto_msg *m)
{
	char why[192];
	const char *refused, *code;
	struct grant_live *g;
	struct grantrec r;

	if ((refused = grant_args(m, &r, why, sizeof why)) != NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", refused);
		return;
	}
	if ((refused = grant_unservable(&r.scope, &code)) != NULL) {
		server_reply_error(c, m->id, code, "%s", refused);
		return;
	}
	if (grant_n == GRANTREC_MAX) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "%d grants are live already: revoke one first",
		    GRANTREC_MAX);
		return;
	}
	do {
		r.id[0] = 'g';
		rand_hex(r.id + 1, (GRANTREC_ID_LEN - 1) / 2);
	} while (grant_find(r.id) != NULL);
	rand_hex(r.token, GRANTREC_TOKEN_LEN / 2);
	if (r.scope.kind == GRANTREC_PREVIEW && !r.public_)
		rand_hex(r.code, GRANTREC_TOKEN_LEN / 2);
	g = grant_add(&r);
	if (grant_save() < 0) {
		server_reply_error(c, m->id, PROTO_E_IO,
		    "cannot keep the grant: %s", strerror(errno));
		grant_drop(g);
		grant_save();
		explicit_bzero(&r, sizeof r);
		return;
	}
	grant_arm(g);
	log_info("grant %s (%s) made for %s", r.id, r.label, c->peer);
	grant_event(EV_GRANT_CREATED, &r);
	grant_reply_made(c, m->id, &r);
	explicit_bzero(&r, sizeof r);
}

void
grant_op_list(struct server_conn *c, const struct proto_msg *m)
{
	msgpack_packer *pk = server_reply_begin(c, m->id);
	size_t i;

	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "grants");
	msgpack_pack_array(pk, (uint32_t)grant_n);
	for (i = 0; i < grant_n; i++) {
		msgpack_pack_map(pk, GRANTREC_PACK_KEYS);
		grantrec_pack_keys(pk, &grant_v[i]->r);
	}
	server_reply_end(c);
}

void
grant_op_revoke(struct server_conn *c, const struct proto_msg *m)
{
	char id[GRANTREC_ID_LEN + 2];
	struct grant_live *g;

	if (proto_arg_str(m->args, "id", id, sizeof id) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "grant.revoke needs \"id\" (a grant's id)");
		return;
	}
	if ((g = grant_find(id)) == NULL) {
		server_reply_error(c, m->id, PROTO_E_NOT_FOUND,
		    "no grant \"%s\" (it may have expired)", id);
		return;
	}
	grant_end(g, EV_GRANT_REVOKED);
	server_reply_empty(c, m->id);
}

void
grant_op_redeem(struct server_conn *c, const struct proto_msg *m)
{
	char id[GRANTREC_ID_LEN + 2], code[GRANTREC_TOKEN_LEN + 2];
	struct grant_live *g;
	msgpack_packer *pk;
	int n;

	n = proto_arg_str(m->args, "code", code, sizeof code);
	if (proto_arg_str(m->args, "grant", id, sizeof id) <= 0 || n < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "gateway.redeem needs \"grant\" and \"code\" strings");
		return;
	}
	g = grant_find(id);
	if (g == NULL || g->r.expires_at <= proto_now_ms() ||
	    g->r.code[0] == '\0' ||
	    !token_same(code, strlen(code), g->r.code, GRANTREC_TOKEN_LEN)) {
		explicit_bzero(code, sizeof code);
		server_reply_error(c, m->id, PROTO_E_UNAUTHORIZED,
		    "the link is not (or no longer) good");
		return;
	}
	explicit_bzero(code, sizeof code);
	memcpy(code, g->r.code, sizeof g->r.code);
	explicit_bzero(g->r.code, sizeof g->r.code);
	if (grant_save() < 0) {
		memcpy(g->r.code, code, sizeof g->r.code);
		explicit_bzero(code, sizeof code);
		server_reply_error(c, m->id, PROTO_E_IO,
		    "cannot keep the grant: %s", strerror(errno));
		return;
	}
	explicit_bzero(code, sizeof code);
	log_info("grant %s: its link was redeemed", g->r.id);
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 1);
	proto_pack_kv_str(pk, "token", g->r.token);
	server_reply_end(c);
}

/* Whether scope s is one that door serves. */
static bool
grant_door_fits(enum token_door door, const struct grantrec_scope *s)
{
	switch (door) {
	case TOKEN_DOOR_NOVNC:
		return s->kind == GRANTREC_DESKTOP_VIEW ||
		    s->kind == GRANTREC_DESKTOP_CONTROL;
	case TOKEN_DOOR_CDP:
	case TOKEN_DOOR_CDP_RELAY: return s->kind == GRANTREC_CDP;
	case TOKEN_DOOR_PTY: return s->kind == GRANTREC_PTY;
	case TOKEN_DOOR_PREVIEW: return s->kind == GRANTREC_PREVIEW;
	case TOKEN_DOOR_RUNTIME: return s->kind == GRANTREC_RUNTIME;
	default: return false;
	}
}

bool
grant_check(enum token_door door, const char *cred, size_t len, const char *key,
    struct grant_admit *out)
{
	size_t i, klen = key != NULL ? strlen(key) : 0;
	struct grant_live *hit = NULL;
	uint64_t now = proto_now_ms();
	bool keyed = door == TOKEN_DOOR_PREVIEW || door == TOKEN_DOOR_RUNTIME;
	int ok;

	if (keyed && klen == 0)
		return false;
	/* Every grant is compared, whichever matches. */
	for (i = 0; i < grant_n; i++) {
		const struct grantrec *r = &grant_v[i]->r;

		if (keyed)
			ok = token_same(
			         key, klen, r->token, GRANTREC_TOKEN_LEN) |
			    ((strcmp(key, r->id) == 0) &
			        token_same(
			            cred, len, r->token, GRANTREC_TOKEN_LEN));
		else
			ok = len > 0 &&
			    token_same(cred, len, r->token, GRANTREC_TOKEN_LEN);
		if (ok && hit == NULL)
			hit = grant_v[i];
	}
	if (hit == NULL || hit->r.expires_at <= now ||
	    !grant_door_fits(door, &hit->r.scope))
		return false;
	memcpy(out->id, hit->r.id, sizeof out->id);
	out->expires_at = hit->r.expires_at;
	out->scope = hit->r.scope;
	return true;
}

size_t
grant_admit_keys(const struct grant_admit *a)
{
	switch (a->scope.kind) {
	case GRANTREC_DESKTOP_VIEW:
	case GRANTREC_DESKTOP_CONTROL:
	case GRANTREC_PREVIEW: return 4;
	case GRANTREC_PTY:
	case GRANTREC_RUNTIME: return 5;
	default: return 3;
	}
}

void
grant_pack_admit(msgpack_packer *pk, const struct grant_admit *a)
{
	char scope[GRANTREC_SCOPE_MAX + 16], auth[256];
	unsigned port = 0;

	grantrec_scope_format(&a->scope, scope, sizeof scope);
	proto_pack_kv_str(pk, "grant", a->id);
	proto_pack_kv_u64(pk, "expires_at", a->expires_at);
	proto_pack_kv_str(pk, "scope", scope);
	switch (a->scope.kind) {
	case GRANTREC_DESKTOP_VIEW:
	case GRANTREC_DESKTOP_CONTROL:
		proto_pack_kv_bool(
		    pk, "control", a->scope.kind == GRANTREC_DESKTOP_CONTROL);
		break;
	case GRANTREC_PREVIEW:
		proto_pack_kv_u64(pk, "port", a->scope.port);
		break;
	case GRANTREC_PTY:
		proto_pack_kv_str(pk, "pty", a->scope.name);
		proto_pack_kv_bool(pk, "write", a->scope.write);
		break;
	case GRANTREC_RUNTIME:
		/* Port 0: the runtime runs no server now (the door says so). */
		if (runtime_server_auth(
		        a->scope.name, &port, auth, sizeof auth) < 0)
			auth[0] = '\0';
		proto_pack_kv_u64(pk, "port", port);
		proto_pack_kv_str(pk, "authorization", auth);
		explicit_bzero(auth, sizeof auth);
		break;
	default: break;
	}
}
