"""harness: what every integration test shares.

- A tiny TAP runner: @case("name") functions, run() at the bottom of each
  test file; expect()/expect_eq() for failures with good messages.
- Sandbox: berthd as PID 1 of a new PID namespace (with its gateway), in a
  temporary state directory, on a free port; cleaned up whatever happens.
- UnixClient and WsClient: berth.v1 on both transports, one blocking API
  (request, call, recv) with deadlines; EventStream, a subscriber that
  checks every seq across reconnections; pty_chunks and pty_read, a
  terminal session's output stream checked offset by offset.
- Small helpers: raw HTTP, WebSocket upgrades by hand, /proc, polling.

Programs come from $BERTH_BUILDDIR (default: the current directory),
sources from $BERTH_SRCDIR (default: two levels above this file).
$BERTH_TEST_ONLY=WORD runs only the cases whose name contains WORD;
$BERTH_TEST_VERBOSE=1 shows every case's notes and time.
"""

import asyncio
import base64
import http.client
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import deque

import msgpack
import websockets

SRCDIR = os.environ.get("BERTH_SRCDIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
)
BUILDDIR = os.path.abspath(os.environ.get("BERTH_BUILDDIR") or os.getcwd())

BERTHD = os.path.join(BUILDDIR, "berthd")
GATEWAY = os.path.join(BUILDDIR, "berth-gateway")
CLI = os.path.join(BUILDDIR, "berth")
MINIMAL_CONF = os.path.join(SRCDIR, "images", "minimal", "berth.conf")

VERSION = "berth.v1"
MAX_MSG = 8 * 1024 * 1024
CLIENT_NAME = "berth-tests/1"

# How long berthd (and its gateway) may take to come up. Sanitizer builds
# start slowly on a busy machine; this bounds a failure, not a success.
START_TIMEOUT = 10.0


# ---------------------------------------------------------------------
# TAP runner


class TestFailure(AssertionError):
    """A broken promise: the case fails with this message."""


class Timeout(TestFailure):
    """A deadline passed while waiting for something."""


class Skip(Exception):
    """Raised by a case that cannot run here (reported as # SKIP)."""


class CaseTimeout(BaseException):
    """The whole case ran past its time limit (see case(timeout=))."""


_cases = []
_current = None


class _Case:
    """What one running case has made: notes for its diagnostics and
    sandboxes and clients to clean up if the case did not."""

    def __init__(self, name):
        self.name = name
        self.notes = []
        self.sandboxes = []
        self.closers = []

    def cleanup(self):
        for close in reversed(self.closers):
            try:
                close()
            except Exception:
                pass
        for sb in self.sandboxes:
            try:
                sb.close()
            except Exception as e:
                self.notes.append("cleanup of a sandbox failed: %r" % (e,))


def case(name, timeout=90):
    """Registers a test case; cases run in the order they are defined."""

    def register(fn):
        _cases.append((name, fn, timeout))
        return fn

    return register


def note(msg):
    """Adds a line to the current case's diagnostics (shown on failure)."""
    if _current is not None:
        _current.notes.extend(str(msg).splitlines())


def _track_closer(close):
    if _current is not None:
        _current.closers.append(close)


def expect(cond, msg):
    """Fails the case with msg unless cond holds."""
    if not cond:
        raise TestFailure(msg)


def expect_eq(got, want, what):
    if got != want:
        raise TestFailure("%s: expected %r, got %r" % (what, want, got))


def expect_in(item, container, what):
    if item not in container:
        raise TestFailure("%s: %r not in %r" % (what, item, _short(container)))


def _short(obj, limit=600):
    s = repr(obj)
    return s if len(s) <= limit else s[:limit] + "...(%d more)" % (len(s) - limit)


def _diag(lines):
    for line in lines:
        for part in str(line).splitlines() or [""]:
            print("# " + part)


def _alarm_cb(signum, frame):
    raise CaseTimeout("the case ran past its time limit")


# What ASan, UBSan and LSan print; berthd and its children share a log.
_SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                    "runtime error:")


def _sanitizer_report(sandboxes):
    """The first sanitizer line in any sandbox's log, or None: a case whose
    daemons misbehaved under ASan/UBSan fails even if its checks passed."""
    for sb in sandboxes:
        for line in sb.log().splitlines():
            if any(mark in line for mark in _SANITIZER_MARKS):
                return line.strip()
    return None


