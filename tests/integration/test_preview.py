"""The preview proxy (preview_listen) through the real gateway, to apps
run by berth as the agent user: previews routed by path and by host,
a private link exchanged once for a cookie, a public link alone; the
app never shown the grant's token, code or cookie, and its own cookies
and query kept; bodies of 100 MiB both ways byte for byte without the
gateway's memory growing with them; keep-alive, chunked bodies and a
WebSocket through it; a 502 naming the port before the app listens and
the app reached once it does, on the same connection; the end of a
grant, revoked or expired, closing what it opened within 100 ms; a
runtime's server through /runtime/TOKEN/ with its password sent for the
client and the client's own Authorization not; and what is no preview's
(another door's token, a malformed or oversized head, a host of another
domain) refused."""

import asyncio
import base64
import hashlib
import http.client
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    Sandbox,
    case,
    expect,
    expect_eq,
    expect_in,
    note,
    proc_status,
    pyfile,
    read_to_eof,
    run,
    wait_for,
)
from harness.procs import free_port  # noqa: E402
from harness.runtimes import OPENCODE, AgentDirs, need_program, runtime_sections, start_ready  # noqa: E402

import websockets  # noqa: E402

PY = "/usr/bin/python3"
DOMAIN = "preview.example.test"
MIB = 1024 * 1024

# The app: HTTP/1.1 with keep-alive. /big/N answers N bytes of a pattern;
# a POST answers the sha256 and length of its body (Content-Length or
# chunked); /chunked answers in chunks; anything else echoes the path and
# the headers it got.
APP = r'''
import hashlib, json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAT = bytes(range(256)) * 4096


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return
                left = size
                while left:
                    d = self.rfile.read(min(left, 65536))
                    left -= len(d)
                    yield d
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        while n:
            d = self.rfile.read(min(n, 65536))
            n -= len(d)
            yield d

    def answer(self, obj):
        b = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.send_header("Set-Cookie", "app=1; Path=/")
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        if self.path.startswith("/big/"):
            n = int(self.path[5:])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            while n:
                k = min(n, len(PAT))
                self.wfile.write(PAT[:k])
                n -= k
            return
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"one ", b"two ", b"three"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.answer({"path": self.path, "headers": self.headers.items()})

    def do_POST(self):
        h, n = hashlib.sha256(), 0
        for d in self.body():
            h.update(d)
            n += len(d)
        self.answer({"path": self.path, "sha256": h.hexdigest(), "length": n, "headers": self.headers.items()})


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''

WS_APP = r'''
import asyncio, sys, websockets


async def echo(ws, path=None):
    async for m in ws:
        await ws.send(m)


async def main():
    async with websockets.serve(echo, "127.0.0.1", int(sys.argv[1]), max_size=None):
        await asyncio.Future()

