/* readiness: watches the readiness of one service (see readiness.h). Owns the
 * berth-probe or exec child, the notify pipe or socket, and the timers. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backoff.h"
#include "child.h"
#include "clock.h"
#include "log.h"
#include "readiness.h"
#include "token.h"
#include "xmalloc.h"

/* Retries while not ready: from the floor, doubling to the cap. */
#define READINESS_RETRY_MIN_MS 10
#define READINESS_RETRY_MAX_MS 250
/* The longest line berth-probe or a notify datagram may send. */
#define READINESS_LINE_MAX 512
#define READINESS_REASON_MAX 200
/* Where berth-probe finds the probe credential (token.h). */
#define READINESS_CRED_FD 3
#define READINESS_CRED_FD_ARG "3"

struct readiness {
	struct event_base *base;
	const struct config_service *cfg;
	const struct config *conf;
	char **args; /* probe_args, {gateway} expanded; owned */
	readiness_cb cb;
	void *arg;

	bool running;         /* between readiness_start and readiness_stop */
	bool ok;              /* the last answer */
	bool told;            /* an answer was given since the start */
	struct backoff retry; /* while not ready */

	int fd;          /* read end: pipe, notify pipe or datagram socket */
	int child_end;   /* the notify pipe's write end until the spawn */
	char *sock_path; /* sd_notify */
	char *env;       /* NOTIFY_SOCKET=... */
	struct event *rev;
	struct event *timer;   /* next check, or the exec deadline */
	struct event *timeout; /* no notification in time */
	pid_t pid;             /* berth-probe or the exec check */
	char line[READINESS_LINE_MAX];
	size_t linelen;
};

static void readiness_exec_run(struct readiness *p);
static void readiness_helper_run(struct readiness *p);

/* Passes a change on; repeats of the same answer are not news. */
static void
readiness_answer(struct readiness *p, bool ok, const char *reason)
{
	if (!p->running || (p->told && ok == p->ok && ok))
		return;
	p->ok = ok;
	p->told = true;
	p->cb(p->arg, ok, ok ? "" : reason);
}

static void
readiness_arm(struct readiness *p, unsigned ms)
{
	struct timeval tv = clock_tv(ms);

	evtimer_add(p->timer, &tv);
}

/* When to look again: soon while not ready, at the interval once ready. */
static unsigned
readiness_next_delay(struct readiness *p)
{
	if (p->ok) {
		backoff_reset(&p->retry);
		return p->cfg->probe_interval_ms;
	}
	return backoff_next(&p->retry);
}

static void
readiness_close_fd(struct readiness *p)
{
	if (p->rev != NULL)
		event_free(p->rev);
	p->rev = NULL;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->linelen = 0;
}

/* Makes text safe for an event: no control bytes, bounded. */
static void
readiness_tame(char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	if (i > READINESS_REASON_MAX)
		s[READINESS_REASON_MAX] = '\0';
}

/* One line from berth-probe: "ready" or "unready REASON". */
static void
readiness_helper_line(struct readiness *p, char *line)
{
	readiness_tame(line);
	if (strcmp(line, "ready") == 0)
		readiness_answer(p, true, "");
	else if (strncmp(line, "unready", 7) == 0)
		readiness_answer(
		    p, false, line[7] == ' ' ? line + 8 : "not ready");
	else
		log_warn("service %s: probe said \"%s\"", p->cfg->name, line);
}

static void
readiness_helper_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct readiness *p = arg;
	char *nl;
	ssize_t n;

	(void)what;
	n = read(fd, p->line + p->linelen, sizeof p->line - 1 - p->linelen);
	if (n <= 0) {
		if (n < 0 && errno == EAGAIN)
			return;
		readiness_close_fd(p);
		return;
	}
	p->linelen += (size_t)n;
	p->line[p->linelen] = '\0';
	while ((nl = strchr(p->line, '\n')) != NULL) {
		*nl = '\0';
		readiness_helper_line(p, p->line);
		p->linelen -= (size_t)(nl + 1 - p->line);
		memmove(p->line, nl + 1, p->linelen + 1);
	}
	if (p->linelen == sizeof p->line - 1) {
		log_warn("service %s: probe line too long", p->cfg->name);
		p->linelen = 0;
	}
}

