/* sockdiag: the TCP listeners over NETLINK_SOCK_DIAG (see sockdiag.h). */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sockdiag.h"

#define SOCKDIAG_TCP_LISTEN 10 /* TCP_LISTEN, as the kernel numbers it */
/* One datagram of the answer: the kernel fills up to a page per
 * message batch; 32 KiB holds any. */
#define SOCKDIAG_BUF 32768
/* A dump that does not end after this many datagrams is not believed. */
#define SOCKDIAG_DATAGRAMS_MAX 4096

/* One message's inet_diag_msg, appended to v; 0 or -1. */
static int
sockdiag_msg(
    const struct inet_diag_msg *d, struct portsock *v, size_t max, size_t *n)
{
	struct portsock *s;

	if ((d->idiag_family != AF_INET && d->idiag_family != AF_INET6) ||
	    d->idiag_state != SOCKDIAG_TCP_LISTEN || *n >= max)
		return -1;
	s = &v[(*n)++];
	memset(s, 0, sizeof *s);
	s->family = d->idiag_family;
	memcpy(s->addr, d->id.idiag_src,
	    d->idiag_family == AF_INET ? 4 : sizeof s->addr);
	s->port = ntohs(d->id.idiag_sport);
	s->inode = d->idiag_inode;
	s->uid = d->idiag_uid;
	return 0;
}

int
sockdiag_parse(
    const uint8_t *buf, size_t len, struct portsock *v, size_t max, size_t *n)
{
	struct nlmsghdr h;
	struct inet_diag_msg d;
	size_t off = 0, step;

	while (len - off >= sizeof h) {
		memcpy(&h, buf + off, sizeof h);
		if (h.nlmsg_len < sizeof h || h.nlmsg_len > len - off)
			return -1;
		if (h.nlmsg_type == NLMSG_DONE)
			return 1;
		if (h.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		    h.nlmsg_len - sizeof h < sizeof d)
			return -1;
		memcpy(&d, buf + off + NLMSG_HDRLEN, sizeof d);
		if (sockdiag_msg(&d, v, max, n) < 0)
			return -1;
		step = NLMSG_ALIGN(h.nlmsg_len);
		if (step > len - off)
			break;
		off += step;
	}
	return off == len ? 0 : -1;
}

static int
sockdiag_ask(int fd, int family)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req = {
	    .h = {.nlmsg_len = sizeof req,
	        .nlmsg_type = SOCK_DIAG_BY_FAMILY,
	        .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
	    .r = {.sdiag_family = (uint8_t)family,
	        .sdiag_protocol = IPPROTO_TCP,
	        .idiag_states = 1u << SOCKDIAG_TCP_LISTEN},
	};
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};

	return sendto(fd, &req, sizeof req, 0, (struct sockaddr *)&nl,
	           sizeof nl) == (ssize_t)sizeof req
	    ? 0
	    : -1;
}

/* The answer to one family's dump, into v at *n. */
static int
sockdiag_read(int fd, uint8_t *buf, struct portsock *v, size_t max, size_t *n)
{
	ssize_t got;
	int i, r;

	for (i = 0; i < SOCKDIAG_DATAGRAMS_MAX; i++) {
		got = recv(fd, buf, SOCKDIAG_BUF, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		if ((r = sockdiag_parse(buf, (size_t)got, v, max, n)) != 0)
			return r > 0 ? 0 : (errno = EPROTO, -1);
	}
	errno = EPROTO;
	return -1;
}

int
sockdiag_dump(struct portsock *v, size_t max)
{
	static uint8_t buf[SOCKDIAG_BUF];
	static const int families[] = {AF_INET, AF_INET6};
	size_t n = 0, f;
	int fd, e;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -1;
	for (f = 0; f < sizeof families / sizeof families[0]; f++)
		if (sockdiag_ask(fd, families[f]) < 0 ||
		    sockdiag_read(fd, buf, v, max, &n) < 0) {
			e = errno;
			close(fd);
			errno = e;
			return -1;
		}
	close(fd);
	return (int)n;
}