def run():
    """Runs every registered case and prints TAP; exits 0 if all passed."""
    global _current
    only = os.environ.get("BERTH_TEST_ONLY")
    signal.signal(signal.SIGALRM, _alarm_cb)
    n = failed = 0
    for name, fn, limit in _cases:
        if only and only not in name:
            continue
        n += 1
        _current = _Case(name)
        started = time.monotonic()
        status, detail, tb = "ok", None, ""
        signal.alarm(limit)
        try:
            fn()
        except Skip as e:
            status, detail = "skip", str(e)
        except CaseTimeout:
            status, detail, tb = "not ok", "timed out after %d s" % limit, traceback.format_exc()
        except Exception:
            status, tb = "not ok", traceback.format_exc()
        finally:
            signal.alarm(0)
            try:
                _current.cleanup()
            except CaseTimeout:
                pass
        elapsed = time.monotonic() - started
        report = _sanitizer_report(_current.sandboxes)
        if report and status != "not ok":
            status, detail = "not ok", "a sanitizer reported: " + report
        if status == "ok":
            print("ok %d - %s" % (n, name))
        elif status == "skip":
            print("ok %d - %s # SKIP %s" % (n, name, detail))
        else:
            failed += 1
            print("not ok %d - %s" % (n, name))
            if detail:
                _diag([detail])
            _diag(tb.rstrip().splitlines())
            _diag(_current.notes)
            for sb in _current.sandboxes:
                _diag(["--- %s (last lines) ---" % sb.log_path])
                _diag(sb.log_tail(60))
        if os.environ.get("BERTH_TEST_VERBOSE"):
            if status != "not ok":
                _diag(_current.notes)
            _diag(["%.2f s" % elapsed])
        sys.stdout.flush()
        _current = None
    print("1..%d" % n)
    sys.stdout.flush()
    sys.exit(1 if failed else 0)


# ---------------------------------------------------------------------
# Polling and /proc


def wait_for(pred, timeout=5.0, what="condition", interval=0.02):
    """Polls pred() until it returns something true, and returns that.
    Fails with what after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise Timeout("%s: not within %.1f s" % (what, timeout))
        time.sleep(interval)


def scratch(mode=0o755):
    """A directory of the case's own, removed when the case ends."""
    d = tempfile.mkdtemp(prefix="berth-it-")
    os.chmod(d, mode)
    _track_closer(lambda: shutil.rmtree(d, ignore_errors=True))
    return d


X11_DIR = "/tmp/.X11-unix"


def display_free(n):
    """Neither a socket file, a lock file nor an abstract socket for :n."""
    if os.path.exists("%s/X%d" % (X11_DIR, n)) or os.path.exists("/tmp/.X%d-lock" % n):
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind("\0%s/X%d" % (X11_DIR, n))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_display():
    """An X display number nothing uses, for an X server of the test's."""
    for _ in range(200):
        n = random.randint(150, 899)
        if display_free(n):
            return n
    raise AssertionError("no free X display number")


def free_port():
    """A TCP port nobody listens on right now (the kernel's pick)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def proc_children(pid):
    """Host pids of pid's children (every thread's), [] if pid is gone."""
    kids = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                kids.extend(int(x) for x in f.read().split())
    except (FileNotFoundError, ProcessLookupError):
        pass
    return kids


def proc_argv(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0")[:-1]]
    except (FileNotFoundError, ProcessLookupError):
        return []


def proc_stat(pid):
    """(comm, state, ppid) of pid, or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm is in parentheses and may itself hold spaces or parentheses.
    lpar, rpar = s.index("("), s.rindex(")")
    rest = s[rpar + 2 :].split()
    return s[lpar + 1 : rpar], rest[0], int(rest[1])


def proc_status(pid, field):
    """A field of /proc/PID/status ("Seccomp", "State"...), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key == field:
                    return value.strip()
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def pid_alive(pid):
    """Whether pid exists and is not a zombie."""
    st = proc_stat(pid)
    return st is not None and st[1] != "Z"


def host_processes():
    """Every process of the host as {pid: (comm, state, ppid)}."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None:
                out[int(name)] = st
    return out


# ---------------------------------------------------------------------
# HTTP by hand


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


# ---------------------------------------------------------------------
# Clients


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
            raise TestFailure("%s succeeded where an error was expected: %r" % (op, _short(r)))
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
                    "the last: %s" % (self.timeout if timeout is None else timeout, len(got), _short(got[-5:]))
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
        _track_closer(self.close)
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
        _track_closer(self.close)
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


