/* test_token: unit tests of berthd's credentials (supervisor/token.c):
 * the token opens every door and nothing near it does; the probe
 * credential, read from the descriptor a probe inherits, opens the relay
 * doors and never /v1; the token file is created when missing. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scratch.h"
#include "tap.h"
#include "token.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static char *dir;
static char *path;

static void
write_token(const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static void
setup(void)
{
	char *cause = NULL;

	dir = scratch_make("test_token");
	path = xasprintf("%s/token", dir);
	write_token(TOKEN "\n");
	ck_assert_msg(token_init(path, &cause) == 0, "%s", cause);
}

static void
teardown(void)
{
	token_shutdown();
	free(path);
	scratch_remove(dir);
}

static int
check(enum token_door door, const char *cred)
{
	return token_check(door, cred, strlen(cred));
}

/* The probe credential, as berth-probe reads it. */
static void
probe_credential(char *buf, size_t size)
{
	int fd = token_probe_fd();
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, size - 1);
	close(fd);
	ck_assert_int_eq(n, 64);
	buf[n] = '\0';
}

/* The token opens every door but the previews' and the runtimes', whose
 * URLs name a grant. */
START_TEST(test_token_opens_every_door)
{
	int d;

	for (d = 0; d < TOKEN_NDOORS; d++) {
		ck_assert(check((enum token_door)d, TOKEN) ==
		    (d != TOKEN_DOOR_PREVIEW && d != TOKEN_DOOR_RUNTIME));
		ck_assert(!check((enum token_door)d, ""));
		ck_assert(!check((enum token_door)d, "0123456789abcdef"));
		ck_assert(!check((enum token_door)d, TOKEN "0"));
		ck_assert(!check((enum token_door)d, TOKEN TOKEN));
		ck_assert(!check(
		    (enum token_door)d, "0123456789abcdef0123456789abcdeF"));
	}
}
END_TEST

START_TEST(test_probe_credential_not_at_v1)
{
	char cred[128], again[128];

	probe_credential(cred, sizeof cred);
	ck_assert_str_ne(cred, TOKEN);
	ck_assert(!check(TOKEN_DOOR_V1, cred));
	ck_assert(check(TOKEN_DOOR_NOVNC, cred));
	ck_assert(check(TOKEN_DOOR_CDP, cred));
	ck_assert(check(TOKEN_DOOR_CDP_RELAY, cred));
	ck_assert(!check(TOKEN_DOOR_PTY, cred));
	ck_assert(!check(TOKEN_DOOR_PREVIEW, cred));
	ck_assert(!check(TOKEN_DOOR_RUNTIME, cred));
	/* One per boot: every probe gets the same. */
	probe_credential(again, sizeof again);
	ck_assert_str_eq(cred, again);
	cred[0] = cred[0] == '0' ? '1' : '0';
	ck_assert(!check(TOKEN_DOOR_NOVNC, cred));
}
END_TEST

START_TEST(test_doors_by_name)
{
	ck_assert_int_eq(token_door_find("v1"), TOKEN_DOOR_V1);
	ck_assert_int_eq(token_door_find("novnc"), TOKEN_DOOR_NOVNC);
	ck_assert_int_eq(token_door_find("cdp"), TOKEN_DOOR_CDP);
	ck_assert_int_eq(token_door_find("cdp-relay"), TOKEN_DOOR_CDP_RELAY);
	ck_assert_int_eq(token_door_find("V1"), -1);
	ck_assert_int_eq(token_door_find(""), -1);
}
END_TEST

START_TEST(test_token_file_created)
{
	char *cause = NULL, buf[80];
	struct stat st;
	ssize_t n;
	int fd;

	token_shutdown();
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_msg(token_init(path, &cause) == 0, "%s", cause);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	ck_assert_int_eq(n, 65);
	buf[64] = '\0';
	ck_assert(check(TOKEN_DOOR_V1, buf));
	ck_assert(!check(TOKEN_DOOR_V1, TOKEN));
}
END_TEST

static Suite *
token_suite(void)
{
	Suite *s = suite_create("token");
	TCase *tc = tcase_create("check");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_token_opens_every_door);
	tcase_add_test(tc, test_probe_credential_not_at_v1);
	tcase_add_test(tc, test_doors_by_name);
	tcase_add_test(tc, test_token_file_created);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return tap_run(token_suite());
}
