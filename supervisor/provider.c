/* provider: ops served by another process through berthd (see
 * provider.h). */
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "events.h"
#include "inflight.h"
#include "log.h"
#include "provider.h"
#include "xmalloc.h"

/* One forwarded request: who asked, under which id. */
struct provider_req {
	uint64_t fwd_id; /* the id the provider sees */
	uint64_t serial; /* the asking connection */
	uint64_t id;     /* its id */
	char op[PROTO_MAX_NAME + 1];
};

static uint64_t provider_serial; /* 0: no provider */
static bool provider_configured; /* a service is berth-desktop */
static struct provider_req provider_reqs[PROVIDER_PENDING_MAX];
static size_t provider_nreqs;
static uint64_t provider_next_id = 1;
static msgpack_sbuffer provider_sb;
static msgpack_packer provider_pk;

/* The events a provider may journal: the ones it alone can tell. */
static const char *const provider_kinds[] = {
    EV_RECORD_STARTED, EV_RECORD_PUBLISHED, EV_RECORD_FAILED};

void
provider_init(const struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nservices; i++)
		if (cfg->services[i].desktop_check != NULL)
			provider_configured = true;
	msgpack_sbuffer_init(&provider_sb);
	msgpack_packer_init(&provider_pk, &provider_sb, msgpack_sbuffer_write);
}

void
provider_shutdown(void)
{
	msgpack_sbuffer_destroy(&provider_sb);
}

bool
provider_available(void)
{
	return provider_configured || provider_serial != 0;
}

bool
provider_is(const struct server_conn *c)
{
	return provider_serial != 0 && c->serial == provider_serial;
}

/* Every request still owed fails, with why. */
static void
provider_fail_all(const char *why)
{
	struct server_conn *c;
	size_t i;

	for (i = 0; i < provider_nreqs; i++) {
		if ((c = server_conn_answer(
		         provider_reqs[i].serial, provider_reqs[i].id)) != NULL)
			server_reply_error(c, provider_reqs[i].id,
			    PROTO_E_UNAVAILABLE, "%s: %s", provider_reqs[i].op,
			    why);
		inflight_end(provider_reqs[i].serial, provider_reqs[i].id);
	}
	provider_nreqs = 0;
}

void
provider_op_provide(struct server_conn *c, const struct proto_msg *m)
{
	if (provider_serial != 0 && provider_serial != c->serial) {
		log_info("a new desktop provider replaces the last");
		provider_fail_all("the desktop's server was replaced");
	}
	provider_serial = c->serial;
	server_reply_empty(c, m->id);
}

void
provider_op_emit(struct server_conn *c, const struct proto_msg *m)
{
	const msgpack_object *data = proto_map_get(m->args, "data");
	char kind[PROTO_MAX_NAME + 1];
	msgpack_packer *pk;
	size_t i, n = sizeof provider_kinds / sizeof provider_kinds[0];

	if (!provider_is(c)) {
		server_reply_error(c, m->id, PROTO_E_FORBIDDEN,
		    "only the desktop's server journals its events");
		return;
	}
	if (proto_arg_str(m->args, "kind", kind, sizeof kind) <= 0 ||
	    data == NULL || data->type != MSGPACK_OBJECT_MAP) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "desktop.emit needs \"kind\" and \"data\" (a map)");
		return;
	}
	for (i = 0; i < n && strcmp(kind, provider_kinds[i]) != 0; i++)
		;
	if (i == n) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "\"%s\" is not an event the desktop tells", kind);
		return;
	}
	/* The provider is another user's program: what it journals is
	 * bounded like anything else it sends. */
	msgpack_sbuffer_clear(&provider_sb);
	msgpack_pack_object(&provider_pk, *data);
	if (provider_sb.size > PROVIDER_EMIT_MAX) {
		server_reply_error(c, m->id, PROTO_E_TOO_LARGE,
		    "desktop.emit: data of %zu bytes is more than %d",
		    provider_sb.size, PROVIDER_EMIT_MAX);
		return;
	}
	pk = events_begin(provider_kinds[i]);
	msgpack_pack_object(pk, *data);
	events_commit();
	server_reply_empty(c, m->id);
}

/* request.cancel of a forwarded request: berth-desktop is not told (no
 * op of its own can be stopped halfway), its answer is dropped when it
 * comes; the slot is held until then, as berth-desktop still works on
 * it. */
static void
provider_cancel(void *arg, uint64_t serial, uint64_t id)
{
	size_t i;

	(void)arg;
	for (i = 0; i < provider_nreqs; i++)
		if (provider_reqs[i].serial == serial &&
		    provider_reqs[i].id == id)
			provider_reqs[i].serial = 0;
}

void
provider_forward(struct server_conn *c, const struct proto_msg *m)
{
	struct server_conn *p =
	    provider_serial != 0 ? server_conn_find(provider_serial) : NULL;
	struct provider_req *r;

	if (p == NULL && !provider_configured) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%s: this sandbox has no desktop (no service of its "
		    "configuration is berth-desktop)",
		    m->op);
		return;
	}
	if (p == NULL) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%s: the desktop's server (berth-desktop) is not running",
		    m->op);
		return;
	}
	if (provider_nreqs == PROVIDER_PENDING_MAX) {
		server_reply_error(c, m->id, PROTO_E_UNAVAILABLE,
		    "%s: %d desktop requests wait already", m->op,
		    PROVIDER_PENDING_MAX);
		return;
	}
	r = &provider_reqs[provider_nreqs++];
	r->fwd_id = provider_next_id++;
	r->serial = c->serial;
	r->id = m->id;
	snprintf(r->op, sizeof r->op, "%s", m->op);
	msgpack_sbuffer_clear(&provider_sb);
	proto_pack_request(&provider_pk, r->fwd_id, m->op);
	msgpack_pack_object(&provider_pk, *m->args);
	server_send(p, provider_sb.data, provider_sb.size);
	inflight_add(c, m->id, provider_cancel, NULL);
}

void
provider_answer(struct server_conn *c, const struct proto_msg *m)
{
	const msgpack_object *obj; /* its result, or its error map */
	struct server_conn *to;
	size_t i;

	(void)c;
	for (i = 0; i < provider_nreqs; i++)
		if (provider_reqs[i].fwd_id == m->id)
			break;
	if (i == provider_nreqs) {
		log_warn("the desktop's server answered request %llu, which "
		         "it was not asked",
		    (unsigned long long)m->id);
		return;
	}
	to = server_conn_answer(provider_reqs[i].serial, provider_reqs[i].id);
	if (to != NULL) {
		msgpack_sbuffer_clear(&provider_sb);
		obj = m->ok ? m->result
		            : proto_map_get(&m->unpacked.data, "error");
		if (obj != NULL)
			msgpack_pack_object(&provider_pk, *obj);
		else
			msgpack_pack_nil(&provider_pk);
		server_reply_packed(to, provider_reqs[i].id, m->ok,
		    provider_sb.data, provider_sb.size);
	}
	inflight_end(provider_reqs[i].serial, provider_reqs[i].id);
	provider_reqs[i] = provider_reqs[--provider_nreqs];
}

void
provider_conn_gone(struct server_conn *c)
{
	if (!provider_is(c))
		return;
	provider_serial = 0;
	log_info("the desktop's server went away");
	provider_fail_all("the desktop's server (berth-desktop) went away");
}
