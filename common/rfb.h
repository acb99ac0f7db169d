/* rfb: what of RFB (RFC 6143) more than one of berth's programs reads:
 * its big-endian integers and the ProtocolVersion both sides open with.
 * berth-probe's handshake and the gateway's view-only filter use it. */
#ifndef BERTH_RFB_H
#define BERTH_RFB_H

#include <stdint.h>

/* A ProtocolVersion: "RFB xxx.yyy\n". */
#define RFB_VERSION_LEN 12

uint32_t rfb_u32(const uint8_t *p);
unsigned rfb_u16(const uint8_t *p);
/* The RFB_VERSION_LEN bytes at p as a ProtocolVersion: 0 with *major and
 * *minor, or -1 if they are not one. */
int rfb_version(const uint8_t *p, unsigned *major, unsigned *minor);

#endif
