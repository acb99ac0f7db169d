/* probe: berth-probe's main loop, its one output line per change of state,
 * and what every check shares: HOST:PORT addresses and URLs, the bearer
 * token (read once, never shown), and socket I/O that never waits past the
 * check's deadline. */
#include <sys/prctl.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backoff.h"
#include "clock.h"
#include "log.h"
#include "nodump.h"
#include "probe.h"
#include "tokenfile.h"
#include "xmalloc.h"

#define PROBE_TIMEOUT_MS 2000
#define PROBE_INTERVAL_MS 1000
#define PROBE_MAX_MS (3600 * 1000)
/* Retries while not ready: from the floor, doubling to the cap. The cap
 * bounds how late a service is seen ready after it really is; a refused
 * connect every 20 ms costs next to nothing. */
#define PROBE_RETRY_MIN_MS 10
#define PROBE_RETRY_MAX_MS 20
/* The longest output line, newline included. */
#define PROBE_LINE_MAX 200

static const struct probe_type *const probe_types[] = {
    &probe_tcp_type,
    &probe_http_type,
    &probe_rfb_type,
    &probe_cdp_type,
    &probe_cdp_ws_type,
    &probe_novnc_type,
};
#define PROBE_NTYPES (sizeof probe_types / sizeof probe_types[0])

/* The token from --token-file, or why there is none: read once at start,
 * whatever the check, and only a check that sends it says it is missing.
 * Both live as long as the program. */
static char *probe_token_value;
static char *probe_token_error;

/* Waits for events on fd (-1: none) until the deadline, returning 1 when
 * they come and 0 at the deadline. berthd reads stdout: when it is gone
 * (the pipe reports an error) nobody is left to tell, so the wait ends
 * the program. */
static int
probe_poll(int fd, short events, uint64_t deadline)
{
	struct pollfd pfd[2];
	uint64_t now, left;
	int n;

	for (;;) {
		now = clock_mono_ms();
		left = deadline > now ? deadline - now : 0;
		pfd[0].fd = fd;
		pfd[0].events = events;
		pfd[0].revents = 0;
		pfd[1].fd = STDOUT_FILENO;
		pfd[1].events = 0;
		pfd[1].revents = 0;
		n = poll(pfd, 2, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			log_fatal("poll: %m");
		if (pfd[1].revents != 0)
			exit(0);
		if (pfd[0].revents != 0)
			return 1;
		if (n == 0 && clock_mono_ms() >= deadline)
			return 0;
	}
}

static void
probe_timed_out(struct probe_io *io, char **cause)
{
	*cause = xasprintf("timeout after %d ms (%s)", io->timeout_ms,
	    io->doing[0] != '\0' ? io->doing : "waiting");
	io->expired = 1;
}

/* Addresses. */

static int
probe_port_parse(const char *s, int *port)
{
	int n = 0;

	if (*s == '\0' || strlen(s) > 5)
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		n = n * 10 + (*s - '0');
	}
	if (n < 1 || n > 65535)
		return -1;
	*port = n;
	return 0;
}

static void
probe_addr_add(struct probe_addr *addr, int family, const void *ip, int port)
{
	struct sockaddr_in *sin;
	struct sockaddr_in6 *sin6;
	struct sockaddr_storage *ss = &addr->sa[addr->nsa];

	memset(ss, 0, sizeof *ss);
	if (family == AF_INET) {
		sin = (struct sockaddr_in *)ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		memcpy(&sin->sin_addr, ip, sizeof sin->sin_addr);
		addr->salen[addr->nsa] = sizeof *sin;
	} else {
		sin6 = (struct sockaddr_in6 *)ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		memcpy(&sin6->sin6_addr, ip, sizeof sin6->sin6_addr);
		addr->salen[addr->nsa] = sizeof *sin6;
	}
	addr->nsa++;
}

