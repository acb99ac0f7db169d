/* config: berthd's configuration file, a small INI dialect. Owns the
 * parsing of the file and the defaults; see config.h for the grammar. */
#include <ctype.h>
#include <signal.h>
#include <stddef.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "signame.h"
#include "xmalloc.h"

/* A config file larger than this is surely not one. */
#define CONFIG_MAX_FILE (1024 * 1024)

enum config_section {
	CONFIG_SEC_NONE,
	CONFIG_SEC_BERTHD,
	CONFIG_SEC_GATEWAY,
	CONFIG_SEC_JOURNAL,
	CONFIG_SEC_LABELS,
	CONFIG_SEC_SERVICE,
	CONFIG_SEC_RUNTIME,
};

struct config_parser {
	struct config *cfg;
	const char *name;
	int line;
	enum config_section sec;
	struct config_service *svc;
	struct config_runtime *rt;
	char *cause;
};

static int __attribute__((format(printf, 2, 3)))
config_fail(struct config_parser *p, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		log_fatal("out of memory");
	va_end(ap);
	p->cause = xasprintf("%s:%d: %s", p->name, p->line, msg);
	free(msg);
	return -1;
}

void
config_init(struct config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->state_dir = xstrdup("/var/lib/berth");
	cfg->listen = xstrdup("127.0.0.1:7100");
	cfg->grant_max_ttl_s = CONFIG_DEFAULT_GRANT_TTL_S;
	cfg->gateway_command = xstrdup("berth-gateway");
	cfg->gateway_user = xstrdup(CONFIG_GATEWAY_USER);
	cfg->client_queue = 8u << 20;
	cfg->client_stall_ms = 10000;
	cfg->journal_max_bytes = 64u << 20;
	cfg->journal_segment_bytes = 4u << 20;
	/* tini's and dumb-init's: what a shell or a terminal sends to reload,
	 * to ask for status, or to say the window changed. */
	cfg->forward_signals = CONFIG_SIGBIT(SIGHUP) | CONFIG_SIGBIT(SIGUSR1) |
	    CONFIG_SIGBIT(SIGUSR2) | CONFIG_SIGBIT(SIGWINCH);
	cfg->retry_failed_ms = CONFIG_RETRY_FAILED_MS;
	cfg->cgroups = true;
	cfg->ports = CONFIG_PORTS_AUTO;
}

int
config_parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;
	unsigned shift = 0;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'K':
	case 'k':
		shift = 10;
		end++;
		break;
	case 'M':
	case 'm':
		shift = 20;
		end++;
		break;
	case 'G':
	case 'g':
		shift = 30;
		end++;
		break;
	default: return -1;
	}
	if (*end != '\0' || v > (SIZE_MAX >> shift))
		return -1;
	*out = (size_t)v << shift;
	return 0;
}

static int
config_parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "yes") == 0 || strcmp(s, "true") == 0 ||
	    strcmp(s, "1") == 0)
		*out = true;
	else if (strcmp(s, "no") == 0 || strcmp(s, "false") == 0 ||
	    strcmp(s, "0") == 0)
		*out = false;
	else
		return -1;
	return 0;
}

static int
config_parse_ms(const char *s, unsigned *out)
{
	size_t v;

	if (config_parse_size(s, &v) < 0 || v > 24u * 3600 * 1000 ||
	    strpbrk(s, "KkMmGg") != NULL)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* Splits a command line into a NULL-terminated argv, honouring '...',
 * "..." and backslash escapes (outside quotes and inside "..."). */
static int
config_split(struct config_parser *p, const char *s, char ***argvp)
{
	char **argv = xcalloc(CONFIG_MAX_ARGS + 1, sizeof *argv);
	char *word = xmalloc(strlen(s) + 1);
	size_t argc = 0, n;
	int err = 0;

	while (*s != '\0' && err == 0) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0')
			break;
		n = 0;
		while (*s != '\0' && *s != ' ' && *s != '\t' && err == 0) {
			char q = *s;
			if (q == '\'' || q == '"') {
				s++;
				while (*s != '\0' && *s != q) {
					if (q == '"' && *s == '\\' &&
					    s[1] != '\0')
						s++;
					word[n++] = *s++;
				}
				if (*s != q)
					err = config_fail(p,
					    "unterminated %c quote in command",
					    q);
				else
					s++;
			} else {
				if (*s == '\\' && s[1] != '\0')
					s++;
				word[n++] = *s++;
			}
		}
		if (err == 0 && argc == CONFIG_MAX_ARGS)
			err =
			    config_fail(p, "command has more than %d arguments",
			        CONFIG_MAX_ARGS);
		if (err == 0)
			argv[argc++] = xstrndup(word, n);
	}
	free(word);
	if (err == 0 && argc == 0)
		err = config_fail(p, "empty command");
	if (err != 0) {
		for (n = 0; n < argc; n++)
			free(argv[n]);
		free(argv);
		return -1;
	}
	*argvp = argv;
	return 0;
}

static int
config_set_str(struct config_parser *p, char **dst, const char *val)
{
	if (*val == '\0')
		return config_fail(p, "empty value");
	free(*dst);
	*dst = xstrdup(val);
	return 0;
}

static int
config_set_size(
    struct config_parser *p, size_t *dst, const char *val, size_t min)
{
	if (config_parse_size(val, dst) < 0 || *dst < min)
		return config_fail(p,
		    "\"%s\" is not a size of at least %zu "
		    "bytes (like 512K, 8M or 1G)",
		    val, min);
	return 0;
}

/* Whether val is ADDR:PORT with a port in 1-65535; the address itself is
 * the gateway's to resolve. */
static bool
config_valid_listen(const char *val)
{
	const char *colon = strrchr(val, ':');
	char *end;
	long port;

	if (colon == NULL || colon == val || colon[1] == '\0')
		return false;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	return *end == '\0' && errno == 0 && port >= 1 && port <= 65535;
}

static void config_list_take(struct config_list *l, char **v);
static void config_list_free(struct config_list *l);

/* Signals berthd cannot pass on: its own (shutdown, reaping, its writes
 * to closed sockets), the two no one can catch, and the faults the kernel
 * raises in the process that caused them. */
