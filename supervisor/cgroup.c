/* cgroup: targets' groups in berth's subtree of each hierarchy used (see
 * cgroup.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroup_parse.h"
#include "log.h"
#include "xmalloc.h"

/* What a hierarchy is used for: a limit (bit CGROUP_CPU etc.), or one of
 * these. */
#define CG_MEMBER (1u << CGROUP_NCTL)        /* membership, populated, kill */
#define CG_CPUTIME (1u << (CGROUP_NCTL + 1)) /* cpu usage */
#define CG_FREEZE (1u << (CGROUP_NCTL + 2))

/* The cfs period every cpu limit is expressed in: quota = millis * 100. */
#define CG_CPU_PERIOD 100000
/* Bounds of the waits on the kernel at shutdown alone (berthd is
 * leaving): a kill's rounds, a group emptying. */
#define CG_SETTLE_TRIES 100
#define CG_SETTLE_USEC 1000
/* Largest control file read whole (cpu.stat, memory.events, ...). */
#define CG_FILE_MAX 4096
#define CG_WHY_MAX 512

static const char *const cg_ctl_name[CGROUP_NCTL] = {"cpu", "memory", "pids"};

/* One hierarchy used. Ownership: subtree is the module's. */
struct cg_hier {
	int version;    /* 1 or 2 */
	unsigned roles; /* CG_* and 1 << ctl */
	char *subtree;  /* "<mount><berthd's path>/berth" */
};

/* Ownership: dirs and fds are the group's; dir[i] is in cg.h[i], NULL
 * where the group was not made. */
struct cgroup {
	char *dir[CGROUP_JOIN_MAX];
	int join[CGROUP_JOIN_MAX];
	int oom_fd;
	bool frozen;
};

/* The module's state, from cgroup_setup to cgroup_shutdown. left: the
 * directories cgroup_destroy could not remove yet, each owned here. */
static struct {
	bool ready;
	char tag[32];
	struct cg_hier h[CGROUP_JOIN_MAX];
	size_t nh;
	int member, cputime, freezer, ctl[CGROUP_NCTL]; /* index in h, or -1 */
	bool v2_kill;
	char ctl_why[CGROUP_NCTL][CG_WHY_MAX];
	char freeze_why[CG_WHY_MAX];
	char summary[1024];
	char **left;
	size_t nleft;
} cg = {.member = -1, .cputime = -1, .freezer = -1, .ctl = {-1, -1, -1}};

/* --- Control files: each a few syscalls, every result checked. --- */

static char *
cg_path(const char *dir, const char *file)
{
	return xasprintf("%s/%s", dir, file);
}

/* Writes text to dir/file in one write(2), as the kernel takes a control
 * file's value. 0, or an errno. */
static int
cg_write(const char *dir, const char *file, const char *text)
{
	char *path = cg_path(dir, file);
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;

	free(path);
	if (fd < 0)
		return errno;
	if (write(fd, text, len) != (ssize_t)len)
		err = errno != 0 ? errno : EIO;
	close(fd);
	return err;
}

