/* test_sockdiag: the netlink answer berthd reads for the TCP listeners
 * (sockdiag_parse): listeners taken with their family, address, port,
 * inode and uid, the dump's end told, and truncated, oversized, foreign
 * or erroneous messages refused; then a real dump finds a listener of
 * this process (sockdiag_dump), where the kernel allows sock_diag. */
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sockdiag.h"
#include "tap.h"

#define MSG_LEN NLMSG_LENGTH(sizeof(struct inet_diag_msg))

static uint8_t buf[4096];

/* Appends a listener's message at off; returns the next offset. */
static size_t
put_listener(size_t off, int family, const char *addr, unsigned port)
{
	struct nlmsghdr h = {
	    .nlmsg_len = MSG_LEN, .nlmsg_type = SOCK_DIAG_BY_FAMILY};
	struct inet_diag_msg d = {.idiag_family = (uint8_t)family,
	    .idiag_state = 10,
	    .idiag_uid = 1000,
	    .idiag_inode = 4242};

	d.id.idiag_sport = htons((uint16_t)port);
	inet_pton(family, addr, d.id.idiag_src);
	memcpy(buf + off, &h, sizeof h);
	memcpy(buf + off + NLMSG_HDRLEN, &d, sizeof d);
	return off + NLMSG_ALIGN(MSG_LEN);
}

static size_t
put_done(size_t off)
{
	struct nlmsghdr h = {
	    .nlmsg_len = NLMSG_LENGTH(sizeof(int)), .nlmsg_type = NLMSG_DONE};

	memset(buf + off, 0, NLMSG_ALIGN(h.nlmsg_len));
	memcpy(buf + off, &h, sizeof h);
	return off + NLMSG_ALIGN(h.nlmsg_len);
}

START_TEST(test_listeners)
{
	struct portsock v[4];
	char text[INET6_ADDRSTRLEN];
	size_t len, n = 0;

	len = put_listener(0, AF_INET, "127.0.0.1", 8000);
	len = put_listener(len, AF_INET6, "::1", 8001);
	ck_assert_int_eq(sockdiag_parse(buf, len, v, 4, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(v[0].family, AF_INET);
	ck_assert_uint_eq(v[0].port, 8000);
	ck_assert_uint_eq(v[0].uid, 1000);
	ck_assert_uint_eq(v[0].inode, 4242);
	inet_ntop(AF_INET, v[0].addr, text, sizeof text);
	ck_assert_str_eq(text, "127.0.0.1");
	inet_ntop(AF_INET6, v[1].addr, text, sizeof text);
	ck_assert_str_eq(text, "::1");
	len = put_done(0);
	ck_assert_int_eq(sockdiag_parse(buf, len, v, 4, &n), 1);
	ck_assert_uint_eq(n, 2);
}
END_TEST

START_TEST(test_malformed)
{
	struct portsock v[1];
	struct nlmsghdr h;
	size_t len, n;

	/* cut inside the header, inside the message, and a length beyond */
	len = put_listener(0, AF_INET, "127.0.0.1", 80);
	n = 0;
	ck_assert_int_eq(sockdiag_parse(buf, 8, v, 1, &n), -1);
	ck_assert_int_eq(sockdiag_parse(buf, len - 8, v, 1, &n), -1);
	memcpy(&h, buf, sizeof h);
	h.nlmsg_len = (uint32_t)len + 4;
	memcpy(buf, &h, sizeof h);
	ck_assert_int_eq(sockdiag_parse(buf, len, v, 1, &n), -1);
	/* a length shorter than a header, or than the message it carries */
	h.nlmsg_len = 4;
	memcpy(buf, &h, sizeof h);
	ck_assert_int_eq(sockdiag_parse(buf, len, v, 1, &n), -1);
	h.nlmsg_len = NLMSG_HDRLEN + 4;
	memcpy(buf, &h, sizeof h);
	ck_assert_int_eq(sockdiag_parse(buf, len, v, 1, &n), -1);
	/* an error the kernel answered */
	len = put_listener(0, AF_INET, "127.0.0.1", 80);
	memcpy(&h, buf, sizeof h);
	h.nlmsg_type = NLMSG_ERROR;
	memcpy(buf, &h, sizeof h);
	ck_assert_int_eq(sockdiag_parse(buf, len, v, 1, &n), -1);
	/* a socket of another family, or not listening */
	n = 0;
	len = put_listener(0, AF_INET, "127.0.0.1", 80);
	buf[NLMSG_HDRLEN] = AF_UNIX;
	ck_assert_int_eq(sockdiag_parse(buf, len, v, 1, &n), -1);
	len = put_listener(0, AF_INET, "127.0.0.1", 80);
	buf[NLMSG_HDRLEN + 1] = 1;
	ck_assert_int_eq(sockdiag_parse(buf, len, v, 1, &n), -1);
	ck_assert_uint_eq(n, 0);
	/* more listeners than room */
	len = put_listener(0, AF_INET, "127.0.0.1", 80);
	len = put_listener(len, AF_INET, "127.0.0.1", 81);
	ck_assert_int_eq(sockdiag_parse(buf, len, v, 1, &n), -1);
	ck_assert_uint_eq(n, 1);
}
END_TEST

START_TEST(test_dump)
{
	struct sockaddr_in6 sin = {.sin6_family = AF_INET6};
	socklen_t len = sizeof sin;
	static struct portsock v[4096];
	int fd = socket(AF_INET6, SOCK_STREAM, 0), n, i, found = 0;

	sin.sin6_addr = in6addr_loopback;
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	n = sockdiag_dump(v, sizeof v / sizeof v[0]);
	if (n < 0) {
		close(fd);
		return; /* sock_diag refused here: the fallback's case */
	}
	for (i = 0; i < n; i++)
		if (v[i].family == AF_INET6 &&
		    v[i].port == ntohs(sin.sin6_port) &&
		    memcmp(v[i].addr, &in6addr_loopback, 16) == 0 &&
		    v[i].uid == getuid() && v[i].inode != 0)
			found++;
	ck_assert_int_eq(found, 1);
	close(fd);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("sockdiag");
	TCase *tc = tcase_create("sockdiag");

	tcase_add_test(tc, test_listeners);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_dump);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
