/* procfs: other users' processes out of sight.
 *
 * berthd, as PID 1 of its PID namespace, remounts that namespace's /proc
 * with hidepid=invisible: a user sees only its own processes, so no
 * command line, environment size or open file of berth's processes or of
 * another user's work shows to the agent. Members of one group (berth's
 * own unprivileged processes) still see every process. */
#ifndef BERTH_PROCFS_H
#define BERTH_PROCFS_H

#include <sys/types.h>

/* Remounts /proc with hidepid=invisible and, unless gid is (gid_t)-1,
 * gid=GID. Does nothing unless berthd is PID 1 and /proc is its own
 * namespace's; says in the log why whenever it leaves /proc as it is. */
void procfs_hide(gid_t gid);

#endif
