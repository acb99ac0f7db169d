/* catalog: the one table of ops and the one table of event kinds.
 *
 * Every op names the process that serves it and who may call it; every
 * event kind is listed with what its data holds. docs/protocol.md mirrors
 * both tables (a test holds them to each other). Programs name an op by
 * its enum catalog_op_id and match the wire's string once, with
 * catalog_op_find. Handlers live with the serving process, in tables
 * indexed by id (supervisor/ops.c, recorder/serve.c); this table is what
 * all programs agree on. */
#ifndef BERTH_CATALOG_H
#define BERTH_CATALOG_H

#include <stddef.h>

enum catalog_server {
	CATALOG_BERTHD,
	CATALOG_GATEWAY,
	CATALOG_DESKTOP, /* berth-desktop, through berthd (provider.h) */
};

enum catalog_access {
	CATALOG_ANY,   /* any authenticated client, WebSocket or Unix socket */
	CATALOG_LOCAL, /* the Unix socket only: berth's own programs and root */
};

/* Every op, from catalog_ops.def (where the list and its order live). */
enum catalog_op_id {
#define CATALOG_OP(id, name, server, access, summary) CATALOG_OP_##id,
#include "catalog_ops.def"
#undef CATALOG_OP
	CATALOG_NOPS,
};

struct catalog_op {
	const char *name;
	enum catalog_server server;
	enum catalog_access access;
	const char *summary;
};

struct catalog_event {
	const char *kind;
	const char *summary;
};

/* Event kinds, by name; the data of each is in docs/protocol.md. */
#define EV_BERTHD_STARTED "berthd.started"
#define EV_BERTHD_STOPPING "berthd.stopping"
#define EV_SERVICE_STARTING "service.starting"
#define EV_SERVICE_STARTED "service.started"
#define EV_SERVICE_READY "service.ready"
#define EV_SERVICE_UNREADY "service.unready"
#define EV_SERVICE_EXITED "service.exited"
#define EV_SERVICE_RESTARTING "service.restarting"
#define EV_SERVICE_FAILED "service.failed"
#define EV_SERVICE_KILLED "service.killed"
#define EV_CHECK_CHANGED "check.changed"
#define EV_AUTH_FAILED "auth.failed"
#define EV_PTY_OPENED "pty.opened"
#define EV_PTY_ATTACHED "pty.attached"
#define EV_PTY_DETACHED "pty.detached"
#define EV_PTY_EXITED "pty.exited"
#define EV_PTY_CLOSED "pty.closed"
#define EV_PROC_STARTED "proc.started"
#define EV_PROC_EXITED "proc.exited"
#define EV_FS_CHANGED "fs.changed"
#define EV_FS_OVERFLOW "fs.overflow"
#define EV_SECRETS_CHANGED "secrets.changed"
#define EV_SECRETS_INJECTED "secrets.injected"
#define EV_ARTIFACT_PUBLISHED "artifact.published"
#define EV_RECORD_STARTED "record.started"
#define EV_RECORD_PUBLISHED "record.published"
#define EV_RECORD_FAILED "record.failed"
#define EV_RUNTIME_STARTED "runtime.started"
#define EV_RUNTIME_READY "runtime.ready"
#define EV_RUNTIME_UNREADY "runtime.unready"
#define EV_RUNTIME_FAILED "runtime.failed"
#define EV_RUNTIME_EXITED "runtime.exited"
#define EV_RUNTIME_RESTARTING "runtime.restarting"
#define EV_RUNTIME_STOPPED "runtime.stopped"
#define EV_RUNTIME_PAUSED "runtime.paused"
#define EV_RUNTIME_RESUMED "runtime.resumed"
#define EV_LIMITS_OOM_KILL "limits.oom_kill"

#define EV_WORKSPACE_PROGRESS "workspace.progress"
#define EV_WORKSPACE_PREPARED "workspace.prepared"
#define EV_WORKSPACE_FAILED "workspace.failed"
#define EV_TASK_QUEUED "task.queued"
#define EV_TASK_STARTED "task.started"
#define EV_TASK_CHECKING "task.checking"
#define EV_TASK_FINISHED "task.finished"
#define EV_TASK_DELIVERED "task.delivered"
#define EV_GRANT_CREATED "grant.created"
#define EV_GRANT_REVOKED "grant.revoked"
#define EV_GRANT_EXPIRED "grant.expired"
#define EV_PORT_OPENED "port.opened"
#define EV_PORT_CLOSED "port.closed"
/* Not journaled: sent to one subscriber whose from_seq the journal no
 * longer holds. Carries seq 0, which no journaled event has. */
#define EV_EVENTS_GAP "events.gap"

/* Indexed by enum catalog_op_id. */
extern const struct catalog_op catalog_ops[];
extern const struct catalog_event catalog_events[];
extern const size_t catalog_nevents;

/* The op of that name; CATALOG_NOPS if none has it. */
enum catalog_op_id catalog_op_find(const char *name);

#endif
