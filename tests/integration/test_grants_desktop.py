"""Grants at the desktop's doors, against a real Xvnc run by berthd with
berth-desktop beside it, xevlog (tests/x11) holding the input focus over
the left half of the screen and printing every event that reaches it
(and every new owner of the clipboard), and xpaint's colours on the
right: a real noVNC in headless Chromium with a desktop:view grant sees
the screen, and its clicks and keys change nothing (xevlog, the pointer
and desktop.screenshot before and after); with desktop:control they
arrive where they were made. A raw RFB client with a view grant sends
KeyEvent, PointerEvent, ClientCutText, SetDesktopSize, QEMU's key event,
xvp and gii and none reaches the server, while the same bytes on a
control grant do; what cannot be framed closes with 1008. Revocation and
expiry cut a live noVNC session within 100 ms and its ticket opens
nothing after; a cdp grant's connections to both DevTools relays are cut
the same way."""

import json
import os
import re
import struct
import sys
import tempfile
import shutil
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    XEVLOG,
    Image,
    PlainWs,
    Spawned,
    browser_script,
    case,
    chromium_service,
    desktop_service,
    expect,
    expect_eq,
    expect_in,
    free_port,
    http_get,
    note,
    png_decode,
    run,
    wait_for,
    ws_upgrade,
    xvnc_service,
)
from harness.rfb import rfb_handshake, rfb_read_update  # noqa: E402

W, H = 1280, 800
CHROMIUM = "/usr/bin/chromium"
# xevlog's window: the left half of the screen; xpaint's, on the right.
LOG = (0, 0, 640, 800)
PAINT = (700, 100, 500, 600)
# Where settle() parks the pointer, inside xevlog's window: no action of
# a test goes there.
MARKS = ((1, H - 1), (2, H - 1))
# Where the browser clicks, as fractions of the canvas: in xevlog's
# window, away from the marks.
CLICKS = ((0.25, 0.5), (0.1, 0.2))
# Lines of xevlog that say input or the clipboard reached the server.
INPUT = re.compile(r"^(M|BP|BR|K|KR|SEL) ")


class Desk(harness.Desk):
    """Xvnc and berth-desktop under berthd, the gateway's noVNC in front
    of Xvnc; xevlog on the left half, xpaint's colours on the right."""

    def __init__(self):
        super().__init__(W, H, debug=False, xfce_check=False)
        self.rfb = free_port()
        self.mark = 0

    def config(self):
        return (xvnc_service(self.display, self.rfb, W, H) + desktop_service(self.display, False, after="xvnc")
                + "[gateway]\nvnc = 127.0.0.1:%d\nnovnc_dir = /usr/share/novnc\n" % self.rfb)

    def ready(self):
        self.ws = self.sb.ws(timeout=30)

        def serving():
            return self.ws.request("desktop.input", {"actions": [{"type": "move", "x": 3, "y": 3}]}).get("ok")

        wait_for(serving, 30, "desktop.input answering", 0.1)
        x, y, w, h = LOG
        self.ev = Spawned([XEVLOG, "--selections", "--geometry", "%dx%d+%d+%d" % (w, h, x, y)], env=self.env)
        expect_eq(self.ev.line(), "READY", "xevlog's first line")
        self.paint = harness.Paint(self, PAINT, [((0, 0, 250, 600), (0xFF, 0, 0)), ((250, 0, 250, 600), (0, 0, 0xFF))])
        self.settle()

    def settle(self):
        """Every line xevlog printed since the last settle (the pointer
        goes through XTest to a mark of its own)."""
        self.mark ^= 1
        return harness.xevlog_settle(self.ev, self.ws, MARKS[self.mark])

    def grant(self, scope, **args):
        return self.ws.call("grant.create", dict(args, scope=scope))

    def screen(self):
        """The whole screen, pointer left out, decoded."""
        r = self.ws.call("desktop.screenshot", {"cursor": False}, timeout=20)
        return Image(*png_decode(r["data"]))

    def size(self):
        info = self.ws.call("desktop.info")
        return info["width"], info["height"]


def ticket(sb, token):
    """The session ticket /novnc/?token= hands out for token, as the
    headers a page of the gateway sends with it; and its cookie's
    Max-Age."""
    status, headers, _ = http_get(sb.port, "/novnc/?token=" + token)
    expect_eq(status, 200, "the hand-off's status")
    cookie = headers.get("set-cookie", "")
    expect(cookie.startswith("berth_novnc="), "the hand-off's cookie: %r" % cookie)
    age = int(re.search(r"Max-Age=(\d+)", cookie).group(1))
    return {"Cookie": cookie.split(";")[0], "Origin": "http://127.0.0.1:%d" % sb.port}, age