/* Reads at most size-1 bytes of dir/file, NUL-terminated. Length, or -1. */
static ssize_t
cg_read(const char *dir, const char *file, char *buf, size_t size)
{
	char *path = cg_path(dir, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	free(path);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

static bool
cg_exists(const char *dir, const char *file)
{
	char *path = cg_path(dir, file);
	bool yes = access(path, F_OK) == 0;

	free(path);
	return yes;
}

static bool
cg_read_u64(const char *dir, const char *file, uint64_t *v)
{
	char buf[64];

	return cg_read(dir, file, buf, sizeof buf) > 0 &&
	    cgroup_parse_u64(buf, v);
}

/* The value of the line "key N" of a flat keyed file (cpu.stat,
 * memory.events, memory.oom_control). */
static bool
cg_read_key(const char *dir, const char *file, const char *key, uint64_t *v)
{
	char buf[CG_FILE_MAX];

	return cg_read(dir, file, buf, sizeof buf) >= 0 &&
	    cgroup_parse_key(buf, key, v);
}

/* mkdir that takes an existing directory as made. 0, or an errno. */
static int
cg_mkdir(const char *dir)
{
	if (mkdir(dir, 0755) == 0 || errno == EEXIST)
		return 0;
	return errno;
}

/* --- Discovery: where each hierarchy is and where berthd sits in it. --- */

/* berthd's cgroup path in the hierarchy (ctl NULL: v2), from
 * /proc/self/cgroup. Caller frees. */
static char *
cg_own_path(const char *ctl)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char *line = NULL, *path, *found = NULL;
	size_t cap = 0;

	if (f == NULL)
		return NULL;
	while (found == NULL && getline(&line, &cap, f) > 0)
		if (cgroup_parse_own(line, ctl, &path))
			found = xstrdup(path);
	free(line);
	fclose(f);
	return found;
}

/* The directory of berthd's own cgroup in the hierarchy (ctl NULL: v2),
 * the mount's root taken into account; NULL with why. Caller frees. */
static char *
cg_own_dir(const char *ctl, char *why, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *root, *point, *path, *dir = NULL;
	size_t cap = 0;
	bool mounted = false;

	if (f == NULL) {
		snprintf(why, size, "cannot read /proc/self/mountinfo (%s)",
		    strerror(errno));
		return NULL;
	}
	while (!mounted && getline(&line, &cap, f) > 0)
		mounted = cgroup_parse_mount(line, ctl, &root, &point);
	fclose(f);
	if (!mounted) {
		snprintf(why, size, "no %s%s hierarchy is mounted",
		    ctl == NULL ? "cgroup v2" : "cgroup v1 ",
		    ctl == NULL ? "" : ctl);
		free(line);
		return NULL;
	}
	if ((path = cg_own_path(ctl)) == NULL)
		snprintf(why, size, "/proc/self/cgroup names no %s cgroup",
		    ctl == NULL ? "v2" : ctl);
	else if ((dir = cgroup_parse_dir(root, point, path)) == NULL)
		snprintf(why, size,
		    "berthd's %s cgroup %s is outside the mounted %s",
		    ctl == NULL ? "v2" : ctl, path, root);
	free(path);
	free(line);
	return dir;
}

/* --- Setup. --- */

/* Adds a hierarchy used for roles, or the roles to the one at the same
 * subtree (v1 controllers mounted together). Takes subtree. Its index.
 * There are at most CGROUP_JOIN_MAX: v2, v1 cpu, memory, pids, v1 freezer
 * where v2 cannot freeze, v1 cpuacct where there is no v2. */
static int
cg_add(int version, char *subtree, unsigned roles)
{
	size_t i;

	for (i = 0; i < cg.nh; i++)
		if (strcmp(cg.h[i].subtree, subtree) == 0) {
			free(subtree);
			cg.h[i].roles |= roles;
			return (int)i;
		}
	cg.h[cg.nh] = (struct cg_hier){version, roles, subtree};
	return (int)cg.nh++;
}

/* berth's subtree in a v1 hierarchy of ctl, made; its index in cg.h, or
 * -1 with why. */
static int
cg_setup_v1(const char *ctl, unsigned roles, char *why, size_t size)
{
	char *own = cg_own_dir(ctl, why, size), *sub;
	int err;

	if (own == NULL)
		return -1;
	sub = xasprintf("%s/berth", own);
	free(own);
	if ((err = cg_mkdir(sub)) != 0) {
		snprintf(
		    why, size, "cannot create %s (%s)", sub, strerror(err));
		free(sub);
		return -1;
	}
	return cg_add(1, sub, roles);
}

/* The kernel's "no internal processes" rule: a v2 cgroup that enables
 * controllers for its children holds no process itself. berthd leaves its
 * own cgroup for "<own>/init" before enabling any there (the root is
 * exempt). 0, or an errno. */
static int
cg_v2_leave(const char *own, bool at_root)
{
	char *init, pid[32];
	int err;

	if (at_root)
		return 0;
	init = xasprintf("%s/init", own);
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	if ((err = cg_mkdir(init)) == 0)
		err = cg_write(init, "cgroup.procs", pid);
	free(init);
	return err;
}

/* Enables ctl for berth's targets: in own's subtree_control (so that
 * berth has it), then in berth's. 0, or an errno. */
static int
cg_v2_enable(const char *own, const char *sub, const char *ctl)
{
	char plus[32];
	int err;

	snprintf(plus, sizeof plus, "+%s", ctl);
	if ((err = cg_write(own, "cgroup.subtree_control", plus)) != 0)
		return err;
	return cg_write(sub, "cgroup.subtree_control", plus);
}

/* The v2 controllers berthd's cgroup offers, enabled for berth where the
 * kernel lets; the roles the v2 subtree takes. */
static unsigned
cg_v2_controllers(const char *own, const char *sub, bool at_root)
{
	char have[CG_FILE_MAX];
	unsigned roles = 0;
	int ctl, err, left = -1;

	if (cg_read(own, "cgroup.controllers", have, sizeof have) < 0)
		return 0;
	for (ctl = 0; ctl < CGROUP_NCTL; ctl++) {
		if (!cgroup_parse_has(have, ' ', cg_ctl_name[ctl])) {
			snprintf(cg.ctl_why[ctl], CG_WHY_MAX,
			    "berthd's cgroup v2 %s does not offer %s", own,
			    cg_ctl_name[ctl]);
			continue;
		}
		if (left == -1)
			left = cg_v2_leave(own, at_root);
		if (left != 0) {
			snprintf(cg.ctl_why[ctl], CG_WHY_MAX,
			    "cgroup v2 %s: berthd cannot leave %s for %s/init "
			    "(%s)",
			    cg_ctl_name[ctl], own, own, strerror(left));
			continue;
		}
		if ((err = cg_v2_enable(own, sub, cg_ctl_name[ctl])) == 0)
			roles |= 1u << ctl;
		else
			snprintf(cg.ctl_why[ctl], CG_WHY_MAX,
			    "cgroup v2 %s cannot be enabled below %s (%s)",
			    cg_ctl_name[ctl], own, strerror(err));
	}
	return roles;
}

/* berth's subtree in the v2 hierarchy, with what it can do. */
static void
cg_setup_v2(char *why, size_t size)
{
	char *own = cg_own_dir(NULL, why, size), *sub;
	unsigned roles = CG_MEMBER | CG_CPUTIME;
	bool at_root;
	int err, i;

	if (own == NULL)
		return;
	/* Only the hierarchy's true root lacks cgroup.events; the root of a
	 * cgroup namespace has it, and the rule holds there. */
	at_root = !cg_exists(own, "cgroup.events");
	sub = xasprintf("%s/berth", own);
	if ((err = cg_mkdir(sub)) != 0) {
		snprintf(
		    why, size, "cannot create %s (%s)", sub, strerror(err));
		free(sub);
		free(own);
		return;
	}
	roles |= cg_v2_controllers(own, sub, at_root);
	free(own);
	if (cg_exists(sub, "cgroup.freeze"))
		roles |= CG_FREEZE;
	else
		snprintf(cg.freeze_why, CG_WHY_MAX,
		    "this kernel's cgroup v2 has no cgroup.freeze");
	cg.v2_kill = cg_exists(sub, "cgroup.kill");
	i = cg_add(2, sub, roles);
	cg.member = cg.cputime = i;
	if (roles & CG_FREEZE)
		cg.freezer = i;
	for (int c = 0; c < CGROUP_NCTL; c++)
		if (roles & (1u << c))
			cg.ctl[c] = i;
}

/* Without v2: the v1 freezer for membership, kill and freeze, v1 cpuacct
 * for cpu time. */
static void
cg_setup_v1_tracking(void)
{
	char why[CG_WHY_MAX / 2];
	int i;

	if (cg.freezer < 0) {
		if ((i = cg_setup_v1("freezer", CG_FREEZE, why, sizeof why)) >=
		    0)
			cg.freezer = i;
		else if (cg.freeze_why[0] == '\0')
			snprintf(cg.freeze_why, CG_WHY_MAX, "%s", why);
	}
	if (cg.member < 0 && cg.freezer >= 0) {
		cg.member = cg.freezer;
		cg.h[cg.member].roles |= CG_MEMBER;
	}
	if (cg.cputime < 0 &&
	    (i = cg_setup_v1("cpuacct", CG_CPUTIME, why, sizeof why)) >= 0)
		cg.cputime = i;
}

static void
cg_setup_limits_v1(void)
{
	char why[CG_WHY_MAX / 2];
	int c, i;

	for (c = 0; c < CGROUP_NCTL; c++) {
		if (cg.ctl[c] >= 0)
			continue;
		if ((i = cg_setup_v1(
		         cg_ctl_name[c], 1u << c, why, sizeof why)) >= 0)
			cg.ctl[c] = i;
		else if (cg.ctl_why[c][0] == '\0')
			snprintf(cg.ctl_why[c], CG_WHY_MAX,
			    "no cgroup %s controller: %s", cg_ctl_name[c], why);
		else
			snprintf(cg.ctl_why[c] + strlen(cg.ctl_why[c]),
			    CG_WHY_MAX - strlen(cg.ctl_why[c]),
			    "; no cgroup v1 %s: %s", cg_ctl_name[c], why);
	}
}

static void
cg_summary_roles(unsigned roles, char *out, size_t size)
{
	static const struct {
		unsigned role;
		const char *word;
	} names[] = {
	    {CG_MEMBER, "membership"},
	    {CG_FREEZE, "freeze"},
	    {CG_CPUTIME, "cpu time"},
	    {1u << CGROUP_CPU, "cpu"},
	    {1u << CGROUP_MEMORY, "memory"},
	    {1u << CGROUP_PIDS, "pids"},
	};
	size_t i, len = 0;

	out[0] = '\0';
	for (i = 0; i < sizeof names / sizeof names[0] && len < size; i++)
		if (roles & names[i].role)
			len += (size_t)snprintf(out + len, size - len, "%s%s",
			    len == 0 ? "" : ", ", names[i].word);
}

/* "v2 /sys/fs/cgroup/unified/berth (membership, ...); v1 ...", then why
 * v2 (v2_why, "" if used) and each controller missing are not. */
static void
cg_summarize(const char *v2_why)
{
	char roles[128];
	size_t i, len = 0, size = sizeof cg.summary;
	int c;

	if (cg.nh == 0)
		len = (size_t)snprintf(cg.summary, size, "none");
	for (i = 0; i < cg.nh && len < size; i++) {
		cg_summary_roles(cg.h[i].roles, roles, sizeof roles);
		len += (size_t)snprintf(cg.summary + len, size - len,
		    "%sv%d %s (%s%s)", i == 0 ? "" : "; ", cg.h[i].version,
		    cg.h[i].subtree, roles,
		    (int)i == cg.member && cg.v2_kill ? ", cgroup.kill" : "");
	}
	if (v2_why[0] != '\0' && len < size)
		len += (size_t)snprintf(
		    cg.summary + len, size - len, "; no cgroup v2: %s", v2_why);
	for (c = 0; c < CGROUP_NCTL && len < size; c++)
		if (cg.ctl[c] < 0)
			len += (size_t)snprintf(cg.summary + len, size - len,
			    "; %s", cg.ctl_why[c]);
}

void
cgroup_setup(bool enabled, const char *tag)
{
	char why[CG_WHY_MAX] = "";
	int c;

	snprintf(cg.tag, sizeof cg.tag, "%s", tag);
	cg.ready = true;
	if (!enabled) {
		for (c = 0; c < CGROUP_NCTL; c++)
			snprintf(cg.ctl_why[c], CG_WHY_MAX, "cgroups are off");
		snprintf(cg.freeze_why, CG_WHY_MAX, "cgroups are off");
		snprintf(cg.summary, sizeof cg.summary,
		    "none: cgroups are off ([berthd] cgroups = off)");
		log_info("cgroups: %s", cg.summary);
		return;
	}
	cg_setup_v2(why, sizeof why);
	cg_setup_limits_v1();
	cg_setup_v1_tracking();
	/* Any hierarchy lists its members; only a freezer makes a kill
	 * race-free. */
	if (cg.member < 0 && cg.nh > 0) {
		cg.member = 0;
		cg.h[0].roles |= CG_MEMBER;
	}
	cg_summarize(why);
	log_info("cgroups: %s", cg.summary);
}

bool
cgroup_available(void)
{
	return cg.member >= 0;
}

int
cgroup_ctl_version(enum cgroup_ctl ctl, const char **why)
{
	if (cg.ctl[ctl] >= 0)
		return cg.h[cg.ctl[ctl]].version;
	if (why != NULL)
		*why = cg.ready ? cg.ctl_why[ctl] : "cgroups are not set up";
	return 0;
}

bool
cgroup_can_freeze(const char **why)
{
	if (cg.freezer >= 0)
		return true;
	if (why != NULL)
		*why = cg.ready ? cg.freeze_why : "cgroups are not set up";
	return false;
}

const char *
cgroup_summary(void)
{
	return cg.ready ? cg.summary : "cgroups are not set up";
}

/* --- A target's group. --- */

static struct cgroup *
cg_alloc(void)
{
	struct cgroup *g = xcalloc(1, sizeof *g);
	size_t i;

	for (i = 0; i < CGROUP_JOIN_MAX; i++)
		g->join[i] = -1;
	g->oom_fd = -1;
	return g;
}

/* berth's subtree made again, as setup made it, after another berthd's
 * shutdown removed it (it was empty then). 0, or an errno. */
static int
cg_remake_subtree(const struct cg_hier *h)
{
	char plus[32];
	int err = cg_mkdir(h->subtree), ctl;

	for (ctl = 0; err == 0 && h->version == 2 && ctl < CGROUP_NCTL; ctl++)
		if (h->roles & (1u << ctl)) {
			snprintf(plus, sizeof plus, "+%s", cg_ctl_name[ctl]);
			err = cg_write(
			    h->subtree, "cgroup.subtree_control", plus);
		}
	return err;
}

/* Makes dir, which a crashed berthd of the same tag may have left empty.
 * 0, or an errno. */
static int
cg_make_group(const struct cg_hier *h, const char *dir)
{
	int err;

	if (mkdir(dir, 0755) == 0)
		return 0;
	if (errno == EEXIST && rmdir(dir) == 0 && mkdir(dir, 0755) == 0)
		return 0;
	if (errno != ENOENT)
		return errno;
	if ((err = cg_remake_subtree(h)) != 0)
		return err;
	return mkdir(dir, 0755) == 0 ? 0 : errno;
}

static void
cg_remove_dirs(struct cgroup *g)
{
	size_t i;

	for (i = 0; i < CGROUP_JOIN_MAX; i++) {
		if (g->dir[i] != NULL)
			rmdir(g->dir[i]);
		free(g->dir[i]);
		g->dir[i] = NULL;
	}
}

const char *
cgroup_versions(const struct cgroup *g)
{
	bool v[3] = {false, false, false};
	size_t i;

	for (i = 0; i < cg.nh; i++)
		if (g->dir[i] != NULL)
			v[cg.h[i].version] = true;
	return v[2] && v[1] ? "v2+v1" : v[2] ? "v2" : "v1";
}

struct cgroup *
cgroup_create(const char *name, char **why)
{
	struct cgroup *g;
	size_t i;
	int err;

	if (cg.nh == 0) {
		*why = xasprintf("no cgroup: %s", cgroup_summary());
		return NULL;
	}
	if (*name == '\0' || strchr(name, '/') != NULL) {
		*why = xasprintf("bad cgroup name \"%s\"", name);
		return NULL;
	}
	g = cg_alloc();
	for (i = 0; i < cg.nh; i++) {
		g->dir[i] =
		    xasprintf("%s/%s.%s", cg.h[i].subtree, cg.tag, name);
		if ((err = cg_make_group(&cg.h[i], g->dir[i])) != 0) {
			*why = xasprintf(
			    "cannot create %s (%s)", g->dir[i], strerror(err));
			cg_remove_dirs(g);
			free(g);
			return NULL;
		}
	}
	return g;
}

/* --- Limits. --- */

static const char *const cg_how[CGROUP_NCTL][2] = {
    {"cgroup-v1 cpu.cfs_quota_us", "cgroup-v2 cpu.max"},
    {"cgroup-v1 memory.limit_in_bytes", "cgroup-v2 memory.max"},
    {"cgroup-v1 pids.max", "cgroup-v2 pids.max"},
};

/* Writes value to dir/file and reads back want. 0, or -1 with *why. */
static int
cg_set(const char *dir, const char *file, uint64_t value, uint64_t want,
    char **why)
{
	char text[32];
	uint64_t got;
	int err;

	snprintf(text, sizeof text, "%" PRIu64, value);
	if ((err = cg_write(dir, file, text)) != 0) {
		*why = xasprintf("cannot write %s to %s/%s (%s)", text, dir,
		    file, strerror(err));
		return -1;
	}
	if (!cg_read_u64(dir, file, &got) || got != want) {
		*why = xasprintf(
		    "%s/%s does not read back %" PRIu64, dir, file, want);
		return -1;
	}
	return 0;
}

static int
cg_limit_cpu(const char *dir, int version, uint64_t millis, char **why)
{
	char text[64], back[64];
	uint64_t quota = millis * 100;
	int err;

	if (millis > UINT64_MAX / 100) {
		*why =
		    xasprintf("cpu %" PRIu64 " millis is out of range", millis);
		return -1;
	}
	if (version == 1)
		return cg_set(dir, "cpu.cfs_period_us", CG_CPU_PERIOD,
		           CG_CPU_PERIOD, why) == 0 &&
		        cg_set(dir, "cpu.cfs_quota_us", quota, quota, why) == 0
		    ? 0
		    : -1;
	snprintf(text, sizeof text, "%" PRIu64 " %d", quota, CG_CPU_PERIOD);
	if ((err = cg_write(dir, "cpu.max", text)) != 0) {
		*why = xasprintf("cannot write \"%s\" to %s/cpu.max (%s)", text,
		    dir, strerror(err));
		return -1;
	}
	if (cg_read(dir, "cpu.max", back, sizeof back) < 0 ||
	    strncmp(back, text, strlen(text)) != 0 ||
	    back[strlen(text)] != '\n') {
		*why = xasprintf(
		    "%s/cpu.max does not read back \"%s\"", dir, text);
		return -1;
	}
	return 0;
}

/* The kernel keeps memory limits in pages, rounding down. */
static uint64_t
cg_page_floor(uint64_t bytes)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	return bytes / page * page;
}

