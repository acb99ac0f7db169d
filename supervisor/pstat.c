/* pstat: a process as /proc/PID/stat tells it (see pstat.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pstat.h"
#include "xmalloc.h"

/* The command name may hold spaces and parentheses, so the fields are read
 * after its last ')'. */
int
pstat_read(pid_t pid, struct pstat *p)
{
	char path[64], buf[1024], *f;
	ssize_t n;
	int fd;
	long ppid, pgrp, sid;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	f = strrchr(buf, ')');
	/* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice num_threads
	 * itrealvalue starttime */
	if (f == NULL ||
	    sscanf(f + 1,
	        " %c %ld %ld %ld %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
	        "%*d %*d %*d %*d %llu",
	        &p->state, &ppid, &pgrp, &sid, &p->start) != 5)
		return -1;
	p->pid = pid;
	p->ppid = (pid_t)ppid;
	p->pgrp = (pid_t)pgrp;
	p->sid = (pid_t)sid;
	return 0;
}

size_t
pstat_all(struct pstat **out)
{
	struct pstat *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d;
	pid_t self = getpid(), pid;
	DIR *dir = opendir("/proc");

	while (dir != NULL && (d = readdir(dir)) != NULL) {
		pid = (pid_t)atol(d->d_name);
		if (pid <= 0 || pid == self)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			v = xreallocarray(v, cap, sizeof *v);
		}
		if (pstat_read(pid, &v[n]) == 0)
			n++;
	}
	if (dir != NULL)
		closedir(dir);
	*out = v;
	return n;
}
