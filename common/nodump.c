/* nodump: keeping a process's memory to itself (see nodump.h). */
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

#include "nodump.h"
#include "xmalloc.h"

static struct rlimit nodump_core = {RLIM_INFINITY, RLIM_INFINITY};
static int nodump_saved;

int
nodump_self(char **cause)
{
	struct rlimit none;

	if (!nodump_saved && getrlimit(RLIMIT_CORE, &nodump_core) == 0)
		nodump_saved = 1;
	none.rlim_cur = 0;
	none.rlim_max = nodump_saved ? nodump_core.rlim_max : 0;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ||
	    setrlimit(RLIMIT_CORE, &none) != 0) {
		*cause = xasprintf("cannot keep this process out of core "
		                   "files and ptrace: %s",
		    strerror(errno));
		return -1;
	}
	return 0;
}

const struct rlimit *
nodump_saved_core(void)
{
	static struct rlimit now;

	if (nodump_saved)
		return &nodump_core;
	getrlimit(RLIMIT_CORE, &now);
	return &now;
}