/* v1: memsw (memory and swap together) must stay at or above the memory
 * limit, so a raise writes memsw first and a cut writes it last. */
static int
cg_limit_memory_v1(const char *dir, uint64_t bytes, char **why)
{
	uint64_t want = cg_page_floor(bytes), old = 0;
	bool memsw = cg_exists(dir, "memory.memsw.limit_in_bytes");

	if (!memsw)
		return cg_set(dir, "memory.limit_in_bytes", bytes, want, why);
	cg_read_u64(dir, "memory.limit_in_bytes", &old);
	if (want > old)
		return cg_set(dir, "memory.memsw.limit_in_bytes", bytes, want,
		           why) == 0 &&
		        cg_set(
		            dir, "memory.limit_in_bytes", bytes, want, why) == 0
		    ? 0
		    : -1;
	return cg_set(dir, "memory.limit_in_bytes", bytes, want, why) == 0 &&
	        cg_set(dir, "memory.memsw.limit_in_bytes", bytes, want, why) ==
	            0
	    ? 0
	    : -1;
}

/* v2: memory.max, and no swap where the kernel accounts it, so that the
 * limit is not escaped by swapping out. */
static int
cg_limit_memory_v2(const char *dir, uint64_t bytes, char **why)
{
	if (cg_set(dir, "memory.max", bytes, cg_page_floor(bytes), why) != 0)
		return -1;
	if (cg_exists(dir, "memory.swap.max"))
		return cg_set(dir, "memory.swap.max", 0, 0, why);
	return 0;
}

