/* gw_mask: RFC 6455 section 5.1 for the gateway's WebSocket servers.
 *
 * A client must mask every frame it sends, and a server must close the
 * connection on an unmasked one. libwebsockets 4.1 neither refuses such a
 * frame nor tells a callback whether a frame was masked, so the gateway
 * follows the frame headers itself (gw_frames.h), in the bytes
 * libwebsockets reads: the gateway defines recv(), which the library's
 * calls bind to, and reads through it. A connection that sent an unmasked frame is given nothing
 * more to read and is closed with 1002 (protocol error) at its next
 * writeable callback. */
#ifndef BERTH_GW_MASK_H
#define BERTH_GW_MASK_H

#include <libwebsockets.h>

/* Call first in every server WebSocket protocol's callback: starts
 * following a connection's frames once it is established, stops when it
 * closes, and at a writeable callback of a connection that sent an
 * unmasked frame sets the close code. Returns -1 when the callback must
 * return -1 (to close), else 0. */
int gw_mask_filter(struct lws *wsi, enum lws_callback_reasons reason);

#endif
