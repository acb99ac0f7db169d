"""Load: 200 WebSocket clients follow the events from seq 1 while 50 of
them each read a PTY session that floods a known stream and 20 others
each read a command that streams one, and one more client stops reading
entirely. Every reader gets every event once and every byte of its
stream (compared by hash) while the stalled one still reads nothing,
and none of them is dropped; the stalled one is dropped and resumes
exactly from its last seq; berthd's and the gateway's peak memory stay
bounded; /healthz answers every poll within 2 s.

Sizes (chosen to keep the case near a minute on 2 busy cores under
ASan): 200 readers; 50 PTYs of `seq 1 60000` (about 400 KB each); 20
commands of `seq 1 100000` (about 590 KB each); auth.failed events in
batches of 500 until the stalled client is dropped (at least 3000);
client_queue 256K, so that the stalled client fills it with a few
thousand events, and client_stall_ms 1000, after which it is dropped.

The second case pours events of 1 MB (proc.started of a command whose
arguments are 1 MB, the largest caller-supplied part of any event) at
1 MB/s into the journal while 20 clients follow every event and 10 of
them read a flooding PTY each, and samples /healthz every 100 ms beside
a ping of berthd on a Unix connection of its own: /healthz is never 503
while berthd answers. It has fewer followers than the first: each
event, 1 MB, goes to every one of them, and 200 would be 200 MB/s
through one Python process."""

import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    EventStream,
    Sandbox,
    UnixClient,
    case,
    expect,
    expect_contiguous,
    expect_eq,
    generate_events,
    raw_ws_socket,
    run,
    scratch,
)
from harness.load import AsyncClient, BigEvents, HealthPoller, Pinger, Sampler, event_digest  # noqa: E402

READERS = 200
PTYS = 50
PROCS = 20
PTY_LINES = 60000
PROC_LINES = 100000
BATCH = 500
MIN_EVENTS = 3000
MAX_EVENTS = 40000
CLIENT_QUEUE = 256 * 1024
# A command's ring: berthd pauses it half a ring past what its reader
# acknowledged, so at most 64 KiB of it is ever in flight, well inside
# client_queue: a reader that keeps up is never dropped for it.
PROC_RING = 128 * 1024
PROC_ACK_EVERY = 32 * 1024

# How much each of berthd and the gateway may grow, in peak resident
# memory, over what it had before the load. By design they hold bounded
# queues: the gateway at most client_queue per client (201 x 256 KiB,
# 50 MiB), berthd at most ~1 MiB of events per subscriber that lags, and
# the readers here keep up (about 50 MiB each is what a run shows). What
# passes through each is about 120 MiB (200 x the journal, the floods
# and the commands): memory that grows with the traffic instead of with
# the bounds (a leak, a queue without bound) passes this.
RSS_GROWTH_KIB = 128 * 1024
# ASan keeps freed memory in a quarantine (256 MiB by default), which
# would count as the programs' own: a small one makes the peak theirs.
ASAN_QUARANTINE = "quarantine_size_mb=4"


def pty_expected():
    return "".join("%d\r\n" % i for i in range(1, PTY_LINES + 1)).encode()


def proc_expected():
    return "".join("%d\n" % i for i in range(1, PROC_LINES + 1)).encode()


def gated(gate, lines):
    """A shell command that waits for the file gate, then prints 1..lines."""
    return ["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; exec seq 1 %d" % (gate, lines)]


async def read_acked(c, proc_id):
    """Acknowledges c's stdout of proc_id as it arrives, every
    PROC_ACK_EVERY bytes, until its end."""
    name = "proc/%s/stdout" % proc_id
    acked = 0
    while name not in c.eof and c.closed is None:
        have = len(c.streams.get(name, b""))
        if have - acked >= PROC_ACK_EVERY:
            await c.request("proc.ack", {"id": proc_id, "stdout": have})
            acked = have
        await c.wait(
            lambda: name in c.eof or c.closed is not None or len(c.streams.get(name, b"")) - acked >= PROC_ACK_EVERY,
            60,
            "%s past %d" % (name, acked + PROC_ACK_EVERY),
        )


