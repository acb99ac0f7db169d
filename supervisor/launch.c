/* launch: the program a pty.open or proc.start runs (see launch.h). */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"

#include "listenwatch.h"
#include "xmalloc.h"

#define LAUNCH_ARGV_MAX 256
#define LAUNCH_ENV_MAX 256
#define LAUNCH_PATH "/usr/local/bin:/usr/bin:/bin"
#define LAUNCH_PATH_ROOT                                                       \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* The given argv, a shell command, or the user's login shell. */
static char **
launch_argv(const msgpack_object *args, const struct passwd *pw,
    enum launch_kind kind, const char **why)
{
	const msgpack_object *a = proto_map_get(args, "argv");
	const msgpack_object *sh =
	    kind == LAUNCH_COMMAND ? proto_map_get(args, "shell") : NULL;
	char **argv;
	uint32_t i;

	if (a != NULL && sh != NULL) {
		*why = "give argv or shell, not both";
		return NULL;
	}
	if (sh != NULL) {
		if (sh->type != MSGPACK_OBJECT_STR ||
		    memchr(sh->via.str.ptr, '\0', sh->via.str.size) != NULL) {
			*why = "shell must be a string without NUL bytes";
			return NULL;
		}
		argv = xcalloc(4, sizeof *argv);
		argv[0] = xstrdup("/bin/sh");
		argv[1] = xstrdup("-c");
		argv[2] = xstrndup(sh->via.str.ptr, sh->via.str.size);
		return argv;
	}
	if (a == NULL && kind == LAUNCH_COMMAND) {
		*why = "give the command as argv (a list) or shell (a string)";
		return NULL;
	}
	if (a == NULL) {
		argv = xcalloc(3, sizeof *argv);
		argv[0] =
		    xstrdup(pw != NULL && pw->pw_shell[0] != '\0' ? pw->pw_shell
		                                                  : "/bin/sh");
		argv[1] = xstrdup("-l");
		return argv;
	}
	if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size == 0 ||
	    a->via.array.size > LAUNCH_ARGV_MAX) {
		*why = "argv must be a list of 1-256 strings";
		return NULL;
	}
	argv = xcalloc(a->via.array.size + 1, sizeof *argv);
	for (i = 0; i < a->via.array.size; i++) {
		const msgpack_object *o = &a->via.array.ptr[i];
		if (o->type != MSGPACK_OBJECT_STR ||
		    memchr(o->via.str.ptr, '\0', o->via.str.size) != NULL) {
			*why =
			    "argv must be a list of strings without NUL bytes";
			child_strv_free(argv);
			return NULL;
		}
		argv[i] = xstrndup(o->via.str.ptr, o->via.str.size);
	}
	return argv;
}

/* What a program run for a user starts from, berthd's environment being
 * none of theirs (it may name berthd's files and sockets): PATH, LANG, and
 * then HOME, USER, LOGNAME and SHELL from the passwd entry. */
static size_t
launch_env_user(char **add, const struct passwd *pw)
{
	size_t n = 0;

	add[n++] = xasprintf(
	    "PATH=%s", pw->pw_uid == 0 ? LAUNCH_PATH_ROOT : LAUNCH_PATH);
	add[n++] = xstrdup("LANG=C.UTF-8");
	add[n++] = xasprintf("HOME=%s", pw->pw_dir);
	add[n++] = xasprintf("USER=%s", pw->pw_name);
	add[n++] = xasprintf("LOGNAME=%s", pw->pw_name);
	add[n++] = xasprintf("SHELL=%s", pw->pw_shell);
	return n;
}