static bool
config_forwardable(int sig)
{
	static const int own[] = {SIGTERM, SIGINT, SIGCHLD, SIGPIPE, SIGKILL,
	    SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
	size_t i;

	for (i = 0; i < sizeof own / sizeof own[0]; i++)
		if (sig == own[i])
			return false;
	return sig >= 1 && sig <= 64;
}

/* forward_signals = SIG... | none */
static int
config_forward_signals(struct config_parser *p, const char *val)
{
	struct config_list w;
	uint64_t set = 0;
	char **v;
	size_t i;
	int sig, err = 0;

	if (strcmp(val, "none") == 0) {
		p->cfg->forward_signals = 0;
		return 0;
	}
	if (config_split(p, val, &v) < 0)
		return -1;
	config_list_take(&w, v);
	for (i = 0; i < w.n && err == 0; i++) {
		if (signame_parse(w.v[i], &sig) < 0)
			err = config_fail(p,
			    "forward_signals: \"%s\" is not a signal "
			    "(" SIGNAME_LIST " or a number)",
			    w.v[i]);
		else if (!config_forwardable(sig))
			err = config_fail(p,
			    "forward_signals: berthd keeps %s for itself "
			    "(TERM, "
			    "INT, CHLD, PIPE, KILL, STOP and the faults are "
			    "never passed on)",
			    w.v[i]);
		else
			set |= CONFIG_SIGBIT(sig);
	}
	if (err == 0 && w.n == 0)
		err = config_fail(p, "forward_signals wants signals or none");
	config_list_free(&w);
	if (err == 0)
		p->cfg->forward_signals = set;
	return err;
}

bool
config_forwards(const struct config *cfg, int sig)
{
	return sig >= 1 && sig <= 64 &&
	    (cfg->forward_signals & CONFIG_SIGBIT(sig)) != 0;
}

/* retry_failed_ms = 0 (never) or at least CONFIG_MIN_RETRY_FAILED_MS:
 * a retry is a fresh start after the service proved it cannot run, not
 * one more restart, so it must not come as often as one. */
static int
config_retry_ms(struct config_parser *p, const char *val, unsigned *out)
{
	unsigned ms;

	if (config_parse_ms(val, &ms) < 0 ||
	    (ms != 0 && ms < CONFIG_MIN_RETRY_FAILED_MS))
		return config_fail(p,
		    "retry_failed_ms must be 0 (never) or %u-86400000 "
		    "milliseconds",
		    CONFIG_MIN_RETRY_FAILED_MS);
	*out = ms;
	return 0;
}

static int
config_ports(struct config_parser *p, const char *val, enum config_ports *out)
{
	static const char *const names[] = {
	    [CONFIG_PORTS_AUTO] = "auto",
	    [CONFIG_PORTS_PROC] = "proc",
	    [CONFIG_PORTS_OFF] = "off",
	};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(val, names[i]) == 0) {
			*out = (enum config_ports)i;
			return 0;
		}
	return config_fail(p, "ports must be auto, proc or off");
}

static int
config_key_berthd(struct config_parser *p, const char *key, const char *val)
{
	struct config *c = p->cfg;

	if (strcmp(key, "state_dir") == 0)
		return config_set_str(p, &c->state_dir, val);
	if (strcmp(key, "token_file") == 0)
		return config_set_str(p, &c->token_file, val);
	if (strcmp(key, "socket") == 0)
		return config_set_str(p, &c->socket, val);
	if (strcmp(key, "forward_signals") == 0)
		return config_forward_signals(p, val);
	if (strcmp(key, "retry_failed_ms") == 0)
		return config_retry_ms(p, val, &c->retry_failed_ms);
	if (strcmp(key, "cgroups") == 0) {
		if (strcmp(val, "auto") != 0 && strcmp(val, "off") != 0)
			return config_fail(p, "cgroups must be auto or off");
		c->cgroups = strcmp(val, "auto") == 0;
		return 0;
	}
	if (strcmp(key, "ports") == 0)
		return config_ports(p, val, &c->ports);
	return config_fail(p, "unknown key \"%s\" in [berthd]", key);
}

/* The [gateway] keys whose value is an ADDR:PORT to connect to. */
static char **
config_gateway_addr(struct config *c, const char *key)
{
	if (strcmp(key, "vnc") == 0)
		return &c->vnc;
	if (strcmp(key, "cdp") == 0)
		return &c->cdp;
	if (strcmp(key, "cdp_relay_listen") == 0)
		return &c->cdp_relay_listen;
	if (strcmp(key, "preview_listen") == 0)
		return &c->preview_listen;
	return NULL;
}

/* A link's base: http:// or https://, a host, no query, no fragment,
 * no trailing slash (one is dropped), at most CONFIG_MAX_URL bytes. */
static int
config_set_url(
    struct config_parser *p, char **dst, const char *key, const char *val)
{
	const char *host = strstr(val, "://");
	size_t n = strlen(val);

	if ((strncmp(val, "http://", 7) != 0 &&
	        strncmp(val, "https://", 8) != 0) ||
	    n > CONFIG_MAX_URL || strpbrk(val, "?#\"' \t<>") != NULL ||
	    host[3] == '\0' || host[3] == '/')
		return config_fail(p,
		    "%s \"%s\" is not an http:// or https:// URL of at most "
		    "%d bytes with a host, and no query, fragment, quote or "
		    "blank",
		    key, val, CONFIG_MAX_URL);
	if (config_set_str(p, dst, val) < 0)
		return -1;
	if (n > 0 && (*dst)[n - 1] == '/')
		(*dst)[n - 1] = '\0';
	return 0;
}

/* preview_domain: a DNS name, the previews' host names are PORT-KEY. and
 * it, so each label is letters, digits and '-', and the whole a name. */
static int
config_set_domain(struct config_parser *p, char **dst, const char *val)
{
	const char *s;
	size_t label = 0;

	for (s = val; *s != '\0'; s++) {
		if (*s == '.') {
			if (label == 0)
				break;
			label = 0;
		} else if ((isalnum((unsigned char)*s) || *s == '-') &&
		    ++label <= 63)
			continue;
		else
			break;
	}
	if (*s != '\0' || label == 0 || s - val > CONFIG_MAX_DOMAIN)
		return config_fail(p,
		    "preview_domain \"%s\" is not a DNS name of at most %d "
		    "bytes",
		    val, CONFIG_MAX_DOMAIN);
	return config_set_str(p, dst, val);
}

static int
config_key_grants(struct config_parser *p, const char *key, const char *val)
{
	struct config *c = p->cfg;
	size_t v;

	if (strcmp(key, "public_url") == 0)
		return config_set_url(p, &c->public_url, key, val);
	if (strcmp(key, "preview_url") == 0)
		return config_set_url(p, &c->preview_url, key, val);
	if (strcmp(key, "preview_domain") == 0)
		return config_set_domain(p, &c->preview_domain, val);
	if (strcmp(key, "grant_max_ttl_s") == 0) {
		if (config_parse_size(val, &v) < 0 || v < 1 ||
		    v > CONFIG_MAX_GRANT_TTL_S ||
		    strpbrk(val, "KkMmGg") != NULL)
			return config_fail(p,
			    "grant_max_ttl_s must be 1-%u seconds",
			    CONFIG_MAX_GRANT_TTL_S);
		c->grant_max_ttl_s = (unsigned)v;
		return 0;
	}
	return 1;
}

