/* pty: terminal sessions that outlive their viewers.
 *
 * berthd owns each session's PTY master and reads it whether or not
 * anyone watches, into the session's ring (ring.h). Viewers are attached
 * connections, each with its own offset into the ring: output reaches a
 * viewer only while its connection has room (server.h), so a slow one
 * falls behind — and if the ring overwrites its place, its next chunk
 * starts later, the jump being exactly what it lost — and never holds up
 * the PTY or another viewer. A berth-vt child per session keeps a
 * terminal model, so a viewer can attach to a redrawn screen.
 *
 * Ownership: pty owns every session; each session's stream (stream.h)
 * owns its viewers. */
#ifndef BERTH_PTY_H
#define BERTH_PTY_H

#include <event2/event.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "launch.h"
#include "proto.h"
#include "server.h"

#define PTY_ID_LEN 8
#define PTY_RING_DEFAULT (4u << 20)
#define PTY_RING_MIN (64u << 10)
#define PTY_RING_MAX (64u << 20)
#define PTY_INPUT_MAX (64u << 10)
#define PTY_SIZE_MAX 1000

/* Told once when a session's process has exited and its output drained
 * (just after pty.exited). */
typedef void (*pty_exit_fn)(const char *id, pid_t pid, int status, void *arg);

/* How a session is opened: pty.open's options. */
struct pty_opts {
	unsigned cols, rows;
	unsigned ttl; /* seconds with no viewer before it is closed */
	size_t ring;
	bool redact;
	pty_exit_fn on_exit; /* NULL: none */
	void *on_exit_arg;
};

void pty_init(struct event_base *base);
/* Opens a session as pty.open does (events included) for a program berthd
 * runs of its own accord: takes l's argv, leaves the rest of l (and its
 * secrets.injected) to the caller. Fills id and pid; -1 with *cause. */
int pty_open_launch(struct launch *l, const struct pty_opts *o,
    char id[PTY_ID_LEN + 1], pid_t *pid, char **cause);
/* Closes session id as pty.close does, reason in its pty.closed. Returns
 * 0, or -1 if there is no such session. */
int pty_close(const char *id, const char *reason);
/* Closes every session (SIGHUP, then SIGKILL) and frees them. */
void pty_shutdown(void);
/* The limits of session id (its own, or its runtime's); NULL if none. */
const struct enforce *pty_enforce(const char *id);
/* Whether a session called id is open. */
bool pty_exists(const char *id);

/* The pty.* ops: each answers exactly once on c. */
void pty_op_open(struct server_conn *c, const struct proto_msg *m);
void pty_op_attach(struct server_conn *c, const struct proto_msg *m);
void pty_op_detach(struct server_conn *c, const struct proto_msg *m);
void pty_op_input(struct server_conn *c, const struct proto_msg *m);
void pty_op_resize(struct server_conn *c, const struct proto_msg *m);
void pty_op_signal(struct server_conn *c, const struct proto_msg *m);
void pty_op_close(struct server_conn *c, const struct proto_msg *m);
void pty_op_list(struct server_conn *c, const struct proto_msg *m);

#endif