static void
readiness_helper_exit_cb(pid_t pid, int status, void *arg)
{
	struct readiness *p = arg;

	(void)pid;
	p->pid = 0;
	readiness_close_fd(p);
	if (!p->running)
		return;
	/* berth-probe only ends by mistake: say so and start another. */
	log_warn(
	    "service %s: berth-probe exited (status %d)", p->cfg->name, status);
	readiness_answer(p, false, "the probe exited");
	readiness_arm(p, readiness_next_delay(p));
}

/*
 * arg with "{gateway}" replaced by the address the gateway can be reached
 * at from inside (a wildcard listen address is reached on loopback), so
 * that the checks of the gateway's own relays follow --listen. The caller
 * frees the result.
 */
static char *
readiness_expand(const struct config *conf, const char *arg)
{
	const char *at = strstr(arg, "{gateway}"), *listen = conf->listen;
	char *addr, *out;

	if (at == NULL)
		return xstrdup(arg);
	if (strncmp(listen, "0.0.0.0:", 8) == 0)
		addr = xasprintf("127.0.0.1:%s", listen + 8);
	else if (strncmp(listen, "[::]:", 5) == 0)
		addr = xasprintf("[::1]:%s", listen + 5);
	else
		addr = xstrdup(listen);
	out = xasprintf("%.*s%s%s", (int)(at - arg), arg, addr, at + 9);
	free(addr);
	return out;
}

/* The probe's arguments, expanded once: a NULL-terminated vector that
 * the probe owns. */
static char **
readiness_args(const struct config *conf, const struct config_list *l)
{
	char **v = xcalloc(l->n + 1, sizeof *v);
	size_t i;

	for (i = 0; i < l->n; i++)
		v[i] = readiness_expand(conf, l->v[i]);
	return v;
}

static void
readiness_helper_run(struct readiness *p)
{
	char timeout[16], interval[16], *cause = NULL;
	char *argv[CONFIG_MAX_ARGS + 10];
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	char *path = child_berth_program("berth-probe");
	int pfd[2], cred;
	size_t n = 0, i;

	snprintf(timeout, sizeof timeout, "%u", p->cfg->probe_timeout_ms);
	snprintf(interval, sizeof interval, "%u", p->cfg->probe_interval_ms);
	argv[n++] = path;
	argv[n++] = "--token-fd";
	argv[n++] = READINESS_CRED_FD_ARG;
	argv[n++] = "--timeout";
	argv[n++] = timeout;
	argv[n++] = "--interval";
	argv[n++] = interval;
	argv[n++] = (char *)config_probe_name(p->cfg->probe);
	for (i = 0; p->args[i] != NULL; i++)
		argv[n++] = p->args[i];
	argv[n] = NULL;
	if ((cred = token_probe_fd()) < 0) {
		readiness_answer(p, false, strerror(errno));
		free(path);
		return;
	}
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) != 0) {
		readiness_answer(p, false, strerror(errno));
		close(cred);
		free(path);
		return;
	}
	spec.path = path;
	spec.argv = argv;
	spec.stdout_fd = pfd[1];
	/* The probe parses what the network answers: it runs as the
	 * gateway's user, confined, and holds the probe credential only. */
	spec.extra_fd = cred;
	spec.extra_fd_at = READINESS_CRED_FD;
	spec.confine = spec.set_ids = true;
	spec.uid = p->conf->gateway_uid;
	spec.gid = p->conf->gateway_gid;
	spec.groups = &p->conf->gateway_gid;
	spec.ngroups = 1;
	p->pid = child_spawn(&spec, readiness_helper_exit_cb, p, &cause);
	close(cred);
	close(pfd[1]);
	free(path);
	if (p->pid < 0) {
		p->pid = 0;
		close(pfd[0]);
		log_warn("service %s: %s", p->cfg->name, cause);
		readiness_answer(p, false, cause);
		free(cause);
		readiness_arm(p, READINESS_RETRY_MAX_MS);
		return;
	}
	p->fd = pfd[0];
	p->rev = event_new(
	    p->base, p->fd, EV_READ | EV_PERSIST, readiness_helper_read_cb, p);
	event_add(p->rev, NULL);
}