static int
config_key_gateway(struct config_parser *p, const char *key, const char *val)
{
	struct config *c = p->cfg;
	char **addr;
	int rc;

	if (strcmp(key, "listen") == 0) {
		if (!config_valid_listen(val))
			return config_fail(p,
			    "listen \"%s\" is not ADDR:PORT "
			    "with a port in 1-65535",
			    val);
		return config_set_str(p, &c->listen, val);
	}
	if (strcmp(key, "client_queue") == 0)
		return config_set_size(p, &c->client_queue, val, 64 * 1024);
	if (strcmp(key, "client_stall_ms") == 0) {
		if (config_parse_ms(val, &c->client_stall_ms) < 0 ||
		    c->client_stall_ms == 0)
			return config_fail(p,
			    "client_stall_ms must be 1-86400000 milliseconds");
		return 0;
	}
	if (strcmp(key, "command") == 0)
		return config_set_str(p, &c->gateway_command, val);
	if (strcmp(key, "user") == 0)
		return config_set_str(p, &c->gateway_user, val);
	if (strcmp(key, "novnc_dir") == 0)
		return config_set_str(p, &c->novnc_dir, val);
	if (strcmp(key, "vnc") == 0 && strncmp(val, "unix:", 5) == 0) {
		if (val[5] != '/' || strlen(val + 5) >= CONFIG_MAX_SOCKET)
			return config_fail(p,
			    "vnc \"%s\" is not unix:PATH with PATH absolute "
			    "and under %d bytes",
			    val, CONFIG_MAX_SOCKET);
		return config_set_str(p, &c->vnc, val);
	}
	if ((addr = config_gateway_addr(c, key)) != NULL) {
		if (!config_valid_listen(val))
			return config_fail(p,
			    "%s \"%s\" is not ADDR:PORT "
			    "with a port in 1-65535",
			    key, val);
		return config_set_str(p, addr, val);
	}
	if ((rc = config_key_grants(p, key, val)) <= 0)
		return rc;
	return config_fail(p, "unknown key \"%s\" in [gateway]", key);
}

static int
config_key_journal(struct config_parser *p, const char *key, const char *val)
{
	struct config *c = p->cfg;

	if (strcmp(key, "max_bytes") == 0)
		return config_set_size(
		    p, &c->journal_max_bytes, val, 64 * 1024);
	if (strcmp(key, "segment_bytes") == 0)
		return config_set_size(
		    p, &c->journal_segment_bytes, val, 16 * 1024);
	if (strcmp(key, "sync") == 0) {
		if (config_parse_bool(val, &c->journal_sync) < 0)
			return config_fail(p, "sync must be yes or no");
		return 0;
	}
	return config_fail(p, "unknown key \"%s\" in [journal]", key);
}

static bool
config_valid_name(const char *s, size_t max, const char *extra)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL)
			return false;
	return true;
}

static int
config_key_label(struct config_parser *p, const char *key, const char *val)
{
	struct config *c = p->cfg;
	size_t i;

	if (!config_valid_name(key, CONFIG_MAX_LABEL, "._-/"))
		return config_fail(p,
		    "label key \"%s\" must be 1-%d of "
		    "A-Z a-z 0-9 . _ - /",
		    key, CONFIG_MAX_LABEL);
	if (strlen(val) > CONFIG_MAX_LABEL)
		return config_fail(
		    p, "label value longer than %d bytes", CONFIG_MAX_LABEL);
	for (i = 0; i < c->nlabels; i++)
		if (strcmp(c->labels[i].key, key) == 0)
			return config_fail(p, "label \"%s\" set twice", key);
	if (c->nlabels == CONFIG_MAX_LABELS)
		return config_fail(p, "more than %d labels", CONFIG_MAX_LABELS);
	c->labels[c->nlabels].key = xstrdup(key);
	c->labels[c->nlabels].value = xstrdup(val);
	c->nlabels++;
	return 0;
}

static const char *const config_probe_names[] = {
    [CONFIG_PROBE_NONE] = "none",
    [CONFIG_PROBE_TCP] = "tcp",
    [CONFIG_PROBE_HTTP] = "http",
    [CONFIG_PROBE_RFB] = "rfb",
    [CONFIG_PROBE_CDP] = "cdp",
    [CONFIG_PROBE_CDP_WS] = "cdp-ws",
    [CONFIG_PROBE_NOVNC] = "novnc",
    [CONFIG_PROBE_NOTIFY_FD] = "notify-fd",
    [CONFIG_PROBE_SD_NOTIFY] = "sd_notify",
    [CONFIG_PROBE_EXEC] = "exec",
    [CONFIG_PROBE_REPORT] = "report",
};
#define CONFIG_NPROBES (sizeof config_probe_names / sizeof *config_probe_names)

const char *
config_probe_name(enum config_probe probe)
{
	return config_probe_names[probe];
}

/* How many arguments each probe type takes after its name: min, max. */
static const unsigned config_probe_arity[][2] = {
    [CONFIG_PROBE_NONE] = {0, 0},
    [CONFIG_PROBE_TCP] = {1, 1},
    [CONFIG_PROBE_HTTP] = {1, 3},
    [CONFIG_PROBE_RFB] = {1, 2},
    [CONFIG_PROBE_CDP] = {1, 2},
    [CONFIG_PROBE_CDP_WS] = {1, 1},
    [CONFIG_PROBE_NOVNC] = {1, 1},
    [CONFIG_PROBE_NOTIFY_FD] = {1, 1},
    [CONFIG_PROBE_SD_NOTIFY] = {0, 0},
    [CONFIG_PROBE_EXEC] = {1, CONFIG_MAX_ARGS - 1},
    [CONFIG_PROBE_REPORT] = {0, 0},
};

static void
config_list_free(struct config_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Takes a NULL-terminated vector from config_split as list l. */
static void
config_list_take(struct config_list *l, char **v)
{
	l->v = v;
	for (l->n = 0; v[l->n] != NULL; l->n++)
		;
}

static int
config_service_ready(
    struct config_parser *p, struct config_service *s, const char *val)
{
	size_t t;
	char **v;
	char *end;
	long fd;

	if (s->probe != CONFIG_PROBE_NONE || s->probe_args.v != NULL)
		return config_fail(p, "ready set twice");
	if (config_split(p, val, &v) < 0)
		return -1;
	for (t = 1; t < CONFIG_NPROBES; t++)
		if (strcmp(v[0], config_probe_names[t]) == 0)
			break;
	/* The list keeps what follows the type. */
	free(v[0]);
	config_list_take(&s->probe_args, v + 1);
	s->probe_args.v = memmove(v, v + 1, (s->probe_args.n + 1) * sizeof *v);
	if (t == CONFIG_NPROBES)
		return config_fail(p,
		    "unknown readiness probe \"%s\" (tcp, http, "
		    "rfb, cdp, cdp-ws, novnc, notify-fd, sd_notify, exec, "
		    "report)",
		    val);
	s->probe = (enum config_probe)t;
	if (s->probe_args.n < config_probe_arity[t][0] ||
	    s->probe_args.n > config_probe_arity[t][1])
		return config_fail(p,
		    "ready = %s takes %u to %u arguments, not %zu",
		    config_probe_names[t], config_probe_arity[t][0],
		    config_probe_arity[t][1], s->probe_args.n);
	if (s->probe == CONFIG_PROBE_CDP && s->probe_args.n == 2 &&
	    strcmp(s->probe_args.v[1], "auth") != 0)
		return config_fail(p,
		    "ready = cdp HOST:PORT [auth]: \"%s\" "
		    "is not \"auth\"",
		    s->probe_args.v[1]);
	if (s->check &&
	    (s->probe == CONFIG_PROBE_NOTIFY_FD ||
	        s->probe == CONFIG_PROBE_SD_NOTIFY))
		return config_fail(p,
		    "a check has no process to notify; "
		    "ready = %s is for services",
		    config_probe_names[t]);
	if (s->probe == CONFIG_PROBE_NOTIFY_FD) {
		errno = 0;
		fd = strtol(s->probe_args.v[0], &end, 10);
		if (*end != '\0' || errno != 0 || fd < 3 || fd > 255)
			return config_fail(
			    p, "notify-fd wants an fd number in 3-255");
		s->notify_fd = (int)fd;
	}
	return 0;
}

/* The keys of a service whose value is milliseconds. */
static unsigned *
config_service_ms(struct config_service *s, const char *key)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
	    {"backoff_min_ms", offsetof(struct config_service, backoff_min_ms)},
	    {"backoff_max_ms", offsetof(struct config_service, backoff_max_ms)},
	    {"backoff_reset_ms",
	        offsetof(struct config_service, backoff_reset_ms)},
	    {"death_window_ms",
	        offsetof(struct config_service, death_window_ms)},
	    {"stop_timeout_ms",
	        offsetof(struct config_service, stop_timeout_ms)},
	    {"ready_timeout_ms",
	        offsetof(struct config_service, probe_timeout_ms)},
	    {"ready_interval_ms",
	        offsetof(struct config_service, probe_interval_ms)},
	};
	size_t i;

	for (i = 0; i < sizeof keys / sizeof *keys; i++)
		if (strcmp(key, keys[i].key) == 0)
			return (unsigned *)((char *)s + keys[i].off);
	return NULL;
}

