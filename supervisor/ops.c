/* ops: berthd's request handlers (see ops.h). */
#include <string.h>
#include <unistd.h>

#include "boot.h"
#include "catalog.h"
#include "clock.h"
#include "events.h"
#include "log.h"
#include "ops.h"
#include "service.h"

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

/* The ops this connection may call. */
static void
ops_pack_capabilities(msgpack_packer *pk, const struct server_conn *c)
{
	size_t i, n = 0;

	for (i = 0; i < catalog_nops; i++)
		if (!c->remote || catalog_ops[i].access == CATALOG_ANY)
			n++;
	msgpack_pack_array(pk, n);
	for (i = 0; i < catalog_nops; i++)
		if (!c->remote || catalog_ops[i].access == CATALOG_ANY)
			proto_pack_str(pk, catalog_ops[i].name);
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
	msgpack_pack_map(pk, 8);
	proto_pack_kv_str(pk, "version", PROTO_VERSION);
	proto_pack_kv_str(pk, "agent_version", BERTH_VERSION);
	proto_pack_kv_str(pk, "boot_id", boot_id());
	proto_pack_str(pk, "labels");
	ops_pack_labels(pk);
	proto_pack_str(pk, "capabilities");
	ops_pack_capabilities(pk, c);
	proto_pack_str(pk, "limits");
	msgpack_pack_map(pk, 2);
	proto_pack_kv_u64(pk, "max_message", PROTO_MAX_MSG);
	proto_pack_kv_u64(pk, "max_depth", PROTO_MAX_DEPTH);
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

	msgpack_pack_map(pk, 9);
	proto_pack_kv_str(pk, "boot_id", boot_id());
	proto_pack_kv_str(pk, "version", BERTH_VERSION);
	proto_pack_kv_u64(pk, "pid", (uint64_t)getpid());
	proto_pack_kv_u64(pk, "started_at", ops_started_at);
	proto_pack_kv_u64(pk, "uptime_ms", clock_mono_ms() - ops_started_mono);
	proto_pack_kv_u64(pk, "first_seq", events_first_seq());
	proto_pack_kv_u64(pk, "last_seq", events_last_seq());
	proto_pack_str(pk, "services");
	service_pack_list(pk);
	/* Readiness checks arrive with the service graph. */
	proto_pack_str(pk, "checks");
	msgpack_pack_map(pk, 0);
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
	proto_pack_kv_u64(pk, "from_seq", from);
	server_reply_end(c);
	server_subscribe(c, from);
}

static void
ops_unsubscribe(struct server_conn *c, const struct proto_msg *m)
{
	server_unsubscribe(c);
	msgpack_pack_map(server_reply_begin(c, m->id), 0);
	server_reply_end(c);
}

static void
ops_gateway_attach(struct server_conn *c, const struct proto_msg *m)
{
	char peer[sizeof c->peer];

	if (proto_arg_str(m->args, "peer", peer, sizeof peer) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "gateway.attach needs \"peer\" (a string)");
		return;
	}
	c->remote = true;
	memcpy(c->peer, peer, sizeof peer);
	msgpack_pack_map(server_reply_begin(c, m->id), 0);
	server_reply_end(c);
}

static void
ops_gateway_auth_failed(struct server_conn *c, const struct proto_msg *m)
{
	char peer[64], reason[32];
	msgpack_packer *pk;

	if (proto_arg_str(m->args, "peer", peer, sizeof peer) <= 0 ||
	    proto_arg_str(m->args, "reason", reason, sizeof reason) <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "gateway.auth_failed needs \"peer\" and \"reason\" "
		    "strings");
		return;
	}
	log_info("refused a WebSocket client from %s: %s token", peer, reason);
	pk = events_begin(EV_AUTH_FAILED);
	msgpack_pack_map(pk, 2);
	proto_pack_kv_str(pk, "peer", peer);
	proto_pack_kv_str(pk, "reason", reason);
	events_commit();
	msgpack_pack_map(server_reply_begin(c, m->id), 0);
	server_reply_end(c);
}

static const struct {
	const char *name;
	ops_handler fn;
} ops_handlers[] = {
    {"hello", ops_hello},
    {"ping", ops_ping},
    {"state", ops_state},
    {"events.subscribe", ops_subscribe},
    {"events.unsubscribe", ops_unsubscribe},
    {"gateway.attach", ops_gateway_attach},
    {"gateway.auth_failed", ops_gateway_auth_failed},
};

static ops_handler
ops_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof ops_handlers / sizeof ops_handlers[0]; i++)
		if (strcmp(ops_handlers[i].name, name) == 0)
			return ops_handlers[i].fn;
	return NULL;
}

void
ops_init(const struct config *cfg)
{
	size_t i;

	ops_cfg = cfg;
	ops_started_at = proto_now_ms();
	ops_started_mono = clock_mono_ms();
	for (i = 0; i < catalog_nops; i++)
		if (catalog_ops[i].server == CATALOG_BERTHD &&
		    ops_find(catalog_ops[i].name) == NULL)
			log_fatal("op %s has no handler", catalog_ops[i].name);
}

void
ops_dispatch(struct server_conn *c, const struct proto_msg *m)
{
	const struct catalog_op *op = catalog_op_find(m->op);
	ops_handler fn =
	    op != NULL && op->server == CATALOG_BERTHD ? ops_find(m->op) : NULL;

	if (fn == NULL) {
		server_reply_error(
		    c, m->id, PROTO_E_UNKNOWN_OP, "unknown op \"%s\"", m->op);
		return;
	}
	if (op->access == CATALOG_LOCAL && c->remote) {
		server_reply_error(c, m->id, PROTO_E_FORBIDDEN,
		    "op \"%s\" is not available over the network", m->op);
		return;
	}
	if (!c->hello && fn != ops_hello && op->access != CATALOG_LOCAL) {
		server_reply_error(
		    c, m->id, PROTO_E_HELLO_REQUIRED, "send hello first");
		return;
	}
	fn(c, m);
}
