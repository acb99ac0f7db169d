/* procfs: other users' processes out of sight (see procfs.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "log.h"
#include "procfs.h"

/* Whether the proc mounted on /proc is this PID namespace's: its "self"
 * names us by our pid in that namespace. */
static int
procfs_is_ours(void)
{
	char self[32], want[32];
	ssize_t n;

	n = readlink("/proc/self", self, sizeof self - 1);
	if (n < 0)
		return 0;
	self[n] = '\0';
	snprintf(want, sizeof want, "%ld", (long)getpid());
	return strcmp(self, want) == 0;
}

/* The flags /proc is mounted with: a remount must repeat them, or it
 * clears nosuid, nodev and noexec. */
static unsigned long
procfs_flags(void)
{
	static const struct {
		unsigned long st, ms;
	} map[] = {
	    {ST_RDONLY, MS_RDONLY},
	    {ST_NOSUID, MS_NOSUID},
	    {ST_NODEV, MS_NODEV},
	    {ST_NOEXEC, MS_NOEXEC},
	    {ST_NOATIME, MS_NOATIME},
	    {ST_NODIRATIME, MS_NODIRATIME},
	    {ST_RELATIME, MS_RELATIME},
	};
	unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	struct statvfs sv;
	size_t i;

	if (statvfs("/proc", &sv) != 0)
		return flags;
	flags = 0;
	for (i = 0; i < sizeof map / sizeof map[0]; i++)
		if (sv.f_flag & map[i].st)
			flags |= map[i].ms;
	return flags;
}

void
procfs_hide(gid_t gid)
{
	char opts[64];

	if (getpid() != 1) {
		log_info("not PID 1: /proc shows every process to every user");
		return;
	}
	if (!procfs_is_ours()) {
		log_warn("/proc is not this PID namespace's own (mount a proc "
		         "for it): every process shows to every user");
		return;
	}
	if (gid == (gid_t)-1)
		snprintf(opts, sizeof opts, "hidepid=invisible");
	else
		snprintf(
		    opts, sizeof opts, "hidepid=invisible,gid=%ld", (long)gid);
	if (mount("proc", "/proc", "proc", MS_REMOUNT | procfs_flags(), opts) !=
	    0) {
		log_warn("cannot remount /proc with %s (%s): every process "
		         "shows to every user",
		    opts, strerror(errno));
		return;
	}
	log_info("/proc remounted with %s", opts);
}
