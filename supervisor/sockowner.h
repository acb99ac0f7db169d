/* sockowner: which process holds a socket, found by its inode among the
 * links of /proc/PID/fd ("socket:[INODE]"), with its command and user.
 * berthd is root, so it sees every process even where /proc is mounted
 * hidepid. The scan is bounded (SOCKOWNER_PIDS_MAX processes, each at
 * most SOCKOWNER_FDS_MAX descriptors looked at) and made once for a batch
 * of inodes; ports.c keeps what it found with each listener, so a
 * listener's owner is looked for once.
 *
 * Ownership: plain values; nothing is kept between calls. */
#ifndef BERTH_SOCKOWNER_H
#define BERTH_SOCKOWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SOCKOWNER_PIDS_MAX 32768
#define SOCKOWNER_FDS_MAX 65536
#define SOCKOWNER_NAME_MAX 64

struct sockowner {
	bool found;
	pid_t pid; /* the first process /proc lists holding it */
	char command[SOCKOWNER_NAME_MAX]; /* its comm */
	char user[SOCKOWNER_NAME_MAX];    /* its owner's name, or the uid */
};

/* Fills out[i] for each inodes[i] held by some process (found set);
 * those not found are left as they were. */
void sockowner_find(
    const unsigned long long *inodes, struct sockowner *out, size_t n);
/* Sets holder[i] to pid for each inodes[i] that pid holds and whose
 * holder[i] is 0 (none found yet); returns how many it set. */
size_t sockowner_pid_holds(
    pid_t pid, const unsigned long long *inodes, pid_t *holder, size_t n);
/* The name of uid, or its number, into buf. */
void sockowner_user(unsigned uid, char *buf, size_t len);

#endif
