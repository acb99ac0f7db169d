/* landlock: Landlock's IPC scopes for a child (see landlock.h). */
#include <errno.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

/* landlock_create_ruleset's flag that asks for the ABI version. */
#define LANDLOCK_VERSION_FLAG (1U << 0)
/* The scope bit for abstract Unix sockets (ABI 6). */
#define LANDLOCK_SCOPE_ABSTRACT (1ULL << 0)

/* struct landlock_ruleset_attr as of ABI 6; the kernel takes its size,
 * so an older kernel refuses the unknown field instead of ignoring it. */
struct landlock_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

int
landlock_abi(void)
{
	static int abi = -1;
	long v;

	if (abi < 0) {
		v = syscall(SYS_landlock_create_ruleset, NULL, 0,
		    LANDLOCK_VERSION_FLAG);
		abi = v > 0 ? (int)v : 0;
	}
	return abi;
}

int
landlock_scope_abstract_unix(void)
{
	struct landlock_attr attr = {.scoped = LANDLOCK_SCOPE_ABSTRACT};
	long fd;
	int rc, err;

	fd = syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (fd < 0)
		return -1;
	rc = (int)syscall(SYS_landlock_restrict_self, (int)fd, 0);
	if (rc != 0 && errno == EPERM &&
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
		rc = (int)syscall(SYS_landlock_restrict_self, (int)fd, 0);
	err = errno;
	close((int)fd);
	errno = err;
	return rc;
}
