/* artifact: what a run produced, published by content. artifact.publish
 * copies a file into the store under its SHA-256 (hashing and copying a
 * slice per turn of the loop, so a large file never stalls berthd) and
 * answers with a reference and a bounded preview; artifact.read fetches
 * ranges of it later. berthd publishes files of its own the same way
 * (artifact_publish_fd: a task's diff). The store is
 * <state_dir>/artifacts and survives a restart of berthd. Ownership:
 * artifact owns the index and every pending publication; artifact_shutdown
 * frees them. */
#ifndef BERTH_ARTIFACT_H
#define BERTH_ARTIFACT_H

#include <event2/event.h>

#include "proto.h"
#include "server.h"

struct artifact;
struct artifact_pub;

/* How a publication ended, for the call only. */
struct artifact_done {
	/* 0: stored. Else the errno that ended it, what failed and on which
	 * path (as fserr_reply takes them; ECANCELED: berthd is stopping). */
	int err;
	const char *what, *path;
	const struct artifact *ref; /* stored: the reference */
	const char *id;             /* stored: its SHA-256, hex */
	const uint8_t *preview;     /* NULL: not a text type */
	size_t npreview;
};

typedef void (*artifact_done_fn)(void *arg, const struct artifact_done *d);

/* Returns 0, or -1 with *cause (the caller frees it). */
int artifact_init(struct event_base *base, const char *state_dir, char **cause);
/* Ends every publication still pending, each owner told ECANCELED. */
void artifact_shutdown(void);

void artifact_op_publish(struct server_conn *c, const struct proto_msg *m);
void artifact_op_read(struct server_conn *c, const struct proto_msg *m);
void artifact_op_list(struct server_conn *c, const struct proto_msg *m);

/* Publishes a file of berthd's own, read from fd (taken: closed when
 * the publication ends) from its start, named name, of media_type
 * (NULL: guessed as for artifact.publish); label names it in the log.
 * done is called once with the outcome, from the loop, never from this
 * call. Not refused when artifact.publish would be busy: its callers
 * bound their own. Returns the publication (for artifact_publish_cancel),
 * or NULL with errno (fd closed) if fd is no regular file within the
 * store's limit or the store cannot take it. */
struct artifact_pub *artifact_publish_fd(int fd, const char *name,
    const char *media_type, const char *label, artifact_done_fn done,
    void *arg);
/* Drops a pending publication: done is not called. */
void artifact_publish_cancel(struct artifact_pub *p);
/* Packs d's reference as artifact.publish answers it (one map: id,
 * sha256, size, media_type, name, created, preview). d must be stored. */
void artifact_pack_done(msgpack_packer *pk, const struct artifact_done *d);

#endif