static void
readiness_exec_exit_cb(pid_t pid, int status, void *arg)
{
	struct readiness *p = arg;
	char reason[64];

	(void)pid;
	p->pid = 0;
	evtimer_del(p->timer);
	if (!p->running)
		return;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		readiness_answer(p, true, "");
	else {
		if (WIFSIGNALED(status))
			snprintf(reason, sizeof reason,
			    "check killed by signal %d%s", WTERMSIG(status),
			    WTERMSIG(status) == SIGKILL ? " (timeout)" : "");
		else
			snprintf(reason, sizeof reason,
			    "check exited with status %d", WEXITSTATUS(status));
		readiness_answer(p, false, reason);
	}
	readiness_arm(p, readiness_next_delay(p));
}

static void
readiness_exec_run(struct readiness *p)
{
	struct child_spec spec = {.stdout_fd = -1, .extra_fd = -1};
	char *cause = NULL;

	spec.path = p->args[0];
	spec.argv = p->args;
	p->pid = child_spawn(&spec, readiness_exec_exit_cb, p, &cause);
	if (p->pid < 0) {
		p->pid = 0;
		readiness_answer(p, false, cause);
		free(cause);
		readiness_arm(p, readiness_next_delay(p));
		return;
	}
	/* The timer now stands for the deadline of this check. */
	readiness_arm(p, p->cfg->probe_timeout_ms);
}

static void
readiness_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct readiness *p = arg;

	(void)fd;
	(void)what;
	if (!p->running)
		return;
	if (p->cfg->probe == CONFIG_PROBE_EXEC) {
		if (p->pid > 0)
			kill(-p->pid, SIGKILL);
		else
			readiness_exec_run(p);
	} else if (p->pid == 0)
		readiness_helper_run(p);
}

static void
readiness_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct readiness *p = arg;
	char reason[96];

	(void)fd;
	(void)what;
	if (p->running && !p->told) {
		snprintf(reason, sizeof reason,
		    "no %s notification within %u ms",
		    config_probe_name(p->cfg->probe), p->cfg->probe_timeout_ms);
		p->cb(p->arg, false, reason);
	}
}

/* Whether an sd_notify datagram (newline-separated assignments) holds
 * the line READY=1. */
static bool
readiness_sd_ready(char *msg)
{
	char *line, *save = NULL;

	for (line = strtok_r(msg, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		if (strcmp(line, "READY=1") == 0)
			return true;
	return false;
}

/* The service's word: a newline on the notify fd, or READY=1 in a
 * datagram on the notify socket. */
static void
readiness_notify_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct readiness *p = arg;
	char buf[READINESS_LINE_MAX + 1];
	ssize_t n;

	(void)what;
	n = read(fd, buf, sizeof buf - 1);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		/* The service closed its end; its exit will tell the rest. */
		if (p->cfg->probe == CONFIG_PROBE_NOTIFY_FD)
			readiness_close_fd(p);
		return;
	}
	buf[n] = '\0';
	if (p->cfg->probe == CONFIG_PROBE_NOTIFY_FD
	        ? memchr(buf, '\n', (size_t)n) != NULL
	        : readiness_sd_ready(buf))
		readiness_answer(p, true, "");
}

struct readiness *
readiness_new(struct event_base *base, const struct config_service *cfg,
    const struct config *conf, readiness_cb cb, void *arg)
{
	struct readiness *p = xcalloc(1, sizeof *p);

	p->base = base;
	p->cfg = cfg;
	p->conf = conf;
	p->args = readiness_args(conf, &cfg->probe_args);
	p->cb = cb;
	p->arg = arg;
	p->fd = p->child_end = -1;
	backoff_init(&p->retry, READINESS_RETRY_MIN_MS, READINESS_RETRY_MAX_MS);
	p->timer = evtimer_new(base, readiness_timer_cb, p);
	p->timeout = evtimer_new(base, readiness_timeout_cb, p);
	return p;
}

