"""The gateway's TCP relay to Chromium's DevTools (relay 1), configured
through berthd's [gateway] cdp and cdp_relay_listen: in front of a real
headless Chromium run as a berthd service, and in front of a stand-in
DevTools server that records what reaches it. What a client of
chromium.connectOverCDP does (GET /json/version/ with a bearer token,
then a WebSocket to the URL it names, with the same header) must work;
anything without the token, or not well-formed HTTP, must be refused
with a clear status before a byte reaches DevTools."""

import asyncio
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    TestFailure,
    Timeout,
    case,
    chromium_service,
    expect,
    expect_eq,
    expect_in,
    free_port,
    http_get,
    http_json,
    note,
    proc_argv,
    proc_children,
    run,
    wait_for,
)


def gateway_conf(cdp_port, relay_port):
    return "[gateway]\ncdp = 127.0.0.1:%d\ncdp_relay_listen = 127.0.0.1:%d\n" % (cdp_port, relay_port)


def wait_listening(port, timeout=10.0):
    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    wait_for(up, timeout, "the relay listening on port %d" % port)


def exchange(port, data, timeout=10.0, hold=None):
    """Sends data on a fresh connection and reads until the relay closes
    it. Returns everything read. A relay that keeps the connection open
    fails the case; one that resets it loses the answer, and fails too."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        s.sendall(data)
        if hold is not None:
            hold()
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                raise Timeout("the relay kept the connection open %.0f s after %r" % (timeout, out[:200]))
            if not chunk:
                return out
            out += chunk
    finally:
        s.close()


def parse(raw):
    """An HTTP response as (status, {lowercased header: value}, body)."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    expect(sep, "no whole response head in %r" % raw[:300])
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    expect(parts[0] == "HTTP/1.1" and len(parts) >= 2, "not a status line: %r" % lines[0])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return int(parts[1]), hdrs, body


def expect_error(raw, status, words):
    """raw is our error response: status, a JSON body whose message holds
    words, Content-Length right, Connection: close."""
    got, hdrs, body = parse(raw)
    expect_eq(got, status, "the status of %r" % raw[:200])
    expect_eq(hdrs.get("connection"), "close", "Connection of the %d" % status)
    expect_eq(int(hdrs.get("content-length", -1)), len(body), "Content-Length of the %d" % status)
    msg = json.loads(body)["message"]
    expect_in(words, msg, "the %d's message" % status)
    return msg


class FakeDevTools:
    """A stand-in for Chromium's DevTools HTTP server: counts connections,
    keeps every request head, and answers as Chromium does, naming itself
    by the Host it was sent, then keeps the connection open (keep-alive)
    so that only the relay can end it."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.heads = []
        self.lock = threading.Lock()
        self.conns = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                self.conns.append(c)
            threading.Thread(target=self._answer, args=(c,), daemon=True).start()

    def _answer(self, c):
        buf = b""
        c.settimeout(10)
        try:
            while b"\r\n\r\n" not in buf:
                chunk = c.recv(65536)
                if not chunk:
                    return
                buf += chunk
            head = buf.split(b"\r\n\r\n", 1)[0].decode("latin-1")
            with self.lock:
                self.heads.append(head)
            host = ""
            for line in head.split("\r\n")[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "host":
                    host = v.strip()
            body = json.dumps(
                {
                    "Browser": "Fake/1.0",
                    "webSocketDebuggerUrl": "ws://%s/devtools/browser/fake" % host,
                    "devtoolsFrontendUrl": "/devtools/inspector.html?ws=%s/devtools/page/1" % host,
                    "longerPort": "ws://%s0/x" % host,
                }
            ).encode()
            c.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            while c.recv(65536):
                pass
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.sock.close()
        with self.lock:
            for c in self.conns:
                try:
                    c.close()
                except OSError:
                    pass


def header_lines(head):
    """A request head's header lines as [(lowercased name, value)]."""
    out = []
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        out.append((k.strip().lower(), v.strip()))
    return out