int
cgroup_limit(struct cgroup *g, enum cgroup_ctl ctl, uint64_t value,
    const char **how, char **why)
{
	const char *no = "the group is not in that controller's hierarchy";
	int i = cg.ctl[ctl], version, rc;

	if (i < 0 || g->dir[i] == NULL) {
		cgroup_ctl_version(ctl, &no);
		*why = xasprintf("%s", no);
		return -1;
	}
	version = cg.h[i].version;
	if (ctl == CGROUP_CPU)
		rc = cg_limit_cpu(g->dir[i], version, value, why);
	else if (ctl == CGROUP_MEMORY)
		rc = version == 1 ? cg_limit_memory_v1(g->dir[i], value, why)
		                  : cg_limit_memory_v2(g->dir[i], value, why);
	else
		rc = cg_set(g->dir[i], "pids.max", value, value, why);
	if (rc == 0)
		*how = cg_how[ctl][version - 1];
	return rc;
}

/* --- Joining. --- */

size_t
cgroup_join_fds(struct cgroup *g, int out[CGROUP_JOIN_MAX])
{
	size_t i, n = 0;
	char *path;

	for (i = 0; i < CGROUP_JOIN_MAX; i++) {
		if (g->dir[i] == NULL)
			continue;
		if (g->join[i] < 0) {
			path = cg_path(g->dir[i], "cgroup.procs");
			g->join[i] = open(path, O_WRONLY | O_CLOEXEC);
			if (g->join[i] < 0)
				log_warn("cannot open %s (%s)", path,
				    strerror(errno));
			free(path);
		}
		if (g->join[i] >= 0)
			out[n++] = g->join[i];
	}
	return n;
}

