/* config: berthd's configuration file, a small INI dialect.
 *
 *   [berthd]   state_dir, token_file, socket, forward_signals,
 *              retry_failed_ms (the services' default), cgroups
 *   [gateway]  listen, client_queue, client_stall_ms, command, user, vnc,
 *              novnc_dir, cdp, cdp_relay_listen, public_url,
 *              preview_listen, preview_url, preview_domain, grant_max_ttl_s
 *   [journal]  max_bytes, segment_bytes, sync
 *   [labels]   any key = value
 *   [service NAME]  command, user, group, cwd, desktop_check, scope,
 *                   env (repeatable), after,
 *                   requires, ready, ready_timeout_ms, ready_interval_ms,
 *                   required, main, restart, backoff_min_ms,
 *                   backoff_max_ms, backoff_reset_ms, max_deaths,
 *                   death_window_ms, retry_failed_ms, stop_signal,
 *                   stop_timeout_ms
 *   [check NAME]    ready, after, requires, required, ready_timeout_ms,
 *                   ready_interval_ms: a readiness check with no process
 *   [runtime NAME]  command, version, user, group, workspace, env
 *                   (repeatable), secrets, tui, server, server_ready,
 *                   server_password_env, rpc, resume, tasks, busy, restart,
 *                   backoff_min_ms, backoff_max_ms, stop_timeout_ms,
 *                   cpu_millis, memory_bytes, max_processes, disk_bytes,
 *                   open_files: an
 *                   agent runtime berthd starts on request, never at boot
 *
 * One "key = value" per line; "#" or ";" starts a comment line; values run
 * to the end of the line (no inline comments). A command is split on
 * blanks, with "..." and '...' quoting and backslash escapes in "...".
 * Errors name the file and the line. Ownership: config_load and
 * config_parse_string fill a struct config whose strings and lists belong
 * to it; config_free releases them. */
#ifndef BERTH_CONFIG_H
#define BERTH_CONFIG_H

#include "limit.h"
#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_MAX_LABELS 64
#define CONFIG_MAX_SERVICES 64
#define CONFIG_MAX_RUNTIMES 16
#define CONFIG_MAX_ARGS 64
#define CONFIG_MAX_ENV 64
/* The longest value of any key, and the longest label key or value. */
#define CONFIG_MAX_VALUE 4096
#define CONFIG_MAX_LABEL 256
/* The longest line, and the longest service name. */
#define CONFIG_MAX_LINE 8192
#define CONFIG_MAX_NAME 64
/* A grant link's base (public_url, preview_url), and preview_domain. */
#define CONFIG_MAX_URL 256
#define CONFIG_MAX_DOMAIN 200
/* A grant's life: by default, and the most grant_max_ttl_s may allow. */
#define CONFIG_DEFAULT_GRANT_TTL_S 3600
#define CONFIG_MAX_GRANT_TTL_S (30u * 24 * 3600)
/* A Unix socket's path is shorter than this (sun_path). */
#define CONFIG_MAX_SOCKET 108
/* The default retry_failed_ms, and the shortest other than 0. */
#define CONFIG_RETRY_FAILED_MS 300000u
#define CONFIG_MIN_RETRY_FAILED_MS 1000u

enum config_restart {
	CONFIG_RESTART_ALWAYS,
	CONFIG_RESTART_ON_FAILURE,
	CONFIG_RESTART_NEVER,
};

struct config_label {
	char *key;
	char *value;
};

enum config_probe {
	CONFIG_PROBE_NONE,      /* ready once spawned */
	CONFIG_PROBE_TCP,       /* berth-probe tcp HOST:PORT */
	CONFIG_PROBE_HTTP,      /* berth-probe http URL [STATUS [BODY]] */
	CONFIG_PROBE_RFB,       /* berth-probe rfb HOST:PORT [WxH] */
	CONFIG_PROBE_CDP,       /* berth-probe cdp HOST:PORT [auth] */
	CONFIG_PROBE_CDP_WS,    /* berth-probe cdp-ws URL */
	CONFIG_PROBE_NOVNC,     /* berth-probe novnc URL */
	CONFIG_PROBE_NOTIFY_FD, /* a newline on fd N */
	CONFIG_PROBE_SD_NOTIFY, /* READY=1 on $NOTIFY_SOCKET */
	CONFIG_PROBE_EXEC,      /* a command exits 0 */
	CONFIG_PROBE_REPORT,    /* a berth program sends check.report */
};

