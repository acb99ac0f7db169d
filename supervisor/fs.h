/* fs: the fs.* ops on the sandbox's files — stat, list, ranged reads,
 * uploads that appear whole or not at all, mkdir, move, remove, chmod.
 * Every answer is bounded (a read is at most FS_CHUNK_MAX bytes, a listing
 * at most FS_LIST_MAX entries), so one request never holds berthd's loop
 * for long. Owns nothing between requests but the partial uploads on disk. */
#ifndef BERTH_FS_H
#define BERTH_FS_H

#include "proto.h"
#include "server.h"

#define FS_CHUNK_MAX (4u << 20)
#define FS_LIST_MAX 100000
#define FS_DEPTH_MAX 32

/* Each answers exactly once on c. */
void fs_op_stat(struct server_conn *c, const struct proto_msg *m);
void fs_op_list(struct server_conn *c, const struct proto_msg *m);
void fs_op_read(struct server_conn *c, const struct proto_msg *m);
void fs_op_write(struct server_conn *c, const struct proto_msg *m);
void fs_op_mkdir(struct server_conn *c, const struct proto_msg *m);
void fs_op_move(struct server_conn *c, const struct proto_msg *m);
void fs_op_remove(struct server_conn *c, const struct proto_msg *m);
void fs_op_chmod(struct server_conn *c, const struct proto_msg *m);

#endif
