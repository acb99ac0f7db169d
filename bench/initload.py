"""initload: the init benchmark's driver, run by bench/init.sh as

    initload.py SRC BUILD DIR INITWORK

berthd, tini, tini -g and dumb-init, each as PID 1 of a PID namespace of
its own, run the same initwork program (bench/initwork.c) as their one
service, in turn within each run, the order turning from run to run. See
init.sh for what is measured."""

import os
import re
import select
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import children, latency_ms, wait_until  # noqa: E402

src, build, d, work = sys.argv[1:5]
RUNS, ORPHANS, SIGNALS, GROUP, IGNORE, STOP_MS = (
    int(os.environ.get(k, v)) for k, v in
    (("RUNS", 5), ("ORPHANS", 5000), ("SIGNALS", 200), ("GROUP", 200), ("IGNORE", 50), ("STOP_MS", 1000)))
# Time for each init to finish starting (berthd: its gateway and probe)
# before the work begins, the same for all.
SETTLE = 1.0
INITS = (("berthd", None), ("tini", ["tini", "--"]), ("tini -g", ["tini", "-g", "--"]),
         ("dumb-init", ["dumb-init"]))

# A stopped bench still ends the namespaces it started (the finally below).
signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
live = []
serial = 0


class Init:
    """One init as PID 1 of a new PID namespace, its one service argv
    (berthd: a main service, never restarted, stop_ms its stop timeout).
    pid is the init's host pid, proc the unshare process."""

    def __init__(self, name, peer, argv, stop_ms=None):
        global serial
        serial += 1
        self.name, self.log = name, None
        if peer is None:
            conf = "\n[service work]\ncommand = %s\nmain = yes\nrestart = never\n" % " ".join(argv)
            if stop_ms is not None:
                conf += "stop_timeout_ms = %d\n" % stop_ms
            b = benchlib.Berth(src, build, d, serial, connect=False, services=conf)
            self.proc, self.pid, self.log = b.proc, b.pid, os.path.join(b.dir, "log")
        else:
            self.proc = subprocess.Popen(["unshare", "-p", "-f", "--mount-proc"] + peer + argv,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         start_new_session=True)
            wait_until(lambda: children(self.proc.pid), what="%s's pid" % name)
            self.pid = children(self.proc.pid)[0]
        live.append(self)

    def wait(self, timeout=30):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            sys.exit("bench: %s did not exit" % self.name)
        live.remove(self)


class Lines:
    """The lines another process writes into the FIFO path, read with a
    deadline. Opened before the writer, so that its open never blocks."""

    def __init__(self, path):
        os.mkfifo(path)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.buf = b""

    def line(self, timeout=10):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                sys.exit("bench: no line in %d s" % timeout)
            chunk = os.read(self.fd, 4096)
            if not chunk:
                sys.exit("bench: the writer closed its FIFO")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def close(self):
        os.close(self.fd)


def path(name, *parts):
    return os.path.join(d, "-".join([name.replace(" ", "")] + [str(p) for p in parts]))


def storm(name, peer, run):
    """(wall s, tail s, PID 1 CPU s by ticks, by schedstat or None) of
    ORPHANS orphans."""
    go, out = path(name, "go", run), path(name, "out", run)
    os.mkfifo(go)
    gofd = os.open(go, os.O_RDWR)
    init = Init(name, peer, [work, "storm", str(ORPHANS), go, out])
    time.sleep(SETTLE)
    os.write(gofd, b"g")
    init.wait(120)
    os.close(gofd)
    with open(out) as f:
        wall, tail, cpu, run = (float(x) for x in f.read().split())
    return wall, tail, cpu, run if run >= 0 else None


def hup(name, peer, run):
    """SIGNALS latencies (s) from SIGHUP to PID 1 to the service's seeing it."""
    lines = Lines(path(name, "hup", run))
    init = Init(name, peer, [work, "hup", path(name, "hup", run)])
    if lines.line() != "r":
        sys.exit("bench: the hup service did not start")
    time.sleep(SETTLE)
    lat = []
    for _ in range(SIGNALS):
        t0 = time.monotonic_ns()
        os.kill(init.pid, signal.SIGHUP)
        lat.append((int(lines.line()) - t0) / 1e9)
    os.kill(init.pid, signal.SIGTERM)
    init.wait()
    lines.close()
    return lat


