/* fsuser: file ops done with a user's rights. A request's "as" names the
 * user; for the length of the op berthd's thread takes that user's
 * filesystem uid, gid and groups (setfsuid, setfsgid and the raw setgroups
 * system call, which changes this thread alone), so the kernel checks
 * every access as it would for that user, and gives them back after. */
#ifndef BERTH_FSUSER_H
#define BERTH_FSUSER_H

#include <stdbool.h>
#include <sys/types.h>

#include "proto.h"
#include "server.h"

#define FSUSER_GROUPS_MAX 64

/* Who an op acts as; filled by fsuser_arg, lives for the request. */
struct fsuser {
	bool set; /* false: as berthd itself */
	uid_t uid;
	gid_t gid;
	gid_t groups[FSUSER_GROUPS_MAX];
	int ngroups;
	/* berthd's own, kept by fsuser_enter for fsuser_leave */
	uid_t saved_uid;
	gid_t saved_gid;
	gid_t saved_groups[FSUSER_GROUPS_MAX];
	int nsaved;
};

/* Reads the optional "as" (a user's name) of m into u. Returns 0, or -1
 * after replying bad_args (not a string, or no such user). */
int fsuser_arg(
    struct server_conn *c, const struct proto_msg *m, struct fsuser *u);
/* Takes u's identity; fsuser_leave gives berthd's back. Returns 0, or -1
 * with errno set and berthd's identity kept. */
int fsuser_enter(struct fsuser *u);
void fsuser_leave(const struct fsuser *u);
/* Answers m with op, done as the user m's "as" names. */
void fsuser_run(struct server_conn *c, const struct proto_msg *m,
    void (*op)(struct server_conn *, const struct proto_msg *));

#endif
