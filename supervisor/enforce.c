/* enforce: limits held by cgroup or rlimit (see enforce.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "catalog.h"
#include "disk.h"
#include "enforce.h"
#include "events.h"
#include "log.h"
#include "proto.h"
#include "xmalloc.h"

static struct event_base *enforce_base;

/* A kill by rounds under way (cgroup_kill answered 1), its group looked
 * at again every ENFORCE_KILL_TICK_MS until it is empty: berthd's loop
 * never waits for a group to die. Ownership: the group is its enforce's
 * while that is open (e set); once closed, the round's, destroyed when
 * the group is found empty or the rounds are spent. */
struct enforce_round {
	struct cgroup *cg;
	struct enforce *e; /* NULL once closed */
	char name[ENFORCE_NAME_MAX];
	struct event *tick;
	unsigned rounds;
	LIST_ENTRY(enforce_round) link;
};

#define ENFORCE_KILL_TICK_MS 2
#define ENFORCE_KILL_ROUNDS 500

static LIST_HEAD(, enforce_round) enforce_rounds = LIST_HEAD_INITIALIZER(
    enforce_rounds);

void
enforce_setup(struct event_base *base, bool cgroups, const char *tag)
{
	enforce_base = base;
	cgroup_setup(cgroups, tag);
}

void
enforce_sweep(void)
{
	cgroup_sweep();
}

static void
enforce_round_end(struct enforce_round *r)
{
	if (r->e != NULL)
		r->e->round = NULL;
	else
		cgroup_destroy(r->cg);
	LIST_REMOVE(r, link);
	event_free(r->tick);
	free(r);
}

static void
enforce_round_cb(evutil_socket_t fd, short what, void *arg)
{
	struct enforce_round *r = arg;
	struct timeval tv = {0, ENFORCE_KILL_TICK_MS * 1000};
	int rc = cgroup_kill(r->cg);

	(void)fd;
	(void)what;
	if (rc > 0 && ++r->rounds < ENFORCE_KILL_ROUNDS) {
		evtimer_add(r->tick, &tv);
		return;
	}
	if (rc > 0)
		log_warn("%s: processes remain in its cgroup after %d rounds "
		         "of SIGKILL",
		    r->name, ENFORCE_KILL_ROUNDS);
	enforce_round_end(r);
}

/* The next rounds of e's kill, or a fresh count for those under way. */
static void
enforce_round_start(struct enforce *e)
{
	struct enforce_round *r = e->round;
	struct timeval tv = {0, ENFORCE_KILL_TICK_MS * 1000};

	if (r != NULL) {
		r->rounds = 0;
		return;
	}
	r = xcalloc(1, sizeof *r);
	r->cg = e->cg;
	r->e = e;
	snprintf(r->name, sizeof r->name, "%s", e->name);
	r->tick = evtimer_new(enforce_base, enforce_round_cb, r);
	LIST_INSERT_HEAD(&enforce_rounds, r, link);
	e->round = r;
	evtimer_add(r->tick, &tv);
}

void
enforce_shutdown(void)
{
	/* cgroup_shutdown kills what is left of every group. */
	while (!LIST_EMPTY(&enforce_rounds))
		enforce_round_end(LIST_FIRST(&enforce_rounds));
	cgroup_shutdown();
}

