/* gw_sock: sockets the gateway opens itself and hands to lws as raw
 * connections (to berthd, to the VNC server, to Chromium), and the one
 * way a queue of bytes is written to them. */
#ifndef BERTH_GW_SOCK_H
#define BERTH_GW_SOCK_H

#include <libwebsockets.h>
#include <stddef.h>

#include "gateway.h"
#include "gw_queue.h"

/* The most written to one socket in one writeable callback, so that one
 * busy connection does not starve the others. */
#define GW_SOCK_WRITE_BURST (1024u * 1024)

/* A nonblocking TCP socket whose connect to a has started (or is done).
 * -1 with *cause if it failed at once. The caller owns the fd. */
int gw_sock_connect_tcp(const struct gateway_addr *a, char **cause);
/* Adopts fd into vh as a raw connection of protocol, with opaque as its
 * user data. NULL with *cause if lws refused (it closed fd then). */
struct lws *gw_sock_adopt(struct lws_vhost *vh, int fd, const char *protocol,
    void *opaque, char **cause);
/*
 * Writes what q holds to wsi's socket, *off bytes of its first message
 * being sent already, until the socket is full or the burst is spent;
 * asks for another writeable callback while something is left. Not
 * lws_write: lws would keep a partial write and stop reading the peer
 * until it is gone, and a peer blocked on sending to us while we wait on
 * it would wait forever. -1 if the socket failed.
 */
int gw_sock_flush(struct lws *wsi, struct gw_queue *q, size_t *off);

/* A vhost of raw sockets listening on a (name: for messages), whose
 * connections are protocols[0]'s; fatal if it cannot listen. */
struct lws_vhost *gw_sock_listen_raw(const struct gateway_addr *a,
    const char *name, const struct lws_protocols *protocols);

#endif
