/* fsuser: a file op with a user's rights (see fsuser.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fsuser.h"

int
fsuser_arg(struct server_conn *c, const struct proto_msg *m, struct fsuser *u)
{
	char name[256];
	struct passwd *pw;
	int n;

	memset(u, 0, sizeof *u);
	if (proto_map_get(m->args, "as") == NULL)
		return 0;
	if (proto_arg_str(m->args, "as", name, sizeof name) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s: \"as\" must be a user's name", m->op);
		return -1;
	}
	if ((pw = getpwnam(name)) == NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s: unknown user \"%s\"", m->op, name);
		return -1;
	}
	u->set = true;
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	n = FSUSER_GROUPS_MAX;
	if (getgrouplist(pw->pw_name, pw->pw_gid, u->groups, &n) < 0)
		n = FSUSER_GROUPS_MAX; /* more than we keep: the first ones */
	u->ngroups = n;
	return 0;
}

/* The raw call: glibc's setgroups would change every thread's groups. */
static int
fsuser_setgroups(const gid_t *g, int n)
{
	return (int)syscall(SYS_setgroups, (size_t)n, g);
}

int
fsuser_enter(struct fsuser *u)
{
	if (!u->set)
		return 0;
	u->saved_uid = (uid_t)setfsuid((uid_t)-1);
	u->saved_gid = (gid_t)setfsgid((gid_t)-1);
	if ((u->nsaved = getgroups(FSUSER_GROUPS_MAX, u->saved_groups)) < 0)
		return -1;
	if (fsuser_setgroups(u->groups, u->ngroups) != 0)
		return -1;
	setfsgid(u->gid);
	setfsuid(u->uid);
	/* setfsuid answers the previous id either way: ask again. */
	if ((uid_t)setfsuid((uid_t)-1) != u->uid ||
	    (gid_t)setfsgid((gid_t)-1) != u->gid) {
		fsuser_leave(u);
		errno = EPERM;
		return -1;
	}
	return 0;
}

void
fsuser_leave(const struct fsuser *u)
{
	if (!u->set)
		return;
	setfsuid(u->saved_uid);
	setfsgid(u->saved_gid);
	fsuser_setgroups(u->saved_groups, u->nsaved);
}

void
fsuser_run(struct server_conn *c, const struct proto_msg *m,
    void (*op)(struct server_conn *, const struct proto_msg *))
{
	struct fsuser u;

	if (fsuser_arg(c, m, &u) < 0)
		return;
	if (fsuser_enter(&u) != 0) {
		server_reply_error(c, m->id, PROTO_E_INTERNAL,
		    "%s: cannot take the user's identity: %s", m->op,
		    strerror(errno));
		return;
	}
	op(c, m);
	fsuser_leave(&u);
}
