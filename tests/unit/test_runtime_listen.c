/* test_runtime_listen: the lines of /proc/net/tcp and tcp6 berthd reads to
 * find the sockets listening on a server's port (runtime_listen_parse):
 * a listener's port and inode, other sockets and the header skipped, and
 * anything else refused; then, against the real tables, a listener of
 * this process is its own and not another process's. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime_listen.h"
#include "tap.h"

static const char header[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
    "retrnsmt   uid  timeout inode\n";
static const char listen4[] =
    "   0: 0100007F:9C4B 00000000:0000 0A 00000000:00000000 00:00000000 "
    "00000000  1000        0 123456 1 000000000e724c6e 100 0 0 10 0\n";
static const char established4[] =
    "   1: 0100007F:EA3A 0100007F:C643 01 00000000:00000000 03:0000150D "
    "00000000     0        0 99 3 000000008083b6fd\n";
static const char listen6[] =
    "   2: 00000000000000000000000001000000:1F90 "
    "00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000   101        0 777 1 0000000000000000 100 0 0 10 "
    "0\n";

START_TEST(test_listeners)
{
	unsigned long long inode = 0;
	unsigned port = 0;

	ck_assert_int_eq(runtime_listen_parse(listen4, &port, &inode), 1);
	ck_assert_uint_eq(port, 0x9C4B);
	ck_assert_uint_eq(inode, 123456);
	ck_assert_int_eq(runtime_listen_parse(listen6, &port, &inode), 1);
	ck_assert_uint_eq(port, 8080);
	ck_assert_uint_eq(inode, 777);
}
END_TEST

START_TEST(test_skipped)
{
	unsigned long long inode = 5;
	unsigned port = 5;

	ck_assert_int_eq(runtime_listen_parse(header, &port, &inode), 0);
	ck_assert_int_eq(runtime_listen_parse(established4, &port, &inode), 0);
	ck_assert_uint_eq(port, 5);
	ck_assert_uint_eq(inode, 5);
}
END_TEST

START_TEST(test_malformed)
{
	static const char *const bad[] = {
	    "",
	    "\n",
	    "garbage\n",
	    "   0: 0100007F\n",
	    "   0: 0100007F:9C4B 00000000:0000 0A\n",
	    /* a port beyond 16 bits */
	    "   0: 0100007F:19C4B 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000 0 0 1 1\n",
	    /* a negative slot */
	    "  -1: 0100007F:9C4B 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000 0 0 1 1\n",
	    /* an address longer than IPv6's */
	    "   0: 000000000000000000000000010000000:1F90 00000000:0000 0A "
	    "00000000:00000000 00:00000000 00000000 0 0 1 1\n",
	    /* no inode */
	    "   0: 0100007F:9C4B 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000 0 0\n",
	};
	unsigned long long inode = 5;
	unsigned port = 5;
	char big[RUNTIME_LISTEN_LINE_MAX + 64];
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(runtime_listen_parse(bad[i], &port, &inode) == -1,
		    "accepted \"%s\"", bad[i]);
	memset(big, ' ', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	memcpy(big + sizeof big - 1 - (sizeof listen4 - 1), listen4,
	    sizeof listen4 - 1);
	ck_assert_int_eq(runtime_listen_parse(big, &port, &inode), -1);
	ck_assert_uint_eq(port, 5);
}
END_TEST

/* A listener of this process: owned by this process's session, not by a
 * session that does not exist; a port nobody listens on is no one's. */
START_TEST(test_owner)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof sin;
	struct tree ours, other;
	char why[128];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	unsigned port;
	pid_t child;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	port = ntohs(sin.sin_port);
	/* pstat_all leaves out the caller: a child of ours holds it too. */
	if ((child = fork()) == 0) {
		pause();
		_exit(0);
	}
	tree_init(&ours, getsid(0), NULL);
	tree_init(&other, 0x7ffffff0, NULL);
	ck_assert(runtime_listen_owned(&ours, port, why, sizeof why));
	ck_assert(!runtime_listen_owned(&other, port, why, sizeof why));
	ck_assert_msg(strstr(why, "is not the runtime's") != NULL, "%s", why);
	close(fd);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert(!runtime_listen_owned(&ours, port, why, sizeof why));
	ck_assert_str_eq(why, "no socket listens on it");
	tree_free(&ours);
	tree_free(&other);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("runtime_listen");
	TCase *tc = tcase_create("runtime_listen");

	tcase_add_test(tc, test_listeners);
	tcase_add_test(tc, test_skipped);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_owner);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
