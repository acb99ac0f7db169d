"""Readiness probes against the real programs they are for: the rfb probe
against TigerVNC's Xvnc (a good handshake and a framebuffer update, a wrong
framebuffer size, a server that wants a password), the cdp probe against
headless Chromium, and the http probe's body check against a real HTTP
server. What no real program here can show (a silent VNC server, a relay
that forgot to rewrite webSocketDebuggerUrl, a noVNC relay with the VNC
server behind it dead, a wrong token) is played by small servers in this
file, and berth-probe runs directly against them."""

import asyncio
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from http import HTTPStatus

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    BUILDDIR,
    Sandbox,
    Spawned,
    case,
    expect,
    expect_eq,
    expect_in,
    free_display,
    free_port,
    http_json,
    note,
    run,
    run_program,
    scratch,
    wait_for,
)

PROBE = os.path.join(BUILDDIR, "berth-probe")
TOKEN = "probe-token-5f2c9a"


def xvnc_service(port, display, security="None", extra_args="", ready_size="1280x800"):
    return (
        "[service vnc]\n"
        "command = Xvnc :%d -geometry 1280x800 -depth 24 -rfbport %d -SecurityTypes %s "
        "-nolisten tcp -localhost %s\n"
        "ready = rfb 127.0.0.1:%d %s\n"
        "ready_timeout_ms = 3000\n" % (display, port, security, extra_args, port, ready_size)
    )


def service(sb, name):
    return [s for s in sb.state()["services"] if s["name"] == name][0]


def wait_reason(sb, name, words, timeout=20.0):
    """Waits until the service's reason holds words; returns it."""

    def check():
        s = service(sb, name)
        return s["reason"] if words in s["reason"] else None

    return wait_for(check, timeout, "%s's reason to say %r" % (name, words))


def readyz(sb):
    return http_json(sb.port, "/readyz")


@case("rfb: Xvnc with security None is ready after a full handshake of the right size")
def rfb_ready():
    port, display = free_port(), free_display()
    with Sandbox(extra=xvnc_service(port, display)) as sb:
        sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "vnc", 20)
        status, body = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(readyz(sb)), 10, "/readyz 200")
        expect(body["checks"]["vnc"]["ok"], "the vnc check: %r" % body)


@case("rfb: a framebuffer of another size keeps the service starting, with the sizes in the reason")
def rfb_wrong_size():
    port, display = free_port(), free_display()
    with Sandbox(extra=xvnc_service(port, display, ready_size="1024x768"), wait="socket") as sb:
        reason = wait_reason(sb, "vnc", "1280x800")
        expect_in("1024x768", reason, "the reason")
        expect(service(sb, "vnc")["state"] == "starting", "vnc must not be ready")
        status, body = readyz(sb)
        expect(status == 503, "/readyz must be 503, got %d" % status)
        expect_in("1280x800", body["checks"]["vnc"]["reason"], "/readyz's reason")


@case("rfb: a VNC server that wants a password is not ready, and says so")
def rfb_password():
    port, display = free_port(), free_display()
    d = scratch()
    try:
        pwfile = os.path.join(d, "passwd")
        with open(pwfile, "wb") as f:
            f.write(subprocess.run(["vncpasswd", "-f"], input=b"secret1\n", stdout=subprocess.PIPE, check=True).stdout)
        extra = xvnc_service(port, display, security="VncAuth", extra_args="-PasswordFile %s" % pwfile)
        with Sandbox(extra=extra, wait="socket") as sb:
            reason = wait_reason(sb, "vnc", "password")
            note("reason: %s" % reason)
            expect(service(sb, "vnc")["state"] == "starting", "vnc must not be ready")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("cdp: headless Chromium is ready once Browser.getVersion answers over its DevTools WebSocket")
