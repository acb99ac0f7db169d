/* test_grantrec: unit tests of a grant's scope and record and of the grants
 * file (supervisor/grantrec.c): every scope form is taken and written back
 * as it came; every malformed one is refused with its reason, and a
 * refusal's reason is a NUL-ended string within its buffer however small;
 * files of 0, 1 and GRANTREC_MAX records decode to the records encoded,
 * which encode to the same bytes; grant.list's map shows no token and
 * says redeemed only of a private preview's used link; a file is refused
 * for its bytes (not msgpack, trailing, too large, a header announcing
 * more than the bytes hold), its shape (version, grants array, too many
 * records), each field of a record missing, of the wrong type or of a
 * bad value, a grant grant.create would not make, and an id twice. */
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grantrec.h"
#include "proto.h"
#include "tap.h"
#include "xmalloc.h"

#define PTY_ID "0123abcd"
/* 64 bytes of a runtime's name, every kind of byte one may hold. */
#define NAME64                                                                 \
	"Az09._-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01234"

/* Where a refusal's reason must stay within whymax: the byte past it is
 * the guard, which nothing may write. */
#define GUARD '#'

/* A reason written into why[0..whymax) is NUL-ended there, the start of
 * the full reason, and wrote nothing past its buffer. */
static void
why_fits(const char *why, size_t whymax, const char *full)
{
	ck_assert_ptr_nonnull(memchr(why, '\0', whymax));
	ck_assert_int_eq(why[whymax], GUARD);
	ck_assert_msg(strncmp(full, why, strlen(why)) == 0,
	    "\"%s\" does not start \"%s\"", why, full);
}

/* Scopes. */

struct form {
	const char *text;
	enum grantrec_kind kind;
	const char *name;
	bool write;
	uint16_t port;
};

START_TEST(test_scope_forms)
{
	static const struct form forms[] = {
	    {"desktop:view", GRANTREC_DESKTOP_VIEW, "", false, 0},
	    {"desktop:control", GRANTREC_DESKTOP_CONTROL, "", false, 0},
	    {"cdp", GRANTREC_CDP, "", false, 0},
	    {"pty:" PTY_ID ":view", GRANTREC_PTY, PTY_ID, false, 0},
	    {"pty:" PTY_ID ":write", GRANTREC_PTY, PTY_ID, true, 0},
	    {"pty:89efffff:view", GRANTREC_PTY, "89efffff", false, 0},
	    {"preview:1", GRANTREC_PREVIEW, "", false, 1},
	    {"preview:10", GRANTREC_PREVIEW, "", false, 10},
	    {"preview:8080", GRANTREC_PREVIEW, "", false, 8080},
	    {"preview:65535", GRANTREC_PREVIEW, "", false, 65535},
	    {"runtime:o", GRANTREC_RUNTIME, "o", false, 0},
	    {"runtime:opencode", GRANTREC_RUNTIME, "opencode", false, 0},
	    {"runtime:" NAME64, GRANTREC_RUNTIME, NAME64, false, 0},
	};
	char why[128], back[GRANTREC_SCOPE_MAX + 16];
	struct grantrec_scope s;
	size_t i;

	ck_assert_uint_eq(strlen("runtime:" NAME64), GRANTREC_SCOPE_MAX);
	for (i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		const struct form *f = &forms[i];

		memset(&s, 0xa5, sizeof s);
		ck_assert_msg(
		    grantrec_scope_parse(f->text, &s, why, sizeof why) == 0,
		    "%s: %s", f->text, why);
		ck_assert_int_eq(s.kind, f->kind);
		ck_assert_str_eq(s.name, f->name);
		ck_assert(s.write == f->write);
		ck_assert_uint_eq(s.port, f->port);
		memset(back, GUARD, sizeof back);
		grantrec_scope_format(&s, back, sizeof back);
		ck_assert_str_eq(back, f->text);
	}
}
END_TEST

struct refusal {
	const char *text;
	const char *want;
};

#define UNKNOWN "unknown scope"
#define PORT "scope preview:PORT needs a port in 1-65535"
#define PTY_LEN "needs a session's id (8 hex digits)"
#define PTY_HEX "is no session's id"
#define MODE "the mode is view or write"
#define RUNTIME "scope runtime:NAME needs a runtime's name (1-64 of"