static int
config_service_list(struct config_parser *p, struct config_list *l,
    const char *key, const char *val)
{
	char **v;

	if (l->v != NULL)
		return config_fail(p, "%s set twice", key);
	if (config_split(p, val, &v) < 0)
		return -1;
	config_list_take(l, v);
	return 0;
}

/* Adds one env = KEY=VALUE line to env. */
static int
config_env_add(
    struct config_parser *p, struct config_list *env, const char *val)
{
	const char *eq = strchr(val, '=');

	if (eq == NULL || eq == val ||
	    strcspn(val, "= \t") != (size_t)(eq - val))
		return config_fail(p, "env wants KEY=VALUE");
	if (env->n == CONFIG_MAX_ENV)
		return config_fail(p, "more than %d env lines", CONFIG_MAX_ENV);
	env->v = xreallocarray(env->v, env->n + 2, sizeof *env->v);
	env->v[env->n++] = xstrdup(val);
	env->v[env->n] = NULL;
	return 0;
}

static int
config_service_env(
    struct config_parser *p, struct config_service *s, const char *val)
{
	return config_env_add(p, &s->env, val);
}

static int
config_service_flag(
    struct config_parser *p, bool *dst, const char *key, const char *val)
{
	if (config_parse_bool(val, dst) < 0)
		return config_fail(p, "%s must be yes or no", key);
	return 0;
}

static int
config_parse_restart(
    struct config_parser *p, enum config_restart *restart, const char *val)
{
	if (strcmp(val, "always") == 0)
		*restart = CONFIG_RESTART_ALWAYS;
	else if (strcmp(val, "on-failure") == 0)
		*restart = CONFIG_RESTART_ON_FAILURE;
	else if (strcmp(val, "never") == 0)
		*restart = CONFIG_RESTART_NEVER;
	else
		return config_fail(p,
		    "restart must be always, on-failure or "
		    "never");
	return 0;
}

static int
config_service_deaths(
    struct config_parser *p, struct config_service *s, const char *val)
{
	size_t n;

	if (strcmp(val, "unlimited") == 0) {
		s->max_deaths = 0;
		return 0;
	}
	if (config_parse_size(val, &n) < 0 || n < 1 || n > 1000 ||
	    strpbrk(val, "KkMmGg") != NULL)
		return config_fail(p, "max_deaths must be 1-1000 or unlimited");
	s->max_deaths = (unsigned)n;
	return 0;
}

static int
config_service_retry(
    struct config_parser *p, struct config_service *s, const char *val)
{
	if (config_retry_ms(p, val, &s->retry_failed_ms) < 0)
		return -1;
	s->retry_failed_set = true;
	return 0;
}

/* exit_codes_ok = CODE... (0-255), replacing the default 0. */
static int
config_service_exit_ok(
    struct config_parser *p, struct config_service *s, const char *val)
{
	uint64_t ok[4] = {0, 0, 0, 0};
	struct config_list w;
	char **v, *end;
	size_t i;
	long code;
	int err = 0;

	if (config_split(p, val, &v) < 0)
		return -1;
	config_list_take(&w, v);
	for (i = 0; i < w.n && err == 0; i++) {
		errno = 0;
		code = strtol(w.v[i], &end, 10);
		if (!isdigit((unsigned char)w.v[i][0]) || *end != '\0' ||
		    errno != 0 || code > 255)
			err = config_fail(p,
			    "exit_codes_ok: \"%s\" is not an exit code (0-255)",
			    w.v[i]);
		else
			ok[code / 64] |= UINT64_C(1) << (code % 64);
	}
	if (err == 0 && w.n == 0)
		err = config_fail(p, "exit_codes_ok wants exit codes (0-255)");
	config_list_free(&w);
	if (err == 0)
		memcpy(s->exit_ok, ok, sizeof ok);
	return err;
}

bool
config_exit_ok(const struct config_service *s, int code)
{
	return code >= 0 && code <= 255 &&
	    (s->exit_ok[code / 64] & (UINT64_C(1) << (code % 64))) != 0;
}

/* scope = abstract-unix | none. */
static int
config_service_scope(
    struct config_parser *p, struct config_service *s, const char *val)
{
	if (strcmp(val, "abstract-unix") == 0)
		s->scope = CONFIG_SCOPE_ABSTRACT_UNIX;
	else if (strcmp(val, "none") == 0)
		s->scope = 0;
	else
		return config_fail(
		    p, "scope must be abstract-unix or none, not \"%s\"", val);
	return 0;
}

/* The keys a [check NAME] takes: those of a service that say when and how
 * to probe, none that say what to run. */
static bool
config_check_key(const char *key)
{
	static const char *const keys[] = {"ready", "after", "requires",
	    "required", "ready_timeout_ms", "ready_interval_ms"};
	size_t i;

	for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strcmp(key, keys[i]) == 0)
			return true;
	return false;
}

