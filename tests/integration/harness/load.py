"""Many clients at once, for the load and chaos tests: AsyncClient, a
berth.v1 WebSocket client on a shared asyncio loop (hundreds in one
process) that checks every event and data chunk as it arrives;
Sampler, the peak memory of a process read from /proc; the digest of a
sequence of events; and the shipped desktop image on free ports."""

import asyncio
import hashlib
import os
import threading
import time

import msgpack
import websockets

from .clients import MAX_MSG, VERSION, UnixClient, http_get
from .procs import free_display, free_port
from .runner import TestFailure, Timeout, expect
from .sandbox import STATE_MARK


def event_digest(events):
    """SHA-256 of the sequence of (seq, kind): equal digests mean the
    same events in the same order."""
    h = hashlib.sha256()
    for seq, kind in events:
        h.update(b"%d %s\n" % (seq, kind.encode()))
    return h.hexdigest()


class AsyncClient:
    """One berth.v1 connection through the gateway on the running loop.
    A task reads everything as it comes: responses resolve request()'s
    futures; events must follow each other by seq (a gap, a duplicate or
    an events.gap is recorded in errors); data chunks must follow on from
    the stream's last offset. What was received is kept by stream, so a
    test compares it with what was produced."""

    def __init__(self, url, token, name="", local_host=None):
        self.url, self.token, self.name = url, token, name
        self.local_host = local_host  # the loopback address to connect from
        self.ws = None
        self.next_id = 1
        self.waiting = {}
        self.events = []  # (seq, kind)
        self.first_seq = 1  # the seq of the first event expected
        self.streams = {}  # stream id -> bytearray
        self.eof = set()
        self.errors = []
        self.closed = None  # the close code once the connection ended
        self.changed = asyncio.Event()
        self._reader = None

    @property
    def next_seq(self):
        return self.events[-1][0] + 1 if self.events else self.first_seq

    async def connect(self, timeout=10.0):
        self.closed = None
        self.ws = await websockets.connect(
            self.url,
            extra_headers={"Authorization": "Bearer " + self.token},
            subprotocols=[VERSION],
            max_size=4 * MAX_MSG,
            compression=None,
            ping_interval=None,
            close_timeout=2,
            open_timeout=timeout,
            **({"local_addr": (self.local_host, 0)} if self.local_host else {}),
        )
        self._reader = asyncio.ensure_future(self._read())
        await self.request("hello", {"version": VERSION, "client": "berth-load/1"}, timeout)

    async def _read(self):
        code = None
        try:
            async for raw in self.ws:
                self._take(msgpack.unpackb(raw, raw=False, strict_map_key=False))
        except websockets.ConnectionClosed as e:
            code = e.rcvd.code if e.rcvd else None
        except Exception as e:  # a malformed message is a finding, not a crash
            self.errors.append("%s: reading: %r" % (self.name, e))
        if self.ws.close_rcvd is not None:
            code = self.ws.close_rcvd.code
        self.closed = code if code is not None else 1006
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(TestFailure("%s: closed (code %s) before the response" % (self.name, code)))
        self.waiting.clear()
        self.changed.set()

    def _take(self, m):
        t = m.get("type")
        if t == "response":
            fut = self.waiting.pop(m.get("id"), None)
            if fut is not None and not fut.done():
                fut.set_result(m)
        elif t == "event":
            if m["kind"] == "events.gap" or m["seq"] != self.next_seq:
                self.errors.append("%s: event seq %d (%s) where %d was next" % (self.name, m["seq"], m["kind"], self.next_seq))
            else:
                self.events.append((m["seq"], m["kind"]))
        elif t == "data":
            name = m["stream"]
            buf = self.streams.setdefault(name, bytearray())
            if m["offset"] != len(buf):
                self.errors.append("%s: %s chunk at offset %d where %d was next" % (self.name, name, m["offset"], len(buf)))
            elif name in self.eof:
                self.errors.append("%s: %s data after its end" % (self.name, name))
            else:
                buf += m["data"]
                if m.get("eof"):
                    self.eof.add(name)
        self.changed.set()

    async def request(self, op, args=None, timeout=10.0):
        """Sends op and waits for its response; returns the result, or
        raises TestFailure with the error."""
        msg_id = self.next_id
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[msg_id] = fut
        await self.ws.send(msgpack.packb({"type": "request", "id": msg_id, "op": op, "args": args or {}}, use_bin_type=True))
        try:
            m = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise Timeout("%s: no response to %s within %.1f s" % (self.name, op, timeout))
        if not m.get("ok"):
            raise TestFailure("%s: %s: %r" % (self.name, op, m.get("error")))
        return m.get("result")

    async def wait(self, pred, timeout, what):
        """Waits until pred() holds: checked after every message, and
        twice a second for what does not come from this connection."""
        deadline = time.monotonic() + timeout
        while not pred():
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("%s: %s: not within %.1f s" % (self.name, what, timeout))
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))
            except asyncio.TimeoutError:
                pass

    async def close(self):
        if self.ws is not None:
            try:
                await asyncio.wait_for(self.ws.close(), 3)
            except Exception:
                pass
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except BaseException:
                pass