@case("no valid token: 401 and not a byte reaches DevTools; with one, DevTools gets a rewritten head")
def auth_and_head():
    fake = FakeDevTools()
    q = free_port()
    try:
        with Sandbox(extra=gateway_conf(fake.port, q)) as sb:
            wait_listening(q)
            tok = sb.token
            refused = [
                {},
                {"Authorization": "Bearer wrong-" + tok},
                {"Authorization": "Bearer " + tok[:-1]},
                {"Authorization": "Basic " + tok},
                {"Cookie": "berth_token=nope; other=" + tok},
            ]
            for hdrs in refused:
                status, got, body = http_get(q, "/json/version/", hdrs)
                expect_eq(status, 401, "the status without a valid token (%r)" % hdrs)
                expect_eq(got.get("www-authenticate"), "Bearer", "WWW-Authenticate")
                expect_in("token", json.loads(body)["message"], "the 401's message")
            time.sleep(0.2)
            expect_eq(fake.accepted, 0, "connections DevTools got from refused clients")
            # Logged and journaled summed per peer and reason.
            wait_for(lambda: sum(e["data"].get("count", 0) for e in sb.events(1) if e["kind"] == "auth.failed")
                     == len(refused), 5, "auth.failed counts adding up to the refusals")
            logged = sb.log().count("refused a CDP relay request from 127.0.0.1:")
            expect_eq(logged, 3, "first log lines of refused connections (one per reason)")

            req = (
                "GET /json/version/?x=1 HTTP/1.1\r\n"
                "Host: relay.example:%d\r\n"
                "Authorization: Bearer %s\r\n"
                "Origin: http://evil.example\r\n"
                "Cookie: a=b; berth_token=%s\r\n"
                "Proxy-Authorization: Basic eA==\r\n"
                "Connection: keep-alive\r\n"
                "X-Custom: kept as it is\r\n\r\n" % (q, tok, tok)
            )
            # DevTools keeps its side open; the relay must end the
            # connection once the answer's Content-Length is through.
            status, hdrs, body = parse(exchange(q, req.encode()))
            expect_eq(status, 200, "the status with the token")
            expect_eq(hdrs.get("connection"), "close", "Connection of the answer")
            expect_eq(int(hdrs["content-length"]), len(body), "the rewritten Content-Length")
            j = json.loads(body)
            expect_eq(j["webSocketDebuggerUrl"], "ws://relay.example:%d/devtools/browser/fake" % q, "the debugger URL")
            expect_eq(
                j["devtoolsFrontendUrl"],
                "/devtools/inspector.html?ws=relay.example:%d/devtools/page/1" % q,
                "the frontend URL",
            )
            expect_eq(j["longerPort"], "ws://127.0.0.1:%d0/x" % fake.port, "an address with a longer port")

            expect_eq(fake.accepted, 1, "connections DevTools got")
            head = fake.heads[0]
            note("DevTools got:\n" + head)
            expect_eq(head.split("\r\n")[0], "GET /json/version/?x=1 HTTP/1.1", "the request line")
            lines = header_lines(head)
            names = [k for k, _ in lines]
            expect_eq(lines[0], ("host", "127.0.0.1:%d" % fake.port), "the first header")
            expect_eq(names.count("host"), 1, "Host headers")
            for gone in ("origin", "authorization", "cookie", "proxy-authorization"):
                expect(gone not in names, "%s reached DevTools: %r" % (gone, lines))
            expect(tok not in head, "the token reached DevTools")
            expect_in(("connection", "close"), lines, "the headers DevTools got")
            expect_eq(names.count("connection"), 1, "Connection headers")
            expect_in(("x-custom", "kept as it is"), lines, "the headers DevTools got")

            # The relay takes the bearer header only: a browser sends a
            # host's cookies to every port of it.
            status, _, _ = http_get(q, "/json/version", {"Cookie": "x=1; berth_token=" + tok})
            expect_eq(status, 401, "the status with the token in a cookie")
            expect_eq(fake.accepted, 1, "connections DevTools got")
    finally:
        fake.close()


def chromium_extra(cdp_port, relay_port, udd, restart="always"):
    return gateway_conf(cdp_port, relay_port) + "\n" + chromium_service(cdp_port, udd, restart)


