/* cli_exec: berth exec — one command run in the sandbox through the proc.*
 * ops, its output and exit status passed through as if it ran here: the
 * command's exit status (128 + N for signal N), or one of exec's own
 * (CLI_EXIT_EXEC_*). */
#ifndef BERTH_CLI_EXEC_H
#define BERTH_CLI_EXEC_H

#include <msgpack.h>
#include <stddef.h>

#include "cli.h"

extern const struct cli_cmd_entry cli_exec_entry;

/* --env NAME=VALUE into env, which holds *n of at most max such strings
 * (argv's), their names unique: a later NAME replaces an earlier one.
 * CLI_EXIT_OK, or the usage error's status, told. */
int cli_exec_env(
    struct cli *cli, const char **env, size_t *n, size_t max, const char *arg);
/* Packs "env": {NAME: VALUE} of n such strings (one entry of the map
 * being packed). */
void cli_exec_pack_env(msgpack_packer *pk, const char *const *env, size_t n);

#endif
