/* listenwatch: listen(2) notifications from launched programs (see
 * listenwatch.h). */
#include "listenwatch.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xmalloc.h"

#if defined(__x86_64__)
#define LISTENWATCH_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define LISTENWATCH_ARCH AUDIT_ARCH_AARCH64
#endif

struct listenwatch {
	int fd;
	struct event *ev;
	struct listenwatch *next;
};

static struct event_base *listenwatch_base;
static void (*listenwatch_kick)(void);
static struct listenwatch *listenwatch_list;

int
listenwatch_install(void)
{
#ifdef LISTENWATCH_ARCH
	struct sock_filter f[] = {
	    BPF_STMT(
	        BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, LISTENWATCH_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(
	        BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_listen, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof f / sizeof f[0], f};

	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
#else
	errno = ENOSYS;
	return -1;
#endif
}

bool
listenwatch_works(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
			_exit(1);
		_exit(listenwatch_install() >= 0 ? 0 : 1);
	}
	if (pid < 0)
		return false;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void
listenwatch_drop(struct listenwatch *w)
{
	struct listenwatch **p;

	for (p = &listenwatch_list; *p != w; p = &(*p)->next)
		;
	*p = w->next;
	event_free(w->ev);
	close(w->fd);
	free(w);
}

/* One notification answered "continue"; -1 if none could be read. */
static int
listenwatch_answer(int fd)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;

	memset(&req, 0, sizeof req);
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
		return -1;
	memset(&resp, 0, sizeof resp);
	resp.id = req.id;
	resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	/* ENOENT: the caller was interrupted meanwhile; nothing to do. */
	ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	return 0;
}

static void
listenwatch_ready(evutil_socket_t fd, short what, void *arg)
{
	struct listenwatch *w = arg;
	struct pollfd p = {.fd = fd, .events = POLLIN};

	(void)what;
	if (poll(&p, 1, 0) < 0)
		return;
	if ((p.revents & POLLIN) != 0 && listenwatch_answer(fd) == 0) {
		listenwatch_kick();
		return;
	}
	if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0)
		listenwatch_drop(w);
}

void
listenwatch_init(struct event_base *base, void (*kick)(void))
{
	listenwatch_base = base;
	listenwatch_kick = kick;
}

bool
listenwatch_on(void)
{
	return listenwatch_base != NULL;
}

void
listenwatch_add(int fd)
{
	struct listenwatch *w = xcalloc(1, sizeof *w);

	w->fd = fd;
	w->ev = event_new(
	    listenwatch_base, fd, EV_READ | EV_PERSIST, listenwatch_ready, w);
	w->next = listenwatch_list;
	listenwatch_list = w;
	event_add(w->ev, NULL);
}

void
listenwatch_shutdown(void)
{
	while (listenwatch_list != NULL)
		listenwatch_drop(listenwatch_list);
	listenwatch_base = NULL;
}