static const struct refusal refusals[] = {
    {"", UNKNOWN},
    {"desktop", UNKNOWN},
    {"desktop:", UNKNOWN},
    {"desktop:edit", UNKNOWN},
    {"desktop:viewer", UNKNOWN},
    {"Desktop:view", UNKNOWN},
    {"desktop:view ", UNKNOWN},
    {" cdp", UNKNOWN},
    {"cdp:", UNKNOWN},
    {"CDP", UNKNOWN},
    {"pty", UNKNOWN},
    {"preview", UNKNOWN},
    {"runtime", UNKNOWN},
    {"vnc:view", UNKNOWN},
    {"preview:0", PORT},
    {"preview:65536", PORT},
    {"preview:99999", PORT},
    {"preview:-1", PORT},
    {"preview:+1", PORT},
    {"preview: 80", PORT},
    {"preview:80 ", PORT},
    {"preview:080x", PORT},
    {"preview:0x50", PORT},
    {"preview:", PORT},
    {"preview:000080", PORT},
    {"preview:100000", PORT},
    {"preview:080", PORT},
    {"preview:01", PORT},
    {"preview:00001", PORT},
    {"preview:00", PORT},
    {"pty:0123abc:view", PTY_LEN},
    {"pty:0123abcde:view", PTY_LEN},
    {"pty:" PTY_ID, PTY_LEN},
    {"pty::view", PTY_LEN},
    {"pty:", PTY_LEN},
    {"pty:0123abcg:view", PTY_HEX},
    {"pty:0123ABCD:write", PTY_HEX},
    {"pty:0123abcD:view", PTY_HEX},
    {"pty:0123 bcd:view", PTY_HEX},
    {"pty:" PTY_ID ":", MODE},
    {"pty:" PTY_ID ":read", MODE},
    {"pty:" PTY_ID ":View", MODE},
    {"pty:" PTY_ID ":view:", MODE},
    {"pty:" PTY_ID ":writer", MODE},
    {"pty:" PTY_ID ":" PTY_ID ":view", MODE},
    {"runtime:", RUNTIME},
    {"runtime:a/b", RUNTIME},
    {"runtime:../x", RUNTIME},
    {"runtime:a b", RUNTIME},
    {"runtime:a\tb", RUNTIME},
    {"runtime:a:b", RUNTIME},
    {"runtime:\xc3\xa9t\xc3\xa9", RUNTIME},
    {"runtime:x" NAME64, "the scope is over 72 bytes"},
};

/* text refused with want in its reason, out untouched; and into buffers
 * of 1 and 8 bytes, the reason cut short within them. */
static void
scope_refused(const char *text, const char *want)
{
	static const size_t small[] = {1, 8};
	struct grantrec_scope s, before;
	char why[256], tiny[9];
	size_t i;

	memset(&s, 0xa5, sizeof s);
	before = s;
	memset(why, GUARD, sizeof why);
	ck_assert_msg(grantrec_scope_parse(text, &s, why, sizeof why - 1) < 0,
	    "\"%s\" taken", text);
	why_fits(why, sizeof why - 1, why);
	ck_assert_msg(strstr(why, want) != NULL, "\"%s\": \"%s\" lacks \"%s\"",
	    text, why, want);
	ck_assert_mem_eq(&s, &before, sizeof s);
	for (i = 0; i < sizeof small / sizeof small[0]; i++) {
		memset(tiny, GUARD, sizeof tiny);
		ck_assert_int_lt(
		    grantrec_scope_parse(text, &s, tiny, small[i]), 0);
		why_fits(tiny, small[i], why);
	}
}

