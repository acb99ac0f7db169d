/* berthd: PID 1 of the sandbox — supervisor and keeper of state.
 *
 * Reads the config, makes sure the state directory, boot id and token
 * exist, opens the journal, serves the protocol on the Unix socket, starts
 * the gateway and the configured services, reaps every child, and shuts
 * down in order on SIGTERM or SIGINT. It parses no network bytes and links
 * no Xlib: what could crash it runs in other processes. */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot.h"
#include "rand.h"
#include "disk.h"
#include "enforce.h"
#include "catalog.h"
#include "child.h"
#include "clock.h"
#include "config.h"
#include "events.h"
#include "log.h"
#include "ops.h"
#include "proto.h"
#include "signame.h"
#include "artifact.h"
#include "fswatch.h"
#include "grant.h"
#include "idem.h"
#include "inflight.h"
#include "ports.h"
#include "proc.h"
#include "procfs.h"
#include "nodump.h"
#include "provider.h"
#include "pty.h"
#include "runtime.h"
#include "secrets.h"
#include "server.h"
#include "service.h"
#include "task.h"
#include "stream.h"
#include "token.h"
#include "workspace.h"
#include "xmalloc.h"

static struct event_base *berthd_base;
static struct event *berthd_deadline;
static int berthd_stopping;
static bool berthd_sweeping;
static struct service *berthd_main;
static struct config_service berthd_gateway;
static struct event *berthd_sweep_tick;
static pid_t berthd_parent;      /* at start */
static int berthd_pdeathsig_sig; /* --pdeathsig, 0 if none */

/* How long escapees may take to die after the final SIGKILL. */
#define BERTHD_SWEEP_MS 2000
/* How often the sweep looks again for what was re-parented to berthd. */
#define BERTHD_SWEEP_TICK_MS 20
/* The longest the gateway waits to start again after it exited: its
 * restart delay doubles from the services' floor to this. */
#define BERTHD_GATEWAY_BACKOFF_MAX_MS 250

static void
berthd_usage(FILE *f)
{
	fprintf(f,
	    "usage: berthd [--config FILE] [--listen ADDR:PORT] "
	    "[--token-file FILE] [--state-dir DIR] [--pdeathsig SIG] "
	    "[--debug]\n");
}

static void
berthd_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	log_warn("processes still left after SIGKILL; exiting anyway");
	event_base_loopexit(berthd_base, NULL);
}

/* One pass of the final sweep: SIGKILL to what is left, then reap. Not
 * as PID 1, the children of a killed child are re-parented to berthd (a
 * subreaper) only as it dies, so passes go on until no child is left. */
static void
berthd_sweep(void)
{
	struct timeval tv = clock_tv(BERTHD_SWEEP_TICK_MS);

	child_sweep();
	if (!child_reap()) {
		event_base_loopexit(berthd_base, NULL);
		return;
	}
	evtimer_add(berthd_sweep_tick, &tv);
}

static void
berthd_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	berthd_sweep();
}

/* Every service is down: kill whatever escaped their trees, reap it, and
 * leave the loop once berthd has no child left, or at the deadline. */
static void
berthd_stopped_cb(void)
{
	struct timeval tv = clock_tv(BERTHD_SWEEP_MS);

	if (child_sweep() > 0)
		log_info("swept %s left after the services",
		    getpid() == 1 ? "the processes" : "the children");
	berthd_sweeping = true;
	berthd_sweep_tick = evtimer_new(berthd_base, berthd_sweep_cb, NULL);
	berthd_deadline = evtimer_new(berthd_base, berthd_deadline_cb, NULL);
	evtimer_add(berthd_deadline, &tv);
	berthd_sweep();
}

/* What berthd_shutdown stops and waits for: the services, the runtimes. */
static int berthd_stopping_parts;

static void
berthd_part_stopped_cb(void)
{
	if (--berthd_stopping_parts == 0)
		berthd_stopped_cb();
}

