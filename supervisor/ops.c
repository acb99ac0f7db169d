/* ops: berthd's request handlers (see ops.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot.h"
#include "catalog.h"
#include "clock.h"
#include "events.h"
#include "log.h"
#include "ops.h"
#include "args.h"
#include "artifact.h"
#include "fs.h"
#include "fswatch.h"
#include "grant.h"
#include "idem.h"
#include "inflight.h"
#include "ports.h"
#include "limit_op.h"
#include "proc.h"
#include "provider.h"
#include "pty.h"
#include "runtime.h"
#include "secrets.h"
#include "service.h"
#include "token.h"
#include "tokenfile.h"
#include "task.h"
#include "workspace.h"

static const struct config *ops_cfg;
static uint64_t ops_started_at; /* wall ms */
static uint64_t ops_started_mono;

typedef void (*ops_handler)(struct server_conn *, const struct proto_msg *);

static void
ops_pack_labels(msgpack_packer *pk)
{
	size_t i;

	msgpack_pack_map(pk, ops_cfg->nlabels);
	for (i = 0; i < ops_cfg->nlabels; i++)
		proto_pack_kv_str(
		    pk, ops_cfg->labels[i].key, ops_cfg->labels[i].value);
}

/* What the gateway's uid may call on a connection no client's credential
 * has attached: what its control connection needs to answer the probes
 * (the events tell it when the checks change), and its own ops. */
static bool
ops_gateway_may(enum catalog_op_id id)
{
	switch (id) {
	case CATALOG_OP_HELLO:
	case CATALOG_OP_PING:
	case CATALOG_OP_STATE:
	case CATALOG_OP_EVENTS_SUBSCRIBE:
	case CATALOG_OP_GATEWAY_ATTACH:
	case CATALOG_OP_GATEWAY_CHECK:
	case CATALOG_OP_GATEWAY_REDEEM:
	case CATALOG_OP_GATEWAY_AUTH_FAILED: return true;
	default: return false;
	}
}

/* What a connection a pty grant attached may call: the one session,
 * watched, and written to if the grant says so; m, unless NULL (the
 * capabilities hello lists), must name that session. */
static bool
ops_grant_may(const struct server_conn *c, enum catalog_op_id id,
    const struct proto_msg *m)
{
	char pty[sizeof c->grant_pty + 1];

	switch (id) {
	case CATALOG_OP_HELLO:
	case CATALOG_OP_PING: return true;
	case CATALOG_OP_PTY_INPUT:
	case CATALOG_OP_PTY_RESIZE:
		if (!c->grant_write)
			return false;
		/* FALLTHROUGH */
	case CATALOG_OP_PTY_ATTACH:
	case CATALOG_OP_PTY_DETACH:
		return m == NULL ||
		    (proto_arg_str(m->args, "id", pty, sizeof pty) == 1 &&
		        strcmp(pty, c->grant_pty) == 0);
	default: return false;
	}
}

/* Whether c may call op id. */
static bool
ops_may(const struct server_conn *c, enum catalog_op_id id)
{
	if (c->grant[0] != '\0')
		return ops_grant_may(c, id, NULL);
	if (c->gateway && !c->remote)
		return ops_gateway_may(id);
	return !c->remote || catalog_ops[id].access == CATALOG_ANY;
}

/* Whether hello lists op id to c: c may call it, and this sandbox
 * serves it (the desktop's ops only where there is a desktop). */
static bool
ops_listed(const struct server_conn *c, enum catalog_op_id id)
{
	if (catalog_ops[id].server == CATALOG_DESKTOP && !provider_available())
		return false;
	return ops_may(c, id);
}

/* The ops this connection may call and this sandbox serves. */
static void
ops_pack_capabilities(msgpack_packer *pk, const struct server_conn *c)
{
	size_t i, n = 0;

	for (i = 0; i < CATALOG_NOPS; i++)
		if (ops_listed(c, (enum catalog_op_id)i))
			n++;
	msgpack_pack_array(pk, n);
	for (i = 0; i < CATALOG_NOPS; i++)
		if (ops_listed(c, (enum catalog_op_id)i))
			proto_pack_str(pk, catalog_ops[i].name);
}