async def load_phase(sb, pty_ids, gate, stats):
    readers = [AsyncClient(sb.url, sb.token, "reader %d" % i) for i in range(READERS)]
    loop = asyncio.get_running_loop()
    t0 = time.monotonic()
    try:
        for i in range(0, READERS, 25):
            await asyncio.gather(*(c.connect() for c in readers[i : i + 25]))
        await asyncio.gather(*(c.request("events.subscribe", {"from_seq": 1}) for c in readers))
        stats["connect_s"] = time.monotonic() - t0
        for c, pty_id in zip(readers, pty_ids):
            await c.request("pty.attach", {"id": pty_id, "from_offset": 0})
        procs = []
        for c in readers[PTYS : PTYS + PROCS]:
            r = await c.request("proc.start", {"argv": gated(gate, PROC_LINES), "attach": True, "ack": True, "ring": PROC_RING})
            procs.append((c, r["id"]))
        ackers = [asyncio.ensure_future(read_acked(c, pid)) for c, pid in procs]

        t0 = time.monotonic()
        with open(gate, "w"):
            pass
        generated, drops = 0, 0
        while generated < MAX_EVENTS and (drops < 1 or generated < MIN_EVENTS):
            last = await loop.run_in_executor(None, generate_events, sb, BATCH, "127.0.0.1:" + "7" * 40)
            generated += BATCH
            await asyncio.gather(*(c.wait(lambda c=c: c.next_seq > last or c.closed is not None, 60, "seq %d" % last) for c in readers))
            drops = (await loop.run_in_executor(None, sb.metrics))["berth_gateway_slow_consumer_drops_total"]
        stats["generated"], stats["drops_seen"] = generated, drops

        await asyncio.gather(*ackers)
        for c, pty_id in zip(readers, pty_ids):
            await c.wait(lambda c=c, s="pty/" + pty_id: s in c.eof or c.closed is not None, 60, "the end of pty/" + pty_id)
        final = (await loop.run_in_executor(None, sb.state))["last_seq"]
        await asyncio.gather(*(c.wait(lambda c=c: c.next_seq > final or c.closed is not None, 60, "seq %d" % final) for c in readers))
        stats["flood_s"] = time.monotonic() - t0
        stats["final"] = final
        stats["readers"] = [(c.name, c.closed, list(c.errors), list(c.events), {k: bytes(v) for k, v in c.streams.items()}) for c in readers]
        stats["procs"] = [(c.name, "proc/%s/stdout" % pid) for c, pid in procs]
    finally:
        await asyncio.gather(*(c.close() for c in readers))


