/* gw_cdp: relay 1, the TCP relay to Chromium's DevTools. A listener on
 * gateway.cdp_listen (an lws vhost of raw sockets of its own) whose
 * connections, once their request head passed the token check and was
 * rewritten (gw_cdp_http.c), each get a TCP connection to gateway.cdp. */
#ifndef BERTH_GW_CDP_H
#define BERTH_GW_CDP_H

/* Opens the relay's listening socket if gateway.cdp_listen is set; fatal
 * if it cannot. Call after the gateway's context exists. */
void gw_cdp_listen(void);

#endif