/* Fills addr from the host (NUL-terminated, brackets removed). */
static int
probe_addr_host(struct probe_addr *addr, const char *host, bool bracketed,
    int port, char **cause)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (bracketed) {
		if (inet_pton(AF_INET6, host, &a6) != 1) {
			*cause = xasprintf("[%s] is not an IPv6 address", host);
			return -1;
		}
		probe_addr_add(addr, AF_INET6, &a6, port);
	} else if (strcasecmp(host, "localhost") == 0) {
		a4.s_addr = htonl(INADDR_LOOPBACK);
		probe_addr_add(addr, AF_INET, &a4, port);
		probe_addr_add(addr, AF_INET6, &in6addr_loopback, port);
	} else if (inet_pton(AF_INET, host, &a4) == 1)
		probe_addr_add(addr, AF_INET, &a4, port);
	else {
		*cause =
		    xasprintf("%s is not an IP address or localhost (write "
		              "IPv6 addresses in brackets)",
		        host);
		return -1;
	}
	return 0;
}

int
probe_addr_parse(
    struct probe_addr *addr, const char *s, int defport, char **cause)
{
	const char *colon, *close = NULL;
	char *host;
	int port = defport, r;

	memset(addr, 0, sizeof *addr);
	if (*s == '[') {
		if ((close = strchr(s, ']')) == NULL) {
			*cause =
			    xasprintf("%s: no ] after the IPv6 address", s);
			return -1;
		}
		colon = close[1] == ':' ? close + 1 : NULL;
		if (colon == NULL && close[1] != '\0') {
			*cause = xasprintf("%s: junk after the ]", s);
			return -1;
		}
		host = xstrndup(s + 1, (size_t)(close - s - 1));
	} else {
		colon = strrchr(s, ':');
		host = colon == NULL ? xstrdup(s)
		                     : xstrndup(s, (size_t)(colon - s));
	}
	if ((colon != NULL && probe_port_parse(colon + 1, &port) != 0) ||
	    (colon == NULL && defport < 0)) {
		*cause = xasprintf("%s is not HOST:PORT (a port from 1 to "
		                   "65535)",
		    s);
		free(host);
		return -1;
	}
	r = probe_addr_host(addr, host, close != NULL, port, cause);
	if (r == 0) {
		addr->given = xstrdup(s);
		addr->name =
		    xasprintf(close != NULL ? "[%s]:%d" : "%s:%d", host, port);
	}
	free(host);
	return r;
}

void
probe_addr_free(struct probe_addr *addr)
{
	free(addr->given);
	free(addr->name);
	memset(addr, 0, sizeof *addr);
}

int
probe_url_parse(const char *url, const char *scheme, int defport,
    struct probe_addr *addr, char **path, char **cause)
{
	size_t slen = strlen(scheme), pathlen, i;
	const char *auth, *end, *p;
	char *authority;
	int r;

	if (strncasecmp(url, scheme, slen) != 0 ||
	    strncmp(url + slen, "://", 3) != 0) {
		*cause = xasprintf("%s is not a %s:// URL", url, scheme);
		return -1;
	}
	auth = url + slen + 3;
	end = auth + strcspn(auth, "/?#");
	authority = xstrndup(auth, (size_t)(end - auth));
	if (*authority == '\0' || strchr(authority, '@') != NULL) {
		*cause =
		    xasprintf("%s: want %s://HOST[:PORT]/PATH", url, scheme);
		free(authority);
		return -1;
	}
	r = probe_addr_parse(addr, authority, defport, cause);
	free(authority);
	if (r != 0)
		return -1;
	p = end;
	pathlen = strcspn(p, "#");
	for (i = 0; i < pathlen; i++)
		if (p[i] <= ' ' || p[i] >= 0x7f) {
			*cause = xasprintf("%s: spaces and controls must be "
			                   "%%-encoded",
			    url);
			probe_addr_free(addr);
			return -1;
		}
	*path = xasprintf("%s%.*s", *p == '/' ? "" : "/", (int)pathlen, p);
	return 0;
}

/* The bearer token. */