def relay(sb, headers):
    return PlainWs("ws://127.0.0.1:%d/novnc/websockify" % sb.port, headers=headers)


def bearer(token):
    return {"Authorization": "Bearer " + token}


def upgrade(sb, path, headers=None, token=None, port=None):
    """The status of a relay's upgrade (which offers no berth.v1)."""
    hdrs = dict(headers or {}, **{"Sec-WebSocket-Protocol": "binary"})
    return ws_upgrade(port or sb.port, path, token=token, headers=hdrs)[0]


def inputs(lines):
    return [ln for ln in lines if INPUT.match(ln)]


def noVNC(desk, scope):
    """A real noVNC in headless Chromium, through the link of a new grant
    of scope, clicking at CLICKS and typing: its report, the screens
    before and after, and where the pointer was before and after."""
    g = desk.grant(scope)
    expect_eq(urllib.parse.urlsplit(g["url"]).path, "/novnc/", "the grant's link: %r" % g["url"])
    before, pointer = desk.screen(), desk.ws.call("desktop.cursor")
    clicks = ["%g,%g" % c for c in CLICKS]
    r = browser_script("novnc_canvas.js", g["url"], CHROMIUM, "60000", *clicks, timeout=150)
    note("noVNC: %r" % r)
    expect_eq((r["width"], r["height"]), (W, H), "the canvas's size")
    expect(r["colours"] > 1, "the canvas shows the screen: %r" % r)
    expect(r["connected"], "noVNC was disconnected after its input: %r" % r)
    return r, before, desk.screen(), pointer, desk.ws.call("desktop.cursor")


@case("desktop:view in a real noVNC: the screen is shown; its clicks and keys reach nothing, "
      "the pointer stays, the screen is as it was", timeout=240)
def view_browser():
    harness.need("Xvnc", "xdpyinfo")
    desk = Desk()
    with desk:
        _, before, after, p0, p1 = noVNC(desk, "desktop:view")
        lines = desk.settle()
        expect_eq(inputs(lines), [], "what reached the X server from a view grant")
        expect_eq((p1["x"], p1["y"]), (p0["x"], p0["y"]), "the pointer moved")
        expect(before.rgb == after.rgb, "the screen changed under a view grant")


@case("desktop:control in a real noVNC: its clicks and keys arrive where they were made", timeout=240)
def control_browser():
    harness.need("Xvnc", "xdpyinfo")
    desk = Desk()
    with desk:
        _, _, _, _, p1 = noVNC(desk, "desktop:control")
        got = inputs(desk.settle())
        presses = [tuple(map(int, ln.split()[1:])) for ln in got if ln.startswith("BP ")]
        expect_eq(len(presses), len(CLICKS), "button presses: %r" % got)
        for (button, x, y), (fx, fy) in zip(presses, CLICKS):
            expect(button == 1 and abs(x - fx * W) <= 4 and abs(y - fy * H) <= 4,
                   "a click at %r of the canvas arrived as %r" % ((fx, fy), (button, x, y)))
        typed = "".join(bytes.fromhex(ln.split()[2]).decode() for ln in got if ln.startswith("K ") and
                        ln.split()[2] != "-")
        expect_in("berth", typed, "the keys typed: %r" % got)
        last = CLICKS[-1]
        expect(abs(p1["x"] - last[0] * W) <= 4 and abs(p1["y"] - last[1] * H) <= 4,
               "the pointer is not where the last click was: %r" % p1)


# -- a raw RFB client

def key(down, sym):
    return struct.pack(">BBxxI", 4, down, sym)


def pointer(mask, x, y):
    return struct.pack(">BBHH", 5, mask, x, y)


def cut_text(text):
    return struct.pack(">BxxxI", 6, len(text)) + text


def desktop_size(w, h, screen):
    return struct.pack(">BxHHBx", 251, w, h, 1) + struct.pack(">IHHHHI", screen, 0, 0, w, h, 0)


def qemu_key(down, sym, code):
    return struct.pack(">BBHII", 255, 0, down, sym, code)


def update_request():
    return struct.pack(">BBHHHH", 3, 0, 0, 0, W, H)


# Raw and ExtendedDesktopSize (which SetDesktopSize needs), QEMU's
# extended key event.
ENCODINGS = struct.pack(">BxH3i", 2, 3, 0, -308, -258)


