"""The gateway's doors under attack, each case named after its attack:
noVNC's session cookie (a ticket scoped to /novnc/, never the token,
refused from another origin, the token out of the browser's history),
the DevTools doors taking no cookie, floods of refused upgrades that must
not flood the journal, slowloris connections that must not starve the
probes, and half-sent heads that must not starve the TCP DevTools
relay."""

import base64
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    HttpServer,
    Sandbox,
    browser_script,
    case,
    expect,
    expect_eq,
    expect_in,
    free_display,
    free_port,
    http_get,
    minimal_config,
    note,
    run,
    track_closer,
    wait_for,
    ws_upgrade,
)

CHROMIUM = "/usr/bin/chromium"
START = "/novnc/vnc.html?autoconnect=1&resize=scale&path=novnc/websockify"


def config(**gateway):
    """The minimal config with more keys in its [gateway] section."""
    lines = "".join("%s = %s\n" % kv for kv in gateway.items())
    return minimal_config().replace("[gateway]\n", "[gateway]\n" + lines, 1)


def xvnc():
    """TigerVNC's Xvnc on a free display and port, security None, killed
    at the end of the case; returns its port."""
    port = free_port()
    proc = subprocess.Popen(
        ["Xvnc", ":%d" % free_display(), "-geometry", "1024x768", "-depth", "24", "-rfbport", str(port),
         "-SecurityTypes", "None", "-nolisten", "tcp", "-localhost"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    track_closer(lambda: (proc.kill(), proc.wait()))

    def listening():
        expect(proc.poll() is None, "Xvnc exited")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    wait_for(listening, 10, "Xvnc listening")
    return port


def hand_off(sb):
    """The ticket /novnc/?token= sets: (cookie header value, Set-Cookie)."""
    status, headers, _ = http_get(sb.port, "/novnc/?token=" + sb.token)
    expect_eq(status, 200, "the hand-off's status")
    setc = headers.get("set-cookie", "")
    return setc.split(";")[0], setc


@case("cookie theft: in a real browser the token is in neither the history, the URL nor the cookie; "
      "the ticket works; a page on another origin cannot open /novnc/websockify", 180)
def cookie_browser():
    # Another origin on the same host, as a preview server in the sandbox
    # would be.
    preview = HttpServer(b"<!doctype html><title>another origin</title>\n")
    with Sandbox(config=config(vnc="127.0.0.1:%d" % xvnc())) as sb:
        token = sb.token
        gw = "http://127.0.0.1:%d" % sb.port
        r = browser_script("novnc_doors.js", gw, token, "http://127.0.0.1:%d" % preview.port, CHROMIUM, "60000", timeout=150)
        note("browser: %r" % {k: v for k, v in r.items() if k != "cookies"})
        expect_eq(r["url"], gw + START, "the final URL")
        expect(r["canvas"]["width"] == 1024 and r["canvas"]["height"] == 768, "the RFB session's canvas: %r" % r["canvas"])
        # The new tab's about:blank, then the page in the place of the
        # hand-off.
        expect_eq(r["history"], ["about:blank", gw + START], "the tab's history")
        expect_eq(r["historyLength"], 2, "history.length")
        cookies = r["cookies"]
        expect_eq([c["name"] for c in cookies], ["berth_novnc"], "the browser's cookies")
        c = cookies[0]
        expect(c["value"] != token and token not in c["value"], "the cookie holds the token")
        expect(re.fullmatch(r"[0-9a-f]{64}", c["value"]), "the ticket: %r" % c["value"])
        expect_eq((c["path"], c["httpOnly"], c["sameSite"]), ("/novnc/", True, "Strict"), "the cookie's scope")
        expect(c["expires"] > time.time() + 3600, "the cookie's expiry: %r" % c["expires"])
        # Another origin of the same host: its WebSocket to the relay
        # carries the cookie, and is refused for its Origin.
        expect_eq(r["foreign"]["opened"], False, "the foreign page's WebSocket opened")
        ev = sb.wait_event(lambda e: e["kind"] == "auth.failed" and e["data"].get("reason") == "origin")
        expect_eq(ev["data"].get("peer"), "127.0.0.1", "the refusal's peer")
        note("the preview server saw: %r" % preview.seen)
        expect(preview.seen, "the preview server got no request")
        for path, jar in preview.seen:
            expect(token not in jar, "the preview server got the token in %s" % path)
            if not path.startswith("/novnc/"):
                expect("berth_novnc" not in jar, "the preview server got the ticket on %s" % path)
        expect(token not in sb.log(), "the token is in the log")


@case("cookie replay: a ticket from another origin, an unknown or expired-looking ticket, or the token as a "
      "cookie are refused before the upgrade")
def cookie_replay():
    with Sandbox(config=config(vnc="127.0.0.1:%d" % free_port())) as sb:
        jar, _ = hand_off(sb)
        own = "http://127.0.0.1:%d" % sb.port
        path = "/novnc/websockify"
        blank = {"Sec-WebSocket-Protocol": ""}
        for what, hdrs, want in (
            ("no Origin", {"Cookie": jar}, 403),
            ("a foreign Origin", {"Cookie": jar, "Origin": "http://attacker.example"}, 403),
            ("another port's Origin", {"Cookie": jar, "Origin": "http://127.0.0.1:%d" % (sb.port + 1)}, 403),
            ("an Origin with a path", {"Cookie": jar, "Origin": own + "/x"}, 403),
            ("the Host of another", {"Cookie": jar, "Origin": own, "Host": "attacker.example"}, 403),
            ("an unknown ticket", {"Cookie": "berth_novnc=" + "a" * 64, "Origin": own}, 401),
            ("a short ticket", {"Cookie": "berth_novnc=" + jar[12:-1], "Origin": own}, 401),
            ("the token as a cookie", {"Cookie": "berth_token=" + sb.token, "Origin": own}, 401),
        ):
            status, headers = ws_upgrade(sb.port, path=path, headers=dict(blank, **hdrs))
            expect_eq(status, want, "the upgrade with %s" % what)
            expect("sec-websocket-accept" not in headers, "%s: a refusal with Sec-WebSocket-Accept" % what)
        # The ticket from the gateway's own origin passes the door (the
        # VNC server behind it is down, which the relay says after 101).
        status, _ = ws_upgrade(sb.port, path=path, headers=dict(blank, Cookie=jar, Origin=own))
        expect_eq(status, 101, "the upgrade with the ticket from the gateway's origin")
        # A gateway restart forgets every ticket.
        old = sb.gateway_pid()
        os.kill(old, 9)
        sb.gateway_pid(timeout=10, other_than=old)
        sb.wait_healthy()
        status, _ = ws_upgrade(sb.port, path=path, headers=dict(blank, Cookie=jar, Origin=own))
        expect_eq(status, 401, "the ticket after a gateway restart")


@case("cookie to the DevTools doors: the TCP relay and /v1/cdp take no cookie, ticket or token, whatever the Origin")
def cookie_devtools():
    relay = free_port()
    with Sandbox(config=config(cdp="127.0.0.1:%d" % free_port(), cdp_relay_listen="127.0.0.1:%d" % relay,
                               vnc="127.0.0.1:%d" % free_port())) as sb:
        jar, _ = hand_off(sb)
        wait_for(lambda: http_get(relay, "/json/version")[0] == 401, 10, "the relay listening")
        for cookie in (jar, "berth_token=" + sb.token):
            for origin in (None, "http://127.0.0.1:%d" % relay, "http://attacker.example"):
                hdrs = {"Cookie": cookie}
                if origin:
                    hdrs["Origin"] = origin
                expect_eq(http_get(relay, "/json/version", hdrs)[0], 401, "the TCP relay with %r" % hdrs)
                status, _ = ws_upgrade(sb.port, path="/v1/cdp", headers=dict(hdrs, **{"Sec-WebSocket-Protocol": ""}))
                expect_eq(status, 401, "/v1/cdp with %r" % hdrs)


def refuse_many(port, seconds, threads=4):
    """Refused upgrades (a wrong token) as fast as threads can send them,
    for seconds; returns how many were answered 401."""
    req = ("GET /v1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           "Sec-WebSocket-Protocol: berth.v1\r\nAuthorization: Bearer wrong\r\n\r\n" % port).encode()
    counts = [0] * threads
    end = time.monotonic() + seconds

    def loop(i):
        while time.monotonic() < end:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            try:
                s.sendall(req)
                if s.recv(64).startswith(b"HTTP/1.1 401"):
                    counts[i] += 1
            finally:
                s.close()

    ts = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(counts)


@case("flood of refused upgrades: a bounded number of auth.failed events whose counts add up; "
      "the journal keeps its older events", 120)
def refusal_flood():
    with Sandbox() as sb:
        first = sb.events(1)[0]
        before = len(sb.journal_bytes())
        t0 = time.monotonic()
        refused = refuse_many(sb.port, 4)
        took = time.monotonic() - t0
        note("%d refusals in %.1f s (%.0f/s)" % (refused, took, refused / took))
        expect(refused / took > 1000, "the flood was too slow to prove anything: %.0f/s" % (refused / took))

        def counted():
            return [e for e in sb.events(1) if e["kind"] == "auth.failed"]

        wait_for(lambda: sum(e["data"]["count"] for e in counted()) == refused, 10,
                 "auth.failed counts adding up to %d" % refused)
        evs = counted()
        note("%d auth.failed events, counts %r" % (len(evs), [e["data"]["count"] for e in evs]))
        # The first at once, then one a second at most.
        expect(len(evs) <= took + 3, "%d auth.failed events for a %.1f s flood" % (len(evs), took))
        expect_eq(evs[0]["data"]["count"], 1, "the first event's count")
        expect(all(e["data"] == dict(e["data"], peer="127.0.0.1", reason="invalid") for e in evs),
               "the events' peer and reason: %r" % evs[:3])
        expect_eq(sb.events(1)[0], first, "the journal's first event after the flood")
        grew = len(sb.journal_bytes()) - before
        expect(grew < 64 * 1024, "the journal grew by %d bytes" % grew)
        log = sb.log()
        lines = log.count("refused upgrade from 127.0.0.1:")
        more = re.findall(r"refused (\d+) more from 127\.0\.0\.1 in the last 1 s", log)
        note("log: %d first lines, %d 'more' lines" % (lines, len(more)))
        expect_eq(lines, 1, "log lines of single refusals")
        expect_eq(lines + sum(int(n) for n in more), refused, "refusals the log accounts for")


class Slowloris:
    """n connections that each dribble a request head, a byte every
    interval, never finishing it, and open again whenever the gateway
    closes one, as a slowloris does; in a thread of its own."""

    HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 4000

    def __init__(self, port, n, interval=0.5):
        self.port, self.n, self.interval = port, n, interval
        self.stop = threading.Event()
        self.opened = 0
        self.socks = {}
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        track_closer(self.close)

    def open_one(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        except OSError:
            return
        s.setblocking(False)
        self.socks[s] = 0
        self.opened += 1

    def run(self):
        while not self.stop.is_set():
            while len(self.socks) < self.n and not self.stop.is_set():
                self.open_one()
            for s, off in list(self.socks.items()):
                try:
                    s.send(self.HEAD[off:off + 1])
                    self.socks[s] = min(off + 1, len(self.HEAD) - 1)
                except OSError:
                    s.close()
                    del self.socks[s]
            self.stop.wait(self.interval)

    def close(self):
        self.stop.set()
        self.thread.join(10)
        for s in self.socks:
            s.close()


def healthz_burst(port, n):
    """n GET /healthz on a connection each; returns the statuses that were
    not 200 (an exception counts as 0) and the slowest in seconds."""
    req = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    bad, slowest = [], 0.0
    for _ in range(n):
        t = time.monotonic()
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            try:
                s.sendall(req)
                data = b""
                while b"\r\n" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            finally:
                s.close()
            if not data.startswith(b"HTTP/1.1 200"):
                bad.append(data[:40])
        except OSError as e:
            bad.append(repr(e))
        slowest = max(slowest, time.monotonic() - t)
    return bad, slowest


@case("slowloris: 200 connections dribbling heads while 10,000 /healthz requests all succeed", 300)
def slowloris():
    with Sandbox() as sb:
        attack = Slowloris(sb.port, 200)
        wait_for(lambda: attack.opened >= 200, 10, "200 slowloris connections")
        time.sleep(1)
        results = []
        threads = [threading.Thread(target=lambda: results.append(healthz_burst(sb.port, 2500))) for _ in range(4)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - t0
        bad = [b for r in results for b in r[0]]
        note("10000 /healthz in %.1f s, slowest %.3f s; the attacker opened %d connections"
             % (took, max(r[1] for r in results), attack.opened))
        expect_eq(len(results), 4, "bursts that finished")
        expect_eq(bad[:5], [], "failed /healthz requests (%d in all)" % len(bad))
        # A head that stays incomplete is closed after its deadline, even
        # with no newcomer pushing it out.
        s = socket.create_connection(("127.0.0.1", sb.port), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
        attack.close()
        t0 = time.monotonic()
        expect_eq(s.recv(100), b"", "what a half-sent head got")
        took = time.monotonic() - t0
        expect(took < 7, "a half-sent head was closed after %.1f s" % took)
        s.close()


@case("half-sent heads: 64 and more held to the TCP DevTools relay while authorized clients are answered within 2 s",
      180)
def half_sent_heads():
    fake = HttpServer(b'{"Browser":"Fake/1.0","webSocketDebuggerUrl":"ws://x/devtools/browser/fake"}',
                      "application/json")
    relay = free_port()
    with Sandbox(config=config(cdp="127.0.0.1:%d" % fake.port, cdp_relay_listen="127.0.0.1:%d" % relay)) as sb:
        auth = {"Authorization": "Bearer " + sb.token}
        wait_for(lambda: http_get(relay, "/json/version", auth)[0] == 200, 10, "the relay answering")
        attack = Slowloris(relay, 100)
        wait_for(lambda: attack.opened >= 100, 10, "100 half-sent heads")
        time.sleep(1)
        slowest = 0.0
        for i in range(40):
            t = time.monotonic()
            status = http_get(relay, "/json/version", auth, timeout=5)[0]
            slowest = max(slowest, time.monotonic() - t)
            expect_eq(status, 200, "authorized request %d" % i)
            time.sleep(0.1)
        note("slowest authorized answer %.3f s; the attacker opened %d connections" % (slowest, attack.opened))
        expect(slowest < 2, "an authorized client waited %.1f s" % slowest)
        attack.close()
        # A head left half-sent gets its 408 after 5 s.
        s = socket.create_connection(("127.0.0.1", relay), timeout=10)
        s.sendall(b"GET /json/version HTTP/1.1\r\n")
        t = time.monotonic()
        got = s.recv(100)
        took = time.monotonic() - t
        s.close()
        expect(got.startswith(b"HTTP/1.1 408"), "what a half-sent head got: %r" % got)
        expect(4 < took < 7, "a half-sent head got its 408 after %.1f s" % took)


def ws_open(port, path, headers):
    """A WebSocket upgrade on a raw socket kept open: returns the socket
    once the answer's head says 101, and the bytes read past the head."""
    key = base64.b64encode(os.urandom(16)).decode()
    hdrs = {"Host": "127.0.0.1:%d" % port, "Upgrade": "websocket", "Connection": "Upgrade",
            "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": key}
    hdrs.update(headers)
    req = "GET %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in hdrs.items() if kv[1]) + "\r\n"
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    track_closer(s.close)
    s.sendall(req.encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        expect(chunk, "the gateway closed before answering the upgrade")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    expect(head.startswith(b"HTTP/1.1 101"), "the upgrade's answer: %r" % head[:80])
    return s, rest


def ws_frame(opcode, payload, masked=True):
    """One final frame; a client's is masked, unless told otherwise."""
    n = len(payload)
    head = bytes([0x80 | opcode])
    bit = 0x80 if masked else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([bit | 127]) + struct.pack(">Q", n)
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class Frames:
    """The server's frames (unmasked) on a raw socket, read as needed."""

    def __init__(self, s, buf=b""):
        self.s, self.buf = s, buf

    def _one(self):
        b = self.buf
        if len(b) < 2:
            return None
        n, off = b[1] & 0x7F, 2
        if n == 126:
            if len(b) < 4:
                return None
            n, off = struct.unpack(">H", b[2:4])[0], 4
        elif n == 127:
            if len(b) < 10:
                return None
            n, off = struct.unpack(">Q", b[2:10])[0], 10
        if len(b) < off + n:
            return None
        self.buf = b[off + n:]
        return b[0] & 0x0F, b[off:off + n]

    def until(self, pred, what, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            f = self._one()
            while f is not None:
                if pred(*f):
                    return f
                f = self._one()
            left = deadline - time.monotonic()
            expect(left > 0, "no %s from the gateway within %d s" % (what, timeout))
            self.s.settimeout(left)
            chunk = self.s.recv(65536)
            expect(chunk, "the gateway closed the connection before %s" % what)
            self.buf += chunk

    def expect_1002(self, what):
        _, payload = self.until(lambda op, p: op == 0x8, "a close frame")
        code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
        expect_eq(code, 1002, "the close code after %s" % what)


@case("unmasked frames: a client's unmasked frame on /v1 gets close code 1002; masked ones of every length pass")
def unmasked_v1():
    with Sandbox() as sb:
        s, rest = ws_open(sb.port, "/v1", {"Authorization": "Bearer " + sb.token, "Sec-WebSocket-Protocol": "berth.v1"})
        fr = Frames(s, rest)
        # Masked frames with a 7-bit, a 16-bit and a 64-bit length go
        # through: a hello, then pings padded to each size, answered.
        hello = {"type": "request", "id": 1, "op": "hello", "args": {"version": "berth.v1"}}
        s.sendall(ws_frame(0x2, msgpack.packb(hello)))
        fr.until(lambda op, p: op == 0x2 and msgpack.unpackb(p).get("id") == 1, "hello's answer")
        for i, size in enumerate((0, 300, 70000)):
            msg = msgpack.packb({"type": "request", "id": 2 + i, "op": "ping", "args": {}, "pad": "x" * size})
            s.sendall(ws_frame(0x2, msg))
            fr.until(lambda op, p, i=i: op == 0x2 and msgpack.unpackb(p).get("id") == 2 + i,
                     "the answer to a %d-byte frame" % len(msg))
        s.sendall(ws_frame(0x9, b"masked"))
        fr.until(lambda op, p: op == 0xA and p == b"masked", "the pong")
        s.sendall(ws_frame(0x9, b"unmasked", masked=False))
        fr.expect_1002("an unmasked ping on /v1")


@case("unmasked frames: the noVNC relay closes with 1002 on an unmasked frame, after relaying masked ones")
def unmasked_novnc():
    port = xvnc()
    with Sandbox(config=config(vnc="127.0.0.1:%d" % port)) as sb:
        jar, _ = hand_off(sb)
        own = "http://127.0.0.1:%d" % sb.port
        s, rest = ws_open(sb.port, "/novnc/websockify", {"Cookie": jar, "Origin": own, "Sec-WebSocket-Protocol": "binary"})
        fr = Frames(s, rest)
        # The RFB server speaks first; the client's masked version gets
        # the security types back.
        fr.until(lambda op, p: op == 0x2 and p.startswith(b"RFB 003."), "the RFB version")
        s.sendall(ws_frame(0x2, b"RFB 003.008\n"))
        fr.until(lambda op, p: op == 0x2, "the security types")
        s.sendall(ws_frame(0x2, b"\x01", masked=False))
        fr.expect_1002("an unmasked frame on the noVNC relay")


if __name__ == "__main__":
    run()