START_TEST(test_scope_refused)
{
	char *huge = xmalloc(4097);
	size_t i;

	for (i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
		scope_refused(refusals[i].text, refusals[i].want);
	memset(huge, 'a', 4096);
	huge[4096] = '\0';
	scope_refused(huge, "the scope is over 72 bytes");
	memcpy(huge, "runtime:", 8);
	scope_refused(huge, "the scope is over 72 bytes");
	free(huge);
}
END_TEST

START_TEST(test_id_and_token)
{
	ck_assert(grantrec_id_ok("g0123456789abcdef"));
	ck_assert(!grantrec_id_ok("g0123456789abcde"));
	ck_assert(!grantrec_id_ok("g0123456789abcdef0"));
	ck_assert(!grantrec_id_ok("g0123456789ABCDEF"));
	ck_assert(!grantrec_id_ok("h0123456789abcdef"));
	ck_assert(!grantrec_id_ok("G0123456789abcdef"));
	ck_assert(!grantrec_id_ok("g0123456789abcdeg"));
	ck_assert(!grantrec_id_ok(""));
	ck_assert(
	    grantrec_token_ok("0123456789abcdef0123456789abcdef01234567"));
	ck_assert(
	    !grantrec_token_ok("0123456789abcdef0123456789abcdef0123456"));
	ck_assert(
	    !grantrec_token_ok("0123456789abcdef0123456789abcdef012345678"));
	ck_assert(
	    !grantrec_token_ok("0123456789ABCDEF0123456789abcdef01234567"));
	ck_assert(
	    !grantrec_token_ok("0123456789abcdef0123456789abcdef0123456 "));
	ck_assert(!grantrec_token_ok(""));
}
END_TEST

/* Records. */

/* The i-th of a file's records, of scope and visibility; a private
 * preview's link not yet redeemed. */
static void
rec(struct grantrec *r, unsigned i, const char *scope, bool public_)
{
	char why[128];

	memset(r, 0, sizeof *r);
	snprintf(r->id, sizeof r->id, "g%016x", i);
	snprintf(r->token, sizeof r->token, "%08x%032x", i, 0xc0ffeeu);
	ck_assert_msg(
	    grantrec_scope_parse(scope, &r->scope, why, sizeof why) == 0, "%s",
	    why);
	if (r->scope.kind == GRANTREC_PREVIEW && !public_)
		snprintf(r->code, sizeof r->code, "%08x%032x", i, 0xc0deu);
	snprintf(r->label, sizeof r->label, "grant %u", i);
	r->public_ = public_;
	r->created = 1700000000000ull + i;
	r->expires_at = r->created + 3600000;
}

/* n records of every scope, public and private previews among them, every
 * other private preview's link redeemed. */
static struct grantrec *
recs(size_t n)
{
	static const char *const scopes[] = {"desktop:view", "desktop:control",
	    "cdp", "pty:" PTY_ID ":view", "pty:" PTY_ID ":write",
	    "preview:3000", "preview:8080", "runtime:opencode"};
	struct grantrec *r = xcalloc(n + 1, sizeof *r);
	size_t i;

	for (i = 0; i < n; i++) {
		rec(&r[i], (unsigned)i, scopes[i % 8], i % 8 == 5);
		if (i % 16 == 14)
			memset(r[i].code, 0, sizeof r[i].code);
	}
	return r;
}

/* r[0..n) encoded decodes to the same records, which encode to the same
 * bytes; the file within GRANTREC_FILE_MAX. */
static void
round_trip(const struct grantrec *r, size_t n)
{
	struct grantrec *back = NULL;
	char why[256], *a, *b;
	size_t na, nb, nback = SIZE_MAX, i;

	grantrec_encode(r, n, &a, &na);
	ck_assert_uint_le(na, GRANTREC_FILE_MAX);
	ck_assert_msg(
	    grantrec_decode(a, na, &back, &nback, why, sizeof why) == 0, "%s",
	    why);
	ck_assert_uint_eq(nback, n);
	for (i = 0; i < n; i++)
		ck_assert_mem_eq(&back[i], &r[i], sizeof r[i]);
	grantrec_encode(back, nback, &b, &nb);
	ck_assert_uint_eq(nb, na);
	ck_assert_mem_eq(a, b, na);
	free(back);
	free(a);
	free(b);
}

START_TEST(test_file_round_trip)
{
	struct grantrec *r = recs(GRANTREC_MAX);

	round_trip(r, 0);
	round_trip(r, 1);
	round_trip(r + 1, 1);
	round_trip(r, 7);
	round_trip(r, GRANTREC_MAX);
	free(r);
}
END_TEST

/* GRANTREC_MAX records, each as large as one can be, fit the file. */
START_TEST(test_largest_file)
{
	struct grantrec *r = recs(GRANTREC_MAX);
	size_t i;

	for (i = 0; i < GRANTREC_MAX; i++) {
		rec(&r[i], (unsigned)i, "runtime:" NAME64, false);
		memset(r[i].label, 'L', GRANTREC_LABEL_MAX);
		r[i].created = UINT64_MAX - 1;
		r[i].expires_at = UINT64_MAX;
	}
	round_trip(r, GRANTREC_MAX);
	free(r);
}
END_TEST

/* grant.list's map: the record's keys, without its token or code;
 * redeemed only a private preview whose link was used. */
START_TEST(test_pack_keys)
{
	static const char *const keys[] = {"id", "scope", "label", "visibility",
	    "created", "expires_at", "redeemed"};
	static const struct {
		const char *scope;
		bool public_, used, redeemed;
	} cases[] = {
	    {"preview:3000", true, false, false},
	    {"preview:3000", false, false, false},
	    {"preview:3000", false, true, true},
	    {"desktop:view", false, false, false},
	    {"desktop:control", false, false, false},
	    {"cdp", false, false, false},
	    {"pty:" PTY_ID ":write", false, false, false},
	    {"runtime:opencode", false, false, false},
	};
	char vis[16], scope[GRANTREC_SCOPE_MAX + 1];
	const msgpack_object *m;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked u;
	struct grantrec r;
	bool redeemed;
	size_t i, j;

	ck_assert_uint_eq(sizeof keys / sizeof keys[0], GRANTREC_PACK_KEYS);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		rec(&r, (unsigned)i, cases[i].scope, cases[i].public_);
		if (cases[i].used)
			memset(r.code, 0, sizeof r.code);
		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		msgpack_pack_map(&pk, GRANTREC_PACK_KEYS);
		grantrec_pack_keys(&pk, &r);
		msgpack_unpacked_init(&u);
		ck_assert_int_eq(
		    msgpack_unpack_next(&u, sb.data, sb.size, NULL),
		    MSGPACK_UNPACK_SUCCESS);
		m = &u.data;
		for (j = 0; j < GRANTREC_PACK_KEYS; j++)
			ck_assert_msg(
			    proto_map_get(m, keys[j]) != NULL, "%s", keys[j]);
		ck_assert_ptr_null(memmem(sb.data, sb.size, r.token, 40));
		ck_assert(r.code[0] == '\0' ||
		    memmem(sb.data, sb.size, r.code, 40) == NULL);
		ck_assert_int_eq(
		    proto_arg_str(m, "scope", scope, sizeof scope), 1);
		ck_assert_str_eq(scope, cases[i].scope);
		ck_assert_int_eq(
		    proto_arg_str(m, "visibility", vis, sizeof vis), 1);
		ck_assert_str_eq(vis, r.public_ ? "public" : "private");
		ck_assert_int_eq(proto_arg_bool(m, "redeemed", &redeemed), 1);
		ck_assert_msg(redeemed == cases[i].redeemed,
		    "%s %s%s: redeemed", cases[i].scope, vis,
		    cases[i].used ? ", used" : "");
		msgpack_unpacked_destroy(&u);
		msgpack_sbuffer_destroy(&sb);
	}
}
END_TEST