class Chromium:
    """berthd with headless Chromium as its service "browser" and the
    relay in front of its DevTools port: p is Chromium's port, q the
    relay's. Ready when the service is."""

    def __init__(self, restart="always"):
        self.p, self.q = free_port(), free_port()
        self.udd = tempfile.mkdtemp(prefix="berth-it-cdp-")
        try:
            self.sb = Sandbox(extra=chromium_extra(self.p, self.q, self.udd, restart))
            self.sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "browser", 60)
            wait_listening(self.q)
        except BaseException:
            self.close()
            raise
        self.auth = {"Authorization": "Bearer " + self.sb.token}

    def close(self):
        if getattr(self, "sb", None) is not None:
            self.sb.close()
        shutil.rmtree(self.udd, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def version_url(self, host=None):
        hdrs = dict(self.auth)
        if host is not None:
            hdrs["Host"] = host
        status, _, body = http_get(self.q, "/json/version/", hdrs)
        expect_eq(status, 200, "GET /json/version/ through the relay")
        expect("127.0.0.1:%d" % self.p not in body.decode(), "Chromium's own address in %r" % body[:400])
        return json.loads(body)["webSocketDebuggerUrl"]


def ws_connect(url, headers, **kw):
    """websockets.connect with headers, under either name this version
    gives the argument."""
    major = int(websockets.__version__.split(".")[0])
    key = "additional_headers" if major >= 14 else "extra_headers"
    kw[key] = headers
    return websockets.connect(url, **kw)


class Cdp:
    """A blocking CDP client over a WebSocket: each call runs its own
    loop until done, so that the test can do other things between."""

    def __init__(self, url, headers, timeout=10.0):
        self.loop = asyncio.new_event_loop()
        self.timeout = timeout
        self.next_id = 1

        # The connection belongs to the loop it is made in.
        async def connect():
            return await ws_connect(url, headers, max_size=None, ping_interval=None, open_timeout=timeout)

        try:
            self.ws = self._run(connect())
        except BaseException:
            self.loop.close()
            raise

    def _run(self, coro):
        return self.loop.run_until_complete(asyncio.wait_for(coro, self.timeout))

    def call(self, method, params=None):
        msg_id = self.next_id
        self.next_id += 1
        self._run(self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}})))
        while True:
            m = json.loads(self._run(self.ws.recv()))
            if m.get("id") == msg_id:
                expect("result" in m, "%s failed: %r" % (method, m))
                return m["result"]

    def wait_closed(self):
        """Waits for the connection to end; fails if it does not."""
        try:
            while True:
                self._run(self.ws.recv())
        except websockets.ConnectionClosed:
            return
        except asyncio.TimeoutError:
            raise Timeout("the WebSocket stayed open %.0f s" % self.timeout)

    def close(self):
        try:
            self._run(self.ws.close())
        except Exception:
            pass
        self.loop.close()


def refused_status(e):
    """The HTTP status of a refused WebSocket handshake, however this
    version of websockets reports it."""
    if hasattr(e, "status_code"):
        return e.status_code
    response = getattr(e, "response", None)
    return getattr(response, "status_code", None)


def expect_browser(cdp):
    product = cdp.call("Browser.getVersion")["product"]
    expect("Chrome/" in product, "Browser.getVersion's product: %r" % product)
    return product


@case("Chromium through the relay: /json/version names the relay as the client dialed it; its WebSocket URL works")
def chromium_version():
    with Chromium() as cr:
        url = cr.version_url()
        note("webSocketDebuggerUrl: %s" % url)
        expect(url.startswith("ws://127.0.0.1:%d/devtools/browser/" % cr.q), "the debugger URL: %r" % url)
        local = cr.version_url(host="localhost:%d" % cr.q)
        expect_eq(local, url.replace("127.0.0.1:", "localhost:"), "the debugger URL asked for as localhost")
        # Chromium itself refuses a Host that is a name other than
        # localhost; through the relay, a sandbox reached by name works.
        named = cr.version_url(host="sandbox.example:%d" % cr.q)
        expect_eq(named, url.replace("127.0.0.1:", "sandbox.example:"), "the debugger URL asked for by name")
        status, _, body = http_get(cr.p, "/json/version", {"Host": "sandbox.example:%d" % cr.p})
        note("Chromium asked directly by name: %d %r" % (status, body[:100]))
        expect(status != 200, "Chromium answered a Host it should refuse; this case proves nothing")

        status, _, body = http_get(cr.q, "/json/list", cr.auth)
        expect_eq(status, 200, "GET /json/list through the relay")
        targets = json.loads(body)
        expect(targets, "no targets in /json/list")
        for t in targets:
            expect(
                t["webSocketDebuggerUrl"].startswith("ws://127.0.0.1:%d/devtools/" % cr.q),
                "a target's URL: %r" % t["webSocketDebuggerUrl"],
            )
        expect("127.0.0.1:%d" % cr.p not in body.decode(), "Chromium's own address in /json/list")

        # What connectOverCDP does next: the URL, with the same header.
        c = Cdp(url, cr.auth)
        try:
            note("product: %s" % expect_browser(c))
        finally:
            c.close()
        page = [t for t in targets if t["type"] == "page"][0]
        c = Cdp(page["webSocketDebuggerUrl"], cr.auth)
        try:
            r = c.call("Runtime.evaluate", {"expression": "6 * 7", "returnByValue": True})
            expect_eq(r["result"]["value"], 42, "Runtime.evaluate through the relay")
        finally:
            c.close()

        try:
            Cdp(url, {}).close()
            raise TestFailure("a WebSocket without the token was let through")
        except websockets.InvalidHandshake as e:
            expect_eq(refused_status(e), 401, "the status of an upgrade without the token (%r)" % e)


