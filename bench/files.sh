#!/usr/bin/env bash
# Files and commands: berth beside the plainest programs doing the same
# work in the same run, each run starting berthd afresh. Prints medians
# over RUNS runs and the ratios:
#
# - upload and download of an MBYTES file through the gateway with
#   `berth cp` (WebSocket; fs.write in 4 MiB chunks, fs.read in 1 MiB
#   ones, four in flight), and the same on berthd's Unix socket (no
#   gateway), against `cat` of the same file through `nc` over a plain TCP
#   socket on loopback (the ceiling: no framing, no protocol, no temp
#   file). Both read from and write to tmpfs, so the disk is not what is
#   measured.
# - the round trip of running `true`: proc.start (attached) until both
#   streams ended and proc.wait answered, on one connection kept open
#   (berthd's Unix socket), against spawning `true` and waiting for it
#   in the same client (Python's subprocess); and `berth exec -- true`
#   over the WebSocket, a whole CLI run with its connect and hello,
#   against starting /bin/true from the same shell.
#
#   bench/files.sh [BUILD_DIR]     (default: build)
#   RUNS=5 MBYTES=256 EXECS=200 bench/files.sh
#
# Installs netcat-openbsd with apt-get when nc is missing.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
py=/usr/bin/python3
if ! command -v nc >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y netcat-openbsd >/dev/null
fi
for tool in unshare nc "$py"; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth

# tmpfs on both ends: the network path is what is measured.
tmp=$(mktemp -d /dev/shm/berth-bench.XXXXXX)
trap 'rm -rf "$tmp"; bench_cleanup' EXIT

cat >"$bench_dir/bench.py" <<'EOF'
import os, signal, statistics, subprocess, sys, time

src, build, d, tmp = sys.argv[1:5]
sys.path.insert(0, os.path.join(src, "bench"))
import benchlib  # noqa: E402
from benchlib import Conn, cpu_s, free_port, wait_until  # noqa: E402

signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
RUNS, MBYTES, EXECS = (int(os.environ.get(k, v)) for k, v in (("RUNS", 5), ("MBYTES", 256), ("EXECS", 200)))
BERTH = os.path.join(build, "berth")


