/* test_procnet: the lines of /proc/net/tcp and tcp6 berthd reads
 * (procnet_parse): a listener's family, address, port, inode and uid;
 * other sockets and the header skipped; anything else refused. Then, in
 * the real tables, a listener of this process is found (procnet_scan). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "procnet.h"
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
	struct portsock s;
	char text[INET6_ADDRSTRLEN];

	ck_assert_int_eq(procnet_parse(listen4, AF_INET, &s), 1);
	ck_assert_int_eq(s.family, AF_INET);
	ck_assert_uint_eq(s.port, 0x9C4B);
	ck_assert_uint_eq(s.inode, 123456);
	ck_assert_uint_eq(s.uid, 1000);
	inet_ntop(AF_INET, s.addr, text, sizeof text);
	ck_assert_str_eq(text, "127.0.0.1");
	ck_assert_int_eq(procnet_parse(listen6, AF_INET6, &s), 1);
	ck_assert_int_eq(s.family, AF_INET6);
	ck_assert_uint_eq(s.port, 8080);
	ck_assert_uint_eq(s.inode, 777);
	ck_assert_uint_eq(s.uid, 101);
	inet_ntop(AF_INET6, s.addr, text, sizeof text);
	ck_assert_str_eq(text, "::1");
}
END_TEST

START_TEST(test_skipped)
{
	struct portsock s = {.port = 5};

	ck_assert_int_eq(procnet_parse(header, AF_INET, &s), 0);
	ck_assert_int_eq(procnet_parse(established4, AF_INET, &s), 0);
	ck_assert_uint_eq(s.port, 5);
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
	    /* an address of neither length */
	    "   0: 0100007F00:9C4B 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000 0 0 1 1\n",
	    /* no inode */
	    "   0: 0100007F:9C4B 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000 0 0\n",
	};
	struct portsock s = {.port = 5};
	char big[PROCNET_LINE_MAX + 64];
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(procnet_parse(bad[i], AF_INET, &s) == -1,
		    "accepted \"%s\"", bad[i]);
	/* an IPv6 address in the IPv4 table, and the other way */
	ck_assert_int_eq(procnet_parse(listen6, AF_INET, &s), -1);
	ck_assert_int_eq(procnet_parse(listen4, AF_INET6, &s), -1);
	memset(big, ' ', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	memcpy(big + sizeof big - 1 - (sizeof listen4 - 1), listen4,
	    sizeof listen4 - 1);
	ck_assert_int_eq(procnet_parse(big, AF_INET, &s), -1);
	ck_assert_uint_eq(s.port, 5);
}
END_TEST

START_TEST(test_scan)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof sin;
	static struct portsock v[4096];
	int fd = socket(AF_INET, SOCK_STREAM, 0), n, i, found = 0;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	n = procnet_scan(v, sizeof v / sizeof v[0]);
	ck_assert_int_ge(n, 1);
	for (i = 0; i < n; i++)
		if (v[i].family == AF_INET &&
		    v[i].port == ntohs(sin.sin_port) &&
		    memcmp(v[i].addr, &sin.sin_addr, 4) == 0 &&
		    v[i].uid == getuid())
			found++;
	ck_assert_int_eq(found, 1);
	close(fd);
	/* more listeners than room: refused, not cut short */
	ck_assert_int_eq(procnet_scan(v, 0), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("procnet");
	TCase *tc = tcase_create("procnet");

	tcase_add_test(tc, test_listeners);
	tcase_add_test(tc, test_skipped);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_scan);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
