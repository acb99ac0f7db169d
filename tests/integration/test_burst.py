"""A burst of WebSocket clients at once: every one is let in while berthd
is alive, however many arrive together (berthd listens with the
system's largest backlog, and the gateway retries a connect to berthd
that would block); a client the gateway really cannot put through to
berthd is closed with 1011 and told to retry."""

import asyncio
import errno
import os
import signal
import socket
import sys
import time

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import VERSION, Sandbox, case, expect, expect_eq, note, run  # noqa: E402
from harness.load import AsyncClient  # noqa: E402

BURST = 300
# The clients come from this many loopback addresses: one address may
# hold at most peer_max (256) connections before their upgrade, a limit
# of its own that this burst is not about.
SOURCES = 3
# Each client must be through hello within this long of the burst's
# start: the 300 upgrades each wait for one token check on berthd.
BURST_TIMEOUT = 90.0


async def burst(sb):
    clients = [AsyncClient(sb.url, sb.token, "client %d" % i, "127.0.0.%d" % (1 + i % SOURCES)) for i in range(BURST)]
    t0 = time.monotonic()
    try:
        results = await asyncio.gather(*(c.connect(timeout=BURST_TIMEOUT) for c in clients), return_exceptions=True)
        took = time.monotonic() - t0
        # Every client is still connected once all are in: none was let
        # in and then closed.
        closed = [(c.name, c.closed) for c in clients if c.closed is not None]
        return results, closed, took
    finally:
        await asyncio.gather(*(c.close() for c in clients))


@case("%d WebSocket clients connecting at once: none gets 1011, every one completes hello" % BURST, timeout=180)
def burst_all_in():
    with Sandbox() as sb:
        results, closed, took = asyncio.run(burst(sb))
        failed = [(i, r) for i, r in enumerate(results) if isinstance(r, BaseException)]
        note("%d clients through hello in %.1f s; %d failed" % (BURST - len(failed), took, len(failed)))
        expect(not failed, "%d of %d clients failed, the first: %s" % (len(failed), BURST, [(i, repr(r)) for i, r in failed[:5]]))
        expect(not closed, "clients closed after hello: %s" % closed[:5])
        expect_eq(sb.metrics()["berth_gateway_connections_total"], BURST, "connections the gateway accepted")
        sb.ws().call("ping")


@case("berthd's socket takes as many pending connects as the system allows, not 128")
def backlog_is_the_systems():
    with open("/proc/sys/net/core/somaxconn") as f:
        somaxconn = int(f.read())
    want = min(BURST, somaxconn)
    with Sandbox() as sb:
        pid = sb.berthd_pid()
        socks = []
        # Stopped, berthd accepts nothing: every connect stays pending in
        # the backlog, and one past it fails with EAGAIN.
        os.kill(pid, signal.SIGSTOP)
        try:
            for _ in range(want):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                socks.append(s)
                s.setblocking(False)
                err = s.connect_ex(sb.socket)
                if err != 0:
                    break
            note("%d pending connects taken (net.core.somaxconn %d); the last said %s" % (len(socks), somaxconn, os.strerror(err)))
            expect_eq(err, 0, "connect %d of %d pending (%s)" % (len(socks), want, os.strerror(err)))
        finally:
            os.kill(pid, signal.SIGCONT)
            for s in socks:
                s.close()
        sb.unix().call("ping")


async def closed_with(sb):
    """Connects a client and returns the close frame the gateway sent."""
    ws = await websockets.connect(
        sb.url,
        extra_headers={"Authorization": "Bearer " + sb.token},
        subprotocols=[VERSION],
        open_timeout=10,
        close_timeout=2,
        ping_interval=None,
    )
    try:
        await asyncio.wait_for(ws.wait_closed(), 10)
    finally:
        await ws.close()
    return ws.close_rcvd


class FullBacklog:
    """In the place of berthd's socket, for as long as it is entered, a
    socket whose backlog is full: nobody accepts on it, and one pending
    connect fills its backlog of 0, so the gateway's next connect fails
    with EAGAIN. put_back() moves berthd's socket back in its place
    (over this one), as if berthd had caught up."""

    def __init__(self, path):
        self.path, self.aside = path, path + ".aside"

    def __enter__(self):
        os.rename(self.path, self.aside)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        os.chmod(self.path, 0o666)
        self.sock.listen(0)
        self.filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.filler.connect(self.path)
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.setblocking(False)
        err = probe.connect_ex(self.path)
        probe.close()
        expect_eq(err, errno.EAGAIN, "a connect to the full socket (%s)" % os.strerror(err))
        return self

    def put_back(self):
        if os.path.exists(self.aside):
            os.rename(self.aside, self.path)

    def __exit__(self, *exc):
        self.put_back()
        self.filler.close()
        self.sock.close()


async def connect_while_full(sb, full, put_back_after):
    """A client connecting while berthd's backlog is full, which it is no
    more after put_back_after seconds: (seconds to hello, or the close
    code and reason it got instead)."""
    c = AsyncClient(sb.url, sb.token, "waiting client")
    t0 = time.monotonic()

    async def put_back():
        await asyncio.sleep(put_back_after)
        full.put_back()

    task = asyncio.ensure_future(put_back())
    try:
        await c.connect(timeout=15)
        return time.monotonic() - t0, None
    except Exception:
        await c.wait(lambda: c.closed is not None, 5, "the close")
        rcvd = c.ws.close_rcvd
        return time.monotonic() - t0, (rcvd.code, rcvd.reason) if rcvd else (c.closed, "")
    finally:
        task.cancel()
        await c.close()


@case("a connect that finds berthd's backlog full is retried: the client waits and gets in; past 5 s, 1011 and retry")
def backlog_full_retried():
    with Sandbox() as sb:
        sb.ws().call("ping")
        retries = sb.metrics()["berth_gateway_upstream_connect_retries_total"]
        with FullBacklog(sb.socket) as full:
            took, closed = asyncio.run(connect_while_full(sb, full, 0.7))
        note("in after %.2f s" % took)
        expect(closed is None, "the client was closed %r instead of waiting" % (closed,))
        expect(took >= 0.6, "the client got in after %.2f s, before berthd's socket was back" % took)
        expect(sb.metrics()["berth_gateway_upstream_connect_retries_total"] > retries, "no retry was counted")

        with FullBacklog(sb.socket) as full:
            took, closed = asyncio.run(connect_while_full(sb, full, 60))
        note("closed %r after %.2f s" % (closed, took))
        expect(closed is not None, "the client got in with berthd's backlog full")
        expect_eq(closed[0], 1011, "close code")
        expect("retry" in closed[1], "the close reason %r says nothing of retrying" % closed[1])
        expect(4.5 <= took <= 9, "1011 came after %.2f s; the deadline is 5 s" % took)
        sb.ws().call("ping")


@case("a client whose connection to berthd cannot be made: 1011, and the reason says to retry")
def unavailable_says_retry():
    with Sandbox() as sb:
        # The token check keeps its own connection to berthd: made now,
        # it outlives the socket's move.
        sb.ws().call("ping")
        aside = sb.socket + ".aside"
        os.rename(sb.socket, aside)
        try:
            rcvd = asyncio.run(closed_with(sb))
        finally:
            os.rename(aside, sb.socket)
        expect(rcvd is not None, "the gateway closed without a close frame")
        note("close %d %r" % (rcvd.code, rcvd.reason))
        expect_eq(rcvd.code, 1011, "close code")
        expect("retry" in rcvd.reason, "the close reason %r says nothing of retrying" % rcvd.reason)
        # Back in place, the socket takes clients again.
        sb.ws().call("ping")


run()
