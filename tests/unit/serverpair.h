/* serverpair.h: berthd's server (supervisor/server.c) listening on a
 * socket in a scratch directory, and one client it has accepted, for the
 * unit tests of what berthd sends; the client's side reads with berthd's
 * loop run meanwhile, as the bytes are on their way. */
#ifndef BERTH_TEST_SERVERPAIR_H
#define BERTH_TEST_SERVERPAIR_H

#include <sys/socket.h>
#include <sys/un.h>

#include <check.h>
#include <event2/event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"
#include "xmalloc.h"

struct serverpair {
	struct event_base *base;
	struct server_conn *conn; /* berthd's side */
	int client;               /* the client's side */
};

/* Listens on <dir>/sock and accepts one client. */
static inline void
serverpair_open(struct serverpair *sp, const char *dir)
{
	struct sockaddr_un sa;
	char *sock = xasprintf("%s/sock", dir), *cause = NULL;
	int i;

	sp->base = event_base_new();
	ck_assert_msg(
	    server_listen(sp->base, sock, (uid_t)-1, (gid_t)-1, &cause) == 0,
	    "%s", cause);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
	free(sock);
	sp->client = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(
	    connect(sp->client, (struct sockaddr *)&sa, sizeof sa), 0);
	sp->conn = NULL;
	for (i = 0; i < 1000 && (sp->conn = server_conn_find(1)) == NULL; i++)
		event_base_loop(sp->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	ck_assert_ptr_nonnull(sp->conn);
}

static inline void
serverpair_close(struct serverpair *sp)
{
	close(sp->client);
	server_shutdown();
	event_base_free(sp->base);
}

/* Reads exactly len bytes on the client's side within about rounds
 * turns of berthd's loop. */
static inline void
serverpair_read(struct serverpair *sp, void *buf, size_t len, int rounds)
{
	struct pollfd pfd = {sp->client, POLLIN, 0};
	size_t got = 0;
	ssize_t n;
	int i;

	for (i = 0; i < rounds && got < len; i++) {
		event_base_loop(sp->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		n = read(sp->client, (char *)buf + got, len - got);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	ck_assert_uint_eq(got, len);
}

#endif