def cdp_ready():
    port = free_port()
    d = scratch()
    try:
        extra = (
            "[service browser]\n"
            "command = chromium --headless --no-sandbox --disable-gpu --no-first-run "
            "--disable-background-networking --disable-component-update --disable-sync "
            "--remote-debugging-address=127.0.0.1 --remote-debugging-port=%d --user-data-dir=%s about:blank\n"
            "ready = cdp 127.0.0.1:%d\n"
            "ready_timeout_ms = 5000\n" % (port, d, port)
        )
        with Sandbox(extra=extra, wait="socket") as sb:
            sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "browser", 60)
            expect(service(sb, "browser")["state"] == "ready", "browser must be ready")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("cdp: a plain HTTP server on the port is not a browser")
def cdp_not_a_browser():
    port = free_port()
    d = scratch()
    try:
        extra = (
            "[service fake]\n"
            "command = /usr/bin/python3 -m http.server %d --bind 127.0.0.1 --directory %s\n"
            "ready = cdp 127.0.0.1:%d\n" % (port, d, port)
        )
        with Sandbox(extra=extra, wait="socket") as sb:
            reason = wait_reason(sb, "fake", "cdp")
            note("reason: %s" % reason)
            expect(service(sb, "fake")["state"] == "starting", "fake must not be ready")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("http: the body must hold the substring; when the file changes, the service turns ready")
def http_body():
    port = free_port()
    d = scratch()
    try:
        with open(os.path.join(d, "health"), "w") as f:
            f.write("warming up\n")
        extra = (
            "[service web]\n"
            "command = /usr/bin/python3 -m http.server %d --bind 127.0.0.1 --directory %s\n"
            "ready = http http://127.0.0.1:%d/health 200 all-good\n" % (port, d, port)
        )
        with Sandbox(extra=extra, wait="socket") as sb:
            reason = wait_reason(sb, "web", "all-good")
            note("reason: %s" % reason)
            with open(os.path.join(d, "health"), "w") as f:
                f.write("all-good\n")
            sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "web", 10)
    finally:
        shutil.rmtree(d, ignore_errors=True)



# ---------------------------------------------------------------------
# berth-probe run directly, against servers played here


class Background:
    """An asyncio loop in a thread of its own, for the servers below; the
    test's thread only starts, tweaks and stops them."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coro, timeout=10):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class BackgroundServer:
    """A server (self.server, made by the subclass) on a loop of its own
    (self.bg), stopped with it at the end of a with block."""

    def close(self):
        async def stop():
            self.server.close()
            await self.server.wait_closed()

        try:
            self.bg.call(stop())
        finally:
            self.bg.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FakeServer(BackgroundServer):
    """HTTP and WebSocket on one port (websockets' server: plain requests
    are answered from process_request), playing a browser's DevTools or
    berth-gateway. Every request is recorded as (path, Authorization or
    None, upgrade?). With token set, a request without "Authorization:
    Bearer TOKEN" gets 401, as the gateway answers."""

    def __init__(self, token=None):
        self.token = token
        self.port = free_port()
        self.seen = []
        self.pages = {}  # path -> (status, content type, body)
        self.sockets = {}  # path -> async handler(ws)
        self.bg = Background()
        self.server = self.bg.call(self._serve())

    async def _serve(self):
        return await websockets.serve(
            self._handler,
            "127.0.0.1",
            self.port,
            process_request=self._process_request,
            compression=None,
            ping_interval=None,
        )

    async def _process_request(self, path, headers):
        auth = headers.get("Authorization")
        self.seen.append((path, auth, "upgrade" in headers.get("Connection", "").lower()))
        if self.token is not None and auth != "Bearer " + self.token:
            return HTTPStatus.UNAUTHORIZED, [], b"unauthorized\n"
        if path in self.pages:
            status, ctype, body = self.pages[path]
            return HTTPStatus(status), [("Content-Type", ctype)], body
        if path in self.sockets:
            return None
        return HTTPStatus.NOT_FOUND, [], b"not found\n"

    async def _handler(self, ws, path):
        await self.sockets[path](ws)


async def answer_get_version(ws):
    """Chromium's side of Browser.getVersion, then wait for the close."""
    req = json.loads(await ws.recv())
    await ws.send(json.dumps({"id": req["id"], "result": {"product": "FakeChrome/1", "protocolVersion": "1.3"}}))
    await ws.wait_closed()


