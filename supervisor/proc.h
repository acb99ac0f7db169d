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

#include "proto.h"
#include "server.h"

#define PROC_ID_LEN 8
#define PROC_MAX 256
#define PROC_RING_DEFAULT (16u << 20)
#define PROC_RING_MIN (64u << 10)
#define PROC_RING_MAX (256u << 20)
#define PROC_INPUT_MAX (64u << 10)

void proc_init(struct event_base *base);
void proc_shutdown(void);

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
