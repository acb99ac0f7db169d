/* grantrec: an access grant as berthd keeps it — its scope, parsed from
 * and written back to the words grant.create takes, and its record, as
 * grant.list shows it and as the grants file holds it (with the token and
 * the one-time link's code, which nothing else ever shows). Pure: no
 * files, no clocks, no randomness; every limit is checked on the way in,
 * since the file is read back after a crash and must not be trusted more
 * than a request.
 *
 * Ownership: a struct grantrec owns nothing outside itself (fixed
 * arrays); a grants file's records are an array the caller frees. */
#ifndef BERTH_GRANTREC_H
#define BERTH_GRANTREC_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRANTREC_ID_LEN 17    /* "g" and 16 hex digits */
#define GRANTREC_TOKEN_LEN 40 /* hex: 160 bits */
#define GRANTREC_LABEL_MAX 256
#define GRANTREC_NAME_MAX 64 /* a runtime's name, as the catalog's */
#define GRANTREC_PTY_MAX 8   /* a PTY session's id */
/* The longest scope: "runtime:" and a name. */
#define GRANTREC_SCOPE_MAX (8 + GRANTREC_NAME_MAX)
/* Grants held at once, and so records in the file. */
#define GRANTREC_MAX 1024
/* The file is never larger: each record is under 700 bytes. */
#define GRANTREC_FILE_MAX (1u << 20)

enum grantrec_kind {
	GRANTREC_DESKTOP_VIEW,
	GRANTREC_DESKTOP_CONTROL,
	GRANTREC_CDP,
	GRANTREC_PTY,
	GRANTREC_PREVIEW,
	GRANTREC_RUNTIME,
};

struct grantrec_scope {
	enum grantrec_kind kind;
	char name[GRANTREC_NAME_MAX + 1]; /* PTY: its id; RUNTIME: its name */
	bool write;                       /* PTY: input too */
	uint16_t port;                    /* PREVIEW: 1-65535 */
};

struct grantrec {
	char id[GRANTREC_ID_LEN + 1];
	char token[GRANTREC_TOKEN_LEN + 1];
	char code[GRANTREC_TOKEN_LEN + 1]; /* the link's; "" once redeemed
	                                    * or for a public grant */
	struct grantrec_scope scope;
	char label[GRANTREC_LABEL_MAX + 1];
	bool public_;        /* visibility "public" */
	uint64_t created;    /* ms since the epoch */
	uint64_t expires_at; /* ms since the epoch, after created */
};

/* Reads text as a scope: 0, or -1 with why (static or in whybuf). */
int grantrec_scope_parse(
    const char *text, struct grantrec_scope *out, char *whybuf, size_t whymax);
/* The words of s (at least GRANTREC_SCOPE_MAX + 16 bytes in out). */
void grantrec_scope_format(
    const struct grantrec_scope *s, char *out, size_t size);

/* Whether id is a grant's id, and token a grant's token (lower hex). */
bool grantrec_id_ok(const char *id);
bool grantrec_token_ok(const char *token);

/* Packs r as grant.list shows it: id, scope, label, visibility,
 * created, expires_at, redeemed (GRANTREC_PACK_KEYS pairs, no head). */
#define GRANTREC_PACK_KEYS 7
void grantrec_pack_keys(msgpack_packer *pk, const struct grantrec *r);

/* The grants file's bytes for r[0..n): {"v": 1, "grants": [...]}, each
 * record with its token and code; the caller frees *out. */
void grantrec_encode(
    const struct grantrec *r, size_t n, char **out, size_t *len);
/* Reads a grants file's bytes: every record in *out (the caller frees
 * the array), no id twice, and their count in *n. 0, or -1 with why (static or in
 * whybuf) and nothing to free. */
int grantrec_decode(const void *buf, size_t len, struct grantrec **out,
    size_t *n, char *whybuf, size_t whymax);

#endif
