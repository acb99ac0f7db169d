"""The CDP WebSocket relay: /v1/cdp (the browser target named by
Chromium's /json/version, asked at each connect) and /v1/cdp/devtools/...
carried to Chromium's DevTools. Against headless Chromium on a fixed
port: Browser.getVersion, a page target, multi-megabyte messages both
ways, Chromium killed and started again with a new browser target.
Against a scripted DevTools server: what the relay sends upstream (Host,
no Origin, no token), every way /json/version can be wrong, a fetch cut
short by either end, fragments kept whole and in order, close codes both
ways, and flow control both ways."""

import asyncio
import http
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    PlainWs,
    Sandbox,
    Timeout,
    case,
    expect,
    expect_eq,
    expect_in,
    free_port,
    http_get,
    minimal_config,
    note,
    raw_ws_socket,
    run,
    track_closer,
    wait_for,
    ws_upgrade,
)


def desktop_config(**gateway):
    """The minimal config with more keys in its [gateway] section."""
    lines = "".join("%s = %s\n" % kv for kv in gateway.items())
    return minimal_config().replace("[gateway]\n", "[gateway]\n" + lines, 1)


class Chromium:
    """Headless Chromium with DevTools on a fixed port, as the desktop
    runs it, in a process group of its own that is killed at the end of
    the case. version is its /json/version."""

    def __init__(self, port=None):
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="berth-it-chromium-")
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [
                "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=%d" % self.port,
                "--user-data-dir=" + self.dir, "about:blank",
            ],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True,
        )
        track_closer(self.close)

        def version():
            expect(self.proc.poll() is None, "chromium exited")
            try:
                status, _, body = http_get(self.port, "/json/version", timeout=2)
            except OSError:
                return None
            return json.loads(body) if status == 200 else None

        self.version = wait_for(version, 30, "chromium's /json/version", 0.05)

    def kill(self):
        # Once reaped, its group id may be some other program's.
        if self.proc.returncode is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def close(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def browser_path(self):
        return urllib.parse.urlsplit(self.version["webSocketDebuggerUrl"]).path

    def sandbox(self):
        return Sandbox(config=desktop_config(cdp="127.0.0.1:%d" % self.port))


def url(sb, path=""):
    return "ws://127.0.0.1:%d/v1/cdp%s" % (sb.port, path)


def cdp_sandbox(port):
    """A gateway whose DevTools are at 127.0.0.1:port."""
    return Sandbox(config=desktop_config(cdp="127.0.0.1:%d" % port))


def version_json(port, path):
    """A /json/version answer as Chromium writes it, naming path."""
    return json.dumps({
        "Browser": "HeadlessChrome/120.0.6099.224", "Protocol-Version": "1.3", "User-Agent": "Mozilla/5.0",
        "V8-Version": "12.0.267.17", "WebKit-Version": "537.36 (@1)",
        "webSocketDebuggerUrl": "ws://127.0.0.1:%d%s" % (port, path),
    }, indent=3)


@case("/v1/cdp: Browser.getVersion through the relay with the bearer token")
def browser_version():
    chrome = Chromium()
    with chrome.sandbox() as sb:
        ws = PlainWs(url(sb), token=sb.token)
        v = ws.call("Browser.getVersion")
        note("product: %s" % v.get("product"))
        expect_in("Chrome/", v.get("product", ""), "Browser.getVersion's product")
        expect_eq(v.get("protocolVersion"), "1.3", "protocolVersion")
        # The browser target: it knows the targets.
        targets = ws.call("Target.getTargets")["targetInfos"]
        expect(any(t["type"] == "page" for t in targets), "no page among %r" % targets)


@case("/v1/cdp: refused before the upgrade without the bearer token, and on paths that name no target")
def refused():
    with cdp_sandbox(free_port()) as sb:
        token = sb.token
        blank = {"Sec-WebSocket-Protocol": ""}
        for what, kw, want in (
            ("no token", {"headers": blank}, 401),
            ("a wrong token", {"headers": blank, "token": "f" * 64}, 401),
            ("the cookie alone", {"headers": dict(blank, Cookie="berth_token=" + token)}, 401),
            ("subprotocol berth.v1", {"token": token}, 400),
        ):
            status, headers = ws_upgrade(sb.port, path="/v1/cdp", **kw)
            expect_eq(status, want, "the upgrade with %s" % what)
            expect("sec-websocket-accept" not in headers, "%s: a refusal with Sec-WebSocket-Accept" % what)
        for path in ("/v1/cdp/", "/v1/cdp/x", "/v1/cdp/devtools/", "/v1/cdp/devtools/page/a%20b",
                     "/v1/cdpx", "/v1/cdp/devtools/page/" + "a" * 300):
            status, _ = ws_upgrade(sb.port, path=path, token=token, headers=blank)
            expect_eq(status, 404, "the upgrade on %s" % path)
        try:
            PlainWs(url(sb))
        except Exception as e:
            expect_eq(getattr(e, "status_code", None), 401, "the library's upgrade without a token: %r" % e)
        else:
            raise AssertionError("an upgrade without the token succeeded")
        ev = sb.wait_event(lambda e: e["kind"] == "auth.failed")
        expect_eq(ev["data"].get("reason"), "missing", "the refusal's reason")
        expect_eq(http_get(sb.port, "/v1/cdp")[0], 400, "a plain GET of /v1/cdp")
    with Sandbox() as sb:
        status, _ = ws_upgrade(sb.port, path="/v1/cdp", token=sb.token, headers={"Sec-WebSocket-Protocol": ""})
        expect_eq(status, 404, "/v1/cdp with no DevTools configured")


@case("/v1/cdp/devtools/page/ID: a page target through the relay")
def page_target():
    chrome = Chromium()
    with chrome.sandbox() as sb:
        browser = PlainWs(url(sb), token=sb.token)
        pages = [t for t in browser.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
        expect(pages, "no page target")
        page = PlainWs(url(sb, "/devtools/page/" + pages[0]["targetId"]), token=sb.token)
        r = page.call("Runtime.evaluate", {"expression": "6 * 7", "returnByValue": True})
        expect_eq(r["result"].get("value"), 42, "6 * 7 in the page")
        r = page.call("Runtime.evaluate", {"expression": "location.href", "returnByValue": True})
        expect_eq(r["result"].get("value"), "about:blank", "the page's location")
        # A target Chromium does not know: the upgrade succeeds here,
        # and the close says that Chromium would not have it.
        code, reason = PlainWs(url(sb, "/devtools/page/NOSUCHTARGET"), token=sb.token).closed()
        note("an unknown target: closed %s %r" % (code, reason))
        expect_eq(code, 1011, "an unknown target's close code (reason %r)" % reason)
        expect_in("no connection to Chromium's DevTools", reason, "the reason")
        page.call("Browser.getVersion")


@case("/v1/cdp: a 5 MB answer arrives intact, and a 3 MB command goes through whole", 120)
def large_messages():
    n = 750000
    want = ",".join(map(str, range(n)))
    chrome = Chromium()
    with chrome.sandbox() as sb:
        browser = PlainWs(url(sb), token=sb.token)
        target = [t for t in browser.call("Target.getTargets")["targetInfos"] if t["type"] == "page"][0]
        page = PlainWs(url(sb, "/devtools/page/" + target["targetId"]), token=sb.token)
        r = page.call("Runtime.evaluate", {
            "expression": "Array.from({length: %d}, (_, i) => i).join(',')" % n, "returnByValue": True})
        got = r["result"].get("value", "")
        note("the answer's string: %d bytes" % len(got))
        expect(len(want) > 5_000_000, "the test's string is too short")
        expect(got == want, "the %d-byte string came back different (%d bytes)" % (len(want), len(got)))
        # The other way: a 3 MB string literal, whose length and hash
        # the page computes.
        payload = want[:3_000_000]
        h = 0
        for ch in payload:
            h = (h * 31 + ord(ch)) & 0xFFFFFFFF
        h = h - (1 << 32) if h >= 1 << 31 else h
        expr = "(s => { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; " \
               "return [s.length, h]; })('%s')" % payload
        r = page.call("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        expect_eq(r["result"].get("value"), [len(payload), h], "the page's length and hash of the command's string")


@case("/v1/cdp: Chromium killed: the client is closed with 1011, a new one is told why; a new Chromium is found", 150)
def chromium_killed():
    chrome = Chromium()
    with chrome.sandbox() as sb:
        ws = PlainWs(url(sb), token=sb.token)
        ws.call("Browser.getVersion")
        chrome.kill()
        code, reason = ws.closed()
        note("closed %s %r" % (code, reason))
        expect_eq(code, 1011, "the close code (reason %r)" % reason)
        expect_in("Chromium", reason, "the reason")
        ws = PlainWs(url(sb), token=sb.token)
        code, reason = ws.closed()
        note("a new connection: closed %s %r" % (code, reason))
        expect_eq(code, 1011, "a new connection's close code (reason %r)" % reason)
        expect_in("cannot read Chromium's /json/version at 127.0.0.1:%d: " % chrome.port, reason, "the reason")
        # Started again on the same port, Chromium names a new browser
        # target, and refuses the old one: the relay asks anew.
        again = Chromium(chrome.port)
        note("browser targets: %s, then %s" % (chrome.browser_path(), again.browser_path()))
        expect(again.browser_path() != chrome.browser_path(), "the new Chromium has the old browser target")
        try:
            PlainWs("ws://127.0.0.1:%d%s" % (again.port, chrome.browser_path()))
        except Exception as e:
            note("the old target, asked of the new Chromium: %r" % e)
        else:
            raise AssertionError("the new Chromium took the old browser target")
        ws = PlainWs(url(sb), token=sb.token)
        expect_in("Chrome/", ws.call("Browser.getVersion").get("product", ""), "Browser.getVersion's product")
        expect_in("the browser target is %s" % again.browser_path(), sb.log(), "the gateway's log")


class FakeDevTools:
    """A WebSocket server in a thread that the relay dials instead of
    Chromium. It answers GET /json/version with what version() returns
    (status, body: by default 200 and a browser target at browser),
    recording the request's headers in versions. It records each
    WebSocket connection (path, headers) and how it was closed, echoes
    messages, and obeys a few: "close CODE REASON", "vanish" (drop the
    TCP connection), "fragments" (a text message sent in three
    fragments), "flood N" (N binary messages of 1 MiB, counted as each
    is written), "stall" (read nothing until release())."""

    def __init__(self, browser="/devtools/browser/x"):
        self.loop = asyncio.new_event_loop()
        self.events = queue.Queue()
        self.versions = queue.Queue()
        self.version = lambda: (200, version_json(self.port, browser))
        self.flooded = 0
        self.received = []
        self.ready = threading.Event()
        self.stopped = False
        threading.Thread(target=self._main, daemon=True).start()
        expect(self.ready.wait(10), "the fake DevTools server did not start")
        track_closer(self.close)

    def _main(self):
        asyncio.set_event_loop(self.loop)
        self.released = asyncio.Event()
        self.server = self.loop.run_until_complete(websockets.serve(
            self._handler, "127.0.0.1", 0, max_size=None, max_queue=1, read_limit=65536, compression=None,
            ping_interval=None, process_request=self._http))
        self.port = self.server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    def _http(self, path, headers):
        if path != "/json/version":
            return None
        self.versions.put(dict(headers))
        status, body = self.version()
        return http.HTTPStatus(status), [("Content-Type", "application/json; charset=UTF-8")], body.encode()

    async def _handler(self, ws, path=None):
        self.events.put(("open", ws.path, dict(ws.request_headers)))
        try:
            async for msg in ws:
                if msg == "stall":
                    await self.released.wait()
                elif isinstance(msg, str) and msg.startswith("close "):
                    _, code, reason = msg.split(" ", 2)
                    await ws.close(int(code), reason)
                elif msg == "vanish":
                    ws.transport.abort()
                elif msg == "fragments":
                    await ws.send(iter(["frag", "ments ", "in order"]))
                elif isinstance(msg, str) and msg.startswith("flood "):
                    for i in range(int(msg.split()[1])):
                        await ws.send(FakeDevTools.message(i))
                        self.flooded = i + 1
                elif isinstance(msg, bytes) and len(msg) >= 1 << 20:
                    self.received.append(msg)
                else:
                    await ws.send(msg)
        except websockets.ConnectionClosed:
            pass
        self.events.put(("closed", ws.close_code, ws.close_reason))

    @staticmethod
    def message(i):
        """The i-th 1 MiB message of a flood: its number, over and over."""
        return i.to_bytes(4, "big") * (1 << 18)

    def release(self):
        self.loop.call_soon_threadsafe(self.released.set)

    def event(self, kind, timeout=10.0):
        """The next recorded event, which must be of this kind."""
        try:
            ev = self.events.get(timeout=timeout)
        except queue.Empty:
            raise Timeout("no %s event from the fake DevTools server within %.1f s" % (kind, timeout))
        expect_eq(ev[0], kind, "the fake server's next event (%r)" % (ev,))
        return ev

    def close(self):
        if self.stopped:
            return
        self.stopped = True

        async def stop():
            self.server.close()
            await self.server.wait_closed()

        try:
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)


def lower(headers):
    return {k.lower(): v for k, v in headers.items()}


@case("the relay upstream: Host is the DevTools address, no Origin, no token, on /json/version and the upgrade")
def upstream_request():
    fake = FakeDevTools("/devtools/browser/first")
    with cdp_sandbox(fake.port) as sb:
        ws = PlainWs(url(sb), token=sb.token, headers={"Origin": "http://evil.example", "Cookie": "a=b"})
        version = lower(fake.versions.get(timeout=5))
        note("/json/version's headers: %r" % version)
        _, path, headers = fake.event("open")
        headers = lower(headers)
        note("the upgrade's headers: %r" % headers)
        expect_eq(path, "/devtools/browser/first", "the path upstream")
        for what, hdrs in (("/json/version", version), ("the upgrade", headers)):
            expect_eq(hdrs.get("host"), "127.0.0.1:%d" % fake.port, "the Host of %s" % what)
            for h in ("origin", "authorization", "cookie", "sec-websocket-protocol"):
                expect(h not in hdrs, "%s went upstream with %s: %r" % (h, what, hdrs.get(h)))
        ws.send("hello")
        expect_eq(ws.recv(), "hello", "a text message, echoed")
        ws.send(b"\x00\x01\xff")
        expect_eq(ws.recv(), b"\x00\x01\xff", "a binary message, echoed")
        ws.close()
        fake.event("closed")
        # Chromium started again names another target: it is asked again.
        fake.version = lambda: (200, version_json(fake.port, "/devtools/browser/second"))
        PlainWs(url(sb), token=sb.token)
        expect_eq(fake.event("open")[1], "/devtools/browser/second", "the path after /json/version changed")
        PlainWs(url(sb, "/devtools/page/ABC-1.2_3"), token=sb.token)
        expect_eq(fake.event("open")[1], "/devtools/page/ABC-1.2_3", "a page path, verbatim")
        expect(fake.versions.qsize() == 1, "/json/version was asked for a page target")
        # What the client sends while /json/version is slow waits for
        # the upgrade, in order.
        fake.version = lambda: (time.sleep(0.5), (200, version_json(fake.port, "/devtools/browser/slow")))[1]
        ws = PlainWs(url(sb), token=sb.token)
        ws.send("sent early")
        ws.send(b"then this")
        expect_eq(fake.event("open")[1], "/devtools/browser/slow", "the path from the slow /json/version")
        expect_eq(ws.recv(), "sent early", "the first message sent during the fetch, echoed")
        expect_eq(ws.recv(), b"then this", "the second message sent during the fetch, echoed")


@case("the relay: fragments arrive as one message, in order, both ways; close codes go through both ways")
def fragments_and_closes():
    fake = FakeDevTools()
    with cdp_sandbox(fake.port) as sb:
        ws = PlainWs(url(sb), token=sb.token)
        fake.event("open")
        ws.send("fragments")
        expect_eq(ws.recv(), "fragments in order", "a message the server sent in three fragments")
        ws._run(ws.ws.send(iter([b"abc", b"def", b"ghi"])), 10, "a fragmented send")
        expect_eq(ws.recv(), b"abcdefghi", "a message the client sent in three fragments, echoed")
        ws.close(4001, "client says bye")
        expect_eq(fake.event("closed")[1:], (4001, "client says bye"), "the close the server got")

        ws = PlainWs(url(sb), token=sb.token)
        fake.event("open")
        ws.send("close 4002 server says bye")
        expect_eq(ws.closed(), (4002, "server says bye"), "the close the client got")
        fake.event("closed")

        ws = PlainWs(url(sb), token=sb.token)
        fake.event("open")
        ws.send("vanish")
        code, reason = ws.closed()
        expect_eq(code, 1011, "the close after the server vanished (reason %r)" % reason)
        expect_in("lost", reason, "the reason")


@case("/v1/cdp: a /json/version that names no good browser target: the client is closed with 1011 and why")
def bad_versions():
    fake = FakeDevTools()
    good = "ws://127.0.0.1:%d/devtools/browser/x" % fake.port
    padding = "x" * 70000
    bad_path = "has a webSocketDebuggerUrl with a bad path"
    not_ws = "has a webSocketDebuggerUrl that is not ws://HOST/PATH"
    cases = (
        ("a 500", 500, "oops", "answered 500"),
        ("a redirect", 302, "", "answered 302"),
        ("no webSocketDebuggerUrl", 200, '{"Browser": "HeadlessChrome/120"}', "has no webSocketDebuggerUrl"),
        ("the key only inside strings and nested objects", 200,
         json.dumps({"Browser": '"webSocketDebuggerUrl": "%s"' % good,
                     "x": ["webSocketDebuggerUrl", {"webSocketDebuggerUrl": good}]}),
         "has no webSocketDebuggerUrl"),
        ("a body over 64 KiB", 200, json.dumps({"Browser": padding, "webSocketDebuggerUrl": good}),
         "is over 64 KiB"),
        ("a path with ..", 200, version_json(fake.port, "/devtools/../json/list"), bad_path),
        ("a path outside /devtools/", 200, version_json(fake.port, "/json/list"), bad_path),
        ("a path of 300 bytes", 200, version_json(fake.port, "/devtools/browser/" + "a" * 300), bad_path),
        ("an http URL", 200, json.dumps({"webSocketDebuggerUrl": "http://127.0.0.1:1/devtools/browser/x"}),
         not_ws),
        ("a URL without a path", 200, json.dumps({"webSocketDebuggerUrl": "ws://127.0.0.1:1"}),
         not_ws),
        ("a number", 200, json.dumps({"webSocketDebuggerUrl": 7}), not_ws),
        ("the key twice", 200, '{"webSocketDebuggerUrl": "%s", "webSocketDebuggerUrl": "%s"}' % (good, good),
         "has webSocketDebuggerUrl twice"),
        ("not JSON", 200, "<html>DevTools</html>", "is not a JSON object"),
        ("JSON cut short", 200, version_json(fake.port, "/devtools/browser/x")[:-1], "is not a JSON object"),
        ("an empty body", 200, "", "is not a JSON object"),
    )
    with cdp_sandbox(fake.port) as sb:
        for what, status, body, want in cases:
            fake.version = lambda status=status, body=body: (status, body)
            code, reason = PlainWs(url(sb), token=sb.token).closed()
            note("%s: closed %s %r" % (what, code, reason))
            expect_eq(code, 1011, "%s: the close code (reason %r)" % (what, reason))
            expect_eq(reason, "Chromium's /json/version at 127.0.0.1:%d %s" % (fake.port, want), what + ": the reason")
        # None of those dialed a WebSocket: the next event is this one's.
        fake.version = lambda: (200, version_json(fake.port, "/devtools/browser/good"))
        ws = PlainWs(url(sb), token=sb.token)
        expect_eq(fake.event("open")[1], "/devtools/browser/good", "the path once /json/version is good")
        ws.send("still here")
        expect_eq(ws.recv(), "still here", "a message through the relay after all that")
        expect_eq(http_get(sb.port, "/healthz")[0], 200, "/healthz after")


def accept_request(listener):
    """The next connection to listener, and the request head it sent."""
    listener.settimeout(5)
    conn, _ = listener.accept()
    conn.settimeout(5)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(4096)
        expect(chunk, "the connection closed after %r" % head)
        head += chunk
    return conn, head


def relay_freed(sb, before):
    """Waits for the gateway's log to say a relay was freed, past offset
    before."""
    wait_for(lambda: re.search(r"CDP client \S+ disconnected", sb.log()[before:]), 5, "the relay's end in the log")


@case("the relay: /json/version cut short by DevTools: the client is closed with 1011 and why")
def version_cut_short():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with cdp_sandbox(port) as sb:
            prefix = "cannot read Chromium's /json/version at 127.0.0.1:%d: " % port
            body = version_json(port, "/devtools/browser/x").encode()
            for what, answer in (
                ("nothing", b""),
                ("half a head", b"HTTP/1.1 200 OK\r\nContent-Len"),
                ("half the body", b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:40]),
            ):
                ws = PlainWs(url(sb), token=sb.token)
                conn, head = accept_request(listener)
                expect(head.startswith(b"GET /json/version HTTP/1.1\r\n"), "the request: %r" % head)
                conn.sendall(answer)
                conn.close()
                code, reason = ws.closed()
                note("%s, then the connection closed: %s %r" % (what, code, reason))
                expect_eq(code, 1011, "%s: the close code (reason %r)" % (what, reason))
                expect(reason.startswith(prefix), "%s: the reason %r" % (what, reason))
            expect_eq(http_get(sb.port, "/healthz")[0], 200, "/healthz after")


@case("the relay: a client that leaves while /json/version is asked: the fetch is dropped and the relay freed")
def leave_during_fetch():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with cdp_sandbox(port) as sb:
            for _ in range(2):
                before = len(sb.log())
                ws = PlainWs(url(sb), token=sb.token)
                conn, head = accept_request(listener)
                expect(head.startswith(b"GET /json/version HTTP/1.1\r\n"), "the request: %r" % head)
                ws.close(4005, "gone early")
                # At once: lws would time the fetch out itself after 5 s.
                conn.settimeout(2)
                expect_eq(conn.recv(4096), b"", "the fetch's connection after the client left")
                conn.close()
                relay_freed(sb, before)
            expect_eq(http_get(sb.port, "/healthz")[0], 200, "/healthz after")


@case("the relay: a client that leaves while DevTools has not answered the upgrade: the upstream goes too")
def leave_during_upgrade():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with cdp_sandbox(port) as sb:
            before = len(sb.log())
            ws = PlainWs(url(sb), token=sb.token)
            conn, _ = accept_request(listener)
            body = version_json(port, "/devtools/browser/x").encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            conn.close()
            conn, head = accept_request(listener)
            expect(head.startswith(b"GET /devtools/browser/x "), "the upgrade request upstream: %r" % head)
            ws.close(4005, "gone early")
            conn.settimeout(2)
            expect_eq(conn.recv(4096), b"", "the upstream connection after the client left")
            conn.close()
            # Both ends are gone, so the relay is freed and says so.
            relay_freed(sb, before)
            expect_eq(http_get(sb.port, "/healthz")[0], 200, "/healthz after")


FLOOD = 256  # messages of 1 MiB: far more than the buffers between
BOUND = 64


@case("the relay: flow control: a client that stops reading stops DevTools being read; every message arrives", 150)
def flow_to_client():
    fake = FakeDevTools()
    with cdp_sandbox(fake.port) as sb:
        ws = PlainWs(url(sb), token=sb.token, sock=raw_ws_socket(sb.port, rcvbuf=65536), max_queue=1)
        fake.event("open")
        ws.send("flood %d" % FLOOD)
        time.sleep(3)
        stalled = fake.flooded
        time.sleep(1)
        note("the server got %d messages out before the stall" % stalled)
        expect(stalled < BOUND, "the server sent %d MiB to a client that reads nothing" % stalled)
        expect(fake.flooded - stalled <= 1, "the server still sends: %d then %d" % (stalled, fake.flooded))
        for i in range(FLOOD):
            m = ws.recv(20)
            if m != FakeDevTools.message(i):
                raise AssertionError("message %d is wrong (%d bytes, starts %r)" % (i, len(m), m[:8]))


@case("the relay: flow control: DevTools that stops reading stops the client being read; every message arrives", 150)
def flow_to_devtools():
    fake = FakeDevTools()
    with cdp_sandbox(fake.port) as sb:
        ws = PlainWs(url(sb), token=sb.token)
        fake.event("open")
        ws.send("stall")
        sent = 0
        while sent < FLOOD:
            try:
                ws.send(FakeDevTools.message(sent), timeout=2)
            except Timeout:
                sent += 1  # it is in the library's buffer: it goes later
                break
            sent += 1
        note("the client got %d messages out before the stall" % sent)
        expect(sent < BOUND, "DevTools that reads nothing took %d MiB" % sent)
        fake.release()
        while sent < FLOOD:
            ws.send(FakeDevTools.message(sent), timeout=20)
            sent += 1

        def done():
            ws.pump(0.05)
            return len(fake.received) == FLOOD

        wait_for(done, 60, "the server to read all %d messages (at %d)" % (FLOOD, len(fake.received)))
        for i, m in enumerate(fake.received):
            if m != FakeDevTools.message(i):
                raise AssertionError("message %d is wrong (%d bytes, starts %r)" % (i, len(m), m[:8]))


run()
