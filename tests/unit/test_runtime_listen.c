/* test_runtime_listen: against the real tables, a listener of this
 * process is its own and not another process's. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime_listen.h"
#include "tap.h"

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

	tcase_add_test(tc, test_owner);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