def stop(name, peer, run, nignore):
    """(s from SIGTERM to PID 1 to its exit, the group's members that saw
    SIGTERM and exited, that saw it and stayed, berthd's SIGKILL count)."""
    fifo, log = path(name, "stop", nignore, run), path(name, "log", nignore, run)
    ready = Lines(fifo)
    init = Init(name, peer, [work, "group", str(GROUP), str(nignore), log, fifo], STOP_MS)
    if ready.line() != "r":
        sys.exit("bench: the group did not start")
    time.sleep(SETTLE)
    # Readable once PID 1 has exited, which the kernel lets it do only
    # after every other process of its namespace is gone.
    pidfd = os.pidfd_open(init.pid)
    t0 = time.monotonic()
    os.kill(init.pid, signal.SIGTERM)
    if not select.select([pidfd], [], [], 30)[0]:
        sys.exit("bench: %s did not exit after SIGTERM" % name)
    took = time.monotonic() - t0
    os.close(pidfd)
    init.wait()
    ready.close()
    with open(log) as f:
        seen = f.read()
    killed = 0
    if init.log is not None:
        with open(init.log) as f:
            killed = sum(int(n) for n in re.findall(r"SIGKILL to (\d+) process", f.read()))
    return took, seen.count("t"), seen.count("i"), killed


def main():
    r = {(n, k): [] for n, _ in INITS for k in ("storm", "hup", "stop0", "stopi")}
    for run in range(RUNS):
        order = INITS[run % len(INITS):] + INITS[:run % len(INITS)]
        for name, peer in order:
            r[name, "storm"].append(storm(name, peer, run))
        for name, peer in order:
            r[name, "hup"].append(hup(name, peer, run))
        for name, peer in order:
            r[name, "stop0"].append(stop(name, peer, run, 0))
            r[name, "stopi"].append(stop(name, peer, run, IGNORE))
        print("bench: run %d of %d done" % (run + 1, RUNS), file=sys.stderr)

    med = statistics.median
    rows = []

    def row(label, f, fmt, ratio=True):
        rows.append((label, [f(n) for n, _ in INITS], fmt, ratio))

    def col(key, i, scale=1):
        def f(n):
            xs = [x[i] for x in r[n, key]]
            return None if None in xs else med(xs) * scale
        return f

    rows.append(("reaping storm: %d orphans, PID 1 reaps each" % ORPHANS, None, None, None))
    row("  first fork to last reaped, ms", col("storm", 0, 1000), "%.0f")
    row("  last fork to last reaped, ms", col("storm", 1, 1000), "%.1f")
    row("  PID 1 CPU (utime+stime, 10 ms ticks), ms", col("storm", 2, 1000), "%.0f")
    row("  PID 1 time on a CPU (schedstat), ms", col("storm", 3, 1000), "%.1f")
    rows.append(("SIGHUP to PID 1 until the service sees it (%d a run)" % SIGNALS, None, None, None))
    row("  median, us", lambda n: latency_ms(r[n, "hup"])[0] * 1000, "%.0f")
    row("  p99, us", lambda n: latency_ms(r[n, "hup"])[1] * 1000, "%.0f")
    for key, what in (("stop0", "all exit on TERM"), ("stopi", "%d ignore TERM" % IGNORE)):
        rows.append(("stop: SIGTERM to PID 1, %d in the group, %s" % (GROUP, what), None, None, None))
        row("  until PID 1 exits (namespace empty), ms", col(key, 0, 1000), "%.1f")
        row("  saw SIGTERM and exited", col(key, 1), "%.0f", False)
        if key == "stopi":
            row("  saw SIGTERM and stayed", col(key, 2), "%.0f", False)
            rows.append(("  SIGKILLed by berthd (its log)", [col(key, 3)("berthd")] + [None] * (len(INITS) - 1),
                         "%.0f", False))

    names = [n for n, _ in INITS]
    print("init benchmark: medians of %d runs; peer cells are value (berthd/peer)" % RUNS)
    print("%-48s %10s" % ("", names[0]) + "".join(" %18s" % n for n in names[1:]))
    for label, vals, fmt, ratio in rows:
        if vals is None:
            print(label)
            continue
        cells = ["-" if v is None else fmt % v for v in vals]
        out = "%-48s %10s" % (label, cells[0])
        for c, v in zip(cells[1:], vals[1:]):
            if ratio:
                c += " (%.2fx)" % (vals[0] / v) if v and vals[0] is not None else " (-)"
            out += " %18s" % c
        print(out)


try:
    main()
finally:
    for i in live:
        try:
            os.kill(i.pid, signal.SIGKILL)
        except OSError:
            pass
