/* disk: a runtime's workspace bounded on disk (see disk.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "child.h"
#include "disk.h"
#include "diskreport.h"
#include "log.h"
#include "xmalloc.h"

/* A workspace disk.c bounded, and how. dev: the filesystem the bound put
 * on dir (a loop image's), to tell that its mount is still there. */
struct disk_rec {
	char *dir;
	uint64_t bytes;
	const char *how; /* diskreport's static name */
	bool loop;
	dev_t dev;
	struct disk_rec *next;
};

/* One ensure, waiting for an earlier one of its dir, or under way (its
 * helper's pid and pipe), or answered and waiting for the next loop turn
 * (later) to say so. */
struct disk_job {
	char *dir;
	uint64_t bytes;
	uid_t uid;
	gid_t gid;
	disk_done_fn done;
	void *arg;
	bool started;
	pid_t pid;
	int fd;
	struct event *later;
	int rc;
	char *why;
	struct disk_job *next;
};

static struct event_base *disk_base;
static char *disk_state;
static struct disk_rec *disk_recs;
static struct disk_job *disk_jobs; /* in the order asked */

void
disk_setup(struct event_base *base, const char *state_dir)
{
	disk_base = base;
	free(disk_state);
	disk_state = xstrdup(state_dir);
}

static struct disk_rec *
disk_rec_find(const char *dir)
{
	struct disk_rec *r;

	for (r = disk_recs; r != NULL; r = r->next)
		if (strcmp(r->dir, dir) == 0)
			return r;
	return NULL;
}

/* Whether r's bound is still on its dir: a loop image's mount can be
 * gone (unmounted by hand); a quota stays with the tree. */
static bool
disk_rec_holds(const struct disk_rec *r)
{
	struct stat st;

	return !r->loop || (stat(r->dir, &st) == 0 && st.st_dev == r->dev);
}

static void
disk_rec_set(const char *dir, uint64_t bytes, const char *how)
{
	struct disk_rec *r = disk_rec_find(dir);
	struct stat st;

	if (r == NULL) {
		r = xcalloc(1, sizeof *r);
		r->dir = xstrdup(dir);
		r->next = disk_recs;
		disk_recs = r;
	}
	r->bytes = bytes;
	r->how = how;
	r->loop = strcmp(how, "project quota") != 0;
	r->dev = stat(dir, &st) == 0 ? st.st_dev : 0;
}

static void
disk_job_free(struct disk_job *j)
{
	if (j->later != NULL)
		event_free(j->later);
	if (j->fd >= 0)
		close(j->fd);
	free(j->dir);
	free(j->why);
	free(j);
}

static void
disk_job_unlink(struct disk_job *j)
{
	struct disk_job **pp;

	for (pp = &disk_jobs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			return;
		}
}

static void disk_start(struct disk_job *j);

/* The first ensure of dir still waiting, started now. */
static void
disk_next(const char *dir)
{
	struct disk_job *j;

	for (j = disk_jobs; j != NULL; j = j->next)
		if (strcmp(j->dir, dir) == 0) {
			if (!j->started)
				disk_start(j);
			return;
		}
}

/* Says j's answer and forgets j; the next ensure of its dir begins. The
 * callback may ask for another ensure: j is out of the list by then. */
static void
disk_finish(struct disk_job *j)
{
	char *dir = xstrdup(j->dir);

	disk_job_unlink(j);
	j->done(j->rc, j->rc == 0 ? NULL : j->why, j->arg);
	disk_job_free(j);
	disk_next(dir);
	free(dir);
}

static void
disk_later_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	disk_finish(arg);
}

/* j's answer, said on the next loop turn (never within disk_ensure). */
static void
disk_answer_later(struct disk_job *j, int rc, const char *why)
{
	struct timeval now = {0, 0};

	j->rc = rc;
	j->why = why != NULL ? xstrdup(why) : NULL;
	j->later = evtimer_new(disk_base, disk_later_cb, j);
	evtimer_add(j->later, &now);
}

/* berth-disk's one line, read once it has ended: it writes nothing else,
 * and a line is far less than a pipe holds. */
static void
disk_read_answer(struct disk_job *j, int status)
{
	char line[DISKREPORT_LINE_MAX + 2], *nl;
	struct diskreport r;
	size_t len = 0;
	ssize_t n;

	while (len < sizeof line &&
	    ((n = read(j->fd, line + len, sizeof line - len)) > 0 ||
	        (n < 0 && errno == EINTR)))
		if (n > 0)
			len += (size_t)n;
	j->rc = -1;
	nl = memchr(line, '\n', len);
	if (nl == NULL || (size_t)(nl + 1 - line) != len ||
	    diskreport_parse(line, (size_t)(nl - line), &r) != 0) {
		if (WIFSIGNALED(status))
			j->why = xasprintf("berth-disk was killed by signal %d",
			    WTERMSIG(status));
		else if (len == 0)
			j->why = xasprintf("berth-disk ended without an "
			                   "answer (code %d)",
			    WEXITSTATUS(status));
		else
			j->why = xasprintf("berth-disk's answer was malformed "
			                   "(%zu bytes)",
			    len);
		log_warn("disk %s: %s", j->dir, j->why);
		return;
	}
	if (!r.ok) {
		j->why = xstrndup(r.why, r.whylen);
		log_info("disk %s: not bounded to %llu bytes: %s", j->dir,
		    (unsigned long long)j->bytes, j->why);
		return;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		j->why =
		    xasprintf("berth-disk said ok but exited with %d", status);
		return;
	}
	j->rc = 0;
	disk_rec_set(j->dir, j->bytes, r.how);
	log_info("disk %s: bounded to %llu bytes by a %s", j->dir,
	    (unsigned long long)j->bytes, r.how);
}

