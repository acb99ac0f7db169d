/* catalog: the one table of ops and the one table of event kinds. */
#include <string.h>

#include "catalog.h"

/* clang-format off */
const struct catalog_op catalog_ops[CATALOG_NOPS] = {
#define CATALOG_OP(id, name, server, access, summary) \
	[CATALOG_OP_##id] = { name, CATALOG_##server, CATALOG_##access, summary },
#include "catalog_ops.def"
#undef CATALOG_OP
};

const struct catalog_event catalog_events[] = {
	{ EV_BERTHD_STARTED, "berthd started (boot_id, pid, version)" },
	{ EV_BERTHD_STOPPING, "berthd is shutting down (signal or reason)" },
	{ EV_SERVICE_STARTING, "a service is being started (name)" },
	{ EV_SERVICE_STARTED, "a service was spawned (name, pid)" },
	{ EV_SERVICE_READY, "a service's readiness probe passed (name)" },
	{ EV_SERVICE_UNREADY, "a ready service's probe fails (name, reason)" },
	{ EV_SERVICE_EXITED,
	    "a service exited (name, pid, code or signal, core)" },
	{ EV_SERVICE_RESTARTING,
	    "a service will be restarted (name, delay_ms, restarts; "
	    "dependency, retry)" },
	{ EV_SERVICE_KILLED,
	    "processes of a service did not stop in time and got SIGKILL "
	    "(name, count)" },
	{ EV_SERVICE_FAILED,
	    "a service failed: not restarted until its retry (name, reason, "
	    "retry_ms)" },
	{ EV_CHECK_CHANGED,
	    "a readiness check changed its verdict (name, ok, reason)" },
	{ EV_AUTH_FAILED, "a WebSocket upgrade was refused (peer, reason)" },
	{ EV_PTY_OPENED, "a terminal session started (id, pid, command)" },
	{ EV_PTY_ATTACHED, "a viewer attached to a session (id, viewers)" },
	{ EV_PTY_DETACHED, "a viewer left a session (id, viewers)" },
	{ EV_PTY_EXITED,
	    "a session's program exited (id, pid, code or signal, core)" },
	{ EV_PTY_CLOSED, "a session was closed or reaped (id, reason)" },
	{ EV_PROC_STARTED, "a command started (id, pid, command, tag)" },
	{ EV_PROC_EXITED,
	    "a command exited and its output was read to the end "
	    "(id, pid, code or signal, timed_out, oom_killed, bytes)" },
	{ EV_FS_CHANGED,
	    "files under a watch changed (watch, changes), coalesced" },
	{ EV_FS_OVERFLOW,
	    "changes under a watch were not all told (watch, reason)" },
	{ EV_SECRETS_CHANGED, "secrets were set or unset (names only)" },
	{ EV_SECRETS_INJECTED,
	    "a process was given secrets (target, names)" },
	{ EV_ARTIFACT_PUBLISHED,
	    "a file was published (id, sha256, size, media_type, name)" },
	{ EV_RECORD_STARTED, "a recording started (id, fps, region)" },
	{ EV_RECORD_PUBLISHED,
	    "a recording ended and was published (id, artifact, duration)" },
	{ EV_RECORD_FAILED, "a recording ended without a file (id, reason)" },
	{ EV_RUNTIME_STARTED,
	    "a runtime was started (name, mode, pid, pty or proc, port, "
	    "workspace)" },
	{ EV_RUNTIME_READY, "a runtime is ready (name, mode, port, ready_ms)" },
	{ EV_RUNTIME_UNREADY,
	    "a ready server's port stopped answering (name, mode, reason)" },
	{ EV_RUNTIME_FAILED,
	    "a server did not answer in time, and is stopped (name, mode, "
	    "reason)" },
	{ EV_RUNTIME_EXITED,
	    "a runtime exited (name, mode, pid, code or signal, core)" },
	{ EV_RUNTIME_RESTARTING,
	    "a runtime will be restarted (name, delay_ms, restarts)" },
	{ EV_RUNTIME_STOPPED, "runtime.stop ended a runtime (name)" },
	{ EV_RUNTIME_PAUSED, "runtime.pause froze a runtime (name)" },
	{ EV_RUNTIME_RESUMED, "a paused runtime was thawed (name)" },
	{ EV_LIMITS_OOM_KILL,
	    "a target's memory limit killed one of its processes (target, "
	    "memory_bytes, oom_kills)" },
	{ EV_WORKSPACE_PROGRESS,
	    "a clone or fetch went on (dir, phase, objects, total, bytes)" },
	{ EV_WORKSPACE_PREPARED,
	    "a workspace was prepared (dir, repo, branch, commit, cloned)" },
	{ EV_WORKSPACE_FAILED, "a workspace was not prepared (dir, reason)" },
	{ EV_TASK_QUEUED,
	    "a task waits for its busy runtime (id, runtime, position)" },
	{ EV_TASK_STARTED, "a task's agent started (id, runtime, pid, proc)" },
	{ EV_TASK_CHECKING,
	    "a task's check started (id, check, argv)" },
	{ EV_TASK_FINISHED,
	    "a task ended (id, runtime, state, reason, failed_check, "
	    "cancelled_by, duration_ms)" },
	{ EV_TASK_DELIVERED,
	    "a task's change was committed (id, branch, commit, pushed, diff)" },
	{ EV_GRANT_CREATED,
	    "a grant was made (id, scope, label, visibility, expires_at)" },
	{ EV_GRANT_REVOKED, "a grant was revoked (id, scope, label)" },
	{ EV_GRANT_EXPIRED, "a grant expired (id, scope, label)" },
	{ EV_PORT_OPENED,
	    "a TCP socket listens (port, address, pid, command, user)" },
	{ EV_PORT_CLOSED, "a TCP socket stopped listening (port, address)" },
	{ EV_EVENTS_GAP, "the journal no longer holds the requested seqs" },
};
const size_t catalog_nevents = sizeof catalog_events / sizeof catalog_events[0];
/* clang-format on */

enum catalog_op_id
catalog_op_find(const char *name)
{
	unsigned i;

	for (i = 0; i < CATALOG_NOPS; i++)
		if (strcmp(catalog_ops[i].name, name) == 0)
			break;
	return (enum catalog_op_id)i;
}
