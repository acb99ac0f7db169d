/* cli: the core of the berth command line that every command runs on —
 * its exit statuses, the run's settings, the walk over a command's
 * options and words, the connection those settings choose, and how a
 * failure is told. */
#ifndef BERTH_CLI_H
#define BERTH_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "cli_conn.h"

/* Exit statuses, part of the CLI's interface (docs/operations.md). */
enum cli_exit {
	CLI_EXIT_OK = 0,
	/* The server answered with an error, or a file here failed. */
	CLI_EXIT_FAILED = 1,
	CLI_EXIT_USAGE = 2,
	CLI_EXIT_CONNECT = 3, /* cannot connect, or the connection was lost */
	CLI_EXIT_AUTH = 4,    /* the token was refused, or is unreadable */
	/* exec's own, beside its command's (as timeout(1) has them). */
	CLI_EXIT_EXEC_TIMEOUT = 124, /* --timeout ran out; the command died */
	CLI_EXIT_EXEC_BERTH = 125,   /* berth failed: usage, connection... */
	CLI_EXIT_SIGNAL = 128,       /* + N: signal N ended it */
};

/* How long an answer is waited for, unless --timeout says otherwise. */
#define CLI_TIMEOUT_DEFAULT_MS 10000

/* What cli_getopt and cli_next return besides an option's value. */
#define CLI_STOP (-2) /* a usage error, told: the run ends (CLI_EXIT_USAGE) */
#define CLI_WORD (-3) /* a word, in *wordp */

struct cli;

/*
 * One command of the table (cli_table.c), or one sub-command of a command
 * (pty's, record's). The family that runs it defines it beside its code;
 * all of it is static.
 */
struct cli_cmd_entry {
	const char *name;
	const char *usage;   /* the synopsis after the name */
	const char *summary; /* berth --help's lines; NULL for a sub-command */
	/* The synopsis of usage errors and --help, where usage alone is too
	 * short for them (NULL: the name and usage). */
	const char *synopsis;
	/* What usage errors send the reader to (NULL: "--help"). */
	const char *more;
	/* Runs the command: argv[0] is its name, optind is where its own
	 * arguments start. Returns the exit status. */
	int (*exec)(struct cli *cli, int argc, char **argv);
};

/*
 * The run: settings from the command line and the environment (strings of
 * argv, the environment, or static), the command running, and the state
 * of the argument walk. One, in main, for the whole run.
 */
struct cli {
	const char *socket_path;
	const char *url;
	const char *token_file;
	bool json;
	int timeout_ms; /* for an answer */

	const struct cli_cmd_entry *cmd;
	const struct cli_cmd_entry *sub; /* a sub-command of cmd, or NULL */

	bool dashdash; /* cli_next is past "--": all that follows is words */
};

/* The first of the NULL-terminated table named name, or NULL. */
const struct cli_cmd_entry *cli_cmd_find(
    const struct cli_cmd_entry *const *table, const char *name);

/*
 * getopt_long over opts (NULL, or terminated by a zero entry), the
 * global options and the short options of shorts (letters whose value is
 * the letter, ':' after one that takes an argument); one of opts may take
 * a global's name, which it then shadows. The global ones are handled
 * here; --help (the running command's, or all of berth's) and --version
 * print and exit 0. Returns the value of the next option of the command,
 * -1 at the first word or the end, or CLI_STOP.
 */
int cli_getopt(struct cli *cli, int argc, char **argv,
    const struct option *opts, const char *shorts);
/* The next argument of a command whose options may come before, between
 * and after its words: as cli_getopt, but CLI_WORD for a word. */
int cli_next(struct cli *cli, int argc, char **argv, const struct option *opts,
    const char *shorts, char **wordp);
/* The walk of a command that takes options but no words: as cli_getopt,
 * with a word told as a usage error ("NAME takes no words: WORD", a
 * sub-command named after its command): CLI_STOP. */
int cli_next_opt(struct cli *cli, int argc, char **argv,
    const struct option *opts, const char *shorts);
/* The walk of a command that takes no options and no words of its own,
 * then cli_ready. Returns an exit status (0: go on). */
int cli_no_words(struct cli *cli, int argc, char **argv);
/* A command made of sub-commands (record's, runtime's): the word after
 * it picks one of subs (NULL-terminated), which runs with its synopsis in
 * usage errors; without one, "NAME wants WANTS". Returns the status. */
int cli_sub_run(struct cli *cli, int argc, char **argv,
    const struct cli_cmd_entry *const *subs, const char *wants);
/* Once the arguments are read: settles the transport from the options
 * and the environment. Returns an exit status (0: go on). */
int cli_ready(struct cli *cli);

/* "berth: MESSAGE", the synopsis of the command running, and where to
 * read more, on stderr. Returns CLI_EXIT_USAGE. */
int cli_usage(struct cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* berth --help: the synopsis, every command of the table, the options
 * and the exit statuses. */
void cli_help(void);

/* An exit of the sandbox's ({code} or {signal, core}) as the status a
 * shell gives it: the code's low byte, or CLI_EXIT_SIGNAL + N for signal
 * N. Returns the signal (0 for a code) with *status, or -1 if e holds
 * neither. */
int cli_exit_status(const msgpack_object *e, int *status);

/* Connects by the settings and says hello: a cli_conn status, *cause on
 * failure (the caller frees it). */
int cli_open(struct cli *cli, struct cli_conn **connp, char **cause);
/* Tells a failed cli_conn status (and frees cause), but an interruption,
 * which ends the run quietly. Returns the exit status for it. */
int cli_fail(int status, char *cause);

/* Packs {id: ctx}, ctx a string: the args of the ops that take one id
 * (task.show, grant.revoke...). */
void cli_pack_id_cb(msgpack_packer *pk, void *ctx);

/* Shows a result (owned by the connection); returns the exit status. */
typedef int (*cli_show_cb)(
    struct cli *cli, const msgpack_object *result, void *arg);
/*
 * One request: connects, asks op (its args packed by pack, or none) and
 * hands the result to show with arg. extra_ms is what op itself may take
 * beyond the time for an answer. A failure, an error answer included
 * ("CODE: MESSAGE", exit 1), is told. Returns the exit status.
 */
int cli_ask(struct cli *cli, const char *op, cli_conn_pack_cb pack, void *ctx,
    int extra_ms, cli_show_cb show, void *arg);

/* How a command prints a result for people. */
typedef void (*cli_print_cb)(const msgpack_object *result);
/* One request (cli_ask) whose result is shown as JSON with --json, else
 * by print (nothing if print is NULL). Returns the exit status. */
int cli_ask_print(struct cli *cli, const char *op, cli_conn_pack_cb pack,
    void *ctx, int extra_ms, cli_print_cb print);
/* A show (cli_show_cb) of a result only scripts read: as JSON with
 * --json, else nothing. */
int cli_show_json(struct cli *cli, const msgpack_object *result, void *arg);

#endif
