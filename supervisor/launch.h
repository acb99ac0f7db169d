/* launch: what pty.open and proc.start share about the program they run —
 * the argv, the user, the working directory and the environment with the
 * secrets granted to it — read from the request with the same limits and
 * errors for both. Ownership: launch_parse fills a struct launch the
 * caller releases with launch_free (which wipes the environment). */
#ifndef BERTH_LAUNCH_H
#define BERTH_LAUNCH_H

#include <pwd.h>
#include <stdbool.h>
#include <sys/types.h>

#include "child.h"
#include "proto.h"
#include "secrets.h"
#include "server.h"

/* A user's groups kept, the primary first; past it, the first ones. */
#define LAUNCH_GROUPS_MAX 64

struct launch {
	char **argv;
	char **env;
	char cwd[4096]; /* the user's home when not given, else "/" */
	bool has_user;
	uid_t uid;
	gid_t gid;
	gid_t groups[LAUNCH_GROUPS_MAX]; /* the user's, as a login gives */
	int ngroups;
	struct secrets_grant grant;
};

enum launch_kind {
	LAUNCH_TERMINAL, /* argv, or the user's login shell with -l */
	LAUNCH_COMMAND,  /* argv, or "shell": a command for /bin/sh -c */
};

/*
 * Reads the program, user, cwd, env and secrets from m's args; term, if
 * not NULL, is set as TERM. Returns 0, or -1 after replying with the
 * error.
 */
int launch_parse(struct launch *l, struct server_conn *c,
    const struct proto_msg *m, enum launch_kind kind, const char *term);
/* Fills spec's program, environment, directory and identity from l. */
void launch_spec(const struct launch *l, struct child_spec *spec);
void launch_free(struct launch *l);
/* Packs argv as an array of strings (for events and listings). */
void launch_pack_argv(msgpack_packer *pk, char *const *argv);

#endif