# ---------------------------------------------------------------------
# Sandbox


def minimal_config():
    with open(MINIMAL_CONF) as f:
        return f.read()


class Sandbox:
    """berthd as PID 1 of a new PID namespace, with a temporary state
    directory, token file and port of its own.

        with Sandbox(extra="[service s]\\ncommand = sleep 100\\n") as sb:
            c = sb.unix()
            ...

    config: the whole config text (default images/minimal/berth.conf);
    extra: text appended to it; config_file: a file to pass as is (not
    written). token: the token file's content (default: berthd creates
    one). wait: "healthz" (the gateway answers 200), "socket" (berthd
    answers hello on its Unix socket) or None (do not wait: for a berthd
    expected to fail, see wait_exit). args: more berthd options.
    listen: pass --listen (default True). pid1: run berthd as PID 1 of a
    new PID namespace (default), or as a plain process, a child subreaper.
    """

    def __init__(
        self,
        config=None,
        extra=None,
        config_file=None,
        token=None,
        wait="healthz",
        args=(),
        listen=True,
        debug=False,
        pid1=True,
    ):
        self.dir = tempfile.mkdtemp(prefix="berth-it-")
        self.state_dir = os.path.join(self.dir, "state")
        self.token_file = os.path.join(self.dir, "token")
        self.socket = os.path.join(self.state_dir, "berthd.sock")
        self.log_path = os.path.join(self.dir, "berthd.log")
        self.port = free_port()
        self.url = "ws://127.0.0.1:%d/v1" % self.port
        self.proc = None
        self.args = list(args)
        self.listen = listen
        self.debug = debug
        self.pid1 = pid1
        self.clients = []
        self._log_saved = None
        if _current is not None:
            _current.sandboxes.append(self)
        if config_file is not None:
            self.config_path = config_file
        else:
            text = minimal_config() if config is None else config
            if extra:
                text = text.rstrip("\n") + "\n\n" + extra
            self.config_path = os.path.join(self.dir, "berth.conf")
            with open(self.config_path, "w") as f:
                f.write(text)
        if token is not None:
            fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(token)
        try:
            self.start(wait)
        except BaseException:
            self.close()
            raise

    # -- lifetime

    def command(self):
        cmd = ["unshare", "-p", "-f", "--mount-proc"] if self.pid1 else []
        cmd += [BERTHD, "--config", self.config_path]
        if self.listen:
            cmd += ["--listen", "127.0.0.1:%d" % self.port]
        cmd += ["--token-file", self.token_file, "--state-dir", self.state_dir]
        if self.debug:
            cmd.append("--debug")
        return cmd + self.args

    def start(self, wait="healthz"):
        """Starts berthd (again) on this state directory."""
        expect(os.access(BERTHD, os.X_OK), "no berthd program at %s" % BERTHD)
        if wait == "healthz":
            expect(os.access(GATEWAY, os.X_OK), "no berth-gateway program at %s" % GATEWAY)
        with open(self.log_path, "ab") as log:
            log.write(("=== %s\n" % " ".join(self.command())).encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        if wait == "healthz":
            self.wait_healthy()
        elif wait == "socket":
            self.wait_socket()

    def _check_running(self, what):
        rc = self.proc.poll()
        if rc is not None:
            raise TestFailure("berthd exited (status %d) while waiting for %s" % (rc, what))

    def wait_socket(self, timeout=START_TIMEOUT):
        """Waits until berthd answers hello on its Unix socket."""

        def answers():
            self._check_running("its Unix socket")
            try:
                c = UnixClient(self.socket, hello=True, timeout=2)
            except (OSError, TestFailure):
                return False
            c.close()
            return True

        wait_for(answers, timeout, "berthd answering on %s" % self.socket, 0.02)

    def wait_healthy(self, timeout=START_TIMEOUT):
        """Waits until GET /healthz answers 200."""

        def healthy():
            self._check_running("/healthz")
            try:
                return http_get(self.port, "/healthz", timeout=2)[0] == 200
            except OSError:
                return False

        wait_for(healthy, timeout, "/healthz 200 on port %d" % self.port, 0.02)

    def wait_exit(self, timeout=10.0):
        """Waits for berthd to exit on its own; returns its status."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Timeout("berthd still runs after %.1f s" % timeout)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def in_namespace(self, pid):
        """Whether host pid runs in berthd's PID namespace."""
        try:
            return os.readlink("/proc/%d/ns/pid" % pid) == os.readlink("/proc/%d/ns/pid" % self.berthd_pid())
        except OSError:
            return False

    def host_pid(self, nspid, timeout=5.0):
        """The host pid of the process that is nspid in berthd's
        namespace."""

        def find():
            for pid in host_processes():
                v = proc_status(pid, "NSpid")
                if v and int(v.split()[-1]) == nspid and self.in_namespace(pid):
                    return pid
            return None

        return wait_for(find, timeout, "host pid of namespace pid %d" % nspid)

    def berthd_pid(self, timeout=5.0):
        """berthd's pid on the host: the child of unshare, once exec'd."""

        if not self.pid1:
            return self.proc.pid

        def find():
            self._check_running("berthd's pid")
            for pid in proc_children(self.proc.pid):
                argv = proc_argv(pid)
                if argv and os.path.basename(argv[0]) == "berthd":
                    return pid
            return None

        return wait_for(find, timeout, "berthd's host pid")

    def gateway_pid(self, timeout=5.0, other_than=None):
        """The gateway's pid on the host: berthd's child running
        berth-gateway (other than other_than, to wait for a restart)."""

        def find():
            for pid in proc_children(self.berthd_pid()):
                argv = proc_argv(pid)
                if argv and os.path.basename(argv[0]) == "berth-gateway" and pid != other_than and pid_alive(pid):
                    return pid
            return None

        return wait_for(find, timeout, "the gateway's host pid")

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends sig to berthd and waits for it to exit: returns its exit
        status (as unshare reports it). Kills everything on timeout."""
        if not self.running():
            return self.proc.returncode if self.proc else None
        pid = self.berthd_pid()
        os.kill(pid, sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Timeout("berthd did not exit within %.1f s of signal %d" % (timeout, sig))
        self._close_clients()
        return rc

    def restart(self, sig=signal.SIGTERM, wait="healthz"):
        """Stops berthd with sig and starts it again on the same state
        directory and port. Returns the stop's exit status."""
        rc = self.stop(sig)
        self.start(wait)
        return rc

    def kill(self):
        """SIGKILL to PID 1 of the namespace takes everything in it."""
        for pid in proc_children(self.proc.pid):
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def _close_clients(self):
        for c in self.clients:
            try:
                c.close()
            except Exception:
                pass
        self.clients = []

    def close(self):
        """Stops berthd (SIGTERM, then SIGKILL) and removes the directory.
        Keeps the log's text for diagnostics."""
        self._close_clients()
        if self.running():
            try:
                pid = self.berthd_pid(timeout=1)
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGTERM)
                self.proc.wait(8)
            except (TestFailure, ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()
        if os.path.isdir(self.dir):
            self._log_saved = self.log()
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- what berthd left

    def log(self):
        """berthd's (and its children's) stderr and stdout so far."""
        if self._log_saved is not None:
            return self._log_saved
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, n):
        return self.log().splitlines()[-n:]

    @property
    def token(self):
        """The token file's content, stripped."""
        with open(self.token_file) as f:
            return f.read().strip()

    def journal_bytes(self):
        """Every byte of every journal file, concatenated."""
        out = b""
        jdir = os.path.join(self.state_dir, "journal")
        for name in sorted(os.listdir(jdir)):
            with open(os.path.join(jdir, name), "rb") as f:
                out += f.read()
        return out

    # -- clients and shortcuts

    def unix(self, hello=True, timeout=5.0):
        c = UnixClient(self.socket, hello=hello, timeout=timeout)
        self.clients.append(c)
        return c

    def ws(self, token=None, hello=True, timeout=5.0, **kw):
        """A WebSocket client with this sandbox's token (unless given)."""
        c = WsClient(self.url, token=self.token if token is None else token, hello=hello, timeout=timeout, **kw)
        self.clients.append(c)
        return c

    def ws_retry(self, timeout=10.0, **kw):
        """ws(), retrying while the gateway is away (restarting, say)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.ws(**kw)
            except (OSError, TestFailure, websockets.WebSocketException) as e:
                if time.monotonic() > deadline:
                    raise Timeout("could not connect within %.1f s: %r" % (timeout, e))
                time.sleep(0.05)

    def state(self):
        c = UnixClient(self.socket)
        try:
            return c.call("state")
        finally:
            c.close()

    def events(self, from_seq=1, timeout=10.0):
        """The journal from from_seq up to its last seq at the time of the
        call, read over a fresh Unix connection."""
        c = UnixClient(self.socket, timeout=timeout)
        try:
            sub = c.subscribe(from_seq)
            last = sub["last_seq"]
            if last < max(from_seq, 1):
                return []
            return c.events_until(lambda ev: ev["seq"] >= last, timeout)
        finally:
            c.close()

    def wait_event(self, pred, timeout=10.0, from_seq=1):
        """Subscribes from from_seq and returns the first event for which
        pred holds (waiting for it to happen if need be)."""
        c = UnixClient(self.socket, timeout=timeout)
        try:
            c.subscribe(from_seq)
            return c.events_until(pred, timeout)[-1]
        finally:
            c.close()

    def metrics(self):
        """/metrics as {name: value} (label sets summed)."""
        status, _, body = http_get(self.port, "/metrics")
        expect_eq(status, 200, "GET /metrics status")
        return parse_metrics(body.decode())[0]


def generate_events(sb, n, peer="127.0.0.1:1", reason="invalid", batch=256):
    """Journals n auth.failed events quickly, through the local op the
    gateway uses, pipelined over one Unix connection. Returns the last
    seq journaled."""
    c = UnixClient(sb.socket, timeout=30)
    try:
        done = 0
        while done < n:
            args = {"peer": peer, "reason": reason}
            ids = [c.send_request("gateway.auth_failed", args) for _ in range(min(batch, n - done))]
            for msg_id in ids:
                m = c.response(msg_id)
                expect(m.get("ok"), "gateway.auth_failed failed: %r" % (m,))
            done += len(ids)
        return c.call("state")["last_seq"]
    finally:
        c.close()


class EventStream:
    """What one logical subscriber received, across connections: each
    event must carry the next seq (no gap, no duplicate, no events.gap)."""

    def __init__(self):
        self.events = []

    @property
    def next_seq(self):
        return self.events[-1]["seq"] + 1 if self.events else 1

    def take(self, ev):
        expect(ev["kind"] != "events.gap", "an events.gap: %r" % ev)
        expect_eq(ev["seq"], self.next_seq, "the seq after %d" % (self.next_seq - 1))
        self.events.append(ev)
        return ev

    def read(self, c, until_seq, timeout=10):
        """Reads from c until until_seq is in; Closed if c drops first."""
        deadline = time.monotonic() + timeout
        while self.next_seq <= until_seq:
            self.take(c.next_event(max(deadline - time.monotonic(), 0.01)))

    def drain(self, c, timeout=10):
        """Reads from c until it is closed; returns the close code."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                m = c.recv(max(deadline - time.monotonic(), 0.01))
            except Closed as e:
                return e.code
            if m.get("type") == "event":
                self.take(m)

    def follow(self, sb, until_seq, timeout=20):
        """Reads until until_seq as a real client does: reconnecting and
        resuming from the next seq whenever the connection ends."""
        deadline = time.monotonic() + timeout
        stuck = 0
        while self.next_seq <= until_seq:
            c = sb.ws_retry(max(deadline - time.monotonic(), 0.01))
            start = self.next_seq
            c.subscribe(start)
            closed = None
            try:
                self.read(c, until_seq, max(deadline - time.monotonic(), 0.01))
            except Closed as e:
                closed = e
            c.close()
            if closed is not None:
                note("resumed after close code %s at seq %d" % (closed.code, self.next_seq))
                stuck = stuck + 1 if self.next_seq == start else 0
                expect(
                    stuck < 5,
                    "no progress: closed %d times in a row (code %s) before the first event from seq %d"
                    % (stuck, closed.code, start),
                )

    def seqs(self):
        return [e["seq"] for e in self.events]