@case("200 followers, 50 flooding PTYs, 20 streaming commands, one stalled client", timeout=240)
def load():
    os.environ["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), ASAN_QUARANTINE]))
    with Sandbox(extra="[gateway]\nclient_queue = %dK\nclient_stall_ms = 1000\n" % (CLIENT_QUEUE // 1024)) as sb:
        gate = os.path.join(scratch(), "go")
        stalled = sb.ws(sock=raw_ws_socket(sb.port, rcvbuf=4096), timeout=10)
        s = EventStream()
        stalled.subscribe(1)
        s.read(stalled, sb.state()["last_seq"])
        u = UnixClient(sb.socket, timeout=10)
        pty_ids = [u.call("pty.open", {"argv": gated(gate, PTY_LINES)})["id"] for _ in range(PTYS)]
        u.close()
        for pty_id in pty_ids:
            stalled.call("pty.attach", {"id": pty_id, "from_offset": 0})
        stalled_seq = s.next_seq - 1

        sampler = Sampler({"berthd": sb.berthd_pid(), "gateway": sb.gateway_pid()})
        pinger = Pinger(sb.socket)
        health = HealthPoller(sb.port)
        stats = {}
        try:
            asyncio.run(load_phase(sb, pty_ids, gate, stats))
        finally:
            sampler.stop()
            health.stop()
            pinger.stop()

        final = stats["final"]
        # The journal up to final: the readers' leaving journals more.
        journal = [(e["seq"], e["kind"]) for e in sb.events(1) if e["seq"] <= final]
        expect_contiguous([q for q, _ in journal], 1, final, "the journal's seqs")
        want = event_digest(journal)
        pty_want, proc_want = pty_expected(), proc_expected()
        proc_streams = dict(stats["procs"])
        pty_bytes = proc_bytes = 0
        for i, (name, closed, errors, events, streams) in enumerate(stats["readers"]):
            expect(not errors, "%s: %s" % (name, errors[:5]))
            expect(closed is None, "%s was dropped (close code %s): the stall held it up" % (name, closed))
            expect_eq(event_digest(events), want, "%s: the digest of its %d events" % (name, len(events)))
            if i < PTYS:
                got = streams.get("pty/" + pty_ids[i], b"")
                expect_eq(len(got), len(pty_want), "%s: bytes of pty/%s" % (name, pty_ids[i]))
                expect(got == pty_want, "%s: pty/%s differs from what seq printed" % (name, pty_ids[i]))
                pty_bytes += len(got)
            elif name in proc_streams:
                got = streams.get(proc_streams[name], b"")
                expect_eq(len(got), len(proc_want), "%s: bytes of %s" % (name, proc_streams[name]))
                expect(got == proc_want, "%s: %s differs from what seq printed" % (name, proc_streams[name]))
                proc_bytes += len(got)

        # The stalled client read nothing meanwhile: the others had every
        # event while it was still stalled. Now it is read: dropped, then
        # resumed from its last seq.
        expect(stats["drops_seen"] >= 1, "the stalled client was never dropped in %d events" % stats["generated"])
        code = s.drain(stalled, timeout=30)
        expect(code in (4008, None, 1006), "the stalled client's close code %s" % code)
        expect(s.next_seq <= final, "the stalled client had every event: it was not stalled")
        resumed_at = s.next_seq
        s.follow(sb, final, timeout=60)
        expect_contiguous(s.seqs(), 1, final, "the stalled client's seqs")
        expect_eq(event_digest([(e["seq"], e["kind"]) for e in s.events]), want, "the stalled client's digest")

        flood = stats["flood_s"]
        print("# readers connected in %.1f s; %d events (%d generated) to each of %d readers in %.1f s: "
              "%.0f events/s delivered" % (stats["connect_s"], final, stats["generated"], READERS, flood,
                                           final * READERS / flood))
        print("# PTY bytes %d (%.1f MB/s), command bytes %d (%.1f MB/s)" % (
            pty_bytes, pty_bytes / flood / 1e6, proc_bytes, proc_bytes / flood / 1e6))
        print("# stalled client: read to seq %d, dropped (close code %s), resumed at seq %d up to %d" % (
            stalled_seq, code, resumed_at, final))
        for name in ("berthd", "gateway"):
            print("# %s: VmRSS first %d KiB, peak %d KiB, VmHWM %d KiB" % (
                name, sampler.first[name], sampler.peak_rss[name], sampler.hwm[name]))
        print("# /healthz: %d polls, by status %s, slowest %.3f s, unanswered %d; berthd's direct ping: %d, slowest %.3f s" % (
            health.polls(), health.status, health.slowest, len(health.failures), pinger.count, pinger.slowest))
        for name in ("berthd", "gateway"):
            grew = sampler.hwm[name] - sampler.first[name]
            expect(grew < RSS_GROWTH_KIB, "%s's peak memory grew by %d KiB, past %d KiB" % (
                name, grew, RSS_GROWTH_KIB))
        expect_healthz_true(health, pinger, 10)


def expect_healthz_true(health, pinger, min_polls):
    """/healthz was asked at least min_polls times and answered each time
    within 2 s, and every 503 of it came while berthd did not answer the
    direct pinger for about as long as /healthz waits."""
    expect(health.polls() >= min_polls, "/healthz was polled %d times only" % health.polls())
    expect(not health.failures, "/healthz unanswered within 2 s: %s" % health.failures[:5])
    expect(not pinger.errors, "berthd's direct ping: %s" % pinger.errors[:3])
    lies = [(round(t - health.unavailable[0][0], 1), why) for t, why in health.unavailable if pinger.answering(t, STALE_S + 0.5)]
    expect(not lies, "/healthz said 503 %d times while berthd answered its direct pings: %s" % (len(lies), lies[:3]))


BIG_FOLLOWERS = 20
BIG_PTYS = 10
BIG_SECONDS = 45
# /healthz says 503 once no ping was answered for 3 s; pings go every
# second. A 503 is a lie unless berthd itself did not answer the direct
# pinger for about that long just before.
STALE_S = 3.0


async def big_phase(sb, pty_ids, gate, stats):
    followers = [AsyncClient(sb.url, sb.token, "follower %d" % i) for i in range(BIG_FOLLOWERS)]
    loop = asyncio.get_running_loop()
    try:
        await asyncio.gather(*(c.connect() for c in followers))
        first = (await loop.run_in_executor(None, sb.state))["last_seq"] + 1
        for c in followers:
            c.first_seq = first
        await asyncio.gather(*(c.request("events.subscribe", {"from_seq": first}) for c in followers))
        for c, pty_id in zip(followers, pty_ids):
            await c.request("pty.attach", {"id": pty_id, "from_offset": 0})
        pour = BigEvents(sb.socket)
        t0 = time.monotonic()
        try:
            with open(gate, "w"):
                pass
            await asyncio.sleep(BIG_SECONDS)
        finally:
            pour.stop()
        stats["pour_s"] = time.monotonic() - t0
        stats["poured"], stats["pour_errors"], stats["event_bytes"] = pour.started, pour.errors, pour.bytes_each()
        final = (await loop.run_in_executor(None, sb.state))["last_seq"]
        await asyncio.gather(*(c.wait(lambda c=c: c.next_seq > final or c.closed is not None, 120, "seq %d" % final) for c in followers))
        for c, pty_id in zip(followers, pty_ids):
            await c.wait(lambda c=c, s="pty/" + pty_id: s in c.eof or c.closed is not None, 60, "the end of pty/" + pty_id)
        stats["first"], stats["final"] = first, final
        stats["followers"] = [(c.name, c.closed, list(c.errors), list(c.events), {k: bytes(v) for k, v in c.streams.items()}) for c in followers]
    finally:
        await asyncio.gather(*(c.close() for c in followers))


@case("1 MB events pouring in: /healthz, sampled every 100 ms, is never 503 while berthd answers", timeout=240)
def big_events():
    os.environ["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), ASAN_QUARANTINE]))
    with Sandbox() as sb:
        gate = os.path.join(scratch(), "go")
        u = UnixClient(sb.socket, timeout=10)
        pty_ids = [u.call("pty.open", {"argv": gated(gate, PTY_LINES)})["id"] for _ in range(BIG_PTYS)]
        u.close()
        pinger = Pinger(sb.socket)
        health = HealthPoller(sb.port)
        stats = {}
        try:
            asyncio.run(big_phase(sb, pty_ids, gate, stats))
        finally:
            health.stop()
            pinger.stop()

        print("# %d events of %d bytes poured in %.1f s; events %d to %d to each of %d followers" % (
            stats["poured"], stats["event_bytes"], stats["pour_s"], stats["first"], stats["final"], BIG_FOLLOWERS))
        print("# /healthz: %d polls, by status %s, slowest %.3f s; berthd's direct ping: %d, slowest %.3f s" % (
            health.polls(), health.status, health.slowest, pinger.count, pinger.slowest))
        expect(not stats["pour_errors"], "pouring: %s" % stats["pour_errors"][:3])
        expect(stats["poured"] >= BIG_SECONDS // 2, "only %d events of 1 MB poured in %d s" % (stats["poured"], BIG_SECONDS))
        journal = [(e["seq"], e["kind"]) for e in sb.events(stats["first"]) if e["seq"] <= stats["final"]]
        want = event_digest(journal)
        expect(sum(1 for _, k in journal if k == "proc.started") >= stats["poured"], "the journal lacks the poured events")
        pty_want = pty_expected()
        for i, (name, closed, errors, events, streams) in enumerate(stats["followers"]):
            expect(not errors, "%s: %s" % (name, errors[:5]))
            expect(closed is None, "%s was dropped (close code %s)" % (name, closed))
            expect_eq(event_digest(events), want, "%s: the digest of its %d events" % (name, len(events)))
            if i < BIG_PTYS:
                expect(streams.get("pty/" + pty_ids[i], b"") == pty_want, "%s: pty/%s differs from what seq printed" % (name, pty_ids[i]))
        expect_healthz_true(health, pinger, BIG_SECONDS * 5)


run()
