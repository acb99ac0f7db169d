/* cli_workspace: berth workspace prepare, and the credential it reads. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_print.h"
#include "cli_workspace.h"

/* A clone answers when git is done: an hour covers a large repository
 * on a slow link (berth events --follow shows its progress meanwhile). */
#define CLI_WORKSPACE_WAIT_MS 3600000

enum {
	CLI_WORKSPACE_OPT_BRANCH = 256,
	CLI_WORKSPACE_OPT_DIR,
	CLI_WORKSPACE_OPT_USERNAME,
	CLI_WORKSPACE_OPT_PASSWORD_STDIN,
};

/* prepare's words and options (strings of argv), and the credential,
 * which cli_workspace_prepare wipes. */
struct cli_workspace_args {
	const char *runtime;
	const char *repo;
	const char *branch;
	const char *dir;
	struct cli_workspace_cred cred;
};

int
cli_workspace_cred_read(struct cli *cli, struct cli_workspace_cred *c)
{
	size_t n;

	if (c->username != NULL && !c->password_stdin)
		return cli_usage(cli, "--username goes with --password-stdin");
	if (!c->password_stdin)
		return CLI_EXIT_OK;
	if (fgets(c->password, sizeof c->password, stdin) == NULL)
		return cli_usage(cli, "--password-stdin: stdin is empty");
	n = strcspn(c->password, "\r\n");
	if (n > CLI_WORKSPACE_PASSWORD_MAX)
		return cli_usage(cli,
		    "--password-stdin: the password is longer than %d bytes",
		    CLI_WORKSPACE_PASSWORD_MAX);
	c->password[n] = '\0';
	if (n == 0)
		return cli_usage(
		    cli, "--password-stdin: the password is empty");
	return CLI_EXIT_OK;
}

void
cli_workspace_pack_cred(msgpack_packer *pk, const struct cli_workspace_cred *c)
{
	if (!c->password_stdin)
		return;
	proto_pack_str(pk, "credential");
	msgpack_pack_map(pk, 1 + (c->username != NULL));
	if (c->username != NULL)
		proto_pack_kv_str(pk, "username", c->username);
	proto_pack_kv_str(pk, "password", c->password);
}

static void
cli_workspace_pack_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_workspace_args *a = ctx;

	msgpack_pack_map(pk,
	    2 + (a->branch != NULL) + (a->dir != NULL) +
	        a->cred.password_stdin);
	proto_pack_kv_str(pk, "runtime", a->runtime);
	proto_pack_kv_str(pk, "repo", a->repo);
	if (a->branch != NULL)
		proto_pack_kv_str(pk, "branch", a->branch);
	if (a->dir != NULL)
		proto_pack_kv_str(pk, "dir", a->dir);
	cli_workspace_pack_cred(pk, &a->cred);
}

static int
cli_workspace_show(struct cli *cli, const msgpack_object *result, void *arg)
{
	(void)arg;
	cli_print_runtime(result, cli->json);
	return CLI_EXIT_OK;
}

static int
cli_workspace_args(
    struct cli *cli, int argc, char **argv, struct cli_workspace_args *a)
{
	static const struct option opts[] = {
	    {"branch", required_argument, NULL, CLI_WORKSPACE_OPT_BRANCH},
	    {"dir", required_argument, NULL, CLI_WORKSPACE_OPT_DIR},
	    {"username", required_argument, NULL, CLI_WORKSPACE_OPT_USERNAME},
	    {"password-stdin", no_argument, NULL,
	        CLI_WORKSPACE_OPT_PASSWORD_STDIN},
	    {NULL, 0, NULL, 0},
	};
	char *word;
	int c, status;

	while ((c = cli_next(cli, argc, argv, opts, "", &word)) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_WORD:
			if (a->runtime == NULL)
				a->runtime = word;
			else if (a->repo == NULL)
				a->repo = word;
			else
				return cli_usage(cli,
				    "workspace prepare takes RUNTIME and "
				    "REPO only: %s",
				    word);
			break;
		case CLI_WORKSPACE_OPT_BRANCH: a->branch = optarg; break;
		case CLI_WORKSPACE_OPT_DIR: a->dir = optarg; break;
		case CLI_WORKSPACE_OPT_USERNAME:
			a->cred.username = optarg;
			break;
		case CLI_WORKSPACE_OPT_PASSWORD_STDIN:
			a->cred.password_stdin = true;
			break;
		}
	}
	if (a->repo == NULL)
		return cli_usage(
		    cli, "workspace prepare wants a RUNTIME and a REPO URL");
	if ((status = cli_workspace_cred_read(cli, &a->cred)) != CLI_EXIT_OK)
		return status;
	return cli_ready(cli);
}

static int
cli_workspace_prepare(struct cli *cli, int argc, char **argv)
{
	struct cli_workspace_args a = {0};
	int status;

	if ((status = cli_workspace_args(cli, argc, argv, &a)) == 0)
		status =
		    cli_ask(cli, "workspace.prepare", cli_workspace_pack_cb, &a,
		        CLI_WORKSPACE_WAIT_MS, cli_workspace_show, NULL);
	explicit_bzero(a.cred.password, sizeof a.cred.password);
	return status;
}

static const struct cli_cmd_entry cli_workspace_prepare_entry = {
    .name = "prepare",
    .usage = "RUNTIME REPO [--branch B] [--dir DIR] [--username U] "
             "[--password-stdin]",
    .exec = cli_workspace_prepare,
};

static const struct cli_cmd_entry *const cli_workspace_subs[] = {
    &cli_workspace_prepare_entry,
    NULL,
};

static int
cli_workspace_run(struct cli *cli, int argc, char **argv)
{
	return cli_sub_run(cli, argc, argv, cli_workspace_subs, "prepare");
}

const struct cli_cmd_entry cli_workspace_entry = {
    .name = "workspace",
    .usage = "prepare RUNTIME REPO ...",
    .summary = "clone an https REPO into RUNTIME's workspace, or\n"
               "fetch and check out in it (--branch B, --dir DIR);\n"
               "a private one's password or token comes on stdin\n"
               "(--password-stdin, --username U)",
    .exec = cli_workspace_run,
};