def pty_chunks(c, pty_id, until, timeout=10.0):
    """Reads c's data messages of stream pty/<pty_id> until one ends at
    or past offset until; returns them as [(offset, bytes)]. Other
    messages are kept, in order, for recv()."""
    stream = "pty/" + pty_id
    deadline = time.monotonic() + timeout
    chunks, others = [], []
    try:
        while not chunks or chunks[-1][0] + len(chunks[-1][1]) < until:
            left = deadline - time.monotonic()
            if left <= 0:
                have = chunks[-1][0] + len(chunks[-1][1]) if chunks else None
                raise Timeout("%s: offset %d not reached within %.1f s (at %s)" % (stream, until, timeout, have))
            m = c.recv(left)
            if m.get("type") == "data" and m.get("stream") == stream:
                # The end of the stream carries no bytes; an attachment
                # made after it starts afresh.
                if not m.get("eof"):
                    chunks.append((m["offset"], bytes(m["data"])))
            else:
                others.append(m)
    finally:
        c._pending.extendleft(reversed(others))
    return chunks


def pty_read(c, pty_id, offset, until, timeout=10.0):
    """The bytes of pty/<pty_id> from offset to until (or the end of the
    last chunk read, if further), read from c. The first chunk must start
    at offset and each next one where the last ended: no gap, no
    duplicate."""
    out = bytearray()
    if until <= offset:
        return bytes(out)
    for at, data in pty_chunks(c, pty_id, until, timeout):
        expect_eq(at, offset + len(out), "pty/%s: the offset of the chunk after %d bytes" % (pty_id, len(out)))
        out += data
    return bytes(out)


