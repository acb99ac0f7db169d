/* ports: the listeners of the sandbox and their events (see ports.h). */
#include "ports.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "catalog.h"
#include "events.h"
#include "listenwatch.h"
#include "log.h"
#include "procnet.h"
#include "sockdiag.h"
#include "sockowner.h"
#include "xmalloc.h"

enum ports_mechanism {
	PORTS_OFF,
	PORTS_SOCKDIAG,
	PORTS_PROC,
};

/* A listener and what was found of its process when it was first seen. */
struct ports_entry {
	struct portsock s;
	struct sockowner o;
	uint64_t since; /* wall-clock ms */
};

static enum ports_mechanism ports_mech = PORTS_OFF;
static struct event *ports_timer, *ports_soon;
static unsigned ports_soon_ms, ports_soon_left;
/* The set (ports_v) and a scan's room (ports_scan_v, ports_next_v). */
static struct ports_entry *ports_v, *ports_next_v;
static struct portsock *ports_scan_v;
static size_t ports_n;

static const char *
ports_mech_name(enum ports_mechanism m)
{
	return m == PORTS_SOCKDIAG ? "sock_diag"
	    : m == PORTS_PROC      ? "proc"
	                           : "off";
}

static bool
ports_same(const struct portsock *a, const struct portsock *b)
{
	return a->family == b->family && a->port == b->port &&
	    a->inode == b->inode &&
	    memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

static void
ports_addr(const struct portsock *s, char *buf, size_t len)
{
	if (inet_ntop(s->family, s->addr, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

static void
ports_pack_owner(msgpack_packer *pk, const struct ports_entry *e)
{
	proto_pack_kv_i64(pk, "pid", e->o.found ? e->o.pid : 0);
	proto_pack_kv_str(pk, "command", e->o.command);
	proto_pack_kv_str(pk, "user", e->o.user);
}

static void
ports_event(const char *kind, const struct ports_entry *e)
{
	bool opened = strcmp(kind, EV_PORT_OPENED) == 0;
	msgpack_packer *pk = events_begin(kind);
	char addr[INET6_ADDRSTRLEN];

	ports_addr(&e->s, addr, sizeof addr);
	msgpack_pack_map(pk, opened ? 5 : 2);
	proto_pack_kv_u64(pk, "port", e->s.port);
	proto_pack_kv_str(pk, "address", addr);
	if (opened)
		ports_pack_owner(pk, e);
	events_commit();
}

/* The kernel's listeners into ports_scan_v: how many, or -1. sock_diag
 * refused at its first dump turns discovery to /proc/net for good; a dump
 * that fails later (too many listeners, a malformed answer) only skips
 * that scan, and is logged once until one succeeds again. */
static int
ports_read(void)
{
	static bool dumped, failing;
	int n = -1;

	if (ports_mech == PORTS_SOCKDIAG) {
		n = sockdiag_dump(ports_scan_v, PORTS_MAX);
		if (n < 0 && !dumped) {
			log_warn("ports: sock_diag refused (%m); reading "
			         "/proc/net every %d ms instead",
			    PORTS_PROC_MS);
			ports_mech = PORTS_PROC;
			event_del(ports_timer);
			event_add(ports_timer,
			    &(struct timeval){0, PORTS_PROC_MS * 1000});
		}
		dumped = dumped || n >= 0;
	}
	if (ports_mech == PORTS_PROC)
		n = procnet_scan(ports_scan_v, PORTS_MAX);
	if (n < 0 && !failing)
		log_warn(
		    "ports: the listeners could not be read (more than "
		    "%d, or a malformed answer); the set is kept as it was",
		    PORTS_MAX);
	failing = n < 0;
	return n;
}

/* The old entry for s, or NULL. */
static const struct ports_entry *
ports_find(const struct portsock *s)
{
	size_t i;

	for (i = 0; i < ports_n; i++)
		if (ports_same(&ports_v[i].s, s))
			return &ports_v[i];
	return NULL;
}

/* Finds the owners of the entries new in ports_next_v[0..n). */
static void
ports_resolve(size_t n, const bool *fresh)
{
	unsigned long long *inodes = xcalloc(n + 1, sizeof *inodes);
	struct sockowner *o = xcalloc(n + 1, sizeof *o);
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (fresh[i])
			inodes[k++] = ports_next_v[i].s.inode;
	sockowner_find(inodes, o, k);
	for (i = 0, k = 0; i < n; i++) {
		if (!fresh[i])
			continue;
		ports_next_v[i].o = o[k++];
		if (!ports_next_v[i].o.found)
			sockowner_user(ports_next_v[i].s.uid,
			    ports_next_v[i].o.user,
			    sizeof ports_next_v[i].o.user);
	}
	free(inodes);
	free(o);
}

/* Returns how many listeners are new. */
static size_t
ports_scan(void)
{
	int n = ports_read();
	bool *fresh;
	const struct ports_entry *old;
	struct ports_entry *swap;
	size_t i, nfresh = 0;
	uint64_t now = proto_now_ms();

	if (n < 0)
		return 0;
	fresh = xcalloc((size_t)n + 1, sizeof *fresh);
	for (i = 0; i < (size_t)n; i++) {
		if ((old = ports_find(&ports_scan_v[i])) != NULL) {
			ports_next_v[i] = *old;
			continue;
		}
		memset(&ports_next_v[i], 0, sizeof ports_next_v[i]);
		ports_next_v[i].s = ports_scan_v[i];
		ports_next_v[i].since = now;
		fresh[i] = true;
		nfresh++;
	}
	if (nfresh > 0)
		ports_resolve((size_t)n, fresh);
	swap = ports_v;
	ports_v = ports_next_v;
	ports_next_v = swap;
	/* What the old set held and the new one does not, closed. */
	for (i = 0; i < ports_n; i++) {
		size_t j;

		for (j = 0; j < (size_t)n &&
		     !ports_same(&ports_next_v[i].s, &ports_v[j].s);
		     j++)
			;
		if (j == (size_t)n)
			ports_event(EV_PORT_CLOSED, &ports_next_v[i]);
	}
	ports_n = (size_t)n;
	for (i = 0; i < ports_n; i++)
		if (fresh[i])
			ports_event(EV_PORT_OPENED, &ports_v[i]);
	free(fresh);
	return nfresh;
}

static void
ports_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	ports_scan();
}

/* After a listen() let through: scans at 1, 3, 7, 15 and 31 ms until one
 * finds a new listener (the call completes in its process a moment
 * after the answer, when that process next runs). */
static void
ports_soon_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (ports_scan() > 0 || ports_soon_left == 0)
		return;
	ports_soon_ms *= 2;
	ports_soon_left--;
	event_add(ports_soon, &(struct timeval){0, ports_soon_ms * 1000});
}

static void
ports_kick(void)
{
	/* A read already due stays due: a burst of listen()s (a program's
	 * loop, a hostile one) renews the retries but never postpones the
	 * read past 1 ms after the first. */
	ports_soon_left = PORTS_SOON_TRIES - 1;
	if (evtimer_pending(ports_soon, NULL))
		return;
	ports_soon_ms = 1;
	event_add(ports_soon, &(struct timeval){0, 1000});
}

void
ports_init(struct event_base *base, const struct config *cfg)
{
	bool watch;
	unsigned ms;

	if (cfg->ports == CONFIG_PORTS_OFF)
		return;
	ports_mech =
	    cfg->ports == CONFIG_PORTS_PROC ? PORTS_PROC : PORTS_SOCKDIAG;
	watch = listenwatch_works();
	ms = ports_mech == PORTS_PROC ? PORTS_PROC_MS
	    : watch                   ? PORTS_SAFETY_MS
	                              : PORTS_SOCKDIAG_MS;
	ports_v = xcalloc(PORTS_MAX, sizeof *ports_v);
	ports_next_v = xcalloc(PORTS_MAX, sizeof *ports_next_v);
	ports_scan_v = xcalloc(PORTS_MAX, sizeof *ports_scan_v);
	ports_timer = event_new(base, -1, EV_PERSIST, ports_tick, NULL);
	ports_soon = evtimer_new(base, ports_soon_tick, NULL);
	event_add(ports_timer, &(struct timeval){0, ms * 1000});
	if (watch)
		listenwatch_init(base, ports_kick);
	ports_scan();
	log_info("ports: discovery by %s every %u ms%s",
	    ports_mech_name(ports_mech), ms,
	    watch ? ", and at each listen() of what berthd launches" : "");
}

void
ports_shutdown(void)
{
	listenwatch_shutdown();
	if (ports_timer != NULL) {
		event_free(ports_timer);
		event_free(ports_soon);
	}
	ports_timer = ports_soon = NULL;
	free(ports_v);
	free(ports_next_v);
	free(ports_scan_v);
	ports_v = ports_next_v = NULL;
	ports_scan_v = NULL;
	ports_n = 0;
	ports_mech = PORTS_OFF;
}

void
ports_op_list(struct server_conn *c, const struct proto_msg *m)
{
	char addr[INET6_ADDRSTRLEN];
	msgpack_packer *pk;
	size_t i;

	if (ports_mech == PORTS_OFF) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "port discovery is off ([berthd] ports = off)");
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "mechanism", ports_mech_name(ports_mech));
	proto_pack_str(pk, "ports");
	msgpack_pack_array(pk, (uint32_t)ports_n);
	for (i = 0; i < ports_n; i++) {
		ports_addr(&ports_v[i].s, addr, sizeof addr);
		msgpack_pack_map(pk, 6);
		proto_pack_kv_u64(pk, "port", ports_v[i].s.port);
		proto_pack_kv_str(pk, "address", addr);
		ports_pack_owner(pk, &ports_v[i]);
		proto_pack_kv_u64(pk, "since", ports_v[i].since);
	}
	server_reply_end(c);
}
