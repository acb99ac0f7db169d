/* xconn: berth-desktop's connection to the X server, kept open across X
 * server restarts. Owns the Display and Xlib's process-wide handlers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define XCONN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XCONN_ASAN 1
#endif
#endif
#ifdef XCONN_ASAN
#include <sanitizer/lsan_interface.h>
#define XCONN_LEAKS_OFF() __lsan_disable()
#define XCONN_LEAKS_ON() __lsan_enable()
#else
#define XCONN_LEAKS_OFF()
#define XCONN_LEAKS_ON()
#endif

#include "clock.h"
#include "log.h"
#include "xconn.h"
#include "xmalloc.h"

/* The one connection the handlers report to. */
static struct xconn *xconn_current;

/*
 * Inside XOpenDisplay the per-display exit handler cannot be set yet (there
 * is no Display to set it on), so an I/O error there — the server dying
 * between accepting the connection and answering the first requests —
 * would reach _XDefaultIOErrorExit, which calls exit(). For that window
 * alone the I/O error handler jumps back to xconn_open instead.
 */
static jmp_buf xconn_open_jmp;
static volatile bool xconn_opening;
static Display *volatile xconn_half;

/* Displays abandoned half-built by that jump: Xlib cannot free them (they
 * may lack what XCloseDisplay frees), so they are kept, never used. What
 * XOpenDisplay allocated and had not yet linked to the Display (the GC it
 * was making, say) is lost with the jump; a leak checker is told not to
 * count what XOpenDisplay allocates. */
static Display **xconn_abandoned;
static size_t xconn_nabandoned;

static void xconn_set_cause(struct xconn *xc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
xconn_set_cause(struct xconn *xc, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	free(xc->cause);
	xc->cause = xasprintf("X server %s unreachable: %s", xc->name, what);
}

/* Protocol errors are answers, not failures: a window that vanished
 * between two requests is part of watching a desktop. Xlib's default
 * handler would print and exit. */
static int
xconn_error_cb(Display *dpy, XErrorEvent *ev)
{
	(void)dpy;
	if (xconn_current != NULL)
		xconn_current->errors++;
	log_debug("%s: X error %u on request %u.%u (resource 0x%lx)", __func__,
	    ev->error_code, ev->request_code, ev->minor_code, ev->resourceid);
	return 0;
}

/*
 * Xlib calls this on a fatal I/O error (the server closed the connection,
 * or a read or write failed), then the display's exit handler, whose
 * default calls exit(). Returning here is allowed: Xlib has marked the
 * Display with XlibDisplayIOError, and every later call on it fails at
 * once without coming back here. errno still holds the failure; EPIPE, or
 * EAGAIN with nothing left to read, is how a closed connection looks.
 */
static int
xconn_io_error_cb(Display *dpy)
{
	struct xconn *xc = xconn_current;
	int error = errno;

	if (xc != NULL) {
		xc->broken = true;
		if (error == EPIPE || error == EAGAIN || error == ECONNRESET ||
		    error == 0)
			xconn_set_cause(
			    xc, "connection lost (closed by the server)");
		else
			xconn_set_cause(
			    xc, "connection lost (%s)", strerror(error));
	}
	if (xconn_opening) {
		xconn_half = dpy;
		longjmp(xconn_open_jmp, 1);
	}
	return 0;
}

/* Replaces _XDefaultIOErrorExit: the connection is dropped by the next
 * xconn_get, and the process goes on. */
static void
xconn_io_exit_cb(Display *dpy, void *arg)
{
	(void)dpy;
	(void)arg;
}

struct xconn *
xconn_create(const char *name)
{
	struct xconn *xc;

	if (xconn_current != NULL)
		log_fatal("%s: a second X connection", __func__);
	xc = xcalloc(1, sizeof *xc);
	xc->name = xstrdup(name);
	backoff_init(&xc->backoff, XCONN_BACKOFF_MIN_MS, XCONN_BACKOFF_MAX_MS);
	xc->cause =
	    xasprintf("X server %s unreachable: not yet connected", name);
	xconn_current = xc;
	XSetErrorHandler(xconn_error_cb);
	XSetIOErrorHandler(xconn_io_error_cb);
	return xc;
}

static void
xconn_close(struct xconn *xc)
{
	/* Safe on a broken Display too: its I/O error flag makes the
	 * closing requests no-ops, and the memory and socket are freed. */
	if (xc->dpy != NULL)
		XCloseDisplay(xc->dpy);
	xc->dpy = NULL;
	xc->broken = false;
}

void
xconn_free(struct xconn *xc)
{
	xconn_close(xc);
	free(xc->name);
	free(xc->cause);
	free(xc);
	xconn_current = NULL;
}

static void
xconn_failed(struct xconn *xc)
{
	xc->retry_at = clock_mono_ms() + backoff_next(&xc->backoff);
}

/* The jump out of XOpenDisplay: the half-built Display keeps its memory
 * (see xconn_abandoned) but not its socket. */
static void
xconn_abandon(struct xconn *xc)
{
	Display *dpy = xconn_half;

	xconn_half = NULL;
	xc->broken = false;
	log_warn(
	    "X server %s: connection lost while opening the display", xc->name);
	if (dpy == NULL)
		return;
	close(ConnectionNumber(dpy));
	xconn_abandoned = xreallocarray(
	    xconn_abandoned, xconn_nabandoned + 1, sizeof *xconn_abandoned);
	xconn_abandoned[xconn_nabandoned++] = dpy;
}

int
xconn_open(struct xconn *xc, bool *fresh)
{
	Display *dpy;

	*fresh = false;
	if (xconn_get(xc) != NULL)
		return 0;
	if (clock_mono_ms() < xc->retry_at)
		return -1;
	if (setjmp(xconn_open_jmp) != 0) {
		xconn_opening = false;
		XCONN_LEAKS_ON();
		xconn_abandon(xc);
		xconn_failed(xc);
		return -1;
	}
	xconn_opening = true;
	errno = 0;
	XCONN_LEAKS_OFF();
	dpy = XOpenDisplay(xc->name);
	XCONN_LEAKS_ON();
	xconn_opening = false;
	if (dpy == NULL) {
		if (errno != 0)
			xconn_set_cause(
			    xc, "cannot connect (%s)", strerror(errno));
		else
			xconn_set_cause(xc, "cannot connect");
		log_debug("%s: %s", __func__, xc->cause);
		xconn_failed(xc);
		return -1;
	}
	XSetIOErrorExitHandler(dpy, xconn_io_exit_cb, xc);
	xc->dpy = dpy;
	xc->broken = false;
	xc->serial++;
	backoff_reset(&xc->backoff);
	free(xc->cause);
	xc->cause = NULL;
	*fresh = true;
	log_info("connected to X server %s", xc->name);
	return 0;
}

Display *
xconn_get(struct xconn *xc)
{
	if (xc->dpy == NULL)
		return NULL;
	if (!xc->broken)
		return xc->dpy;
	log_warn("%s", xc->cause);
	xconn_close(xc);
	/* The server may be back already (a restart): try at once. */
	xc->retry_at = 0;
	backoff_reset(&xc->backoff);
	return NULL;
}

int
xconn_wait_ms(const struct xconn *xc, uint64_t now)
{
	if (xc->dpy != NULL)
		return -1;
	if (xc->retry_at <= now)
		return 0;
	return (int)(xc->retry_at - now);
}
