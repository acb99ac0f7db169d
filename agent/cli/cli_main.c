/* cli_main: the berth command-line client's entry: the global options
 * before the command's name, then the command the table names. */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "cli_table.h"
#include "nodump.h"

int
main(int argc, char **argv)
{
	struct cli cli = {.timeout_ms = CLI_TIMEOUT_DEFAULT_MS};
	char *cause = NULL;

	/* It may read the token file, and carries secret values to set. */
	if (nodump_self(&cause) < 0) {
		fprintf(stderr, "berth: %s\n", cause);
		return CLI_EXIT_FAILED;
	}
	if (cli_getopt(&cli, argc, argv, NULL, "") == CLI_STOP)
		return CLI_EXIT_USAGE;
	if (optind == argc)
		return cli_usage(&cli, "no command given");
	if ((cli.cmd = cli_cmd_find(cli_table, argv[optind])) == NULL)
		return cli_usage(&cli, "unknown command: %s", argv[optind]);
	argc -= optind;
	argv += optind;
	/* The command's own walk starts after its name; 0 makes getopt
	 * start afresh. */
	optind = 0;
	return cli.cmd->exec(&cli, argc, argv);
}