def vm_kib(pid, field):
    """A VmRSS/VmHWM-like line of /proc/pid/status in KiB, None if gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


class Ticker:
    """Calls self.tick() every self.interval seconds (from one call's start
    to the next), in a thread, from start() until stop(), which waits
    join_s for the last call."""

    join_s = 5

    def start(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            t0 = time.monotonic()
            self.tick()
            self._stop.wait(max(self.interval - (time.monotonic() - t0), 0))

    def stop(self):
        self._stop.set()
        self._thread.join(self.join_s)


class Sampler(Ticker):
    """Reads VmRSS and VmHWM of named pids every interval seconds, in a
    thread, keeping each one's peak, until stop()."""

    def __init__(self, pids, interval=0.1):
        self.pids = dict(pids)
        self.interval = interval
        self.peak_rss = dict.fromkeys(self.pids, 0)
        self.hwm = dict.fromkeys(self.pids, 0)
        self.first = {name: vm_kib(pid, "VmRSS") or 0 for name, pid in self.pids.items()}
        self.start()

    def tick(self):
        for name, pid in self.pids.items():
            rss, hwm = vm_kib(pid, "VmRSS"), vm_kib(pid, "VmHWM")
            if rss is not None:
                self.peak_rss[name] = max(self.peak_rss[name], rss)
                self.hwm[name] = max(self.hwm[name], hwm)


class HealthPoller(Ticker):
    """GET /healthz every interval seconds, in a thread, until stop():
    counts the answers by status, keeps the time (monotonic) and reason
    of each 503, and the polls that got no answer within timeout (an
    error, or too slow)."""

    def __init__(self, port, interval=0.1, timeout=2.0):
        self.port, self.interval, self.timeout = port, interval, timeout
        self.status = {}
        self.failures = []
        self.unavailable = []  # (monotonic time asked, reason)
        self.slowest = 0.0
        self.join_s = timeout + 3
        self.start()

    def tick(self):
        t0 = time.monotonic()
        try:
            st, _, body = http_get(self.port, "/healthz", timeout=self.timeout)
            took = time.monotonic() - t0
            self.slowest = max(self.slowest, took)
            if took > self.timeout:
                self.failures.append("answered %d after %.2f s" % (st, took))
            if st == 503:
                self.unavailable.append((t0, body.decode(errors="replace")))
            self.status[st] = self.status.get(st, 0) + 1
        except OSError as e:
            self.failures.append("%r after %.2f s" % (e, time.monotonic() - t0))

    def polls(self):
        return sum(self.status.values()) + len(self.failures)


class Pinger(Ticker):
    """ping on a Unix connection of its own to berthd every interval
    seconds, in a thread, until stop(): what berthd itself answers,
    beside what /healthz says of it. Keeps the slowest answer and the
    spans (monotonic start, end) of the pings slower than stall."""

    def __init__(self, socket_path, interval=0.1, stall=2.5):
        self.interval, self.stall = interval, stall
        self.client = UnixClient(socket_path, timeout=30)
        self.count = 0
        self.slowest = 0.0
        self.stalls = []
        self.errors = []
        self.join_s = 35
        self.start()

    def tick(self):
        t0 = time.monotonic()
        try:
            self.client.call("ping")
        except Exception as e:  # the test reports it, the thread goes on
            self.errors.append(repr(e))
        t1 = time.monotonic()
        self.count += 1
        self.slowest = max(self.slowest, t1 - t0)
        if t1 - t0 >= self.stall:
            self.stalls.append((t0, t1))

    def stop(self):
        Ticker.stop(self)
        self.client.close()

    def answering(self, t, window):
        """Whether berthd answered throughout [t - window, t]: no ping of
        this pinger was outstanding past stall in it."""
        return not any(a <= t and b >= t - window for a, b in self.stalls)


class BigEvents(Ticker):
    """Journals events of about size bytes each, every interval seconds,
    in a thread, until stop(): proc.started carries the command's argv,
    the largest caller-supplied part of any event (a command of
    /bin/true whose arguments are each under the kernel's 128 KiB cap
    on one argument)."""

    ARG = 131000

    def __init__(self, socket_path, size=1 << 20, interval=1.0):
        self.argv = ["/bin/true"] + ["x" * self.ARG] * max(1, size // self.ARG)
        self.interval = interval
        self.client = UnixClient(socket_path, timeout=30)
        self.started = 0
        self.errors = []
        self.join_s = 35
        self.start()

    def tick(self):
        try:
            self.client.call("proc.start", {"argv": self.argv})
            self.started += 1
        except Exception as e:  # the test reports it, the thread goes on
            self.errors.append(repr(e))

    def stop(self):
        Ticker.stop(self)
        self.client.close()

    def bytes_each(self):
        return sum(len(a) for a in self.argv)


def shipped_desktop_config(srcdir):
    """images/desktop/berth.conf with a free display and free DevTools
    ports, its state under the sandbox's directory: (text, display, cdp
    port, relay port)."""
    display, cdp, relay = free_display(), free_port(), free_port()
    with open(os.path.join(srcdir, "images", "desktop", "berth.conf")) as f:
        text = f.read()
    subs = [
        ("/var/lib/berth/", STATE_MARK + "/"),
        ("127.0.0.1:9222", "127.0.0.1:%d" % cdp),
        ("BERTH_CDP_PORT=9222", "BERTH_CDP_PORT=%d" % cdp),
        ("127.0.0.1:9223", "127.0.0.1:%d" % relay),
        ("berth-xserver :1 ", "berth-xserver :%d " % display),
        ("--display :1", "--display :%d" % display),
        ("DISPLAY=:1", "DISPLAY=:%d" % display),
    ]
    for old, new in subs:
        expect(old in text, "the desktop config no longer has %r" % old)
        text = text.replace(old, new)
    return text, display, cdp, relay
