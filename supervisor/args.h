/* args: reading a request's optional arguments with their limits, and
 * answering bad_args in one voice when one is wrong. Every op handler of
 * berthd uses these rather than checking types and ranges by hand. */
#ifndef BERTH_ARGS_H
#define BERTH_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "server.h"

/* The optional integer key into *out (left as is when absent). Returns 0,
 * or -1 after replying bad_args: not an integer in [lo, hi]. */
int args_range(struct server_conn *c, const struct proto_msg *m,
    const char *key, uint64_t lo, uint64_t hi, uint64_t *out);
/* The optional bool key into *out; -1 after replying bad_args. */
int args_flag(struct server_conn *c, const struct proto_msg *m, const char *key,
    bool *out);
/* The required "signal": a name of SIGNAME_LIST or a number; -1 after
 * replying bad_args. */
int args_signal(struct server_conn *c, const struct proto_msg *m, int *sig);

#endif
