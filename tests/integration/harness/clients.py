"""Clients of berthd and its gateway: berth.v1 on the Unix socket
(UnixClient) and the WebSocket (WsClient), one blocking API (request,
call, recv) with deadlines; PlainWs for the relays; HTTP, WebSocket
upgrades and raw sockets by hand."""

import asyncio
import base64
import http.client
import http.server
import json
import os
import re
import socket
import struct
import threading
import time
from collections import deque

import msgpack
import websockets

from .runner import TestFailure, Timeout, expect, short, track_closer

VERSION = "berth.v1"
MAX_MSG = 8 * 1024 * 1024
CLIENT_NAME = "berth-tests/1"


def http_get(port, path, headers=None, timeout=5.0, host="127.0.0.1"):
    """GET path; returns (status, {lowercased header: value}, body bytes)."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        conn.close()


def http_json(port, path, timeout=5.0):
    """GET path and parse the body as JSON: (status, object)."""
    status, _, body = http_get(port, path, timeout=timeout)
    try:
        return status, json.loads(body)
    except ValueError:
        raise TestFailure("%s: body is not JSON: %r" % (path, body[:300]))


def ws_upgrade(port, path="/v1", token=None, headers=None, timeout=5.0):
    """Sends a WebSocket upgrade request on a plain socket and reads the
    answer's head. Returns (status, {lowercased header: value}). A token
    goes in "Authorization: Bearer"; headers may override anything."""
    key = base64.b64encode(os.urandom(16)).decode()
    hdrs = {
        "Host": "127.0.0.1:%d" % port,
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": key,
        "Sec-WebSocket-Protocol": VERSION,
    }
    if token is not None:
        hdrs["Authorization"] = "Bearer " + token
    hdrs.update(headers or {})
    req = "GET %s HTTP/1.1\r\n" % path
    req += "".join("%s: %s\r\n" % kv for kv in hdrs.items()) + "\r\n"
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(req.encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    finally:
        s.close()
    head = buf.split(b"\r\n\r\n", 1)[0].decode(errors="replace")
    lines = head.split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    if m is None:
        raise TestFailure("no HTTP status line in the answer: %r" % buf[:200])
    out = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        out[k.strip().lower()] = v.strip()
    return int(m.group(1)), out


def parse_metrics(text):
    """Prometheus text into {name: value} (label sets summed) and
    {'name{labels}': value}."""
    by_name, by_series = {}, {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if m is None:
            raise TestFailure("not a Prometheus sample line: %r" % line)
        value = float(m.group(3))
        by_name[m.group(1)] = by_name.get(m.group(1), 0.0) + value
        by_series[m.group(1) + (m.group(2) or "")] = value
    return by_name, by_series


class ProtoError(TestFailure):
    """An error response where a result was expected."""

    def __init__(self, op, code, message):
        super().__init__("%s: error %s: %s" % (op, code, message))
        self.code = code
        self.message = message


class Closed(TestFailure):
    """The connection ended; code is the WebSocket close code (None on a
    Unix socket or when no close frame came)."""

    def __init__(self, code=None, reason=""):
        super().__init__("connection closed (code %s%s)" % (code, ", " + reason if reason else ""))
        self.code = code
        self.reason = reason


class _Client:
    """The transport-independent half: ids, matching responses, keeping
    what arrives meanwhile for recv()."""

    def __init__(self, timeout):
        self.timeout = timeout
        self._next_id = 1
        self._pending = deque()
        self.hello_result = None

    def _deadline(self, timeout):
        return time.monotonic() + (self.timeout if timeout is None else timeout)

    def send(self, msg):
        """Sends one message (a dict, packed as msgpack)."""
        self.send_raw(msgpack.packb(msg, use_bin_type=True))

    def send_request(self, op, args=None):
        """Sends a request without waiting; returns its id (for
        response(), so that requests can be pipelined)."""
        msg_id = self._next_id
        self._next_id += 1
        self.send({"type": "request", "id": msg_id, "op": op, "args": {} if args is None else args})
        return msg_id

    def response(self, msg_id, timeout=None, what="the response"):
        """Waits for the response with msg_id and returns the whole map.
        Messages arriving before it are kept for recv()."""
        deadline = self._deadline(timeout)
        for i, m in enumerate(self._pending):
            if m.get("type") == "response" and m.get("id") == msg_id:
                del self._pending[i]
                return m
        while True:
            m = self._recv_until(deadline, "%s (id %d)" % (what, msg_id))
            if m.get("type") == "response" and m.get("id") == msg_id:
                return m
            self._pending.append(m)

    def request(self, op, args=None, timeout=None):
        """Sends a request and returns its whole response map (ok or not)."""
        return self.response(self.send_request(op, args), timeout, "the response to " + op)

    def call(self, op, args=None, timeout=None):
        """request() that returns the result, or raises ProtoError."""
        r = self.request(op, args, timeout)
        if not r.get("ok"):
            err = r.get("error") or {}
            raise ProtoError(op, err.get("code"), err.get("message"))
        return r.get("result")

    def error_of(self, op, args=None, timeout=None):
        """request() that must fail: returns the error code."""
        r = self.request(op, args, timeout)
        if r.get("ok"):
            raise TestFailure("%s succeeded where an error was expected: %r" % (op, short(r)))
        return r["error"]["code"]

    def hello(self, version=VERSION):
        self.hello_result = self.call("hello", {"version": version, "client": CLIENT_NAME})
        return self.hello_result

    def recv(self, timeout=None):
        """The next message not yet returned (dict); Timeout or Closed."""
        if self._pending:
            return self._pending.popleft()
        return self._recv_until(self._deadline(timeout), "a message")

    def subscribe(self, from_seq=None, timeout=None):
        """events.subscribe; returns its result. Events of an earlier
        subscription that came before the response are dropped, so the
        next event is the first of the new position."""
        args = {} if from_seq is None else {"from_seq": from_seq}
        result = self.call("events.subscribe", args, timeout)
        self._pending = deque(m for m in self._pending if m.get("type") != "event")
        return result

    def next_event(self, timeout=None):
        """The next event message, skipping anything else."""
        deadline = self._deadline(timeout)
        while True:
            if self._pending:
                m = self._pending.popleft()
            else:
                m = self._recv_until(deadline, "an event")
            if m.get("type") == "event":
                return m

    def events_until(self, pred, timeout=None):
        """Reads events until pred(event) holds; returns them all (the
        matching one last)."""
        got = []
        deadline = self._deadline(timeout)
        while True:
            left = deadline - time.monotonic()
            try:
                ev = self.next_event(max(left, 0.0))
            except Timeout:
                raise Timeout(
                    "the awaited event did not come within %.1f s; got %d events, "
                    "the last: %s" % (self.timeout if timeout is None else timeout, len(got), short(got[-5:]))
                )
            got.append(ev)
            if pred(ev):
                return got

    def _recv_until(self, deadline, what):
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise Timeout(what)
            return self._recv_raw(left)
        except Timeout:
            raise Timeout("waited in vain for %s" % what) from None


class UnixClient(_Client):
    """berth.v1 on berthd's Unix socket: 4-byte big-endian length, then
    one msgpack map."""

    def __init__(self, path, hello=True, timeout=5.0):
        super().__init__(timeout)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._buf = bytearray()
        self._pos = 0  # where the next frame starts in _buf
        track_closer(self.close)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        if hello:
            self.hello()

    def send_raw(self, payload):
        """Frames payload (bytes) and sends it."""
        self.sock.sendall(struct.pack(">I", len(payload)) + payload)

    def send_bytes(self, data):
        """Sends data as is, no framing."""
        self.sock.sendall(data)

    def _fill(self, n, deadline):
        """Reads until _buf holds n bytes past _pos."""
        while len(self._buf) - self._pos < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("Unix socket read")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise Timeout("Unix socket read")
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise Closed(None, "end of stream")
            if self._pos > 0:
                del self._buf[: self._pos]
                self._pos = 0
            self._buf += chunk

    def _recv_raw(self, timeout):
        deadline = time.monotonic() + timeout
        self._fill(4, deadline)
        (n,) = struct.unpack_from(">I", self._buf, self._pos)
        self._fill(4 + n, deadline)
        start = self._pos + 4
        self._pos = start + n
        return msgpack.unpackb(self._buf[start : self._pos], raw=False, strict_map_key=False)

    def close(self):
        self.sock.close()


class _WsLoop:
    """A WebSocket with an asyncio loop of its own that runs only while
    one of its calls waits, so nothing is read while the test does not
    ask. What WsClient and PlainWs share."""

    def _ws_open(self, url, token, headers, subprotocols, timeout, sock, max_size, max_queue=32):
        self.loop = asyncio.new_event_loop()
        self.ws = None
        track_closer(self.close)
        hdrs = {}
        if token is not None:
            hdrs["Authorization"] = "Bearer " + token
        hdrs.update(headers or {})

        async def connect():
            # Made inside the loop, so that the library binds to it.
            return await websockets.connect(
                url,
                extra_headers=hdrs,
                subprotocols=list(subprotocols) if subprotocols else None,
                sock=sock,
                max_size=max_size,
                max_queue=max_queue,
                compression=None,
                ping_interval=None,
                close_timeout=2,
                open_timeout=timeout,
            )

        try:
            self.ws = self._run(connect(), timeout, "the WebSocket handshake")
        except Exception:
            self.close()
            raise

    def _run(self, coro, timeout, what="a WebSocket operation"):
        try:
            return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))
        except asyncio.TimeoutError:
            raise Timeout("%s did not finish within %.1f s" % (what, timeout))
        except websockets.ConnectionClosed as e:
            raise Closed(e.rcvd.code if e.rcvd else None, e.rcvd.reason if e.rcvd else "")

    def close(self, code=1000, reason=""):
        """A clean close (close frame, then wait), and the loop goes."""
        if self.loop.is_closed():
            return
        try:
            if self.ws is not None:
                self.loop.run_until_complete(asyncio.wait_for(self.ws.close(code, reason), 3))
        except Exception:
            pass
        self._close_loop()

    def _close_loop(self):
        try:
            tasks = asyncio.all_tasks(self.loop)
            for t in tasks:
                t.cancel()
            if tasks:
                self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        except Exception:
            pass
        self.loop.close()


class WsClient(_Client, _WsLoop):
    """berth.v1 over the gateway's WebSocket: one msgpack message per
    binary frame. Blocking: each call runs this client's own asyncio loop
    until it is done, so nothing is read while the test does not ask."""

    def __init__(
        self,
        url,
        token=None,
        hello=True,
        timeout=5.0,
        headers=None,
        subprotocols=(VERSION,),
        sock=None,
        max_size=4 * MAX_MSG,
    ):
        super().__init__(timeout)
        self._ws_open(url, token, headers, subprotocols, timeout, sock, max_size)
        if hello:
            self.hello()

    def send_raw(self, data):
        """Sends one frame: binary for bytes, text for str."""
        self._run(self.ws.send(data), self.timeout, "send")

    def _recv_raw(self, timeout):
        data = self._run(self.ws.recv(), timeout, "recv")
        if isinstance(data, str):
            raise TestFailure("the server sent a text frame: %r" % data[:200])
        return msgpack.unpackb(data, raw=False, strict_map_key=False)

    def send_frame(self, opcode, payload=b"", length=None, fin=True):
        """Writes one frame by hand, past the library: opcode (1 text,
        2 binary...), payload, and the length the header announces
        (default: the payload's), so a test can lie about it."""
        n = len(payload) if length is None else length
        head = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.ws.transport.write(head + mask + body)

    def wait_closed(self, timeout=None):
        """Reads (and discards) until the server closes; returns
        (close code, messages read meanwhile)."""
        deadline = self._deadline(timeout)
        seen = []
        while True:
            try:
                seen.append(self._recv_until(deadline, "the close"))
            except Closed as e:
                return e.code, seen

    def abort(self):
        """Drops the connection without a close frame, as a crash would."""
        if self.loop.is_closed():
            return
        if self.ws is not None and self.ws.transport is not None:
            self.ws.transport.abort()
            try:
                self._run(self.ws.wait_closed(), 2, "the abort")
            except Exception:
                pass
        self._close_loop()

def raw_ws_socket(port, rcvbuf=None):
    """A TCP socket connected to the gateway, with SO_RCVBUF set before the
    connect (so the window stays small), for WsClient(sock=...)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    return s


class PlainWs(_WsLoop):
    """A WebSocket client without berth.v1 on top, for the relays; between
    calls nothing is read, as from a stalled browser. recv() gives
    messages whole; recv_bytes() reads the byte stream across them (RFB
    over a WebSocket); call() is one DevTools command and its answer."""

    def __init__(self, url, token=None, headers=None, subprotocols=None, timeout=10.0, sock=None, max_queue=32):
        self.buf = bytearray()
        self.next_id = 1
        self._ws_open(url, token, headers, subprotocols, timeout, sock, None, max_queue)

    def send(self, data, timeout=10.0):
        self._run(self.ws.send(data), timeout, "send")

    def recv(self, timeout=10.0):
        return self._run(self.ws.recv(), timeout, "recv")

    def recv_bytes(self, n, timeout=10.0):
        """The next n bytes of the stream, whatever the messages."""
        deadline = time.monotonic() + timeout
        while len(self.buf) < n:
            data = self.recv(max(deadline - time.monotonic(), 0.01))
            expect(isinstance(data, bytes), "a text message: %r" % (data[:100],))
            self.buf += data
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def call(self, method, params=None, timeout=20.0):
        """Sends a DevTools command and returns its result (events between
        are skipped)."""
        msg_id = self.next_id
        self.next_id += 1
        self.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            m = json.loads(self.recv(max(deadline - time.monotonic(), 0.01)))
            if m.get("id") == msg_id:
                expect("error" not in m, "%s: %r" % (method, m.get("error")))
                return m["result"]

    def pump(self, seconds):
        """Runs the loop for a while, so that queued writes go out."""
        self.loop.run_until_complete(asyncio.sleep(seconds))

    def write_raw(self, data):
        """Bytes on the socket, past the library."""
        self.ws.transport.write(data)

    def closed(self, timeout=10.0):
        """Reads until the server closes: (code, reason)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.recv(max(deadline - time.monotonic(), 0.01))
            except Closed as e:
                return e.code, e.reason


class HttpServer:
    """An HTTP server on a port of its own on loopback that answers every
    GET with body (of type ctype) and records (path, Cookie header) of
    each request in seen; shut down at the end of the case."""

    def __init__(self, body, ctype="text/html"):
        self.seen = []
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append((self.path, self.headers.get("Cookie", "")))
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        track_closer(self.server.shutdown)


def pump(a, b):
    """Copies what socket a receives to socket b until either ends, then
    shuts both down (one direction of a relay)."""
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