/* What this sandbox offers beyond the ops' names: a desktop (and its
 * recordings, berth-desktop's too), the runtimes configured, previews
 * (the gateway's preview_listen), how many idempotency keys are kept. */
static void
ops_pack_features(msgpack_packer *pk)
{
	bool desktop = provider_available();
	size_t i;

	msgpack_pack_map(pk, 5);
	proto_pack_kv_bool(pk, "desktop", desktop);
	proto_pack_kv_bool(pk, "recording", desktop);
	proto_pack_str(pk, "runtimes");
	msgpack_pack_array(pk, ops_cfg->nruntimes);
	for (i = 0; i < ops_cfg->nruntimes; i++)
		proto_pack_str(pk, ops_cfg->runtimes[i].name);
	proto_pack_kv_bool(pk, "previews", ops_cfg->preview_listen != NULL);
	proto_pack_kv_u64(pk, "idempotency_keys", IDEM_MAX);
}

static void
ops_hello(struct server_conn *c, const struct proto_msg *m)
{
	char version[PROTO_MAX_NAME + 1] = "";
	msgpack_packer *pk;

	if (proto_arg_str(m->args, "version", version, sizeof version) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "hello needs \"version\": \"%s\"", PROTO_VERSION);
		return;
	}
	if (strcmp(version, PROTO_VERSION) != 0) {
		server_reply_error(c, m->id, PROTO_E_UNSUPPORTED_VERSION,
		    "berth speaks %s; the client asked for %s", PROTO_VERSION,
		    version);
		return;
	}
	c->hello = true;
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 9);
	proto_pack_kv_str(pk, "version", PROTO_VERSION);
	proto_pack_kv_str(pk, "agent_version", BERTH_VERSION);
	proto_pack_kv_str(pk, "boot_id", boot_id());
	proto_pack_str(pk, "labels");
	ops_pack_labels(pk);
	proto_pack_str(pk, "capabilities");
	ops_pack_capabilities(pk, c);
	proto_pack_str(pk, "features");
	ops_pack_features(pk);
	proto_pack_str(pk, "limits");
	msgpack_pack_map(pk, 3);
	proto_pack_kv_u64(pk, "max_message", PROTO_MAX_MSG);
	proto_pack_kv_u64(pk, "max_depth", PROTO_MAX_DEPTH);
	proto_pack_kv_u64(pk, "max_in_flight", PROTO_MAX_IN_FLIGHT);
	proto_pack_kv_u64(pk, "pid", (uint64_t)getpid());
	proto_pack_kv_u64(pk, "started_at", ops_started_at);
	server_reply_end(c);
}

static void
ops_ping(struct server_conn *c, const struct proto_msg *m)
{
	msgpack_packer *pk = server_reply_begin(c, m->id);

	msgpack_pack_map(pk, 2);
	proto_pack_kv_u64(pk, "ts", proto_now_ms());
	proto_pack_kv_str(pk, "boot_id", boot_id());
	server_reply_end(c);
}

static void
ops_state(struct server_conn *c, const struct proto_msg *m)
{
	msgpack_packer *pk = server_reply_begin(c, m->id);

	msgpack_pack_map(pk, 10);
	proto_pack_kv_str(pk, "boot_id", boot_id());
	proto_pack_kv_str(pk, "version", PROTO_VERSION);
	proto_pack_kv_str(pk, "agent_version", BERTH_VERSION);
	proto_pack_kv_u64(pk, "pid", (uint64_t)getpid());
	proto_pack_kv_u64(pk, "started_at", ops_started_at);
	proto_pack_kv_u64(pk, "uptime_ms", clock_mono_ms() - ops_started_mono);
	proto_pack_kv_u64(pk, "first_seq", events_first_seq());
	proto_pack_kv_u64(pk, "last_seq", events_last_seq());
	proto_pack_str(pk, "services");
	service_pack_list(pk);
	proto_pack_str(pk, "checks");
	service_pack_checks(pk);
	server_reply_end(c);
}

