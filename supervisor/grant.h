/* grant: access grants — credentials narrower than the token, one scope
 * each (the desktop to view or control, the DevTools relays, one PTY
 * session, one port's preview, one runtime's server), each expiring and
 * revocable. berthd alone holds them: the gateway asks with
 * gateway.check, as for the token, and learns of a revocation or an
 * expiry from the grant.revoked and grant.expired events its control
 * connection is shown, upon which it closes what the grant opened.
 *
 * They are kept in <state>/grants (0600, replaced whole: fsatomic.h), so
 * that a restart of the gateway or of berthd keeps them; a grant that
 * expired while berthd was down is journaled as expired at its start.
 *
 * Ownership: grant owns its records and their timers for berthd's life;
 * cfg is borrowed and outlives it. */
#ifndef BERTH_GRANT_H
#define BERTH_GRANT_H

#include <event2/event.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "grantrec.h"
#include "proto.h"
#include "server.h"
#include "token.h"

/* What a door learns of the grant that opened it (gateway.check). */
struct grant_admit {
	char id[GRANTREC_ID_LEN + 1];
	uint64_t expires_at;
	struct grantrec_scope scope;
};

/* Reads the grants file (a bad one is logged, renamed aside and none
 * kept) and arms the expiries. */
void grant_init(struct event_base *base, const struct config *cfg);
void grant_shutdown(void);

void grant_op_create(struct server_conn *c, const struct proto_msg *m);
void grant_op_list(struct server_conn *c, const struct proto_msg *m);
void grant_op_revoke(struct server_conn *c, const struct proto_msg *m);
/* gateway.redeem: a private grant's one-time link for its token. */
void grant_op_redeem(struct server_conn *c, const struct proto_msg *m);

/*
 * Whether a live grant opens door: by cred (len bytes, its token), or
 * for the preview and runtime doors by key (the grant named in the URL:
 * its token alone, or its id with cred its token), which must then be
 * given. Fills *out. Every token is compared, in time that depends on
 * the presented lengths only.
 */
bool grant_check(enum token_door door, const char *cred, size_t len,
    const char *key, struct grant_admit *out);
/* The pairs gateway.check adds to its answer for a grant: grant,
 * expires_at, scope, and the door's own (control; port; port and
 * authorization; pty and write). Returns how many pairs were packed:
 * the caller packs the map's head first with grant_admit_keys(a). */
size_t grant_admit_keys(const struct grant_admit *a);
void grant_pack_admit(msgpack_packer *pk, const struct grant_admit *a);

#endif