def read_to_eof(c, streams, offsets=None, timeout=30.0, on_bytes=None):
    """Reads c's data messages of the named streams until each has sent its
    end (eof). Each stream's chunks must follow on from offsets[name] (0 by
    default) without gap or duplicate. Returns {name: bytes}. on_bytes(name,
    total) is called after each chunk (a test may abort midway by raising).
    Other messages are kept, in order, for recv()."""
    offsets = dict.fromkeys(streams, 0) if offsets is None else dict(offsets)
    out = {name: bytearray() for name in streams}
    done = set()
    others = []
    deadline = time.monotonic() + timeout
    try:
        while len(done) < len(streams):
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("streams %s: no end within %.1f s (have %s)" % (
                    sorted(set(streams) - done), timeout, {k: len(v) for k, v in out.items()}))
            m = c.recv(left)
            name = m.get("stream")
            if m.get("type") != "data" or name not in out:
                others.append(m)
                continue
            expect_eq(m["offset"], offsets[name] + len(out[name]), "%s: the offset after %d bytes" % (name, len(out[name])))
            expect(name not in done, "%s: data after its end" % name)
            out[name] += m["data"]
            if m.get("eof"):
                done.add(name)
            if on_bytes is not None:
                on_bytes(name, len(out[name]))
    finally:
        c._pending.extendleft(reversed(others))
    return {k: bytes(v) for k, v in out.items()}


