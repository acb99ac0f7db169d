/* scratch.h: a scratch directory for a unit test, made under $TMPDIR and
 * removed with all it holds, so that a test leaves nothing behind. */
#ifndef BERTH_TEST_SCRATCH_H
#define BERTH_TEST_SCRATCH_H

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include "xmalloc.h"

/* A new empty directory whose name starts with name; the caller frees the
 * path with scratch_remove. */
static inline char *
scratch_make(const char *name)
{
	const char *tmp = getenv("TMPDIR");
	char *dir;

	if (tmp == NULL || *tmp == '\0')
		tmp = P_tmpdir;
	dir = xasprintf("%s/%s.XXXXXX", tmp, name);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

static inline int
scratch_unlink(
    const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void
scratch_remove(char *dir)
{
	ck_assert_int_eq(
	    nftw(dir, scratch_unlink, 16, FTW_DEPTH | FTW_PHYS), 0);
	free(dir);
}

#endif
