"""Chaos: the shipped desktop (images/desktop/berth.conf) under berthd as
PID 1, while clients follow the events from seq 1 and a PTY session's
counter through the gateway, reconnecting whenever they are dropped.
Every 1-3 s (random, seeded) one process is killed with SIGKILL: the
gateway, berth-desktop, Xvnc, Chromium (the browser or one of its children: a renderer, the zygote),
xfwm4, xfce4-panel, xfdesktop, xfsettingsd or the session bus's
dbus-daemon, and the X server at least every X_EVERY seconds (so at
least 5 times in a minute), however often its clients died with it. No
kill is held back to spare a service: the desktop heals from any rate.
Afterwards /readyz is 200 again within READY_AFTER seconds of the last
kill, without any op from outside, no service is failed and none ever
was (no service.failed in the journal), the journal has no gap, every
client has every event exactly once and the PTY stream exactly as
printed (by hash), and no zombie and no orphan of a killed service's
tree is left.

BERTH_CHAOS_SECONDS (default 120) is how long the kills go on;
BERTH_CHAOS_SEED picks the sequence (default: from the clock; printed,
so that a run can be repeated)."""

import asyncio
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    SRCDIR,
    Sandbox,
    TestFailure,
    UnixClient,
    case,
    desktop_user,
    expect,
    expect_contiguous,
    expect_eq,
    http_get,
    need,
    note,
    proc_argv,
    pty_read,
    run,
    scratch,
)
from harness.load import AsyncClient, event_digest, shipped_desktop_config  # noqa: E402

SECONDS = float(os.environ.get("BERTH_CHAOS_SECONDS", "120"))
SEED = int(os.environ.get("BERTH_CHAOS_SEED", str(int(time.time() * 1000) % 1000000)))
FOLLOWERS = 4
READY_TIMEOUT = 120.0
# /readyz is 200 (and stays so) this soon after the last kill.
READY_AFTER = 15.0
# The X server is killed whenever it has not been for this long, and runs.
X_EVERY = 9.0
# What is killed, by comm ("chromium-child": a renderer, the zygote or the
# GPU process).
TARGETS = (
    "gateway",
    "berth-desktop",
    "Xvnc",
    "chromium",
    "chromium-child",
    "xfwm4",
    "xfce4-panel",
    "xfdesktop",
    "xfsettingsd",
    "dbus-daemon",
)
# berthd's own helpers, children of berthd that are no service's.
HELPERS = ("berth-probe", "berth-vt")


class Namespace:
    """berthd and every process under it, read from the host's /proc at
    once: {host pid: (comm, state, ppid, session, argv)}. "Under" is by
    parentage, not PID namespace: the gateway and Chromium's renderers
    run in namespaces of their own, nested in berthd's."""

    def __init__(self, sb):
        self.berthd = sb.berthd_pid()
        # The level of berthd's namespace in NSpid (berthd is 1 there).
        self.level = len(_status(self.berthd, "NSpid").split()) - 1
        every = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % name) as f:
                    s = f.read()
            except OSError:
                continue
            rest = s[s.rindex(")") + 2 :].split()
            every[int(name)] = (s[s.index("(") + 1 : s.rindex(")")], rest[0], int(rest[1]), int(rest[3]))
        self.procs = {}
        for pid in every:
            p, seen = pid, set()
            while p in every and p not in seen and p != self.berthd:
                seen.add(p)
                p = every[p][2]
            if p == self.berthd and pid != self.berthd:
                self.procs[pid] = every[pid] + (proc_argv(pid),)

    def nspid(self, pid):
        """pid's number in berthd's namespace, None if it is gone."""
        v = _status(pid, "NSpid")
        return int(v.split()[self.level]) if v else None

    def targets(self):
        """{target name: [host pids]} of what may be killed now."""
        out = {}
        for pid, (comm, state, ppid, _, argv) in self.procs.items():
            if state == "Z":
                continue
            name = "gateway" if comm == "berth-gateway" else comm
            if comm == "chromium" and ppid != self.berthd:
                # Its sandbox hides a renderer's command line: a renderer,
                # the zygote or the GPU process, any child of the browser.
                name = "chromium-child"
            elif comm == "dbus-daemon" and "--print-address=3" not in argv:
                continue  # not the session bus berth-xfce runs
            if name in TARGETS:
                out.setdefault(name, []).append(pid)
        return out

    def top(self, pid):
        """pid's ancestor that is a child of berthd (pid itself if it is
        one), or None if the chain breaks."""
        seen = set()
        while pid in self.procs and pid not in seen:
            seen.add(pid)
            ppid = self.procs[pid][2]
            if ppid == self.berthd:
                return pid
            pid = ppid
        return None