static int
config_key_service(struct config_parser *p, const char *key, const char *val)
{
	struct config_service *s = p->svc;
	unsigned *ms;

	if (s->check && !config_check_key(key))
		return config_fail(p,
		    "unknown key \"%s\" in [check %s] (a check takes ready, "
		    "after, requires, required, ready_timeout_ms, "
		    "ready_interval_ms)",
		    key, s->name);

	if (strcmp(key, "command") == 0) {
		if (s->argv != NULL)
			return config_fail(p, "command set twice");
		return config_split(p, val, &s->argv);
	}
	if (strcmp(key, "user") == 0)
		return config_set_str(p, &s->user, val);
	if (strcmp(key, "group") == 0)
		return config_set_str(p, &s->group, val);
	if (strcmp(key, "cwd") == 0)
		return config_set_str(p, &s->cwd, val);
	if (strcmp(key, "desktop_check") == 0) {
		if (!config_valid_name(val, CONFIG_MAX_NAME, "._-"))
			return config_fail(p,
			    "desktop_check \"%s\" is not a check's name", val);
		return config_set_str(p, &s->desktop_check, val);
	}
	if (strcmp(key, "scope") == 0)
		return config_service_scope(p, s, val);
	if (strcmp(key, "env") == 0)
		return config_service_env(p, s, val);
	if (strcmp(key, "after") == 0)
		return config_service_list(p, &s->after, key, val);
	if (strcmp(key, "requires") == 0)
		return config_service_list(p, &s->requires, key, val);
	if (strcmp(key, "ready") == 0)
		return config_service_ready(p, s, val);
	if (strcmp(key, "required") == 0)
		return config_service_flag(p, &s->required, key, val);
	if (strcmp(key, "main") == 0)
		return config_service_flag(p, &s->main, key, val);
	if (strcmp(key, "forward") == 0)
		return config_service_flag(p, &s->forward, key, val);
	if (strcmp(key, "exit_codes_ok") == 0)
		return config_service_exit_ok(p, s, val);
	if (strcmp(key, "restart") == 0)
		return config_parse_restart(p, &s->restart, val);
	if (strcmp(key, "max_deaths") == 0)
		return config_service_deaths(p, s, val);
	if (strcmp(key, "retry_failed_ms") == 0)
		return config_service_retry(p, s, val);
	if (strcmp(key, "stop_signal") == 0) {
		if (signame_parse(val, &s->stop_signal) < 0)
			return config_fail(p,
			    "stop_signal \"%s\" is not a signal (" SIGNAME_LIST
			    " or a number)",
			    val);
		return 0;
	}
	if ((ms = config_service_ms(s, key)) != NULL) {
		if (config_parse_ms(val, ms) < 0)
			return config_fail(p,
			    "%s must be milliseconds "
			    "(0-86400000)",
			    key);
		return 0;
	}
	return config_fail(
	    p, "unknown key \"%s\" in [service %s]", key, s->name);
}

/* [A-Za-z_][A-Za-z0-9_]*: a name fit for the environment. */
static bool
config_env_name(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	return config_valid_name(s, CONFIG_MAX_NAME * 2, "_");
}

/* A mode's arguments after command: like a command, but may be empty. */
static int
config_runtime_args(struct config_parser *p, struct config_list *l, bool *has,
    const char *key, const char *val)
{
	char **v;

	if (*has)
		return config_fail(p, "%s set twice", key);
	if (*val == '\0')
		v = xcalloc(1, sizeof *v);
	else if (config_split(p, val, &v) < 0)
		return -1;
	config_list_take(l, v);
	*has = true;
	return 0;
}

static bool
config_list_has(const struct config_list *l, const char *needle)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strstr(l->v[i], needle) != NULL)
			return true;
	return false;
}

/* How many arguments of a task's are {prompt}; -1 if one holds it
 * within other text (the prompt is always one whole argument). */
static int
config_runtime_prompts(const struct config_list *l)
{
	size_t i;
	int n = 0;

	for (i = 0; i < l->n; i++) {
		if (strcmp(l->v[i], "{prompt}") == 0)
			n++;
		else if (strstr(l->v[i], "{prompt}") != NULL)
			return -1;
	}
	return n;
}

/* server_ready = tcp ADDR:{port} | http URL [STATUS [BODY]] | exec CMD...:
 * the probes berth-probe runs against a port. */
static int
config_runtime_ready(
    struct config_parser *p, struct config_runtime *r, const char *val)
{
	struct config_list w;
	char **v;
	bool tcp;
	int err = 0;

	if (r->server_ready != NULL)
		return config_fail(p, "server_ready set twice");
	if (config_split(p, val, &v) < 0)
		return -1;
	config_list_take(&w, v);
	tcp = strcmp(w.v[0], "tcp") == 0;
	if (tcp || strcmp(w.v[0], "http") == 0) {
		if (w.n < 2 || !config_list_has(&w, "{port}"))
			err = config_fail(p,
			    "server_ready = %s wants an address with {port}",
			    tcp ? "tcp" : "http");
	} else if (strcmp(w.v[0], "exec") == 0) {
		if (w.n < 2)
			err = config_fail(
			    p, "server_ready = exec wants a command");
	} else
		err = config_fail(p,
		    "server_ready: unknown probe \"%s\" (tcp, http or exec)",
		    w.v[0]);
	config_list_free(&w);
	if (err == 0)
		r->server_ready = xstrdup(val);
	return err;
}

static int
config_runtime_secrets(
    struct config_parser *p, struct config_runtime *r, const char *val)
{
	size_t i;

	if (config_service_list(p, &r->secrets, "secrets", val) < 0)
		return -1;
	for (i = 0; i < r->secrets.n; i++)
		if (!config_env_name(r->secrets.v[i]))
			return config_fail(p,
			    "secrets: \"%s\" is not a secret name (letters, "
			    "digits and _, not starting with a digit)",
			    r->secrets.v[i]);
	return 0;
}

static int
config_runtime_busy(
    struct config_parser *p, struct config_runtime *r, const char *val)
{
	if (strcmp(val, "reject") == 0)
		r->busy = CONFIG_BUSY_REJECT;
	else if (strcmp(val, "queue") == 0)
		r->busy = CONFIG_BUSY_QUEUE;
	else
		return config_fail(p, "busy must be reject or queue");
	return 0;
}

/* A limit of the runtime's (limit.h): a number, sizes with K, M or G. */
static int
config_runtime_limit(struct config_parser *p, struct config_runtime *r,
    enum limit_key k, const char *val)
{
	char why[LIMIT_WHY_MAX];
	size_t v;

	if (config_parse_size(val, &v) < 0)
		return config_fail(
		    p, "%s \"%s\" is not a number", limit_name(k), val);
	if (!limit_in_range(k, v, why))
		/* The request's wording, "limits.NAME must be ...". */
		return config_fail(p, "%s", why + strlen("limits."));
	r->limits.v[k] = v;
	return 0;
}

/* The keys of a runtime whose value is milliseconds. */
static unsigned *
config_runtime_ms(struct config_runtime *r, const char *key)
{
	if (strcmp(key, "backoff_min_ms") == 0)
		return &r->backoff_min_ms;
	if (strcmp(key, "backoff_max_ms") == 0)
		return &r->backoff_max_ms;
	if (strcmp(key, "stop_timeout_ms") == 0)
		return &r->stop_timeout_ms;
	if (strcmp(key, "backoff_reset_ms") == 0)
		return &r->backoff_reset_ms;
	if (strcmp(key, "server_ready_timeout_ms") == 0)
		return &r->server_ready_timeout_ms;
	return NULL;
}

/* The keys of a runtime that are a mode's arguments. */
static struct config_list *
config_runtime_mode(struct config_runtime *r, const char *key, bool **has)
{
	if (strcmp(key, "tui") == 0)
		return *has = &r->has_tui, &r->tui_args;
	if (strcmp(key, "server") == 0)
		return *has = &r->has_server, &r->server_args;
	if (strcmp(key, "rpc") == 0)
		return *has = &r->has_rpc, &r->rpc_args;
	if (strcmp(key, "resume") == 0)
		return *has = &r->has_resume, &r->resume_args;
	if (strcmp(key, "task") == 0)
		return *has = &r->has_task, &r->task_args;
	return NULL;
}

