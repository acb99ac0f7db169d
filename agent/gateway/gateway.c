/* gateway: berth-gateway's main. Reads the command line and the token,
 * opens the listening socket in one lws vhost, confines itself with
 * seccomp, then serves HTTP, WebSocket and its berthd connections on the
 * one lws service loop until SIGTERM or SIGINT. Owns struct gateway. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "allowlist.h"
#include "gateway.h"
#include "gw_cdp.h"
#include "gw_cdpws.h"
#include "gw_preview.h"
#include "gw_check.h"
#include "gw_client.h"
#include "gw_http.h"
#include "gw_limit.h"
#include "gw_novnc.h"
#include "gw_upstream.h"
#include "log.h"
#include "nodump.h"
#include "proto.h"
#include "xmalloc.h"

struct gateway gateway;

static const struct lws_protocols gateway_protocols[] = {
    [GATEWAY_PROTO_HTTP] = {"http", gw_http_cb, 0, 0, 0, NULL, 0},
    [GATEWAY_PROTO_WS] = {GATEWAY_SUBPROTOCOL, gw_client_cb,
        sizeof(struct gw_client), 65536, 0, NULL, 0},
    [GATEWAY_PROTO_UPSTREAM] = {"berth-upstream", gw_upstream_cb, 0, 65536, 0,
        NULL, 0},
    /* websockify's name for a relay of raw bytes; a relay WebSocket that
     * offers no subprotocol stays on protocols[0], which hands it on. */
    [GATEWAY_PROTO_RELAY] = {"binary", gw_http_relay_cb, 0, 65536, 0, NULL, 0},
    [GATEWAY_PROTO_VNC] = {"berth-vnc", gw_novnc_vnc_cb, 0, 65536, 0, NULL, 0},
    [GATEWAY_PROTO_CDP] = {"berth-cdp", gw_cdpws_chrome_cb, 0, 65536, 0, NULL,
        0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer stops the world with ptrace at exit, which the filter
 * forbids; the check could only fail. Leaks are looked for in runs
 * without the filter. */
int __lsan_is_turned_off(void);
int
__lsan_is_turned_off(void)
{
	return 1;
}
#endif

static __attribute__((noreturn)) void
gateway_usage(void)
{
	fprintf(stderr,
	    "usage: berth-gateway --listen ADDR:PORT --socket PATH\n"
	    "                     [--client-queue BYTES] [--client-stall-ms "
	    "MS]\n"
	    "                     [--vnc "
	    "ADDR:PORT|unix:PATH] "
	    "[--novnc-dir DIR]\n"
	    "                     [--cdp ADDR:PORT] [--cdp-relay-listen "
	    "ADDR:PORT]\n"
	    "                     [--preview-listen ADDR:PORT] "
	    "[--preview-domain DOMAIN]\n"
	    "                     [--peer-max N] [--debug]\n"
	    "       berth-gateway --seccomp-selftest\n");
	exit(1);
}

void
gateway_peer(struct lws *wsi, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	char host[INET6_ADDRSTRLEN];
	int fd = lws_get_socket_fd(wsi);

	if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl) != 0) {
		snprintf(buf, len, "unknown");
		return;
	}
	if (ss.ss_family == AF_INET) {
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
		snprintf(buf, len, "%s:%u", host, ntohs(s4->sin_port));
	} else if (ss.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		inet_ntop(
		    AF_INET, &s6->sin6_addr.s6_addr[12], host, sizeof host);
		snprintf(buf, len, "%s:%u", host, ntohs(s6->sin6_port));
	} else if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
		snprintf(buf, len, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else
		snprintf(buf, len, "unknown");
}

int
gateway_parse_addr(
    const char *opt, const char *arg, struct gateway_addr *a, char **cause)
{
	const char *colon, *start = arg, *end;
	unsigned char sa[sizeof(struct in6_addr)];
	char *host, *ep;
	long n;

	if (*arg == '[') {
		end = strchr(arg, ']');
		if (end == NULL || end[1] != ':')
			goto bad;
		start = arg + 1;
		colon = end + 1;
		a->v6 = 1;
	} else {
		colon = strrchr(arg, ':');
		if (colon == NULL)
			goto bad;
		end = colon;
		a->v6 = 0;
	}
	errno = 0;
	n = strtol(colon + 1, &ep, 10);
	if (colon[1] == '\0' || *ep != '\0' || errno != 0 || n < 0 || n > 65535)
		goto bad;
	host = xstrndup(start, (size_t)(end - start));
	if (inet_pton(a->v6 ? AF_INET6 : AF_INET, host, sa) != 1) {
		free(host);
		goto bad;
	}
	a->host = host;
	a->port = (int)n;
	return 0;
bad:
	*cause = xasprintf("%s %s: expected ADDR:PORT, ADDR an IPv4 "
	                   "address or [IPv6]",
	    opt, arg);
	return -1;
}

static void
gateway_signal(int sig)
{
	(void)sig;
	gateway.stopping = 1;
	if (gateway.ctx != NULL)
		lws_cancel_service(gateway.ctx);
}

