/* args: a request's optional arguments, with their limits (see args.h). */
#include <signal.h>

#include "args.h"
#include "signame.h"

int
args_range(struct server_conn *c, const struct proto_msg *m, const char *key,
    uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v = *out;

	if (proto_arg_u64(m->args, key, &v) < 0 || v < lo || v > hi) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s: \"%s\" must be an integer in %llu-%llu", m->op, key,
		    (unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}

int
args_flag(struct server_conn *c, const struct proto_msg *m, const char *key,
    bool *out)
{
	if (proto_arg_bool(m->args, key, out) < 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "%s: \"%s\" must be a bool", m->op, key);
		return -1;
	}
	return 0;
}

int
args_signal(struct server_conn *c, const struct proto_msg *m, int *sig)
{
	char name[16];
	uint64_t num = 0;

	*sig = 0;
	if (proto_arg_str(m->args, "signal", name, sizeof name) > 0) {
		if (signame_parse(name, sig) < 0)
			*sig = 0;
	} else if (proto_arg_u64(m->args, "signal", &num) > 0 && num < NSIG)
		*sig = (int)num;
	if (*sig <= 0) {
		server_reply_error(c, m->id, PROTO_E_BAD_ARGS,
		    "signal must be a signal name (" SIGNAME_LIST
		    ") or number");
		return -1;
	}
	return 0;
}