def event_kinds(events):
    return [ev["kind"] for ev in events]


def expect_contiguous(seqs, first, last, what="seqs"):
    """seqs must be exactly first..last, in order, each once."""
    if seqs == list(range(first, last + 1)):
        return
    seen, dups = set(), []
    for s in seqs:
        if s in seen:
            dups.append(s)
        seen.add(s)
    missing = sorted(set(range(first, last + 1)) - seen)
    disorder = [(a, b) for a, b in zip(seqs, seqs[1:]) if b <= a]
    raise TestFailure(
        "%s are not exactly %d..%d: %d received, missing %s, duplicated %s, out of order at %s"
        % (what, first, last, len(seqs), _short(missing, 200), _short(dups, 200), _short(disorder[:10], 200))
    )


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


class Spawned:
    """A program running beside the test, its stdout read line by line
    (stderr kept for diagnostics). Killed at the end of the case if the
    case did not stop it."""

    def __init__(self, argv, env=None):
        self.argv = argv
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self._lines = deque()
        self._partial = b""
        self._err = b""
        self._eof = False
        _track_closer(self.kill)

    def _pump(self, timeout):
        """Reads what stdout and stderr have, waiting up to timeout."""
        fds = [f for f in (self.proc.stdout, self.proc.stderr) if not f.closed]
        if not fds:
            time.sleep(timeout)
            return
        ready, _, _ = select.select(fds, [], [], timeout)
        for f in ready:
            chunk = os.read(f.fileno(), 65536)
            if f is self.proc.stderr:
                self._err += chunk
                if not chunk:
                    f.close()
                continue
            if not chunk:
                self._eof = True
                f.close()
                if self._partial:
                    self._lines.append(self._partial.decode(errors="replace"))
                    self._partial = b""
                continue
            *whole, self._partial = (self._partial + chunk).split(b"\n")
            self._lines.extend(w.decode(errors="replace") for w in whole)

    def line(self, timeout=10.0):
        """The next line of stdout (without its newline); Timeout, or
        TestFailure at the end of the output."""
        deadline = time.monotonic() + timeout
        while not self._lines:
            if self._eof:
                raise TestFailure("%s ended its output (stderr: %r)" % (self.argv[0], self.stderr()))
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("no line from %s within %.1f s (stderr: %r)" % (self.argv[0], timeout, self.stderr()))
            self._pump(left)
        return self._lines.popleft()

    def stderr(self):
        return self._err.decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends sig and waits: returns the exit status."""
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Timeout("%s did not exit within %.1f s of signal %d" % (self.argv[0], timeout, sig))
        while not (self.proc.stderr.closed and self.proc.stdout.closed):
            self._pump(0.1)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if not f.closed:
                f.close()


def run_program(argv, timeout=15.0, input=None, env=None):
    """Runs a program to completion: (status, stdout str, stderr str)."""
    try:
        p = subprocess.run(
            argv,
            input=input,
            capture_output=True,
            timeout=timeout,
            env=env,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise Timeout("%s did not finish within %.1f s (stderr: %r)" % (" ".join(argv), timeout, e.stderr))
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


# ---------------------------------------------------------------------
# Desktops: Xvfb and berth-desktop under berthd, and the berth CLI


DESKTOP = os.path.join(BUILDDIR, "berth-desktop")
XPAINT = os.path.join(BUILDDIR, "tests", "x11", "xpaint")
XEVLOG = os.path.join(BUILDDIR, "tests", "x11", "xevlog")
GREY = (0x20, 0x20, 0x20)


def need(*programs):
    """The programs are part of ./dev test's install: missing is a failure."""
    for p in programs:
        expect(shutil.which(p) is not None, "%s is not installed (./dev test installs it)" % p)