static void
disk_exit_cb(pid_t pid, int status, void *arg)
{
	struct disk_job *j = arg;

	(void)pid;
	j->pid = 0;
	disk_read_answer(j, status);
	disk_finish(j);
}

static char **
disk_argv(const struct disk_job *j)
{
	char **argv = xcalloc(12, sizeof *argv);
	size_t n = 0;

	argv[n++] = child_berth_program("berth-disk");
	argv[n++] = xstrdup("--dir");
	argv[n++] = xstrdup(j->dir);
	argv[n++] = xstrdup("--bytes");
	argv[n++] = xasprintf("%llu", (unsigned long long)j->bytes);
	argv[n++] = xstrdup("--uid");
	argv[n++] = xasprintf("%u", (unsigned)j->uid);
	argv[n++] = xstrdup("--gid");
	argv[n++] = xasprintf("%u", (unsigned)j->gid);
	argv[n++] = xstrdup("--state");
	argv[n++] = xstrdup(disk_state);
	return argv;
}

/* Starts berth-disk as root (it mounts): NULL, or why not. */
static const char *
disk_spawn(struct disk_job *j, char **cause)
{
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	char **argv;
	int out[2];

	if (disk_state == NULL)
		return "no state directory for the images";
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) != 0)
		return "cannot make a pipe";
	argv = disk_argv(j);
	spec.path = argv[0];
	spec.argv = argv;
	spec.stdout_fd = out[1];
	j->pid = child_spawn(&spec, disk_exit_cb, j, cause);
	child_strv_free(argv);
	close(out[1]);
	if (j->pid < 0) {
		j->pid = 0;
		close(out[0]);
		return "cannot start berth-disk";
	}
	j->fd = out[0];
	return NULL;
}

static void
disk_start(struct disk_job *j)
{
	struct disk_rec *r = disk_rec_find(j->dir);
	const char *why;
	char *cause = NULL, *msg;

	j->started = true;
	if (r != NULL && r->bytes == j->bytes && disk_rec_holds(r)) {
		disk_answer_later(j, 0, NULL);
		return;
	}
	if ((why = disk_spawn(j, &cause)) == NULL)
		return;
	msg = xasprintf("%s%s%s", why, cause != NULL ? ": " : "",
	    cause != NULL ? cause : "");
	log_warn("disk %s: %s", j->dir, msg);
	disk_answer_later(j, -1, msg);
	free(msg);
	free(cause);
}

void
disk_ensure(const char *dir, uint64_t bytes, uid_t uid, gid_t gid,
    disk_done_fn done, void *arg)
{
	struct disk_job *j = xcalloc(1, sizeof *j), **pp;

	j->dir = xstrdup(dir);
	j->bytes = bytes;
	j->uid = uid;
	j->gid = gid;
	j->done = done;
	j->arg = arg;
	j->fd = -1;
	for (pp = &disk_jobs; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = j;
	disk_next(dir);
}

bool
disk_status(const char *dir, const char **how, uint64_t *used, uint64_t *size)
{
	const struct disk_rec *r = disk_rec_find(dir);
	struct statfs sf;

	if (r == NULL || !disk_rec_holds(r) || statfs(dir, &sf) != 0)
		return false;
	*how = r->how;
	*size = (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize;
	*used = (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize;
	return true;
}

void
disk_shutdown(void)
{
	struct disk_job *j;
	struct disk_rec *r;

	while ((j = disk_jobs) != NULL) {
		disk_jobs = j->next;
		if (j->pid > 0) {
			child_forget(j->pid);
			kill(-j->pid, SIGKILL);
		}
		disk_job_free(j);
	}
	while ((r = disk_recs) != NULL) {
		disk_recs = r->next;
		/* Lazily: a process still in the workspace keeps it until it
		 * ends, then the loop device clears itself. */
		if (r->loop && disk_rec_holds(r) &&
		    umount2(r->dir, MNT_DETACH | UMOUNT_NOFOLLOW) != 0)
			log_warn("disk %s: cannot unmount: %s", r->dir,
			    strerror(errno));
		free(r->dir);
		free(r);
	}
	free(disk_state);
	disk_state = NULL;
}