void
cgroup_join_close(struct cgroup *g)
{
	size_t i;

	for (i = 0; i < CGROUP_JOIN_MAX; i++) {
		if (g->join[i] >= 0)
			close(g->join[i]);
		g->join[i] = -1;
	}
}

/* --- Freeze, kill, membership. --- */

static int
cg_freeze_write(const char *dir, int version, bool frozen)
{
	return version == 2
	    ? cg_write(dir, "cgroup.freeze", frozen ? "1" : "0")
	    : cg_write(dir, "freezer.state", frozen ? "FROZEN" : "THAWED");
}

int
cgroup_freeze(struct cgroup *g, bool frozen, const char **why)
{
	const char *dir;
	int version;

	if (!cgroup_can_freeze(why))
		return -1;
	if ((dir = g->dir[cg.freezer]) == NULL) {
		*why = "the group has no freezer";
		return -1;
	}
	version = cg.h[cg.freezer].version;
	if (cg_freeze_write(dir, version, frozen) != 0) {
		*why = frozen ? "the kernel refused to freeze the group"
		              : "the kernel refused to thaw the group";
		return -1;
	}
	g->frozen = frozen;
	return 0;
}

/* A freeze has settled once the kernel says every task is frozen. */
static bool
cg_freeze_is(const char *dir, int version, bool frozen)
{
	char buf[CG_FILE_MAX];
	uint64_t v;

	return version == 2
	    ? cg_read_key(dir, "cgroup.events", "frozen", &v) &&
	        v == (uint64_t)frozen
	    : cg_read(dir, "freezer.state", buf, sizeof buf) > 0 &&
	        strncmp(buf, frozen ? "FROZEN" : "THAWED", 6) == 0;
}