class Berth(benchlib.Berth):
    """berthd, its gateway and the CLI's environment for it."""

    def __init__(self, run):
        super().__init__(src, build, d, run, connect=False)
        self.env = dict(os.environ, BERTH_URL="ws://127.0.0.1:%d/v1" % self.port, BERTH_TOKEN_FILE=self.token)
        wait_until(lambda: self.cli(["ping"], check=False) == 0, what="the gateway")

    def cli(self, args, check=True, unix=False):
        via = ["--socket", self.sock] if unix else []
        r = subprocess.run([BERTH] + via + args, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if check and r.returncode != 0:
            sys.exit("bench: berth %s: %s" % (" ".join(args), r.stderr.decode()))
        return r.returncode

    def gateway(self):
        return self.child("berth-gateway")


def timed_cpu(fn, pids):
    """Runs fn: (seconds, CPU seconds each of pids spent meanwhile)."""
    before = [cpu_s(p) for p in pids]
    took = timed(fn)
    return took, [cpu_s(p) - b for p, b in zip(pids, before)]


def timed(fn):
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def same(a, b):
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


def nc_copy(srcf, dstf):
    """cat srcf | nc → nc -l > dstf, on loopback; returns seconds."""
    port = free_port()
    with open(dstf, "wb") as out:
        listener = subprocess.Popen(["nc", "-l", "127.0.0.1", str(port)], stdout=out)
        wait_until(lambda: subprocess.run(["ss", "-ltn", "sport = :%d" % port], capture_output=True).stdout.count(b"\n") > 1,
                   what="nc listening")
        t0 = time.monotonic()
        subprocess.run("cat %s | nc -N 127.0.0.1 %d" % (srcf, port), shell=True, check=True)
        listener.wait(60)
        took = time.monotonic() - t0
    if not same(srcf, dstf):
        sys.exit("bench: nc copy differs")
    return took


def exec_rtt(c):
    p = c.call("proc.start", {"argv": ["true"], "attach": True})
    ends = 0
    while ends < 2:
        m = c.recv()
        if m.get("type") == "data" and m.get("eof"):
            ends += 1
    w = c.call("proc.wait", {"id": p["id"]})
    if w["exit"] != {"code": 0}:
        sys.exit("bench: true exited %r" % w["exit"])


def local_rtt():
    subprocess.run(["true"], check=True)


def main():
    blob = os.path.join(tmp, "blob")
    with open(blob, "wb") as f:
        for _ in range(MBYTES):
            f.write(os.urandom(1 << 20))
    res = {k: [] for k in ("up_cpu", "down_cpu", "up", "down", "up_unix", "down_unix", "nc", "rtt", "rtt_local", "cli", "cli_local")}
    for run in range(RUNS):
        b = Berth(run)
        try:
            up_to = os.path.join(tmp, "up-%d" % run)
            down_to = os.path.join(tmp, "down-%d" % run)
            pids = [b.pid, b.gateway()]
            took, cpu = timed_cpu(lambda: b.cli(["cp", blob, ":" + up_to]), pids)
            res["up"].append(took)
            res["up_cpu"].append(cpu)
            if not same(blob, up_to):
                sys.exit("bench: upload differs")
            took, cpu = timed_cpu(lambda: b.cli(["cp", ":" + up_to, down_to]), pids)
            res["down"].append(took)
            res["down_cpu"].append(cpu)
            if not same(blob, down_to):
                sys.exit("bench: download differs")
            os.unlink(down_to)
            res["up_unix"].append(timed(lambda: b.cli(["cp", blob, ":" + up_to + "-u"], unix=True)))
            res["down_unix"].append(timed(lambda: b.cli(["cp", ":" + up_to + "-u", down_to], unix=True)))
            if not same(blob, down_to):
                sys.exit("bench: download over the Unix socket differs")
            for f in (up_to, up_to + "-u", down_to):
                os.unlink(f)
            res["nc"].append(nc_copy(blob, os.path.join(tmp, "nc-%d" % run)))
            os.unlink(os.path.join(tmp, "nc-%d" % run))
            c = Conn(b.sock)
            for _ in range(10):
                exec_rtt(c)
            berth_t = [timed(lambda: exec_rtt(c)) for _ in range(EXECS)]
            local_t = [timed(local_rtt) for _ in range(EXECS)]
            res["rtt"].append(statistics.median(berth_t))
            res["rtt_local"].append(statistics.median(local_t))
            c.close()
            n = max(EXECS // 10, 5)
            res["cli"].append(statistics.median(timed(lambda: b.cli(["exec", "--", "true"])) for _ in range(n)))
            res["cli_local"].append(statistics.median(timed(lambda: subprocess.run(["/bin/true"])) for _ in range(n)))
        finally:
            b.stop()
        print("run %d: up %.2f s, down %.2f s, nc %.2f s, rtt %.3f ms (local %.3f), cli %.1f ms (local %.1f)" % (
            run + 1, res["up"][-1], res["down"][-1], res["nc"][-1], res["rtt"][-1] * 1e3,
            res["rtt_local"][-1] * 1e3, res["cli"][-1] * 1e3, res["cli_local"][-1] * 1e3), flush=True)
    cpu = {k: [statistics.median(r[i] for r in res[k]) / (MBYTES * 1.048576) * 1e3 for i in (0, 1)]
           for k in ("up_cpu", "down_cpu")}
    del res["up_cpu"], res["down_cpu"]
    med = {k: statistics.median(v) for k, v in res.items()}
    mb = MBYTES * 1.048576
    print()
    print("medians of %d runs, %d MiB, %d exec round trips a run" % (RUNS, MBYTES, EXECS))
    print("%-44s %10s" % ("", "MB/s"))
    print("%-44s %10.1f" % ("upload, berth cp through the gateway", mb / med["up"]))
    print("%-44s %10.1f" % ("download, berth cp through the gateway", mb / med["down"]))
    print("%-44s %10.1f" % ("upload, berth cp on the Unix socket", mb / med["up_unix"]))
    print("%-44s %10.1f" % ("download, berth cp on the Unix socket", mb / med["down_unix"]))
    print("%-44s %10.1f" % ("cat | nc over loopback TCP (ceiling)", mb / med["nc"]))
    print("CPU ms per MB through the gateway: upload berthd %.2f, gateway %.2f; download berthd %.2f, gateway %.2f" % (
        cpu["up_cpu"][0], cpu["up_cpu"][1], cpu["down_cpu"][0], cpu["down_cpu"][1]))
    print("ratio to the ceiling: gateway upload %.2fx, download %.2fx; Unix socket upload %.2fx, download %.2fx" % (
        med["nc"] / med["up"], med["nc"] / med["down"], med["nc"] / med["up_unix"], med["nc"] / med["down_unix"]))
    print()
    print("%-44s %10s" % ("", "ms"))
    print("%-44s %10.3f" % ("proc.start..proc.wait of true, one connection", med["rtt"] * 1e3))
    print("%-44s %10.3f" % ("spawn true and wait, locally (subprocess)", med["rtt_local"] * 1e3))
    print("%-44s %10.3f" % ("berth exec -- true (whole CLI run, WebSocket)", med["cli"] * 1e3))
    print("%-44s %10.3f" % ("/bin/true from the same client", med["cli_local"] * 1e3))
    print("ratio round trip/local %.2fx, CLI/local %.2fx" % (med["rtt"] / med["rtt_local"], med["cli"] / med["cli_local"]))


main()
EOF
"$py" "$bench_dir/bench.py" "$src" "$build" "$bench_dir" "$tmp"
