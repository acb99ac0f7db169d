/* sockowner: a socket's process, by its inode (see sockowner.h). */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sockowner.h"

#include "xmalloc.h"

void
sockowner_user(unsigned uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid((uid_t)uid);

	if (pw != NULL)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "%u", uid);
}

/* The socket inode a /proc/PID/fd link names; 0 if none. */
static unsigned long long
sockowner_link_inode(const char *link)
{
	unsigned long long ino;
	char end;

	if (sscanf(link, "socket:[%llu%c", &ino, &end) != 2 || end != ']')
		return 0;
	return ino;
}

/* pid's comm and user into o. */
static void
sockowner_describe(pid_t pid, struct sockowner *o)
{
	char path[64];
	struct stat st;
	ssize_t got;
	int fd;

	o->found = true;
	o->pid = pid;
	o->command[0] = '\0';
	snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		got = read(fd, o->command, sizeof o->command - 1);
		o->command[got > 0 ? got : 0] = '\0';
		o->command[strcspn(o->command, "\n")] = '\0';
		close(fd);
	}
	snprintf(path, sizeof path, "/proc/%ld", (long)pid);
	if (stat(path, &st) == 0)
		sockowner_user(st.st_uid, o->user, sizeof o->user);
	else
		snprintf(o->user, sizeof o->user, "?");
}

size_t
sockowner_pid_holds(
    pid_t pid, const unsigned long long *inodes, pid_t *holder, size_t n)
{
	char path[64], link[64];
	unsigned long long ino;
	struct dirent *d;
	size_t i, fds = 0, marked = 0;
	ssize_t len;
	DIR *dir;

	snprintf(path, sizeof path, "/proc/%ld/fd", (long)pid);
	if ((dir = opendir(path)) == NULL)
		return 0;
	while (fds++ < SOCKOWNER_FDS_MAX && (d = readdir(dir)) != NULL) {
		len = readlinkat(dirfd(dir), d->d_name, link, sizeof link - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if ((ino = sockowner_link_inode(link)) == 0)
			continue;
		for (i = 0; i < n; i++)
			if (inodes[i] == ino && holder[i] == 0) {
				holder[i] = pid;
				marked++;
			}
	}
	closedir(dir);
	return marked;
}

void
sockowner_find(
    const unsigned long long *inodes, struct sockowner *out, size_t n)
{
	pid_t *holder = xcalloc(n + 1, sizeof *holder);
	size_t i, left = 0, pids = 0;
	struct dirent *d;
	char *end;
	long pid;
	DIR *dir;

	for (i = 0; i < n; i++)
		if (out[i].found)
			holder[i] = -1; /* not sought */
		else
			left++;
	if (left > 0 && (dir = opendir("/proc")) != NULL) {
		while (left > 0 && pids < SOCKOWNER_PIDS_MAX &&
		    (d = readdir(dir)) != NULL) {
			if (!isdigit((unsigned char)d->d_name[0]))
				continue;
			pid = strtol(d->d_name, &end, 10);
			if (*end != '\0' || pid <= 0)
				continue;
			pids++;
			left -=
			    sockowner_pid_holds((pid_t)pid, inodes, holder, n);
		}
		closedir(dir);
	}
	for (i = 0; i < n; i++)
		if (holder[i] > 0)
			sockowner_describe(holder[i], &out[i]);
	free(holder);
}
