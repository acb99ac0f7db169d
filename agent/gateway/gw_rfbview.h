/* gw_rfbview: what a view-only viewer may say to the RFB server. Follows
 * the byte stream a client sends (RFB 3.3, 3.7 and 3.8: ProtocolVersion,
 * the security type, VNC authentication's response, ClientInit, then
 * messages) and lets through only what a viewer needs to see the screen;
 * a key, a pointer, the clipboard, a resize or a power request never
 * reaches the server, whatever the client sends. The server's bytes are
 * observed up to the end of the security handshake, which decides how
 * the client's are to be read. Pure: no sockets, no lws; gw_novnc.c
 * feeds it what the relay carries. */
#ifndef BERTH_GW_RFBVIEW_H
#define BERTH_GW_RFBVIEW_H

#include <stddef.h>
#include <stdint.h>

/* The most encodings a SetEncodings may list (noVNC lists some 25). */
#define GW_RFBVIEW_ENCODINGS_MAX 1024
/* The longest clipboard a ClientCutText may announce; it is skipped as
 * it streams by, never held. */
#define GW_RFBVIEW_CUT_MAX (16u * 1024 * 1024)
/* A Fence's payload is at most this long (the RFB community's rule). */
#define GW_RFBVIEW_FENCE_MAX 64
/* Room for the reason a stream is closed with; it goes in a WebSocket
 * close frame, whose reason has 123 bytes. */
#define GW_RFBVIEW_WHY_MAX 96
/* The longest piece of either stream read before it is understood: a
 * ProtocolVersion. */
#define GW_RFBVIEW_HOLD_MAX 12

/* Where the server's side of the handshake is. */
enum gw_rfbview_server {
	GW_RFBVIEW_S_VERSION,   /* its ProtocolVersion */
	GW_RFBVIEW_S_SECURITY,  /* 3.3: the type; 3.7+: how many it offers */
	GW_RFBVIEW_S_TYPES,     /* 3.7+: the types offered */
	GW_RFBVIEW_S_CHOICE,    /* 3.7+: waits for the client's choice */
	GW_RFBVIEW_S_CHALLENGE, /* VNC authentication's 16 bytes */
	GW_RFBVIEW_S_RESULT,    /* SecurityResult */
	GW_RFBVIEW_S_DONE,      /* settled: the rest is not read */
	GW_RFBVIEW_S_FAILED,    /* refused the client: nothing may follow */
};

/* Where the client's stream is. */
enum gw_rfbview_client {
	GW_RFBVIEW_C_VERSION,  /* its ProtocolVersion */
	GW_RFBVIEW_C_SECURITY, /* 3.7+ its choice; 3.3 what the server set */
	GW_RFBVIEW_C_RESPONSE, /* VNC authentication's 16 bytes */
	GW_RFBVIEW_C_INIT,     /* ClientInit */
	GW_RFBVIEW_C_HEADER,   /* a message's type and fixed fields */
	GW_RFBVIEW_C_BODY,     /* the rest of a message */
};

/*
 * One relay's view of both streams; gw_rfbview_init makes a stream's
 * start. Owned by the caller, one per connection. Once why is set the
 * connection is to be closed with it, and nothing more passes.
 */
struct gw_rfbview {
	enum gw_rfbview_server s_at;
	enum gw_rfbview_client c_at;
	unsigned server_version; /* major * 1000 + minor, once read */
	unsigned minor;          /* the client's: 3, 7 or 8; 0 until read */
	uint8_t type;            /* the security type in use; 0 until known */
	uint8_t offered[32];     /* 3.7+: the types offered, a bit each */
	uint32_t s_left;         /* server: bytes of the item still to come */
	uint8_t s_hold[GW_RFBVIEW_HOLD_MAX];
	size_t s_have;
	uint8_t c_hold[GW_RFBVIEW_HOLD_MAX]; /* the version, a header */
	size_t c_have;
	int pass;      /* the client's current message reaches the server */
	uint64_t body; /* bytes of its body still to come */
	char why[GW_RFBVIEW_WHY_MAX];
};

void gw_rfbview_init(struct gw_rfbview *v);
/*
 * The client's bytes in[0..len): writes into out what may reach the
 * server and returns how many bytes that is, at most len. out may be in
 * (the bytes that pass keep their order, and only move forward). Bytes
 * are framed as they come, so any cut of the stream gives the same
 * output; a message that does not pass is skipped without being held.
 */
size_t gw_rfbview_from_client(
    struct gw_rfbview *v, const uint8_t *in, size_t len, uint8_t *out);
/* The server's bytes in[0..len), as they go to the client. */
void gw_rfbview_from_server(
    struct gw_rfbview *v, const uint8_t *in, size_t len);
/* NULL while the streams are fine, else why the connection must close. */
const char *gw_rfbview_error(const struct gw_rfbview *v);

#endif
