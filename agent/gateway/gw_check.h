/* gw_check: asks berthd whether a credential opens a door. The gateway
 * holds no credential of its own; lws decides an upgrade inside its
 * filter callback, synchronously, so the question is a blocking round
 * trip on a Unix connection of its own, with a short deadline. */
#ifndef BERTH_GW_CHECK_H
#define BERTH_GW_CHECK_H

#include <libwebsockets.h>
#include <stddef.h>

/* How long berthd has to answer before the request gets a 503. */
#define GW_CHECK_DEADLINE_MS 1000

/* The doors, by the names gateway.check and gateway.attach use. */
#define GW_CHECK_V1 "v1"
#define GW_CHECK_NOVNC "novnc"
#define GW_CHECK_CDP "cdp"
#define GW_CHECK_CDP_RELAY "cdp-relay"
#define GW_CHECK_PTY "pty"

enum gw_check_result {
	GW_CHECK_OK,
	GW_CHECK_REFUSED,    /* berthd says the credential does not open it */
	GW_CHECK_UNAVAILABLE /* berthd did not answer in time, or at all */
};

/* Asks berthd about cred (len bytes) at door for peer (a client's
 * address, for berthd's log). */
enum gw_check_result gw_check(
    const char *door, const char *cred, size_t len, const char *peer);
/*
 * Whether authz (gw_auth_presented) carries what opens door for peer:
 * NULL if it does, else the reason the refusal is journaled with:
 * "missing", "malformed", "invalid" (never the credential), or
 * GW_AUTH_UNAVAILABLE.
 */
const char *gw_check_presented(
    const char *door, const char *authz, size_t alen, const char *peer);
/* A credential presented alone (len bytes at p, blanks around allowed),
 * as in /novnc/?token=: NULL if it opens door, else why not. */
const char *gw_check_token(
    const char *door, const char *p, size_t len, const char *peer);
/* The same for a request lws has parsed: its Authorization header. */
const char *gw_check_request(struct lws *wsi, const char *door);

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