def fake_browser(srv, ws_authority=None):
    """srv plays Chromium's DevTools: /json/version names a WebSocket on
    ws_authority (default: srv's own address, as Chromium does)."""
    authority = ws_authority or "127.0.0.1:%d" % srv.port
    doc = {"Browser": "FakeChrome/1", "webSocketDebuggerUrl": "ws://%s/devtools/browser/fake" % authority}
    srv.pages["/json/version"] = (200, "application/json", json.dumps(doc).encode())
    srv.sockets["/devtools/browser/fake"] = answer_get_version
    srv.sockets["/v1/cdp"] = answer_get_version


class FakeNovnc:
    """What berth-gateway serves under /novnc/: noVNC's page and the relay
    WebSocket. mode says what the relay does: "banner" sends banner (a list
    of binary messages), "silent" sends nothing, "close" closes with 1011
    (what websockify does when the VNC server is dead), "relay" carries
    bytes to and from a real VNC server on vnc_port."""

    def __init__(self, srv):
        self.srv = srv
        self.mode = "banner"
        self.banner = [b"RFB 003.008\n"]
        self.vnc_port = None
        self.open = []  # the relay WebSockets not closed yet
        srv.pages["/novnc/vnc.html"] = (200, "text/html", b"<!DOCTYPE html>\n<title>noVNC</title>\n")
        srv.sockets["/novnc/websockify"] = self._relay

    def hang_up(self):
        """Closes every relay WebSocket still open, from the relay's side."""

        async def close_all():
            for ws in list(self.open):
                await ws.close(1011, "the VNC server went away")

        self.srv.bg.call(close_all())

    async def _relay(self, ws):
        self.open.append(ws)
        try:
            await self._serve(ws)
        finally:
            self.open.remove(ws)

    async def _serve(self, ws):
        if self.mode == "close":
            await ws.close(1011, "the VNC server is gone")
            return
        if self.mode == "banner":
            for part in self.banner:
                await ws.send(part)
        if self.mode == "relay":
            await self._pump(ws)
            return
        await ws.wait_closed()

    async def _pump(self, ws):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.vnc_port)

        async def down():
            while data := await reader.read(65536):
                await ws.send(data)

        async def up():
            async for data in ws:
                writer.write(data)

        tasks = [asyncio.ensure_future(down()), asyncio.ensure_future(up())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in tasks:
            t.cancel()
        writer.close()


class FakeVnc(BackgroundServer):
    """An RFB 3.8 server with security None and a 1280x800 screen, that
    records what the client sends after ClientInit. update says whether
    it answers the client's request: first a bell, a cut text and colour
    map entries (which the probe must pass over), then an update with a
    rectangle elsewhere and one at 0,0."""

    def __init__(self, update):
        self.update = update
        self.after_init = b""
        self.bg = Background()
        self.server = self.bg.call(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]

    async def _client(self, reader, writer):
        try:
            writer.write(b"RFB 003.008\n")
            await reader.readexactly(12)
            writer.write(bytes([1, 1]))
            await reader.readexactly(1)
            writer.write(struct.pack(">I", 0))
            await reader.readexactly(1)
            pixel_format = bytes([32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0])
            writer.write(struct.pack(">HH", 1280, 800) + pixel_format + struct.pack(">I", 4) + b"fake")
            self.after_init = await reader.readexactly(18)
            if self.update:
                text = b"clipboard " * 1000
                writer.write(b"\x02" + b"\x03\x00\x00\x00" + struct.pack(">I", len(text)) + text)
                writer.write(b"\x01\x00" + struct.pack(">HH", 0, 3) + bytes(18))
                rect = struct.pack(">HHHHi", 100, 100, 64, 64, 0) + bytes(64 * 64 * 4)
                rect += struct.pack(">HHHHi", 0, 0, 1, 1, 0) + bytes(4)
                writer.write(b"\x00\x00" + struct.pack(">H", 2) + rect)
            await reader.read()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


def token_file(d, content=TOKEN + " \n", name="token"):
    """A token file; by default the test's token with trailing whitespace,
    which the probe strips."""
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(content)
    return path


def probe_once(args, token=None, timeout_ms=2000):
    """berth-probe --once: (exit status, its line). The token never shows
    in what it prints, and nothing goes to stderr."""
    argv = [PROBE] + (["--token-file", token] if token else []) + ["--timeout", str(timeout_ms), "--once"] + args
    status, out, err = run_program(argv, timeout=timeout_ms / 1000.0 + 10)
    note("%s -> %d %r %r" % (" ".join(argv[1:]), status, out, err))
    expect(TOKEN not in out and TOKEN not in err, "the token was printed: %r %r" % (out, err))
    expect(err == "", "berth-probe wrote to stderr (a sanitizer?): %r" % err)
    return status, out.strip()


def expect_unready(result, *words):
    status, line = result
    expect(status == 1 and line.startswith("unready "), "want unready, got %r (status %d)" % (line, status))
    for w in words:
        expect_in(w, line, "the reason")
    return line


def expect_ready(result):
    expect_eq(result, (0, "ready"), "the probe")


@case("rfb: after ServerInit the probe asks for the pixel at 0,0 and waits for the update")
def rfb_update_required():
    with FakeVnc(update=False) as vnc:
        expect_unready(probe_once(["rfb", "127.0.0.1:%d" % vnc.port, "1280x800"], timeout_ms=700),
                       "rfb: no framebuffer update within 700 ms")
        want = bytes([2, 0, 0, 1, 0, 0, 0, 0]) + bytes([3, 0, 0, 0, 0, 0, 0, 1, 0, 1])
        expect_eq(vnc.after_init, want, "SetEncodings [Raw] and a FramebufferUpdateRequest for 1x1 at 0,0")
    with FakeVnc(update=True) as vnc:
        expect_ready(probe_once(["rfb", "127.0.0.1:%d" % vnc.port, "1280x800"]))


@case("rfb: a real Xvnc, run here, sends the update the probe asks for")
def rfb_xvnc_direct():
    port, display = free_port(), free_display()
    Spawned(["Xvnc", ":%d" % display, "-geometry", "1280x800", "-depth", "24", "-rfbport", str(port),
             "-SecurityTypes", "None", "-nolisten", "tcp", "-localhost"])
    wait_for(lambda: probe_once(["rfb", "127.0.0.1:%d" % port, "1280x800"])[0] == 0, 20, "Xvnc ready")


@case("cdp auth: the bearer token goes on /json/version and on the WebSocket upgrade")
def cdp_auth():
    d = scratch()
    try:
        tf = token_file(d)
        with FakeServer(token=TOKEN) as srv:
            fake_browser(srv)
            addr = "127.0.0.1:%d" % srv.port
            expect_ready(probe_once(["cdp", addr, "auth"], token=tf))
            expect_eq(srv.seen, [("/json/version", "Bearer " + TOKEN, False),
                                 ("/devtools/browser/fake", "Bearer " + TOKEN, True)], "what the server saw")
            del srv.seen[:]
            expect_unready(probe_once(["cdp", addr], token=tf), "cdp: /json/version status 401")
            expect_eq(srv.seen, [("/json/version", None, False)], "without auth, no token is sent")
            wrong = token_file(d, "another-token\n", "wrong")
            expect_unready(probe_once(["cdp", addr, "auth"], token=wrong), "status 401")
            expect_unready(probe_once(["cdp", addr, "auth"], token=os.path.join(d, "missing")),
                           "cdp: token file", "missing")
        status, out, err = run_program([PROBE, "--once", "cdp", "127.0.0.1:1", "auth"])
        expect(status == 2 and "--token-file" in err, "auth without --token-file: %d %r" % (status, err))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("cdp: a webSocketDebuggerUrl on another HOST:PORT than the one dialed is not ready, and the reason names both")
def cdp_wrong_authority():
    other = free_port()
    with FakeServer() as srv:
        fake_browser(srv, ws_authority="127.0.0.1:%d" % other)
        line = expect_unready(probe_once(["cdp", "127.0.0.1:%d" % srv.port]),
                              "127.0.0.1:%d" % other, "127.0.0.1:%d" % srv.port)
        note(line)
        expect_eq([p for p, _, _ in srv.seen], ["/json/version"], "no WebSocket to the wrong address")
        fake_browser(srv, ws_authority="localhost:%d" % srv.port)
        expect_unready(probe_once(["cdp", "127.0.0.1:%d" % srv.port]), "localhost:%d" % srv.port)
        expect_ready(probe_once(["cdp", "localhost:%d" % srv.port]))


@case("cdp-ws: Browser.getVersion over a WebSocket URL, with the bearer token")
def cdp_ws():
    d = scratch()
    try:
        tf = token_file(d)
        with FakeServer(token=TOKEN) as srv:
            fake_browser(srv)
            url = "ws://127.0.0.1:%d/v1/cdp" % srv.port
            expect_ready(probe_once(["cdp-ws", url], token=tf))
            expect_eq(srv.seen, [("/v1/cdp", "Bearer " + TOKEN, True)], "what the server saw")
            expect_unready(probe_once(["cdp-ws", url], token=token_file(d, "nope", "wrong")),
                           "cdp-ws: the WebSocket upgrade got status 401")
            expect_unready(probe_once(["cdp-ws", "ws://127.0.0.1:%d/v1/other" % srv.port], token=tf), "status 404")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("novnc: the page and a banner through the relay make it ready; each failing step is named")
def novnc_steps():
    d = scratch()
    try:
        tf = token_file(d)
        with FakeServer(token=TOKEN) as srv:
            gw = FakeNovnc(srv)
            url = "http://127.0.0.1:%d/novnc/" % srv.port
            expect_ready(probe_once(["novnc", url], token=tf))
            expect_eq(srv.seen, [("/novnc/vnc.html", "Bearer " + TOKEN, False),
                                 ("/novnc/websockify", "Bearer " + TOKEN, True)], "what the server saw")
            expect_unready(probe_once(["novnc", url], token=token_file(d, "nope", "wrong")),
                           "novnc: vnc.html: http status 401")
            expect_unready(probe_once(["novnc", "http://127.0.0.1:%d/elsewhere/" % srv.port], token=tf),
                           "novnc: vnc.html: http status 404")
            srv.pages["/novnc/vnc.html"] = (200, "text/html", b"<title>some other page</title>")
            expect_unready(probe_once(["novnc", url], token=tf), "novnc: vnc.html", "noVNC")
            FakeNovnc(srv)
            del srv.sockets["/novnc/websockify"]
            expect_unready(probe_once(["novnc", url], token=tf),
                           "novnc: websockify: the WebSocket upgrade got status 404")
            gw = FakeNovnc(srv)
            gw.banner = [b"RFB 0", b"03.00", b"3\n"]
            expect_ready(probe_once(["novnc", url], token=tf))
            gw.banner = [b"HTTP/1.1 400 Bad Request\r\n"]
            expect_unready(probe_once(["novnc", url], token=tf), "novnc: websockify: the banner is \"HTTP/1.1 400\"")
            gw.banner = ["RFB 003.008\n"]
            expect_unready(probe_once(["novnc", url], token=tf), "websockify: a text message")
            gw.mode = "silent"
            expect_unready(probe_once(["novnc", url], token=tf, timeout_ms=700),
                           "novnc: websockify: no RFB banner within 700 ms")
            gw.mode = "close"
            expect_unready(probe_once(["novnc", url], token=tf), "novnc: websockify: the server closed the WebSocket (1011)")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("novnc: a relay to a real Xvnc; the token is read once, at start")
def novnc_relay_xvnc():
    port, display = free_port(), free_display()
    d = scratch()
    try:
        tf = token_file(d)
        Spawned(["Xvnc", ":%d" % display, "-geometry", "1280x800", "-depth", "24", "-rfbport", str(port),
                 "-SecurityTypes", "None", "-nolisten", "tcp", "-localhost"])
        wait_for(lambda: probe_once(["tcp", "127.0.0.1:%d" % port])[0] == 0, 20, "Xvnc listening")
        with FakeServer(token=TOKEN) as srv:
            gw = FakeNovnc(srv)
            gw.mode, gw.vnc_port = "relay", port
            p = Spawned([PROBE, "--token-file", tf, "--timeout", "2000", "--interval", "100",
                         "novnc", "http://127.0.0.1:%d/novnc/" % srv.port])
            lines = [p.line()]
            expect_eq(lines[-1], "ready", "the first line")
            os.unlink(tf)
            gw.mode = "close"
            lines.append(p.line())
            expect_in("(1011)", lines[-1], "once the relay fails")
            gw.mode = "relay"
            lines.append(p.line())
            expect_eq(lines[-1], "ready", "with the token file gone, the token read at start")
            p.stop()
            expect(not any(TOKEN in x for x in lines) and TOKEN not in p.stderr(), "the token was printed")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("watch: ready, the probe holds one session until the next check, and checks again the moment it is hung up")
def watch_session():
    d = scratch()
    try:
        tf = token_file(d)
        with FakeServer(token=TOKEN) as srv:
            gw = FakeNovnc(srv)
            fake_browser(srv)
            novnc = Spawned([PROBE, "--token-file", tf, "--timeout", "2000", "--interval", "30000",
                             "novnc", "http://127.0.0.1:%d/novnc/" % srv.port])
            cdp = Spawned([PROBE, "--token-file", tf, "--timeout", "2000", "--interval", "30000",
                           "cdp-ws", "ws://127.0.0.1:%d/v1/cdp" % srv.port])
            expect_eq(novnc.line(), "ready", "novnc's first line")
            expect_eq(cdp.line(), "ready", "cdp-ws's first line")
            # Between checks: the one session stays open, nothing new is
            # opened (a session the probe closed itself would be seen as
            # hung up, and checked again and again).
            time.sleep(1.5)
            upgrades = [x[0] for x in srv.seen if x[2]]
            counts = {p: upgrades.count(p) for p in sorted(set(upgrades))}
            expect_eq(counts, {"/novnc/websockify": 1, "/v1/cdp": 1}, "upgrades per path in 1.5 s")
            expect_eq(len(gw.open), 1, "relay sessions the novnc probe holds open")
            # Hung up, with the relay failing from then on: unready at
            # once, not after the 30 s interval.
            gw.mode = "close"
            t0 = time.monotonic()
            gw.hang_up()
            line = novnc.line(timeout=5)
            expect_in("(1011)", line, "novnc once its session was hung up")
            expect(time.monotonic() - t0 < 5, "seen only after %.1f s" % (time.monotonic() - t0))
            novnc.stop()
            cdp.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("novnc: berthd hands the probe a credential of its own, good at the relay doors only")
def novnc_berthd_credential():
    with FakeServer() as srv:
        FakeNovnc(srv)
        extra = (
            "[service desk]\n"
            "command = sleep 1000\n"
            "ready = novnc http://127.0.0.1:%d/novnc/\n" % srv.port
        )
        with Sandbox(extra=extra, token=TOKEN + "\n", wait="socket") as sb:
            sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "desk", 20)
            bearers = {auth for path, auth, _ in srv.seen if path == "/novnc/websockify"}
            expect_eq(len(bearers), 1, "one credential at the relay: %r" % bearers)
            cred = bearers.pop()[len("Bearer ") :]
            expect(cred != TOKEN, "the probe was handed the master token")
            expect_eq(len(cred), 64, "a fresh 32-byte credential in hex")
            c = sb.unix()
            for door in ("novnc", "cdp", "cdp-relay"):
                c.call("gateway.check", {"door": door, "peer": "test", "credential": cred})
            err = c.error_of("gateway.check", {"door": "v1", "peer": "test", "credential": cred})
            expect_eq(err, "unauthorized", "the probe credential at /v1")
            c.call("gateway.check", {"door": "v1", "peer": "test", "credential": TOKEN})


run()