bool
cgroup_frozen(const struct cgroup *g)
{
	const char *dir;

	if (!g->frozen || cg.freezer < 0 || (dir = g->dir[cg.freezer]) == NULL)
		return false;
	return cg_freeze_is(dir, cg.h[cg.freezer].version, true);
}

/* Sends SIGKILL to each pid of dir/cgroup.procs. How many were listed,
 * or -1 if it cannot be read. */
static ssize_t
cg_kill_listed(const char *dir)
{
	char *path = cg_path(dir, "cgroup.procs"), *line = NULL;
	FILE *f = fopen(path, "re");
	size_t cap = 0;
	ssize_t n = 0;
	long pid;

	free(path);
	if (f == NULL)
		return -1;
	while (getline(&line, &cap, f) > 0)
		if ((pid = strtol(line, NULL, 10)) > 0) {
			kill((pid_t)pid, SIGKILL);
			n++;
		}
	free(line);
	fclose(f);
	return n;
}

/* One round without cgroup.kill: SIGKILL every process listed; one forked
 * between the listing and its parent's kill is listed by the next round
 * (a killed process forks no more). No freeze: with hundreds of tasks
 * exiting, a write to freezer.state can take the kernel 100 ms, in
 * berthd's loop. A group paused is thawed once its processes have their
 * SIGKILL (v1 frozen tasks die only once thawed). 1 if any was listed,
 * else 0. */
