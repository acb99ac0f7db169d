/* fsatomic: a small file of berthd's own state replaced whole, so that a
 * crash leaves the old contents or the new, never half of either: written
 * to NAME.tmp, synced, renamed over NAME, and the directory synced. */
#ifndef BERTH_FSATOMIC_H
#define BERTH_FSATOMIC_H

#include <stddef.h>

/* Replaces name in the directory dirfd with buf[0..len), mode 0600.
 * 0, or -1 with errno (the temporary file removed). */
int fsatomic_replace(int dirfd, const char *name, const void *buf, size_t len);

#endif
