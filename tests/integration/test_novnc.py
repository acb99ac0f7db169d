"""noVNC through the gateway: the page behind the token (a cookie set by
/novnc/?token=, or the bearer header), no path out of its directory, and
the WebSocket relay /novnc/websockify to a real Xvnc (an RFB handshake and
a whole framebuffer update), its refusals, its closes with a reason, one
bad connection not hurting another, and flow control both ways, proven
against a scripted RFB server that floods or does not read."""

import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness.rfb import rfb_handshake, rfb_update  # noqa: E402
from harness import (  # noqa: E402
    PlainWs,
    Sandbox,
    Timeout,
    case,
    expect,
    expect_eq,
    expect_in,
    free_display,
    free_port,
    http_get,
    minimal_config,
    note,
    parse_metrics,
    raw_ws_socket,
    run,
    track_closer,
    wait_for,
    ws_upgrade,
)

NOVNC_DIR = "/usr/share/novnc"
START = "/novnc/vnc.html?autoconnect=1&resize=scale&path=novnc/websockify"
WIDTH, HEIGHT = 1280, 800


def desktop_config(**gateway):
    """The minimal config with more keys in its [gateway] section."""
    lines = "".join("%s = %s\n" % kv for kv in gateway.items())
    return minimal_config().replace("[gateway]\n", "[gateway]\n" + lines, 1)


def ticket(sb):
    """The session ticket /novnc/?token= hands out, as the headers a page
    of the gateway sends with it: the cookie, and its own Origin."""
    status, headers, _ = http_get(sb.port, "/novnc/?token=" + sb.token)
    expect_eq(status, 200, "the hand-off's status")
    value = headers.get("set-cookie", "").split(";")[0]
    expect(value.startswith("berth_novnc="), "the hand-off's cookie: %r" % headers.get("set-cookie"))
    return {"Cookie": value, "Origin": "http://127.0.0.1:%d" % sb.port}


class Xvnc:
    """TigerVNC's Xvnc on a free display and port, security None,
    stopped at the end of the case."""

    def __init__(self):
        self.port = free_port()
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [
                "Xvnc", ":%d" % free_display(), "-geometry", "%dx%d" % (WIDTH, HEIGHT), "-depth", "24",
                "-rfbport", str(self.port), "-SecurityTypes", "None", "-nolisten", "tcp", "-localhost",
            ],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
        )
        track_closer(self.stop)

        def listening():
            expect(self.proc.poll() is None, "Xvnc exited: %r" % self.output())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False

        wait_for(listening, 10, "Xvnc listening on port %d" % self.port, 0.05)

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def relay(sb, headers=None, **kw):
    return PlainWs("ws://127.0.0.1:%d/novnc/websockify" % sb.port, headers=headers, **kw)