static void
berthd_shutdown(const char *why, int sig)
{
	msgpack_packer *pk;

	if (berthd_stopping++)
		return;
	log_info("%s: shutting down", why);
	pk = events_begin(EV_BERTHD_STOPPING);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_i64(pk, "signal", sig);
	proto_pack_kv_str(pk, "reason", why);
	events_commit();
	task_stop_all();
	/* The runtimes stop beside the services; the sweep waits for both. */
	berthd_stopping_parts = 2;
	runtime_stop_all(berthd_part_stopped_cb);
	service_shutdown(berthd_part_stopped_cb);
}

static void
berthd_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	if (sig == SIGCHLD) {
		if (berthd_sweeping)
			berthd_sweep();
		else
			child_reap();
		return;
	}
	if (sig == SIGTERM || sig == SIGINT) {
		berthd_shutdown(strsignal((int)sig), (int)sig);
		return;
	}
	if (service_forward((int)sig) == 0)
		log_info(
		    "%s: no service to pass it on to", strsignal((int)sig));
}

/* The main service is gone for good: so is the sandbox. */
static void
berthd_main_exit_cb(int status)
{
	(void)status;
	berthd_shutdown("the main service exited", 0);
}

/* berthd's exit status: the main service's, shell style, else 0; a code
 * in its exit_codes_ok is a success, 0 (tini's -e). */
static int
berthd_exit_status(void)
{
	int status;

	if (berthd_main == NULL || !service_last_exit(berthd_main, &status))
		return 0;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return service_exit_ok(berthd_main, status) ? 0 : WEXITSTATUS(status);
}

/* The state directory: searchable by all (services running as other
 * users reach their notify sockets in it), listable by root only; what
 * is secret in it has modes of its own. */
static void
berthd_mkdir(const char *dir)
{
	if (mkdir(dir, 0711) != 0 && errno != EEXIST)
		log_fatal("cannot create %s: %s", dir, strerror(errno));
	if (chmod(dir, 0711) != 0)
		log_fatal("cannot chmod %s: %s", dir, strerror(errno));
}

static void
berthd_emit_started(void)
{
	msgpack_packer *pk = events_begin(EV_BERTHD_STARTED);

	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "boot_id", boot_id());
	proto_pack_kv_u64(pk, "pid", (uint64_t)getpid());
	proto_pack_kv_str(pk, "version", BERTH_VERSION);
	events_commit();
}

/* Appends "opt value" to the gateway's argv when the key was set. */
static size_t
berthd_gateway_opt(char **argv, size_t n, const char *opt, char *value)
{
	if (value == NULL)
		return n;
	argv[n++] = (char *)opt;
	argv[n++] = value;
	return n;
}

/* The gateway is a service like the others, but berth's own: it never
 * fails for good, is not a readiness check, and stops last. */
static void
berthd_gateway_config(const struct config *cfg, int debug)
{
	static char queue[32], stall[16];
	static char *argv[32];
	struct config_service *g = &berthd_gateway;
	size_t n = 0;

	snprintf(queue, sizeof queue, "%zu", cfg->client_queue);
	snprintf(stall, sizeof stall, "%u", cfg->client_stall_ms);
	argv[n++] = child_berth_program(cfg->gateway_command);
	argv[n++] = "--listen";
	argv[n++] = cfg->listen;
	argv[n++] = "--socket";
	argv[n++] = cfg->socket;
	argv[n++] = "--client-queue";
	argv[n++] = queue;
	argv[n++] = "--client-stall-ms";
	argv[n++] = stall;
	n = berthd_gateway_opt(argv, n, "--vnc", cfg->vnc);
	n = berthd_gateway_opt(argv, n, "--novnc-dir", cfg->novnc_dir);
	n = berthd_gateway_opt(argv, n, "--cdp", cfg->cdp);
	n = berthd_gateway_opt(
	    argv, n, "--cdp-relay-listen", cfg->cdp_relay_listen);
	n = berthd_gateway_opt(
	    argv, n, "--preview-listen", cfg->preview_listen);
	n = berthd_gateway_opt(
	    argv, n, "--preview-domain", cfg->preview_domain);
	if (debug)
		argv[n++] = "--debug";
	argv[n] = NULL;
	config_service_init(g);
	g->name = "gateway";
	g->argv = argv;
	/* The door of every probe: never failed for good, and back within
	 * BERTHD_GATEWAY_BACKOFF_MAX_MS of any exit however often it dies,
	 * since a fleet recycles a sandbox whose /healthz stays down. */
	g->max_deaths = 0;
	g->backoff_max_ms = BERTHD_GATEWAY_BACKOFF_MAX_MS;
	g->confine = true;
	g->uid = cfg->gateway_uid;
	g->gid = cfg->gateway_gid;
}