static void
ops_subscribe(struct server_conn *c, const struct proto_msg *m)
{
	uint64_t from = events_last_seq() + 1;
	msgpack_packer *pk;
	int r;

	r = proto_arg_u64(m->args, "from_seq", &from);
	if (r < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "from_seq must be a non-negative integer");
		return;
	}
	if (from == 0)
		from = 1;
	/* A seq never journaled: the client is confused about the boot. */
	if (from > events_last_seq() + 1) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "from_seq %llu is past the last event (%llu) of boot %s",
		    (unsigned long long)from,
		    (unsigned long long)events_last_seq(), boot_id());
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 3);
	proto_pack_kv_u64(pk, "first_seq", events_first_seq());
	proto_pack_kv_u64(pk, "last_seq", events_last_seq());
	/* The first seq sent: a seq trimmed away is not, and the gap event
	 * (which server_subscribe sends from what was asked) says so. */
	proto_pack_kv_u64(pk, "from_seq",
	    from < events_first_seq() ? events_first_seq() : from);
	server_reply_end(c);
	server_subscribe(c, from);
}

static void
ops_unsubscribe(struct server_conn *c, const struct proto_msg *m)
{
	server_unsubscribe(c);
	server_reply_empty(c, m->id);
}

/*
 * The credential a gateway request carries, checked at its door: NULL if
 * it opens the door, else the error already answered. Takes peer (for the
 * refusal's message) into peer[peerlen], the door into *door and, when a
 * grant opened it, the grant into *admit (admit->id "" otherwise).
 */
static const char *
ops_gateway_credential(struct server_conn *c, const struct proto_msg *m,
    char *peer, size_t peerlen, int *door, struct grant_admit *admit)
{
	char dname[16], cred[TOKENFILE_MAX + 1], key[GRANTREC_TOKEN_LEN + 2];
	const char *refused = NULL;
	int d, n, k;

	admit->id[0] = '\0';
	key[0] = '\0';
	n = proto_arg_str(m->args, "credential", cred, sizeof cred);
	k = proto_arg_str(m->args, "key", key, sizeof key);
	if (proto_arg_str(m->args, "peer", peer, peerlen) <= 0 ||
	    proto_arg_str(m->args, "door", dname, sizeof dname) <= 0 || n < 0 ||
	    k < 0 || (d = token_door_find(dname)) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s needs \"peer\", \"door\" (v1, novnc, cdp, cdp-relay, "
		    "pty, preview or runtime) and \"credential\" strings, and "
		    "\"key\" a string if any",
		    m->op);
		refused = PROTO_E_BAD_ARGS;
	} else if (!token_check((enum token_door)d, cred, strlen(cred)) &&
	    !grant_check((enum token_door)d, cred, strlen(cred), key, admit)) {
		server_reply_error(c, m->id, PROTO_E_UNAUTHORIZED,
		    "the credential does not open door %s", dname);
		refused = PROTO_E_UNAUTHORIZED;
	} else
		*door = d;
	explicit_bzero(cred, sizeof cred);
	explicit_bzero(key, sizeof key);
	return refused;
}

static void
ops_gateway_check(struct server_conn *c, const struct proto_msg *m)
{
	char peer[sizeof c->peer];
	struct grant_admit admit;
	msgpack_packer *pk;
	int door;

	if (ops_gateway_credential(c, m, peer, sizeof peer, &door, &admit) !=
	    NULL)
		return;
	if (admit.id[0] == '\0') {
		server_reply_empty(c, m->id);
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, (uint32_t)grant_admit_keys(&admit));
	grant_pack_admit(pk, &admit);
	server_reply_end(c);
}

/* gateway.attach: the gateway's client came through door v1 or pty with
 * the token, or through door pty with a grant of one session (which then
 * limits the connection to that session: ops_grant_may). */
static void
ops_gateway_attach(struct server_conn *c, const struct proto_msg *m)
{
	char peer[sizeof c->peer];
	struct grant_admit admit = {.id = ""};
	int door = TOKEN_DOOR_V1;

	/* berth's own programs (root) attach to speak as a remote client
	 * would; the gateway must show what its client presented. */
	if (c->gateway &&
	    ops_gateway_credential(c, m, peer, sizeof peer, &door, &admit) !=
	        NULL)
		return;
	if (!c->gateway &&
	    proto_arg_str(m->args, "peer", peer, sizeof peer) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "gateway.attach needs \"peer\" (a string)");
		return;
	}
	if (door != TOKEN_DOOR_V1 && door != TOKEN_DOOR_PTY) {
		server_reply_error(c, m->id, PROTO_E_FORBIDDEN,
		    "gateway.attach is for doors v1 and pty");
		return;
	}
	c->remote = true;
	memcpy(c->peer, peer, sizeof peer);
	if (admit.id[0] != '\0') {
		memcpy(c->grant, admit.id, sizeof c->grant);
		memcpy(c->grant_pty, admit.scope.name, sizeof c->grant_pty);
		c->grant_write = admit.scope.write;
	}
	server_reply_empty(c, m->id);
}