static int
config_key_runtime(struct config_parser *p, const char *key, const char *val)
{
	struct config_runtime *r = p->rt;
	struct config_list *args;
	unsigned *ms;
	bool *has, version_set = r->version_args.v != NULL;

	if (strcmp(key, "version") == 0)
		return config_runtime_args(
		    p, &r->version_args, &version_set, key, val);
	if (strcmp(key, "command") == 0) {
		if (r->command != NULL)
			return config_fail(p, "command set twice");
		return config_set_str(p, &r->command, val);
	}
	if ((args = config_runtime_mode(r, key, &has)) != NULL)
		return config_runtime_args(p, args, has, key, val);
	if (strcmp(key, "user") == 0)
		return config_set_str(p, &r->user, val);
	if (strcmp(key, "group") == 0)
		return config_set_str(p, &r->group, val);
	if (strcmp(key, "workspace") == 0) {
		if (val[0] != '/')
			return config_fail(
			    p, "workspace must be an absolute path");
		return config_set_str(p, &r->workspace, val);
	}
	if (strcmp(key, "env") == 0)
		return config_env_add(p, &r->env, val);
	if (strcmp(key, "secrets") == 0)
		return config_runtime_secrets(p, r, val);
	if (strcmp(key, "server_ready") == 0)
		return config_runtime_ready(p, r, val);
	if (strcmp(key, "server_password_env") == 0) {
		if (!config_env_name(val))
			return config_fail(p,
			    "server_password_env \"%s\" is not a variable name",
			    val);
		return config_set_str(p, &r->server_password_env, val);
	}
	if (strcmp(key, "server_user") == 0) {
		if (!config_valid_name(val, CONFIG_MAX_NAME, "._-"))
			return config_fail(p,
			    "server_user \"%s\" is not 1-%d of A-Z a-z 0-9 . _ "
			    "-",
			    val, CONFIG_MAX_NAME);
		return config_set_str(p, &r->server_user, val);
	}
	if (strcmp(key, "busy") == 0)
		return config_runtime_busy(p, r, val);
	if (strcmp(key, "restart") == 0)
		return config_parse_restart(p, &r->restart, val);
	if ((ms = config_runtime_ms(r, key)) != NULL) {
		if (config_parse_ms(val, ms) < 0)
			return config_fail(
			    p, "%s must be milliseconds (0-86400000)", key);
		return 0;
	}
	if (limit_key_of(key) != LIMIT_NKEYS)
		return config_runtime_limit(p, r, limit_key_of(key), val);
	return config_fail(
	    p, "unknown key \"%s\" in [runtime %s]", key, r->name);
}

static void
config_runtime_init(struct config_runtime *r)
{
	memset(r, 0, sizeof *r);
	r->busy = CONFIG_BUSY_REJECT;
	r->restart = CONFIG_RESTART_NEVER;
	r->backoff_min_ms = 100;
	r->backoff_max_ms = 5000;
	r->stop_timeout_ms = 3000;
	r->backoff_reset_ms = 10000;
	r->server_ready_timeout_ms = 60000;
}

static int
config_section_runtime(struct config_parser *p, const char *name)
{
	struct config *c = p->cfg;

	while (*name == ' ')
		name++;
	if (!config_valid_name(name, CONFIG_MAX_NAME, "._-"))
		return config_fail(p,
		    "runtime name \"%s\" must be 1-%d of A-Z a-z 0-9 . _ -",
		    name, CONFIG_MAX_NAME);
	if (config_runtime_find(c, name) != NULL)
		return config_fail(p, "runtime \"%s\" defined twice", name);
	if (c->nruntimes == CONFIG_MAX_RUNTIMES)
		return config_fail(
		    p, "more than %d runtimes", CONFIG_MAX_RUNTIMES);
	p->rt = &c->runtimes[c->nruntimes++];
	config_runtime_init(p->rt);
	p->rt->name = xstrdup(name);
	p->rt->line = p->line;
	p->sec = CONFIG_SEC_RUNTIME;
	return 0;
}

const struct config_runtime *
config_runtime_find(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nruntimes; i++)
		if (strcmp(cfg->runtimes[i].name, name) == 0)
			return &cfg->runtimes[i];
	return NULL;
}

void
config_service_init(struct config_service *s)
{
	memset(s, 0, sizeof *s);
	s->restart = CONFIG_RESTART_ALWAYS;
	s->backoff_min_ms = 100;
	s->backoff_max_ms = 5000;
	s->backoff_reset_ms = 10000;
	s->max_deaths = 5;
	s->death_window_ms = 60000;
	s->retry_failed_ms = CONFIG_RETRY_FAILED_MS;
	s->stop_signal = SIGTERM;
	s->stop_timeout_ms = 5000;
	s->exit_ok[0] = 1;
	s->probe_timeout_ms = 2000;
	s->probe_interval_ms = 1000;
	s->required = true;
}

static int
config_section(struct config_parser *p, char *line)
{
	struct config *c = p->cfg;
	char *end = strchr(line, ']'), *name;
	bool check;
	size_t i;

	if (end == NULL || end[1] != '\0')
		return config_fail(p, "section header must end with ]");
	*end = '\0';
	line++;
	p->svc = NULL;
	p->rt = NULL;
	if (strcmp(line, "berthd") == 0)
		p->sec = CONFIG_SEC_BERTHD;
	else if (strcmp(line, "gateway") == 0)
		p->sec = CONFIG_SEC_GATEWAY;
	else if (strcmp(line, "journal") == 0)
		p->sec = CONFIG_SEC_JOURNAL;
	else if (strcmp(line, "labels") == 0)
		p->sec = CONFIG_SEC_LABELS;
	else if (strncmp(line, "runtime ", 8) == 0)
		return config_section_runtime(p, line + 8);
	else if (strncmp(line, "service ", 8) == 0 ||
	    strncmp(line, "check ", 6) == 0) {
		check = line[0] == 'c';
		name = line + (check ? 6 : 8);
		while (*name == ' ')
			name++;
		if (!config_valid_name(name, CONFIG_MAX_NAME, "._-"))
			return config_fail(p,
			    "%s name \"%s\" must be 1-%d of "
			    "A-Z a-z 0-9 . _ -",
			    check ? "check" : "service", name, CONFIG_MAX_NAME);
		if (strcmp(name, "gateway") == 0)
			return config_fail(p,
			    "\"gateway\" is berth's own service; "
			    "configure it in [gateway]");
		for (i = 0; i < c->nservices; i++)
			if (strcmp(c->services[i].name, name) == 0)
				return config_fail(p,
				    "\"%s\" defined twice (services and "
				    "checks share one set of names)",
				    name);
		if (c->nservices == CONFIG_MAX_SERVICES)
			return config_fail(
			    p, "more than %d services", CONFIG_MAX_SERVICES);
		p->svc = &c->services[c->nservices++];
		config_service_init(p->svc);
		p->svc->name = xstrdup(name);
		p->svc->check = check;
		p->svc->line = p->line;
		p->sec = CONFIG_SEC_SERVICE;
	} else
		return config_fail(p, "unknown section [%s]", line);
	return 0;
}