/* Files spoiled: a record's pairs, one of which is changed or left out. */

enum val_type { V_STR, V_U64, V_NEG, V_NIL, V_TRUE, V_ARRAY, V_MAP, V_BIN };

struct pair {
	const char *key;
	enum val_type type;
	const char *s; /* V_STR, V_BIN: len bytes */
	size_t len;
	uint64_t u; /* V_U64 */
};

#define NPAIRS (GRANTREC_PACK_KEYS + 2)

static struct pair
str_pair(const char *key, const char *s)
{
	return (struct pair){key, V_STR, s, strlen(s), 0};
}

static struct pair
u64_pair(const char *key, uint64_t u)
{
	return (struct pair){key, V_U64, NULL, 0, u};
}

/* The pairs grantrec_encode writes for r, scope holding its words. */
static void
pairs_of(const struct grantrec *r, char *scope, struct pair p[NPAIRS])
{
	grantrec_scope_format(&r->scope, scope, GRANTREC_SCOPE_MAX + 16);
	p[0] = str_pair("id", r->id);
	p[1] = str_pair("scope", scope);
	p[2] = str_pair("label", r->label);
	p[3] = str_pair("visibility", r->public_ ? "public" : "private");
	p[4] = u64_pair("created", r->created);
	p[5] = u64_pair("expires_at", r->expires_at);
	p[6] = (struct pair){"redeemed", V_TRUE, NULL, 0, 0};
	p[7] = str_pair("token", r->token);
	p[8] = str_pair("code", r->code);
}

static void
pack_val(msgpack_packer *pk, const struct pair *p)
{
	switch (p->type) {
	case V_STR:
		msgpack_pack_str(pk, p->len);
		msgpack_pack_str_body(pk, p->s, p->len);
		break;
	case V_U64: msgpack_pack_uint64(pk, p->u); break;
	case V_NEG: msgpack_pack_int64(pk, -1); break;
	case V_NIL: msgpack_pack_nil(pk); break;
	case V_TRUE: msgpack_pack_true(pk); break;
	case V_ARRAY: msgpack_pack_array(pk, 0); break;
	case V_MAP: msgpack_pack_map(pk, 0); break;
	case V_BIN:
		msgpack_pack_bin(pk, p->len);
		msgpack_pack_bin_body(pk, p->s, p->len);
		break;
	}
}

/* The pairs p[0..n) as a record. */
static void
pack_rec(msgpack_packer *pk, const struct pair *p, size_t n)
{
	size_t i;

	msgpack_pack_map(pk, n);
	for (i = 0; i < n; i++) {
		proto_pack_str(pk, p[i].key);
		pack_val(pk, &p[i]);
	}
}

