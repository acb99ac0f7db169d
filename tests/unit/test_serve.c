/* test_serve: unit tests of berth-desktop's op table (recorder/serve.c):
 * serve_start refuses to go on, naming the op, while an op the catalog
 * gives berth-desktop has no handler, and an op that is not its own
 * cannot be added; in checked builds, an answer whose map was miscounted
 * stops berth-desktop before it is queued. */
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "log.h"
#include "serve.h"
#include "tap.h"

/* The ids of the ops the catalog gives berth-desktop, in catalog order. */
static enum catalog_op_id desktop_ops[CATALOG_NOPS];
static int ndesktop_ops;

static void
op_cb(struct serve *sv, uint64_t id, const msgpack_object *args, void *arg)
{
	(void)sv;
	(void)id;
	(void)args;
	(void)arg;
}

/* Adds every desktop op but skip (CATALOG_NOPS: none), then starts. */
static void
add_and_start(enum catalog_op_id skip)
{
	struct serve *sv = serve_create(NULL);
	int i;

	for (i = 0; i < ndesktop_ops; i++)
		if (desktop_ops[i] != skip)
			serve_add(sv, desktop_ops[i], op_cb, NULL);
	serve_start(sv);
	serve_free(sv);
}

/* Runs fn(arg) in a child whose stderr goes to text[size]; returns its
 * wait status. */
static int
in_child(void (*fn)(enum catalog_op_id), enum catalog_op_id arg, char *text,
    size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fds[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		log_init("test_serve", 0);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	while (len + 1 < size &&
	    (n = read(fds[0], text + len, size - 1 - len)) > 0)
		len += (size_t)n;
	text[len] = '\0';
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

START_TEST(test_every_op_starts)
{
	char text[4096];
	int status = in_child(add_and_start, CATALOG_NOPS, text, sizeof text);

	ck_assert_int_gt(ndesktop_ops, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "status %d: %s", status, text);
}
END_TEST

START_TEST(test_missing_op_refused)
{
	enum catalog_op_id skip = desktop_ops[_i];
	const char *name = catalog_ops[skip].name;
	char text[4096];
	int status = in_child(add_and_start, skip, text, sizeof text);

	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0,
	    "started without %s (status %d)", name, status);
	ck_assert_msg(
	    strstr(text, name) != NULL, "\"%s\" does not name %s", text, name);
}
END_TEST

static void
add_foreign(enum catalog_op_id op)
{
	struct serve *sv = serve_create(NULL);

	serve_add(sv, op, op_cb, NULL);
	serve_free(sv);
}

/* berthd's ops are not berth-desktop's to serve. */
START_TEST(test_foreign_op_refused)
{
	char text[4096];
	int status = in_child(add_foreign, CATALOG_OP_PING, text, sizeof text);

	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0,
	    "added ping (status %d)", status);
	ck_assert_msg(strstr(text, "ping") != NULL, "\"%s\"", text);
}
END_TEST

#ifdef BERTH_CHECKED
START_TEST(test_miscounted_answer_aborts)
{
	struct serve *sv = serve_create(NULL);
	msgpack_packer *pk = serve_reply_begin(sv, 5);

	msgpack_pack_map(pk, 2);
	proto_pack_kv_u64(pk, "width", 1280);
	serve_reply_end(sv);
	serve_free(sv);
}
END_TEST
#endif

static Suite *
serve_suite(void)
{
	Suite *s = suite_create("serve");
	TCase *tc = tcase_create("ops");
	int i;

	for (i = 0; i < CATALOG_NOPS; i++)
		if (catalog_ops[i].server == CATALOG_DESKTOP)
			desktop_ops[ndesktop_ops++] = (enum catalog_op_id)i;
	tcase_add_test(tc, test_every_op_starts);
	tcase_add_loop_test(tc, test_missing_op_refused, 0, ndesktop_ops);
	tcase_add_test(tc, test_foreign_op_refused);
	suite_add_tcase(s, tc);
#ifdef BERTH_CHECKED
	tc = tcase_create("checked");
	tcase_add_test_raise_signal(tc, test_miscounted_answer_aborts, SIGABRT);
	suite_add_tcase(s, tc);
#endif
	return s;
}

int
main(void)
{
	return tap_run(serve_suite());
}