/* auth.failed is journaled at most once per peer and reason per this
 * interval, for at most this many peers at once, however many refusals
 * arrive: the gateway sums them already, and a gateway that did not
 * could otherwise write the journal over. What is held back is added to
 * the peer's next event. */
#define OPS_AUTH_FAILED_INTERVAL_MS 500
#define OPS_AUTH_FAILED_PEERS 256

struct ops_auth_failed {
	char peer[64];
	char reason[32];
	uint64_t last_ms; /* when it was last journaled; 0: a free slot */
	uint64_t held;    /* refusals held back since */
};

static struct ops_auth_failed ops_auth_failed_peers[OPS_AUTH_FAILED_PEERS];

/* The slot of peer and reason: its own, else a free one or the one
 * journaled longest ago, made its. */
static struct ops_auth_failed *
ops_auth_failed_slot(const char *peer, const char *reason)
{
	struct ops_auth_failed *s, *oldest = &ops_auth_failed_peers[0];
	size_t i;

	for (i = 0; i < OPS_AUTH_FAILED_PEERS; i++) {
		s = &ops_auth_failed_peers[i];
		if (s->last_ms != 0 && strcmp(s->peer, peer) == 0 &&
		    strcmp(s->reason, reason) == 0)
			return s;
		if (s->last_ms < oldest->last_ms)
			oldest = s;
	}
	memset(oldest, 0, sizeof *oldest);
	snprintf(oldest->peer, sizeof oldest->peer, "%s", peer);
	snprintf(oldest->reason, sizeof oldest->reason, "%s", reason);
	return oldest;
}

static void
ops_gateway_auth_failed(struct server_conn *c, const struct proto_msg *m)
{
	char peer[64], reason[32];
	struct ops_auth_failed *s;
	msgpack_packer *pk;
	uint64_t count = 1, now;

	if (proto_arg_str(m->args, "peer", peer, sizeof peer) <= 0 ||
	    proto_arg_str(m->args, "reason", reason, sizeof reason) <= 0 ||
	    proto_arg_u64(m->args, "count", &count) < 0 || count == 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "gateway.auth_failed needs \"peer\" and \"reason\" "
		    "strings, and a \"count\" of at least 1 if any");
		return;
	}
	server_reply_empty(c, m->id);
	now = clock_mono_ms() + 1;
	s = ops_auth_failed_slot(peer, reason);
	if (s->last_ms != 0 && now - s->last_ms < OPS_AUTH_FAILED_INTERVAL_MS) {
		s->held += count;
		return;
	}
	count += s->held;
	s->held = 0;
	s->last_ms = now;
	log_info("the gateway refused %" PRIu64 " request%s from %s (%s)",
	    count, count == 1 ? "" : "s", peer, reason);
	pk = events_begin(EV_AUTH_FAILED);
	msgpack_pack_map(pk, 3);
	proto_pack_kv_str(pk, "peer", peer);
	proto_pack_kv_str(pk, "reason", reason);
	proto_pack_kv_u64(pk, "count", count);
	events_commit();
}

static void
ops_service_list(struct server_conn *c, const struct proto_msg *m)
{
	msgpack_packer *pk = server_reply_begin(c, m->id);

	msgpack_pack_map(pk, 1);
	proto_pack_str(pk, "services");
	service_pack_list(pk);
	server_reply_end(c);
}

/* The service named by the "name" argument, or NULL after an error reply;
 * its name is copied to name. */
