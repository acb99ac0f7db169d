/* gw_check: asks berthd whether a credential opens a door. The gateway
 * holds no credential of its own; lws decides an upgrade inside its
 * filter callback, synchronously, so the question is a blocking round
 * trip on a Unix connection of its own, with a short deadline. */
#ifndef BERTH_GW_CHECK_H
#define BERTH_GW_CHECK_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How long berthd has to answer before the request gets a 503. */
#define GW_CHECK_DEADLINE_MS 1000

/* The doors, by the names gateway.check and gateway.attach use. */
#define GW_CHECK_V1 "v1"
#define GW_CHECK_NOVNC "novnc"
#define GW_CHECK_CDP "cdp"
#define GW_CHECK_CDP_RELAY "cdp-relay"
#define GW_CHECK_PTY "pty"
#define GW_CHECK_PREVIEW "preview"
#define GW_CHECK_RUNTIME "runtime"

/* Room for what berthd says of a grant: its id ("g" and 16 hex), its
 * scope ("runtime:NAME", "pty:ID:write", ...), a pty's id, and the
 * Authorization value a runtime door injects upstream. Longer is no
 * answer of berthd's. */
#define GW_CHECK_GRANT_MAX 24
#define GW_CHECK_SCOPE_MAX 160
#define GW_CHECK_PTY_MAX 16
#define GW_CHECK_AUTHZ_MAX 1024

enum gw_check_result {
	GW_CHECK_OK,
	GW_CHECK_REFUSED,    /* berthd says the credential does not open it */
	GW_CHECK_UNAVAILABLE /* berthd did not answer in time, or at all */
};

/*
 * What berthd said of a credential it admitted. The master token and the
 * probe credential: grant is "" and the rest zero. A grant: its id,
 * expiry (ms since the epoch) and scope, and the fields of its door
 * (zero, false or "" where the door has none). Plain values owned by
 * the caller; authorization is a secret the caller wipes when done.
 */
struct gw_check_answer {
	char grant[GW_CHECK_GRANT_MAX];
	uint64_t expires_at_ms;
	char scope[GW_CHECK_SCOPE_MAX];
	bool control;                           /* novnc: desktop:control */
	uint16_t port;                          /* preview, runtime */
	char authorization[GW_CHECK_AUTHZ_MAX]; /* runtime */
	char pty[GW_CHECK_PTY_MAX];             /* pty */
	bool write;                             /* pty: pty:ID:write */
};

/*
 * Asks berthd whether cred (len bytes) opens door for peer (a client's
 * address, for berthd's log). key (NUL-terminated, or NULL) is the
 * grant key a URL carries (a grant's id or token), and cred may be empty
 * when the key alone is presented. out, unless NULL, is zeroed and, on
 * GW_CHECK_OK, filled. An answer with a field of the wrong type or too
 * long is GW_CHECK_UNAVAILABLE (and logged).
 */
enum gw_check_result gw_check_grant(const char *door, const char *cred,
    size_t len, const char *key, const char *peer, struct gw_check_answer *out);
/*
 * A private preview's one-time link: grant's code (gateway.redeem) for
 * the grant's token, into token[size] (NUL-terminated, the caller's to
 * wipe). GW_CHECK_REFUSED if the code opens nothing (any more).
 */
enum gw_check_result gw_check_redeem(
    const char *grant, const char *code, char *token, size_t size);
/*
 * Whether authz (gw_auth_presented) carries what opens door for peer:
 * NULL if it does, else the reason the refusal is journaled with:
 * "missing", "malformed", "invalid" (never the credential), or
 * GW_AUTH_UNAVAILABLE. Each fills out (may be NULL) as gw_check_grant
 * does.
 */
const char *gw_check_presented(const char *door, const char *authz, size_t alen,
    const char *peer, struct gw_check_answer *out);
/* A credential presented alone (len bytes at p, blanks around allowed),
 * as in /novnc/?token=: NULL if it opens door, else why not. */
const char *gw_check_token(const char *door, const char *p, size_t len,
    const char *peer, struct gw_check_answer *out);
/* The same for a request lws has parsed: its Authorization header. */
const char *gw_check_request(
    struct lws *wsi, const char *door, struct gw_check_answer *out);

/*
 * The credential wsi presents, copied into buf[size] (NUL-terminated),
 * for gateway.attach: its length, or -1 if there is none that fits. The
 * caller wipes buf.
 */
int gw_check_copy(struct lws *wsi, char *buf, size_t size);
/*
 * A header's value into buf (NUL-terminated): its length, -1 if the
 * request has no such header, or -2 if it does not fit (a credential
 * that long is no token).
 */
int gw_check_header(
    struct lws *wsi, enum lws_token_indexes h, char *buf, size_t size);

/* Closes the connection (at exit). */
void gw_check_close(void);

#endif
