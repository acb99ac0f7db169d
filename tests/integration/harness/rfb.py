"""RFB (RFC 6143) spoken by hand over the noVNC relay's WebSocket
(a PlainWs): the 3.8 handshake with security None, and framebuffer
updates read whole."""

import struct

from .runner import expect, expect_eq, expect_in

# The pseudo-encodings a server answers a resize with (and names the
# screens in), and says it takes QEMU's key events with, as the RFB
# community's protocol describes them.
EXTENDED_DESKTOP_SIZE = -308
QEMU_EXTENDED_KEY = -258


def rfb_handshake(ws):
    """Version 3.8, security None, ClientInit (shared): returns the
    framebuffer's width, height and bits per pixel from ServerInit."""
    expect_eq(ws.recv_bytes(12), b"RFB 003.008\n", "the RFB banner")
    ws.send(b"RFB 003.008\n")
    types = ws.recv_bytes(ws.recv_bytes(1)[0])
    expect_in(1, types, "the security types (1 is None)")
    ws.send(b"\x01")
    expect_eq(ws.recv_bytes(4), b"\0\0\0\0", "SecurityResult")
    ws.send(b"\x01")
    init = ws.recv_bytes(24)
    width, height = struct.unpack(">HH", init[:4])
    ws.recv_bytes(struct.unpack(">I", init[20:24])[0])
    return width, height, init[4]


def rfb_read_update(ws, bpp, timeout=10):
    """One FramebufferUpdate of raw rectangles, and of the
    ExtendedDesktopSize and QEMU key event ones a server adds: (the raw
    rectangles' area, [(reason, status, width, height, [screen ids])] of
    the ExtendedDesktopSize ones)."""
    head = ws.recv_bytes(4, timeout=timeout)
    expect_eq(head[0], 0, "the message type (FramebufferUpdate)")
    area, sizes = 0, []
    for _ in range(struct.unpack(">H", head[2:4])[0]):
        x, y, w, h, enc = struct.unpack(">HHHHi", ws.recv_bytes(12, timeout=timeout))
        if enc == EXTENDED_DESKTOP_SIZE:
            n = ws.recv_bytes(4, timeout=timeout)[0]
            screens = [struct.unpack(">IHHHHI", ws.recv_bytes(16, timeout=timeout)) for _ in range(n)]
            sizes.append((x, y, w, h, [s[0] for s in screens]))
            continue
        if enc == QEMU_EXTENDED_KEY:
            continue
        expect_eq(enc, 0, "the rectangle's encoding (raw)")
        ws.recv_bytes(w * h * bpp // 8, timeout=timeout)
        area += w * h
    return area, sizes


def rfb_update(ws, width, height, bpp):
    """Asks for the whole screen and reads the update: raw rectangles
    (no encodings were offered) that must cover every pixel."""
    ws.send(struct.pack(">BBHHHH", 3, 0, 0, 0, width, height))
    area, sizes = rfb_read_update(ws, bpp)
    expect(not sizes, "a desktop size nobody asked for: %r" % sizes)
    expect_eq(area, width * height, "the pixels the update covered")
