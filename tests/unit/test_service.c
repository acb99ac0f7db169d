/* test_service: the service graph's promises (service.c), on a real event
 * loop with real child processes: a service starts only once what it
 * depends on is ready (or, a one-shot, has exited 0); a failed
 * requirement fails its dependants; shutdown stops dependants before
 * their dependencies and berth's own service last; a restart waits a
 * delay that doubles from the floor to the cap and starts over after a
 * stable run; too many exits within the window fail a service for good.
 *
 * What happened is read back as berthd tells it: the journal's events
 * and service_pack_list / service_pack_status. Only order and counts are
 * asserted, never how long anything took. Each case runs in a process of
 * its own (Check's default), as the graph lives in the process. */
#include <check.h>
#include <event2/event.h>
#include <msgpack.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "child.h"
#include "config.h"
#include "events.h"
#include "journal.h"
#include "proto.h"
#include "scratch.h"
#include "service.h"
#include "tap.h"
#include "xmalloc.h"

/* Far longer than any case runs: it must outlast the case, not end it. */
#define LONG_RUN "sleep 20"
#define MAX_EVENTS 512

/* One event from the journal, with the fields these cases look at. */
struct ev {
	char kind[32];
	char name[CONFIG_MAX_NAME + 1];
	uint64_t delay_ms;
	uint64_t restarts;
	uint64_t pid;
	uint64_t signal; /* 0: exited with code */
};

/* The world of one case: its config, loop, state directory and what the
 * journal has told so far. */
static struct config world_cfg;
static struct event_base *world_base;
static struct event *world_sigchld;
static char *world_dir;
static struct journal_cursor *world_cursor;
static struct ev world_ev[MAX_EVENTS];
static size_t world_nev;
static int world_stopped;

static void
world_sigchld_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	child_reap();
}

/* What berthd's main does before it starts the services: a config (with
 * a scratch state directory), the journal, the loop reaping children and
 * the graph. internal, if not NULL, is added as berth's own service. */
static void
world_start(const char *services, const char *internal)
{
	const struct journal_opts jo = {
	    1 << 20, 16 << 20, PROTO_MAX_MSG, false};
	char *text, *cause = NULL;
	size_t i;

	world_dir = scratch_make("test_service");
	text = xasprintf("[berthd]\nstate_dir = %s\n%s", world_dir, services);
	config_init(&world_cfg);
	ck_assert_msg(
	    config_parse_string(&world_cfg, text, "t.conf", &cause) == 0 &&
	        config_finish(&world_cfg, &cause) == 0,
	    "%s", cause);
	free(text);
	ck_assert_msg(
	    events_init(world_dir, &jo, true, &cause) == 0, "%s", cause);
	world_cursor = journal_cursor_open(events_journal(), 1);
	ck_assert_ptr_nonnull(world_base = event_base_new());
	world_sigchld =
	    evsignal_new(world_base, SIGCHLD, world_sigchld_cb, NULL);
	evsignal_add(world_sigchld, NULL);
	service_init(world_base, &world_cfg, NULL);
	for (i = 0; i < world_cfg.nservices; i++)
		service_add(&world_cfg.services[i],
		    internal != NULL &&
		        strcmp(world_cfg.services[i].name, internal) == 0);
}

/* One turn of the loop: waits for the next timer, exit or read. */
static void
world_step(void)
{
	ck_assert_int_ge(event_base_loop(world_base, EVLOOP_ONCE), 0);
}

static void
world_stopped_cb(void)
{
	world_stopped++;
}

static void
world_shutdown(void)
{
	service_shutdown(world_stopped_cb);
	while (world_stopped == 0)
		world_step();
}

static void
world_end(void)
{
	if (world_stopped == 0)
		world_shutdown();
	service_free_all();
	journal_cursor_close(world_cursor);
	event_free(world_sigchld);
	event_base_free(world_base);
	events_shutdown();
	config_free(&world_cfg);
	scratch_remove(world_dir);
}

