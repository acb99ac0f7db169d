/* boot: the identity of this boot of the sandbox.
 *
 * A boot is the life of the state directory within one kernel boot: berthd
 * restarted (as a plain process) over the same state directory continues
 * the boot, its boot id and its event seqs; a new kernel boot or a new
 * state directory starts a new boot with a new id and seqs from 1. */
#ifndef BERTH_BOOT_H
#define BERTH_BOOT_H

#include <stdbool.h>

#define BOOT_ID_LEN 32

/* Reads or creates <state_dir>/boot. Sets *fresh when this is a new boot
 * (the journal must start over). Returns 0 or -1 with *cause. */
int boot_init(const char *state_dir, bool *fresh, char **cause);
/* The boot id: BOOT_ID_LEN lowercase hex digits. */
const char *boot_id(void);

#endif