/* The bit of sig (1-64) in a set of signals. */
#define CONFIG_SIGBIT(sig) (UINT64_C(1) << ((sig)-1))

/* A service's scopes (scope = ...): Landlock domains it starts in. */
#define CONFIG_SCOPE_ABSTRACT_UNIX 0x1u /* no abstract socket of others */

/* A NULL-terminated list of strings; the config owns them. */
struct config_list {
	char **v;
	size_t n;
};

struct config_service {
	char *name;
	bool check;  /* a [check NAME]: a probe, no process (argv NULL) */
	char **argv; /* NULL-terminated; argv[0] as written */
	char *user, *group, *cwd;
	/* berth's own confined processes (the gateway): run as uid:gid with
	 * no capability, no_new_privs and no core (user and group unset). */
	bool confine;
	uid_t uid;
	gid_t gid;
	/* Set: the service is berth-desktop, handed its connections to
	 * berthd at spawn, and this is the one check it reports. */
	char *desktop_check;
	unsigned scope; /* CONFIG_SCOPE_*: what the process cannot reach */
	struct config_list env;      /* KEY=VALUE */
	struct config_list after;    /* start once these are ready */
	struct config_list requires; /* the same, and fail if they fail */
	enum config_probe probe;
	struct config_list probe_args; /* the ready = line after its type */
	int notify_fd;
	unsigned probe_timeout_ms;
	unsigned probe_interval_ms;
	enum config_restart restart;
	unsigned backoff_min_ms;
	unsigned backoff_max_ms;
	unsigned backoff_reset_ms; /* ready this long: backoff starts over */
	/* This many exits within death_window_ms and the service has failed;
	 * 0: never (max_deaths = unlimited). */
	unsigned max_deaths;
	unsigned death_window_ms;
	unsigned retry_failed_ms; /* failed: started afresh after; 0 never */
	bool retry_failed_set;    /* by its section, not [berthd]'s default */
	int stop_signal;
	unsigned stop_timeout_ms;
	/* Exit codes that count as success (bit n of word n / 64): for
	 * restart = on-failure, a finished one-shot and berthd's own exit
	 * status. Default {0}. */
	uint64_t exit_ok[4];
	bool forward;  /* receives the signals of forward_signals */
	bool required; /* counts for /readyz */
	bool main;     /* berthd's exit status is this service's */
	int line;      /* where the section starts, for later errors */
};

/* What a runtime does with a request while it is busy. */
/* How berthd finds the sockets listening in the sandbox (ports.h). */
enum config_ports {
	CONFIG_PORTS_AUTO, /* sock_diag, /proc/net where netlink is refused */
	CONFIG_PORTS_PROC, /* /proc/net only */
	CONFIG_PORTS_OFF,  /* no discovery */
};

enum config_busy {
	CONFIG_BUSY_REJECT,
	CONFIG_BUSY_QUEUE,
};

/* An agent runtime of the catalog. Its mode lines are argument lists that
 * follow command; "{port}" in server_args and server_ready stands for the
 * server's port. A mode is offered iff its has_ flag is set. */
struct config_runtime {
	char *name;
	char *command; /* argv[0]: a name looked up in PATH, or absolute */
	struct config_list version_args, tui_args, server_args, rpc_args,
	    resume_args;
	/* A task run's: {prompt} (one whole argument, at most once) becomes
	 * the prompt; without it the prompt is written to stdin. */
	struct config_list task_args;
	bool has_tui, has_server, has_rpc, has_resume, has_task;
	char *server_ready;        /* probe line with {port}; NULL: tcp */
	char *server_password_env; /* NULL: none */
	char *server_user; /* its Basic user name; NULL: the runtime's name */
	char *user, *group, *workspace;
	struct config_list env;     /* KEY=VALUE */
	struct config_list secrets; /* names */
	enum config_busy busy;      /* a task.run while a task runs */
	enum config_restart restart;
	unsigned backoff_min_ms, backoff_max_ms, stop_timeout_ms;
	unsigned backoff_reset_ms;        /* ready this long: backoff anew */
	unsigned server_ready_timeout_ms; /* a server not answering: failed */
	struct limit_set limits; /* each instance's, unless runtime.start's */
	int line;
};

