/* tree: a service's processes by session, group and parentage (see
 * tree.h). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pstat.h"
#include "tree.h"
#include "xmalloc.h"

/* How much of an orphan's environment is searched for the tag. */
#define TREE_ENV_MAX (256 * 1024)

/* One live process, and whether it is of the tree. */
struct tree_proc {
	struct pstat st;
	bool member;
};

void
tree_init(struct tree *t, pid_t leader, const char *run)
{
	struct pstat p;

	memset(t, 0, sizeof *t);
	t->leader = leader;
	if (run != NULL)
		snprintf(t->run, sizeof t->run, "%s", run);
	if (pstat_read(leader, &p) == 0)
		t->leader_start = p.start;
}

/* Every live process but berthd and PID 1 (zombies are their parents'
 * to reap, and signals reach them no more). The caller frees *out. */
static size_t
tree_snapshot(struct tree_proc **out)
{
	struct pstat *all;
	size_t n = pstat_all(&all), i, m = 0;
	struct tree_proc *v = n > 0 ? xreallocarray(NULL, n, sizeof *v) : NULL;

	for (i = 0; i < n; i++)
		if (all[i].pid > 1 && all[i].state != 'Z' &&
		    all[i].state != 'X')
			v[m++] = (struct tree_proc){all[i], false};
	free(all);
	*out = v;
	return m;
}

/* Both tables are kept in pid order, so that a scan of thousands of
 * processes costs n log n, not n squared. */
static int
tree_cmp_proc(const void *a, const void *b)
{
	pid_t x = ((const struct tree_proc *)a)->st.pid;
	pid_t y = ((const struct tree_proc *)b)->st.pid;

	return (x > y) - (x < y);
}

static int
tree_cmp_member(const void *a, const void *b)
{
	pid_t x = ((const struct tree_member *)a)->pid;
	pid_t y = ((const struct tree_member *)b)->pid;

	return (x > y) - (x < y);
}

static const struct tree_member *
tree_known(const struct tree *t, const struct tree_proc *p)
{
	struct tree_member key = {.pid = p->st.pid};
	const struct tree_member *m;

	if (t->n == 0)
		return NULL;
	m = bsearch(&key, t->v, t->n, sizeof *t->v, tree_cmp_member);
	return m != NULL && m->start == p->st.start ? m : NULL;
}

static const struct tree_proc *
tree_find(const struct tree_proc *v, size_t n, pid_t pid)
{
	struct tree_proc key = {.st.pid = pid};

	if (n == 0)
		return NULL;
	return bsearch(&key, v, n, sizeof *v, tree_cmp_proc);
}

/* Whether the leader's pid now stands for someone else: then a session or
 * group of that number is not the service's. The kernel hands out a pid
 * only once no session or group carries it, so while any process of the
 * old session lives, this is false. */
static bool
tree_pid_reused(const struct tree *t, const struct tree_proc *v, size_t n)
{
	const struct tree_proc *l = tree_find(v, n, t->leader);

	return l != NULL && t->leader_start != 0 &&
	    l->st.start != t->leader_start;
}

/* Whether the block buf[0..len) holds the entry tag: NUL before it (buf
 * starts with one) and NUL after it, as /proc ends every entry. */
static bool
tree_block_has(const char *buf, size_t len, const char *tag, size_t tlen)
{
	const char *at = buf, *end = buf + len;

	while ((at = memmem(at, (size_t)(end - at), tag, tlen)) != NULL) {
		if (at > buf && at[-1] == '\0' && at + tlen < end &&
		    at[tlen] == '\0')
			return true;
		at++;
	}
	return false;
}

/* Whether pid's environment holds the entry tag. Read in chunks, each
 * searched with the tail of the one before (so that an entry across two
 * is found); at most TREE_ENV_MAX bytes. */
static bool
tree_env_has(pid_t pid, const char *tag)
{
	char path[64], buf[TREE_RUN_MAX + 4096];
	size_t tlen = strlen(tag), keep = 1, total = 0;
	bool found = false;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	buf[0] = '\0';
	while (!found && total < TREE_ENV_MAX &&
	    (n = read(fd, buf + keep, sizeof buf - keep)) > 0) {
		total += (size_t)n;
		keep += (size_t)n;
		found = tree_block_has(buf, keep, tag, tlen);
		if (keep > tlen + 2) {
			memmove(buf, buf + keep - (tlen + 2), tlen + 2);
			keep = tlen + 2;
		}
	}
	close(fd);
	return found;
}

/* Marks members: the session, the group, those known and the orphans
 * tagged with the run, then their descendants until nothing changes. */
static void
tree_mark(const struct tree *t, struct tree_proc *v, size_t n)
{
	bool ids = !tree_pid_reused(t, v, n), more = true;
	pid_t self = getpid();
	const struct tree_proc *parent;
	size_t i;

	for (i = 0; i < n; i++)
		v[i].member = (ids &&
		                  (v[i].st.sid == t->leader ||
		                      v[i].st.pgrp == t->leader)) ||
		    tree_known(t, &v[i]) != NULL ||
		    (t->run[0] != '\0' && v[i].st.ppid == self &&
		        tree_env_has(v[i].st.pid, t->run));
	while (more) {
		more = false;
		for (i = 0; i < n; i++) {
			if (v[i].member)
				continue;
			parent = tree_find(v, n, v[i].st.ppid);
			if (parent != NULL && parent->member)
				v[i].member = more = true;
		}
	}
}

size_t
tree_scan(struct tree *t)
{
	const struct tree_member *old;
	struct tree_member *next = NULL;
	struct tree_proc *v;
	size_t n = tree_snapshot(&v), i, m = 0;

	if (n > 0)
		qsort(v, n, sizeof *v, tree_cmp_proc);
	tree_mark(t, v, n);
	for (i = 0; i < n; i++)
		if (v[i].member)
			m++;
	if (m > 0)
		next = xreallocarray(NULL, m, sizeof *next);
	for (i = 0, m = 0; i < n; i++) {
		if (!v[i].member)
			continue;
		old = tree_known(t, &v[i]);
		next[m++] = (struct tree_member){
		    v[i].st.pid, v[i].st.start, old != NULL && old->signalled};
	}
	free(v);
	free(t->v);
	t->v = next;
	t->n = m;
	return m;
}

size_t
tree_signal(struct tree *t, int sig, bool skip_group)
{
	size_t i, n = 0;

	for (i = 0; i < t->n; i++) {
		t->v[i].signalled = true;
		if (skip_group && getpgid(t->v[i].pid) == t->leader)
			continue;
		if (kill(t->v[i].pid, sig) == 0)
			n++;
	}
	return n;
}

size_t
tree_signal_new(struct tree *t, int sig)
{
	size_t i, n = 0;

	for (i = 0; i < t->n; i++) {
		if (t->v[i].signalled)
			continue;
		t->v[i].signalled = true;
		if (kill(t->v[i].pid, sig) == 0)
			n++;
	}
	return n;
}

void
tree_free(struct tree *t)
{
	free(t->v);
	t->v = NULL;
	t->n = 0;
}