static int
cg_kill_round(struct cgroup *g, const char *dir)
{
	ssize_t n = cg_kill_listed(dir);
	const char *why;

	if (g->frozen)
		cgroup_freeze(g, false, &why);
	return n > 0 ? 1 : 0;
}

int
cgroup_kill(struct cgroup *g)
{
	const char *dir, *why;

	if (cg.member < 0 || (dir = g->dir[cg.member]) == NULL)
		return -1;
	if (cg.h[cg.member].version == 2 && cg.v2_kill &&
	    cg_write(dir, "cgroup.kill", "1") == 0) {
		/* SIGKILL ends frozen tasks too; the group is left thawed for
		 * whatever joins it next. */
		if (g->frozen)
			cgroup_freeze(g, false, &why);
		return 0;
	}
	return cg_kill_round(g, dir);
}

/* v2 says it in cgroup.events, until the last task is through its exit;
 * cgroup.procs drops a process as soon as it starts to exit, so v1 (which
 * has nothing better) may answer false a moment early, and a rmdir then
 * leaves the directory to the sweep. */
bool
cgroup_populated(struct cgroup *g)
{
	const char *dir;
	char buf[32];
	uint64_t v;

	if (cg.member < 0 || (dir = g->dir[cg.member]) == NULL)
		return false;
	if (cg.h[cg.member].version == 2)
		return cg_read_key(dir, "cgroup.events", "populated", &v) &&
		    v != 0;
	return cg_read(dir, "cgroup.procs", buf, sizeof buf) > 0;
}

/* --- Usage and OOM. --- */