def forget_display(n):
    """What an X server killed with its namespace leaves behind."""
    for path in ("%s/X%d" % (X11_DIR, n), "/tmp/.X%d-lock" % n):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def hexcolor(c):
    return "#%02x%02x%02x" % c


def xvfb_service(display, width=1280, height=800, backoff_ms=None, own_ipc=False):
    """The config of a service "xvfb" running Xvfb on display. backoff_ms
    (min, max) keeps it down a while after a kill, so that the outage can
    be seen. An X server in an IPC namespace of its own (own_ipc) cannot
    attach a client's shared memory: as if it ran on another host."""
    text = (
        "[service xvfb]\ncommand = %sXvfb :%d -screen 0 %dx%dx24 -nolisten tcp\n"
        "ready = exec /usr/bin/xdpyinfo -display :%d\nrequired = no\n"
        % ("unshare --ipc " if own_ipc else "", display, width, height, display)
    )
    if backoff_ms is not None:
        text += "backoff_min_ms = %d\nbackoff_max_ms = %d\nmax_deaths = 50\n" % backoff_ms
    return text + "\n"


def desktop_service(display, debug=True, after="xvfb", backoff_ms=None):
    """The config of a service "desktop" running berth-desktop on display
    (after the service named after, if any)."""
    text = "[service desktop]\ncommand = %s --display :%d%s\n" % (DESKTOP, display, " --debug" if debug else "")
    if after:
        text += "after = %s\n" % after
    text += "required = no\n"
    if backoff_ms is not None:
        text += "backoff_min_ms = %d\nbackoff_max_ms = %d\n" % backoff_ms
    return text + "\n"


class Desk:
    """A free display number and the config that runs Xvfb and
    berth-desktop under berthd (no window manager); with xfce_check, the
    xfce check that berth-desktop reports to. The test's sandbox runs
    config(); close() forgets the display."""

    def __init__(self, width=1280, height=800, xvfb_backoff_ms=None, own_ipc=False, desktop_backoff_ms=None,
                 debug=True, xfce_check=True):
        self.display = free_display()
        self.env = dict(os.environ, DISPLAY=":%d" % self.display)
        self.width, self.height = width, height
        self.xvfb_backoff_ms, self.own_ipc = xvfb_backoff_ms, own_ipc
        self.desktop_backoff_ms, self.debug, self.xfce_check = desktop_backoff_ms, debug, xfce_check

    def config(self):
        d = self.display
        text = xvfb_service(d, self.width, self.height, self.xvfb_backoff_ms, self.own_ipc)
        if self.xfce_check:
            text += "[check xfce]\nready = report\n\n"
        return text + desktop_service(d, self.debug, backoff_ms=self.desktop_backoff_ms)

    def xdotool(self, *args):
        """Runs xdotool on the display; its stdout."""
        status, out, err = run_program(["xdotool"] + list(args), env=self.env)
        expect_eq(status, 0, "xdotool %s (stderr %r)" % (" ".join(args), err))
        return out

    def close(self):
        forget_display(self.display)