/* The gateway's ids: [gateway] user's, else a fixed pair no name stands
 * for. Never root's: a gateway that can do anything is what this
 * separation exists to prevent. */
static void
berthd_gateway_ids(struct config *cfg)
{
	struct passwd *pw = getpwnam(cfg->gateway_user);

	if (pw != NULL && pw->pw_uid != 0 && pw->pw_gid != 0) {
		cfg->gateway_uid = pw->pw_uid;
		cfg->gateway_gid = pw->pw_gid;
		return;
	}
	if (pw != NULL)
		log_warn("[gateway] user %s is root's; the gateway never runs "
		         "as root",
		    cfg->gateway_user);
	log_warn("no user %s: the gateway and the probes run as %u:%u "
	         "(create a system user %s, e.g. useradd --system "
	         "--no-create-home --shell /usr/sbin/nologin %s, or set "
	         "[gateway] user)",
	    cfg->gateway_user, CONFIG_GATEWAY_UID, CONFIG_GATEWAY_GID,
	    cfg->gateway_user, cfg->gateway_user);
	cfg->gateway_uid = CONFIG_GATEWAY_UID;
	cfg->gateway_gid = CONFIG_GATEWAY_GID;
}

static void
berthd_add_services(const struct config *cfg, int debug)
{
	struct service *s;
	size_t i;

	berthd_gateway_config(cfg, debug);
	service_add(&berthd_gateway, true);
	for (i = 0; i < cfg->nservices; i++) {
		s = service_add(&cfg->services[i], false);
		if (cfg->services[i].main)
			berthd_main = s;
	}
}

/* What bounds runtimes, commands and sessions (enforce.h, disk.h). The
 * tag keeps apart the cgroups of several berthds on one host, and of a
 * berthd restarted over groups its last run could not remove. */
static void
berthd_limits(const struct config *cfg)
{
	char tag[9];

	rand_hex(tag, 4);
	enforce_setup(berthd_base, cfg->cgroups, tag);
	child_on_orphans(enforce_sweep);
	disk_setup(berthd_base, cfg->state_dir);
}

/* --pdeathsig SIG: berthd gets SIG when its parent dies. The parent may
 * have died already, before the request: then berthd acts at once. */
static void
berthd_pdeathsig(int sig)
{
	if (sig == 0)
		return;
	if (prctl(PR_SET_PDEATHSIG, sig) != 0)
		log_fatal("--pdeathsig: %s", strerror(errno));
	if (getppid() != berthd_parent) {
		log_info("--pdeathsig: the parent is gone already");
		raise(sig);
	}
}

