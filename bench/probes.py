"""probes: what warm-pool probing costs a sandbox.

  probes.py SRC BUILD DIR DURATION "RATE..." EXEC_RATE

berthd (minimal config, three `ready = exec /bin/true` checks re-probed
every second) is probed at each RATE requests a minute for DURATION
seconds, on /readyz and on /healthz in turn: a paced client opens a new
TCP connection for each GET and reads the answer, as a kubelet does.
Then `berth probe` is run as an exec probe at EXEC_RATE a minute. For
each: berthd's and the gateway's CPU over the run (percent of one
core, from /proc/PID/stat), their resident memory at the end, the
requests that failed, and for the exec probe the CPU of the berth
processes themselves. Idle first, as the floor."""

import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

src, build, d = sys.argv[1], sys.argv[2], sys.argv[3]
DURATION = float(sys.argv[4])
RATES = [int(x) for x in sys.argv[5].split()]
EXEC_RATE = int(sys.argv[6])
CHECKS = "".join("\n[check c%d]\nready = exec /bin/true\nready_interval_ms = 1000\n" % i for i in range(3))


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def get(port, path):
    """One GET on a new connection: whether it was answered 200."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % path.encode())
            head = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                head += chunk
            return head.startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def paced(rate_per_min, fn, workers):
    """fn() at rate_per_min for DURATION s from workers threads, each on
    its own schedule: (calls, failures)."""
    n = max(1, int(rate_per_min * DURATION / 60))
    interval = 60.0 / rate_per_min
    t0 = time.monotonic() + 0.1
    counts = [0, 0]
    lock = threading.Lock()

    def work(k):
        i = k
        while i < n:
            delay = t0 + i * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            ok = fn()
            with lock:
                counts[0] += 1
                counts[1] += 0 if ok else 1
            i += workers

    threads = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts[0], counts[1], time.monotonic() - t0


def children_cpu_s():
    return sum(os.times()[2:4])


def measure(b, what, run_it):
    pids = {"berthd": b.pid, "gateway": b.child("berth-gateway")}
    before = {k: benchlib.cpu_s(p) for k, p in pids.items()}
    kids = children_cpu_s()
    calls, failed, took = run_it()
    cpu = {k: (benchlib.cpu_s(p) - before[k]) / took * 100 for k, p in pids.items()}
    own = (children_cpu_s() - kids) / took * 100
    rss = {k: rss_kib(p) for k, p in pids.items()}
    extra = "  berth probe itself %5.1f%%" % own if own > 0.05 else ""
    print("  %-34s %7d calls %4d failed   CPU berthd %5.2f%% gateway %5.2f%%   RSS %d + %d KiB%s"
          % (what, calls, failed, cpu["berthd"], cpu["gateway"], rss["berthd"], rss["gateway"], extra))


def main():
    b = benchlib.Berth(src, build, d, 0, services=CHECKS)
    try:
        benchlib.wait_until(lambda: get(b.port, "/readyz"), 30, "/readyz 200")
        print("probes: %.0f s each; CPU in percent of one core, over the run" % DURATION)
        measure(b, "idle", lambda: (time.sleep(DURATION), (0, 0, DURATION))[1])
        for rate in RATES:
            for path in ("/readyz", "/healthz"):
                measure(b, "%s at %d/min" % (path, rate),
                        lambda: paced(rate, lambda: get(b.port, path), max(2, rate // 6000)))
        argv = [os.path.join(build, "berth"), "--socket", b.sock, "probe"]
        measure(b, "berth probe (exec) at %d/min" % EXEC_RATE,
                lambda: paced(EXEC_RATE, lambda: subprocess.run(argv, stdout=subprocess.DEVNULL).returncode == 0,
                              max(2, EXEC_RATE // 6000)))
    finally:
        b.stop()


main()