char **
launch_env_list(const msgpack_object *e, const char **why)
{
	char **list;
	size_t i;

	if (e != NULL &&
	    (e->type != MSGPACK_OBJECT_MAP ||
	        e->via.map.size > LAUNCH_ENV_MAX)) {
		*why = "env must be a map of at most 256 strings";
		return NULL;
	}
	list = xcalloc((e != NULL ? e->via.map.size : 0) + 1, sizeof *list);
	for (i = 0; e != NULL && i < e->via.map.size; i++) {
		const msgpack_object *k = &e->via.map.ptr[i].key;
		const msgpack_object *v = &e->via.map.ptr[i].val;
		if (k->type != MSGPACK_OBJECT_STR ||
		    v->type != MSGPACK_OBJECT_STR || k->via.str.size == 0 ||
		    memchr(k->via.str.ptr, '=', k->via.str.size) != NULL ||
		    memchr(k->via.str.ptr, '\0', k->via.str.size) != NULL ||
		    memchr(v->via.str.ptr, '\0', v->via.str.size) != NULL) {
			*why = "env must map names (without =) to strings";
			child_strv_free(list);
			return NULL;
		}
		list[i] = xasprintf("%.*s=%.*s", (int)k->via.str.size,
		    k->via.str.ptr, (int)v->via.str.size, v->via.str.ptr);
	}
	return list;
}

/* For a user: the clean start of launch_env_user; else berthd's
 * environment. Then TERM, each list of extra (KEY=VALUE, a later entry
 * winning), then the granted secrets (which no env entry can shadow). */
static char **
launch_env_build(const struct passwd *pw, const char *term,
    char *const *const *extra, size_t nextra, const struct secrets_grant *g)
{
	char *const none[] = {NULL};
	char **add, **env;
	size_t nadd = 0, n = 7 + g->nvars, i, j;

	for (i = 0; i < nextra; i++)
		for (j = 0; extra[i][j] != NULL; j++)
			n++;
	add = xcalloc(n, sizeof *add);
	if (pw != NULL)
		nadd = launch_env_user(add, pw);
	if (term != NULL)
		add[nadd++] = xasprintf("TERM=%s", term);
	for (i = 0; i < nextra; i++)
		for (j = 0; extra[i][j] != NULL; j++)
			add[nadd++] = extra[i][j];
	for (i = 0; i < g->nvars; i++)
		add[nadd++] = g->vars[i];
	env = pw != NULL ? child_environ_from(none, add, nadd)
	                 : child_environ(add, nadd);
	/* Only the base is ours; the extra and the grant's strings stay
	 * their owners'. */
	for (i = 0; i < (pw != NULL ? 6u : 0u) + (term != NULL); i++)
		free(add[i]);
	free(add);
	return env;
}

static char **
launch_env(const msgpack_object *args, const struct passwd *pw,
    const char *term, const struct secrets_grant *g, const char **why)
{
	char **list = launch_env_list(proto_map_get(args, "env"), why);
	char *const *extra[1] = {list};
	char **env;

	if (list == NULL)
		return NULL;
	env = launch_env_build(pw, term, extra, 1, g);
	child_strv_free(list);
	return env;
}

/* The user's groups from the group database, as for a login (a service
 * gets its user's the same way): a command for a user has the access
 * that user's own shell would. More than LAUNCH_GROUPS_MAX keeps the
 * first ones, the primary among them, which gives less, never more. */
static void
launch_groups(struct launch *l, const struct passwd *pw)
{
	int n = LAUNCH_GROUPS_MAX;

	if (getgrouplist(pw->pw_name, pw->pw_gid, l->groups, &n) < 0)
		n = LAUNCH_GROUPS_MAX;
	if (n < 1) {
		l->groups[0] = pw->pw_gid;
		n = 1;
	}
	l->ngroups = n;
}

/* The user's ids and groups, with group (if not NULL) as the primary. */
static int
launch_ids(struct launch *l, const struct passwd *pw, const char *group)
{
	struct group *gr = NULL;

	if (group != NULL && (gr = getgrnam(group)) == NULL)
		return -1;
	l->has_user = true;
	l->uid = pw->pw_uid;
	l->gid = gr != NULL ? gr->gr_gid : pw->pw_gid;
	launch_groups(l, pw);
	if (gr != NULL)
		l->groups[0] = l->gid;
	return 0;
}