static struct service *
ops_service_arg(struct server_conn *c, const struct proto_msg *m,
    char name[CONFIG_MAX_NAME + 1])
{
	struct service *s;

	if (proto_arg_str(m->args, "name", name, CONFIG_MAX_NAME + 1) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s needs \"name\" (a service name)", m->op);
		return NULL;
	}
	s = service_find(name);
	if (s == NULL)
		server_reply_error(
		    c, m->id, PROTO_E_NOT_FOUND, "no service \"%s\"", name);
	return s;
}

static void
ops_service_status(struct server_conn *c, const struct proto_msg *m)
{
	char name[CONFIG_MAX_NAME + 1];
	struct service *s = ops_service_arg(c, m, name);

	if (s == NULL)
		return;
	service_pack_status(server_reply_begin(c, m->id), s);
	server_reply_end(c);
}

/* service.start, .stop and .restart: act, then answer with the state. */
static void
ops_service_act(struct server_conn *c, const struct proto_msg *m,
    int (*act)(struct service *, const char **, char **))
{
	char name[CONFIG_MAX_NAME + 1];
	struct service *s = ops_service_arg(c, m, name);
	const char *code;
	char *cause = NULL;

	if (s == NULL)
		return;
	if (act(s, &code, &cause) < 0) {
		server_reply_error(c, m->id, code, "%s", cause);
		free(cause);
		return;
	}
	service_pack_status(server_reply_begin(c, m->id), s);
	server_reply_end(c);
}

static void
ops_service_start(struct server_conn *c, const struct proto_msg *m)
{
	ops_service_act(c, m, service_start);
}

static void
ops_service_stop(struct server_conn *c, const struct proto_msg *m)
{
	ops_service_act(c, m, service_stop);
}

static void
ops_service_restart(struct server_conn *c, const struct proto_msg *m)
{
	ops_service_act(c, m, service_restart);
}

static void
ops_service_signal(struct server_conn *c, const struct proto_msg *m)
{
	char name[CONFIG_MAX_NAME + 1];
	struct service *s = ops_service_arg(c, m, name);
	const char *code;
	char *cause = NULL;
	msgpack_packer *pk;
	int sig;

	if (s == NULL || args_signal(c, m, &sig) < 0)
		return;
	if (service_signal(s, sig, &code, &cause) < 0) {
		server_reply_error(c, m->id, code, "%s", cause);
		free(cause);
		return;
	}
	pk = server_reply_begin(c, m->id);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "name", name);
	proto_pack_kv_i64(pk, "signal", sig);
	server_reply_end(c);
}

static void
ops_check_report(struct server_conn *c, const struct proto_msg *m)
{
	char name[CONFIG_MAX_NAME + 1], reason[256] = "";
	struct service *s;
	bool ok;

	if ((s = ops_service_arg(c, m, name)) == NULL)
		return;
	if (c->desktop && strcmp(name, c->desktop_check) != 0) {
		server_reply_error(c, m->id, PROTO_E_FORBIDDEN,
		    "berth-desktop reports check \"%s\" only",
		    c->desktop_check);
		return;
	}
	if (proto_arg_bool(m->args, "ok", &ok) <= 0 ||
	    proto_arg_str(m->args, "reason", reason, sizeof reason) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "check.report needs \"ok\" (a boolean) and optionally "
		    "\"reason\" (a string)");
		return;
	}
	if (service_report(s, ok, reason) < 0) {
		server_reply_error(c, m->id, PROTO_E_CONFLICT,
		    "service \"%s\" is not probed by report", name);
		return;
	}
	server_reply_empty(c, m->id);
}