/* Lines of dir/cgroup.procs: one a process. */
static bool
cg_count_procs(const char *dir, uint64_t *n)
{
	char *path = cg_path(dir, "cgroup.procs"), buf[CG_FILE_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	free(path);
	if (fd < 0)
		return false;
	*n = 0;
	while ((got = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < got; i++)
			*n += buf[i] == '\n';
	close(fd);
	return got == 0;
}

static void
cg_usage_cpu(struct cgroup *g, struct cgroup_usage *u)
{
	const char *dir;
	uint64_t ns;

	if (cg.cputime < 0 || (dir = g->dir[cg.cputime]) == NULL)
		return;
	if (cg.h[cg.cputime].version == 2)
		u->has_cpu =
		    cg_read_key(dir, "cpu.stat", "usage_usec", &u->cpu_usec);
	else if ((u->has_cpu = cg_read_u64(dir, "cpuacct.usage", &ns)))
		u->cpu_usec = ns / 1000;
}

static void
cg_usage_memory(struct cgroup *g, struct cgroup_usage *u)
{
	int i = cg.ctl[CGROUP_MEMORY];
	const char *dir;

	if (i < 0 || (dir = g->dir[i]) == NULL)
		return;
	if (cg.h[i].version == 2) {
		u->has_memory =
		    cg_read_u64(dir, "memory.current", &u->memory_current);
		u->has_peak = cg_read_u64(dir, "memory.peak", &u->memory_peak);
		cg_read_key(dir, "memory.events", "oom_kill", &u->oom_kills);
		return;
	}
	u->has_memory =
	    cg_read_u64(dir, "memory.usage_in_bytes", &u->memory_current);
	u->has_peak =
	    cg_read_u64(dir, "memory.max_usage_in_bytes", &u->memory_peak);
	cg_read_key(dir, "memory.oom_control", "oom_kill", &u->oom_kills);
}

void
cgroup_usage(struct cgroup *g, struct cgroup_usage *u)
{
	int i = cg.ctl[CGROUP_PIDS];

	memset(u, 0, sizeof *u);
	cg_usage_cpu(g, u);
	cg_usage_memory(g, u);
	if (i >= 0 && g->dir[i] != NULL)
		u->has_procs =
		    cg_read_u64(g->dir[i], "pids.current", &u->processes);
	else if (cg.member >= 0 && g->dir[cg.member] != NULL)
		u->has_procs = cg_count_procs(g->dir[cg.member], &u->processes);
}

/* v1: an eventfd the kernel signals when the group is out of memory
 * (with the OOM killer on, as berth leaves it, that is a kill). */
static int
cg_oom_v1(const char *dir)
{
	char *path = cg_path(dir, "memory.oom_control"), text[64];
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int cfd = open(path, O_RDONLY | O_CLOEXEC), err;

	free(path);
	if (efd >= 0 && cfd >= 0) {
		snprintf(text, sizeof text, "%d %d", efd, cfd);
		if ((err = cg_write(dir, "cgroup.event_control", text)) != 0) {
			log_warn("cannot watch %s/memory.oom_control (%s)", dir,
			    strerror(err));
			close(efd);
			efd = -1;
		}
	} else if (efd >= 0) {
		close(efd);
		efd = -1;
	}
	if (cfd >= 0)
		close(cfd);
	return efd;
}

/* v2: memory.events changes on every memory event (high, max, oom,
 * oom_kill): the reader compares oom_kills. */
static int
cg_oom_v2(const char *dir)
{
	char *path = cg_path(dir, "memory.events");
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (fd >= 0 && inotify_add_watch(fd, path, IN_MODIFY) < 0) {
		log_warn("cannot watch %s (%s)", path, strerror(errno));
		close(fd);
		fd = -1;
	}
	free(path);
	return fd;
}

int
cgroup_oom_fd(struct cgroup *g)
{
	int i = cg.ctl[CGROUP_MEMORY];

	if (g->oom_fd >= 0 || i < 0 || g->dir[i] == NULL)
		return g->oom_fd;
	g->oom_fd =
	    cg.h[i].version == 2 ? cg_oom_v2(g->dir[i]) : cg_oom_v1(g->dir[i]);
	return g->oom_fd;
}

void
cgroup_oom_drain(struct cgroup *g)
{
	char buf[4096];

	if (g->oom_fd < 0)
		return;
	while (read(g->oom_fd, buf, sizeof buf) > 0)
		;
}

/* --- Removal. --- */

/* Removes dir; one still populated goes on the list cgroup_sweep
 * retries (taking dir). */
static void
cg_rmdir_or_leave(char *dir)
{
	if (rmdir(dir) == 0 || errno == ENOENT) {
		free(dir);
		return;
	}
	if (errno != EBUSY) {
		log_warn("cannot remove %s (%s)", dir, strerror(errno));
		free(dir);
		return;
	}
	cg.left = xreallocarray(cg.left, cg.nleft + 1, sizeof *cg.left);
	cg.left[cg.nleft++] = dir;
}

void
cgroup_destroy(struct cgroup *g)
{
	const char *why;
	size_t i;

	if (g == NULL)
		return;
	/* A frozen leftover could never exit, nor its directory go. */
	if (g->frozen)
		cgroup_freeze(g, false, &why);
	cgroup_join_close(g);
	if (g->oom_fd >= 0)
		close(g->oom_fd);
	for (i = 0; i < CGROUP_JOIN_MAX; i++)
		if (g->dir[i] != NULL)
			cg_rmdir_or_leave(g->dir[i]);
	free(g);
}

void
cgroup_sweep(void)
{
	size_t i, n = cg.nleft;
	char **v = cg.left;

	cg.left = NULL;
	cg.nleft = 0;
	for (i = 0; i < n; i++)
		cg_rmdir_or_leave(v[i]);
	free(v);
}

/* A group of this berthd's found in a subtree, by its directory name. */
static struct cgroup *
cg_open(const char *entry)
{
	struct cgroup *g = cg_alloc();
	struct stat st;
	size_t i;

	for (i = 0; i < cg.nh; i++) {
		g->dir[i] = xasprintf("%s/%s", cg.h[i].subtree, entry);
		if (stat(g->dir[i], &st) != 0) {
			free(g->dir[i]);
			g->dir[i] = NULL;
		}
	}
	return g;
}

/* Kills and removes every group named with this berthd's tag in h. */
static void
cg_shutdown_hier(const struct cg_hier *h)
{
	DIR *d = opendir(h->subtree);
	size_t tlen = strlen(cg.tag);
	struct dirent *e;
	struct cgroup *g;
	int i;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, cg.tag, tlen) != 0 ||
		    e->d_name[tlen] != '.')
			continue;
		g = cg_open(e->d_name);
		for (i = 0; i < CG_SETTLE_TRIES && cgroup_kill(g) > 0; i++)
			usleep(CG_SETTLE_USEC);
		for (i = 0; i < CG_SETTLE_TRIES && cgroup_populated(g); i++)
			usleep(CG_SETTLE_USEC);
		cgroup_destroy(g);
	}
	closedir(d);
}

void
cgroup_shutdown(void)
{
	size_t i;

	for (i = 0; i < cg.nh; i++)
		cg_shutdown_hier(&cg.h[i]);
	for (i = 0; i < CG_SETTLE_TRIES && cg.nleft > 0; i++) {
		cgroup_sweep();
		usleep(CG_SETTLE_USEC);
	}
	for (i = 0; i < cg.nh; i++) {
		/* Another berthd's groups may still be there. */
		rmdir(cg.h[i].subtree);
		free(cg.h[i].subtree);
	}
	for (i = 0; i < cg.nleft; i++)
		free(cg.left[i]);
	free(cg.left);
	memset(&cg, 0, sizeof cg);
	cg.member = cg.cputime = cg.freezer = -1;
	for (i = 0; i < CGROUP_NCTL; i++)
		cg.ctl[i] = -1;
}