/* The gateway's user when [gateway] user is not set; when no such user
 * exists, the gateway runs as CONFIG_GATEWAY_UID:CONFIG_GATEWAY_GID,
 * ids no name stands for (never root's, never nobody's). */
#define CONFIG_GATEWAY_USER "berth-gateway"
#define CONFIG_GATEWAY_UID 64701
#define CONFIG_GATEWAY_GID 64701

struct config {
	char *path; /* the file read, for messages */
	char *state_dir;
	char *token_file; /* default <state_dir>/token */
	char *socket;     /* default <state_dir>/berthd.sock */
	bool cgroups;     /* false: act as if the kernel had none */
	enum config_ports ports;
	/* The signals berthd passes on to services: bit sig - 1. */
	uint64_t forward_signals;
	unsigned retry_failed_ms; /* of every service that sets none */
	char *listen;             /* ADDR:PORT of the gateway */
	char *gateway_command;
	char *gateway_user; /* the gateway's and the probes' user */
	uid_t gateway_uid;  /* gateway_user's, resolved at boot */
	gid_t gateway_gid;
	size_t client_queue;
	unsigned client_stall_ms; /* 1 to 86400000 */
	/* The desktop's relays in the gateway; NULL: not served. */
	char *vnc;              /* ADDR:PORT or unix:PATH of the RFB server */
	char *novnc_dir;        /* noVNC's page */
	char *cdp;              /* ADDR:PORT of Chromium's DevTools */
	char *cdp_relay_listen; /* ADDR:PORT of the TCP CDP relay */
	/* Access grants: the bases of their links, and the longest life. */
	char *public_url;     /* NULL: http:// and listen */
	char *preview_listen; /* ADDR:PORT of the previews; NULL: none */
	char *preview_url;    /* NULL: http:// and preview_listen */
	char *preview_domain; /* host links PORT-KEY.DOMAIN; NULL: none */
	unsigned grant_max_ttl_s;
	size_t journal_max_bytes;
	size_t journal_segment_bytes;
	bool journal_sync;
	struct config_label labels[CONFIG_MAX_LABELS];
	size_t nlabels;
	struct config_service services[CONFIG_MAX_SERVICES];
	size_t nservices;
	struct config_runtime runtimes[CONFIG_MAX_RUNTIMES];
	size_t nruntimes;
};

/* Sets every default. */
void config_init(struct config *cfg);
/* Reads path into cfg (which config_init prepared). Returns 0, or -1 with
 * *cause set to "FILE:LINE: what is wrong" (the caller frees it). */
int config_load(struct config *cfg, const char *path, char **cause);
/* The same from text in memory; name stands for the file in messages. */
int config_parse_string(
    struct config *cfg, const char *text, const char *name, char **cause);
/* Fills the defaults that depend on other keys (token_file, socket) and
 * checks what only the whole file can tell. Returns 0 or -1 with *cause. */
int config_finish(struct config *cfg, char **cause);
void config_free(struct config *cfg);

/* Overrides the gateway's ADDR:PORT (the --listen option), checked as the
 * file's key is. Returns 0 or -1 with *cause. */
int config_set_listen(struct config *cfg, const char *listen, char **cause);

/* The name of a probe type as written after "ready =". */
const char *config_probe_name(enum config_probe probe);

/* Every default of a [service] section (no name, no command). */
void config_service_init(struct config_service *s);
/* The runtime called name, or NULL. */
const struct config_runtime *config_runtime_find(
    const struct config *cfg, const char *name);

/* Fills s (config_service_init first) as a check named "runtime/NAME"
 * whose probe is ready, r's server_ready with {port} filled in. Returns 0,
 * or -1 with *cause. The caller releases s with config_service_clear. */
int config_runtime_check(const struct config_runtime *r, const char *ready,
    struct config_service *s, char **cause);
/* Frees what a service's section holds and zeroes it. */
void config_service_clear(struct config_service *s);

/* Whether code (0-255) counts as success for s (exit_codes_ok). */
bool config_exit_ok(const struct config_service *s, int code);
/* Whether sig is one of cfg's forward_signals. */
bool config_forwards(const struct config *cfg, int sig);

/* Parses "8M", "64K", "1G" or plain bytes. Returns 0 or -1. */
int config_parse_size(const char *s, size_t *out);

#endif