/* Reads the token once, at start, from path or (path NULL) from the
 * inherited descriptor fd, which is closed then; what goes wrong is said
 * by the checks that need the token, as their reason. */
static void
probe_token_read(const char *path, int fd)
{
	size_t len;
	int r;

	probe_free_secret(probe_token_value);
	probe_token_value = NULL;
	free(probe_token_error);
	probe_token_error = NULL;
	if (path != NULL)
		r = tokenfile_read(
		    path, &probe_token_value, &len, &probe_token_error);
	else {
		r = tokenfile_read_fd(fd, "from --token-fd", &probe_token_value,
		    &len, &probe_token_error);
		close(fd);
	}
	if (r < 0)
		probe_token_value = NULL;
}

int
probe_token_needed(char **cause)
{
	if (probe_token_value != NULL || probe_token_error != NULL)
		return 0;
	*cause = xstrdup("sends the token, and there is no --token-file FILE "
	                 "(give it before TYPE)");
	return -1;
}

const char *
probe_token(char **cause)
{
	if (probe_token_value == NULL)
		*cause = xstrdup(probe_token_error != NULL ? probe_token_error
		                                           : "no --token-file");
	return probe_token_value;
}

void
probe_free_secret(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	free(s);
}

void
probe_cause_wrap(char **cause, const char *fmt, ...)
{
	va_list ap;
	char *prefix, *old = *cause;

	va_start(ap, fmt);
	if (vasprintf(&prefix, fmt, ap) == -1)
		log_fatal("vasprintf: %m");
	va_end(ap);
	*cause = xasprintf("%s: %s", prefix, old);
	free(prefix);
	free(old);
}

/* Socket I/O. */

/* One address: 0 connected, else the errno, or ETIMEDOUT at the
 * deadline. */
