/* fserr: what every op on files shares — reading a path argument with its
 * limits, and telling a failed system call as a typed error that names the
 * path (never a generic "internal"). */
#ifndef BERTH_FSERR_H
#define BERTH_FSERR_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"
#include "server.h"

/* The longest path accepted, with its NUL (PATH_MAX). */
#define FSERR_PATH_MAX 4096

/*
 * Reads the path argument key of m into buf[FSERR_PATH_MAX]: a string,
 * absolute, at most 4095 bytes, without NUL bytes, each component at most
 * 255 bytes. Returns 0, or -1 after replying bad_args (a missing path, the
 * wrong type, NUL, relative, too long).
 */
int fserr_arg_path(struct server_conn *c, const struct proto_msg *m,
    const char *key, char *buf);
/* Reads the optional "follow_symlinks" (default false) into *follow.
 * Returns 0, or -1 after replying bad_args. */
int fserr_arg_follow(
    struct server_conn *c, const struct proto_msg *m, bool *follow);
/* The protocol's code for errno err (PROTO_E_IO when none fits); ELOOP,
 * a symlink met where none is followed (fsopen), is PROTO_E_SYMLINK. */
const char *fserr_code(int err);
/* Replies with the code for err, naming path, as "WHAT PATH: strerror". */
void fserr_reply(struct server_conn *c, uint64_t id, int err, const char *what,
    const char *path);

#endif