def raw_get(port, requests, timeout=3.0):
    """Sends requests (already formatted) on one connection, pipelined,
    and returns [(status, headers, body)] for the answers read."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    data = b""
    try:
        s.sendall(b"".join(requests))
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        expect(sep, "a truncated answer: %r" % data[:200])
        lines = head.decode(errors="replace").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
        expect(m is not None, "no status line: %r" % lines[0])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        is_head = requests[len(out)].startswith(b"HEAD ")
        body = b"" if is_head else rest[:n]
        out.append((int(m.group(1)), headers, body))
        data = rest if is_head else rest[n:]
    return out


@case("the page: 401 without the token; /novnc/?token= sets a ticket and replaces itself; the ticket opens the page")
def page_cookie():
    with open(os.path.join(NOVNC_DIR, "vnc.html"), "rb") as f:
        page = f.read()
    with Sandbox() as sb:
        token = sb.token
        for path in ("/novnc/", "/novnc/vnc.html", "/novnc/app/ui.js", START):
            status, headers, _ = http_get(sb.port, path)
            expect_eq(status, 401, "GET %s without the token" % path)
            expect_eq(headers.get("www-authenticate"), "Bearer", "WWW-Authenticate of %s" % path)
        status, headers, _ = http_get(sb.port, "/novnc/?token=" + "0" * 64)
        expect_eq(status, 401, "a wrong token in the query")
        expect("set-cookie" not in headers, "a wrong token got a cookie")
        status, headers, _ = http_get(sb.port, "/novnc/vnc.html", headers={"Cookie": "berth_novnc=" + "0" * 64})
        expect_eq(status, 401, "a wrong ticket in the cookie")

        status, headers, body = http_get(sb.port, "/novnc/?token=" + token)
        expect_eq(status, 200, "the hand-off's status")
        expect("location" not in headers, "the hand-off redirects: %r" % headers.get("location"))
        expect_in(b'location.replace("' + START.encode() + b'")', body, "the hand-off's page")
        expect_eq(headers.get("referrer-policy"), "no-referrer", "the hand-off's Referrer-Policy")
        parts = [p.strip() for p in headers.get("set-cookie", "").split(";")]
        name, _, value = parts[0].partition("=")
        expect_eq(name, "berth_novnc", "the cookie's name")
        expect(re.fullmatch(r"[0-9a-f]{64}", value), "the ticket: %r" % value)
        expect(value != token, "the cookie is the token")
        for attr in ("HttpOnly", "SameSite=Strict", "Path=/novnc/", "Max-Age=43200"):
            expect_in(attr, parts, "the cookie's attributes")
        again = http_get(sb.port, "/novnc/?token=" + token)[1].get("set-cookie", "").split(";")[0]
        expect(again != parts[0], "a second hand-off got the same ticket")

        status, headers, body = http_get(sb.port, START, headers={"Cookie": "theme=dark; " + parts[0]})
        expect_eq(status, 200, "the page with the ticket")
        expect(headers.get("content-type", "").startswith("text/html"), "type: %r" % headers.get("content-type"))
        expect(body == page, "the page is not %s/vnc.html (%d bytes)" % (NOVNC_DIR, len(body)))
        status, headers, body = http_get(sb.port, "/novnc/app/ui.js", headers={"Cookie": parts[0]})
        expect_eq(status, 200, "a module of the page")
        expect(headers.get("content-type", "").startswith("text/javascript"), "type: %r" % headers.get("content-type"))
        expect_eq(http_get(sb.port, "/novnc/nope.js", headers={"Cookie": parts[0]})[0], 404, "a file that is not there")
        # The token itself in the cookie opens nothing.
        expect_eq(http_get(sb.port, "/novnc/vnc.html", headers={"Cookie": "berth_token=" + token})[0], 401,
                  "the page with the token as a cookie")
        # The bearer header does as well as the ticket, and /novnc/ with
        # a credential already on the request just sends it on.
        bearer = {"Authorization": "Bearer " + token}
        expect_eq(http_get(sb.port, "/novnc/vnc.html", headers=bearer)[0], 200, "the page with the bearer token")
        status, headers, _ = http_get(sb.port, "/novnc/", headers={"Cookie": parts[0]})
        expect_eq((status, headers.get("location")), (302, START), "/novnc/ with the ticket")
        expect("set-cookie" not in headers, "a second cookie")

        _, series = parse_metrics(http_get(sb.port, "/metrics")[2].decode())
        expect(series.get('berth_gateway_http_requests_total{path="/novnc/"}', 0) >= 13, "requests under /novnc/: %r"
               % {k: v for k, v in series.items() if "http_requests" in k})
        ev = sb.wait_event(lambda e: e["kind"] == "auth.failed")
        expect_eq(ev["data"].get("reason"), "missing", "the first refusal's reason")
        log = sb.log()
        expect(token not in log, "the token (from the query) is in the log")
        expect(value not in log, "the ticket is in the log")
        expect(token.encode() not in sb.journal_bytes(), "the token is in the journal")


@case("the page: nothing outside its directory, by name, by encoding or through a link; HEAD and pipelining")
def page_paths():
    d = tempfile.mkdtemp(prefix="berth-it-novnc-")
    try:
        os.makedirs(os.path.join(d, "app"))
        with open(os.path.join(d, "vnc.html"), "w") as f:
            f.write("<html>inside</html>\n")
        with open(os.path.join(d, "app", "x.js"), "w") as f:
            f.write("export const x = 1;\n")
        os.symlink("/etc/passwd", os.path.join(d, "out"))
        os.symlink("vnc.html", os.path.join(d, "in.html"))
        os.chmod(d, 0o755)
        with Sandbox(config=desktop_config(novnc_dir=d)) as sb:
            c = ("Cookie: %s\r\n" % ticket(sb)["Cookie"]).encode()

            def get(path, method=b"GET"):
                return method + b" " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + c + b"\r\n"

            for path in (
                b"/novnc/../../etc/passwd",
                b"/novnc/%2e%2e/%2e%2e/etc/passwd",
                b"/novnc/app/../../../etc/passwd",
                b"/novnc/..%2f..%2fetc%2fpasswd",
                b"/novnc/%2fetc%2fpasswd",
                b"/novnc//etc/passwd",
                b"/novnc/out",
                b"/novnc/vnc.html%00.js",
                b"/novnc/app/",
            ):
                answers = raw_get(sb.port, [get(path)])
                note("%s: %s" % (path.decode(), [a[0] for a in answers]))
                expect(len(answers) <= 1, "%s: %d answers" % (path, len(answers)))
                for status, _, body in answers:
                    expect(status in (400, 403, 404), "%s answered %d" % (path.decode(), status))
                    expect(b"root:" not in body, "%s served /etc/passwd" % path.decode())
            # A link that stays inside is fine; HEAD says what GET would
            # send, and requests pipelined behind files are answered.
            answers = raw_get(sb.port, [get(b"/novnc/in.html", b"HEAD"), get(b"/novnc/app/x.js"),
                                        get(b"/novnc/in.html"), get(b"/healthz")])
            expect_eq([a[0] for a in answers], [200, 200, 200, 200], "the statuses of four pipelined requests")
            expect_eq(answers[0][1].get("content-length"), "20", "HEAD's Content-Length")
            expect_eq(answers[1][1].get("content-type"), "text/javascript; charset=utf-8", "x.js's type")
            expect_eq(answers[1][2], b"export const x = 1;\n", "x.js")
            expect_eq(answers[2][2], b"<html>inside</html>\n", "in.html")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("the relay: an RFB handshake (security None) with Xvnc and a whole framebuffer update through /novnc/websockify")
def relay_rfb():
    vnc = Xvnc()
    with Sandbox(config=desktop_config(vnc="127.0.0.1:%d" % vnc.port)) as sb:
        # As noVNC does it: the cookie and no subprotocol.
        ws = relay(sb, ticket(sb))
        width, height, bpp = rfb_handshake(ws)
        expect_eq((width, height), (WIDTH, HEIGHT), "ServerInit's size")
        rfb_update(ws, width, height, bpp)
        rfb_update(ws, width, height, bpp)
        ws.close()
        # As websockify's clients may: the bearer header and "binary".
        ws = relay(sb, {"Authorization": "Bearer " + sb.token}, subprotocols=["binary"])
        expect_eq(ws.ws.subprotocol, "binary", "the subprotocol the gateway chose")
        expect_eq(ws.recv_bytes(12), b"RFB 003.008\n", "the banner with the bearer token")


@case("the relay: no token, a wrong one, or a foreign subprotocol are refused before the upgrade")
def relay_refused():
    with Sandbox(config=desktop_config(vnc="127.0.0.1:%d" % free_port())) as sb:
        token = sb.token
        path = "/novnc/websockify"
        for what, kw, want in (
            ("no token", {"headers": {"Sec-WebSocket-Protocol": "binary"}}, 401),
            ("a wrong cookie", {"headers": {"Sec-WebSocket-Protocol": "binary", "Cookie": "berth_novnc=x"}}, 401),
            ("the token as a cookie", {"headers": {"Sec-WebSocket-Protocol": "binary", "Cookie": "berth_token=" + token,
                                                   "Origin": "http://127.0.0.1:%d" % sb.port}}, 401),
            ("a wrong bearer", {"headers": {"Sec-WebSocket-Protocol": "binary"}, "token": "f" * 64}, 401),
            ("berth.v1", {"token": token}, 400),
            ("the VNC socket's protocol", {"token": token, "headers": {"Sec-WebSocket-Protocol": "berth-vnc"}}, 400),
        ):
            status, headers = ws_upgrade(sb.port, path=path, **kw)
            expect_eq(status, want, "the upgrade with %s" % what)
            expect("sec-websocket-accept" not in headers, "%s: a refusal with Sec-WebSocket-Accept" % what)
        try:
            relay(sb)
        except Exception as e:
            expect_eq(getattr(e, "status_code", None), 401, "noVNC's own upgrade without the cookie: %r" % e)
        else:
            raise AssertionError("an upgrade without the token succeeded")
        ev = sb.wait_event(lambda e: e["kind"] == "auth.failed")
        expect_eq(ev["data"].get("reason"), "missing", "the refusal's reason")
        # /v1 stays as strict as it was: berth.v1 and nothing else known.
        for proto in ("binary", "berth.v1, binary", None):
            hdrs = {"Sec-WebSocket-Protocol": proto} if proto else {"Sec-WebSocket-Protocol": ""}
            expect_eq(ws_upgrade(sb.port, path="/v1", token=token, headers=hdrs)[0], 400, "/v1 offering %r" % proto)
    with Sandbox() as sb:
        status, _ = ws_upgrade(sb.port, path="/novnc/websockify", token=sb.token,
                               headers={"Sec-WebSocket-Protocol": "binary"})
        expect_eq(status, 404, "the relay without a VNC server configured")


@case("the relay: garbage and an oversized frame close their own connections; one beside them keeps working")
def relay_isolation():
    vnc = Xvnc()
    with Sandbox(config=desktop_config(vnc="127.0.0.1:%d" % vnc.port)) as sb:
        hdrs = ticket(sb)
        good = relay(sb, hdrs)
        width, height, bpp = rfb_handshake(good)
        garbage, big = relay(sb, hdrs), relay(sb, hdrs)
        expect_eq(garbage.recv_bytes(12), b"RFB 003.008\n", "the banner")
        expect_eq(big.recv_bytes(12), b"RFB 003.008\n", "the banner")
        # Reserved bits and opcode, an unmasked length: not a frame.
        garbage.write_raw(b"\xff\xff" + os.urandom(64))
        code, reason = garbage.closed()
        note("garbage: closed %s %r" % (code, reason))
        expect(code in (None, 1002), "garbage closed with %s %r" % (code, reason))
        # A binary frame that announces 64 MiB.
        big.write_raw(b"\x82\xff" + struct.pack(">Q", 64 << 20) + os.urandom(4) + os.urandom(4096))
        code, reason = big.closed()
        expect_eq(code, 1009, "the oversized frame's close code (reason %r)" % reason)
        rfb_update(good, width, height, bpp)
        other = relay(sb, hdrs)
        expect_eq(other.recv_bytes(12), b"RFB 003.008\n", "a new connection's banner")


@case("the relay: a VNC server that is down closes the WebSocket with 1011 and says which and why")
def relay_server_down():
    port = free_port()
    with Sandbox(config=desktop_config(vnc="127.0.0.1:%d" % port)) as sb:
        ws = relay(sb, ticket(sb))
        code, reason = ws.closed()
        expect_eq(code, 1011, "the close code (reason %r)" % reason)
        expect_in("VNC server 127.0.0.1:%d unreachable" % port, reason, "the reason")
        expect_in("refused", reason.lower(), "the reason")


@case("the relay: a VNC server that goes away mid-session closes the WebSocket with 1011 and a reason")
def relay_server_gone():
    vnc = Xvnc()
    with Sandbox(config=desktop_config(vnc="127.0.0.1:%d" % vnc.port)) as sb:
        ws = relay(sb, ticket(sb))
        rfb_handshake(ws)
        vnc.stop()
        code, reason = ws.closed()
        expect_eq((code, reason), (1011, "the VNC server closed the connection"), "the close")


class FakeRfb:
    """A TCP server in a thread, dialled by the relay instead of Xvnc: it
    floods a known byte stream at the relay, or reads one from it, and
    counts. The stream's byte at offset k is BLOCK[k % len(BLOCK)], a
    period that no buffer size divides, so lost, doubled or reordered
    pieces show."""

    BLOCK = os.urandom((1 << 20) + 13)

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.conn = None
        self.sent = 0
        self.received = 0
        self.error = None
        self.reading = threading.Event()
        track_closer(self.close)

    @classmethod
    def expected(cls, offset, n):
        """The n stream bytes at offset (n at most len(BLOCK))."""
        k = offset % len(cls.BLOCK)
        return (cls.BLOCK + cls.BLOCK)[k:k + n]

    def accept(self, timeout=5.0):
        self.listener.settimeout(timeout)
        self.conn, _ = self.listener.accept()
        self.conn.settimeout(None)

    def flood(self, total):
        def go():
            try:
                while self.sent < total:
                    n = min(len(self.BLOCK), total - self.sent)
                    self.conn.sendall(self.expected(self.sent, n))
                    self.sent += n
            except OSError as e:
                self.error = e

        threading.Thread(target=go, daemon=True).start()

    def drain(self, total):
        """Once reading is set, reads total bytes and checks each."""

        def go():
            self.reading.wait()
            try:
                while self.received < total:
                    data = self.conn.recv(1 << 20)
                    if not data:
                        raise OSError("end of stream at %d" % self.received)
                    if data != self.expected(self.received, len(data)):
                        raise OSError("wrong bytes at offset %d" % self.received)
                    self.received += len(data)
            except OSError as e:
                self.error = e

        threading.Thread(target=go, daemon=True).start()

    def close(self):
        for s in (self.conn, self.listener):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass


# Far more than every buffer between the two ends can hold: the kernel's
# (loopback's receive buffers may grow to tens of MB; 8 MiB was seen)
# and the relay's own bound (1 MiB).
FLOOD = 256 << 20
BOUND = 64 << 20


@case("the relay: flow control: a browser that stops reading stops the server being read; every byte arrives", 150)
def relay_flow_to_browser():
    fake = FakeRfb()
    with Sandbox(config=desktop_config(vnc="127.0.0.1:%d" % fake.port)) as sb:
        ws = relay(sb, ticket(sb), sock=raw_ws_socket(sb.port, rcvbuf=65536), max_queue=1)
        fake.accept()
        fake.flood(FLOOD)
        time.sleep(3)
        stalled = fake.sent
        time.sleep(1)
        note("the server got %d MiB out before the stall" % (stalled >> 20))
        expect(fake.error is None, "the server: %s" % fake.error)
        expect(stalled < BOUND, "the server sent %d MiB to a browser that reads nothing" % (stalled >> 20))
        expect(fake.sent - stalled < (1 << 20), "the server still sends: %d then %d" % (stalled, fake.sent))
        got = 0
        while got < FLOOD:
            data = ws.recv(10)
            if data != fake.expected(got, len(data)):
                raise AssertionError("wrong bytes at offset %d" % got)
            got += len(data)
        expect_eq(fake.sent, FLOOD, "what the server sent")


@case("the relay: flow control: a server that stops reading stops the browser being read; every byte arrives", 150)
def relay_flow_to_server():
    fake = FakeRfb()
    with Sandbox(config=desktop_config(vnc="127.0.0.1:%d" % fake.port)) as sb:
        ws = relay(sb, ticket(sb))
        fake.accept()
        fake.drain(FLOOD)
        sent = 0
        while sent < FLOOD:
            n = min(1 << 20, FLOOD - sent)
            try:
                ws.send(fake.expected(sent, n), timeout=2)
            except Timeout:
                sent += n  # it is in the library's buffer: it goes later
                break
            sent += n
        note("the browser got %d MiB out before the stall" % (sent >> 20))
        expect(sent < BOUND, "a server that reads nothing took %d MiB" % (sent >> 20))
        fake.reading.set()
        while sent < FLOOD:
            n = min(1 << 20, FLOOD - sent)
            ws.send(fake.expected(sent, n), timeout=10)
            sent += n

        def done():
            ws.pump(0.05)
            expect(fake.error is None, "the server: %s" % fake.error)
            return fake.received == FLOOD

        wait_for(done, 60, "the server to read all %d MiB (at %d)" % (FLOOD >> 20, fake.received))


run()
