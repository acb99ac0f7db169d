/* test_ws_cred: unit tests of the check berth-workspace's credential
 * helper makes of git's request (ws_cred_match): it answers only for the
 * requested repository's protocol, host and port, and path. */
#include <string.h>

#include "tap.h"
#include "ws_cred.h"

#define URL "https://git.example:8443/team/repo.git"

static bool
match(const char *req, char *why)
{
	return ws_cred_match(req, strlen(req), URL, why, 256);
}

START_TEST(test_the_repository)
{
	char why[256];

	ck_assert(match("protocol=https\nhost=git.example:8443\n"
	                "path=team/repo.git\n\n",
	    why));
	/* Without a path (credential.useHttpPath off), the host decides. */
	ck_assert(match("protocol=https\nhost=git.example:8443\n", why));
	/* git decodes the path it sends; a trailing slash is the same. */
	ck_assert(match("protocol=https\nhost=git.example:8443\n"
	                "path=team/repo.git/\nwwwauth[]=Basic realm=\"x\"\n",
	    why));
	ck_assert(ws_cred_match("protocol=https\nhost=h\npath=a b\n", 32,
	    "https://h/a%20b", why, sizeof why));
}
END_TEST

START_TEST(test_another_host)
{
	char why[256];

	ck_assert(!match("protocol=https\nhost=evil.example:8443\n"
	                 "path=team/repo.git\n",
	    why));
	ck_assert_str_eq(why,
	    "git asked for a credential for another host: evil.example:8443");
	/* Another port, or none, is another host. */
	ck_assert(!match("protocol=https\nhost=git.example\n", why));
	ck_assert(!match("protocol=https\nhost=git.example:443\n", why));
	ck_assert(!match("protocol=https\nhost=git.example:84430\n", why));
	ck_assert(!match("protocol=https\nhost=git.example:844\n", why));
	ck_assert(!match("protocol=https\nhost=GIT.example:8443\n", why));
	/* A second host line, as a smuggled one would be. */
	ck_assert(!match("protocol=https\nhost=git.example:8443\n"
	                 "host=evil.example\n",
	    why));
	ck_assert(
	    !match("protocol=https\nhost=evil\nhost=git.example:8443\n", why));
	/* A control byte in what is named is not passed on. */
	ck_assert(!match("protocol=https\nhost=ev\033il\n", why));
	ck_assert_ptr_eq(strchr(why, '\033'), NULL);
}
END_TEST

START_TEST(test_another_protocol_or_path)
{
	char why[256];

	ck_assert(!match("protocol=http\nhost=git.example:8443\n", why));
	ck_assert_str_eq(why,
	    "git asked for a credential for "
	    "http://git.example:8443, not https");
	/* A client certificate's passphrase is no repository's. */
	ck_assert(!match("protocol=cert\npath=/home/agent/key.pem\n", why));
	ck_assert(!match("protocol=https\nhost=git.example:8443\n"
	                 "path=team/other.git\n",
	    why));
	ck_assert_str_eq(why,
	    "git asked for a credential for another "
	    "repository on git.example:8443: "
	    "/team/other.git");
	ck_assert(!match("protocol=https\nhost=git.example:8443\n"
	                 "path=team/repo.git/../other.git\n",
	    why));
	ck_assert(!match("protocol=https\nhost=git.example:8443\n"
	                 "path=team/repo.gi\n",
	    why));
	ck_assert(!match("protocol=https\nhost=git.example:8443\n"
	                 "path=team/repo.git\npath=x\n",
	    why));
}
END_TEST

START_TEST(test_malformed)
{
	char why[256], big[5000];

	ck_assert(!match("", why));
	ck_assert(!match("\n\n", why));
	ck_assert(!match("host=git.example:8443\n", why));
	ck_assert(!match("protocol=https\n", why));
	ck_assert(!match("protocol=https\nhost\n", why));
	ck_assert(!match("protocolhttps\nhost=git.example:8443\n", why));
	/* A request cut before its host's end is not the host. */
	ck_assert(!ws_cred_match("protocol=https\nhost=git.example:8443\n", 30,
	    URL, why, sizeof why));
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	memcpy(big, "protocol=https\nhost=", 20);
	ck_assert(!match(big, why));
	/* A URL berth never passes answers nothing. */
	ck_assert(!ws_cred_match(
	    "protocol=https\nhost=h\n", 22, "http://h/x", why, sizeof why));
	ck_assert(!ws_cred_match(
	    "protocol=https\nhost=h\n", 22, "https://h", why, sizeof why));
	/* A short why is cut, still ended. */
	ck_assert(
	    !ws_cred_match("protocol=https\nhost=evil\n", 25, URL, why, 8));
	ck_assert_uint_eq(strlen(why), 7);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("ws_cred");
	TCase *tc = tcase_create("ws_cred");

	tcase_add_test(tc, test_the_repository);
	tcase_add_test(tc, test_another_host);
	tcase_add_test(tc, test_another_protocol_or_path);
	tcase_add_test(tc, test_malformed);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
