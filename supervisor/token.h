/* token: every credential the gateway's doors take, held and checked by
 * berthd alone.
 *
 * The bearer token lives in a file (created here with a fresh random
 * token, mode 0600, when it is missing) and in berthd's memory; the probe
 * credential is made at boot, lives in berthd's memory only, and goes to
 * berth-probe through an inherited pipe. The gateway holds neither: it
 * hands what a client presented to berthd (gateway.check, gateway.attach)
 * and berthd answers. */
#ifndef BERTH_TOKEN_H
#define BERTH_TOKEN_H

#include <stddef.h>

/* The gateway's doors, as gateway.check and gateway.attach name them. */
enum token_door {
	TOKEN_DOOR_V1,        /* "v1": the protocol's WebSocket */
	TOKEN_DOOR_NOVNC,     /* "novnc": noVNC's page and relay */
	TOKEN_DOOR_CDP,       /* "cdp": the /v1/cdp relay */
	TOKEN_DOOR_CDP_RELAY, /* "cdp-relay": the TCP DevTools relay */
	TOKEN_DOOR_PTY,       /* "pty": one terminal session's WebSocket */
	TOKEN_DOOR_PREVIEW,   /* "preview": a port's reverse proxy */
	TOKEN_DOOR_RUNTIME,   /* "runtime": a runtime's server */
	TOKEN_NDOORS,
};

/* Creates path with a new token unless it exists and holds one, reads
 * it, and makes the probe credential. Returns 0, or -1 with *cause (the
 * caller frees it). */
int token_init(const char *path, char **cause);
/* Wipes both credentials. */
void token_shutdown(void);

/* The door called name, or -1. */
int token_door_find(const char *name);
/* Whether cred (len bytes) opens door: the token opens every door but
 * the previews' and the runtimes' (whose URLs name a grant: grant.h),
 * the probe credential only the desktop's and DevTools' relays. The
 * comparison takes time that depends on len only. */
int token_check(enum token_door door, const char *cred, size_t len);
/* Whether presented[0..plen) is secret[0..slen), in time that depends on
 * plen only. */
int token_same(
    const char *presented, size_t plen, const char *secret, size_t slen);

/* A pipe's read end holding the probe credential, for berth-probe to
 * inherit; -1 with errno if it cannot be made. The caller closes it. */
int token_probe_fd(void);

#endif