static void enforce_set(struct enforce *e, enum limit_key k, bool enforced,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
enforce_set(
    struct enforce *e, enum limit_key k, bool enforced, const char *fmt, ...)
{
	va_list ap;

	e->held[k].enforced = enforced;
	va_start(ap, fmt);
	vsnprintf(e->held[k].how, sizeof e->held[k].how, fmt, ap);
	va_end(ap);
}

static void
enforce_rlimit(struct enforce *e, int resource, uint64_t value)
{
	e->rl[e->nrl++] = (struct child_rlimit){resource, (rlim_t)value};
}

static const enum cgroup_ctl enforce_ctl[LIMIT_NKEYS] = {
    [LIMIT_CPU] = CGROUP_CPU,
    [LIMIT_MEMORY] = CGROUP_MEMORY,
    [LIMIT_PROCS] = CGROUP_PIDS,
};

/* Writes k's limit into e's cgroup. true once it is read back. */
static bool
enforce_by_cgroup(struct enforce *e, enum limit_key k, char **why)
{
	const char *how, *cwhy = NULL;

	if (e->cg == NULL)
		return false;
	if (cgroup_ctl_version(enforce_ctl[k], &cwhy) == 0) {
		*why = xstrdup(cwhy != NULL ? cwhy : "no such controller");
		return false;
	}
	if (cgroup_limit(e->cg, enforce_ctl[k], e->want.v[k], &how, why) < 0)
		return false;
	enforce_set(e, k, true, "%s", how);
	return true;
}

/* What rlimits do where no controller can: each process's own bound. */
static void
enforce_fallback(struct enforce *e, enum limit_key k, const char *why,
    bool as_root, uid_t uid)
{
	switch (k) {
	case LIMIT_CPU:
		enforce_set(e, k, false,
		    "unavailable: %s (RLIMIT_CPU bounds CPU time, not a share "
		    "of a core)",
		    why);
		break;
	case LIMIT_MEMORY:
		enforce_rlimit(e, RLIMIT_AS, e->want.v[k]);
		enforce_set(e, k, true,
		    "rlimit RLIMIT_AS (each process's address space, not the "
		    "target's memory together; %s)",
		    why);
		break;
	case LIMIT_PROCS:
		if (as_root) {
			enforce_set(e, k, false,
			    "unavailable: %s, and RLIMIT_NPROC does not bind "
			    "root",
			    why);
			break;
		}
		enforce_rlimit(e, RLIMIT_NPROC, e->want.v[k]);
		enforce_set(e, k, true,
		    "rlimit RLIMIT_NPROC (every process of uid %u counts, "
		    "not the target's alone; %s)",
		    (unsigned)uid, why);
		break;
	default: break;
	}
}

/* Journals limits.oom_kill if e's group counted a kill since the last
 * look; whether it did. */
static bool
enforce_oom_check(struct enforce *e)
{
	struct cgroup_usage u;
	msgpack_packer *pk;

	cgroup_usage(e->cg, &u);
	if (u.oom_kills <= e->oom_kills)
		return false;
	e->oom_kills = u.oom_kills;
	log_info("%s: the memory limit (%" PRIu64 " bytes) killed a process",
	    e->name, e->want.v[LIMIT_MEMORY]);
	pk = events_begin(EV_LIMITS_OOM_KILL);
	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "target", e->name);
	proto_pack_kv_u64(pk, "memory_bytes", e->want.v[LIMIT_MEMORY]);
	proto_pack_kv_u64(pk, "oom_kills", u.oom_kills);
	events_commit();
	return true;
}

/* v1 tells of an OOM before its killer has chosen and counted (the
 * eventfd fires as the group runs out, oom_kill grows after): a wake
 * without a kill counted is looked at again a few times. */
#define ENFORCE_OOM_RECHECK_MS 10
#define ENFORCE_OOM_RECHECKS 50

static void
enforce_oom_recheck_cb(evutil_socket_t fd, short what, void *arg)
{
	struct enforce *e = arg;
	struct timeval tv = {0, ENFORCE_OOM_RECHECK_MS * 1000};

	(void)fd;
	(void)what;
	if (!enforce_oom_check(e) && ++e->oom_rechecks < ENFORCE_OOM_RECHECKS)
		evtimer_add(e->oom_recheck, &tv);
}

static void
enforce_oom_cb(evutil_socket_t fd, short what, void *arg)
{
	struct enforce *e = arg;

	(void)fd;
	(void)what;
	cgroup_oom_drain(e->cg);
	e->oom_rechecks = 0;
	if (!evtimer_pending(e->oom_recheck, NULL))
		enforce_oom_recheck_cb(-1, 0, e);
}

static void
enforce_watch_oom(struct enforce *e)
{
	int fd;

	if (!e->held[LIMIT_MEMORY].enforced || e->cg == NULL ||
	    (fd = cgroup_oom_fd(e->cg)) < 0)
		return;
	e->oom_ev = event_new(
	    enforce_base, fd, EV_READ | EV_PERSIST, enforce_oom_cb, e);
	e->oom_recheck = evtimer_new(enforce_base, enforce_oom_recheck_cb, e);
	event_add(e->oom_ev, NULL);
}