def _status(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def kill_loop(sb, ns_of, rng, seconds, stats):
    """Kills until seconds have passed; returns when done. ns_of() reads
    the namespace afresh. stats["x_kills"] gets the time of each kill of
    the X server, stats["last_kill"] that of the last kill."""
    end = time.monotonic() + seconds
    while True:
        time.sleep(rng.uniform(1.0, 3.0))
        if time.monotonic() >= end:
            return
        now = time.monotonic()
        ns = ns_of()
        found = ns.targets()
        if not stats["kills"] and not stats["skipped"]:
            note("to kill: %s" % {k: len(v) for k, v in sorted(found.items())})
        if not found:
            stats["skipped"] += 1
            continue
        if "Xvnc" in found and now - (stats["x_kills"] or [now - X_EVERY])[-1] >= X_EVERY:
            name = "Xvnc"
        else:
            name = rng.choice(sorted(found))
        pid = rng.choice(sorted(found[name]))
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        stats["kills"][name] = stats["kills"].get(name, 0) + 1
        stats["last_kill"] = now
        if name == "Xvnc":
            stats["x_kills"].append(now)
        note("%.1f s: SIGKILL %s (pid %d)" % (seconds - (end - now), name, pid))


def most_within(times, window):
    """The most of times (sorted) that fall within one window seconds."""
    best, j = 0, 0
    for i, t in enumerate(times):
        while t - times[j] > window:
            j += 1
        best = max(best, i - j + 1)
    return best


async def follow_events(c, stop, stats):
    """Follows the events from seq 1 through every drop: reconnects and
    resumes at the next seq."""
    while not stop.is_set():
        try:
            await c.connect(timeout=5)
            await c.request("events.subscribe", {"from_seq": c.next_seq})
        except Exception as e:
            await connect_failed(c, stats, e)
            continue
        await c.wait(lambda: c.closed is not None or stop.is_set(), 1e6, "a drop")
        if c.closed is not None:
            stats["reconnects"] += 1
    await c.close()


async def connect_failed(c, stats, e):
    """A connect or its first request failed (the gateway is down, say):
    counted, and tried again shortly."""
    stats["connect_errors"] += 1
    stats["last_error"] = repr(e)
    await c.close()
    await asyncio.sleep(0.2)


async def follow_pty(c, pty_id, stop, stats):
    """Follows pty/pty_id from offset 0 through every drop, attaching
    again at the offset reached, until its end."""
    stream = "pty/" + pty_id
    while stream not in c.eof:
        try:
            await c.connect(timeout=5)
            r = await c.request("pty.attach", {"id": pty_id, "from_offset": len(c.streams.get(stream, b""))})
        except Exception as e:
            await connect_failed(c, stats, e)
            continue
        expect_eq(r["lost"], 0, "bytes of %s the ring no longer held" % stream)
        await c.wait(lambda: c.closed is not None or stream in c.eof, 1e6, "a drop")
        if c.closed is not None and stream not in c.eof:
            stats["pty_reconnects"] += 1
    await c.close()


def readyz(port):
    try:
        return http_get(port, "/readyz", timeout=3)[0]
    except OSError:
        return None


async def chaos(sb, pty_id, stopfile, stats):
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    followers = [AsyncClient(sb.url, sb.token, "follower %d" % i) for i in range(FOLLOWERS)]
    viewer = AsyncClient(sb.url, sb.token, "pty viewer")
    tasks = [asyncio.ensure_future(follow_events(c, stop, stats)) for c in followers]
    pty_task = asyncio.ensure_future(follow_pty(viewer, pty_id, stop, stats))
    rng = random.Random(SEED)
    t0 = time.monotonic()
    await loop.run_in_executor(None, kill_loop, sb, lambda: Namespace(sb), rng, SECONDS, stats)
    stats["chaos_s"] = time.monotonic() - t0

    ready = await loop.run_in_executor(None, lambda: _wait_ready(sb.port))
    ok = ready is not None
    stats["ready_after_s"] = (ready - stats["last_kill"]) if ok else None
    note("ready %s s after the last kill" % stats["ready_after_s"])
    if not ok:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        pty_task.cancel()
        raise TestFailure("/readyz not 200 within %.0f s after the last kill: %s" % (READY_TIMEOUT, sb.state()["checks"]))

    with open(stopfile, "w"):
        pass
    await asyncio.wait_for(pty_task, 60)
    final = (await loop.run_in_executor(None, sb.state))["last_seq"]
    note("the PTY ended; the journal's last seq %d" % final)
    for c in followers:
        await c.wait(lambda c=c: c.next_seq > final, 60, "seq %d" % final)
    stop.set()
    await asyncio.gather(*tasks)
    stats["final"] = final
    stats["followers"] = [(c.name, list(c.errors), [e for e in c.events if e[0] <= final]) for c in followers]
    stats["pty"] = (list(viewer.errors), bytes(viewer.streams.get("pty/" + pty_id, b"")))


def _wait_ready(port, steady=3.0):
    """Waits for /readyz to answer 200 for steady seconds in a row (a
    check may not have seen the last kill yet); returns when that run of
    200s began (monotonic), None if none came within READY_TIMEOUT."""
    deadline = time.monotonic() + READY_TIMEOUT
    since = None
    while time.monotonic() < deadline:
        if readyz(port) == 200:
            since = since or time.monotonic()
            if time.monotonic() - since >= steady:
                return since
        else:
            since = None
        time.sleep(0.1)
    return None


def counter_expected(data):
    """What the counter printed, as far as data goes: 0\\r\\n1\\r\\n...;
    the number of lines."""
    n = data.count(b"\n")
    return "".join("%d\r\n" % i for i in range(n)).encode(), n


def run_tag(pid):
    """The BERTH_SERVICE_RUN tag in pid's environment, or None: berthd
    tags each run of a service, and what a run forks inherits it."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    for e in env:
        if e.startswith(b"BERTH_SERVICE_RUN="):
            return e.split(b"=", 1)[1].decode()
    return None


def leftovers(sb):
    """(zombies, orphans) in the namespace: a zombie of berthd's (its
    child, or an orphan) that stays one for a second; a process whose chain does not lead to a service berthd runs
    now, a PTY session or command of berthd's, or one of berthd's own
    helpers, and that carries no tag of a run berthd runs now (a daemon
    that forked twice and left its session, as Chromium's crash handler
    does, is known by its tag alone)."""
    first = Namespace(sb)
    time.sleep(1.0)
    ns = Namespace(sb)
    # berthd's to reap: its own children and every orphan. A zombie whose
    # parent lives is that parent's (Chromium reaps its renderers when it
    # gets to them), and is only noted.
    zombies, theirs = [], []
    for pid, p in ns.procs.items():
        if p[1] != "Z" or first.procs.get(pid, ("", ""))[1] != "Z":
            continue
        (zombies if p[2] == ns.berthd else theirs).append(
            "%s (pid %d, parent %s pid %d: %s)" % (p[0], pid, ns.procs.get(p[2], ("berthd",))[0], p[2],
                                                  " ".join(ns.procs.get(p[2], ("", "", 0, 0, []))[4])[:100]))
    if theirs:
        note("zombies of a live parent, not berthd's to reap: %s" % theirs)
    c = UnixClient(sb.socket, timeout=10)
    try:
        tops = {s["pid"] for s in c.call("service.list")["services"] if s["pid"]}
        tops |= {s["pid"] for s in c.call("pty.list")["sessions"]}
        tops |= {p["pid"] for p in c.call("proc.list")["procs"]}
    finally:
        c.close()
    live_runs = {run_tag(pid) for pid in ns.procs if ns.nspid(pid) in tops} - {None}
    orphans = []
    for pid, (comm, state, ppid, sid, argv) in ns.procs.items():
        if pid == ns.berthd or state == "Z":
            continue
        top = ns.top(pid)
        if top is None:
            continue  # exited meanwhile, or its parent did
        if ns.nspid(top) in tops or os.path.basename((ns.procs[top][4] or [""])[0]) in HELPERS:
            continue
        # What a running service's leader started and left to berthd
        # (D-Bus activations: xfconfd, the accessibility bus) is still
        # in that service's session.
        if sid in ns.procs and ns.nspid(sid) in tops:
            continue
        tag = run_tag(pid)
        if tag in live_runs:
            continue
        orphans.append(
            "%s (pid %d, %s; under %s pid %d; session %d, %s; run %s)"
            % (comm, pid, " ".join(argv)[:80], ns.procs[top][0], top, sid,
               "its leader runs no service" if sid in ns.procs else "its leader is dead", tag)
        )
    return zombies, orphans


@case("random SIGKILLs across the desktop while clients follow events and a PTY", timeout=int(SECONDS) + 420)
def chaos_case():
    need("Xvnc", "chromium", "xfwm4", "xfce4-panel", "xfdesktop", "xfsettingsd", "dbus-daemon")
    desktop_user()
    print("# seed %d, %.0f s of kills" % (SEED, SECONDS))
    sys.stdout.flush()
    config = shipped_desktop_config(SRCDIR)[0]
    with Sandbox(config=config) as sb:
        expect(_wait_ready(sb.port) is not None, "the desktop was never ready: %s" % sb.state()["checks"])
        stopfile = os.path.join(scratch(), "stop")
        u = UnixClient(sb.socket, timeout=10)
        counter = "i=0; while [ ! -e %s ]; do echo $i; i=$((i+1)); sleep 0.01; done" % stopfile
        pty_id = u.call("pty.open", {"argv": ["/bin/sh", "-c", counter]})["id"]
        u.close()
        stats = {"kills": {}, "x_kills": [], "last_kill": time.monotonic(), "skipped": 0, "reconnects": 0,
                 "pty_reconnects": 0, "connect_errors": 0, "last_error": None}
        asyncio.run(chaos(sb, pty_id, stopfile, stats))

        final = stats["final"]
        journal = [(e["seq"], e["kind"]) for e in sb.events(1) if e["seq"] <= final]
        expect_contiguous([q for q, _ in journal], 1, final, "the journal's seqs")
        every = sb.events(1)
        failed = [e for e in every if e["kind"] == "service.failed"]
        excused = [e for e in every if e["kind"] == "service.restarting" and "dependency" in e["data"]]
        want = event_digest(journal)
        for name, errors, events in stats["followers"]:
            expect(not errors, "%s: %s" % (name, errors[:5]))
            expect_eq(event_digest(events), want, "%s: the digest of its %d events" % (name, len(events)))
        errors, data = stats["pty"]
        expect(not errors, "the PTY viewer: %s" % errors[:5])
        produced, lines = counter_expected(data)
        expect(lines > 0, "the counter printed nothing")
        expect(data == produced, "the PTY stream differs from the counter's lines 0..%d" % (lines - 1))
        c = UnixClient(sb.socket, timeout=10)
        c.call("pty.attach", {"id": pty_id, "from_offset": 0})
        held = pty_read(c, pty_id, 0, len(data), timeout=10)
        c.close()
        expect(held == data, "what berthd holds of the PTY differs from what the viewer received")

        zombies, orphans = wait_for_clean(sb)
        print("# kills %s (%d in all, %d turns with nothing to kill)" % (
            dict(sorted(stats["kills"].items())), sum(stats["kills"].values()), stats["skipped"]))
        print("# %d events to each of %d followers; %d reconnects of followers, %d of the PTY viewer, %d failed "
              "connects (last %s)" % (final, FOLLOWERS, stats["reconnects"], stats["pty_reconnects"],
                                      stats["connect_errors"], stats["last_error"]))
        x_minute = most_within(stats["x_kills"], 60.0)
        print("# PTY: %d lines, %d bytes; ready %.1f s after the last kill; service.failed: %s" % (
            lines, len(data), stats["ready_after_s"], [e["data"]["name"] for e in failed]))
        print("# the X server killed %d times, at most %d within a minute; %d exits not counted (a dependency "
              "went away)" % (len(stats["x_kills"]), x_minute, len(excused)))
        expect(sum(stats["kills"].values()) >= SECONDS / 6, "only %d kills in %.0f s" % (sum(stats["kills"].values()), SECONDS))
        expect(x_minute >= 5, "the X server killed at most %d times within a minute" % x_minute)
        expect(stats["ready_after_s"] <= READY_AFTER,
               "/readyz 200 again %.1f s after the last kill, not within %.0f s" % (stats["ready_after_s"], READY_AFTER))
        expect_eq([e["data"] for e in failed], [], "service.failed events")
        down = [(s["name"], s["reason"]) for s in sb.state()["services"] if s["state"] == "failed"]
        expect_eq(down, [], "failed services at the end")
        expect(not zombies and not orphans, "zombies left: %s; processes of no running service: %s" % (zombies, orphans))


def wait_for_clean(sb, timeout=10.0):
    """leftovers(), again until clean or timeout: what a last kill left
    may take berthd a moment to end."""
    deadline = time.monotonic() + timeout
    while True:
        zombies, orphans = leftovers(sb)
        if (not zombies and not orphans) or time.monotonic() > deadline:
            return zombies, orphans


run()