/* A file's head: version 1 and nrec records to follow. */
static void
pack_head(msgpack_sbuffer *sb, msgpack_packer *pk, size_t nrec)
{
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_u64(pk, "v", 1);
	proto_pack_str(pk, "grants");
	msgpack_pack_array(pk, nrec);
}

/* buf refused with want in its reason, and nothing given back; into
 * buffers of 1 and 8 bytes, the reason cut short within them. */
static void
refused(const void *buf, size_t len, const char *want)
{
	static const size_t small[] = {1, 8};
	struct grantrec *out = NULL;
	char why[256], tiny[9];
	size_t n = 0, i;

	memset(why, GUARD, sizeof why);
	ck_assert_int_eq(
	    grantrec_decode(buf, len, &out, &n, why, sizeof why - 1), -1);
	why_fits(why, sizeof why - 1, why);
	ck_assert_msg(
	    strstr(why, want) != NULL, "\"%s\" lacks \"%s\"", why, want);
	ck_assert_ptr_null(out);
	ck_assert_uint_eq(n, 0);
	for (i = 0; i < sizeof small / sizeof small[0]; i++) {
		memset(tiny, GUARD, sizeof tiny);
		ck_assert_int_eq(
		    grantrec_decode(buf, len, &out, &n, tiny, small[i]), -1);
		why_fits(tiny, small[i], why);
	}
	ck_assert_ptr_null(out);
}

/* A literal's bytes refused. */
#define REFUSED_LIT(s, want) refused(s, sizeof s - 1, want)

static void
taken(const void *buf, size_t len, size_t nrec)
{
	struct grantrec *out = NULL;
	char why[256];
	size_t n = 0;

	ck_assert_msg(grantrec_decode(buf, len, &out, &n, why, sizeof why) == 0,
	    "%s", why);
	ck_assert_uint_eq(n, nrec);
	free(out);
}

/* A file of a good record and then the record p[0..n), refused with want
 * in a reason that names the second record or, want NULL, taken. */
static void
rec_file(const struct pair *p, size_t n, const char *want)
{
	struct pair good[NPAIRS];
	char scope[GRANTREC_SCOPE_MAX + 16];
	struct grantrec *r = recs(1);
	msgpack_sbuffer sb;
	msgpack_packer pk;

	snprintf(r[0].id, sizeof r[0].id, "gffffffffffffffff");
	memset(r[0].token, 'f', GRANTREC_TOKEN_LEN);
	pairs_of(&r[0], scope, good);
	pack_head(&sb, &pk, 2);
	pack_rec(&pk, good, NPAIRS);
	pack_rec(&pk, p, n);
	if (want != NULL) {
		refused(sb.data, sb.size, want);
		refused(sb.data, sb.size, "grant 1: ");
	} else
		taken(sb.data, sb.size, 2);
	msgpack_sbuffer_destroy(&sb);
	free(r);
}

/* The file with the record r, p[i] replaced by v. */
static void
rec_with(const struct grantrec *r, size_t i, struct pair v, const char *want)
{
	char scope[GRANTREC_SCOPE_MAX + 16];
	struct pair p[NPAIRS];

	pairs_of(r, scope, p);
	v.key = p[i].key;
	p[i] = v;
	rec_file(p, NPAIRS, want);
}

/* What each field's refusal says, in the order of pairs_of. */
static const char *
field_why(size_t i)
{
	static const char *const whys[NPAIRS] = {
	    "\"id\" is missing, not a string or over 17 bytes",
	    "\"scope\" is missing, not a string or over 72 bytes",
	    "\"label\" is missing, not a string or over 256 bytes",
	    "\"visibility\" is missing, not a string or over 15 bytes",
	    "\"created\" and \"expires_at\" must be times, in order",
	    "\"created\" and \"expires_at\" must be times, in order", NULL,
	    "\"token\" is missing, not a string or over 40 bytes",
	    "\"code\" is missing, not a string or over 40 bytes"};

	return whys[i];
}