static void
ev_decode(const uint8_t *p, size_t len, struct ev *e)
{
	msgpack_unpacked u;
	const msgpack_object *data;

	memset(e, 0, sizeof *e);
	msgpack_unpacked_init(&u);
	ck_assert_int_eq(msgpack_unpack_next(&u, (const char *)p, len, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	ck_assert_int_eq(
	    proto_arg_str(&u.data, "kind", e->kind, sizeof e->kind), 1);
	data = proto_map_get(&u.data, "data");
	ck_assert_ptr_nonnull(data);
	proto_arg_str(data, "name", e->name, sizeof e->name);
	proto_arg_u64(data, "delay_ms", &e->delay_ms);
	proto_arg_u64(data, "restarts", &e->restarts);
	proto_arg_u64(data, "pid", &e->pid);
	proto_arg_u64(data, "signal", &e->signal);
	msgpack_unpacked_destroy(&u);
}

/* Reads what the journal holds beyond what was read. */
static void
world_pull(void)
{
	const uint8_t *p;
	size_t len;
	uint64_t seq;
	char *cause = NULL;
	int r;

	while ((r = journal_cursor_next(
	            world_cursor, &p, &len, &seq, &cause)) == 1) {
		ck_assert_uint_lt(world_nev, MAX_EVENTS);
		ev_decode(p, len, &world_ev[world_nev++]);
	}
	ck_assert_msg(r == 0, "%s", cause);
}

/* The index of the nth (from 0) event of kind about name, or -1. */
static int
ev_index(const char *kind, const char *name, size_t nth)
{
	size_t i;

	world_pull();
	for (i = 0; i < world_nev; i++)
		if (strcmp(world_ev[i].kind, kind) == 0 &&
		    strcmp(world_ev[i].name, name) == 0 && nth-- == 0)
			return (int)i;
	return -1;
}

static size_t
ev_count(const char *kind, const char *name)
{
	size_t n = 0;

	while (ev_index(kind, name, n) >= 0)
		n++;
	return n;
}

static const struct ev *
ev_nth(const char *kind, const char *name, size_t nth)
{
	int i = ev_index(kind, name, nth);

	ck_assert_msg(i >= 0, "no %s #%zu of %s", kind, nth, name);
	return &world_ev[i];
}

/* Event a came before event b (each: kind, name, the first of them). */
static void
expect_before(
    const char *akind, const char *a, const char *bkind, const char *b)
{
	int ia = ev_index(akind, a, 0), ib = ev_index(bkind, b, 0);

	ck_assert_msg(ia >= 0 && ib >= 0 && ia < ib,
	    "%s %s (#%d) is not before %s %s (#%d)", akind, a, ia, bkind, b,
	    ib);
}

/* The restart delays told for name so far, as "1 2 4". */
static void
expect_delays(const char *name, const char *want)
{
	char got[256] = "";
	size_t i, n = ev_count(EV_SERVICE_RESTARTING, name), len = 0;
	const struct ev *e;

	for (i = 0; i < n; i++) {
		e = ev_nth(EV_SERVICE_RESTARTING, name, i);
		/* Each restart is counted, in order. */
		ck_assert_uint_eq(e->restarts, i + 1);
		len += (size_t)snprintf(got + len, sizeof got - len, "%s%llu",
		    i > 0 ? " " : "", (unsigned long long)e->delay_ms);
	}
	/* The first ones; the loop may have run on past them. */
	ck_assert_msg(strncmp(got, want, strlen(want)) == 0 &&
	        (got[strlen(want)] == '\0' || got[strlen(want)] == ' '),
	    "%s: delays \"%s\", want \"%s...\"", name, got, want);
}

/* Something service.c packs, unpacked again. */
struct packing {
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked u;
};

static msgpack_packer *
packing_begin(struct packing *pg)
{
	msgpack_sbuffer_init(&pg->sb);
	msgpack_packer_init(&pg->pk, &pg->sb, msgpack_sbuffer_write);
	msgpack_unpacked_init(&pg->u);
	return &pg->pk;
}

/* The object packed; valid until packing_end. */
static const msgpack_object *
packing_object(struct packing *pg)
{
	ck_assert_int_eq(
	    msgpack_unpack_next(&pg->u, pg->sb.data, pg->sb.size, NULL),
	    MSGPACK_UNPACK_SUCCESS);
	return &pg->u.data;
}

static void
packing_end(struct packing *pg)
{
	msgpack_unpacked_destroy(&pg->u);
	msgpack_sbuffer_destroy(&pg->sb);
}

/* What service_pack_status says of a service. */
struct status {
	char state[16];
	char reason[256];
	uint64_t restarts;
	bool exited;
	uint64_t code, signal;
};

static struct status
status_of(const char *name)
{
	const struct service *s = service_find(name);
	const msgpack_object *o, *last;
	struct status st = {0};
	struct packing pg;

	ck_assert_ptr_nonnull(s);
	service_pack_status(packing_begin(&pg), s);
	o = packing_object(&pg);
	ck_assert_int_eq(
	    proto_arg_str(o, "state", st.state, sizeof st.state), 1);
	ck_assert_int_eq(
	    proto_arg_str(o, "reason", st.reason, sizeof st.reason), 1);
	ck_assert_int_eq(proto_arg_u64(o, "restarts", &st.restarts), 1);
	last = proto_map_get(o, "last_exit");
	ck_assert_ptr_nonnull(last);
	st.exited = last->type == MSGPACK_OBJECT_MAP;
	proto_arg_u64(last, "code", &st.code);
	proto_arg_u64(last, "signal", &st.signal);
	packing_end(&pg);
	return st;
}

static void
expect_status(const char *name, const char *state, const char *reason)
{
	struct status st = status_of(name);

	ck_assert_msg(strcmp(st.state, state) == 0, "%s is %s (%s), not %s",
	    name, st.state, st.reason, state);
	if (reason != NULL)
		ck_assert_msg(strstr(st.reason, reason) != NULL,
		    "%s: reason \"%s\" does not say \"%s\"", name, st.reason,
		    reason);
}

static bool
is_state(const char *name, const char *state)
{
	return strcmp(status_of(name).state, state) == 0;
}

/* Every service's state in service_pack_list's order, as "a:ready b:...". */
static void
expect_states(const char *want)
{
	char got[512] = "", name[CONFIG_MAX_NAME + 1], state[16];
	const msgpack_object *list;
	struct packing pg;
	size_t i, len = 0;

	service_pack_list(packing_begin(&pg));
	list = packing_object(&pg);
	ck_assert_int_eq(list->type, MSGPACK_OBJECT_ARRAY);
	for (i = 0; i < list->via.array.size; i++) {
		ck_assert_int_eq(proto_arg_str(&list->via.array.ptr[i], "name",
		                     name, sizeof name),
		    1);
		ck_assert_int_eq(proto_arg_str(&list->via.array.ptr[i], "state",
		                     state, sizeof state),
		    1);
		len += (size_t)snprintf(got + len, sizeof got - len, "%s%s:%s",
		    i > 0 ? " " : "", name, state);
	}
	packing_end(&pg);
	ck_assert_str_eq(got, want);
}

static void
report(const char *name, bool ok)
{
	ck_assert_int_eq(service_report(service_find(name), ok, "not yet"), 0);
}

/* A service starts once what it names in after or requires is ready, not
 * when it was merely started; the start of a dependant follows the
 * readiness of its dependency. */
START_TEST(test_waits_for_readiness)
{
	world_start("[service a]\ncommand = " LONG_RUN "\nready = report\n"
	            "ready_timeout_ms = 86400000\n"
	            "[service b]\ncommand = " LONG_RUN "\nafter = a\n"
	            "ready = report\nready_timeout_ms = 86400000\n"
	            "[service c]\ncommand = " LONG_RUN "\nrequires = b\n",
	    NULL);
	service_start_all();
	expect_states("a:starting b:waiting c:waiting");
	expect_status("b", "waiting", "waiting for a");
	expect_status("c", "waiting", "waiting for b");
	ck_assert_uint_eq(ev_count(EV_SERVICE_STARTED, "a"), 1);

	report("a", false);
	expect_states("a:starting b:waiting c:waiting");
	/* Only a "report" probe takes a report. */
	ck_assert_int_eq(service_report(service_find("c"), true, ""), -1);
	expect_states("a:starting b:waiting c:waiting");

	report("a", true);
	expect_states("a:ready b:starting c:waiting");
	expect_before(EV_SERVICE_READY, "a", EV_SERVICE_STARTING, "b");
	report("b", true);
	expect_states("a:ready b:ready c:ready");
	expect_before(EV_SERVICE_READY, "b", EV_SERVICE_STARTING, "c");
	ck_assert_uint_eq(ev_count(EV_SERVICE_STARTING, "c"), 1);
	world_end();
}
END_TEST

/* All that can start, starts at once; a service that waits for two
 * starts only once both are ready. A check is a dependency too. */
START_TEST(test_fan_out_and_in)
{
	world_start("[check a]\nready = report\nready_timeout_ms = 86400000\n"
	            "[service b]\ncommand = " LONG_RUN "\nready = report\n"
	            "ready_timeout_ms = 86400000\n"
	            "[service c]\ncommand = " LONG_RUN "\nafter = a b\n"
	            "[service d]\ncommand = " LONG_RUN "\nafter = a\n"
	            "[service e]\ncommand = " LONG_RUN "\nrequires = a\n",
	    NULL);
	service_start_all();
	expect_states("a:starting b:starting c:waiting d:waiting e:waiting");
	report("a", true);
	expect_states("a:ready b:starting c:waiting d:ready e:ready");
	expect_status("c", "waiting", "waiting for b");
	report("b", true);
	expect_states("a:ready b:ready c:ready d:ready e:ready");
	expect_before(EV_SERVICE_READY, "b", EV_SERVICE_STARTING, "c");
	world_end();
}
END_TEST

/* A one-shot that exited 0 lets what requires it start; one that exited
 * otherwise keeps it waiting, while an "after" does not wait for it. */
START_TEST(test_one_shot)
{
	world_start("[service setup]\ncommand = sh -c 'exit 0'\n"
	            "restart = on-failure\nready = report\n"
	            "ready_timeout_ms = 86400000\n"
	            "[service app]\ncommand = " LONG_RUN "\nrequires = setup\n"
	            "[service bad]\ncommand = sh -c 'exit 3'\nrestart = never\n"
	            "ready = report\nready_timeout_ms = 86400000\n"
	            "[service stuck]\ncommand = " LONG_RUN "\nrequires = bad\n"
	            "[service later]\ncommand = " LONG_RUN "\nafter = bad\n",
	    NULL);
	service_start_all();
	expect_states("setup:starting app:waiting bad:starting stuck:waiting "
	              "later:waiting");
	while (ev_count(EV_SERVICE_EXITED, "setup") == 0 ||
	    ev_count(EV_SERVICE_EXITED, "bad") == 0)
		world_step();
	expect_states(
	    "setup:stopped app:ready bad:stopped stuck:waiting later:ready");
	expect_before(EV_SERVICE_EXITED, "setup", EV_SERVICE_STARTING, "app");
	expect_before(EV_SERVICE_EXITED, "bad", EV_SERVICE_STARTING, "later");
	expect_status("stuck", "waiting", "waiting for bad");
	ck_assert_uint_eq(ev_count(EV_SERVICE_RESTARTING, "setup"), 0);
	ck_assert_uint_eq(ev_count(EV_SERVICE_RESTARTING, "bad"), 0);
	world_end();
}
END_TEST

/* A requirement that fails for good fails the services waiting on it,
 * and theirs in turn; an "after" starts without it. */
START_TEST(test_failed_requirement_waiting)
{
	const char *code;
	char *cause;

	world_start("[service a]\ncommand = false\nmax_deaths = 1\n"
	            "ready = report\nready_timeout_ms = 86400000\n"
	            "[service b]\ncommand = " LONG_RUN "\nrequires = a\n"
	            "[service c]\ncommand = " LONG_RUN "\nrequires = b\n"
	            "[service d]\ncommand = " LONG_RUN "\nafter = a\n",
	    NULL);
	service_start_all();
	while (ev_count(EV_SERVICE_EXITED, "a") == 0)
		world_step();
	expect_status("a", "failed", "exited with status 1 (1 exits within");
	expect_states("a:failed b:failed c:failed d:ready");
	expect_status("b", "failed", "requires a, which failed");
	expect_status("c", "failed", "requires b, which failed");
	ck_assert_uint_eq(ev_count(EV_SERVICE_STARTING, "b"), 0);
	ck_assert_uint_eq(ev_count(EV_SERVICE_STARTING, "c"), 0);
	expect_before(EV_SERVICE_FAILED, "a", EV_SERVICE_FAILED, "b");
	expect_before(EV_SERVICE_FAILED, "b", EV_SERVICE_FAILED, "c");
	expect_before(EV_SERVICE_FAILED, "a", EV_SERVICE_STARTING, "d");
	/* Started again, it fails at once for the same reason. */
	ck_assert_int_eq(service_start(service_find("b"), &code, &cause), 0);
	expect_status("b", "failed", "requires a, which failed");
	ck_assert_uint_eq(ev_count(EV_SERVICE_STARTING, "b"), 0);
	world_end();
}
END_TEST

/* A requirement that fails while its dependant runs: the dependant is
 * stopped, then failed. */
START_TEST(test_failed_requirement_running)
{
	world_start("[service r]\ncommand = " LONG_RUN "\nmax_deaths = 1\n"
	            "ready = report\nready_timeout_ms = 86400000\n"
	            "[service user]\ncommand = " LONG_RUN "\nrequires = r\n",
	    NULL);
	service_start_all();
	report("r", true);
	expect_states("r:ready user:ready");
	ck_assert_int_eq(
	    kill((pid_t)ev_nth(EV_SERVICE_STARTED, "r", 0)->pid, SIGKILL), 0);
	while (ev_count(EV_SERVICE_EXITED, "r") == 0)
		world_step();
	expect_status("r", "failed", "killed by signal 9");
	/* Stopped at once; it may even be gone already. */
	ck_assert(!is_state("user", "ready"));
	while (ev_count(EV_SERVICE_EXITED, "user") == 0)
		world_step();
	expect_status("user", "failed", "requires r, which failed");
	ck_assert_uint_eq(
	    ev_nth(EV_SERVICE_EXITED, "user", 0)->signal, SIGTERM);
	expect_before(EV_SERVICE_FAILED, "r", EV_SERVICE_EXITED, "user");
	expect_before(EV_SERVICE_EXITED, "user", EV_SERVICE_FAILED, "user");
	ck_assert_uint_eq(ev_count(EV_SERVICE_RESTARTING, "user"), 0);
	world_end();
}
END_TEST

/* Shutdown stops a service once nothing running depends on it, and
 * berth's own service once every other is down, then says it is done. */
START_TEST(test_shutdown_order)
{
	world_start("[service own]\ncommand = " LONG_RUN "\n"
	            "[service a]\ncommand = " LONG_RUN "\n"
	            "[service b]\ncommand = " LONG_RUN "\nafter = a\n"
	            "[service c]\ncommand = " LONG_RUN "\nrequires = b\n"
	            "[service d]\ncommand = " LONG_RUN "\nstop_signal = INT\n",
	    "own");
	service_start_all();
	expect_states("own:ready a:ready b:ready c:ready d:ready");
	service_shutdown(world_stopped_cb);
	expect_states("own:ready a:ready b:ready c:stopping d:stopping");
	while (world_stopped == 0)
		world_step();
	ck_assert_int_eq(world_stopped, 1);
	expect_states("own:stopped a:stopped b:stopped c:stopped d:stopped");
	expect_before(EV_SERVICE_EXITED, "c", EV_SERVICE_EXITED, "b");
	expect_before(EV_SERVICE_EXITED, "b", EV_SERVICE_EXITED, "a");
	expect_before(EV_SERVICE_EXITED, "a", EV_SERVICE_EXITED, "own");
	expect_before(EV_SERVICE_EXITED, "d", EV_SERVICE_EXITED, "own");
	/* Each by its stop signal. */
	ck_assert_uint_eq(ev_nth(EV_SERVICE_EXITED, "c", 0)->signal, SIGTERM);
	ck_assert_uint_eq(ev_nth(EV_SERVICE_EXITED, "d", 0)->signal, SIGINT);
	ck_assert_uint_eq(ev_count(EV_SERVICE_RESTARTING, "a"), 0);
	/* Nothing starts again once shutdown began. */
	ck_assert_uint_eq(ev_count(EV_SERVICE_STARTING, "a"), 1);
	world_end();
}
END_TEST

/* A service that ignores its stop signal is killed after its timeout. */
START_TEST(test_stop_timeout_kills)
{
	world_start(
	    "[service stubborn]\n"
	    "command = sh -c 'trap \"\" TERM; echo >&3; exec sleep 20'\n"
	    "ready = notify-fd 3\nready_timeout_ms = 86400000\n"
	    "stop_timeout_ms = 10\n",
	    NULL);
	service_start_all();
	while (!is_state("stubborn", "ready"))
		world_step();
	world_shutdown();
	ck_assert_uint_eq(
	    ev_nth(EV_SERVICE_EXITED, "stubborn", 0)->signal, SIGKILL);
	ck_assert_uint_eq(status_of("stubborn").signal, SIGKILL);
	world_end();
}
END_TEST

/* Each restart waits twice the last delay, from the floor up to the cap,
 * which is reached even when it is no power-of-two multiple of the floor. */
START_TEST(test_backoff_doubles_to_cap)
{
	world_start("[service p]\ncommand = false\nbackoff_min_ms = 1\n"
	            "backoff_max_ms = 8\nbackoff_reset_ms = 86400000\n"
	            "max_deaths = 1000\n"
	            "[service q]\ncommand = false\nbackoff_min_ms = 3\n"
	            "backoff_max_ms = 10\nbackoff_reset_ms = 86400000\n"
	            "max_deaths = 1000\n",
	    NULL);
	service_start_all();
	while (ev_count(EV_SERVICE_RESTARTING, "p") < 6 ||
	    ev_count(EV_SERVICE_RESTARTING, "q") < 4)
		world_step();
	expect_delays("p", "1 2 4 8 8 8");
	expect_delays("q", "3 6 10 10");
	ck_assert_uint_eq(
	    status_of("p").restarts, ev_count(EV_SERVICE_RESTARTING, "p"));
	world_end();
}
END_TEST

/* A restart waits its delay: one of a day has not come while another
 * service went through five restarts of a millisecond. */
START_TEST(test_restart_waits_its_delay)
{
	world_start("[service slow]\ncommand = false\n"
	            "backoff_min_ms = 86400000\nbackoff_max_ms = 86400000\n"
	            "[service fast]\ncommand = false\nbackoff_min_ms = 1\n"
	            "backoff_max_ms = 1\nmax_deaths = 1000\n",
	    NULL);
	service_start_all();
	while (ev_count(EV_SERVICE_EXITED, "slow") == 0 ||
	    ev_count(EV_SERVICE_RESTARTING, "fast") < 5)
		world_step();
	expect_status("slow", "backoff", "restarting in 86400000 ms");
	ck_assert_uint_eq(ev_count(EV_SERVICE_STARTING, "slow"), 1);
	world_end();
}
END_TEST

/* After a run that stayed ready backoff_reset_ms, the delay is the floor
 * again; a run that never became ready, or not for long enough, does
 * not reset it. */
START_TEST(test_backoff_resets_after_stable_run)
{
	world_start("[service steady]\ncommand = false\nbackoff_min_ms = 1\n"
	            "backoff_max_ms = 64\nbackoff_reset_ms = 0\n"
	            "max_deaths = 1000\n"
	            "[service unready]\ncommand = false\nbackoff_min_ms = 1\n"
	            "backoff_max_ms = 64\nbackoff_reset_ms = 0\n"
	            "max_deaths = 1000\nready = report\n"
	            "ready_timeout_ms = 86400000\n"
	            "[service brief]\ncommand = false\nbackoff_min_ms = 1\n"
	            "backoff_max_ms = 64\nbackoff_reset_ms = 86400000\n"
	            "max_deaths = 1000\n",
	    NULL);
	service_start_all();
	while (ev_count(EV_SERVICE_RESTARTING, "steady") < 4 ||
	    ev_count(EV_SERVICE_RESTARTING, "unready") < 4 ||
	    ev_count(EV_SERVICE_RESTARTING, "brief") < 4)
		world_step();
	expect_delays("steady", "1 1 1 1");
	expect_delays("unready", "1 2 4 8");
	expect_delays("brief", "1 2 4 8");
	world_end();
}
END_TEST

/* max_deaths exits within the window fail a service for good: no restart
 * after the last. service.start gives it a fresh count. */
START_TEST(test_too_many_deaths)
{
	const char *code;
	char *cause;

	world_start("[service s]\ncommand = false\nbackoff_min_ms = 1\n"
	            "backoff_max_ms = 1\nmax_deaths = 3\n"
	            "death_window_ms = 86400000\n",
	    NULL);
	service_start_all();
	while (ev_count(EV_SERVICE_EXITED, "s") < 3)
		world_step();
	expect_status(
	    "s", "failed", "exited with status 1 (3 exits within 86400000 ms)");
	ck_assert_uint_eq(ev_count(EV_SERVICE_RESTARTING, "s"), 2);
	ck_assert_uint_eq(ev_count(EV_SERVICE_FAILED, "s"), 1);
	/* Nothing is left to happen: no restart is due. */
	ck_assert_int_ge(event_base_loop(world_base, EVLOOP_NONBLOCK), 0);
	ck_assert_uint_eq(ev_count(EV_SERVICE_STARTED, "s"), 3);
	expect_status("s", "failed", NULL);

	ck_assert_int_eq(service_start(service_find("s"), &code, &cause), 0);
	while (ev_count(EV_SERVICE_EXITED, "s") < 5 &&
	    ev_count(EV_SERVICE_FAILED, "s") < 2)
		world_step();
	expect_status("s", "backoff", NULL);
	while (ev_count(EV_SERVICE_EXITED, "s") < 6)
		world_step();
	expect_status("s", "failed", NULL);
	ck_assert_uint_eq(ev_count(EV_SERVICE_FAILED, "s"), 2);
	world_end();
}
END_TEST

/* Exits further apart than the window never add up to a failure. */
START_TEST(test_deaths_outside_window)
{
	world_start("[service s]\ncommand = sleep 0.05\nbackoff_min_ms = 1\n"
	            "backoff_max_ms = 1\nmax_deaths = 2\n"
	            "death_window_ms = 10\n",
	    NULL);
	service_start_all();
	while (ev_count(EV_SERVICE_RESTARTING, "s") < 5 &&
	    ev_count(EV_SERVICE_FAILED, "s") == 0)
		world_step();
	ck_assert_uint_eq(ev_count(EV_SERVICE_FAILED, "s"), 0);
	world_end();
}
END_TEST

/* on-failure restarts only what failed, never nothing, always all. */
START_TEST(test_restart_policies)
{
	world_start(
	    "[service once]\ncommand = true\nrestart = on-failure\n"
	    "[service retry]\ncommand = false\nrestart = on-failure\n"
	    "backoff_min_ms = 1\nbackoff_max_ms = 1\nmax_deaths = 1000\n"
	    "[service never]\ncommand = false\nrestart = never\n"
	    "[service always]\ncommand = true\nrestart = always\n"
	    "backoff_min_ms = 1\nbackoff_max_ms = 1\n"
	    "max_deaths = 1000\n",
	    NULL);
	service_start_all();
	while (ev_count(EV_SERVICE_EXITED, "once") == 0 ||
	    ev_count(EV_SERVICE_EXITED, "never") == 0 ||
	    ev_count(EV_SERVICE_RESTARTING, "retry") < 2 ||
	    ev_count(EV_SERVICE_RESTARTING, "always") < 2)
		world_step();
	expect_status("once", "stopped", "exited with status 0");
	expect_status("never", "stopped", "exited with status 1");
	ck_assert(status_of("never").exited);
	ck_assert_uint_eq(status_of("never").code, 1);
	ck_assert_uint_eq(ev_count(EV_SERVICE_RESTARTING, "once"), 0);
	ck_assert_uint_eq(ev_count(EV_SERVICE_RESTARTING, "never"), 0);
	world_end();
}
END_TEST

/* A command that cannot be executed counts as an exit with status 127,
 * says why, and is restarted and failed like any other. */
START_TEST(test_spawn_failure)
{
	world_start("[service ghost]\ncommand = /nonexistent/berth-test\n"
	            "backoff_min_ms = 1\nbackoff_max_ms = 1\nmax_deaths = 2\n",
	    NULL);
	service_start_all();
	expect_status(
	    "ghost", "backoff", "cannot execute /nonexistent/berth-test");
	while (ev_count(EV_SERVICE_STARTING, "ghost") < 2)
		world_step();
	expect_status("ghost", "failed", "(2 exits within");
	ck_assert_uint_eq(status_of("ghost").code, 127);
	ck_assert_uint_eq(ev_count(EV_SERVICE_STARTED, "ghost"), 0);
	world_end();
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("service");
	TCase *tc = tcase_create("service");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_waits_for_readiness);
	tcase_add_test(tc, test_fan_out_and_in);
	tcase_add_test(tc, test_one_shot);
	tcase_add_test(tc, test_failed_requirement_waiting);
	tcase_add_test(tc, test_failed_requirement_running);
	tcase_add_test(tc, test_shutdown_order);
	tcase_add_test(tc, test_stop_timeout_kills);
	tcase_add_test(tc, test_backoff_doubles_to_cap);
	tcase_add_test(tc, test_restart_waits_its_delay);
	tcase_add_test(tc, test_backoff_resets_after_stable_run);
	tcase_add_test(tc, test_too_many_deaths);
	tcase_add_test(tc, test_deaths_outside_window);
	tcase_add_test(tc, test_restart_policies);
	tcase_add_test(tc, test_spawn_failure);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
