"""kill: a 512-process fork bomb killed by berthd without cgroup.kill
(cgroup v1 alone: rounds of freeze, SIGKILL, thaw on a timer) beside
the same kill by v2's cgroup.kill.

  kill.py SRC BUILD DIR KILLS

Each kill: proc.start of the bomb (max_processes 512), once its 512
processes are counted in its group, proc.signal KILL on one connection
and a ping on another sent right after it; the time to the signal's
answer (berthd's loop in the kill's first round), to the ping's answer,
and to proc.wait's (the bomb ended). Medians and maxima of KILLS kills
each, the two berthds taking turns."""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

src, build, d = sys.argv[1], sys.argv[2], sys.argv[3]
KILLS = int(sys.argv[4])
N = 512
V2 = "/sys/fs/cgroup/unified"
# The bomb the kill tests use.
BOMB = os.path.join(src, "tests", "integration", "harness", "forkbomb.py")


def one_kill(b, ping, prog):
    p = b.c.call("proc.start", {"argv": ["/usr/bin/python3", prog, str(N)], "limits": {"max_processes": N}})
    benchlib.wait_until(
        lambda: b.c.call("limits.status", {"target": "proc/" + p["id"]})["usage"].get("processes", 0) >= N - 8,
        60, "the bomb's processes")
    t0 = time.monotonic()
    k = b.c.send("proc.signal", {"id": p["id"], "signal": "KILL"})
    q = ping.send("ping")
    ping.response(q)
    t_ping = time.monotonic() - t0
    if not b.c.response(k)["ok"]:
        sys.exit("bench: proc.signal KILL failed")
    t_sig = time.monotonic() - t0
    b.c.call("proc.wait", {"id": p["id"]})
    return t_sig, t_ping, time.monotonic() - t0


def main():
    if not os.path.exists(os.path.join(V2, "cgroup.procs")) or not os.path.exists("/sys/fs/cgroup/freezer/cgroup.procs"):
        print("bench: kill: not a hybrid host (v2 at %s beside a v1 freezer): nothing to compare" % V2)
        return
    prog = BOMB
    # The v2 hierarchy unmounted in berthd's namespace alone (unshare's
    # mounts are private): berthd finds v1 and kills by rounds.
    v1 = benchlib.Berth(src, build, d, 0, wrap=["/bin/sh", "-c", 'umount -l %s && exec "$0" "$@"' % V2])
    v2 = benchlib.Berth(src, build, d, 1)
    kinds = [("v1 alone: rounds on a timer", v1), ("v2 cgroup.kill (the kernel's)", v2)]
    pings = {name: b.connect() for name, b in kinds}
    times = {name: [] for name, _ in kinds}
    try:
        for _ in range(KILLS):
            for name, b in kinds:
                times[name].append(one_kill(b, pings[name], prog))
    finally:
        for _, b in kinds:
            b.stop()
    print("%d kills of a %d-process bomb (nice 19) each, taking turns; ms, median (max)" % (KILLS, N))
    for name, _ in kinds:
        cols = list(zip(*times[name]))
        print("%-32s signal answered %7.1f (%6.1f)   ping answered %7.1f (%6.1f)   bomb ended %7.1f (%6.1f)"
              % ((name,) + tuple(x for c in cols for x in (statistics.median(c) * 1e3, max(c) * 1e3))))


main()
