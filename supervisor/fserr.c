/* fserr: path arguments and typed file errors (see fserr.h). */
#include <errno.h>
#include <string.h>

#include "args.h"
#include "fserr.h"

static const char *
fserr_check(const char *p, size_t len)
{
	size_t comp = 0, i;

	if (len == 0 || p[0] != '/')
		return "must be an absolute path";
	if (len >= FSERR_PATH_MAX)
		return "is longer than 4095 bytes";
	if (memchr(p, '\0', len) != NULL)
		return "holds a NUL byte";
	for (i = 0; i < len; i++) {
		comp = p[i] == '/' ? 0 : comp + 1;
		if (comp > 255)
			return "has a component longer than 255 bytes";
	}
	return NULL;
}

int
fserr_arg_path(struct server_conn *c, const struct proto_msg *m,
    const char *key, char *buf)
{
	const msgpack_object *o = proto_map_get(m->args, key);
	const char *why;

	if (o == NULL || o->type != MSGPACK_OBJECT_STR) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s needs \"%s\" (an absolute path)", m->op, key);
		return -1;
	}
	if ((why = fserr_check(o->via.str.ptr, o->via.str.size)) != NULL) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS, "%s: \"%s\" %s",
		    m->op, key, why);
		return -1;
	}
	memcpy(buf, o->via.str.ptr, o->via.str.size);
	buf[o->via.str.size] = '\0';
	return 0;
}

int
fserr_arg_follow(struct server_conn *c, const struct proto_msg *m, bool *follow)
{
	*follow = false;
	return args_flag(c, m, "follow_symlinks", follow);
}

const char *
fserr_code(int err)
{
	switch (err) {
	case ENOENT: return PROTO_E_NOT_FOUND;
	case EACCES:
	case EPERM:
	case EROFS: return PROTO_E_PERMISSION_DENIED;
	case EEXIST: return PROTO_E_EXISTS;
	case ENOTDIR: return PROTO_E_NOT_A_DIRECTORY;
	case EISDIR: return PROTO_E_IS_A_DIRECTORY;
	case ENOTEMPTY: return PROTO_E_NOT_EMPTY;
	case ENOSPC:
	case EDQUOT: return PROTO_E_NO_SPACE;
	case ELOOP: return PROTO_E_SYMLINK;
	case ENAMETOOLONG:
	case EINVAL:
	case EXDEV: return PROTO_E_BAD_ARGS;
	default: return PROTO_E_IO;
	}
}

void
fserr_reply(struct server_conn *c, uint64_t id, int err, const char *what,
    const char *path)
{
	if (err == ELOOP)
		server_reply_error_path(c, id, PROTO_E_SYMLINK, path,
		    "%s %s: a symlink is on the path, and symlinks are not "
		    "followed (follow_symlinks: true follows them)",
		    what, path);
	else
		server_reply_error_path(c, id, fserr_code(err), path,
		    "%s %s: %s", what, path, strerror(err));
}