class DesktopSandbox(Desk):
    """berthd (with its gateway) running Xvfb on a free display and
    berth-desktop as a service; entered once berth desktop info answers,
    as the sandbox."""

    def __init__(self, width, height, programs=("Xvfb", "xdpyinfo")):
        need(*programs)
        super().__init__(width, height, debug=False, xfce_check=False)
        self.sb = None

    def __enter__(self):
        try:
            self.sb = Sandbox(extra=self.config())
            last = []

            def serving():
                rc, _, err = run_program([CLI, "--socket", self.sb.socket, "desktop", "info"])
                last[:] = [err.strip()]
                return rc == 0

            try:
                wait_for(serving, 30, "berth desktop info answers", 0.2)
            finally:
                note("berth desktop info, last: %s" % last)
        except BaseException:
            self.__exit__()
            raise
        return self.sb

    def __exit__(self, *exc):
        if self.sb is not None:
            self.sb.close()
        self.close()


def host_pid(sb, argv0, other_than=None, timeout=30.0):
    """The host pid of berthd's child running argv0 (another one than
    other_than, to wait for a restart)."""

    def find():
        for pid in proc_children(sb.berthd_pid()):
            argv = proc_argv(pid)
            if argv and os.path.basename(argv[0]) == argv0 and pid != other_than and pid_alive(pid):
                return pid
        return None

    return wait_for(find, timeout, "%s running under berthd" % argv0, 0.05)


def served(c, timeout=30.0):
    """Waits until berth-desktop serves the ops and is connected to X:
    desktop.info's result."""

    def answers():
        r = c.request("desktop.info")
        if not r["ok"]:
            note("desktop.info: %s" % r["error"])
        return r["result"] if r["ok"] else None

    return wait_for(answers, timeout, "desktop.info answering", 0.1)


class Paint:
    """xpaint on desk's display: a window at geometry (x, y, w, h) showing
    rects [((x, y, w, h) in the window, colour)] or an image; command()
    waits for the "ok" that says the server has drawn."""

    def __init__(self, desk, geometry, rects=(), title="berth test", klass=None, image=None):
        x, y, w, h = geometry
        argv = [XPAINT, "-display", ":%d" % desk.display, "-geometry", "%dx%d+%d+%d" % (w, h, x, y), "-title", title]
        if klass is not None:
            argv += ["-class", klass]
        argv += ["-bg", hexcolor(GREY)]
        if image is not None:
            argv += ["-image", image]
        argv += ["%d,%d,%d,%d,%s" % (rx, ry, rw, rh, hexcolor(c)) for (rx, ry, rw, rh), c in rects]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""
        line = self.line()
        expect(line.startswith("ready 0x"), "xpaint said %r" % line)
        self.id = int(line.split()[1], 16)

    def line(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TestFailure("xpaint said nothing within %.1f s" % timeout)
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                raise TestFailure("xpaint ended: %r" % self.proc.stderr.read().decode(errors="replace"))
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def command(self, text):
        self.proc.stdin.write((text + "\n").encode())
        self.proc.stdin.flush()
        expect_eq(self.line(), "ok", "xpaint's answer to %r" % text)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


def conn_args(sb, transport):
    """The berth CLI's options to reach sb over transport ("unix", "ws")."""
    if transport == "unix":
        return ["--socket", sb.socket]
    return ["--url", sb.url, "--token-file", sb.token_file]


def berth(sb, transport, *args, input=None, timeout=60, text=False):
    """Runs berth ARGS against sb: (status, stdout, stderr str); stdout is
    bytes, or str with text."""
    argv = [CLI] + conn_args(sb, transport) + list(args)
    try:
        p = subprocess.run(
            argv,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as e:
        raise TestFailure("%s did not finish within %d s (stderr: %r)" % (" ".join(argv), timeout, e.stderr))
    err = p.stderr.decode(errors="replace")
    shown = p.stdout[:300] if not p.stdout.startswith((b"\x89PNG", b"\xff\xd8")) else b"<image>"
    note("%s (%s) -> %d\nstdout: %r\nstderr: %s" % (" ".join(args), transport, p.returncode, shown, err))
    return p.returncode, p.stdout.decode(errors="replace") if text else p.stdout, err


def text_ok(sb, transport, *args, **kw):
    """berth ARGS must succeed: its stdout as text."""
    rc, out, err = berth(sb, transport, *args, text=True, **kw)
    expect_eq(rc, 0, "%s (%s): exit status (stderr %r)" % (" ".join(args), transport, err))
    return out
