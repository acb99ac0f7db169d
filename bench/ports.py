"""ports: how soon berthd tells of a new listener.

  ports.py SRC BUILD DIR RUNS LISTENS

Each run starts, through proc.start as the agent user, a program that
opens LISTENS TCP listeners one after another, 40-90 ms apart (so that
the listens fall anywhere in a poll's period), and writes each one's
monotonic time right after listen(). The latency of a listener is the
arrival of its port.opened on a subscription, here, minus that time.
The peer, run on the same listens, reads /proc/net/tcp and tcp6 once a
second and notes when it first sees each port. RUNS runs with ports =
auto (sock_diag) and with ports = proc, where the listener, a launched
program, is read at its listen() (a seccomp notification) in both; medians over runs of each run's
median and p99, and ratios. Then berthd's CPU over IDLE_S seconds idle,
with ports = auto and with ports = off."""

import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

src, build, d = sys.argv[1], sys.argv[2], sys.argv[3]
RUNS, LISTENS = int(sys.argv[4]), int(sys.argv[5])
IDLE_S = 10
BASE = 20000

LISTENER = """
import os, socket, sys, time
base, n, out, gaps = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4].split(",")
socks = []
with open(out, "w") as f:
    for i in range(n):
        time.sleep(int(gaps[i]) / 1000)
        s = socket.socket()
        s.bind(("127.0.0.1", base + i))
        s.listen()
        f.write("%d %r\\n" % (base + i, time.monotonic()))
        f.flush()
        socks.append(s)
time.sleep(3)
"""

POLLER = """
import sys, time
want, out, until = set(int(p) for p in sys.argv[1].split(",")), sys.argv[2], time.monotonic() + float(sys.argv[3])
seen = {}
while time.monotonic() < until and len(seen) < len(want):
    now = time.monotonic()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                port = int(cols[1].split(":")[1], 16)
                if cols[3] == "0A" and port in want and port not in seen:
                    seen[port] = now
    time.sleep(1)
with open(out, "w") as f:
    for p, t in seen.items():
        f.write("%d %r\\n" % (p, t))
"""


def read_times(path):
    with open(path) as f:
        return {int(a): float(b) for a, b in (line.split() for line in f if line.strip())}


def one_run(b, run, scripts):
    base = BASE + run * LISTENS
    ports = list(range(base, base + LISTENS))
    gaps = ",".join(str(random.randint(40, 90)) for _ in ports)
    out = os.path.join(scripts, "listened-%d" % run)
    polled = os.path.join(scripts, "polled-%d" % run)
    arrived = {}
    sub = benchlib.Conn(b.sock)
    sub.call("events.subscribe", {})

    def follow():
        while len(arrived) < LISTENS:
            m = sub.recv()
            if m.get("type") == "event" and m["kind"] == "port.opened" and m["data"]["port"] in ports:
                arrived.setdefault(m["data"]["port"], time.monotonic())

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    span = LISTENS * 0.09 + 3
    poller = subprocess.Popen(["/usr/bin/python3", os.path.join(scripts, "poller.py"),
                               ",".join(map(str, ports)), polled, str(span)])
    b.c.call("proc.start", {"argv": ["/usr/bin/python3", os.path.join(scripts, "listener.py"), str(base),
                                     str(LISTENS), out, gaps], "user": "agent"})
    t.join(span + 10)
    poller.wait(span + 10)
    sub.close()
    listened = read_times(out)
    if len(arrived) < LISTENS:
        sys.exit("bench: berthd told of %d of %d listeners" % (len(arrived), LISTENS))
    peer = read_times(polled)
    return ([arrived[p] - listened[p] for p in ports],
            [peer[p] - listened[p] for p in ports if p in peer])


def measure(mode, scripts):
    berth, peer = [], []
    for run in range(RUNS):
        b = benchlib.Berth(src, build, d, len(os.listdir(d)), berthd_keys="ports = %s\n" % mode)
        try:
            ours, theirs = one_run(b, run, scripts)
        finally:
            b.stop()
        berth.append(ours)
        peer.append(theirs)
    return benchlib.latency_ms(berth), benchlib.latency_ms(peer)


def idle_cpu(mode):
    b = benchlib.Berth(src, build, d, len(os.listdir(d)), berthd_keys="ports = %s\n" % mode)
    try:
        time.sleep(1)
        c0 = benchlib.cpu_s(b.pid)
        time.sleep(IDLE_S)
        return (benchlib.cpu_s(b.pid) - c0) / IDLE_S * 100
    finally:
        b.stop()


scripts = os.path.join(d, "scripts")
os.makedirs(scripts)
os.chmod(scripts, 0o777)
for name, text in (("listener.py", LISTENER), ("poller.py", POLLER)):
    with open(os.path.join(scripts, name), "w") as f:
        f.write(text)
    os.chmod(os.path.join(scripts, name), 0o644)

(sd_med, sd_p99), (peer_med, peer_p99) = measure("auto", scripts)
(pr_med, pr_p99), _ = measure("proc", scripts)
cpu_on, cpu_off = idle_cpu("auto"), idle_cpu("off")
print("listen() to port.opened, %d runs x %d listens (median / p99 ms):" % (RUNS, LISTENS))
print("  berthd, ports = auto (sock_diag)  %7.1f / %7.1f" % (sd_med, sd_p99))
print("  berthd, ports = proc (/proc/net)  %7.1f / %7.1f" % (pr_med, pr_p99))
print("  peer: /proc/net/tcp every 1 s     %7.1f / %7.1f" % (peer_med, peer_p99))
print("  ratio peer / sock_diag: %.1fx median, %.1fx p99" % (peer_med / sd_med, peer_p99 / sd_p99))
print("  ratio peer / proc:      %.1fx median, %.1fx p99" % (peer_med / pr_med, peer_p99 / pr_p99))
print("berthd idle CPU over %d s: %.2f%% with ports = auto, %.2f%% with ports = off" % (IDLE_S, cpu_on, cpu_off))
