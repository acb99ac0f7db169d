/* proc: commands run by the proc.* ops. Each process gets its own session
 * and process group, stdin closed unless asked for, and stdout and stderr
 * as two paced streams (stream.h) that outlive it: a client reads them by
 * offset while it runs and after it exited, and a disconnect never kills
 * it. A timeout kills the whole group and says so in proc.exited.
 * Ownership: proc owns every process record, its pipes, streams and
 * waiters; proc_shutdown kills and frees them. */
#ifndef BERTH_PROC_H
#define BERTH_PROC_H

#include <event2/event.h>

#include "launch.h"
#include "proto.h"
#include "server.h"

#define PROC_ID_LEN 8
#define PROC_MAX 256
#define PROC_RING_DEFAULT (16u << 20)
#define PROC_RING_MIN (64u << 10)
#define PROC_RING_MAX (256u << 20)
#define PROC_INPUT_MAX (64u << 10)

/* Told once when a process has exited and its output ended (just after
 * proc.exited). */
typedef void (*proc_exit_fn)(const char *id, pid_t pid, int status, void *arg);

void proc_init(struct event_base *base);
/* Starts a command as proc.start does (events included) for a program
 * berthd runs of its own accord, stdin a pipe if pipe_in: takes l's argv,
 * leaves the rest of l (and its secrets.injected) to the caller. Fills id
 * and pid; -1 with *cause. */
int proc_start_launch(struct launch *l, bool pipe_in, proc_exit_fn cb,
    void *arg, char id[PROC_ID_LEN + 1], pid_t *pid, char **cause);
/* Told every byte of a tapped command's stdout (stream 0) or stderr (1),
 * redacted of secret values, as it enters the stream. */
typedef void (*proc_tap_fn)(
    int stream, const void *data, size_t len, void *arg);
/* As proc_start_launch, for a program whose output another module keeps
 * whole (a task's): stdin is input (written, then closed; NULL: closed
 * at once), every byte goes to tap as well as to the streams, whose rings
 * are the smallest, since the tap is where the bytes are kept. */
int proc_start_tapped(struct launch *l, const void *input, size_t inlen,
    proc_tap_fn tap, proc_exit_fn cb, void *arg, char id[PROC_ID_LEN + 1],
    pid_t *pid, char **cause);
void proc_shutdown(void);
/* The limits of process id (its own, or its runtime's); NULL if none. */
const struct enforce *proc_enforce(const char *id);

void proc_op_start(struct server_conn *c, const struct proto_msg *m);
void proc_op_attach(struct server_conn *c, const struct proto_msg *m);
void proc_op_ack(struct server_conn *c, const struct proto_msg *m);
void proc_op_detach(struct server_conn *c, const struct proto_msg *m);
void proc_op_input(struct server_conn *c, const struct proto_msg *m);
void proc_op_close_stdin(struct server_conn *c, const struct proto_msg *m);
void proc_op_signal(struct server_conn *c, const struct proto_msg *m);
void proc_op_wait(struct server_conn *c, const struct proto_msg *m);
void proc_op_list(struct server_conn *c, const struct proto_msg *m);

#endif