START_TEST(test_file_fields)
{
	static const struct pair wrong_str[] = {{NULL, V_U64, NULL, 0, 7},
	    {NULL, V_NEG, NULL, 0, 0}, {NULL, V_NIL, NULL, 0, 0},
	    {NULL, V_TRUE, NULL, 0, 0}, {NULL, V_ARRAY, NULL, 0, 0},
	    {NULL, V_MAP, NULL, 0, 0}, {NULL, V_BIN, "x", 1, 0}};
	static const struct pair wrong_time[] = {
	    {NULL, V_STR, "1700000000000", 13, 0}, {NULL, V_NEG, NULL, 0, 0},
	    {NULL, V_NIL, NULL, 0, 0}, {NULL, V_TRUE, NULL, 0, 0},
	    {NULL, V_ARRAY, NULL, 0, 0}, {NULL, V_MAP, NULL, 0, 0},
	    {NULL, V_BIN, "1", 1, 0}};
	char scope[GRANTREC_SCOPE_MAX + 16];
	struct grantrec *r = recs(1);
	struct pair p[NPAIRS], left[NPAIRS];
	size_t i, j, k;

	pairs_of(&r[0], scope, p);
	rec_file(p, NPAIRS, NULL);
	/* Each field left out in turn (redeemed is the code's to say). */
	for (i = 0; i < NPAIRS; i++) {
		for (j = k = 0; j < NPAIRS; j++)
			if (j != i)
				left[k++] = p[j];
		rec_file(left, NPAIRS - 1, field_why(i));
	}
	/* Each field of each wrong type. */
	for (i = 0; i < NPAIRS; i++) {
		bool time = p[i].type == V_U64;
		const struct pair *wrong = time ? wrong_time : wrong_str;

		if (field_why(i) == NULL)
			continue;
		for (j = 0; j < sizeof wrong_str / sizeof wrong_str[0]; j++)
			rec_with(&r[0], i, wrong[j], field_why(i));
	}
	free(r);
}
END_TEST

#define BAD_ID "a bad id or token"
#define TOKEN_UPPER "0123456789ABCDEF0123456789abcdef01234567"
#define TOKEN_SHORT "0123456789abcdef0123456789abcdef0123456"
#define TOKEN_LONG "0123456789abcdef0123456789abcdef012345678"
#define TOKEN_NOT_HEX "0123456789abcdef0123456789abcdef0123456z"
#define BAD_CODE "a bad link code"
#define NO_LINK "a link code, which only a private preview has"
#define NOT_PUBLIC "visibility public is for preview grants only"
#define BAD_TIMES "\"created\" and \"expires_at\" must be times, in order"

START_TEST(test_file_values)
{
	char longest[GRANTREC_LABEL_MAX + 2];
	struct grantrec pub, priv, desk;

	rec(&pub, 1, "preview:3000", true);
	rec(&priv, 2, "preview:3000", false);
	rec(&desk, 3, "desktop:control", false);
	memset(longest, 'L', sizeof longest - 1);
	longest[sizeof longest - 1] = '\0';
	rec_with(&priv, 2, str_pair(NULL, longest), field_why(2));
	longest[GRANTREC_LABEL_MAX] = '\0';
	rec_with(&priv, 2, str_pair(NULL, longest), NULL);
	rec_with(&priv, 2, str_pair(NULL, ""), NULL);
	rec_with(
	    &priv, 2, (struct pair){NULL, V_STR, "a\0b", 3, 0}, field_why(2));

	rec_with(&priv, 0, str_pair(NULL, "g0123456789ABCDEF"), BAD_ID);
	rec_with(&priv, 0, str_pair(NULL, "g0123456789abcde"), BAD_ID);
	rec_with(&priv, 0, str_pair(NULL, "g0123456789abcdef0"), field_why(0));
	rec_with(&priv, 0, str_pair(NULL, "h0123456789abcdef"), BAD_ID);
	rec_with(&priv, 0, str_pair(NULL, "g0123456789abcdeg"), BAD_ID);
	rec_with(&priv, 0, str_pair(NULL, ""), BAD_ID);
	rec_with(&priv, 7, str_pair(NULL, TOKEN_UPPER), BAD_ID);
	rec_with(&priv, 7, str_pair(NULL, TOKEN_SHORT), BAD_ID);
	rec_with(&priv, 7, str_pair(NULL, TOKEN_LONG), field_why(7));
	rec_with(&priv, 7, str_pair(NULL, TOKEN_NOT_HEX), BAD_ID);
	rec_with(&priv, 7, str_pair(NULL, ""), BAD_ID);

	/* A private preview's link is a token's kind of word, or none once
	 * it was redeemed. */
	rec_with(&priv, 8, str_pair(NULL, ""), NULL);
	rec_with(&priv, 8, str_pair(NULL, TOKEN_SHORT), BAD_CODE);
	rec_with(&priv, 8, str_pair(NULL, TOKEN_UPPER), BAD_CODE);
	rec_with(&priv, 8, str_pair(NULL, TOKEN_NOT_HEX), BAD_CODE);
	rec_with(&priv, 8, str_pair(NULL, TOKEN_LONG), field_why(8));
	/* A public grant has none, nor has a grant of another scope; and
	 * only a preview's grant is public: what grant.create would not
	 * make is not taken from the file either. */
	rec_with(&pub, 8, str_pair(NULL, priv.code), NO_LINK);
	rec_with(&pub, 8, str_pair(NULL, ""), NULL);
	rec_with(&desk, 8, str_pair(NULL, priv.code), NO_LINK);
	rec_with(&desk, 3, str_pair(NULL, "public"), NOT_PUBLIC);
	rec_with(&priv, 3, str_pair(NULL, "Public"), "visibility \"Public\"");
	rec_with(&priv, 3, str_pair(NULL, ""), "visibility \"\"");
	rec_with(&desk, 3, str_pair(NULL, "private"), NULL);

	rec_with(&priv, 5, u64_pair(NULL, priv.created), BAD_TIMES);
	rec_with(&priv, 5, u64_pair(NULL, priv.created - 1), BAD_TIMES);
	rec_with(&priv, 5, u64_pair(NULL, 0), BAD_TIMES);
	rec_with(&priv, 4, u64_pair(NULL, UINT64_MAX), BAD_TIMES);
	rec_with(&priv, 4, u64_pair(NULL, 0), NULL);
	rec_with(&priv, 5, u64_pair(NULL, UINT64_MAX), NULL);

	rec_with(&priv, 1, str_pair(NULL, "preview:0"), PORT);
	rec_with(&priv, 1, str_pair(NULL, "pty:0123ABCD:view"), PTY_HEX);
	rec_with(&priv, 1, str_pair(NULL, "runtime:a/b"), RUNTIME);
	rec_with(&priv, 1, str_pair(NULL, ""), UNKNOWN);
	rec_with(&priv, 1, str_pair(NULL, "runtime:x" NAME64), field_why(1));
}
END_TEST