static char *
config_trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int
config_line(struct config_parser *p, char *line)
{
	char *eq, *key, *val;

	line = config_trim(line);
	if (*line == '\0' || *line == '#' || *line == ';')
		return 0;
	if (*line == '[')
		return config_section(p, line);
	eq = strchr(line, '=');
	if (eq == NULL)
		return config_fail(p, "expected \"key = value\" or [section]");
	*eq = '\0';
	key = config_trim(line);
	val = config_trim(eq + 1);
	if (*key == '\0')
		return config_fail(p, "missing key before =");
	if (strlen(val) > CONFIG_MAX_VALUE)
		return config_fail(
		    p, "value longer than %d bytes", CONFIG_MAX_VALUE);
	switch (p->sec) {
	case CONFIG_SEC_BERTHD: return config_key_berthd(p, key, val);
	case CONFIG_SEC_GATEWAY: return config_key_gateway(p, key, val);
	case CONFIG_SEC_JOURNAL: return config_key_journal(p, key, val);
	case CONFIG_SEC_LABELS: return config_key_label(p, key, val);
	case CONFIG_SEC_SERVICE: return config_key_service(p, key, val);
	case CONFIG_SEC_RUNTIME: return config_key_runtime(p, key, val);
	case CONFIG_SEC_NONE: break;
	}
	return config_fail(p, "\"%s\" outside any section", key);
}

int
config_parse_string(
    struct config *cfg, const char *text, const char *name, char **cause)
{
	struct config_parser p = {.cfg = cfg, .name = name};
	char buf[CONFIG_MAX_LINE + 1];
	const char *nl;
	size_t n;

	/* config_finish's messages name the file too. */
	free(cfg->path);
	cfg->path = xstrdup(name);
	while (*text != '\0') {
		p.line++;
		nl = strchr(text, '\n');
		n = nl != NULL ? (size_t)(nl - text) : strlen(text);
		if (n > CONFIG_MAX_LINE) {
			config_fail(
			    &p, "line longer than %d bytes", CONFIG_MAX_LINE);
			*cause = p.cause;
			return -1;
		}
		memcpy(buf, text, n);
		buf[n] = '\0';
		if (config_line(&p, buf) < 0) {
			*cause = p.cause;
			return -1;
		}
		text += n + (nl != NULL);
	}
	return 0;
}

int
config_load(struct config *cfg, const char *path, char **cause)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t n;
	int r;

	if (f == NULL) {
		*cause = xasprintf("%s: %s", path, strerror(errno));
		return -1;
	}
	text = xmalloc(CONFIG_MAX_FILE + 1);
	n = fread(text, 1, CONFIG_MAX_FILE + 1, f);
	if (ferror(f) || n > CONFIG_MAX_FILE) {
		*cause = xasprintf("%s: %s", path,
		    ferror(f) ? strerror(errno) : "larger than 1 MiB");
		fclose(f);
		free(text);
		return -1;
	}
	fclose(f);
	if (memchr(text, '\0', n) != NULL) {
		*cause = xasprintf("%s: contains a NUL byte", path);
		free(text);
		return -1;
	}
	text[n] = '\0';
	r = config_parse_string(cfg, text, path, cause);
	free(text);
	return r;
}

