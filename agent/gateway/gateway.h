/* gateway: berth-gateway, the network face. This header holds what the
 * gateway's modules share: the one gateway (its lws context, its options)
 * and what the control connection last learnt about berthd, which the
 * probes answer from. */
#ifndef BERTH_GATEWAY_H
#define BERTH_GATEWAY_H

#include <libwebsockets.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* The WebSocket subprotocol, and the one path that upgrades to it. */
#define GATEWAY_SUBPROTOCOL "berth.v1"
#define GATEWAY_WS_PATH "/v1"
/* Default bytes waiting for one WebSocket client before the gateway stops
 * reading berthd's messages for it. */
#define GATEWAY_CLIENT_QUEUE_DEFAULT (8u * 1024 * 1024)
/* Default time a client's full queue may go without the client taking a
 * byte before it is dropped as a slow consumer. */
#define GATEWAY_CLIENT_STALL_DEFAULT_MS 10000u
/* The most lws reads from a socket at once (its pt_serv_buf_size). */
#define GATEWAY_READ_MAX 65536u
/* The longest peer name. */
#define GATEWAY_PEER_MAX 64

/* Indexes into the protocol table that gateway.c hands to lws. */
enum gateway_protocol {
	GATEWAY_PROTO_HTTP,     /* protocols[0]: HTTP, upgrade checks, and
	                           relay WebSockets offering no subprotocol */
	GATEWAY_PROTO_WS,       /* berth.v1 WebSocket clients */
	GATEWAY_PROTO_UPSTREAM, /* raw Unix sockets to berthd */
	GATEWAY_PROTO_RELAY,    /* relay WebSockets offering "binary" */
	GATEWAY_PROTO_VNC,      /* raw TCP to the RFB server, for noVNC */
	GATEWAY_PROTO_CDP,      /* WebSocket clients of Chromium's DevTools */
};

/*
 * berthd as the gateway's own connections last saw it: whether it is up
 * from the liveness connection, the checks and services from the control
 * connection. Written only by gw_upstream.c; read by the probes
 * (gw_http.c) and the metrics. Strings are owned here and replaced whole
 * when berthd answers anew. Times called _at or _since are ms since the
 * epoch.
 */
struct gateway_berthd {
	int connected;        /* the liveness socket is up */
	int hello_ok;         /* hello succeeded on it */
	char reason[160];     /* why berthd does not answer, for 503s */
	uint64_t answered_at; /* the last answer (the start, if none) */
	uint64_t up_since;    /* it answers again since */

	/* From hello: the start of /healthz's body up to uptime_ms, the
	 * rest of it after, and berthd's start time. */
	char *healthz_head;
	char *healthz_tail;
	uint64_t started_at;

	/* From the last state: the checks as a JSON object, whether every
	 * one of them is ok, the failing ones as a JSON array of "check
	 * NAME: REASON", the services in state failed as a JSON array of
	 * names; the earliest since of the failing checks (the latest of
	 * all, if none fails) and the latest since of them all. */
	char *checks_json;
	int checks_ok;
	char *why_json;
	char *failed_json;
	uint64_t checks_unready_since;
	uint64_t checks_ready_since;
};

/* An ADDR:PORT given on the command line: a numeric IPv4 or IPv6
 * address (host is owned here) and a port. */
/* A server to connect to: host:port, or (path set) the Unix socket at
 * path, whose port is then -1. */
struct gateway_addr {
	char *host;
	int v6;
	int port;
	char *path;
};

/* Where Debian's novnc package puts the page. */
#define GATEWAY_NOVNC_DIR "/usr/share/novnc"

/* The one gateway. Everything here lives as long as the process. */
struct gateway {
	struct lws_context *ctx;
	struct lws_vhost *vhost;
	char *socket_path;   /* berthd's Unix socket */
	size_t client_queue; /* bytes waiting before berthd's side pauses */
	unsigned client_stall_ms; /* a full queue's time to a 4008 */
	unsigned peer_max;        /* connections one peer address may hold */
	lws_usec_t started;       /* monotonic start time */
	/* The desktop's relays; a port of 0 means not configured. */
	struct gateway_addr vnc;        /* the RFB server noVNC is relayed to */
	char *novnc_dir;                /* noVNC's static files */
	struct gateway_addr cdp;        /* Chromium's loopback DevTools */
	struct gateway_addr cdp_listen; /* where the TCP CDP relay listens */
	/* The preview proxy's listener (port 0: none), and the domain its
	 * host names PORT-KEY.DOMAIN end in (NULL: routed by path only). */
	struct gateway_addr preview_listen;
	char *preview_domain;
	volatile sig_atomic_t stopping;
	struct gateway_berthd berthd;
};

extern struct gateway gateway;

/* Parses "ADDR:PORT" or "[ADDR6]:PORT" into *a. -1 with *cause (which
 * names opt) on a bad value. */
int gateway_parse_addr(
    const char *opt, const char *arg, struct gateway_addr *a, char **cause);
/* The same, also taking "unix:PATH" (an absolute path). */
int gateway_parse_server(
    const char *opt, const char *arg, struct gateway_addr *a, char **cause);
/* a as written ("ADDR:PORT", "unix:PATH"), for messages; valid until the
 * next call. */
const char *gateway_addr_name(const struct gateway_addr *a);
/* Writes "ip:port" of wsi's peer into buf (at least GATEWAY_PEER_MAX). */
void gateway_peer(struct lws *wsi, char *buf, size_t len);

#endif
