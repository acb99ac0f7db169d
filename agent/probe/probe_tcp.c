/* probe_tcp: ready when a TCP connection to HOST:PORT is accepted. The
 * weakest check: a port that accepts proves only that something listens. */
#include <stdlib.h>

#include "probe.h"
#include "xmalloc.h"

/* The check's state: the address, allocated by parse, kept for good. */
static void *
probe_tcp_parse(int argc, char **argv, char **cause)
{
	struct probe_addr *addr = xcalloc(1, sizeof *addr);

	(void)argc;
	if (probe_addr_parse(addr, argv[0], -1, cause) != 0) {
		free(addr);
		return NULL;
	}
	return addr;
}

static int
probe_tcp_check(void *state, struct probe_io *io, char **cause)
{
	return probe_io_connect(io, state, cause);
}

static void
probe_tcp_free(void *state)
{
	probe_addr_free(state);
	free(state);
}

const struct probe_type probe_tcp_type = {
    .name = "tcp",
    .args = "HOST:PORT",
    .minargs = 1,
    .maxargs = 1,
    .parse = probe_tcp_parse,
    .check = probe_tcp_check,
    .free = probe_tcp_free,
};
