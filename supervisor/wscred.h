/* wscred: a request's one-shot git credential, berthd's side — read from
 * the request's "credential" map {username?, password} into a mapping of
 * its own kept as secrets.c keeps values (locked against swap, out of
 * core dumps, zeros in a child between fork and exec), handed to
 * berth-workspace on a pipe, redacted from what git says, wiped when its
 * helper ends. Never in an argv, an environment, a file, the journal or
 * a log line.
 *
 * Ownership: wscred_parse makes the credential; its owner frees it with
 * wscred_free (wiped and unmapped). */
#ifndef BERTH_WSCRED_H
#define BERTH_WSCRED_H

#include <msgpack.h>
#include <stddef.h>

#define WSCRED_USERNAME_MAX 256
#define WSCRED_PASSWORD_MAX 1024

struct wscred;

/* Reads o (NULL: no credential, *out NULL) into *out. NULL, or why not:
 * a message that quotes nothing of it (*out is then NULL). */
const char *wscred_parse(const msgpack_object *o, struct wscred **out);
/* The credential on a pipe ("USERNAME\nPASSWORD\n"), filled and closed:
 * its read end (close-on-exec), or -1. */
int wscred_pipe(const struct wscred *c);
/* s[0..n) with the credential's parts redacted (c NULL: a copy); the
 * caller frees it. */
char *wscred_redact(const struct wscred *c, const char *s, size_t n);
void wscred_free(struct wscred *c);
/* Wipes the string values of a request's credential map in place, once
 * it is read (o NULL or not a map: nothing). */
void wscred_wipe_object(const msgpack_object *o);

#endif