static void
enforce_group(struct enforce *e, const char *kind, const char *id, char **gwhy)
{
	char name[ENFORCE_NAME_MAX];

	if (!cgroup_available()) {
		*gwhy = xstrdup("no cgroup can be had");
		return;
	}
	snprintf(name, sizeof name, "%s.%s", kind, id);
	e->cg = cgroup_create(name, gwhy);
	if (e->cg != NULL)
		e->versions = cgroup_versions(e->cg);
	else
		log_warn("%s: no cgroup of its own: %s; its limits fall back "
		         "to rlimits and a kill to its process group",
		    e->name, *gwhy);
}

void
enforce_open(struct enforce *e, const char *kind, const char *id,
    const struct limit_set *want, bool as_root, uid_t uid)
{
	char *gwhy = NULL, *why;
	int k;

	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "%s/%s", kind, id);
	e->open = true;
	e->want = *want;
	enforce_group(e, kind, id, &gwhy);
	for (k = 0; k < LIMIT_NKEYS; k++) {
		if (want->v[k] == 0 || k == LIMIT_DISK)
			continue;
		if (k == LIMIT_FILES) {
			/* No controller counts descriptors. */
			enforce_rlimit(e, RLIMIT_NOFILE, want->v[k]);
			enforce_set(
			    e, k, true, "rlimit RLIMIT_NOFILE (each process)");
			continue;
		}
		why = NULL;
		if (enforce_by_cgroup(e, (enum limit_key)k, &why))
			continue;
		enforce_fallback(e, (enum limit_key)k, why != NULL ? why : gwhy,
		    as_root, uid);
		free(why);
	}
	if (want->v[LIMIT_DISK] != 0)
		enforce_set(e, LIMIT_DISK, false, "unavailable: not set up");
	free(gwhy);
	enforce_watch_oom(e);
}

void
enforce_spec(struct enforce *e, struct child_spec *spec)
{
	int fds[CGROUP_JOIN_MAX];
	size_t i, n = e->cg != NULL ? cgroup_join_fds(e->cg, fds) : 0;

	for (i = 0; i < n && i < CHILD_MAX_JOIN; i++)
		spec->join[i] = fds[i];
	spec->njoin = i;
	memcpy(spec->rl, e->rl, e->nrl * sizeof *e->rl);
	spec->nrl = e->nrl;
}

void
enforce_spawned(struct enforce *e)
{
	if (e->cg != NULL)
		cgroup_join_close(e->cg);
}

void
enforce_disk(struct enforce *e, bool enforced, const char *how)
{
	enforce_set(e, LIMIT_DISK, enforced, "%s", how);
}

bool
enforce_kill(struct enforce *e)
{
	int rc;

	if (e->cg == NULL || (rc = cgroup_kill(e->cg)) < 0)
		return false;
	e->frozen = false;
	if (rc > 0)
		enforce_round_start(e);
	return true;
}

int
enforce_freeze(struct enforce *e, bool frozen, const char **why)
{
	if (e->cg == NULL) {
		if (!cgroup_can_freeze(why))
			return -1;
		*why = "it has no cgroup of its own";
		return -1;
	}
	if (cgroup_freeze(e->cg, frozen, why) < 0)
		return -1;
	e->frozen = frozen;
	return 0;
}

bool
enforce_frozen(const struct enforce *e)
{
	return e->frozen && e->cg != NULL && cgroup_frozen(e->cg);
}

int
enforce_oom_killed(struct enforce *e)
{
	const struct enforce_held *h = &e->held[LIMIT_MEMORY];
	struct cgroup_usage u;

	/* Only a memory group of the target's own counts its kills. */
	if (!h->enforced || strncmp(h->how, "cgroup", 6) != 0)
		return -1;
	if (e->cg == NULL)
		return e->has_last ? e->last.oom_kills > 0 : -1;
	/* Told before the exit it caused, whichever the loop saw first. */
	if (e->oom_ev != NULL)
		enforce_oom_check(e);
	cgroup_usage(e->cg, &u);
	return u.oom_kills > 0;
}

