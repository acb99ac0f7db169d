"""limits: what a limited command costs to start, beside an unlimited
one and beside cgexec.

  limits.py SRC BUILD DIR STARTS

berth: proc.start of `true`, then proc.wait until it has exited, on one
Unix connection kept to berthd; once with limits {cpu_millis 500,
memory_bytes 64M, max_processes 64}, once without; and the same on a
berthd with `[berthd] cgroups = off` (rlimits, no cgroup). cgexec: `cgexec -g
memory,pids,cpu:GROUP true` in a group made with the same limits and
removed after it, by cgcreate + cgset + cgdelete, and by hand (mkdir,
the writes, rmdir) as berthd does it; `systemd-run --scope` with the
same limits where systemd is the init (tried once: where it is not,
the bench says why and goes on without it). The floor: `true` spawned by this
script. STARTS of each, interleaved (the order rotating every round);
median and p99 in ms, ratios to the unlimited start."""

import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

src, build, d = sys.argv[1], sys.argv[2], sys.argv[3]
STARTS = int(sys.argv[4])
LIMITS = {"cpu_millis": 500, "memory_bytes": 64 << 20, "max_processes": 64}
# The same limits in each v1 controller's files.
WRITES = {"memory": [("memory.limit_in_bytes", str(64 << 20))], "pids": [("pids.max", "64")],
          "cpu": [("cpu.cfs_period_us", "100000"), ("cpu.cfs_quota_us", "50000")]}
CONTROLLERS = "memory,pids,cpu"
TRUE = "/bin/true"


def v1_mounts():
    """{controller: mount point} of the v1 hierarchies cgexec uses."""
    found = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fstype, _, opts = right.split()[:3]
            if fstype != "cgroup":
                continue
            for ctl in WRITES:
                if ctl in opts.split(","):
                    found[ctl] = left.split()[4]
    missing = [c for c in WRITES if c not in found]
    if missing:
        sys.exit("bench: no v1 hierarchy for %s: cgexec has nothing to run in" % ", ".join(missing))
    return found


MOUNTS = v1_mounts()
TAG = "berth-bench-%d" % os.getpid()


def berth_start(c, limits):
    t0 = time.monotonic()
    args = {"argv": [TRUE]}
    if limits:
        args["limits"] = LIMITS
    p = c.call("proc.start", args)
    w = c.call("proc.wait", {"id": p["id"]})
    t = time.monotonic() - t0
    if w.get("exit") != {"code": 0}:
        sys.exit("bench: true ended with %r" % w)
    return t


def run(argv):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
    if r.returncode != 0:
        sys.exit("bench: %s: status %d: %s" % (" ".join(argv), r.returncode, r.stderr.decode()[-300:]))


def cgtools_start(i):
    group = "%s-t%d" % (TAG, i)
    t0 = time.monotonic()
    run(["cgcreate", "-g", "%s:%s" % (CONTROLLERS, group)])
    run(["cgset"] + [a for ctl in WRITES for f, v in WRITES[ctl] for a in ("-r", "%s=%s" % (f, v))] + [group])
    run(["cgexec", "-g", "%s:%s" % (CONTROLLERS, group), TRUE])
    run(["cgdelete", "-g", "%s:%s" % (CONTROLLERS, group)])
    return time.monotonic() - t0


def by_hand_start(i):
    group = "%s-h%d" % (TAG, i)
    t0 = time.monotonic()
    for ctl, files in WRITES.items():
        path = os.path.join(MOUNTS[ctl], group)
        os.mkdir(path, 0o755)
        for name, value in files:
            with open(os.path.join(path, name), "w") as f:
                f.write(value)
    run(["cgexec", "-g", "%s:%s" % (CONTROLLERS, group), TRUE])
    for ctl in WRITES:
        os.rmdir(os.path.join(MOUNTS[ctl], group))
    return time.monotonic() - t0


# systemd's way: a transient scope with the same limits, where systemd is
# the init to ask.
SYSTEMD_RUN = ["systemd-run", "--scope", "--quiet", "-p", "MemoryMax=%d" % (64 << 20), "-p", "TasksMax=64",
               "-p", "CPUQuota=50%", TRUE]


def systemd_run_why():
    """Why systemd-run cannot be a peer here, or None: it is tried once."""
    try:
        r = subprocess.run(SYSTEMD_RUN, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return "no systemd-run installed"
    if r.returncode == 0:
        return None
    said = (r.stderr.strip().splitlines() or ["nothing said"])[0]
    return "systemd-run --scope exited with %d: %s" % (r.returncode, said)


def systemd_start(i):
    t0 = time.monotonic()
    run(SYSTEMD_RUN)
    return time.monotonic() - t0


def spawn_start(i):
    t0 = time.monotonic()
    run([TRUE])
    return time.monotonic() - t0


def sweep():
    """Removes this run's groups a failure left behind."""
    for mount in MOUNTS.values():
        for name in os.listdir(mount):
            if name.startswith(TAG):
                try:
                    os.rmdir(os.path.join(mount, name))
                except OSError:
                    pass


def figures(xs):
    xs = sorted(xs)
    return statistics.median(xs) * 1000, xs[min(len(xs) - 1, int(len(xs) * 0.99))] * 1000


def main():
    b = benchlib.Berth(src, build, d, 0)
    # A second berthd told to act as if the kernel had no cgroups: its
    # limits are rlimits, its targets no cgroup of their own.
    off = benchlib.Berth(src, build, d, 1, services="\n[berthd]\ncgroups = off\n")
    try:
        kinds = [
            ("berth, unlimited", lambda i: berth_start(b.c, False)),
            ("berth, limited", lambda i: berth_start(b.c, True)),
            ("berth cgroups=off, unlimited", lambda i: berth_start(off.c, False)),
            ("berth cgroups=off, limited", lambda i: berth_start(off.c, True)),
            ("cgcreate+cgset+cgexec+cgdelete", cgtools_start),
            ("mkdir+writes, cgexec, rmdir", by_hand_start),
            ("true spawned (the floor)", spawn_start),
        ]
        why = systemd_run_why()
        if why is None:
            kinds.insert(-1, ("systemd-run --scope", systemd_start))
        else:
            print("systemd-run --scope is not a peer here: %s" % why)
        for k, (_, fn) in enumerate(kinds):
            fn(-1 - k)
        times = {name: [] for name, _ in kinds}
        for i in range(STARTS):
            at = i % len(kinds)
            for name, fn in kinds[at:] + kinds[:at]:
                times[name].append(fn(i))
        base = statistics.median(times["berth, unlimited"])
        print("%d starts of %s each, interleaved; ratio = median / berth unlimited's" % (STARTS, TRUE))
        for name, _ in kinds:
            med, p99 = figures(times[name])
            print("%-32s median %7.2f ms   p99 %7.2f ms   ratio %.2fx"
                  % (name, med, p99, med / 1000 / base))
    finally:
        b.stop()
        off.stop()
        sweep()


main()
