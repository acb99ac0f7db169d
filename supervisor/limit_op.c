/* limit_op: limits.status (see limit_op.h). */
#include <string.h>

#include "config.h"
#include "enforce.h"
#include "limit_op.h"
#include "proc.h"
#include "pty.h"
#include "runtime.h"
#include "task.h"

/* The target named by t, or NULL. disk: the directory its disk limit
 * bounds. */
static const struct enforce *
limit_target(const char *t, const char **disk)
{
	*disk = NULL;
	if (strncmp(t, "proc/", 5) == 0)
		return proc_enforce(t + 5);
	if (strncmp(t, "pty/", 4) == 0)
		return pty_enforce(t + 4);
	if (strncmp(t, "runtime/", 8) == 0)
		return runtime_enforce(t + 8, disk);
	if (strncmp(t, "task/", 5) == 0)
		return task_enforce(t + 5);
	return NULL;
}

void
limit_op_status(struct server_conn *c, const struct proto_msg *m)
{
	char t[CONFIG_MAX_NAME + 16];
	const struct enforce *e;
	const char *disk;
	msgpack_packer *pk;

	if (proto_arg_str(m->args, "target", t, sizeof t) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "limits.status needs \"target\": proc/ID, pty/ID, "
		    "runtime/NAME or task/ID");
		return;
	}
	if ((e = limit_target(t, &disk)) == NULL) {
		server_reply_error(c, m->id, PROTO_E_NOT_FOUND,
		    "no target \"%s\" (proc/ID, pty/ID, runtime/NAME or "
		    "task/ID "
		    "of one started)",
		    t);
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 1 + ENFORCE_PACK_KEYS);
	proto_pack_kv_str(pk, "target", t);
	enforce_pack_keys(pk, e, disk);
	server_reply_end(c);
}