bool
enforce_populated(const struct enforce *e)
{
	return e->cg != NULL && cgroup_populated(e->cg);
}

void
enforce_close(struct enforce *e)
{
	if (!e->open)
		return;
	e->open = false;
	if (e->oom_ev != NULL) {
		/* The kill may be told after the exit it caused. */
		enforce_oom_check(e);
		event_free(e->oom_ev);
		event_free(e->oom_recheck);
		e->oom_ev = e->oom_recheck = NULL;
	}
	if (e->cg == NULL)
		return;
	if (e->frozen)
		enforce_kill(e);
	cgroup_usage(e->cg, &e->last);
	e->has_last = true;
	if (e->round != NULL) {
		/* The rounds go on, and remove the group once it is empty. */
		e->round->e = NULL;
		e->round = NULL;
	} else
		cgroup_destroy(e->cg);
	e->cg = NULL;
}

static void
enforce_pack_limits(msgpack_packer *pk, const struct enforce *e)
{
	int k, n = 0;

	for (k = 0; k < LIMIT_NKEYS; k++)
		n += e->want.v[k] != 0;
	msgpack_pack_map(pk, (uint32_t)n);
	for (k = 0; k < LIMIT_NKEYS; k++) {
		if (e->want.v[k] == 0)
			continue;
		proto_pack_str(pk, limit_name((enum limit_key)k));
		msgpack_pack_map(pk, 3);
		proto_pack_kv_u64(pk, "value", e->want.v[k]);
		proto_pack_kv_bool(pk, "enforced", e->held[k].enforced);
		proto_pack_kv_str(pk, "how", e->held[k].how);
	}
}

static void
enforce_pack_usage(
    msgpack_packer *pk, const struct cgroup_usage *u, const char *disk)
{
	uint64_t used = 0, size = 0;
	const char *how;
	bool d = disk != NULL && disk_status(disk, &how, &used, &size);
	uint32_t n = 0;

	n += u != NULL && u->has_cpu;
	n += u != NULL && u->has_memory;
	n += u != NULL && u->has_peak;
	n += u != NULL && u->has_procs;
	msgpack_pack_map(pk, n + (d ? 2 : 0));
	if (u != NULL && u->has_cpu)
		proto_pack_kv_u64(pk, "cpu_usec", u->cpu_usec);
	if (u != NULL && u->has_memory)
		proto_pack_kv_u64(pk, "memory_current", u->memory_current);
	if (u != NULL && u->has_peak)
		proto_pack_kv_u64(pk, "memory_peak", u->memory_peak);
	if (u != NULL && u->has_procs)
		proto_pack_kv_u64(pk, "processes", u->processes);
	if (d) {
		proto_pack_kv_u64(pk, "disk_used", used);
		proto_pack_kv_u64(pk, "disk_size", size);
	}
}

void
enforce_pack(msgpack_packer *pk, const struct enforce *e, const char *disk)
{
	msgpack_pack_map(pk, ENFORCE_PACK_KEYS);
	enforce_pack_keys(pk, e, disk);
}

void
enforce_pack_keys(msgpack_packer *pk, const struct enforce *e, const char *disk)
{
	struct cgroup_usage now;
	const struct cgroup_usage *u = NULL;

	if (e->cg != NULL) {
		cgroup_usage(e->cg, &now);
		u = &now;
	} else if (e->has_last)
		u = &e->last;
	proto_pack_str(pk, "cgroup");
	if (e->versions != NULL)
		proto_pack_str(pk, e->versions);
	else
		msgpack_pack_nil(pk);
	proto_pack_kv_bool(pk, "frozen", enforce_frozen(e));
	proto_pack_str(pk, "limits");
	enforce_pack_limits(pk, e);
	proto_pack_str(pk, "usage");
	enforce_pack_usage(pk, u, disk);
	proto_pack_kv_u64(
	    pk, "oom_kills", u != NULL ? u->oom_kills : e->oom_kills);
}