asyncio.run(main())
'''

RUNTIME = """[runtime api]
command = %s
workspace = /tmp
user = agent
server = %s {port}
server_password_env = PW
server_ready_timeout_ms = 60000
"""


def config(pport, domain=None, extra="", runtimes=None):
    text = "[gateway]\npreview_listen = 127.0.0.1:%d\n%s" % (pport, extra)
    if domain is not None:
        text += "preview_domain = %s\n" % domain
    if runtimes is None:
        runtimes = RUNTIME % (PY, pyfile(APP, "runtime_app.py"))
    return text + "\n" + runtimes


def start_app(sb, body, port, name="app.py"):
    """body run as the agent user, listening on port; returns once it
    does."""
    c = sb.ws()
    c.call("proc.start", {"argv": [PY, pyfile(body, name), str(port)], "user": "agent"})

    def listening():
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return True
        except OSError:
            return False
    wait_for(listening, 20, "the app on port %d" % port)


def conn(pport):
    return http.client.HTTPConnection("127.0.0.1", pport, timeout=30)


def get(c, path, headers=None, method="GET", body=None):
    """One request on c: (status, headers, body)."""
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    return r.status, r.getheaders(), r.read()


def raw(pport, data, timeout=10):
    """data sent on a connection of its own; all that comes back until the
    proxy closes it (or the timeout)."""
    s = socket.create_connection(("127.0.0.1", pport), timeout)
    s.sendall(data)
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except socket.timeout:
        pass
    s.close()
    return got


def status_of(resp):
    return int(resp.split(b" ", 2)[1]) if resp[:7] == b"HTTP/1." else None


def redeem(pport, url_path, host=None):
    """Opens a private link (a path with ?berth_link=): the redirect's
    Location and the cookie's name=value and attributes."""
    c = conn(pport)
    st, hdrs, _ = get(c, url_path, {"Host": host} if host else None)
    h = dict((k.lower(), v) for k, v in hdrs)
    expect_eq(st, 302, "a private link redirects")
    return h["location"], h["set-cookie"]


@case("a private preview by path: the link is exchanged once for an HttpOnly cookie scoped to its path, the "
      "cookie admits and the app sees neither it, the token nor the code; without the cookie, or with the link "
      "again, 401", 120)
def t_private_path():
    pport, aport = free_port(), free_port()
    with Sandbox(extra=config(pport)) as sb:
        start_app(sb, APP, aport)
        ws = sb.ws()
        g = ws.call("grant.create", {"scope": "preview:%d" % aport})
        path = g["url"].split("%d" % pport, 1)[1]
        code = g["url"].rsplit("=", 1)[1]
        loc, cookie = redeem(pport, path.replace("?", "?x=1&") + "&y=2")
        expect_eq(loc, "/preview/%s/?x=1&y=2" % g["id"], "the redirect drops berth_link alone")
        expect_eq(cookie, "berth_grant=%s; Path=/preview/%s/; HttpOnly; SameSite=Lax" % (g["token"], g["id"]),
                  "the cookie")
        c = conn(pport)
        st, hdrs, body = get(c, "/preview/%s/echo?q=1" % g["id"],
                             {"Cookie": "a=1; berth_grant=%s; b=2" % g["token"], "Authorization": "Basic eDp5"})
        expect_eq(st, 200, "the cookie admits")
        got = json.loads(body)
        expect_eq(got["path"], "/echo?q=1", "the app's path, without the prefix")
        h = dict((k.lower(), v) for k, v in got["headers"])
        expect_eq(h.get("cookie"), "a=1; b=2", "the app's cookies kept, berth's taken out")
        expect_eq(h.get("authorization"), "Basic eDp5", "the app's own Authorization kept at a preview")
        expect_eq((h.get("x-forwarded-for"), h.get("x-forwarded-proto"), h.get("x-forwarded-host"),
                   h.get("x-forwarded-prefix")),
                  ("127.0.0.1", "http", "127.0.0.1:%d" % pport, "/preview/%s" % g["id"]), "X-Forwarded-*")
        expect_eq(h.get("host"), "127.0.0.1:%d" % pport, "the client's Host")
        for secret in (g["token"], code):
            expect(secret not in body.decode(), "the app saw a credential of the grant")
        expect_in(("Set-Cookie", "app=1; Path=/"), hdrs, "the app's answer headers pass")
        st, _, _ = get(conn(pport), "/preview/%s/echo" % g["id"])
        expect_eq(st, 401, "without the cookie")
        st, _, page = get(conn(pport), path)
        expect_eq(st, 401, "the link a second time")
        expect_in(b"<html", page, "a short page")
        st, _, _ = get(conn(pport), "/preview/%s/echo" % g["id"], {"Cookie": "berth_grant=" + "0" * 40})
        expect_eq(st, 401, "a made-up cookie")


@case("a public preview by path and both kinds by host name; a host of another domain and the path form "
      "with a domain set answer 404; the port in the host name must be the grant's", 120)
def t_host_and_public():
    pport, aport = free_port(), free_port()
    with Sandbox(extra=config(pport, DOMAIN)) as sb:
        start_app(sb, APP, aport)
        ws = sb.ws()
        pub = ws.call("grant.create", {"scope": "preview:%d" % aport, "visibility": "public"})
        host = "%d-%s.%s" % (aport, pub["token"], DOMAIN)
        st, _, body = get(conn(pport), "/echo", {"Host": host})
        expect_eq(st, 200, "a public preview by host")
        expect_eq(json.loads(body)["path"], "/echo", "the path as sent")
        h = dict((k.lower(), v) for k, v in json.loads(body)["headers"])
        expect("x-forwarded-prefix" not in h, "no prefix by host")
        st, _, _ = get(conn(pport), "/echo", {"Host": "%d-%s.%s" % (aport + 1, pub["token"], DOMAIN)})
        expect_eq(st, 401, "another port in the host name")
        priv = ws.call("grant.create", {"scope": "preview:%d" % aport})
        host = "%d-%s.%s" % (aport, priv["id"], DOMAIN)
        loc, cookie = redeem(pport, "/?berth_link=" + priv["url"][-40:], host)
        expect_eq(loc, "/", "the redirect by host")
        expect_eq(cookie, "berth_grant=%s; Path=/; HttpOnly; SameSite=Lax" % priv["token"], "a host-only cookie")
        st, _, _ = get(conn(pport), "/echo", {"Host": host, "Cookie": "berth_grant=" + priv["token"]})
        expect_eq(st, 200, "the cookie by host")
        st, _, _ = get(conn(pport), "/echo", {"Host": host})
        expect_eq(st, 401, "by host without the cookie")
        for h, p in (("evil.example:%d" % pport, "/"), ("%d-%s.other.test" % (aport, pub["token"]), "/"),
                     ("127.0.0.1:%d" % pport, "/preview/%s/" % pub["token"])):
            st, _, _ = get(conn(pport), p, {"Host": h})
            expect_eq(st, 404, "Host %s, path %s" % (h, p))
    pport = free_port()
    with Sandbox(extra=config(pport)) as sb:
        start_app(sb, APP, aport)
        pub = sb.ws().call("grant.create", {"scope": "preview:%d" % aport, "visibility": "public"})
        st, _, body = get(conn(pport), "/preview/%s/x" % pub["token"])
        expect_eq((st, json.loads(body)["path"]), (200, "/x"), "a public preview by path")
        h = dict((k.lower(), v) for k, v in json.loads(body)["headers"])
        expect("x-forwarded-prefix" not in h, "no prefix that would show the app the token")


@case("keep-alive: several requests, chunked answers and a chunked request body on one connection; 100 MiB "
      "down and up byte for byte, the gateway's memory not growing with them", 240)
def t_bodies():
    pport, aport = free_port(), free_port()
    with Sandbox(extra=config(pport)) as sb:
        start_app(sb, APP, aport)
        pub = sb.ws().call("grant.create", {"scope": "preview:%d" % aport, "visibility": "public"})
        base = "/preview/%s" % pub["token"]
        c = conn(pport)
        get(c, base + "/echo")
        first = c.sock
        for i in range(5):
            st, _, body = get(c, base + "/echo/%d" % i)
            expect_eq((st, json.loads(body)["path"]), (200, "/echo/%d" % i), "request %d" % i)
        st, _, body = get(c, base + "/chunked")
        expect_eq((st, body), (200, b"one two three"), "a chunked answer")
        parts = [b"a" * 1000, b"b" * 70000, b"c"]
        c.request("POST", base + "/up", body=iter(parts), encode_chunked=True)
        r = c.getresponse()
        got = json.loads(r.read())
        expect_eq((got["length"], got["sha256"]), (71001, hashlib.sha256(b"".join(parts)).hexdigest()),
                  "a chunked request body")
        expect(c.sock is first, "every request on one connection")
        pid = sb.gateway_pid()
        rss0 = int(proc_status(pid, "VmRSS").split()[0])
        n = 100 * MIB
        c.request("GET", base + "/big/%d" % n)
        r = c.getresponse()
        h, total, pat = hashlib.sha256(), 0, bytes(range(256)) * 4096
        while True:
            d = r.read(1 << 20)
            if not d:
                break
            h.update(d)
            total += len(d)
        want = hashlib.sha256()
        for i in range(100):
            want.update(pat)
        expect_eq((total, h.hexdigest()), (n, want.hexdigest()), "100 MiB down")
        rss1 = int(proc_status(pid, "VmRSS").split()[0])

        def chunks():
            for i in range(100):
                yield pat
        c.request("POST", base + "/up", body=chunks(), headers={"Content-Length": str(n)})
        got = json.loads(c.getresponse().read())
        expect_eq((got["length"], got["sha256"]), (n, want.hexdigest()), "100 MiB up")
        rss2 = int(proc_status(pid, "VmRSS").split()[0])
        note("the gateway's RSS: %d KiB, %d after 100 MiB down, %d after 100 MiB up" % (rss0, rss1, rss2))
        expect(max(rss1, rss2) - rss0 < 20 * 1024, "the gateway's memory grew with the bodies")
        expect(c.sock is first, "the big ones on the same connection")


@case("502 naming the port while nothing listens there, on a connection that stays usable, and the app "
      "reached on it once it listens", 120)
def t_not_listening():
    pport, aport = free_port(), free_port()
    with Sandbox(extra=config(pport)) as sb:
        pub = sb.ws().call("grant.create", {"scope": "preview:%d" % aport, "visibility": "public"})
        c = conn(pport)
        st, hdrs, page = get(c, "/preview/%s/" % pub["token"])
        expect_eq(st, 502, "nothing listens")
        expect_in(b"nothing listens on port %d yet" % aport, page, "the page names the port")
        expect_in(("Content-Type", "text/html; charset=utf-8"), hdrs, "an HTML page")
        st, _, _ = get(c, "/preview/%s/" % pub["token"], method="POST", body=b"x" * 5000)
        expect_eq(st, 502, "again, with a body dropped")
        first = c.sock
        start_app(sb, APP, aport)
        st, _, body = get(c, "/preview/%s/now" % pub["token"])
        expect_eq((st, json.loads(body)["path"]), (200, "/now"), "the app once it listens")
        expect(c.sock is first, "on the same connection")


def read_answer(s):
    """One answer with a Content-Length from s: (status, body)."""
    got = b""
    while b"\r\n\r\n" not in got:
        d = s.recv(65536)
        expect(d, "the connection closed before an answer's head")
        got += d
    head, body = got.split(b"\r\n\r\n", 1)
    n = int([ln.split(b":", 1)[1] for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")][0])
    while len(body) < n:
        d = s.recv(65536)
        expect(d, "the connection closed within an answer")
        body += d
    return status_of(head), body


@case("python3 -m http.server (HTTP/1.0, a connection per answer) behind the proxy: the client's connection "
      "outlives the app's, the next request reaching it anew", 120)
def t_http10_app():
    pport, aport = free_port(), free_port()
    with Sandbox(extra=config(pport)) as sb:
        root = os.path.dirname(pyfile("the file's text\n", "f.txt"))
        c = sb.ws()
        c.call("proc.start", {"argv": [PY, "-m", "http.server", str(aport), "--bind", "127.0.0.1",
                                       "--directory", root], "user": "agent"})
        wait_for(lambda: http_ok(aport), 20, "http.server listening")
        pub = c.call("grant.create", {"scope": "preview:%d" % aport, "visibility": "public"})
        s = socket.create_connection(("127.0.0.1", pport), 10)
        for i in range(3):
            s.sendall(b"GET /preview/%s/f.txt HTTP/1.1\r\nHost: x\r\n\r\n" % pub["token"].encode())
            expect_eq(read_answer(s), (200, b"the file's text\n"), "answer %d on one connection" % i)
        s.close()


def http_ok(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        return True
    except OSError:
        return False


async def ws_echo(url, msgs):
    async with websockets.connect(url, max_size=None, open_timeout=10) as w:
        got = []
        for m in msgs:
            await w.send(m)
            got.append(await asyncio.wait_for(w.recv(), 10))
        return got


@case("a WebSocket through the proxy echoes text and binary messages", 120)
def t_websocket():
    pport, wport = free_port(), free_port()
    with Sandbox(extra=config(pport)) as sb:
        start_app(sb, WS_APP, wport, "ws_app.py")
        pub = sb.ws().call("grant.create", {"scope": "preview:%d" % wport, "visibility": "public"})
        msgs = ["hello", b"\x00\x01" * 50000, "end"]
        got = asyncio.run(ws_echo("ws://127.0.0.1:%d/preview/%s/ws" % (pport, pub["token"]), msgs))
        expect_eq(got, msgs, "the echo")


def closed_at(s, timeout=5):
    """Reads s until the proxy closes it; the time it did."""
    s.settimeout(timeout)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
    return time.time()


async def ws_open(url):
    return await websockets.connect(url, open_timeout=10)


async def ws_closed_at(w):
    try:
        while True:
            await asyncio.wait_for(w.recv(), 5)
    except Exception:
        pass
    return time.time()


@case("revoking or the expiry of a grant closes its WebSocket and keep-alive connections within 100 ms; "
      "its link is 401 after", 120)
def t_grant_end():
    pport, aport, wport = free_port(), free_port(), free_port()
    with Sandbox(extra=config(pport)) as sb:
        start_app(sb, APP, aport)
        start_app(sb, WS_APP, wport, "ws_app.py")
        ws = sb.ws()
        for how in ("revoke", "expiry"):
            args = {"visibility": "public"}
            if how == "expiry":
                args["ttl_s"] = 3
            gh = ws.call("grant.create", dict(args, scope="preview:%d" % aport))
            gw = ws.call("grant.create", dict(args, scope="preview:%d" % wport))
            s = socket.create_connection(("127.0.0.1", pport), 10)
            s.sendall(b"GET /preview/%s/ HTTP/1.1\r\nHost: x\r\n\r\n" % gh["token"].encode())
            time.sleep(0.3)
            expect_eq(status_of(s.recv(65536)), 200, "the keep-alive connection's first answer")
            loop = asyncio.new_event_loop()
            w = loop.run_until_complete(ws_open("ws://127.0.0.1:%d/preview/%s/" % (pport, gw["token"])))
            if how == "revoke":
                t0 = time.time()
                ws.call("grant.revoke", {"id": gh["id"]})
                ws.call("grant.revoke", {"id": gw["id"]})
            else:
                t0 = gh["expires_at"] / 1000.0
            th = closed_at(s)
            tw = loop.run_until_complete(ws_closed_at(w))
            loop.close()
            if how == "expiry":
                t0w = gw["expires_at"] / 1000.0
            else:
                t0w = t0
            note("%s: HTTP closed %.0f ms, WebSocket %.0f ms after" % (how, (th - t0) * 1000, (tw - t0w) * 1000))
            expect(-0.05 < th - t0 < 0.1, "the keep-alive connection closed within 100 ms of the %s" % how)
            expect(-0.05 < tw - t0w < 0.1 or (how == "revoke" and tw - t0w < 0.15),
                   "the WebSocket closed within 100 ms of the %s" % how)
            st, _, _ = get(conn(pport), "/preview/%s/" % gh["token"])
            expect_eq(st, 401, "the link after the %s" % how)


@case("a runtime grant reaches the runtime's server at /runtime/TOKEN/, the prefix taken off, its password "
      "sent for the client and the client's own Authorization not; 502 once it stopped", 120)
def t_runtime():
    pport = free_port()
    with Sandbox(extra=config(pport)) as sb:
        ws = sb.ws()
        g = ws.call("grant.create", {"scope": "runtime:api"})
        st = ws.call("runtime.start", {"name": "api", "mode": "server"})
        want = "Basic " + base64.b64encode(("api:%s" % st["password"]).encode()).decode()
        wait_for(lambda: ws.call("runtime.status", {"name": "api"})["state"] == "ready", 30, "the server ready")
        c = conn(pport)
        code, _, body = get(c, "/runtime/%s/session?x=1" % g["token"], {"Authorization": "Bearer the-clients"})
        expect_eq(code, 200, "the runtime's server")
        got = json.loads(body)
        h = dict((k.lower(), v) for k, v in got["headers"])
        expect_eq(got["path"], "/session?x=1", "the path without /runtime/TOKEN")
        expect_eq(h.get("authorization"), want, "the runtime's password, in place of the client's")
        expect(g["token"] not in body.decode(), "the server saw the token")
        ws.call("runtime.stop", {"name": "api"}, timeout=30)
        code, _, page = get(conn(pport), "/runtime/%s/session" % g["token"])
        expect_eq(code, 502, "a stopped runtime")
        expect_in(b"not running", page, "the page says so")


@case("the real OpenCode server through /runtime/TOKEN/, as opencode attach reaches it (which keeps that "
      "prefix in every request): its API and its event stream, the password sent for the client", 180)
def t_opencode():
    need_program(OPENCODE, "OpenCode")
    pport, dirs = free_port(), AgentDirs()
    with Sandbox(extra=config(pport, runtimes=runtime_sections(dirs))) as sb:
        c = sb.ws()
        g = c.call("grant.create", {"scope": "runtime:opencode"})
        st = start_ready(c, "opencode", "server")
        code, _, _ = get(conn(st["port"]), "/path")
        expect_eq(code, 401, "the server without its password")
        base = "/runtime/%s" % g["token"]
        h = conn(pport)
        for path in ("/path", "/config/providers", "/project/current", "/session"):
            code, _, body = get(h, base + path)
            expect_eq(code, 200, "GET %s through the proxy: %r" % (path, body[:200]))
            json.loads(body)
        code, _, body = get(h, base + "/session", method="POST", body=b"{}",
                            headers={"Content-Type": "application/json"})
        expect_eq(code, 200, "a session made through the proxy: %r" % body[:200])
        s = socket.create_connection(("127.0.0.1", pport), 10)
        s.sendall(b"GET %s/event HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n" % base.encode())
        got = b""
        while b"\n\n" not in got.split(b"\r\n\r\n", 1)[-1] or b"\r\n\r\n" not in got:
            d = s.recv(65536)
            if not d:
                break
            got += d
        s.close()
        expect_eq(status_of(got), 200, "the event stream")
        expect_in(b"data:", got, "an event came through")
        c.call("runtime.stop", {"name": "opencode"}, timeout=30)


@case("what opens another door does not open a preview, nor a preview's token another door; malformed and "
      "oversized heads are 400 and 431", 120)
def t_refused():
    pport, aport = free_port(), free_port()
    desktop = "vnc = 127.0.0.1:%d\nnovnc_dir = /usr/share/novnc\n" % free_port()
    with Sandbox(extra=config(pport, extra=desktop)) as sb:
        start_app(sb, APP, aport)
        ws = sb.ws()
        view = ws.call("grant.create", {"scope": "desktop:view"})
        pub = ws.call("grant.create", {"scope": "preview:%d" % aport, "visibility": "public"})
        for key in (view["token"], view["id"]):
            st, _, _ = get(conn(pport), "/preview/%s/" % key)
            expect_eq(st, 401, "a desktop:view grant at the preview door")
        st, _, _ = get(conn(pport), "/preview/%s/" % view["id"],
                       {"Authorization": "Bearer " + sb.token, "Cookie": "berth_grant=" + view["token"]})
        expect_eq(st, 401, "the master token and a desktop grant's token as the cookie")
        st, _, _ = get(conn(pport), "/runtime/%s/" % pub["token"])
        expect_eq(st, 401, "a preview's token at the runtime door")
        c = http.client.HTTPConnection("127.0.0.1", sb.port, timeout=10)
        c.request("GET", "/v1", headers={"Authorization": "Bearer " + pub["token"], "Upgrade": "websocket",
                                         "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                                         "Sec-WebSocket-Version": "13", "Sec-WebSocket-Protocol": "berth.v1"})
        expect_eq(c.getresponse().status, 401, "a preview's token at /v1")
        for data, want in ((b"GARBAGE\r\n\r\n", 400), (b"GET / HTTP/1.1\r\n\r\n", 400),
                           (b"GET /preview/%s/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: "
                            b"chunked\r\n\r\n" % pub["token"].encode(), 400),
                           (b"GET /preview/x/ HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 20000 + b"\r\n\r\n", 431),
                           (b"GET /preview/%s/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"
                            % pub["token"].encode(), 501)):
            got = raw(pport, data)
            expect_eq(status_of(got), want, "the answer to %r" % data[:60])
        st, _, _ = get(conn(pport), "/preview/%s/" % pub["token"])
        expect_eq(st, 200, "the proxy still serves")


# What the agent user tries at the preview door with what it can know: a
# grant's id (it is in the links and the lists), a link already used, the
# id with a forged cookie, another port's host name, and its own app's
# port with no grant at all. Each answer's status, by name, as JSON.
ATTACK = r'''
import json, socket, sys

