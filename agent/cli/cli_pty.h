/* cli_pty: berth pty — the terminal sessions' commands (open, list,
 * attach, send, resize, signal, close, help), and what attach
 * (cli_attach) shares with the others: the arguments of a request and
 * their packers, and the readers of ids, numbers and sizes. */
#ifndef BERTH_CLI_PTY_H
#define BERTH_CLI_PTY_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/* The most a pty.input carries, and the longest session id. */
#define CLI_PTY_INPUT_MAX (64u << 10)
#define CLI_PTY_ID_MAX 32

extern const struct cli_cmd_entry cli_pty_entry;

/* The arguments of one request, for the pack callbacks; on the caller's
 * stack, its strings and data borrowed. */
struct cli_pty_args {
	const char *id;
	unsigned cols;
	unsigned rows;
	const char *cwd;
	uint64_t ttl;
	bool ttl_set;
	char **argv; /* NULL-terminated, or NULL */
	const char *signame;
	uint64_t signum;
	const void *data;
	size_t len;
};

/* {id}, {id, cols, rows} and {id, data}, of a struct cli_pty_args. */
void cli_pty_pack_id_cb(msgpack_packer *pk, void *ctx);
void cli_pty_pack_resize_cb(msgpack_packer *pk, void *ctx);
void cli_pty_pack_input_cb(msgpack_packer *pk, void *ctx);

/* A whole number from min to max (what names it in the usage error),
 * and a session id: CLI_EXIT_OK, or the usage error's status, told. */
int cli_pty_uint(struct cli *cli, const char *what, const char *arg,
    uint64_t min, uint64_t max, uint64_t *out);
int cli_pty_id(struct cli *cli, const char *id);
/* The terminal's size, from stdin or else stdout; false if neither is
 * a terminal that knows it. */
bool cli_pty_winsize(unsigned *cols, unsigned *rows);

#endif
