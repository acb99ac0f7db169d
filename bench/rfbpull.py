"""rfbpull: an RFB client that pulls framebuffer updates as fast as the
server sends them, over TCP or over a WebSocket relay (noVNC's path), and
prints what it got as one line: seconds, updates, bytes, first-update ms.

    rfbpull.py tcp HOST:PORT SECONDS
    rfbpull.py ws URL SECONDS [TOKEN]

Raw encoding only, so every changed pixel crosses the wire: the figure is
the relay's throughput, not the encoder's cleverness."""

import asyncio
import socket
import struct
import sys
import time


class TcpStream:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), 10)
        self.buf = bytearray()

    async def read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("the server closed the connection")
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    async def write(self, data):
        self.sock.sendall(data)


class WsStream:
    def __init__(self, ws):
        self.ws = ws
        self.buf = bytearray()

    async def read(self, n):
        while len(self.buf) < n:
            self.buf += await self.ws.recv()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    async def write(self, data):
        await self.ws.send(data)


async def handshake(s):
    version = await s.read(12)
    if not version.startswith(b"RFB 003."):
        raise RuntimeError("not RFB: %r" % version)
    await s.write(b"RFB 003.008\n")
    n = (await s.read(1))[0]
    types = await s.read(n)
    if 1 not in types:
        raise RuntimeError("no None security: %r" % types)
    await s.write(b"\x01")
    if struct.unpack(">I", await s.read(4))[0] != 0:
        raise RuntimeError("security failed")
    await s.write(b"\x01")
    w, h = struct.unpack(">HH", await s.read(4))
    pf = await s.read(16)
    nlen = struct.unpack(">I", await s.read(4))[0]
    await s.read(nlen)
    await s.write(struct.pack(">BxHi", 2, 1, 0))
    return w, h, pf[0] // 8


async def pull(s, seconds):
    w, h, bpp = await handshake(s)
    start = time.monotonic()
    first = None
    updates = total = 0
    incremental = 0
    # At least one update (the first is never incremental, so it comes
    # at once); after that, one per change until the time is up.
    while updates == 0 or time.monotonic() - start < seconds:
        await s.write(struct.pack(">BBHHHH", 3, incremental, 0, 0, w, h))
        incremental = 1
        while True:
            t = (await s.read(1))[0]
            if t == 0:
                break
            if t == 2:
                continue
            if t == 3:
                await s.read(3)
                await s.read(struct.unpack(">I", await s.read(4))[0])
                continue
            raise RuntimeError("unexpected server message %d" % t)
        await s.read(1)
        nrects = struct.unpack(">H", await s.read(2))[0]
        for _ in range(nrects):
            x, y, rw, rh, enc = struct.unpack(">HHHHi", await s.read(12))
            if enc != 0:
                raise RuntimeError("encoding %d, asked for raw" % enc)
            await s.read(rw * rh * bpp)
            total += rw * rh * bpp + 12
        updates += 1
        if first is None:
            first = (time.monotonic() - start) * 1000
    return time.monotonic() - start, updates, total, first


async def main():
    kind, where, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    if kind == "tcp":
        result = await pull(TcpStream(where), seconds)
    else:
        import websockets

        headers = {}
        if len(sys.argv) > 4:
            headers["Authorization"] = "Bearer " + sys.argv[4]
        # websockets 14 renamed extra_headers; Debian 12 has 10.4.
        key = "additional_headers" if int(websockets.__version__.split(".")[0]) >= 14 else "extra_headers"
        conn = websockets.connect(where, max_size=None, **{key: headers})
        async with conn as ws:
            result = await pull(WsStream(ws), seconds)
    print("%.3f %d %d %.1f" % result)


asyncio.run(main())
