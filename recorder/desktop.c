/* desktop: berth-desktop, berth's only X11 client, run by berthd as a
 * service so that no Xlib call ever happens in PID 1. Watches the display
 * and reports the xfce check; owns the main loop, the X connection and
 * the reporter. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "clock.h"
#include "damage.h"
#include "denylist.h"
#include "input.h"
#include "log.h"
#include "record.h"
#include "report.h"
#include "screen.h"
#include "serve.h"
#include "shot.h"
#include "xconn.h"
#include "xfce.h"

/* The periodic check, whatever the events say. */
#define DESKTOP_INTERVAL_MS 500
/* After an event, the wait before looking: a burst is one check. */
#define DESKTOP_SETTLE_MS 50
/* At exit, the wait for berthd to take the last word. */
#define DESKTOP_LAST_REPORT_MS 500
/* berthd's longest service or check name. */
#define DESKTOP_MAX_NAME 64

/* The program's state: main owns it (on its stack) and frees its parts. */
struct desktop {
	struct xconn *xc;
	struct report *rp;
	struct serve *sv;
	struct capture *capture;
	struct shot *shot;
	struct screen *screen;
	struct damage *damage;
	struct input *input;
	struct record *record;
	const char *display;
	bool confine;        /* install the filter once X answers */
	uint64_t checked_at; /* clock_mono_ms of the last look */
	bool dirty;          /* an event that matters came since */
};

static volatile sig_atomic_t desktop_quit;
static bool desktop_confined;

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer stops the world with ptrace at exit, which the filter
 * forbids; once confined the check could only fail. Leaks are looked for
 * in runs with --no-confine. */
int __lsan_is_turned_off(void);
int
__lsan_is_turned_off(void)
{
	return desktop_confined;
}
#endif

/* Whether display is reached over TCP ("host:0", "tcp/host:0"): the
 * filter must then leave IP sockets alone. */
static bool
desktop_display_tcp(const char *display)
{
	const char *colon = strrchr(display, ':');
	const char *slash = strchr(display, '/');
	const char *host = slash != NULL ? slash + 1 : display;
	size_t len;

	if (colon == NULL || colon < host)
		return false;
	len = (size_t)(colon - host);
	return len > 0 && !(len == 4 && strncmp(host, "unix", 4) == 0);
}

/* Once X has answered (Xlib has read what it reads once, the shared
 * memory and the fonts are in reach): no new program, no other
 * process's memory, and no network but the X server's. */
static void
desktop_confine(struct desktop *d)
{
	bool inet = desktop_display_tcp(d->display);
	char *cause;

	if (!d->confine || desktop_confined)
		return;
	if (denylist_install(inet, &cause) < 0)
		log_fatal("cannot confine berth-desktop: %s", cause);
	desktop_confined = true;
	log_info("confined (seccomp)%s", inet ? ", with IP for X" : "");
}

static void
desktop_signal_cb(int sig)
{
	(void)sig;
	desktop_quit = 1;
}

/* A new connection: watch the root window, and look at once. */
static void
desktop_connected(struct desktop *d, Display *dpy)
{
	XSelectInput(dpy, DefaultRootWindow(dpy), XFCE_EVENT_MASK);
	d->dirty = true;
	d->checked_at = 0;
}

/* Takes every event Xlib holds or can read without waiting. XNextEvent
 * only ever runs on a queue XPending found non-empty: on a broken
 * connection Xlib reads nothing, and XNextEvent would take an event from
 * an empty queue. */
static void
desktop_events(struct desktop *d)
{
	Display *dpy;
	XEvent ev;

	while ((dpy = xconn_get(d->xc)) != NULL && XPending(dpy) > 0) {
		XNextEvent(dpy, &ev);
		if (record_event(d->record, &ev) ||
		    damage_event(d->damage, &ev))
			continue;
		if (xfce_event_matters(dpy, &ev))
			d->dirty = true;
	}
}

/* When the next look is due (clock_mono_ms). */
static uint64_t
desktop_due(const struct desktop *d)
{
	return d->checked_at +
	    (d->dirty ? DESKTOP_SETTLE_MS : DESKTOP_INTERVAL_MS);
}

/* Looks at the display if due, and hands the verdict to the reporter. */
static void
desktop_check(struct desktop *d)
{
	Display *dpy;
	char *desc;
	int r;

	if ((dpy = xconn_get(d->xc)) == NULL) {
		report_set(d->rp, false, d->xc->cause);
		return;
	}
	if (clock_mono_ms() < desktop_due(d))
		return;
	r = xfce_check(dpy, &desc);
	d->checked_at = clock_mono_ms();
	d->dirty = false;
	/* Requests that failed because the server went away say nothing
	 * about XFCE: the lost connection is the news. */
	if (xconn_get(d->xc) == NULL)
		report_set(d->rp, false, d->xc->cause);
	else
		report_set(d->rp, r == 0, desc);
	free(desc);
}