static int
probe_io_try(struct probe_io *io, const struct sockaddr *sa, socklen_t salen)
{
	socklen_t len = sizeof(int);
	int err = 0;

	io->fd = socket(
	    sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (io->fd == -1)
		return errno;
	if (connect(io->fd, sa, salen) == 0)
		return 0;
	/* Interrupted, a connect goes on by itself: wait for it as well. */
	if (errno != EINPROGRESS && errno != EINTR)
		err = errno;
	else if (probe_poll(io->fd, POLLOUT, io->deadline) == 0)
		err = ETIMEDOUT;
	else if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		err = errno;
	if (err != 0)
		probe_io_close(io);
	return err;
}

int
probe_io_connect(
    struct probe_io *io, const struct probe_addr *addr, char **cause)
{
	int i, err, first = 0;

	io->peer = addr->name;
	snprintf(io->doing, sizeof io->doing, "connecting to %s", addr->name);
	for (i = 0; i < addr->nsa; i++) {
		err = probe_io_try(
		    io, (const struct sockaddr *)&addr->sa[i], addr->salen[i]);
		if (err == 0)
			return 0;
		if (err == ETIMEDOUT) {
			probe_timed_out(io, cause);
			return -1;
		}
		/* localhost: the first address's failure is the one told. */
		if (first == 0)
			first = err;
	}
	*cause = xasprintf("connect %s: %s", addr->name, strerror(first));
	return -1;
}

int
probe_io_write(struct probe_io *io, const void *buf, size_t len, char **cause)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len > 0) {
		n = send(io->fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (probe_poll(io->fd, POLLOUT, io->deadline) == 0) {
				probe_timed_out(io, cause);
				return -1;
			}
			continue;
		}
		if (n < 0) {
			*cause = xasprintf(
			    "write to %s: %s", io->peer, strerror(errno));
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t
probe_io_read(struct probe_io *io, void *buf, size_t len, char **cause)
{
	ssize_t n;

	for (;;) {
		n = recv(io->fd, buf, len, 0);
		if (n >= 0)
			return n;
		if (errno != EAGAIN && errno != EINTR) {
			*cause = xasprintf(
			    "read from %s: %s", io->peer, strerror(errno));
			return -1;
		}
		if (probe_poll(io->fd, POLLIN, io->deadline) == 0) {
			probe_timed_out(io, cause);
			return -1;
		}
	}
}

void
probe_io_close(struct probe_io *io)
{
	if (io->fd != -1)
		close(io->fd);
	io->fd = -1;
}

/* Output. */

/* Writes all of buf to stdout, which berthd made nonblocking. A reader
 * that went away ends the program: nobody is left to tell. */
static void
probe_out(const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(STDOUT_FILENO, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			probe_poll(STDOUT_FILENO, POLLOUT, UINT64_MAX);
			continue;
		}
		if (n <= 0)
			exit(0);
		buf += n;
		len -= (size_t)n;
	}
}

/* "ready", or "unready REASON" with the reason made printable ASCII (it
 * quotes what peers sent) and cut to fit the line. */
static void
probe_say(bool ready, const char *reason)
{
	static const char more[] = "...";
	char line[PROBE_LINE_MAX];
	size_t len, i;

	if (ready) {
		probe_out("ready\n", 6);
		return;
	}
	len = (size_t)snprintf(line, sizeof line, "unready %s", reason);
	if (len > sizeof line - 2) {
		len = sizeof line - 2;
		memcpy(line + len - (sizeof more - 1), more, sizeof more - 1);
	}
	for (i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 ||
		    (unsigned char)line[i] > 0x7e)
			line[i] = '?';
	line[len++] = '\n';
	probe_out(line, len);
}

/* The program. */

static void
probe_signal_cb(int sig)
{
	(void)sig;
	_exit(0);
}

static _Noreturn void
probe_usage(FILE *f, int status)
{
	size_t i;

	fprintf(f,
	    "usage: berth-probe [--token-file FILE | --token-fd N] "
	    "[--timeout MS] "
	    "[--interval MS] [--once] TYPE ARGS...\n");
	for (i = 0; i < PROBE_NTYPES; i++)
		fprintf(f, "  %-6s %s\n", probe_types[i]->name,
		    probe_types[i]->args);
	fprintf(f,
	    "HOST is an IPv4 address, an IPv6 address in brackets, or "
	    "localhost.\nThe token (from FILE or read from N) goes with cdp "
	    "auth, cdp-ws and "
	    "novnc as Authorization: Bearer.\n");
	exit(status);
}

static _Noreturn void probe_bad(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static _Noreturn void
probe_bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "berth-probe: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	probe_usage(stderr, 2);
}

static int
probe_ms(const char *opt, const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v < 1 ||
	    v > PROBE_MAX_MS)
		probe_bad("--%s wants milliseconds from 1 to %d, not \"%s\"",
		    opt, PROBE_MAX_MS, s);
	return (int)v;
}

/* One check, with a deadline of timeout_ms for all of it. If it passed
 * on a connection worth watching, *watched (when given) is that
 * connection, the caller's to close; else -1. */
static int
probe_run(const struct probe_type *type, void *state, int timeout_ms,
    int *watched, char **cause)
{
	struct probe_io io;
	int r;

	memset(&io, 0, sizeof io);
	io.fd = -1;
	io.deadline = clock_mono_ms() + (uint64_t)timeout_ms;
	io.timeout_ms = timeout_ms;
	io.peer = "";
	io.can_watch = watched != NULL;
	r = type->check(state, &io, cause);
	if (watched != NULL)
		*watched = -1;
	if (r == 0 && io.watch && watched != NULL) {
		*watched = io.fd;
		io.fd = -1;
	}
	probe_io_close(&io);
	return r;
}

/*
 * Checks forever. Not ready, it retries soon after each failure, so that
 * a service is seen soon after it opens its port. Ready, it checks every
 * interval (from the start of one check to the next): a failure is news,
 * and sends it back to retrying. A new reason for being unready is news
 * too, so the reason berthd shows is never stale. Between checks it
 * watches the last check's session, if it left one: the component hanging
 * it up means checking again now, so an outage shorter than the interval
 * is still seen. So does the component saying anything at all: a watched
 * session is one where nothing is asked, so what comes is most likely a
 * close (a WebSocket's close frame, whose sender then waits for ours), and
 * at worst an RFB bell or clipboard that costs one check more.
 */
