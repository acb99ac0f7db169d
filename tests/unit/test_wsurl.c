/* test_wsurl: unit tests of the repository URLs workspace.prepare takes
 * (wsurl.c): https with a host, an optional port and a path; every other
 * scheme, a userinfo, a query or fragment, a bad host, port or path
 * refused with a message naming the part and quoting none of the URL. */
#include <string.h>

#include "tap.h"
#include "wsurl.h"

static const char *
check(const char *url)
{
	return wsurl_check(url, strlen(url));
}

START_TEST(test_taken)
{
	static const char *const good[] = {"https://example.com/org/repo.git",
	    "https://127.0.0.1:8443/r.git", "https://[::1]:443/a/b",
	    "https://git.example.org/~user/p%20q", "https://h/x"};
	size_t i;

	for (i = 0; i < sizeof good / sizeof *good; i++)
		ck_assert_msg(
		    check(good[i]) == NULL, "%s: %s", good[i], check(good[i]));
}
END_TEST

/* The refusal of url names want and holds none of secret. */
static void
refused(const char *url, const char *want, const char *secret)
{
	const char *why = check(url);

	ck_assert_msg(why != NULL, "took %s", url);
	ck_assert_msg(strstr(why, want) != NULL, "%s: \"%s\"", url, why);
	if (secret != NULL)
		ck_assert_msg(strstr(why, secret) == NULL, "%s echoed", url);
}

START_TEST(test_refused)
{
	refused("http://h/r.git", "scheme", NULL);
	refused("ssh://git@h/r.git", "scheme", NULL);
	refused("git://h/r.git", "scheme", NULL);
	refused("file:///srv/r.git", "scheme", NULL);
	refused("ext::sh%20-c%20id", "scheme", NULL);
	refused("HTTPS://h/r.git", "scheme", NULL);
	refused("https:/h/r.git", "scheme", NULL);
	refused("https://tok3n@h/r.git", "username/password", "tok3n");
	refused("https://u:pa55w0rd@h/r.git", "username/password", "pa55w0rd");
	refused("https://h/r.git?token=s3cr3t", "query", "s3cr3t");
	refused("https://h/r.git#s3cr3t", "fragment", "s3cr3t");
	refused("https://h:0/r", "port", NULL);
	refused("https://h:65536/r", "port", NULL);
	refused("https://h:/r", "port", NULL);
	refused("https://h:12a/r", "port", NULL);
	refused("https:///r", "host", NULL);
	refused("https://-h/r", "host", NULL);
	refused("https://h_x/r", "host", NULL);
	refused("https://[::1/r", "host", NULL);
	refused("https://h", "path", NULL);
	refused("https://h/", "path", NULL);
	refused("https://h/a\"b", "path", NULL);
	refused("https://h/a b", "space", NULL);
	refused("https://h/a\\b", "backslash", NULL);
	refused("https://h/a\nb", "control", NULL);
	refused("", "https", NULL);
}
END_TEST

START_TEST(test_limits)
{
	static char url[WSURL_MAX + 2];

	memcpy(url, "https://h/", 10);
	memset(url + 10, 'a', WSURL_MAX - 10);
	ck_assert_ptr_null(wsurl_check(url, WSURL_MAX));
	url[WSURL_MAX] = 'a';
	ck_assert_ptr_nonnull(wsurl_check(url, WSURL_MAX + 1));
	/* Not NUL-ended: only len bytes are read. */
	ck_assert_ptr_null(wsurl_check("https://h/rX", 11));
	ck_assert_ptr_nonnull(wsurl_check("https://h/r\0x", 13));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("wsurl");
	TCase *tc = tcase_create("wsurl");

	tcase_add_test(tc, test_taken);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_limits);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