def rfb_session(sb, headers):
    """A relay WebSocket through the RFB handshake, with ENCODINGS set:
    (ws, bpp, the screen ids the server named)."""
    ws = relay(sb, headers)
    w, h, bpp = rfb_handshake(ws)
    expect_eq((w, h), (W, H), "ServerInit's size")
    ws.send(ENCODINGS)
    sizes = drain(ws, bpp)
    expect(sizes, "no ExtendedDesktopSize from the server")
    return ws, bpp, sizes[0][3]


def drain(ws, bpp, want_size=None, timeout=10.0):
    """Asks for the whole screen and reads the answer: once it came, the
    server has read everything sent before. Xvnc answers a client that
    takes ExtendedDesktopSize with that rectangle alone, the screen's
    size now. With want_size, asks again until the size is that. The
    ExtendedDesktopSize rectangles seen: (width, height, status, [screen
    ids])."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        ws.send(update_request())
        _, sizes = rfb_read_update(ws, bpp, timeout=max(deadline - time.monotonic(), 0.1))
        seen += [(w, h, status, ids) for _, status, w, h, ids in sizes]
        if want_size is None or any((w, h) == want_size for w, h, _, _ in seen):
            return seen


@case("a raw RFB client with a view grant: keys, pointer, clipboard, SetDesktopSize, QEMU keys, xvp and gii "
      "reach nothing and the session goes on; a control grant's same bytes arrive; "
      "what cannot be framed closes with 1008", timeout=180)
def view_raw():
    harness.need("Xvnc", "xdpyinfo")
    desk = Desk()
    with desk as sb:
        messages = (key(1, 0x61) + key(0, 0x61) + pointer(0, 300, 400) + pointer(1, 300, 400)
                    + pointer(0, 300, 400) + cut_text(b"from a viewer") + qemu_key(1, 0x62, 0x30)
                    + qemu_key(0, 0x62, 0x30))
        # As a browser would: the ticket in the cookie.
        view = desk.grant("desktop:view")
        ws, bpp, screens = rfb_session(sb, ticket(sb, view["token"])[0])
        # Byte by byte too, the relay frames them the same.
        ws.send(messages[:5])
        for i in range(5, 20):
            ws.send(messages[i:i + 1])
        ws.send(messages[20:] + desktop_size(1024, 768, screens[0]))
        ws.send(struct.pack(">BxBB", 250, 1, 2) + b"\xfd\x81\x00\x02\x00\x00")
        sizes = drain(ws, bpp)
        note("ExtendedDesktopSize after the messages: %r" % sizes)
        expect_eq(inputs(desk.settle()), [], "what reached the X server from a view grant")
        expect_eq(desk.size(), (W, H), "the screen's size after a view grant's SetDesktopSize")
        expect(all((w, h) == (W, H) for w, h, _, _ in sizes), "a resize answered: %r" % sizes)
        ws.send(b"\x07\0\0\0")
        code, reason = ws.closed()
        expect_eq((code, reason), (1008, "view only: message type 7 is unknown"), "the close of an unknown message")

        # The same on a control grant's bearer token, a bit at a time
        # too: everything arrives (xvp and gii, which Xvnc does not know,
        # left out).
        control = desk.grant("desktop:control")
        ws, bpp, screens = rfb_session(sb, bearer(control["token"]))
        ws.send(messages[:5])
        ws.send(messages[5:])
        drain(ws, bpp)
        got = inputs(desk.settle())
        for want in ("K a 61", "KR a", "M 300 400", "BP 1 300 400", "BR 1", "K b 62", "SEL CLIPBOARD"):
            expect_in(want, got, "what a control grant's client sent")
        ws.send(desktop_size(1024, 768, screens[0]))
        sizes = drain(ws, bpp, want_size=(1024, 768))
        expect_eq(desk.size(), (1024, 768), "the screen's size after a control grant's SetDesktopSize")
        ws.send(desktop_size(W, H, screens[0]))
        drain(ws, bpp, want_size=(W, H))
        ws.close()


@case("revocation cuts a live noVNC session within 100 ms; its ticket and token open nothing after", timeout=120)
def revoke():
    harness.need("Xvnc", "xdpyinfo")
    desk = Desk()
    with desk as sb:
        for scope in ("desktop:view", "desktop:control"):
            g = desk.grant(scope)
            headers, _ = ticket(sb, g["token"])
            ws, bpp, _ = rfb_session(sb, headers)
            t0 = time.monotonic()
            desk.ws.call("grant.revoke", {"id": g["id"]})
            code, reason = ws.closed(timeout=5)
            took = time.monotonic() - t0
            note("%s: closed %.1f ms after the revoke: %d %r" % (scope, took * 1000, code, reason))
            expect(took < 0.1, "the session was closed %.0f ms after the revoke" % (took * 1000))
            expect_eq((code, reason), (1008, "grant revoked"), "the close")
            expect_eq(http_get(sb.port, "/novnc/vnc.html", headers={"Cookie": headers["Cookie"]})[0], 401,
                      "the page with the revoked grant's ticket")
            expect_eq(upgrade(sb, "/novnc/websockify", headers=headers), 401,
                      "the relay with the revoked grant's ticket")
            expect_eq(upgrade(sb, "/novnc/websockify", token=g["token"]), 401,
                      "the relay with the revoked grant's token")
            expect_eq(http_get(sb.port, "/novnc/?token=" + g["token"])[0], 401, "the hand-off of the revoked token")


@case("expiry cuts a live noVNC session within 100 ms of expires_at; the ticket lasts no longer than the grant",
      timeout=120)
def expiry():
    harness.need("Xvnc", "xdpyinfo")
    desk = Desk()
    with desk as sb:
        g = desk.grant("desktop:view", ttl_s=2)
        headers, age = ticket(sb, g["token"])
        expect(1 <= age <= 2, "the ticket's Max-Age for a 2 s grant: %d" % age)
        ws, _, _ = rfb_session(sb, headers)
        code, reason = ws.closed(timeout=5)
        late = time.time() * 1000 - g["expires_at"]
        note("closed %.1f ms after expires_at: %d %r" % (late, code, reason))
        expect(-20 < late < 100, "the session was closed %.0f ms after the expiry" % late)
        expect_eq((code, reason), (1008, "grant expired"), "the close")
        expect_eq(http_get(sb.port, "/novnc/vnc.html", headers={"Cookie": headers["Cookie"]})[0], 401,
                  "the page with the expired grant's ticket")


# -- the DevTools doors

def browser_path(cdp_port):
    status, _, body = http_get(cdp_port, "/json/version")
    expect_eq(status, 200, "Chromium's /json/version")
    return urllib.parse.urlsplit(json.loads(body)["webSocketDebuggerUrl"]).path


@case("a cdp grant opens /v1/cdp and the TCP DevTools relay; revocation and expiry cut both within 100 ms",
      timeout=180)
def cdp_cut():
    cdp, relay_port = free_port(), free_port()
    udd = tempfile.mkdtemp(prefix="berth-it-cdp-")
    try:
        extra = ("[gateway]\ncdp = 127.0.0.1:%d\ncdp_relay_listen = 127.0.0.1:%d\n\n" % (cdp, relay_port)
                 + chromium_service(cdp, udd))
        with harness.Sandbox(extra=extra) as sb:
            sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "browser", 60)
            ws = sb.ws()
            path = browser_path(cdp)

            def doors(token):
                return (PlainWs("ws://127.0.0.1:%d/v1/cdp" % sb.port, headers=bearer(token)),
                        PlainWs("ws://127.0.0.1:%d%s" % (relay_port, path), headers=bearer(token)))

            g = ws.call("grant.create", {"scope": "cdp"})
            opened = doors(g["token"])
            for c in opened:
                expect_in("Chrome", c.call("Browser.getVersion")["product"], "Browser.getVersion's product")
            t0 = time.monotonic()
            ws.call("grant.revoke", {"id": g["id"]})
            for name, c in zip(("/v1/cdp", "the TCP relay"), opened):
                c.closed(timeout=5)
                took = time.monotonic() - t0
                note("%s closed %.1f ms after the revoke" % (name, took * 1000))
                expect(took < 0.1, "%s was closed %.0f ms after the revoke" % (name, took * 1000))
            expect_eq(upgrade(sb, "/v1/cdp", token=g["token"]), 401, "/v1/cdp with the revoked token")
            expect_eq(upgrade(sb, path, token=g["token"], port=relay_port), 401,
                      "the TCP relay with the revoked token")

            g = ws.call("grant.create", {"scope": "cdp", "ttl_s": 2})
            opened = doors(g["token"])
            for c in opened:
                c.call("Browser.getVersion")
            for name, c in zip(("/v1/cdp", "the TCP relay"), opened):
                c.closed(timeout=5)
                late = time.time() * 1000 - g["expires_at"]
                note("%s closed %.1f ms after expires_at" % (name, late))
                expect(-20 < late < 100, "%s was closed %.0f ms after the expiry" % (name, late))
    finally:
        shutil.rmtree(udd, ignore_errors=True)


run()
