/* gw_sock: the gateway's own sockets, adopted into lws (see gw_sock.h).
 * Owns nothing past each call: descriptors pass to the caller or lws. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "gw_sock.h"
#include "log.h"
#include "xmalloc.h"

int
gw_sock_connect_tcp(const struct gateway_addr *a, char **cause)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	socklen_t sl;
	int fd;

	memset(&ss, 0, sizeof ss);
	if (a->v6) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)a->port);
		inet_pton(AF_INET6, a->host, &s6->sin6_addr);
		sl = sizeof *s6;
	} else {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)a->port);
		inet_pton(AF_INET, a->host, &s4->sin_addr);
		sl = sizeof *s4;
	}
	fd =
	    socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*cause = xasprintf("socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&ss, sl) != 0 &&
	    errno != EINPROGRESS) {
		*cause = xstrdup(strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

struct lws *
gw_sock_adopt(struct lws_vhost *vh, int fd, const char *protocol, void *opaque,
    char **cause)
{
	lws_adopt_desc_t desc;
	struct lws *wsi;

	memset(&desc, 0, sizeof desc);
	desc.vh = vh;
	desc.type = LWS_ADOPT_SOCKET;
	desc.fd.sockfd = fd;
	desc.vh_prot_name = protocol;
	wsi = lws_adopt_descriptor_vhost_via_info(&desc);
	if (wsi == NULL) {
		/* lws closed the descriptor already. */
		*cause = xstrdup("cannot adopt the socket into lws");
		return NULL;
	}
	/* Set only now, so that no callback of a failed adoption finds
	 * opaque; nothing is read before the loop turns again. */
	lws_set_opaque_user_data(wsi, opaque);
	return wsi;
}

int
gw_sock_flush(struct lws *wsi, struct gw_queue *q, size_t *off)
{
	int fd = lws_get_socket_fd(wsi);
	struct gw_queue_msg *m;
	size_t burst = 0;
	ssize_t n;

	while ((m = gw_queue_first(q)) != NULL && burst < GW_SOCK_WRITE_BURST) {
		n = send(fd, gw_queue_payload(m) + *off, m->len - *off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n < 0) {
			log_debug("%s: send: %s", __func__, strerror(errno));
			return -1;
		}
		*off += (size_t)n;
		burst += (size_t)n;
		if (*off < m->len)
			break;
		*off = 0;
		gw_queue_pop(q);
	}
	if (q->count != 0)
		lws_callback_on_writable(wsi);
	return 0;
}

struct lws_vhost *
gw_sock_listen_raw(const struct gateway_addr *a, const char *name,
    const struct lws_protocols *protocols)
{
	struct lws_context_creation_info info;
	struct lws_vhost *vh;
	int any = strcmp(a->host, a->v6 ? "::" : "0.0.0.0") == 0;

	memset(&info, 0, sizeof info);
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS |
	    LWS_SERVER_OPTION_ADOPT_APPLY_LISTEN_ACCEPT_CONFIG;
	if (!a->v6)
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	info.vhost_name = name;
	info.port = a->port;
	info.iface = any ? NULL : a->host;
	info.protocols = protocols;
	info.listen_accept_role = "raw-skt";
	info.listen_accept_protocol = protocols[0].name;
	vh = lws_create_vhost(gateway.ctx, &info);
	if (vh == NULL)
		log_fatal("cannot listen on %s%s%s:%d for the %s",
		    a->v6 ? "[" : "", a->host, a->v6 ? "]" : "", a->port, name);
	return vh;
}
