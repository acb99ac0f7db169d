/* secrets: named values that processes get in their environment. Values
 * go in (secrets.set) and never come out: no op returns one, and no log
 * line, event, error message or metric holds one — only names. They live
 * in memory locked against swapping and excluded from core dumps.
 * Ownership: secrets owns every value; a grant's strings are the caller's
 * until secrets_grant_free, which wipes them. */
#ifndef BERTH_SECRETS_H
#define BERTH_SECRETS_H

#include <msgpack.h>
#include <stddef.h>

#include "proto.h"
#include "redact.h"
#include "server.h"

#define SECRETS_MAX 256
#define SECRETS_NAME_MAX 128
#define SECRETS_VALUE_MAX (64u << 10)
#define SECRETS_TOTAL_MAX (1u << 20)

/* What one process is given: NAME=VALUE strings and the names alone. */
struct secrets_grant {
	char **vars;
	size_t nvars;
	char **names;
	size_t nnames;
};

/* Locks the store's memory and keeps berthd out of core dumps. */
void secrets_init(void);
/* Wipes and frees every value. */
void secrets_shutdown(void);

void secrets_op_set(struct server_conn *c, const struct proto_msg *m);
void secrets_op_unset(struct server_conn *c, const struct proto_msg *m);
void secrets_op_list(struct server_conn *c, const struct proto_msg *m);
/* Wipes every string and bin under o, in place: what a request of
 * secrets.set held, once answered (by secrets_op_set or not). */
void secrets_wipe_object(const msgpack_object *o);

/*
 * Resolves a "secrets" argument of proc.start or pty.open: absent or nil
 * (nothing), "all", or a list of names. Fills g (zeroed first). Returns 0,
 * or -1 with *code (bad_args, not_found) and *why, which the caller frees
 * and which names no value.
 */
int secrets_grant(const msgpack_object *arg, struct secrets_grant *g,
    const char **code, char **why);
/* Grants those of names (n of them) that are set, skipping the others:
 * what a configured program is given (a runtime's "secrets"). */
void secrets_grant_set(char *const *names, size_t n, struct secrets_grant *g);
/* Journals secrets.injected {target, names} if g grants anything. */
void secrets_grant_emit(const struct secrets_grant *g, const char *target);
/* Wipes and frees what g holds. */
void secrets_grant_free(struct secrets_grant *g);
/* Every value to redact, valid until the next secrets.set or unset. */
const struct redact_set *secrets_redact_set(void);

#endif