@case("bad requests get a clear error status and a close, while another connection goes on working")
def bad_requests():
    with Chromium() as cr:
        c = Cdp(cr.version_url(), cr.auth)
        # A client that sent half a head and went quiet holds nothing up.
        idle = socket.create_connection(("127.0.0.1", cr.q), timeout=5)
        idle.sendall(b"GET /json/version HTTP/1.1\r\nHo")
        try:
            expect_browser(c)
            cases = [
                (b"NOT AN HTTP REQUEST\r\n\r\n", 400, "path"),
                (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, "request line"),
                (b"\x00\xff\xfe garbage", 400, "request line"),
                (b"GET /json HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"x" * 20000 + b"\r\n\r\n", 431, "16384"),
                (b"GET /json HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"x" * 2000000, 431, "16384"),
                (
                    b"POST /json HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                    501,
                    "Transfer-Encoding",
                ),
                (b"GET /json/version HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n", 400, "Host"),
                (b"GET /json/version HTTP/1.1\r\nHost: evil.example/x\r\n\r\n", 400, "Host"),
                (b"GET /json/version HTTP/2.0\r\nHost: a\r\n\r\n", 505, "HTTP/1.1"),
                (b"GET /json/version HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400, "folded"),
            ]
            for data, status, words in cases:
                msg = expect_error(exchange(cr.q, data), status, words)
                note("%d: %s" % (status, msg))
                expect_browser(c)
            # Valid HTTP, but no token: refused as well, and the other
            # connection still goes on.
            expect_error(exchange(cr.q, b"GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 401, "token")
            expect_browser(c)
            url = cr.version_url()
            expect(
                url.startswith("ws://127.0.0.1:%d/devtools/browser/" % cr.q),
                "the debugger URL after the errors: %r" % url,
            )
        finally:
            idle.close()
            c.close()


def chromium_pids(sb):
    """Host pids of the browser service's main process (berthd's child
    running Chromium)."""
    out = []
    for pid in proc_children(sb.berthd_pid()):
        argv = proc_argv(pid)
        if argv and "chromium" in os.path.basename(argv[0]):
            out.append(pid)
    return out


@case("Chromium killed: the open WebSocket ends, and a new request gets a 502 that says why")
def chromium_killed():
    with Chromium(restart="never") as cr:
        c = Cdp(cr.version_url(), cr.auth)
        try:
            expect_browser(c)
            pids = wait_for(lambda: chromium_pids(cr.sb), 5, "Chromium's pid")
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            c.wait_closed()
        finally:
            c.close()

        def refused():
            try:
                s = socket.create_connection(("127.0.0.1", cr.p), timeout=1)
                s.close()
                return False
            except OSError:
                return True

        wait_for(refused, 10, "Chromium's port to close")
        raw = exchange(
            cr.q,
            b"GET /json/version/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: %s\r\n\r\n"
            % (cr.q, cr.auth["Authorization"].encode()),
        )
        msg = expect_error(raw, 502, "127.0.0.1:%d" % cr.p)
        note("502: %s" % msg)
        expect_in("refused", msg.lower(), "the 502's message")
        # The relay itself is fine: a request without the token is still
        # answered, and never needs Chromium.
        expect_error(exchange(cr.q, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 401, "token")


@case("berth's own cdp probe through the relay (ready = cdp HOST:PORT auth) turns the check ready")
def probe_through_relay():
    p, q = free_port(), free_port()
    udd = tempfile.mkdtemp(prefix="berth-it-cdp-")
    try:
        extra = chromium_extra(p, q, udd) + (
            "\n[check cdp-relay]\nready = cdp 127.0.0.1:%d auth\nafter = browser\n" % q
        )
        with Sandbox(extra=extra) as sb:

            def ok():
                status, body = http_json(sb.port, "/readyz")
                check = body.get("checks", {}).get("cdp-relay")
                return check if check and check["ok"] else None

            check = wait_for(ok, 60, "the cdp-relay check to be ok", 0.2)
            note("cdp-relay: %r" % check)
    finally:
        shutil.rmtree(udd, ignore_errors=True)


run()