static int
readiness_prepare_socket(
    struct readiness *p, const struct child_spec *spec, char **cause)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char *dir = xasprintf("%s/notify", p->conf->state_dir);
	int fd;

	/* Searchable, not listable: each socket is its service's alone. */
	if ((mkdir(dir, 0711) != 0 && errno != EEXIST) ||
	    chmod(dir, 0711) != 0) {
		*cause = xasprintf("mkdir %s: %s", dir, strerror(errno));
		free(dir);
		return -1;
	}
	free(p->sock_path);
	p->sock_path = xasprintf("%s/%s", dir, p->cfg->name);
	free(dir);
	if (strlen(p->sock_path) >= sizeof sun.sun_path) {
		*cause = xasprintf("%s: path too long", p->sock_path);
		return -1;
	}
	strcpy(sun.sun_path, p->sock_path);
	unlink(p->sock_path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
		*cause = xasprintf(
		    "notify socket %s: %s", p->sock_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* A service running as another user must be able to send. */
	if (spec->set_ids && chown(p->sock_path, spec->uid, spec->gid) != 0)
		log_warn("notify socket %s: chown: %s", p->sock_path,
		    strerror(errno));
	p->fd = fd;
	free(p->env);
	p->env = xasprintf("NOTIFY_SOCKET=%s", p->sock_path);
	return 0;
}

int
readiness_prepare(struct readiness *p, struct child_spec *spec,
    const char **env, char **cause)
{
	int pfd[2];

	*env = NULL;
	switch (p->cfg->probe) {
	case CONFIG_PROBE_NOTIFY_FD:
		if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) != 0) {
			*cause = xasprintf("pipe: %s", strerror(errno));
			return -1;
		}
		p->fd = pfd[0];
		p->child_end = pfd[1];
		spec->extra_fd = pfd[1];
		spec->extra_fd_at = p->cfg->notify_fd;
		return 0;
	case CONFIG_PROBE_SD_NOTIFY:
		if (readiness_prepare_socket(p, spec, cause) < 0)
			return -1;
		*env = p->env;
		return 0;
	default: return 0;
	}
}

void
readiness_start(struct readiness *p, bool spawned)
{
	struct timeval tv = clock_tv(p->cfg->probe_timeout_ms);

	if (p->child_end >= 0)
		close(p->child_end);
	p->child_end = -1;
	if (!spawned) {
		readiness_close_fd(p);
		return;
	}
	p->running = true;
	p->told = p->ok = false;
	backoff_reset(&p->retry);
	switch (p->cfg->probe) {
	case CONFIG_PROBE_NONE: readiness_answer(p, true, ""); break;
	case CONFIG_PROBE_NOTIFY_FD:
	case CONFIG_PROBE_SD_NOTIFY:
		p->rev = event_new(p->base, p->fd, EV_READ | EV_PERSIST,
		    readiness_notify_read_cb, p);
		event_add(p->rev, NULL);
		evtimer_add(p->timeout, &tv);
		break;
	case CONFIG_PROBE_REPORT: evtimer_add(p->timeout, &tv); break;
	case CONFIG_PROBE_EXEC: readiness_exec_run(p); break;
	default: readiness_helper_run(p); break;
	}
}

void
readiness_stop(struct readiness *p)
{
	p->running = false;
	evtimer_del(p->timer);
	evtimer_del(p->timeout);
	if (p->pid > 0) {
		/* Its exit is still reaped, by a callback that sees !running.
		 */
		kill(-p->pid, SIGKILL);
	}
	readiness_close_fd(p);
	if (p->child_end >= 0)
		close(p->child_end);
	p->child_end = -1;
	if (p->sock_path != NULL)
		unlink(p->sock_path);
}

int
readiness_report(struct readiness *p, bool ok, const char *reason)
{
	char buf[READINESS_REASON_MAX + 1];

	if (p->cfg->probe != CONFIG_PROBE_REPORT)
		return -1;
	snprintf(buf, sizeof buf, "%s", ok ? "" : reason);
	readiness_tame(buf);
	if (!ok && buf[0] == '\0')
		snprintf(buf, sizeof buf, "reported not ready");
	readiness_answer(p, ok, buf);
	return 0;
}

void
readiness_free(struct readiness *p)
{
	readiness_stop(p);
	if (p->pid > 0)
		child_forget(p->pid);
	event_free(p->timer);
	event_free(p->timeout);
	free(p->sock_path);
	free(p->env);
	child_strv_free(p->args);
	free(p);
}