static int
desktop_min_wait(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/* How long the loop may sleep: until the next look, the next try to
 * connect to X, or the next try to reach berthd. */
static int
desktop_wait_ms(const struct desktop *d)
{
	uint64_t now = clock_mono_ms(), due = desktop_due(d);
	int wait;

	wait = d->xc->dpy != NULL ? (due > now ? (int)(due - now) : 0) : -1;
	wait = desktop_min_wait(wait, xconn_wait_ms(d->xc, now));
	wait = desktop_min_wait(wait, report_wait_ms(d->rp, now));
	wait = desktop_min_wait(wait, serve_wait_ms(d->sv, now));
	wait = desktop_min_wait(wait, damage_wait_ms(d->damage, now));
	wait = desktop_min_wait(wait, record_wait_ms(d->record));
	return wait < 0 ? DESKTOP_INTERVAL_MS : wait;
}

/* Sleeps until the X connection or berthd's has something, a timer is
 * due, or a signal comes: SIGTERM is unblocked only in here. */
static void
desktop_sleep(struct desktop *d, const sigset_t *waitmask)
{
	struct pollfd pfd[3];
	struct timespec ts;
	Display *dpy;
	nfds_t n = 0, i;
	int wait;

	/* First: a connection the last X call broke is dropped here, and
	 * the wait is then the one for reconnecting. */
	if ((dpy = xconn_get(d->xc)) != NULL) {
		pfd[n].fd = ConnectionNumber(dpy);
		pfd[n++].events = POLLIN;
	}
	wait = desktop_wait_ms(d);
	if (report_fd(d->rp) != -1) {
		pfd[n].fd = report_fd(d->rp);
		pfd[n++].events = POLLIN;
	}
	if (serve_fd(d->sv) != -1) {
		pfd[n].fd = serve_fd(d->sv);
		pfd[n++].events = serve_events(d->sv);
	}
	ts.tv_sec = wait / 1000;
	ts.tv_nsec = (long)(wait % 1000) * 1000000;
	if (ppoll(pfd, n, &ts, waitmask) <= 0)
		return;
	for (i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == report_fd(d->rp))
			report_read(d->rp);
		else if (pfd[i].fd == serve_fd(d->sv))
			serve_io(d->sv, pfd[i].revents);
	}
}

static void
desktop_loop(struct desktop *d, const sigset_t *waitmask)
{
	Display *dpy;
	bool fresh;

	while (!desktop_quit) {
		if (xconn_open(d->xc, &fresh) == 0 && fresh &&
		    (dpy = xconn_get(d->xc)) != NULL) {
			desktop_connected(d, dpy);
			desktop_confine(d);
		}
		desktop_check(d);
		record_timer(d->record);
		/* After the check and the capture: their round trips may
		 * have queued events that poll cannot see any more. */
		desktop_events(d);
		report_flush(d->rp, REPORT_TIMEOUT_MS);
		damage_timer(d->damage, clock_mono_ms());
		serve_connect(d->sv);
		if (!desktop_quit)
			desktop_sleep(d, waitmask);
	}
}

static _Noreturn void
desktop_usage(FILE *f, int status)
{
	fprintf(f,
	    "usage: berth-desktop [--display DISPLAY] [--socket PATH] "
	    "[--check NAME]\n"
	    "                     [--recordings DIR] [--no-confine] [--debug]\n"
	    "  --display DISPLAY  the X display to watch ($DISPLAY)\n"
	    "  --socket PATH      berthd's Unix socket ($BERTH_SOCKET); "
	    "without one,\n"
	    "                     the check's changes are only logged\n"
	    "  --check NAME       the check to report (default xfce)\n"
	    "  --recordings DIR   where recordings are made "
	    "($BERTH_STATE_DIR/recordings)\n"
	    "  --no-confine       no seccomp filter (to debug with ptrace)\n"
	    "  --confine-selftest install the filter, try what it forbids, "
	    "exit\n"
	    "  --debug            log more\n");
	exit(status);
}

static _Noreturn void __attribute__((format(printf, 1, 2)))
desktop_bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "berth-desktop: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	desktop_usage(stderr, 2);
}

/* SIGTERM and SIGINT end the loop; they are blocked outside ppoll so that
 * one arriving between a check and the sleep is not lost. */
