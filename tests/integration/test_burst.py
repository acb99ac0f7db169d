"""A burst of WebSocket clients at once: every one is let in while berthd
is alive, however many arrive together (berthd listens with the
system's largest backlog, and the gateway retries a connect to berthd
that would block); a client the gateway really cannot put through to
berthd is closed with 1011 and told to retry."""

import asyncio
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
