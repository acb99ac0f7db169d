/* tree: a service's processes by session, group and parentage (see
 * tree.h). */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pstat.h"
#include "tree.h"
#include "xmalloc.h"

/* One live process, and whether it is of the tree. */
struct tree_proc {
	struct pstat st;
	bool member;
};

/* Reads pid. -1 if it is gone or a zombie (a zombie is its parent's to
 * reap, and signals reach it no more). */
static int
tree_read(pid_t pid, struct tree_proc *p)
{
	if (pstat_read(pid, &p->st) != 0 || p->st.state == 'Z' ||
	    p->st.state == 'X')
		return -1;
	p->member = false;
	return 0;
}

void
tree_init(struct tree *t, pid_t leader)
{
	struct tree_proc p;

	memset(t, 0, sizeof *t);
	t->leader = leader;
	if (tree_read(leader, &p) == 0)
		t->leader_start = p.st.start;
}

/* Every live process but berthd and PID 1. The caller frees *out. */
static size_t
tree_snapshot(struct tree_proc **out)
{
	struct tree_proc *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d;
	pid_t self = getpid(), pid;
	DIR *dir = opendir("/proc");

	while (dir != NULL && (d = readdir(dir)) != NULL) {
		pid = (pid_t)atol(d->d_name);
		if (pid <= 1 || pid == self)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			v = xreallocarray(v, cap, sizeof *v);
		}
		if (tree_read(pid, &v[n]) == 0)
			n++;
	}
	if (dir != NULL)
		closedir(dir);
	*out = v;
	return n;
}

static const struct tree_member *
tree_known(const struct tree *t, const struct tree_proc *p)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].pid == p->st.pid && t->v[i].start == p->st.start)
			return &t->v[i];
	return NULL;
}

/* Whether the leader's pid now stands for someone else: then a session or
 * group of that number is not the service's. The kernel hands out a pid
 * only once no session or group carries it, so while any process of the
 * old session lives, this is false. */
static bool
tree_pid_reused(const struct tree *t, const struct tree_proc *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].st.pid == t->leader)
			return t->leader_start != 0 &&
			    v[i].st.start != t->leader_start;
	return false;
}

/* Marks members: the session, the group and those known, then their
 * descendants until nothing changes. */
static void
tree_mark(const struct tree *t, struct tree_proc *v, size_t n)
{
	bool ids = !tree_pid_reused(t, v, n), more = true;
	size_t i, j;

	for (i = 0; i < n; i++)
		v[i].member = (ids &&
		                  (v[i].st.sid == t->leader ||
		                      v[i].st.pgrp == t->leader)) ||
		    tree_known(t, &v[i]) != NULL;
	while (more) {
		more = false;
		for (i = 0; i < n; i++) {
			if (v[i].member)
				continue;
			for (j = 0; j < n; j++)
				if (v[j].member && v[j].st.pid == v[i].st.ppid)
					break;
			if (j < n)
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