/* The handlers of berthd's ops; the desktop's are provider_forward's. */
static const ops_handler ops_handlers[CATALOG_NOPS] = {
    [CATALOG_OP_HELLO] = ops_hello,
    [CATALOG_OP_PING] = ops_ping,
    [CATALOG_OP_STATE] = ops_state,
    [CATALOG_OP_EVENTS_SUBSCRIBE] = ops_subscribe,
    [CATALOG_OP_EVENTS_UNSUBSCRIBE] = ops_unsubscribe,
    [CATALOG_OP_REQUEST_CANCEL] = inflight_op_cancel,
    [CATALOG_OP_SERVICE_LIST] = ops_service_list,
    [CATALOG_OP_SERVICE_STATUS] = ops_service_status,
    [CATALOG_OP_SERVICE_START] = ops_service_start,
    [CATALOG_OP_SERVICE_STOP] = ops_service_stop,
    [CATALOG_OP_SERVICE_RESTART] = ops_service_restart,
    [CATALOG_OP_SERVICE_SIGNAL] = ops_service_signal,
    [CATALOG_OP_CHECK_REPORT] = ops_check_report,
    [CATALOG_OP_PTY_OPEN] = pty_op_open,
    [CATALOG_OP_PTY_ATTACH] = pty_op_attach,
    [CATALOG_OP_PTY_DETACH] = pty_op_detach,
    [CATALOG_OP_PTY_INPUT] = pty_op_input,
    [CATALOG_OP_PTY_RESIZE] = pty_op_resize,
    [CATALOG_OP_PTY_SIGNAL] = pty_op_signal,
    [CATALOG_OP_PTY_CLOSE] = pty_op_close,
    [CATALOG_OP_PTY_LIST] = pty_op_list,
    [CATALOG_OP_PROC_START] = proc_op_start,
    [CATALOG_OP_PROC_ATTACH] = proc_op_attach,
    [CATALOG_OP_PROC_ACK] = proc_op_ack,
    [CATALOG_OP_PROC_DETACH] = proc_op_detach,
    [CATALOG_OP_PROC_INPUT] = proc_op_input,
    [CATALOG_OP_PROC_CLOSE_STDIN] = proc_op_close_stdin,
    [CATALOG_OP_PROC_SIGNAL] = proc_op_signal,
    [CATALOG_OP_PROC_WAIT] = proc_op_wait,
    [CATALOG_OP_PROC_LIST] = proc_op_list,
    [CATALOG_OP_FS_STAT] = fs_op_stat,
    [CATALOG_OP_FS_LIST] = fs_op_list,
    [CATALOG_OP_FS_READ] = fs_op_read,
    [CATALOG_OP_FS_WRITE] = fs_op_write,
    [CATALOG_OP_FS_MKDIR] = fs_op_mkdir,
    [CATALOG_OP_FS_MOVE] = fs_op_move,
    [CATALOG_OP_FS_REMOVE] = fs_op_remove,
    [CATALOG_OP_FS_CHMOD] = fs_op_chmod,
    [CATALOG_OP_FS_WATCH] = fswatch_op_watch,
    [CATALOG_OP_FS_UNWATCH] = fswatch_op_unwatch,
    [CATALOG_OP_FS_WATCHES] = fswatch_op_list,
    [CATALOG_OP_SECRETS_SET] = secrets_op_set,
    [CATALOG_OP_SECRETS_UNSET] = secrets_op_unset,
    [CATALOG_OP_SECRETS_LIST] = secrets_op_list,
    [CATALOG_OP_ARTIFACT_PUBLISH] = artifact_op_publish,
    [CATALOG_OP_ARTIFACT_READ] = artifact_op_read,
    [CATALOG_OP_ARTIFACT_LIST] = artifact_op_list,
    [CATALOG_OP_RUNTIME_LIST] = runtime_op_list,
    [CATALOG_OP_RUNTIME_START] = runtime_op_start,
    [CATALOG_OP_RUNTIME_STOP] = runtime_op_stop,
    [CATALOG_OP_RUNTIME_STATUS] = runtime_op_status,
    [CATALOG_OP_RUNTIME_PAUSE] = runtime_op_pause,
    [CATALOG_OP_RUNTIME_RESUME] = runtime_op_resume,
    [CATALOG_OP_LIMITS_STATUS] = limit_op_status,
    [CATALOG_OP_WORKSPACE_PREPARE] = workspace_op_prepare,
    [CATALOG_OP_TASK_RUN] = task_op_run,
    [CATALOG_OP_TASK_SHOW] = task_op_show,
    [CATALOG_OP_TASK_LIST] = task_op_list,
    [CATALOG_OP_TASK_ATTACH] = task_op_attach,
    [CATALOG_OP_TASK_CANCEL] = task_op_cancel,
    [CATALOG_OP_TASK_DELIVER] = task_op_deliver,
    [CATALOG_OP_DESKTOP_PROVIDE] = provider_op_provide,
    [CATALOG_OP_DESKTOP_EMIT] = provider_op_emit,
    [CATALOG_OP_GATEWAY_ATTACH] = ops_gateway_attach,
    [CATALOG_OP_GATEWAY_AUTH_FAILED] = ops_gateway_auth_failed,
    [CATALOG_OP_GATEWAY_CHECK] = ops_gateway_check,
    [CATALOG_OP_GATEWAY_REDEEM] = grant_op_redeem,
    [CATALOG_OP_GRANT_CREATE] = grant_op_create,
    [CATALOG_OP_GRANT_LIST] = grant_op_list,
    [CATALOG_OP_GRANT_REVOKE] = grant_op_revoke,
    [CATALOG_OP_PORT_LIST] = ports_op_list,
};