/* An id names one grant and a token opens one: a file holding either
 * twice is refused, whatever else differs. */
START_TEST(test_file_same_id)
{
	struct grantrec *r = recs(GRANTREC_MAX);
	char *buf;
	size_t len;

	/* rec_file's first record is gffffffffffffffff. */
	rec_with(&r[6], 0, str_pair(NULL, "gffffffffffffffff"),
	    "grant 1: the id or token of grant 0");
	rec_with(&r[6], 0, str_pair(NULL, "gfffffffffffffffe"), NULL);
	memcpy(r[GRANTREC_MAX - 1].id, r[5].id, sizeof r[5].id);
	grantrec_encode(r, GRANTREC_MAX, &buf, &len);
	refused(buf, len, "grant 1023: the id or token of grant 5");
	free(buf);
	free(r);
	/* A token opens one grant: a second holder of it would start to
	 * open once the first was revoked. */
	r = recs(8);
	memcpy(r[7].token, r[3].token, sizeof r[3].token);
	grantrec_encode(r, 8, &buf, &len);
	refused(buf, len, "grant 7: the id or token of grant 3");
	free(buf);
	free(r);
}
END_TEST

/* A file of v (none if NULL) and other, or without other nrec good
 * records as grants. */
static void
top_file(msgpack_sbuffer *sb, const struct pair *v, const struct pair *other,
    size_t nrec)
{
	char scope[GRANTREC_SCOPE_MAX + 16];
	struct grantrec *r = recs(nrec);
	struct pair p[NPAIRS];
	msgpack_packer pk;
	size_t i, n = (v != NULL) + 1;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, n);
	if (v != NULL) {
		proto_pack_str(&pk, "v");
		pack_val(&pk, v);
	}
	proto_pack_str(&pk, other != NULL ? other->key : "grants");
	if (other != NULL)
		pack_val(&pk, other);
	else {
		msgpack_pack_array(&pk, nrec);
		for (i = 0; i < nrec; i++) {
			pairs_of(&r[i], scope, p);
			pack_rec(&pk, p, NPAIRS);
		}
	}
	free(r);
}

static void
top_refused(const struct pair *v, const struct pair *other, size_t nrec,
    const char *want)
{
	msgpack_sbuffer sb;

	top_file(&sb, v, other, nrec);
	refused(sb.data, sb.size, want);
	msgpack_sbuffer_destroy(&sb);
}

