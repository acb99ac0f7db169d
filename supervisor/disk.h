/* disk: a runtime's workspace bounded to a size on disk.
 *
 * The privileged work (image, mkfs.ext4, loop device, mount, copy,
 * resize, or the project quota) is berth-disk's, run as root as a child
 * and read back as one line (diskreport.h): berthd never blocks on it.
 * The image lives in "<state_dir>/disks/", root's: the runtime's user can
 * neither reach it nor grow it. A loop image's size bounds the
 * filesystem, not what the user can store in it: ext4 keeps part for its
 * metadata (a fresh 32 MiB image leaves 24.6 MiB free).
 *
 * Ownership: disk.c keeps one record per workspace directory it bounded,
 * for berthd's life, and each ensure under way (its helper, its pipe)
 * until its done callback has run. */
#ifndef BERTH_DISK_H
#define BERTH_DISK_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* ok: 0 or -1. why (NULL when ok) is borrowed for the call only; it
 * begins "conflict: " when dir is bounded to more than was asked. */
typedef void (*disk_done_fn)(int ok, const char *why, void *arg);

/* state_dir is copied. */
void disk_setup(struct event_base *base, const char *state_dir);
/* Makes dir's filesystem usage bounded to bytes, for a user uid:gid (the
 * runtime's): a project quota where dir's filesystem has one (ext4/xfs
 * mounted with prjquota), else a loop-mounted ext4 image of that size
 * under "<state_dir>/disks/", mounted on dir (nosuid,nodev), dir's current
 * content copied in first (nothing lost; if it does not fit: -1, "the
 * workspace holds N bytes, more than disk_bytes ..."), the image's root
 * owned by uid:gid with dir's mode. done is always called later, from the loop, never
 * from within disk_ensure. Already bounded to the same size: done(0) on
 * the next loop turn. Bounded to another size: grown (online, or offline
 * if nothing uses the workspace) if larger; smaller: -1 "conflict: ...".
 * Ensures of one dir run one after the other, in the order asked. */
void disk_ensure(const char *dir, uint64_t bytes, uid_t uid, gid_t gid,
    disk_done_fn done, void *arg);
/* What bounds dir now: how (static: "loop ext4 image", "project quota")
 * and usage (statfs: used and size in bytes). false if dir is not bounded
 * by disk.c (or its mount has gone). */
bool disk_status(
    const char *dir, const char **how, uint64_t *used, uint64_t *size);
/* Kills the helpers under way (their callbacks are not called) and
 * unmounts the images it mounted. */
void disk_shutdown(void);

#endif