void
ops_init(const struct config *cfg)
{
	bool mine;
	size_t i;

	ops_cfg = cfg;
	ops_started_at = proto_now_ms();
	ops_started_mono = clock_mono_ms();
	for (i = 0; i < CATALOG_NOPS; i++) {
		mine = catalog_ops[i].server == CATALOG_BERTHD;
		if (mine && ops_handlers[i] == NULL)
			log_fatal("op %s has no handler", catalog_ops[i].name);
		if (!mine && ops_handlers[i] != NULL)
			log_fatal("op %s is not berthd's, yet has a handler",
			    catalog_ops[i].name);
	}
}

/* What answers op id: its handler, the forwarder for the desktop's ops,
 * or NULL for an op berthd does not answer. */
static ops_handler
ops_handler_for(enum catalog_op_id id)
{
	if (id == CATALOG_NOPS)
		return NULL;
	if (catalog_ops[id].server == CATALOG_DESKTOP)
		return provider_forward;
	return ops_handlers[id];
}

/* What a connection handed to berth-desktop may call: its own side of
 * the desktop, and nothing that reaches past the desktop user. */
static bool
ops_desktop_may(enum catalog_op_id id)
{
	switch (id) {
	case CATALOG_OP_HELLO:
	case CATALOG_OP_PING:
	case CATALOG_OP_DESKTOP_PROVIDE:
	case CATALOG_OP_DESKTOP_EMIT:
	case CATALOG_OP_CHECK_REPORT:
	case CATALOG_OP_ARTIFACT_PUBLISH: return true;
	default: return false;
	}
}

void
ops_dispatch(struct server_conn *c, const struct proto_msg *m)
{
	enum catalog_op_id id = catalog_op_find(m->op);
	ops_handler fn = ops_handler_for(id);

	if (fn == NULL) {
		server_reply_error(
		    c, m->id, PROTO_E_UNKNOWN_OP, "unknown op \"%s\"", m->op);
		return;
	}
	if (c->gateway && !c->remote && !ops_gateway_may(id)) {
		server_reply_error(c, m->id, PROTO_E_FORBIDDEN,
		    "op \"%s\" needs a client's credential "
		    "(gateway.attach)",
		    m->op);
		return;
	}
	if (catalog_ops[id].access == CATALOG_LOCAL && c->remote) {
		server_reply_error(c, m->id, PROTO_E_FORBIDDEN,
		    "op \"%s\" is not available over the network", m->op);
		return;
	}
	if (c->grant[0] != '\0' && !ops_grant_may(c, id, m)) {
		server_reply_error(c, m->id, PROTO_E_FORBIDDEN,
		    "grant %s opens terminal session %s only%s", c->grant,
		    c->grant_pty, c->grant_write ? "" : ", to watch");
		return;
	}
	if (c->desktop && !ops_desktop_may(id)) {
		server_reply_error(c, m->id, PROTO_E_FORBIDDEN,
		    "op \"%s\" is not berth-desktop's", m->op);
		return;
	}
	/* Local ops need no hello: the gateway attaches a connection before
	 * its client may speak, and berth's programs report without one. */
	if (!c->hello && id != CATALOG_OP_HELLO &&
	    catalog_ops[id].access != CATALOG_LOCAL) {
		server_reply_error(
		    c, m->id, PROTO_E_HELLO_REQUIRED, "send hello first");
		return;
	}
	if (idem_begin(c, id, m))
		return;
	fn(c, m);
}