static void
berthd_parse_args(int argc, char **argv, struct config *cfg, int *debug)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"listen", required_argument, NULL, 'l'},
	    {"token-file", required_argument, NULL, 't'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"debug", no_argument, NULL, 'd'},
	    {"pdeathsig", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	const char *listen = NULL, *token = NULL, *state = NULL;
	const char *pdeathsig = NULL;
	char *cause = NULL;
	int ch;

	while ((ch = getopt_long(argc, argv, "c:l:t:s:dhV", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 'c':
			if (config_load(cfg, optarg, &cause) < 0)
				log_fatal("%s", cause);
			break;
		case 'l': listen = optarg; break;
		case 't': token = optarg; break;
		case 's': state = optarg; break;
		case 'd': *debug = 1; break;
		case 'p': pdeathsig = optarg; break;
		case 'h': berthd_usage(stdout); exit(0);
		case 'V': printf("berthd %s\n", BERTH_VERSION); exit(0);
		default: berthd_usage(stderr); exit(2);
		}
	}
	if (optind != argc) {
		berthd_usage(stderr);
		exit(2);
	}
	/* Command-line options win over the file, whatever their order. */
	if (listen != NULL && config_set_listen(cfg, listen, &cause) < 0)
		log_fatal("%s", cause);
	if (token != NULL) {
		free(cfg->token_file);
		cfg->token_file = xstrdup(token);
	}
	if (state != NULL) {
		free(cfg->state_dir);
		cfg->state_dir = xstrdup(state);
	}
	if (config_finish(cfg, &cause) < 0)
		log_fatal("%s", cause);
	if (pdeathsig != NULL &&
	    signame_parse(pdeathsig, &berthd_pdeathsig_sig) < 0)
		log_fatal("--pdeathsig: \"%s\" is not a signal (" SIGNAME_LIST
		          " or a number)",
		    pdeathsig);
}

/* PID 1 reaps orphans by nature; anywhere else berthd asks to. */
static void
berthd_become_reaper(void)
{
	FILE *f;

	if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		log_warn(
		    "cannot become a child subreaper: %s", strerror(errno));
	/* Let the kernel kill anything else before berthd: -1000 for berthd
	 * and 0 for its children; without CAP_SYS_RESOURCE berthd cannot go
	 * below 0, so its children go to 1000 instead. */
	f = fopen("/proc/self/oom_score_adj", "w");
	if (f == NULL || fputs("-1000\n", f) < 0 || fclose(f) != 0) {
		log_warn("cannot set berthd's oom_score_adj to -1000 (%s); its "
		         "children get 1000",
		    strerror(errno));
		child_set_oom_score_adj(1000);
	} else
		child_set_oom_score_adj(0);
}

/* Undoes what a careless parent left: a blocked SIGCHLD would stop the
 * reaping, a blocked or ignored SIGTERM the shutdown. A handler cannot
 * survive an exec, an ignored signal can: those go back to the default
 * (and the handlers a sanitizer set before main stay). Then what berthd
 * never acts on: writes to closed sockets, and a terminal's job control
 * (a supervisor that stops, stops reaping). */
static void
berthd_reset_signals(void)
{
	static const int ignored[] = {SIGPIPE, SIGTTOU, SIGTTIN, SIGTSTP};
	struct sigaction sa, old;
	sigset_t none;
	size_t i;
	int sig;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		if (sigaction(sig, NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			sigaction(sig, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	for (i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
		sigaction(ignored[i], &sa, NULL);
}

/* The signals berthd acts on: reaping, shutdown, and those it passes on.
 * Returns how many events it made in ev[] (at least 64 + 3 long). */
static size_t
berthd_signals(const struct config *cfg, struct event **ev)
{
	size_t n = 0;
	int sig;

	ev[n++] = evsignal_new(berthd_base, SIGCHLD, berthd_signal_cb, NULL);
	ev[n++] = evsignal_new(berthd_base, SIGTERM, berthd_signal_cb, NULL);
	ev[n++] = evsignal_new(berthd_base, SIGINT, berthd_signal_cb, NULL);
	for (sig = 1; sig < NSIG && sig <= 64; sig++)
		if (config_forwards(cfg, sig))
			ev[n++] = evsignal_new(
			    berthd_base, sig, berthd_signal_cb, NULL);
	return n;
}

int
main(int argc, char **argv)
{
	struct event *sigev[64 + 3];
	size_t nsig;
	struct journal_opts jo;
	struct config cfg;
	char *cause = NULL;
	bool fresh;
	int debug = 0, status;
	size_t i;

	berthd_reset_signals();
	berthd_parent = getppid();
	log_init("berthd", 0);
	config_init(&cfg);
	berthd_parse_args(argc, argv, &cfg, &debug);
	log_init("berthd", debug);
	berthd_become_reaper();
	/* berthd holds every credential and secret. After the write to
	 * oom_score_adj, which a non-dumpable process may be refused. */
	if (nodump_self(&cause) < 0)
		log_fatal("%s", cause);
	secrets_init();

	berthd_mkdir(cfg.state_dir);
	if (boot_init(cfg.state_dir, &fresh, &cause) < 0)
		log_fatal("%s", cause);
	if (token_init(cfg.token_file, &cause) < 0)
		log_fatal("%s", cause);
	berthd_gateway_ids(&cfg);
	/* The gateway's group sees every process: berth's own. */
	procfs_hide(cfg.gateway_gid);
	jo = (struct journal_opts){cfg.journal_segment_bytes,
	    cfg.journal_max_bytes, PROTO_MAX_MSG, cfg.journal_sync};
	if (events_init(cfg.state_dir, &jo, fresh, &cause) < 0)
		log_fatal("%s", cause);

	berthd_base = event_base_new();
	if (berthd_base == NULL)
		log_fatal("cannot create the event loop");
	nsig = berthd_signals(&cfg, sigev);
	for (i = 0; i < nsig; i++)
		evsignal_add(sigev[i], NULL);
	berthd_pdeathsig(berthd_pdeathsig_sig);
	ops_init(&cfg);
	stream_setup(berthd_base);
	provider_init(&cfg);
	berthd_limits(&cfg);
	pty_init(berthd_base);
	proc_init(berthd_base);
	runtime_init(berthd_base, &cfg);
	workspace_init(berthd_base, &cfg);
	task_init(berthd_base, &cfg);
	fswatch_init(berthd_base);
	if (artifact_init(berthd_base, cfg.state_dir, &cause) < 0)
		log_fatal("%s", cause);
	if (server_listen(berthd_base, cfg.socket, cfg.gateway_uid,
	        cfg.gateway_gid, &cause) < 0)
		log_fatal("%s", cause);
	log_info("berthd %s, pid %ld, boot %s%s, socket %s", BERTH_VERSION,
	    (long)getpid(), boot_id(), fresh ? " (new)" : "", cfg.socket);
	berthd_emit_started();
	grant_init(berthd_base, &cfg);
	ports_init(berthd_base, &cfg);
	service_init(berthd_base, &cfg, berthd_main_exit_cb);
	berthd_add_services(&cfg, debug);
	service_start_all();
	/* A child that exited before the SIGCHLD event existed. */
	child_reap();

	event_base_dispatch(berthd_base);

	status = berthd_exit_status();
	runtime_shutdown();
	pty_shutdown();
	proc_shutdown();
	task_shutdown();
	enforce_shutdown();
	disk_shutdown();
	workspace_shutdown();
	server_shutdown();
	grant_shutdown();
	ports_shutdown();
	fswatch_shutdown();
	artifact_shutdown();
	secrets_shutdown();
	provider_shutdown();
	idem_shutdown();
	inflight_shutdown();
	service_free_all();
	free(berthd_gateway.argv != NULL ? berthd_gateway.argv[0] : NULL);
	if (berthd_deadline != NULL)
		event_free(berthd_deadline);
	if (berthd_sweep_tick != NULL)
		event_free(berthd_sweep_tick);
	for (i = 0; i < nsig; i++)
		event_free(sigev[i]);
	event_base_free(berthd_base);
	events_shutdown();
	config_free(&cfg);
	token_shutdown();
	log_info("stopped (exit status %d)", status);
	return status;
}