static int
config_service_index(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nservices; i++)
		if (strcmp(cfg->services[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Every dependency of s, after and requires alike, by index i < n. */
static const char *
config_dep(const struct config_service *s, size_t i)
{
	return i < s->after.n ? s->after.v[i] : s->requires.v[i - s->after.n];
}

/* Depth-first search from service i; a service met again while still on
 * the path closes a cycle, which is spelt out from the path. */
static int
config_find_cycle(const struct config *cfg, int i, int *color, int *path,
    int depth, char **cause)
{
	const struct config_service *s = &cfg->services[i];
	size_t d, k;
	int j;

	color[i] = 1;
	path[depth] = i;
	for (d = 0; d < s->after.n + s->requires.n; d++) {
		j = config_service_index(cfg, config_dep(s, d));
		if (color[j] == 1) {
			char *msg = xstrdup(cfg->services[j].name), *next;
			for (k = 0; path[k] != j; k++)
				;
			for (k++; k <= (size_t)depth; k++) {
				next = xasprintf("%s -> %s", msg,
				    cfg->services[path[k]].name);
				free(msg);
				msg = next;
			}
			*cause = xasprintf("%s:%d: dependency cycle: %s -> %s",
			    cfg->path != NULL ? cfg->path : "config",
			    cfg->services[j].line, msg, cfg->services[j].name);
			free(msg);
			return -1;
		}
		if (color[j] == 0 &&
		    config_find_cycle(cfg, j, color, path, depth + 1, cause) <
		        0)
			return -1;
	}
	color[i] = 2;
	return 0;
}

/* Unknown dependencies, cycles, more than one main service. */
static int
config_check_graph(const struct config *cfg, char **cause)
{
	const char *name = cfg->path != NULL ? cfg->path : "config";
	int color[CONFIG_MAX_SERVICES] = {0}, path[CONFIG_MAX_SERVICES];
	const struct config_service *main = NULL;
	size_t i, d;

	for (i = 0; i < cfg->nservices; i++) {
		const struct config_service *s = &cfg->services[i];
		for (d = 0; d < s->after.n + s->requires.n; d++) {
			const char *dep = config_dep(s, d);
			if (config_service_index(cfg, dep) < 0) {
				*cause = xasprintf(
				    "%s:%d: service \"%s\" depends on "
				    "unknown service \"%s\"",
				    name, s->line, s->name, dep);
				return -1;
			}
		}
		if (s->main && main != NULL) {
			*cause =
			    xasprintf("%s:%d: services \"%s\" and \"%s\" are "
			              "both main",
			        name, s->line, main->name, s->name);
			return -1;
		}
		if (s->main)
			main = s;
	}
	for (i = 0; i < cfg->nservices; i++)
		if (color[i] == 0 &&
		    config_find_cycle(cfg, (int)i, color, path, 0, cause) < 0)
			return -1;
	return 0;
}

/* A desktop_check names a check that berth-desktop reports. */
static int
config_check_desktop(const struct config *cfg, const char *name, char **cause)
{
	const struct config_service *s, *t;
	size_t i, j;

	for (i = 0; i < cfg->nservices; i++) {
		s = &cfg->services[i];
		if (s->desktop_check == NULL)
			continue;
		for (j = 0; j < cfg->nservices; j++) {
			t = &cfg->services[j];
			if (strcmp(t->name, s->desktop_check) == 0)
				break;
		}
		if (j == cfg->nservices ||
		    cfg->services[j].probe != CONFIG_PROBE_REPORT) {
			*cause = xasprintf("%s:%d: service \"%s\": "
			                   "desktop_check \"%s\" is not a "
			                   "check with \"ready = report\"",
			    name, s->line, s->name, s->desktop_check);
			return -1;
		}
	}
	return 0;
}

/* What only the whole section can tell: the keys it must have, and the
 * keys that only mean something with another. */
static const char *
config_runtime_missing(const struct config_runtime *r)
{
	if (r->command == NULL)
		return "has no command";
	if (r->user == NULL)
		return "has no user (a runtime never runs as root)";
	if (r->workspace == NULL)
		return "has no workspace";
	if (!r->has_tui && !r->has_server && !r->has_rpc && !r->has_task)
		return "offers no mode (tui, server, rpc or task)";
	if (!r->has_server && r->server_ready != NULL)
		return "has server_ready but no server mode";
	if (!r->has_server && r->server_password_env != NULL)
		return "has server_password_env but no server mode";
	if (r->server_user != NULL && r->server_password_env == NULL)
		return "has server_user but no server_password_env";
	if (r->has_server && !config_list_has(&r->server_args, "{port}"))
		return "server has no {port} to listen on";
	if (r->has_task && config_runtime_prompts(&r->task_args) < 0)
		return "task's {prompt} must be a whole argument";
	if (r->has_task && config_runtime_prompts(&r->task_args) > 1)
		return "task has {prompt} more than once";
	if (r->backoff_min_ms > r->backoff_max_ms)
		return "backoff_min_ms exceeds backoff_max_ms";
	return NULL;
}

static int
config_finish_runtimes(struct config *cfg, const char *name, char **cause)
{
	struct config_runtime *r;
	const char *why;
	size_t i;

	for (i = 0; i < cfg->nruntimes; i++) {
		r = &cfg->runtimes[i];
		if ((why = config_runtime_missing(r)) != NULL) {
			*cause = xasprintf("%s:%d: runtime \"%s\" %s", name,
			    r->line, r->name, why);
			return -1;
		}
		if (r->version_args.v == NULL) {
			r->version_args.v = xcalloc(2, sizeof(char *));
			r->version_args.v[0] = xstrdup("--version");
			r->version_args.n = 1;
		}
	}
	return 0;
}

int
config_finish(struct config *cfg, char **cause)
{
	const char *name = cfg->path != NULL ? cfg->path : "config";
	size_t i;

	for (i = 0; i < cfg->nservices; i++) {
		struct config_service *s = &cfg->services[i];
		if (!s->retry_failed_set)
			s->retry_failed_ms = cfg->retry_failed_ms;
		if (s->argv == NULL && !s->check) {
			*cause =
			    xasprintf("%s:%d: service \"%s\" has no command",
			        name, s->line, s->name);
			return -1;
		}
		if (s->check && s->probe == CONFIG_PROBE_NONE) {
			*cause = xasprintf("%s:%d: check \"%s\" has no "
			                   "\"ready = PROBE ...\" line",
			    name, s->line, s->name);
			return -1;
		}
		if (s->backoff_min_ms > s->backoff_max_ms) {
			*cause =
			    xasprintf("%s:%d: service \"%s\": backoff_min_ms "
			              "exceeds backoff_max_ms",
			        name, s->line, s->name);
			return -1;
		}
	}
	if (config_check_graph(cfg, cause) < 0)
		return -1;
	if (config_check_desktop(cfg, name, cause) < 0)
		return -1;
	if (config_finish_runtimes(cfg, name, cause) < 0)
		return -1;
	if (cfg->cdp_relay_listen != NULL && cfg->cdp == NULL) {
		*cause = xasprintf("%s: [gateway] cdp_relay_listen needs cdp "
		                   "(the DevTools address it relays to)",
		    name);
		return -1;
	}
	if ((cfg->preview_url != NULL || cfg->preview_domain != NULL) &&
	    cfg->preview_listen == NULL) {
		*cause =
		    xasprintf("%s: [gateway] preview_url and preview_domain "
		              "need preview_listen (where previews are served)",
		        name);
		return -1;
	}
	if (cfg->token_file == NULL)
		cfg->token_file = xasprintf("%s/token", cfg->state_dir);
	if (cfg->socket == NULL)
		cfg->socket = xasprintf("%s/berthd.sock", cfg->state_dir);
	/* sun_path holds 108 bytes with its NUL. */
	if (strlen(cfg->socket) >= 108) {
		*cause = xasprintf("%s: socket path \"%s\" is longer than 107 "
		                   "bytes",
		    name, cfg->socket);
		return -1;
	}
	return 0;
}

int
config_set_listen(struct config *cfg, const char *listen, char **cause)
{
	if (!config_valid_listen(listen)) {
		*cause = xasprintf("--listen \"%s\" is not ADDR:PORT with a "
		                   "port in 1-65535",
		    listen);
		return -1;
	}
	free(cfg->listen);
	cfg->listen = xstrdup(listen);
	return 0;
}

static void
config_runtime_free(struct config_runtime *r)
{
	free(r->name);
	free(r->command);
	config_list_free(&r->version_args);
	config_list_free(&r->tui_args);
	config_list_free(&r->server_args);
	config_list_free(&r->rpc_args);
	config_list_free(&r->resume_args);
	config_list_free(&r->task_args);
	free(r->server_ready);
	free(r->server_password_env);
	free(r->server_user);
	free(r->user);
	free(r->group);
	free(r->workspace);
	config_list_free(&r->env);
	config_list_free(&r->secrets);
}

void
config_service_clear(struct config_service *s)
{
	size_t j;

	free(s->name);
	for (j = 0; s->argv != NULL && s->argv[j] != NULL; j++)
		free(s->argv[j]);
	free(s->argv);
	free(s->user);
	free(s->group);
	free(s->desktop_check);
	free(s->cwd);
	config_list_free(&s->env);
	config_list_free(&s->after);
	config_list_free(&s->requires);
	config_list_free(&s->probe_args);
	memset(s, 0, sizeof *s);
}

int
config_runtime_check(const struct config_runtime *r, const char *ready,
    struct config_service *s, char **cause)
{
	struct config_parser p = {.name = "server_ready", .line = r->line};

	config_service_init(s);
	s->name = xasprintf("runtime/%s", r->name);
	s->check = true;
	if (config_service_ready(&p, s, ready) < 0) {
		*cause = p.cause;
		config_service_clear(s);
		return -1;
	}
	return 0;
}

void
config_free(struct config *cfg)
{
	size_t i;

	free(cfg->path);
	free(cfg->state_dir);
	free(cfg->token_file);
	free(cfg->socket);
	free(cfg->listen);
	free(cfg->gateway_command);
	free(cfg->gateway_user);
	free(cfg->vnc);
	free(cfg->novnc_dir);
	free(cfg->cdp);
	free(cfg->cdp_relay_listen);
	free(cfg->public_url);
	free(cfg->preview_listen);
	free(cfg->preview_url);
	free(cfg->preview_domain);
	for (i = 0; i < cfg->nlabels; i++) {
		free(cfg->labels[i].key);
		free(cfg->labels[i].value);
	}
	for (i = 0; i < cfg->nservices; i++)
		config_service_clear(&cfg->services[i]);
	for (i = 0; i < cfg->nruntimes; i++)
		config_runtime_free(&cfg->runtimes[i]);
	memset(cfg, 0, sizeof *cfg);
}