int
launch_user(struct launch *l, const struct launch_user_req *r, char **why)
{
	struct passwd *pw;

	memset(l, 0, sizeof *l);
	l->grant = *r->grant;
	memset(r->grant, 0, sizeof *r->grant);
	l->argv = r->argv;
	if ((pw = getpwnam(r->user)) == NULL) {
		*why = xasprintf("unknown user \"%s\"", r->user);
		goto fail;
	}
	if (launch_ids(l, pw, r->group) < 0) {
		*why = xasprintf("unknown group \"%s\"", r->group);
		goto fail;
	}
	if (strlen(r->cwd) >= sizeof l->cwd) {
		*why = xstrdup("the working directory's path is too long");
		goto fail;
	}
	snprintf(l->cwd, sizeof l->cwd, "%s", r->cwd);
	l->env = launch_env_build(pw, r->term, r->extra, r->nextra, &l->grant);
	l->confine = true;
	return 0;
fail:
	launch_free(l);
	return -1;
}

int
launch_parse(struct launch *l, struct server_conn *c, const struct proto_msg *m,
    enum launch_kind kind, const char *term)
{
	char user[64] = "";
	const char *why = NULL, *code = PROTO_E_BAD_ARGS;
	char *gwhy = NULL, lwhy[LIMIT_WHY_MAX];
	struct passwd *pw = NULL;

	memset(l, 0, sizeof *l);
	if (limit_parse(proto_map_get(m->args, "limits"), false, &l->limits,
	        lwhy) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", lwhy);
		return -1;
	}
	if (proto_arg_str(m->args, "user", user, sizeof user) < 0 ||
	    proto_arg_str(m->args, "cwd", l->cwd, sizeof l->cwd) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "user and cwd must be strings (cwd at most 4095 bytes)");
		return -1;
	}
	if (user[0] != '\0' && (pw = getpwnam(user)) == NULL) {
		server_reply_error(
		    c, m->id, PROTO_E_BAD_ARGS, "unknown user \"%s\"", user);
		return -1;
	}
	if (secrets_grant(proto_map_get(m->args, "secrets"), &l->grant, &code,
	        &gwhy) < 0) {
		server_reply_error(c, m->id, code, "%s", gwhy);
		free(gwhy);
		return -1;
	}
	if ((l->argv = launch_argv(m->args, pw, kind, &why)) == NULL ||
	    (l->env = launch_env(m->args, pw, term, &l->grant, &why)) == NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s", why);
		launch_free(l);
		return -1;
	}
	/* A user's home that does not exist (nobody's) is no reason to fail. */
	if (l->cwd[0] == '\0')
		snprintf(l->cwd, sizeof l->cwd, "%s",
		    pw != NULL && access(pw->pw_dir, X_OK) == 0 ? pw->pw_dir
		                                                : "/");
	if (pw != NULL)
		launch_ids(l, pw, NULL);
	return 0;
}

void
launch_spec(const struct launch *l, struct child_spec *spec)
{
	spec->path = l->argv[0];
	spec->argv = l->argv;
	spec->envp = l->env;
	spec->cwd = l->cwd;
	if (l->has_user) {
		spec->set_ids = true;
		spec->uid = l->uid;
		spec->gid = l->gid;
		spec->groups = l->groups;
		spec->ngroups = (size_t)l->ngroups;
	}
	spec->confine = l->confine;
	spec->watch_listen = listenwatch_on();
	spec->cwd_as_user = l->confine && l->has_user;
}

void
launch_free(struct launch *l)
{
	size_t i;

	if (l->env != NULL) {
		for (i = 0; l->env[i] != NULL; i++)
			explicit_bzero(l->env[i], strlen(l->env[i]));
		child_strv_free(l->env);
		l->env = NULL;
	}
	child_strv_free(l->argv);
	l->argv = NULL;
	secrets_grant_free(&l->grant);
}

void
launch_pack_argv(msgpack_packer *pk, char *const *argv)
{
	size_t n = 0;

	while (argv[n] != NULL)
		n++;
	msgpack_pack_array(pk, n);
	for (n = 0; argv[n] != NULL; n++)
		proto_pack_str(pk, argv[n]);
}