static void
gateway_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = gateway_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

/* lws's own diagnostics, as lines of ours. */
static void
gateway_lws_log(int level, const char *line)
{
	size_t n = strlen(line);

	while (n > 0 && line[n - 1] == '\n')
		n--;
	if (level & LLL_ERR)
		log_warn("lws: %.*s", (int)n, line);
	else
		log_debug("lws: %.*s", (int)n, line);
}

/* The context and its one vhost, listening. */
static void
gateway_listen(const char *addr, int v6, int port, int debug)
{
	struct lws_context_creation_info info;
	uint64_t options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	int any;

	lws_set_log_level(
	    debug ? LLL_ERR | LLL_WARN | LLL_NOTICE : LLL_ERR, gateway_lws_log);
	if (!v6)
		options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	any = strcmp(addr, v6 ? "::" : "0.0.0.0") == 0;

	memset(&info, 0, sizeof info);
	info.options = options;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	info.pt_serv_buf_size = GATEWAY_READ_MAX;
	info.max_http_header_pool = GW_LIMIT_HEADER_POOL;
	gateway.ctx = lws_create_context(&info);
	if (gateway.ctx == NULL)
		log_fatal("cannot create the lws context");

	memset(&info, 0, sizeof info);
	info.options = options;
	info.vhost_name = "berth-gateway";
	info.server_string = "berth-gateway";
	info.port = port;
	info.iface = any ? NULL : addr;
	info.protocols = gateway_protocols;
	info.timeout_secs_ah_idle = GW_LIMIT_HEAD_S;
	gateway.vhost = lws_create_vhost(gateway.ctx, &info);
	if (gateway.vhost == NULL)
		log_fatal("cannot listen on %s%s%s:%d", v6 ? "[" : "", addr,
		    v6 ? "]" : "", port);
	log_info("listening on %s%s%s:%d", v6 ? "[" : "", addr, v6 ? "]" : "",
	    lws_get_vhost_listen_port(gateway.vhost));
}

static void
gateway_free(void)
{
	struct gateway_berthd *b = &gateway.berthd;

	free(b->healthz_head);
	free(b->healthz_tail);
	free(b->checks_json);
	free(b->why_json);
	free(b->failed_json);
	free(gateway.socket_path);
	free(gateway.vnc.host);
	free(gateway.vnc.path);
	free(gateway.novnc_dir);
	free(gateway.cdp.host);
	free(gateway.cdp_listen.host);
	free(gateway.preview_listen.host);
	free(gateway.preview_domain);
}

/* One of the desktop's ADDR:PORT options. */
int
gateway_parse_server(
    const char *opt, const char *arg, struct gateway_addr *a, char **cause)
{
	struct sockaddr_un sun;
	const char *path;

	if (strncmp(arg, "unix:", 5) != 0)
		return gateway_parse_addr(opt, arg, a, cause);
	path = arg + 5;
	if (path[0] != '/' || strlen(path) >= sizeof sun.sun_path) {
		*cause =
		    xasprintf("%s %s: expected unix:PATH, PATH absolute and "
		              "at most %zu bytes",
		        opt, arg, sizeof sun.sun_path - 1);
		return -1;
	}
	a->host = NULL;
	a->v6 = 0;
	a->port = -1;
	a->path = xstrdup(path);
	return 0;
}

const char *
gateway_addr_name(const struct gateway_addr *a)
{
	static char buf[sizeof((struct sockaddr_un *)0)->sun_path + 64];

	if (a->path != NULL)
		snprintf(buf, sizeof buf, "unix:%s", a->path);
	else
		snprintf(buf, sizeof buf, a->v6 ? "[%s]:%d" : "%s:%d",
		    a->host != NULL ? a->host : "", a->port);
	return buf;
}

static void
gateway_addr_opt(const char *opt, const char *arg, struct gateway_addr *a)
{
	char *cause;

	free(a->host);
	free(a->path);
	a->path = NULL;
	if (gateway_parse_addr(opt, arg, a, &cause) < 0)
		log_fatal("%s", cause);
	if (a->port == 0)
		log_fatal("%s %s: the port may not be 0", opt, arg);
}

/* --vnc: noVNC's RFB server, over TCP or a Unix socket. */
static void
gateway_vnc_opt(const char *arg)
{
	char *cause;

	free(gateway.vnc.host);
	free(gateway.vnc.path);
	gateway.vnc.path = NULL;
	if (gateway_parse_server("--vnc", arg, &gateway.vnc, &cause) < 0)
		log_fatal("%s", cause);
	if (gateway.vnc.port == 0)
		log_fatal("--vnc %s: the port may not be 0", arg);
}

/* An option's count, 1 to max of unit; anything else is fatal. */
static unsigned long long
gateway_count_opt(
    const char *opt, const char *arg, unsigned long long max, const char *unit)
{
	unsigned long long q;
	char *ep;

	errno = 0;
	q = strtoull(arg, &ep, 10);
	if (*arg == '\0' || *ep != '\0' || errno != 0 || q == 0 || q > max)
		log_fatal("%s %s: expected 1 to %llu %s", opt, arg, max, unit);
	return q;
}

