/* scrule: adding seccomp rules, for berth's two filters (allowlist.c,
 * the gateway's, and denylist.c, berth-desktop's): one error message
 * for a rule libseccomp refuses and for a call name it does not know. */
#ifndef BERTH_SCRULE_H
#define BERTH_SCRULE_H

#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

/* One comparison, every field named: SCMP_A0 and friends leave datum_b
 * out, which -Wextra rightly minds. */
struct scmp_arg_cmp scrule_cmp(
    unsigned arg, enum scmp_compare op, scmp_datum_t a, scmp_datum_t b);
/* Adds action for system call nr when the n comparisons hold; what names
 * the rule in *cause. Returns 0, or -1 with *cause (the caller frees it). */
int scrule_add(scmp_filter_ctx sc, uint32_t action, int nr, unsigned n,
    const struct scmp_arg_cmp *args, const char *what, char **cause);
/* Adds action for each of the n system calls named, without arguments.
 * Returns 0, or -1 with *cause. */
int scrule_add_names(scmp_filter_ctx sc, uint32_t action,
    const char *const *names, size_t n, char **cause);
/* Adds action for socket() of each of the n families. */
int scrule_add_families(scmp_filter_ctx sc, uint32_t action,
    const int *families, size_t n, char **cause);

#endif
