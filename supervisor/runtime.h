/* runtime: the catalog of agent runtimes ([runtime NAME] sections) and the
 * one instance of each that runtime.start runs.
 *
 * A runtime runs as its user, confined (no capability, no_new_privs), in a
 * clean environment with its env, the request's env and the secrets it
 * names, in its own session and process group, with no inherited fd, in
 * its workspace. Its tui mode is an ordinary berth PTY session (pty.*),
 * its rpc and server modes ordinary berth commands (proc.*); a server is
 * ready once berth-probe finds its port answering. runtime.list detects
 * each program and its version by running it (runtime_version.h).
 *
 * Ownership: runtime owns one instance record (runtime_run.h) per
 * configured runtime for berthd's life, so the exit callbacks of pty and
 * proc never outlive it, and the runtime.list requests that wait; the
 * sessions and commands are pty's and proc's, named by id. */
#ifndef BERTH_RUNTIME_H
#define BERTH_RUNTIME_H

#include <event2/event.h>

#include "config.h"
#include "enforce.h"
#include "proto.h"
#include "server.h"

/* cfg outlives the runtimes. */
void runtime_init(struct event_base *base, const struct config *cfg);
/* berthd is shutting down: every runtime running gets SIGTERM now (SIGKILL
 * after its stop_timeout_ms), while the services stop, and is not
 * restarted; done is told once none runs (at once if none does). */
void runtime_stop_all(void (*done)(void));
/* Stops detections, probes and timers; the processes are pty's and
 * proc's to end (pty_shutdown, proc_shutdown). */
void runtime_shutdown(void);

void runtime_op_list(struct server_conn *c, const struct proto_msg *m);
void runtime_op_start(struct server_conn *c, const struct proto_msg *m);
void runtime_op_stop(struct server_conn *c, const struct proto_msg *m);
void runtime_op_status(struct server_conn *c, const struct proto_msg *m);
void runtime_op_pause(struct server_conn *c, const struct proto_msg *m);
void runtime_op_resume(struct server_conn *c, const struct proto_msg *m);
/* The limits of runtime name, and the workspace its disk limit bounds
 * (NULL: none); NULL if there is no such runtime or it never started. */
const struct enforce *runtime_enforce(const char *name, const char **disk);
/* Whether runtime name is in the catalog (-1 if not) and offers a
 * server mode (1) or not (0). */
int runtime_server_offered(const char *name);
/* While runtime name runs as a server: its port, and the Authorization
 * value its password asks (Basic, with the catalog's server_user; "" if
 * it has no password) in auth[size]. 0, or -1 if it runs no server. */
int runtime_server_auth(
    const char *name, unsigned *port, char *auth, size_t size);

#endif