START_TEST(test_file_shape)
{
	const struct pair one = u64_pair("v", 1);
	msgpack_sbuffer sb;

	top_file(&sb, &one, NULL, 1);
	taken(sb.data, sb.size, 1);
	msgpack_sbuffer_destroy(&sb);

	top_refused(NULL, NULL, 1, "not version 1");
	top_refused(
	    &(struct pair){"v", V_U64, NULL, 0, 2}, NULL, 1, "not version 1");
	top_refused(
	    &(struct pair){"v", V_U64, NULL, 0, 0}, NULL, 1, "not version 1");
	top_refused(
	    &(struct pair){"v", V_NEG, NULL, 0, 0}, NULL, 1, "not version 1");
	top_refused(
	    &(struct pair){"v", V_STR, "1", 1, 0}, NULL, 1, "not version 1");
	top_refused(&one, &(struct pair){"grant", V_ARRAY, NULL, 0, 0}, 0,
	    "no \"grants\" array");
	top_refused(&one, &(struct pair){"grants", V_MAP, NULL, 0, 0}, 0,
	    "no \"grants\" array");
	top_refused(&one, &(struct pair){"grants", V_NIL, NULL, 0, 0}, 0,
	    "no \"grants\" array");
	top_refused(&one, &(struct pair){"grants", V_STR, "[]", 2, 0}, 0,
	    "no \"grants\" array");
	top_refused(&one, &(struct pair){"grants", V_U64, NULL, 0, 0}, 0,
	    "no \"grants\" array");
	top_refused(&one, NULL, GRANTREC_MAX + 1, "over 1024 grants");

	/* Not a map at the top. */
	REFUSED_LIT("\x91\x80", "not version 1");
	REFUSED_LIT("\xa1v", "not version 1");
	REFUSED_LIT("\x01", "not version 1");
	/* A record that is not a map. */
	REFUSED_LIT("\x82\xa1v\x01\xa6grants\x91\x01",
	    "grant 0: a record is not a map");
	REFUSED_LIT("\x82\xa1v\x01\xa6grants\x91\x90",
	    "grant 0: a record is not a map");
	REFUSED_LIT("\x82\xa1v\x01\xa6grants\x91\xa0",
	    "grant 0: a record is not a map");
}
END_TEST

START_TEST(test_file_bytes)
{
	/* Four billion pairs, or records, announced in five bytes: refused
	 * before msgpack-c would allocate for them (which the sanitizers'
	 * allocator would report as too large). */
	struct grantrec *r = recs(3);
	char *buf, *more, *big;
	size_t len, n;

	grantrec_encode(r, 3, &buf, &len);
	taken(buf, len, 3);
	for (n = 0; n < len; n++)
		refused(buf, n, n == 0 ? "truncated" : "");
	refused(buf, len - 1, "truncated message");
	more = xmalloc(len + 1);
	memcpy(more, buf, len);
	more[len] = '\xc0';
	refused(more, len + 1, "trailing bytes");
	REFUSED_LIT("\xdf\xff\xff\xff\xff", "container count exceeds");
	REFUSED_LIT("\x82\xa1v\x01\xa6grants\xdd\xff\xff\xff\xff",
	    "container count exceeds");
	REFUSED_LIT(
	    "\x82\xa1v\x01\xa6grants\xdb\xff\xff\xff\xff", "truncated message");
	REFUSED_LIT("\xc1", "reserved msgpack byte");
	REFUSED_LIT("\xd4\x01\x00", "ext types are not accepted");
	REFUSED_LIT("{\"v\": 1, \"grants\": []}", "trailing bytes");
	REFUSED_LIT("\x84\x84\x84\x84\x84\x84", "container count exceeds");
	REFUSED_LIT("\x81\xa1v\x81\xa1v\x81\xa1v\x81\xa1v\x81\xa1v\x01",
	    "nested too deeply");

	/* The file's size is bounded before it is read. */
	big = xcalloc(1, GRANTREC_FILE_MAX + 1);
	memcpy(big, buf, len);
	refused(big, GRANTREC_FILE_MAX + 1, "over 1048576 bytes");
	refused(big, GRANTREC_FILE_MAX, "trailing bytes");
	free(big);
	free(more);
	free(buf);
	free(r);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("grantrec");
	TCase *tc = tcase_create("grantrec");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_scope_forms);
	tcase_add_test(tc, test_scope_refused);
	tcase_add_test(tc, test_id_and_token);
	tcase_add_test(tc, test_file_round_trip);
	tcase_add_test(tc, test_largest_file);
	tcase_add_test(tc, test_pack_keys);
	tcase_add_test(tc, test_file_fields);
	tcase_add_test(tc, test_file_values);
	tcase_add_test(tc, test_file_same_id);
	tcase_add_test(tc, test_file_shape);
	tcase_add_test(tc, test_file_bytes);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
