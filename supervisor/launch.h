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
#include "enforce.h"
#include "limit.h"
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
	/* No capability, no_new_privs, no core, and the working directory
	 * entered as the user (child.h). */
	bool confine;
	struct secrets_grant grant;
	/* What the request asked (limit.h), for the target's own enforce. */
	struct limit_set limits;
	/* A runtime's: its processes are held as the runtime, not as a
	 * command or a session of their own. Borrowed; NULL: none. */
	struct enforce *enforce;
};

/* A program berthd runs for a user of its own accord (an agent runtime),
 * not read from a request. */
struct launch_user_req {
	char **argv; /* taken by launch_user, even when it fails */
	const char *user;
	const char *group; /* NULL: the user's primary */
	const char *cwd;
	const char *term; /* NULL: no TERM */
	/* Lists of KEY=VALUE added in order to the clean user environment,
	 * a later entry winning; borrowed. */
	char *const *const *extra;
	size_t nextra;
	struct secrets_grant *grant; /* taken (left zeroed) */
};

enum launch_kind {
	LAUNCH_TERMINAL, /* argv, or the user's login shell with -l */
	LAUNCH_COMMAND,  /* argv, or "shell": a command for /bin/sh -c */
};

/*
 * Reads the program, user, cwd, env, secrets and limits from m's args; term, if
 * not NULL, is set as TERM. Returns 0, or -1 after replying with the
 * error.
 */
int launch_parse(struct launch *l, struct server_conn *c,
    const struct proto_msg *m, enum launch_kind kind, const char *term);
/* Fills l for r, confined: no capability can come back. Returns 0, or -1
 * with *why (the caller frees it). */
int launch_user(struct launch *l, const struct launch_user_req *r, char **why);
/* A request's "env" map (NULL: none) as a NULL-terminated list
 * of KEY=VALUE the caller frees with child_strv_free; NULL with *why if
 * it is not a map of names to strings. */
char **launch_env_list(const msgpack_object *e, const char **why);
/* Fills spec's program, environment, directory and identity from l. */
void launch_spec(const struct launch *l, struct child_spec *spec);
void launch_free(struct launch *l);
/* Packs argv as an array of strings (for events and listings). */
void launch_pack_argv(msgpack_packer *pk, char *const *argv);

#endif
