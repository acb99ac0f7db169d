"""Screenshots read back: a PNG decoder of its own, which checks what it
reads, and the pixels of an image by place."""

import struct
import zlib

from .runner import expect, expect_eq


def png_decode(data):
    """(width, height, rgb bytes) of an 8-bit RGB PNG, checked as it is
    read: signature, chunk CRCs, IHDR, filters."""
    expect_eq(data[:8], b"\x89PNG\r\n\x1a\n", "the PNG signature")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack_from(">I", data, pos)
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        (crc,) = struct.unpack_from(">I", data, pos + 8 + n)
        expect_eq(crc, zlib.crc32(kind + body), "the CRC of chunk %r" % kind)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    expect(ihdr is not None, "no IHDR")
    w, h, depth, ctype, _, _, interlace = ihdr
    expect_eq((depth, ctype, interlace), (8, 2, 0), "bit depth, colour type (RGB), interlace")
    raw = zlib.decompress(idat)
    stride = w * 3
    expect_eq(len(raw), h * (stride + 1), "the decompressed size")
    out = bytearray(h * stride)
    prev = bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b = prev[i]
            c = prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
            else:
                expect_eq(f, 0, "a row's filter type")
        out[y * stride : (y + 1) * stride] = line
        prev = line
    return w, h, bytes(out)


class Image:
    """An image's pixels: (r, g, b) at (x, y), and the colours of a block."""

    def __init__(self, w, h, rgb):
        self.w, self.h, self.rgb = w, h, rgb

    def at(self, x, y):
        i = (y * self.w + x) * 3
        return tuple(self.rgb[i : i + 3])

    def block(self, x, y, w, h):
        """The set of colours in a block."""
        return {self.at(i, j) for j in range(y, y + h) for i in range(x, x + w)}
