/* cli_workspace: berth workspace prepare — clone or update a runtime's
 * workspace over workspace.prepare, a private repository's password read
 * from stdin, never from the command line — and that credential, which
 * task deliver's push takes as well. Exits with the statuses every
 * command has. */
#ifndef BERTH_CLI_WORKSPACE_H
#define BERTH_CLI_WORKSPACE_H

#include <msgpack.h>
#include <stdbool.h>

#include "cli.h"

/* The longest password (or token) read from stdin. */
#define CLI_WORKSPACE_PASSWORD_MAX 4096

/*
 * A git host's credential from the command line (workspace prepare's,
 * task deliver's push): --username's (argv's) and, with
 * --password-stdin, the password, read from stdin, never taken from the
 * command line. On its command's stack, which wipes password.
 */
struct cli_workspace_cred {
	const char *username; /* NULL: none */
	bool password_stdin;
	char password[CLI_WORKSPACE_PASSWORD_MAX + 2];
};

extern const struct cli_cmd_entry cli_workspace_entry;

/* Once the options are read: --username goes with --password-stdin,
 * whose password is the first line of stdin, without its line end.
 * CLI_EXIT_OK, or the usage error's status, told. */
int cli_workspace_cred_read(struct cli *cli, struct cli_workspace_cred *c);
/* Packs "credential": {username, password}, with --password-stdin (one
 * entry of the map being packed), else nothing. */
void cli_workspace_pack_cred(
    msgpack_packer *pk, const struct cli_workspace_cred *c);

#endif