static void
desktop_signals(sigset_t *waitmask)
{
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = desktop_signal_cb;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	if (sigprocmask(SIG_BLOCK, &block, waitmask) != 0)
		log_fatal("sigprocmask: %s", strerror(errno));
	sigdelset(waitmask, SIGTERM);
	sigdelset(waitmask, SIGINT);
}

/* The fd berthd handed, named by the environment variable name; -1 if
 * none. Exits on a value that is not an open fd. */
static int
desktop_handed(const char *name)
{
	const char *v = getenv(name);
	char *end;
	long fd;

	if (v == NULL || *v == '\0')
		return -1;
	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || fd < 3 || fd > 1023 ||
	    fcntl((int)fd, F_GETFD) < 0)
		desktop_bad("%s=%s is not a connection berthd handed", name, v);
	return (int)fd;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"display", required_argument, NULL, 'd'},
	    {"socket", required_argument, NULL, 's'},
	    {"check", required_argument, NULL, 'c'},
	    {"recordings", required_argument, NULL, 'r'},
	    {"debug", no_argument, NULL, 'D'},
	    {"no-confine", no_argument, NULL, 'N'},
	    {"confine-selftest", no_argument, NULL, 'T'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *display = getenv("DISPLAY"), *sock = getenv("BERTH_SOCKET");
	const char *check = "xfce", *recordings = NULL;
	struct desktop d;
	sigset_t waitmask;
	char *cause = NULL;
	int c, debug = 0, confine = 1, report_fd_env, serve_fd_env;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': display = optarg; break;
		case 's': sock = optarg; break;
		case 'c': check = optarg; break;
		case 'r': recordings = optarg; break;
		case 'D': debug = 1; break;
		case 'N': confine = 0; break;
		case 'T':
			if (denylist_install(false, &cause) < 0) {
				printf("install: failed (%s)\n", cause);
				return 1;
			}
			desktop_confined = true;
			return denylist_selftest(false);
		case 'h': desktop_usage(stdout, 0);
		case ':': desktop_bad("%s needs a value", argv[optind - 1]);
		default: desktop_bad("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind != argc)
		desktop_bad("unexpected argument \"%s\"", argv[optind]);
	if (display == NULL || *display == '\0')
		desktop_bad("no display: give --display or set DISPLAY");
	if (*check == '\0' || strlen(check) > DESKTOP_MAX_NAME)
		desktop_bad(
		    "--check wants a name of 1 to %d bytes", DESKTOP_MAX_NAME);
	if (sock != NULL && *sock == '\0')
		sock = NULL;
	log_init("berth-desktop", debug);

	memset(&d, 0, sizeof d);
	report_fd_env = desktop_handed("BERTH_REPORT_FD");
	serve_fd_env = desktop_handed("BERTH_SERVE_FD");
	if ((report_fd_env < 0) != (serve_fd_env < 0))
		desktop_bad("berthd hands both BERTH_REPORT_FD and "
		            "BERTH_SERVE_FD, or neither");
	if (report_fd_env >= 0) {
		d.rp = report_adopt(report_fd_env, check);
		d.sv = serve_adopt(serve_fd_env);
	} else {
		if ((d.rp = report_create(sock, check, &cause)) == NULL)
			desktop_bad("--socket: %s", cause);
		d.sv = serve_create(sock);
	}
	d.xc = xconn_create(display);
	d.display = display;
	d.confine = confine;
	d.capture = capture_create(d.xc);
	d.shot = shot_create(d.xc, d.capture);
	d.screen = screen_create(d.xc, d.shot);
	d.damage = damage_create(d.xc);
	d.input = input_create(d.xc);
	d.record = record_create(d.xc, d.capture, recordings);
	shot_register(d.shot, d.sv);
	screen_register(d.screen, d.sv);
	damage_register(d.damage, d.sv);
	input_register(d.sv, d.input);
	record_register(d.record, d.sv);
	serve_start(d.sv);
	desktop_signals(&waitmask);
	if (sock == NULL && report_fd_env < 0)
		log_info("no socket to berthd: check %s is only logged", check);
	log_info("watching X display %s for check %s", display, check);

	desktop_loop(&d, &waitmask);

	/* A check nobody watches any more is not ok: say so while berthd
	 * still listens, rather than leave it the last verdict. */
	report_last(d.rp, "berth-desktop stopped", DESKTOP_LAST_REPORT_MS);
	log_info("stopped");
	serve_free(d.sv);
	record_free(d.record);
	input_free(d.input);
	damage_free(d.damage);
	screen_free(d.screen);
	shot_free(d.shot);
	capture_free(d.capture);
	xconn_free(d.xc);
	report_free(d.rp);
	return 0;
}
