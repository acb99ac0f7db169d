/* cli_host: the argument walk the command families share (see
 * cli_host.h). */
#include <string.h>

#include "cli_host.h"

int
cli_host_next(const struct cli_host *h, int argc, char **argv,
    const struct option *opts, const char *shorts, bool *dashdash, int *status,
    char **wordp)
{
	int before, c;

	if (!*dashdash) {
		before = optind == 0 ? 1 : optind;
		c = h->getopt_cb(h->cli, argc, argv, opts, shorts, status);
		if (c != -1)
			return c;
		/* getopt steps over "--" and stops: what follows is words. */
		if (optind == before + 1 && strcmp(argv[before], "--") == 0)
			*dashdash = true;
	}
	if (optind >= argc)
		return -1;
	*wordp = argv[optind++];
	return CLI_HOST_WORD;
}
