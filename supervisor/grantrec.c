/* grantrec: a grant's scope and record, and the grants file. */
#include "grantrec.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpcheck.h"
#include "proto.h"
#include "xmalloc.h"

static int __attribute__((format(printf, 3, 4)))
grantrec_why(char *whybuf, size_t whymax, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(whybuf, whymax, fmt, ap);
	va_end(ap);
	return -1;
}

static bool
grantrec_hex_ok(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]) ||
		    isupper((unsigned char)s[i]))
			return false;
	return s[len] == '\0';
}

bool
grantrec_id_ok(const char *id)
{
	return id[0] == 'g' && grantrec_hex_ok(id + 1, GRANTREC_ID_LEN - 1);
}

bool
grantrec_token_ok(const char *token)
{
	return grantrec_hex_ok(token, GRANTREC_TOKEN_LEN);
}

/* A runtime's name as the catalog allows one: 1-64 of [A-Za-z0-9._-]. */
static bool
grantrec_name_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > GRANTREC_NAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) &&
		    strchr("._-", s[i]) == NULL)
			return false;
	return true;
}

/* "PORT" in 1-65535, digits only, as grantrec_scope_format writes it:
 * with no leading zero, so that the words taken are the words shown. */
static int
grantrec_port(const char *s, uint16_t *port)
{
	unsigned long v = 0;
	size_t i;

	if (s[0] == '\0' || s[0] == '0' || strlen(s) > 5)
		return -1;
	for (i = 0; s[i] != '\0'; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/* "ID:view" or "ID:write" after "pty:". */
static int
grantrec_scope_pty(
    const char *rest, struct grantrec_scope *s, char *whybuf, size_t whymax)
{
	const char *colon = strchr(rest, ':');
	size_t n = colon != NULL ? (size_t)(colon - rest) : 0;

	if (colon == NULL || n != GRANTREC_PTY_MAX)
		return grantrec_why(whybuf, whymax,
		    "scope pty:ID:view or pty:ID:write needs a session's id "
		    "(%d hex digits)",
		    GRANTREC_PTY_MAX);
	memcpy(s->name, rest, n);
	s->name[n] = '\0';
	if (!grantrec_hex_ok(s->name, n))
		return grantrec_why(whybuf, whymax,
		    "scope pty:ID:...: \"%s\" is no session's id", s->name);
	if (strcmp(colon + 1, "view") == 0)
		s->write = false;
	else if (strcmp(colon + 1, "write") == 0)
		s->write = true;
	else
		return grantrec_why(whybuf, whymax,
		    "scope pty:ID:MODE: the mode is view or write, not "
		    "\"%.32s\"",
		    colon + 1);
	s->kind = GRANTREC_PTY;
	return 0;
}

int
grantrec_scope_parse(
    const char *text, struct grantrec_scope *out, char *whybuf, size_t whymax)
{
	struct grantrec_scope s;

	memset(&s, 0, sizeof s);
	if (strlen(text) > GRANTREC_SCOPE_MAX)
		return grantrec_why(whybuf, whymax,
		    "the scope is over %d bytes", GRANTREC_SCOPE_MAX);
	if (strcmp(text, "desktop:view") == 0)
		s.kind = GRANTREC_DESKTOP_VIEW;
	else if (strcmp(text, "desktop:control") == 0)
		s.kind = GRANTREC_DESKTOP_CONTROL;
	else if (strcmp(text, "cdp") == 0)
		s.kind = GRANTREC_CDP;
	else if (strncmp(text, "pty:", 4) == 0) {
		if (grantrec_scope_pty(text + 4, &s, whybuf, whymax) < 0)
			return -1;
	} else if (strncmp(text, "preview:", 8) == 0) {
		if (grantrec_port(text + 8, &s.port) < 0)
			return grantrec_why(whybuf, whymax,
			    "scope preview:PORT needs a port in 1-65535, "
			    "not \"%.16s\"",
			    text + 8);
		s.kind = GRANTREC_PREVIEW;
	} else if (strncmp(text, "runtime:", 8) == 0) {
		if (!grantrec_name_ok(text + 8))
			return grantrec_why(whybuf, whymax,
			    "scope runtime:NAME needs a runtime's name "
			    "(1-%d of A-Z a-z 0-9 . _ -)",
			    GRANTREC_NAME_MAX);
		snprintf(s.name, sizeof s.name, "%s", text + 8);
		s.kind = GRANTREC_RUNTIME;
	} else
		return grantrec_why(whybuf, whymax,
		    "unknown scope \"%.40s\": desktop:view, desktop:control, "
		    "cdp, pty:ID:view, pty:ID:write, preview:PORT or "
		    "runtime:NAME",
		    text);
	*out = s;
	return 0;
}

void
grantrec_scope_format(const struct grantrec_scope *s, char *out, size_t size)
{
	switch (s->kind) {
	case GRANTREC_DESKTOP_VIEW: snprintf(out, size, "desktop:view"); break;
	case GRANTREC_DESKTOP_CONTROL:
		snprintf(out, size, "desktop:control");
		break;
	case GRANTREC_CDP: snprintf(out, size, "cdp"); break;
	case GRANTREC_PTY:
		snprintf(out, size, "pty:%s:%s", s->name,
		    s->write ? "write" : "view");
		break;
	case GRANTREC_PREVIEW:
		snprintf(out, size, "preview:%u", (unsigned)s->port);
		break;
	case GRANTREC_RUNTIME:
		snprintf(out, size, "runtime:%s", s->name);
		break;
	}
}

void
grantrec_pack_keys(msgpack_packer *pk, const struct grantrec *r)
{
	char scope[GRANTREC_SCOPE_MAX + 16];

	grantrec_scope_format(&r->scope, scope, sizeof scope);
	proto_pack_kv_str(pk, "id", r->id);
	proto_pack_kv_str(pk, "scope", scope);
	proto_pack_kv_str(pk, "label", r->label);
	proto_pack_kv_str(pk, "visibility", r->public_ ? "public" : "private");
	proto_pack_kv_u64(pk, "created", r->created);
	proto_pack_kv_u64(pk, "expires_at", r->expires_at);
	proto_pack_kv_bool(pk, "redeemed",
	    r->scope.kind == GRANTREC_PREVIEW && !r->public_ &&
	        r->code[0] == '\0');
}

void
grantrec_encode(const struct grantrec *r, size_t n, char **out, size_t *len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t i;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	proto_pack_kv_u64(&pk, "v", 1);
	proto_pack_str(&pk, "grants");
	msgpack_pack_array(&pk, (uint32_t)n);
	for (i = 0; i < n; i++) {
		msgpack_pack_map(&pk, GRANTREC_PACK_KEYS + 2);
		grantrec_pack_keys(&pk, &r[i]);
		proto_pack_kv_str(&pk, "token", r[i].token);
		proto_pack_kv_str(&pk, "code", r[i].code);
	}
	*out = sb.data;
	*len = sb.size;
}

/* One string field of a record, required, into out[size]. */
static int
grantrec_field(const msgpack_object *m, const char *key, char *out, size_t size,
    char *whybuf, size_t whymax)
{
	if (proto_arg_str(m, key, out, size) != 1)
		return grantrec_why(whybuf, whymax,
		    "\"%s\" is missing, not a string or over %zu bytes", key,
		    size - 1);
	return 0;
}

/* The fields that are not the scope's or the times'. */
static int
grantrec_read_words(
    const msgpack_object *m, struct grantrec *r, char *whybuf, size_t whymax)
{
	char vis[16];

	if (grantrec_field(m, "id", r->id, sizeof r->id, whybuf, whymax) < 0 ||
	    grantrec_field(
	        m, "token", r->token, sizeof r->token, whybuf, whymax) < 0 ||
	    grantrec_field(m, "code", r->code, sizeof r->code, whybuf, whymax) <
	        0 ||
	    grantrec_field(
	        m, "label", r->label, sizeof r->label, whybuf, whymax) < 0 ||
	    grantrec_field(m, "visibility", vis, sizeof vis, whybuf, whymax) <
	        0)
		return -1;
	if (!grantrec_id_ok(r->id) || !grantrec_token_ok(r->token))
		return grantrec_why(whybuf, whymax, "a bad id or token");
	if (strcmp(vis, "public") != 0 && strcmp(vis, "private") != 0)
		return grantrec_why(whybuf, whymax, "visibility \"%s\"", vis);
	r->public_ = strcmp(vis, "public") == 0;
	if (r->code[0] != '\0' && !grantrec_token_ok(r->code))
		return grantrec_why(whybuf, whymax, "a bad link code");
	return 0;
}

/* What grant.create would not make: a public grant of a scope other
 * than a preview's, or a one-time link anywhere but on a private
 * preview. */
static int
grantrec_read_fits(const struct grantrec *r, char *whybuf, size_t whymax)
{
	bool preview = r->scope.kind == GRANTREC_PREVIEW;

	if (r->public_ && !preview)
		return grantrec_why(whybuf, whymax,
		    "visibility public is for preview grants only");
	if (r->code[0] != '\0' && (r->public_ || !preview))
		return grantrec_why(whybuf, whymax,
		    "a link code, which only a private preview has");
	return 0;
}

/* One record of the file: r, or -1 with why. */
static int
grantrec_read(
    const msgpack_object *m, struct grantrec *r, char *whybuf, size_t whymax)
{
	char scope[GRANTREC_SCOPE_MAX + 1];

	memset(r, 0, sizeof *r);
	if (m->type != MSGPACK_OBJECT_MAP)
		return grantrec_why(whybuf, whymax, "a record is not a map");
	if (grantrec_read_words(m, r, whybuf, whymax) < 0 ||
	    grantrec_field(m, "scope", scope, sizeof scope, whybuf, whymax) <
	        0 ||
	    grantrec_scope_parse(scope, &r->scope, whybuf, whymax) < 0 ||
	    grantrec_read_fits(r, whybuf, whymax) < 0)
		return -1;
	if (proto_arg_u64(m, "created", &r->created) != 1 ||
	    proto_arg_u64(m, "expires_at", &r->expires_at) != 1 ||
	    r->expires_at <= r->created)
		return grantrec_why(whybuf, whymax,
		    "\"created\" and \"expires_at\" must be times, in order");
	return 0;
}

/* The records of the array o into a fresh *out. */
static int
grantrec_read_all(const msgpack_object *o, struct grantrec **out, size_t *n,
    char *whybuf, size_t whymax)
{
	struct grantrec *r;
	char why[160];
	uint32_t i, j;

	if (o->via.array.size > GRANTREC_MAX)
		return grantrec_why(
		    whybuf, whymax, "over %d grants", GRANTREC_MAX);
	r = xcalloc(o->via.array.size + 1, sizeof *r);
	for (i = 0; i < o->via.array.size; i++) {
		if (grantrec_read(
		        &o->via.array.ptr[i], &r[i], why, sizeof why) < 0)
			break;
		/* An id names one grant, and a token opens one: revoking
		 * it ends all it opened. */
		for (j = 0; j < i && strcmp(r[j].id, r[i].id) != 0 &&
		     strcmp(r[j].token, r[i].token) != 0;
		     j++)
			;
		if (j < i) {
			snprintf(why, sizeof why, "the id or token of grant %u",
			    (unsigned)j);
			break;
		}
	}
	if (i < o->via.array.size) {
		explicit_bzero(r, (o->via.array.size + 1) * sizeof *r);
		free(r);
		return grantrec_why(
		    whybuf, whymax, "grant %u: %s", (unsigned)i, why);
	}
	*out = r;
	*n = o->via.array.size;
	return 0;
}

int
grantrec_decode(const void *buf, size_t len, struct grantrec **out, size_t *n,
    char *whybuf, size_t whymax)
{
	static const struct mpcheck_limits lim = {
	    .max_depth = 4, .max_objects = 4 + GRANTREC_MAX * 20};
	const msgpack_object *list;
	msgpack_unpacked u;
	uint64_t v = 0;
	const char *why;
	size_t off = 0;
	int rc = -1;

	if (len > GRANTREC_FILE_MAX)
		return grantrec_why(
		    whybuf, whymax, "over %u bytes", GRANTREC_FILE_MAX);
	if (mpcheck_object(buf, len, &lim, &why) < 0)
		return grantrec_why(whybuf, whymax, "%s", why);
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, buf, len, &off) != MSGPACK_UNPACK_SUCCESS)
		grantrec_why(whybuf, whymax, "not msgpack");
	else if (proto_arg_u64(&u.data, "v", &v) != 1 || v != 1)
		grantrec_why(whybuf, whymax, "not version 1");
	else if ((list = proto_map_get(&u.data, "grants")) == NULL ||
	    list->type != MSGPACK_OBJECT_ARRAY)
		grantrec_why(whybuf, whymax, "no \"grants\" array");
	else
		rc = grantrec_read_all(list, out, n, whybuf, whymax);
	msgpack_unpacked_destroy(&u);
	return rc;
}