t = json.load(open(sys.argv[1]))


def status(path, headers=""):
    s = socket.create_connection(("127.0.0.1", t["pport"]), 10)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (path, headers)).encode())
    got = s.recv(65536)
    s.close()
    return int(got.split(b" ", 2)[1]) if got.startswith(b"HTTP/1.1 ") else repr(got[:40])


out = {
    "the id alone": status("/preview/%s/" % t["id"]),
    "the used link": status(t["link"]),
    "a forged cookie": status("/preview/%s/" % t["id"], "Cookie: berth_grant=%s\r\n" % ("f" * 40)),
    "the id as a token": status("/preview/%s/" % t["id"], "Cookie: berth_grant=%s\r\n" % t["id"]),
    "the id at the runtime door": status("/runtime/%s/" % t["id"]),
    "no key": status("/preview/"),
}
print(json.dumps(out))
'''


@case("the agent user, knowing a private preview's id and its used link, opens nothing at the preview door", 120)
def t_attacker():
    pport, aport = free_port(), free_port()
    with Sandbox(extra=config(pport)) as sb:
        start_app(sb, APP, aport)
        c = sb.ws()
        g = c.call("grant.create", {"scope": "preview:%d" % aport})
        link = g["url"].split("%d" % pport, 1)[1]
        redeem(pport, link)
        targets = pyfile(json.dumps({"pport": pport, "id": g["id"], "link": link}), "targets.json")
        p = c.call("proc.start", {"argv": [PY, pyfile(ATTACK, "attack.py"), targets], "user": "agent",
                                  "attach": True})
        streams = ["proc/%s/stdout" % p["id"], "proc/%s/stderr" % p["id"]]
        got = read_to_eof(c, streams, timeout=60)
        note("stderr: %r" % got[streams[1]][-800:])
        out = json.loads(got[streams[0]])
        for name, st in sorted(out.items()):
            expect_eq(st, 404 if name == "no key" else 401, name)
        st, _, _ = get(conn(pport), "/preview/%s/" % g["id"], {"Cookie": "berth_grant=" + g["token"]})
        expect_eq(st, 200, "the cookie its holder got still works")


if __name__ == "__main__":
    run()
