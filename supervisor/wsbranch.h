/* wsbranch: which branch names berth hands git (workspace.prepare's
 * branch to check out, task.deliver's new one; berthd checks the
 * request, berth-workspace checks its argv again before any git runs).
 *
 * 1 to WSBRANCH_MAX bytes of letters, digits and "-_./+", not starting
 * with '-' (an option), no component (between slashes) empty, starting
 * with '.' or ending with ".lock", no "..", not ending with '.', and not
 * "HEAD": a subset of what `git check-ref-format --branch` takes, with
 * no revision syntax (@{, ^, ~, :) and nothing a shell or a terminal
 * would read differently. Pure: no I/O. */
#ifndef BERTH_WSBRANCH_H
#define BERTH_WSBRANCH_H

#include <stdbool.h>
#include <stddef.h>

#define WSBRANCH_MAX 255

/* Whether s[0..n) is such a name (a NUL in it is not). */
bool wsbranch_ok(const char *s, size_t n);

#endif