/* --seccomp-selftest: the running gateway's filter, and calls it must
 * kill or let through. */
static int
gateway_seccomp_selftest(void)
{
	return allowlist_selftest();
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"listen", required_argument, NULL, 'l'},
	    {"socket", required_argument, NULL, 's'},
	    {"client-queue", required_argument, NULL, 'q'},
	    {"client-stall-ms", required_argument, NULL, 't'},
	    {"vnc", required_argument, NULL, 'v'},
	    {"novnc-dir", required_argument, NULL, 'n'},
	    {"cdp", required_argument, NULL, 'c'},
	    {"cdp-relay-listen", required_argument, NULL, 'r'},
	    {"preview-listen", required_argument, NULL, 'P'},
	    {"preview-domain", required_argument, NULL, 'D'},
	    {"peer-max", required_argument, NULL, 'p'},
	    {"debug", no_argument, NULL, 'd'},
	    {"seccomp-selftest", no_argument, NULL, 'S'},
	    {NULL, 0, NULL, 0},
	};
	const char *listen_arg = NULL, *socket_path = NULL;
	struct gateway_addr listen;
	char *cause;
	int c, debug = 0, rc = 0;

	log_init("berth-gateway", 0);
	/* What its memory holds (clients' credentials in passing) must not
	 * reach a core file, nor a process of its uid through ptrace or
	 * /proc/PID/mem; an exec makes a process dumpable again. */
	if (nodump_self(&cause) < 0)
		log_fatal("%s", cause);
	gateway.client_queue = GATEWAY_CLIENT_QUEUE_DEFAULT;
	gateway.client_stall_ms = GATEWAY_CLIENT_STALL_DEFAULT_MS;
	gateway.peer_max = GW_LIMIT_PEER_MAX_DEFAULT;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'l': listen_arg = optarg; break;
		case 's': socket_path = optarg; break;
		case 'd': debug = 1; break;
		case 'v': gateway_vnc_opt(optarg); break;
		case 'c':
			gateway_addr_opt("--cdp", optarg, &gateway.cdp);
			break;
		case 'r':
			gateway_addr_opt(
			    "--cdp-relay-listen", optarg, &gateway.cdp_listen);
			break;
		case 'P':
			gateway_addr_opt("--preview-listen", optarg,
			    &gateway.preview_listen);
			break;
		case 'D':
			free(gateway.preview_domain);
			gateway.preview_domain = xstrdup(optarg);
			break;
		case 'n':
			free(gateway.novnc_dir);
			gateway.novnc_dir = xstrdup(optarg);
			break;
		case 'S': return gateway_seccomp_selftest();
		case 'p':
			gateway.peer_max = (unsigned)gateway_count_opt(
			    "--peer-max", optarg, 65536, "connections");
			break;
		case 'q':
			gateway.client_queue = (size_t)gateway_count_opt(
			    "--client-queue", optarg, SIZE_MAX, "bytes");
			break;
		case 't':
			gateway.client_stall_ms =
			    (unsigned)gateway_count_opt("--client-stall-ms",
			        optarg, 24ull * 3600 * 1000, "milliseconds");
			break;
		default: gateway_usage();
		}
	}
	if (optind != argc || listen_arg == NULL || socket_path == NULL)
		gateway_usage();
	log_init("berth-gateway", debug);
	if (strlen(socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		log_fatal("--socket %s: path too long", socket_path);
	if (gateway_parse_addr("--listen", listen_arg, &listen, &cause) < 0)
		log_fatal("%s", cause);
	if (gateway.novnc_dir == NULL)
		gateway.novnc_dir = xstrdup(GATEWAY_NOVNC_DIR);
	if (gateway.cdp_listen.port != 0 && gateway.cdp.port == 0)
		log_fatal("--cdp-relay-listen needs --cdp");
	if (gateway.preview_domain != NULL && gateway.preview_listen.port == 0)
		log_fatal("--preview-domain needs --preview-listen");
	gateway.socket_path = xstrdup(socket_path);
	gateway.started = lws_now_usecs();

	gateway_signals();
	gateway_listen(listen.host, listen.v6, listen.port, debug);
	gw_cdp_listen();
	gw_preview_listen();
	free(listen.host);
	/* Every socket it listens on is open: from here on the gateway
	 * only serves them. */
	if (allowlist_install(&cause) < 0)
		log_fatal("%s", cause);

	gw_upstream_control_start();
	while (!gateway.stopping) {
		if (lws_service(gateway.ctx, 0) < 0) {
			log_warn("the lws service loop failed");
			rc = 1;
			break;
		}
	}
	log_info("stopping");
	gateway.stopping = 1;
	gw_upstream_control_stop();
	gw_check_close();
	lws_context_destroy(gateway.ctx);
	gateway.ctx = NULL;
	gateway_free();
	return rc;
}