static _Noreturn void
probe_loop(
    const struct probe_type *type, void *state, int timeout_ms, int interval_ms)
{
	uint64_t start, next;
	struct backoff retry;
	char *cause = NULL, *said_cause = NULL;
	int said = -1, watched = -1;
	bool ready;

	backoff_init(&retry, PROBE_RETRY_MIN_MS, PROBE_RETRY_MAX_MS);
	for (;;) {
		if (watched != -1)
			close(watched);
		start = clock_mono_ms();
		ready =
		    probe_run(type, state, timeout_ms, &watched, &cause) == 0;
		if (said != (int)ready ||
		    (!ready &&
		        (said_cause == NULL || cause == NULL ||
		            strcmp(said_cause, cause) != 0)))
			probe_say(ready, cause);
		said = ready;
		free(said_cause);
		said_cause = cause;
		cause = NULL;
		if (ready) {
			next = start + (uint64_t)interval_ms;
			backoff_reset(&retry);
		} else
			next = clock_mono_ms() + backoff_next(&retry);
		probe_poll(watched, POLLIN | POLLRDHUP, next);
	}
}

/* --token-fd N: a descriptor berthd left open, never one of 0-2. */
static int
probe_fd(const char *arg)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(arg, &end, 10);
	if (*arg == '\0' || *end != '\0' || errno != 0 || n < 3 ||
	    n > INT_MAX || fcntl((int)n, F_GETFD) < 0)
		probe_bad("--token-fd %s: not an open descriptor above 2", arg);
	return (int)n;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"interval", required_argument, NULL, 'i'},
	    {"once", no_argument, NULL, 'o'},
	    {"token-file", required_argument, NULL, 'k'},
	    {"token-fd", required_argument, NULL, 'K'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const struct probe_type *type = NULL;
	int timeout_ms = PROBE_TIMEOUT_MS, interval_ms = PROBE_INTERVAL_MS;
	bool once = false, ready;
	char *cause = NULL;
	void *state;
	size_t i;
	int c;

	log_init("berth-probe", 0);
	/* It may hold a credential: no core file, no ptrace by its uid. */
	if (nodump_self(&cause) < 0)
		log_fatal("%s", cause);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, probe_signal_cb);
	signal(SIGINT, probe_signal_cb);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:", longopts, NULL)) != -1) {
		switch (c) {
		case 't': timeout_ms = probe_ms("timeout", optarg); break;
		case 'i': interval_ms = probe_ms("interval", optarg); break;
		case 'o': once = true; break;
		case 'k': probe_token_read(optarg, -1); break;
		case 'K': probe_token_read(NULL, probe_fd(optarg)); break;
		case 'h': probe_usage(stdout, 0);
		case ':': probe_bad("%s needs a value", argv[optind - 1]);
		default: probe_bad("unknown option %s", argv[optind - 1]);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		probe_bad("no TYPE");
	for (i = 0; i < PROBE_NTYPES; i++)
		if (strcmp(argv[0], probe_types[i]->name) == 0)
			type = probe_types[i];
	if (type == NULL)
		probe_bad("unknown TYPE \"%s\"", argv[0]);
	if (argc - 1 < type->minargs || argc - 1 > type->maxargs)
		probe_bad("%s takes %s", type->name, type->args);
	if ((state = type->parse(argc - 1, argv + 1, &cause)) == NULL)
		probe_bad("%s: %s", type->name, cause);

	if (!once)
		probe_loop(type, state, timeout_ms, interval_ms);
	ready = probe_run(type, state, timeout_ms, NULL, &cause) == 0;
	probe_say(ready, cause);
	free(cause);
	type->free(state);
	return ready ? 0 : 1;
}
