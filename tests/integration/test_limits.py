"""Resource limits (the `limits` argument, limits.status), whole-tree kill
and pause/resume, against the real kernel: a fork bomb, a memory hog, a
CPU spinner, a disk filler and a descriptor hog, each run as an
unprivileged user under its limit, with berthd's cgroups and with
`[berthd] cgroups = off` (rlimits only), limits.status saying in each
what held; a setsid double-forked daemon holding a port, gone after a
timeout, a SIGKILL, a pty.close and a runtime.stop (with cgroups = off,
left by each until berthd's final sweep ends it); a runtime's counter
frozen and thawed without a gap (limits.status saying frozen), its
terminal's input kept until it is resumed, a freeze that cannot settle
answered frozen false after its bound, and thawed when restarted; a disk
bound that cannot be had (no room for the image, more content than the
size) said unavailable with the runtime started, a smaller one refused
as conflict; a runtime's and a session's OOM kill journaled as it
happens, their memory usage while they hold some; the catalog's limits,
overridden key by key; bad limits refused naming the
key; berthd and its gateway outside every limited cgroup, and no group
left once berthd has stopped. (Escape attempts: test_attacks_limits.py.)"""

import functools
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    DESKTOP,
    FORKBOMB,
    Sandbox,
    Skip,
    Timeout,
    case,
    desktop_service,
    expect,
    expect_eq,
    expect_in,
    forget_display,
    free_display,
    free_port,
    host_pid,
    host_processes,
    http_get,
    need,
    note,
    pid_alive,
    proc_status,
    pyfile,
    read_to_eof,
    run,
    scratch,
    shfile,
    short,
    track_closer,
    v1_only_why,
    wait_for,
    xvfb_service,
)
from harness.limits import (  # noqa: E402
    case_user,
    cgroup_dir,
    cgroups_of,
    cpu_seconds,
    in_berthd_mounts,
    limits_config,
    mounted_for_berthd,
    port_free,
    statvfs_free,
    user_dir,
)
from harness.runtimes import screen_text  # noqa: E402

PY = "/usr/bin/python3"
MiB = 1 << 20


def mode_name(cgroups):
    return "with cgroups" if cgroups else "with cgroups = off"


def both_modes(name, timeout=90):
    """Registers fn(cgroups) as two cases: with berthd's cgroups, then
    with `[berthd] cgroups = off`."""

    def register(fn):
        for on in (True, False):
            case("%s (%s)" % (name, mode_name(on)), timeout=timeout)(functools.partial(fn, on))
        return fn

    return register


def limits_of(c, target):
    st = c.call("limits.status", {"target": target})
    note("limits.status %s: %s" % (target, short(st, 1500)))
    expect_eq(st.get("target"), target, "limits.status's target")
    return st


def held(st, key):
    """One limit's report from a limits object, checked for its shape."""
    expect_in(key, st["limits"], "the limits reported")
    h = st["limits"][key]
    expect(isinstance(h.get("enforced"), bool) and isinstance(h.get("how"), str) and h["how"],
           "%s's report has enforced and how: %r" % (key, h))
    return h


def expect_cgroup(st, key, files):
    """key enforced by a cgroup, through one of files (v2 or v1 names)."""
    h = held(st, key)
    expect(h["enforced"], "%s not enforced: %r" % (key, h))
    expect(re.match(r"cgroup-v[12] ", h["how"]), "%s's mechanism is not a cgroup: %r" % (key, h["how"]))
    expect(any(f in h["how"] for f in files), "%s's mechanism names none of %r: %r" % (key, files, h["how"]))
    expect(st["cgroup"] in ("v2+v1", "v2", "v1"), "the target's cgroup: %r" % st["cgroup"])


def expect_rlimit(st, key, rlimit):
    h = held(st, key)
    expect(h["enforced"], "%s not enforced: %r" % (key, h))
    expect(h["how"].startswith("rlimit " + rlimit), "%s's mechanism: %r, not %s" % (key, h["how"], rlimit))


def expect_no_cgroup(st):
    expect_eq(st["cgroup"], None, "the target's cgroup with cgroups = off")
    for k in ("cpu_usec", "memory_current", "memory_peak", "processes"):
        expect(k not in st["usage"], "usage %s reported without a cgroup: %r" % (k, st["usage"]))


def stdout_until(c, pid, pred, timeout=30.0):
    """What proc pid (attached on c) writes to stdout, read until
    pred(text so far)."""
    stream = "proc/%s/stdout" % pid
    out = b""
    deadline = time.monotonic() + timeout
    while not pred(out):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("%s: not seen within %.0f s; got %r" % (stream, timeout, out[-600:]))
        m = c.recv(left)
        if m.get("type") == "data" and m.get("stream") == stream:
            if m.get("eof"):
                expect(pred(out), "%s ended with %r" % (stream, out[-600:]))
                break
            out += bytes(m["data"])
    return out


def proc_exited(sb, pid):
    return sb.wait_event(lambda e: e["kind"] == "proc.exited" and e["data"]["id"] == pid, 30)["data"]


# ---------------------------------------------------------------------
# The fork bomb

BOMB = """import errno, os, sys, time
made = failed = 0
last = None
for _ in range(int(sys.argv[1])):
    try:
        pid = os.fork()
    except OSError as e:
        failed += 1
        last = errno.errorcode.get(e.errno, e.errno)
        continue
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    made += 1
print("forked %d failed %d last %s" % (made, failed, last), flush=True)
time.sleep(60)
"""


@both_modes("a fork bomb under max_processes 64 stops at 64; ping and /healthz answer throughout", timeout=120)
def t_fork_bomb(cgroups):
    with case_user() as pw, Sandbox(config=limits_config(cgroups)) as sb:
        c = sb.unix()
        poll = sb.unix()
        p = c.call("proc.start", {"argv": [PY, pyfile(BOMB), "300"], "user": pw.pw_name, "attach": True,
                                  "limits": {"max_processes": 64}})
        pings = healthz = 0
        out = b""
        calm_after = None
        deadline = time.monotonic() + 60
        # berthd and its gateway are asked all the while the bomb forks,
        # and for a second more once it has hit its wall.
        while calm_after is None or time.monotonic() < calm_after:
            expect(time.monotonic() < deadline, "the bomb never reported; its output: %r" % out)
            t0 = time.monotonic()
            poll.call("ping", timeout=5)
            pings += 1
            status = http_get(sb.port, "/healthz", timeout=5)[0]
            expect_eq(status, 200, "/healthz while the bomb runs")
            healthz += 1
            expect(time.monotonic() - t0 < 5, "ping and /healthz took %.1f s" % (time.monotonic() - t0))
            try:
                m = c.recv(0.02)
            except Timeout:
                continue
            if m.get("type") == "data" and m.get("stream") == "proc/%s/stdout" % p["id"]:
                out += bytes(m["data"])
                if b"\n" in out and calm_after is None:
                    calm_after = time.monotonic() + 1.0
        note("bomb: %r; %d pings and %d /healthz answered meanwhile" % (out, pings, healthz))
        got = re.match(rb"forked (\d+) failed (\d+) last (\w+)", out)
        expect(got, "the bomb's report: %r" % out)
        made, failed = int(got.group(1)), int(got.group(2))
        # The bomb itself is one of the 64.
        expect(made <= 63, "%d forks succeeded under max_processes 64" % made)
        expect(made >= 48, "only %d forks succeeded: something else than the limit stopped them" % made)
        expect(failed > 0 and got.group(3) == b"EAGAIN", "the forks past the wall fail with EAGAIN: %r" % out)
        st = limits_of(c, "proc/" + p["id"])
        if cgroups:
            expect_cgroup(st, "max_processes", ("pids.max",))
            expect_eq(held(st, "max_processes")["value"], 64, "the value")
            expect_eq(st["usage"].get("processes"), made + 1, "the processes counted in the bomb's cgroup")
        else:
            expect_rlimit(st, "max_processes", "RLIMIT_NPROC")
            expect_no_cgroup(st)
        uid = str(pw.pw_uid)

        def left():
            return [q for q in host_processes() if sb.in_namespace(q) and pid_alive(q)
                    and (proc_status(q, "Uid") or "").split()[:1] == [uid]]

        expect_eq(len(left()), made + 1, "the bomb's processes running")
        c.call("proc.signal", {"id": p["id"], "signal": "KILL"})
        w = c.call("proc.wait", {"id": p["id"]}, timeout=20)
        expect_eq(w["exit"], {"signal": 9, "core": False}, "the bomb's end")
        wait_for(lambda: not left(), 10, "the bomb's children ended with it")
        c.call("ping")


# ---------------------------------------------------------------------
# The memory hog

HOG = """import sys
chunks = []
mib = 0
try:
    while mib < int(sys.argv[1]):
        chunks.append(b"\\x01" * (4 << 20))
        mib += 4
        print(mib, flush=True)
except MemoryError:
    chunks = None
    print("MemoryError at %d MiB" % mib, flush=True)
    sys.exit(3)
print("allocated %d MiB" % mib, flush=True)
"""


@both_modes("a memory hog under memory_bytes 64M is stopped: OOM-killed by the cgroup, or refused by RLIMIT_AS")
def t_memory_hog(cgroups):
    with Sandbox(config=limits_config(cgroups)) as sb:
        c = sb.unix()
        p = c.call("proc.start", {"argv": [PY, pyfile(HOG), "512"], "user": "nobody",
                                  "limits": {"memory_bytes": 64 * MiB}})
        ex = proc_exited(sb, p["id"])
        c.call("proc.attach", {"id": p["id"], "from_offset": 0})
        out = read_to_eof(c, ["proc/%s/stdout" % p["id"], "proc/%s/stderr" % p["id"]])["proc/%s/stdout" % p["id"]]
        last = out.split(b"\n")[-2] if b"\n" in out else b""
        note("the hog's exit: %r; its last line %r" % (ex, last))
        expect(b"allocated" not in out, "the hog got all it asked for: %r" % last)
        st = limits_of(c, "proc/" + p["id"])
        if cgroups:
            expect_eq((ex.get("signal"), ex["oom_killed"]), (9, True), "proc.exited of the hog")
            expect_cgroup(st, "memory_bytes", ("memory.limit_in_bytes", "memory.max"))
            expect(st["oom_kills"] >= 1, "limits.status counts no OOM kill: %r" % st["oom_kills"])
            oom = sb.wait_event(lambda e: e["kind"] == "limits.oom_kill", 10)["data"]
            expect_eq((oom["target"], oom["memory_bytes"]), ("proc/" + p["id"], 64 * MiB), "limits.oom_kill")
            expect(oom["oom_kills"] >= 1, "limits.oom_kill's count: %r" % oom)
            peak = st["usage"].get("memory_peak")
            if peak is not None:
                expect(peak <= 64 * MiB + MiB, "the peak past the limit: %d" % peak)
            mib = int(last) if last.isdigit() else 0
            expect(mib <= 64, "the hog had %d MiB before its end" % mib)
        else:
            expect_eq((ex.get("code"), ex["oom_killed"]), (3, False), "proc.exited of the hog")
            expect_in(b"MemoryError", last, "the hog's allocation failed")
            expect_rlimit(st, "memory_bytes", "RLIMIT_AS")
            expect_no_cgroup(st)
            kinds = [e["kind"] for e in sb.events()]
            expect("limits.oom_kill" not in kinds, "a limits.oom_kill event without a kill")


HOLDER = """import os, sys, time
held = b"\\x01" * (32 << 20)
open(sys.argv[1] + ".tmp", "w").close()
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
more = []
while True:
    more.append(b"\\x01" * (4 << 20))
"""


def oom_event(sb, target, seq):
    e = sb.wait_event(lambda e: e["kind"] == "limits.oom_kill" and e["data"]["target"] == target, 20, seq)["data"]
    note("limits.oom_kill: %r" % e)
    expect_eq(e["memory_bytes"], 64 * MiB, "limits.oom_kill's memory_bytes")
    expect(e["oom_kills"] >= 1, "limits.oom_kill's count: %r" % e)
    return e


@case("a runtime's and a terminal session's memory limit: usage while 32 MiB are held, then limits.oom_kill "
      "naming the target", timeout=120)
def t_memory_runtime_session():
    with case_user() as pw:
        runs = user_dir(pw)
        held_mark, go = os.path.join(runs, "held"), os.path.join(runs, "go")
        section = ("[runtime hog]\ncommand = %s\nuser = %s\nworkspace = %s\nrpc = %s %s %s\n"
                   "memory_bytes = 64M\n" % (PY, pw.pw_name, runs, pyfile(HOLDER), held_mark, go))
        with Sandbox(config=limits_config(True, section)) as sb:
            c = sb.unix()
            seq = sb.events()[-1]["seq"]
            c.call("runtime.start", {"name": "hog", "mode": "rpc"}, timeout=30)
            wait_for(lambda: os.path.exists(held_mark), 30, "the runtime to hold its 32 MiB")
            st = limits_of(c, "runtime/hog")
            expect_cgroup(st, "memory_bytes", ("memory.limit_in_bytes", "memory.max"))
            u = st["usage"]
            expect(32 * MiB <= u["memory_current"] <= 64 * MiB,
                   "memory_current while 32 MiB are held: %d" % u["memory_current"])
            if "memory_peak" in u:
                expect(u["memory_current"] <= u["memory_peak"] <= 64 * MiB, "memory_peak: %r" % u)
            expect_eq(st["oom_kills"], 0, "OOM kills before the hog grows")
            open(go, "w").close()
            oom_event(sb, "runtime/hog", seq)
            ex = sb.wait_event(lambda e: e["kind"] == "runtime.exited" and e["data"]["name"] == "hog", 20, seq)
            note("the runtime's exit: %r" % ex["data"])
            st = limits_of(c, "runtime/hog")
            expect(st["oom_kills"] >= 1, "limits.status's oom_kills of the runtime: %r" % st["oom_kills"])
            if "memory_peak" in st["usage"]:
                expect(st["usage"]["memory_peak"] <= 64 * MiB + MiB, "the peak past the limit: %r" % st["usage"])
            seq = sb.events()[-1]["seq"]
            s = c.call("pty.open", {"argv": [PY, pyfile(HOG), "512"], "user": pw.pw_name,
                                    "limits": {"memory_bytes": 64 * MiB}})
            oom_event(sb, "pty/" + s["id"], seq)
            ex = sb.wait_event(lambda e: e["kind"] == "pty.exited" and e["data"]["id"] == s["id"], 20, seq)["data"]
            note("the session's exit: %r" % ex)
            st = limits_of(c, "pty/" + s["id"])
            expect(st["oom_kills"] >= 1, "limits.status's oom_kills of the session: %r" % st["oom_kills"])


# ---------------------------------------------------------------------
# The CPU spinner

@both_modes("a CPU spinner under cpu_millis 250 gets well below a core, or the status says it cannot")
def t_cpu_spinner(cgroups):
    with Sandbox(config=limits_config(cgroups)) as sb:
        c = sb.unix()
        p = c.call("proc.start", {"argv": [PY, "-c", "while True: pass"], "user": "nobody",
                                  "limits": {"cpu_millis": 250}})
        pid = sb.host_pid(p["pid"])
        target = "proc/" + p["id"]
        time.sleep(0.5)
        t0, cpu0, st0 = time.monotonic(), cpu_seconds(pid), limits_of(c, target)
        time.sleep(3.0)
        t1, cpu1, st1 = time.monotonic(), cpu_seconds(pid), limits_of(c, target)
        share = (cpu1 - cpu0) / (t1 - t0)
        note("the spinner had %.3f of a core over %.1f s" % (share, t1 - t0))
        if cgroups:
            expect_cgroup(st1, "cpu_millis", ("cpu.max", "cpu.cfs_quota_us"))
            expect(0.05 < share < 0.6, "the spinner had %.2f of a core under cpu_millis 250" % share)
            used = (st1["usage"]["cpu_usec"] - st0["usage"]["cpu_usec"]) / 1e6 / (t1 - t0)
            note("its cgroup counted %.3f of a core" % used)
            expect(abs(used - share) < 0.1, "usage.cpu_usec says %.2f of a core, /proc %.2f" % (used, share))
        else:
            h = held(st1, "cpu_millis")
            expect(not h["enforced"], "cpu_millis said enforced without a cgroup: %r" % h)
            expect(h["how"].startswith("unavailable: "), "why cpu_millis is not held: %r" % h["how"])
            expect_no_cgroup(st1)
        c.call("proc.signal", {"id": p["id"], "signal": "KILL"})
        c.call("proc.wait", {"id": p["id"]}, timeout=20)


# ---------------------------------------------------------------------
# The disk filler

FILLER = """cd "$1" || exit 1
cat keep > "$2/kept" 2>&1
dd if=/dev/zero of=fill bs=1M count=200 2> "$2/dd.err"
echo "$?" > "$2/dd.rc"
stat -c %s fill > "$2/size"
mv "$2/dd.rc" "$2/done"
exec sleep 1000
"""


@both_modes("a disk filler under disk_bytes 32M gets ENOSPC; the disk outside loses no more than the image", timeout=120)
def t_disk_filler(cgroups):
    with case_user() as pw:
        ws, res = user_dir(pw), user_dir(pw)
        with open(os.path.join(ws, "keep"), "w") as f:
            f.write("what the workspace held before\n")
        os.chown(os.path.join(ws, "keep"), pw.pw_uid, pw.pw_gid)
        section = ("[runtime filler]\ncommand = /bin/sh\nuser = %s\nworkspace = %s\nrpc = %s %s %s\n"
                   % (pw.pw_name, ws, shfile(FILLER), ws, res))
        with Sandbox(config=limits_config(cgroups, section)) as sb:
            c = sb.unix()
            before = statvfs_free(sb.state_dir)
            c.call("runtime.start", {"name": "filler", "mode": "rpc", "limits": {"disk_bytes": 32 * MiB}},
                   timeout=60)
            wait_for(lambda: os.path.exists(os.path.join(res, "done")), 60, "the filler's dd to end")
            after = statvfs_free(sb.state_dir)
            err = open(os.path.join(res, "dd.err")).read()
            size = int(open(os.path.join(res, "size")).read())
            note("dd: exit %s, %d bytes written; %r; the outer filesystem lost %.1f MiB"
                 % (open(os.path.join(res, "done")).read().strip(), size, err[-200:], (before - after) / MiB))
            expect_eq(open(os.path.join(res, "done")).read().strip() != "0", True, "dd failed")
            expect_in("No space left on device", err, "dd's error")
            expect(size <= 32 * MiB, "the filler wrote %d bytes under disk_bytes 32M" % size)
            expect(size >= 16 * MiB, "the filler wrote only %d bytes: something else than the limit stopped it"
                   % size)
            expect(before - after <= 40 * MiB, "the outer filesystem lost %.1f MiB" % ((before - after) / MiB))
            expect_eq(open(os.path.join(res, "kept")).read(), "what the workspace held before\n",
                      "the workspace's content, copied into its bounded filesystem")
            st = limits_of(c, "runtime/filler")
            h = held(st, "disk_bytes")
            expect(h["enforced"], "disk_bytes not enforced: %r" % h)
            expect(h["how"].startswith("loop ext4 image") or h["how"] == "project quota", "how: %r" % h["how"])
            u = st["usage"]
            expect("disk_used" in u and "disk_size" in u, "disk usage in the status: %r" % u)
            expect(u["disk_size"] <= 32 * MiB and u["disk_used"] >= size, "disk usage: %r" % u)
            rs = c.call("runtime.status", {"name": "filler"})
            expect_eq(rs["limits"]["limits"]["disk_bytes"], h, "runtime.status's limits")
            c.call("runtime.stop", {"name": "filler"}, timeout=30)
            # Started again with the same bound: the same filesystem, its
            # files still there, no more room than before.
            os.unlink(os.path.join(res, "done"))
            c.call("runtime.start", {"name": "filler", "mode": "rpc", "limits": {"disk_bytes": 32 * MiB}},
                   timeout=60)
            wait_for(lambda: os.path.exists(os.path.join(res, "done")), 60, "the second filler's dd to end")
            expect_eq(open(os.path.join(res, "kept")).read(), "what the workspace held before\n",
                      "the workspace's content at the second start")
            again = int(open(os.path.join(res, "size")).read())
            expect(abs(again - size) <= MiB, "the second filler wrote %d bytes, the first %d" % (again, size))
            u2 = limits_of(c, "runtime/filler")["usage"]
            expect_eq(u2["disk_size"], u["disk_size"], "the bounded filesystem's size at the second start")
            expect(before - statvfs_free(sb.state_dir) <= 40 * MiB, "the outer filesystem lost %.1f MiB in all"
                   % ((before - statvfs_free(sb.state_dir)) / MiB))
            c.call("runtime.stop", {"name": "filler"}, timeout=30)


WRITER = """cd "$1" || exit 1
echo "$2" > "$2.mark"
exec sleep 1000
"""


def rpc_runtime(name, pw, ws):
    return ("[runtime %s]\ncommand = /bin/sh\nuser = %s\nworkspace = %s\nrpc = %s %s %s\n"
            % (name, pw.pw_name, ws, shfile(WRITER), ws, name))


def expect_unbounded(sb, c, name, ws, why):
    """runtime name started, its workspace not bounded, disk_bytes said
    unavailable with why in it."""
    wait_for(lambda: os.path.exists(os.path.join(ws, name + ".mark")), 20, "runtime %s to write its mark" % name)
    st = limits_of(c, "runtime/" + name)
    h = held(st, "disk_bytes")
    expect(not h["enforced"], "disk_bytes said enforced: %r" % h)
    expect(h["how"].startswith("unavailable: "), "how, of a bound not had: %r" % h["how"])
    expect_in(why, h["how"], "why disk_bytes is not held")
    expect("disk_used" not in st["usage"] and "disk_size" not in st["usage"], "disk usage of no bound: %r" % st)
    expect(not mounted_for_berthd(sb, ws), "%s is a mount point for berthd" % ws)
    rs = c.call("runtime.status", {"name": name})
    expect_in(rs["state"], ("ready",), "runtime %s's state" % name)
    expect_eq(rs["limits"]["limits"]["disk_bytes"], h, "runtime.status's disk_bytes")


@case("disk_bytes that cannot be had: a smaller bound than the workspace has is conflict and starts nothing; "
      "no room for the image, or more content than the size, starts the runtime unbounded, saying why", timeout=120)
def t_disk_not_had():
    with case_user() as pw:
        grown, roomless, full = user_dir(pw), user_dir(pw), user_dir(pw)
        with open(os.path.join(full, "big"), "wb") as f:
            f.write(b"\x01" * (20 * MiB))
        os.chown(os.path.join(full, "big"), pw.pw_uid, pw.pw_gid)
        section = "".join(rpc_runtime(n, pw, ws) for n, ws in
                          (("grown", grown), ("roomless", roomless), ("full", full)))
        with Sandbox(config=limits_config(True, section)) as sb:
            c = sb.unix()
            # Bounded to 48 MiB, then asked for 32: the files of the
            # larger bound might not fit, so nothing starts.
            c.call("runtime.start", {"name": "grown", "mode": "rpc", "limits": {"disk_bytes": 48 * MiB}}, timeout=60)
            expect(held(limits_of(c, "runtime/grown"), "disk_bytes")["enforced"], "the 48 MiB bound")
            c.call("runtime.stop", {"name": "grown"}, timeout=30)
            before = c.call("runtime.status", {"name": "grown"})
            r = c.request("runtime.start", {"name": "grown", "mode": "rpc", "limits": {"disk_bytes": 32 * MiB}},
                          timeout=60)
            note("runtime.start with a smaller bound: %r" % (r,))
            expect(not r["ok"], "runtime.start with a bound smaller than the workspace's succeeded")
            expect_eq(r["error"]["code"], "conflict", "its error")
            expect(all(w in r["error"]["message"] for w in ("48 MiB", "32 MiB")),
                   "the message names both sizes: %r" % r["error"]["message"])
            after = c.call("runtime.status", {"name": "grown"})
            expect_eq((after["state"], after["pid"]), (before["state"], before["pid"]), "the runtime after the conflict")
            c.call("runtime.start", {"name": "grown", "mode": "rpc", "limits": {"disk_bytes": 48 * MiB}}, timeout=60)
            expect(held(limits_of(c, "runtime/grown"), "disk_bytes")["enforced"], "the 48 MiB bound again")
            c.call("runtime.stop", {"name": "grown"}, timeout=30)
            # The images' filesystem full: neither a project quota (the
            # workspace's filesystem keeps none) nor an image can be had.
            disks = os.path.join(sb.state_dir, "disks")
            in_berthd_mounts(sb, ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", disks])
            c.call("runtime.start", {"name": "roomless", "mode": "rpc", "limits": {"disk_bytes": 32 * MiB}},
                   timeout=60)
            expect_unbounded(sb, c, "roomless", roomless, "No space left on device")
            left = os.listdir("/proc/%d/root%s" % (sb.berthd_pid(), disks))
            expect_eq(left, [], "what the failed image left in the images' filesystem")
            expect_in("is not bounded", sb.log(), "the log")
            # More content than the size.
            c.call("runtime.start", {"name": "full", "mode": "rpc", "limits": {"disk_bytes": 16 * MiB}}, timeout=60)
            expect_unbounded(sb, c, "full", full, "more than disk_bytes")
            expect_eq(os.path.getsize(os.path.join(full, "big")), 20 * MiB, "the workspace's file")
            for name in ("roomless", "full"):
                c.call("runtime.stop", {"name": name}, timeout=30)


# ---------------------------------------------------------------------
# Open files

FDHOG = """import errno, os
fds = []
try:
    while len(fds) < 4096:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print("stopped at %d after %d %s" % (max(fds) + 1, len(fds), errno.errorcode.get(e.errno, e.errno)))
else:
    print("never stopped: %d" % len(fds))
"""


@both_modes("open_files 32 holds: a command opening files stops at EMFILE, a terminal's shell has 32")
def t_open_files(cgroups):
    with Sandbox(config=limits_config(cgroups)) as sb:
        c = sb.unix()
        p = c.call("proc.start", {"argv": [PY, pyfile(FDHOG)], "user": "nobody", "attach": True,
                                  "limits": {"open_files": 32}})
        out = stdout_until(c, p["id"], lambda b: b.endswith(b"\n"))
        note("the descriptor hog: %r" % out)
        got = re.match(rb"stopped at (\d+) after (\d+) EMFILE", out)
        expect(got, "the hog did not stop at EMFILE: %r" % out)
        expect(int(got.group(1)) <= 32, "a descriptor numbered %d under open_files 32" % (int(got.group(1)) - 1))
        expect(int(got.group(2)) >= 16, "only %s opened: something else than the limit stopped it" % got.group(2))
        st = limits_of(c, "proc/" + p["id"])
        expect_rlimit(st, "open_files", "RLIMIT_NOFILE")
        expect_eq(st["cgroup"] is None, not cgroups, "the target has a cgroup")
        s = c.call("pty.open", {"argv": ["/bin/sh", "-c", "echo nofile=$(ulimit -n); sleep 30"], "user": "nobody",
                                "limits": {"open_files": 32}})
        c.call("pty.attach", {"id": s["id"], "from_offset": 0})
        text = b""
        deadline = time.monotonic() + 20
        while b"nofile=32" not in text:
            expect(time.monotonic() < deadline, "the terminal's shell said %r" % text)
            m = c.recv(20)
            if m.get("type") == "data" and m.get("stream") == "pty/" + s["id"]:
                expect(not m.get("eof"), "the terminal ended: %r" % text)
                text += bytes(m["data"])
        sessions = {x["id"]: x for x in c.call("pty.list")["sessions"]}
        expect_eq(held(sessions[s["id"]]["limits"], "open_files")["enforced"], True, "pty.list's limits")
        procs = {x["id"]: x for x in c.call("proc.list")["procs"]}
        expect_eq(procs[p["id"]]["limits"]["limits"], st["limits"], "proc.list's limits")


# ---------------------------------------------------------------------
# Whole-tree kill

DAEMON = """import os, signal, socket, sys, time
port, pidfile = int(sys.argv[1]), sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(8)
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        with open(pidfile + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
        while True:
            time.sleep(1)
    os._exit(0)
os.wait()
if sys.argv[3:] == ["stubborn"]:
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
print("daemon started", flush=True)
time.sleep(1000)
"""


def daemon_up(sb, pidfile, port, leader):
    """The host pid of the daemon once it listens on port, out of the
    session of leader (the target's first process, a namespace pid)."""
    nspid = int(wait_for(lambda: os.path.exists(pidfile) and open(pidfile).read(), 20, "the daemon's pid file"))
    pid = sb.host_pid(nspid)
    expect(not port_free(port), "the daemon does not hold port %d" % port)
    expect(os.getsid(pid) != os.getsid(sb.host_pid(leader)), "the daemon is in its target's session")
    expect(os.getpgid(pid) != os.getpgid(sb.host_pid(leader)), "the daemon is in its target's process group")
    return pid


def expect_gone(pid, port, what):
    wait_for(lambda: not pid_alive(pid), 10, "the setsid daemon (pid %d) ended by %s" % (pid, what))
    expect(port_free(port), "port %d still held after %s" % (port, what))


def tree_kill_case(v1):
    """Registers fn as a case, with berthd's cgroups as the host has them,
    or (v1) with the v1 hierarchies alone, whose kill is by rounds."""
    def register(fn):
        name = " ".join(fn.__doc__.split())
        case(name + (" (cgroup v1 alone: kill by rounds)" if v1 else ""), timeout=120)(functools.partial(fn, v1))
        return fn
    return register


def need_v1_only():
    why = v1_only_why()
    if why is not None:
        raise Skip("berthd cannot be run with cgroup v1 alone here: %s" % why)


@tree_kill_case(True)
@tree_kill_case(False)
def t_tree_kill(v1):
    """a timeout, proc.signal SIGKILL, pty.close and runtime.stop leave no process behind: a setsid daemon's
    port is free"""
    if v1:
        need_v1_only()
    with case_user() as pw:
        runs = user_dir(pw)
        daemon = pyfile(DAEMON)
        port = free_port()
        rt_pidfile = os.path.join(runs, "runtime.pid")
        section = ("[runtime leaver]\ncommand = %s\nuser = %s\nworkspace = %s\nrpc = %s %d %s\n"
                   "stop_timeout_ms = 500\n" % (PY, pw.pw_name, runs, daemon, port, rt_pidfile))
        with Sandbox(config=limits_config(True, section), cgroup_v1=v1) as sb:
            c = sb.unix()
            if v1:
                expect_in("no cgroup v2", [ln for ln in sb.log().splitlines() if "cgroups:" in ln][0], "the log")
            for i, (how, args) in enumerate((("a timeout", {"timeout_ms": 3000}),
                                             ("a timeout, limited", {"timeout_ms": 3000,
                                                                     "limits": {"max_processes": 16}}),
                                             ("proc.signal SIGKILL", {}))):
                pidfile = os.path.join(runs, "%d.pid" % i)
                p = c.call("proc.start", dict(args, argv=[PY, daemon, str(port), pidfile], user=pw.pw_name))
                pid = daemon_up(sb, pidfile, port, p["pid"])
                st = limits_of(c, "proc/" + p["id"])
                expect(st["cgroup"] is not None, "a command without a cgroup: %r" % st)
                if "timeout_ms" in args:
                    w = c.call("proc.wait", {"id": p["id"]}, timeout=20)
                    expect_eq(w["timed_out"], True, "the wait result")
                else:
                    c.call("proc.signal", {"id": p["id"], "signal": "KILL"})
                    c.call("proc.wait", {"id": p["id"]}, timeout=20)
                expect_gone(pid, port, how)
                note("%s: the daemon %d is gone, port %d free" % (how, pid, port))
            # A terminal whose program ignores the SIGHUP of pty.close gets
            # its SIGKILL: the daemon with it.
            pidfile = os.path.join(runs, "pty.pid")
            s = c.call("pty.open", {"argv": [PY, daemon, str(port), pidfile, "stubborn"], "user": pw.pw_name})
            pid = daemon_up(sb, pidfile, port, s["pid"])
            c.call("pty.close", {"id": s["id"]})
            expect_gone(pid, port, "pty.close")
            rt = c.call("runtime.start", {"name": "leaver", "mode": "rpc"}, timeout=30)
            pid = daemon_up(sb, rt_pidfile, port, rt["pid"])
            c.call("runtime.stop", {"name": "leaver"}, timeout=30)
            expect_gone(pid, port, "runtime.stop")


@case("with cgroups = off a timeout, proc.signal SIGKILL, pty.close and runtime.stop end what berthd can "
      "see of the target; a setsid double-forked daemon is left until berthd's final sweep ends it", timeout=120)
def t_tree_kill_without_cgroups():
    with case_user() as pw:
        runs = user_dir(pw)
        daemon = pyfile(DAEMON)
        ports = [free_port() for _ in range(4)]
        rt_pidfile = os.path.join(runs, "runtime.pid")
        section = ("[runtime leaver]\ncommand = %s\nuser = %s\nworkspace = %s\nrpc = %s %d %s\n"
                   "stop_timeout_ms = 500\n" % (PY, pw.pw_name, runs, daemon, ports[3], rt_pidfile))
        # Not PID 1 of a namespace: berthd's end alone does not end the
        # daemons with it, its final sweep must.
        with Sandbox(config=limits_config(False, section), pid1=False) as sb:
            c = sb.unix()
            left = []
            for i, (how, args) in enumerate((("a timeout", {"timeout_ms": 3000}),
                                             ("proc.signal SIGKILL", {}))):
                pidfile = os.path.join(runs, "%d.pid" % i)
                p = c.call("proc.start", dict(args, argv=[PY, daemon, str(ports[i]), pidfile], user=pw.pw_name))
                pid = daemon_up(sb, pidfile, ports[i], p["pid"])
                expect_eq(limits_of(c, "proc/" + p["id"])["cgroup"], None, "the command's cgroup")
                if "timeout_ms" in args:
                    w = c.call("proc.wait", {"id": p["id"]}, timeout=20)
                    expect_eq((w["timed_out"], w["exit"]), (True, {"signal": 9, "core": False}), "the wait result")
                else:
                    c.call("proc.signal", {"id": p["id"], "signal": "KILL"})
                    w = c.call("proc.wait", {"id": p["id"]}, timeout=20)
                    expect_eq(w["exit"], {"signal": 9, "core": False}, "the exit after SIGKILL")
                left.append((pid, ports[i], how))
            pidfile = os.path.join(runs, "pty.pid")
            s = c.call("pty.open", {"argv": [PY, daemon, str(ports[2]), pidfile, "stubborn"], "user": pw.pw_name})
            pid = daemon_up(sb, pidfile, ports[2], s["pid"])
            c.call("pty.close", {"id": s["id"]})
            wait_for(lambda: s["id"] not in [x["id"] for x in c.call("pty.list")["sessions"]], 10,
                     "the session to go after its SIGKILL")
            left.append((pid, ports[2], "pty.close"))
            # Without a cgroup each reached its process group alone.
            time.sleep(1)
            for pid, port, how in left:
                expect(pid_alive(pid) and not port_free(port), "the setsid daemon is gone after %s" % how)
            # A runtime's stop reaches its tree as berthd sees it: a daemon
            # whose middle process was gone before berthd looked is in no
            # session, group or parentage of the runtime's.
            rt = c.call("runtime.start", {"name": "leaver", "mode": "rpc"}, timeout=30)
            pid = daemon_up(sb, rt_pidfile, ports[3], rt["pid"])
            c.call("runtime.stop", {"name": "leaver"}, timeout=30)
            expect_eq(c.call("runtime.status", {"name": "leaver"})["state"], "exited", "the runtime after its stop")
            time.sleep(1)
            expect(pid_alive(pid) and not port_free(ports[3]), "the double-forked daemon is gone after runtime.stop")
            left.append((pid, ports[3], "runtime.stop"))
            note("left by a timeout, a SIGKILL, pty.close and runtime.stop: %r" % [x[0] for x in left])
            c.call("ping")
            sb.stop()
        for pid, port, how in left:
            expect_gone(pid, port, "berthd's final sweep (left by %s)" % how)


def listed_in(procs):
    """How many processes a cgroup.procs lists; 0 once the group is gone."""
    try:
        with open(procs) as f:
            return len(f.read().split())
    except FileNotFoundError:
        return 0


def freezer_state(d):
    with open(os.path.join(d, "freezer.state")) as f:
        return f.read().strip()


def freezer_set(d, state):
    """Writes state to a v1 freezer group d. Read it back only while
    frozen: once thawed, the bomb's group may empty and be gone at once."""
    with open(os.path.join(d, "freezer.state"), "w") as f:
        f.write(state)


def held_kill(c, poll, proc_id, group, run_):
    """proc.signal KILL of proc_id over c and a ping over poll while its
    freezer group is held frozen; thawed whatever happens, since frozen
    processes do not die."""
    procs = os.path.join(group, "cgroup.procs")
    freezer_set(group, "FROZEN")
    try:
        wait_for(lambda: freezer_state(group) == "FROZEN", 30, "the bomb's group frozen")
        frozen = listed_in(procs)
        t0 = time.monotonic()
        expect_eq(c.call("proc.signal", {"id": proc_id, "signal": "KILL"}, timeout=30), {}, "proc.signal KILL")
        poll.call("ping", timeout=30)
        listed = listed_in(procs)
        note("run %d: %d processes frozen; after the SIGKILL and a ping (%.1f ms) %d are listed"
             % (run_, frozen, (time.monotonic() - t0) * 1e3, listed))
        expect(listed > 0, "the frozen bomb's group is empty before its thaw")
    finally:
        freezer_set(group, "THAWED")


@case("cgroup v1 alone: a 512-process bomb is killed by rounds on a timer until its group is empty; one held "
      "frozen from outside is listed after berthd has answered the SIGKILL and a ping, and ends once thawed",
      timeout=240)
def t_kill_rounds_do_not_block():
    need_v1_only()
    with Sandbox(config=limits_config(True), cgroup_v1=True) as sb:
        c, poll = sb.unix(), sb.unix()
        # A group can take the kernel a while to empty. Frozen from
        # outside, where berthd does not thaw it, its processes keep their
        # SIGKILL pending and stay listed for as long as the test holds
        # them: a kill that waited for the group to empty would answer
        # neither the signal nor the ping until the thaw.
        for run_, hold in enumerate((False, True, True)):
            p = c.call("proc.start", {"argv": [PY, FORKBOMB, "512"], "attach": True,
                                      "limits": {"max_processes": 512}})
            stdout_until(c, p["id"], lambda b: b"up" in b)
            wait_for(lambda: limits_of(c, "proc/" + p["id"])["usage"]["processes"] >= 500, 60,
                     "the bomb's 512 processes")
            group = cgroup_dir("freezer", cgroups_of(sb.host_pid(p["pid"]))["freezer"])
            procs = os.path.join(group, "cgroup.procs")
            t0 = time.monotonic()
            if hold:
                held_kill(c, poll, p["id"], group, run_)
            else:
                expect_eq(c.call("proc.signal", {"id": p["id"], "signal": "KILL"}, timeout=30), {},
                          "proc.signal KILL")
            w = c.call("proc.wait", {"id": p["id"]}, timeout=60)
            note("run %d: the bomb ended after %.1f ms" % (run_, (time.monotonic() - t0) * 1e3))
            expect_eq(w["exit"], {"signal": 9, "core": False}, "the bomb's end")
            wait_for(lambda: not listed_in(procs), 10, "the bomb's group empty, or gone")
        expect("processes remain" not in sb.log(), "the log says processes remained after the rounds")


@case("berthd's shutdown, not PID 1 of a namespace, leaves no process of a command behind", timeout=60)
def t_shutdown_kill():
    with case_user() as pw:
        runs = user_dir(pw)
        port = free_port()
        pidfile = os.path.join(runs, "pid")
        # As a plain process, berthd's end does not end the others with a
        # namespace: what it leaves is left on the host.
        with Sandbox(config=limits_config(True), pid1=False) as sb:
            c = sb.unix()
            p = c.call("proc.start", {"argv": [PY, pyfile(DAEMON), str(port), pidfile, "stubborn"],
                                      "user": pw.pw_name})
            pid = daemon_up(sb, pidfile, port, p["pid"])
            sb.stop()
        expect_gone(pid, port, "berthd's shutdown")


# ---------------------------------------------------------------------
# Pause and resume

COUNTER = "i=0\nwhile :; do i=$((i+1)); echo \"n=$i\"; sleep 0.1; done\n"


def tui_runtime(name, pw, script):
    """A catalog entry: runtime name, the shell script in mode tui, as
    the user pw in a workspace of its own."""
    return ("[runtime %s]\ncommand = /bin/sh\nuser = %s\nworkspace = %s\ntui = %s\n"
            % (name, pw.pw_name, user_dir(pw), shfile(script)))


def counted(data):
    return [int(n) for n in re.findall(r"n=(\d+)\r?\n", screen_text(data))]


class Screen:
    """A PTY session's bytes, attached from offset 0 over c."""

    def __init__(self, c, pty_id):
        self.c, self.stream, self.data = c, "pty/" + pty_id, bytearray()
        c.call("pty.attach", {"id": pty_id, "from_offset": 0})

    def read(self, seconds):
        """Reads for seconds; returns how many bytes came."""
        n = len(self.data)
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return len(self.data) - n
            try:
                m = self.c.recv(left)
            except Timeout:
                continue
            if m.get("type") == "data" and m.get("stream") == self.stream and not m.get("eof"):
                expect_eq(m["offset"], len(self.data), "the offset of the next chunk")
                self.data += bytes(m["data"])

    def until(self, pred, what, timeout=20.0):
        """Reads until pred(the bytes so far)."""
        deadline = time.monotonic() + timeout
        while not pred(self.data):
            expect(time.monotonic() < deadline, "%s: not seen; got %r" % (what, bytes(self.data[-200:])))
            self.read(0.2)

    def until_count(self, n, timeout=20.0):
        self.until(lambda d: counted(d) and counted(d)[-1] >= n, "the counter reaching %d" % n, timeout)


@case("runtime.pause freezes a runtime's counter, its session kept; runtime.resume goes on from the next number",
      timeout=90)
def t_pause_resume():
    with case_user() as pw:
        section = tui_runtime("counter", pw, COUNTER)
        with Sandbox(config=limits_config(True, section)) as sb:
            c = sb.unix()
            expect_eq(c.error_of("runtime.pause", {"name": "counter"}), "conflict", "pause before a start")
            st = c.call("runtime.start", {"name": "counter", "mode": "tui"}, timeout=30)
            screen = Screen(c, st["pty"])
            screen.until_count(5)
            expect_eq(c.error_of("runtime.resume", {"name": "counter"}), "conflict", "resume of a running one")
            seq = sb.events()[-1]["seq"]
            expect_eq(c.call("runtime.pause", {"name": "counter"}), {"frozen": True}, "runtime.pause's answer")
            expect(frozen_in_kernel(sb, st["pid"]), "the runtime's group is not frozen once the pause answered")
            sb.wait_event(lambda e: e["kind"] == "runtime.paused" and e["data"]["name"] == "counter", 10, seq)
            expect_eq(c.call("runtime.status", {"name": "counter"})["paused"], True, "runtime.status's paused")
            expect_eq(limits_of(c, "runtime/counter")["frozen"], True, "limits.status's frozen while paused")
            expect_eq(c.error_of("runtime.pause", {"name": "counter"}), "conflict", "a second pause")
            # What was written before the freeze may still be on its way.
            screen.read(0.3)
            frozen_at = counted(screen.data)[-1]
            came = screen.read(1.0)
            expect_eq(came, 0, "bytes from the paused runtime over 1 s")
            # Its session keeps its ring and takes a new viewer.
            other = sb.unix()
            replay = Screen(other, st["pty"])
            replay.read(0.5)
            expect_eq(bytes(replay.data), bytes(screen.data), "the paused session replayed from offset 0")
            c.call("runtime.resume", {"name": "counter"})
            sb.wait_event(lambda e: e["kind"] == "runtime.resumed" and e["data"]["name"] == "counter", 10, seq)
            expect_eq(c.call("runtime.status", {"name": "counter"})["paused"], False, "paused after resume")
            expect_eq(limits_of(c, "runtime/counter")["frozen"], False, "limits.status's frozen after resume")
            screen.until_count(frozen_at + 5)
            nums = counted(screen.data)
            note("paused at %d; the counter went on to %d" % (frozen_at, nums[-1]))
            expect_eq(nums, list(range(1, nums[-1] + 1)), "the counter, across the pause")
            # A stop of a paused runtime thaws it first.
            c.call("runtime.pause", {"name": "counter"})
            c.call("runtime.stop", {"name": "counter"}, timeout=30)
            expect_eq(c.call("runtime.status", {"name": "counter"})["state"], "exited", "stopped while paused")
            expect_eq(c.error_of("runtime.pause", {"name": "counter"}), "conflict", "pause after the stop")


def freezer_of(sb, nspid):
    """(version, the directory of the freezing group) of a target's
    process: berthd's v2 group where it has cgroup.freeze, else its v1
    freezer group."""
    groups = cgroups_of(sb.host_pid(nspid))
    if "0" in groups:
        d = cgroup_dir("0", groups["0"])
        if d and os.path.exists(os.path.join(d, "cgroup.freeze")):
            return 2, d
    return 1, cgroup_dir("freezer", groups["freezer"])


def frozen_in_kernel(sb, nspid):
    version, d = freezer_of(sb, nspid)
    with open(os.path.join(d, "cgroup.events" if version == 2 else "freezer.state")) as f:
        text = f.read()
    return "frozen 1" in text.splitlines() if version == 2 else text.strip() == "FROZEN"


ECHOER = "stty -echo\necho ready\nwhile IFS= read -r l; do echo \"got:$l\"; done\n"


@case("input written to a paused runtime's terminal waits, and arrives once it is resumed", timeout=60)
def t_pause_input():
    with case_user() as pw:
        section = tui_runtime("echoer", pw, ECHOER)
        with Sandbox(config=limits_config(True, section)) as sb:
            c = sb.unix()
            st = c.call("runtime.start", {"name": "echoer", "mode": "tui"}, timeout=30)
            screen = Screen(c, st["pty"])
            screen.until(lambda d: b"ready" in d, "the echoer's ready")
            c.call("pty.input", {"id": st["pty"], "data": b"before\n"})
            screen.until(lambda d: b"got:before" in d, "the echoer's answer to the input before the pause")
            expect_eq(c.call("runtime.pause", {"name": "echoer"}), {"frozen": True}, "runtime.pause's answer")
            expect_eq(c.call("pty.input", {"id": st["pty"], "data": b"meanwhile\n"}), {}, "pty.input while paused")
            came = screen.read(1.0)
            expect_eq(came, 0, "bytes from the paused runtime over 1 s after its input")
            c.call("runtime.resume", {"name": "echoer"})
            screen.until(lambda d: b"got:meanwhile" in d, "the answer to the input sent while paused, after resume")
            c.call("runtime.stop", {"name": "echoer"}, timeout=30)


@case("a freeze that does not settle: runtime.pause answers frozen false after its bound, berthd answering "
      "meanwhile; limits.status says frozen once it has settled", timeout=90)
def t_pause_unsettled():
    holder = "/sys/fs/cgroup/freezer"
    if not os.path.exists(os.path.join(holder, "cgroup.procs")):
        raise Skip("no v1 freezer hierarchy to hold a process in")
    with case_user() as pw:
        section = tui_runtime("counter", pw, COUNTER)
        with Sandbox(config=limits_config(True, section)) as sb:
            c = sb.unix()
            st = c.call("runtime.start", {"name": "counter", "mode": "tui"}, timeout=30)
            screen = Screen(c, st["pty"])
            screen.until_count(3)
            if freezer_of(sb, st["pid"])[0] != 2:
                raise Skip("berthd freezes by the v1 freezer here: no other freezer can hold a process")
            # A process held frozen by another freezer (the test's own v1
            # group) never reaches the point where v2 freezes it: as a
            # process in uninterruptible sleep, berthd's freeze cannot
            # settle while it is held.
            hold = os.path.join(holder, "berth-test-hold-%d" % os.getpid())
            os.mkdir(hold)
            track_closer(lambda: os.path.isdir(hold) and os.rmdir(hold))
            with open(os.path.join(hold, "cgroup.procs"), "w") as f:
                f.write(str(sb.host_pid(st["pid"])))
            with open(os.path.join(hold, "freezer.state"), "w") as f:
                f.write("FROZEN")
            wait_for(lambda: open(os.path.join(hold, "freezer.state")).read().strip() == "FROZEN", 10, "the hold")
            poll, ctl = sb.unix(), sb.unix()
            pause_id = ctl.send_request("runtime.pause", {"name": "counter"})
            t0 = time.monotonic()
            pings = 0
            answer = None
            while answer is None:
                expect(time.monotonic() - t0 < 10, "runtime.pause never answered")
                p0 = time.monotonic()
                poll.call("ping", timeout=5)
                pings += 1
                expect(time.monotonic() - p0 < 0.5, "a ping took %.3f s while the pause waited"
                       % (time.monotonic() - p0))
                try:
                    m = ctl.recv(0.01)
                except Timeout:
                    continue
                if m.get("type") == "response" and m.get("id") == pause_id:
                    answer = m
            waited = time.monotonic() - t0
            note("runtime.pause answered %r after %.2f s; %d pings answered meanwhile" % (answer, waited, pings))
            expect(answer["ok"], "runtime.pause failed: %r" % answer)
            expect_eq(answer["result"], {"frozen": False}, "runtime.pause's answer, the freeze not settled")
            expect(waited >= 0.9, "runtime.pause answered after %.2f s, before its bound" % waited)
            expect(pings >= 10, "only %d pings answered while the pause waited" % pings)
            expect_eq(c.call("runtime.status", {"name": "counter"})["paused"], True, "runtime.status's paused")
            expect_eq(limits_of(c, "runtime/counter")["frozen"], False, "limits.status's frozen, not settled")
            expect_in("not frozen yet", sb.log(), "the log")
            with open(os.path.join(hold, "freezer.state"), "w") as f:
                f.write("THAWED")
            wait_for(lambda: limits_of(c, "runtime/counter")["frozen"], 10, "limits.status's frozen once settled")
            screen.read(0.5)
            n = counted(screen.data)[-1]
            expect_eq(screen.read(1.0), 0, "bytes from the paused runtime once its freeze settled")
            with open(os.path.join(hold, "cgroup.procs")) as f:
                for pid in f.read().split():
                    with open(os.path.join(holder, "cgroup.procs"), "w") as root:
                        root.write(pid)
            os.rmdir(hold)
            c.call("runtime.resume", {"name": "counter"})
            screen.until_count(n + 3)
            c.call("runtime.stop", {"name": "counter"}, timeout=30)


@case("a paused runtime killed and restarted by its policy runs thawed: its new counter goes on", timeout=60)
def t_pause_restart():
    with case_user() as pw:
        section = tui_runtime("counter", pw, COUNTER) + "restart = on-failure\nbackoff_min_ms = 50\n"
        with Sandbox(config=limits_config(True, section)) as sb:
            c = sb.unix()
            st = c.call("runtime.start", {"name": "counter", "mode": "tui"}, timeout=30)
            Screen(c, st["pty"]).until_count(3)
            c.call("runtime.pause", {"name": "counter"})
            os.kill(sb.host_pid(st["pid"]), 9)
            again = sb.wait_event(lambda e: e["kind"] == "runtime.started" and e["data"]["name"] == "counter"
                                  and e["data"]["pid"] != st["pid"], 20)["data"]
            Screen(sb.unix(), again["pty"]).until_count(3)
            expect_eq(c.call("runtime.status", {"name": "counter"})["paused"], False, "paused after the restart")
            c.call("runtime.stop", {"name": "counter"}, timeout=30)


@case("with cgroups = off runtime.pause is unavailable, says why, and the runtime runs on", timeout=60)
def t_pause_unavailable():
    with case_user() as pw:
        section = tui_runtime("counter", pw, COUNTER)
        with Sandbox(config=limits_config(False, section)) as sb:
            c = sb.unix()
            st = c.call("runtime.start", {"name": "counter", "mode": "tui"}, timeout=30)
            screen = Screen(c, st["pty"])
            screen.until_count(3)
            r = c.request("runtime.pause", {"name": "counter"})
            expect(not r["ok"], "runtime.pause without cgroups succeeded")
            expect_eq(r["error"]["code"], "unavailable", "runtime.pause's error")
            note("why: %r" % r["error"]["message"])
            expect(r["error"]["message"], "runtime.pause says why")
            expect_eq(c.call("runtime.status", {"name": "counter"})["paused"], False, "paused")
            n = counted(screen.data)[-1]
            screen.until_count(n + 3)
            c.call("runtime.stop", {"name": "counter"}, timeout=30)


# ---------------------------------------------------------------------
# Bad input

BAD_LIMITS = [
    ({"cpu_millis": -1}, "cpu_millis"),
    ({"cpu_millis": 0}, "cpu_millis"),
    ({"cpu_millis": 9}, "cpu_millis"),
    ({"cpu_millis": 1024001}, "cpu_millis"),
    ({"memory_bytes": 0}, "memory_bytes"),
    ({"memory_bytes": 4 * MiB - 1}, "memory_bytes"),
    ({"memory_bytes": (1 << 50) + 1}, "memory_bytes"),
    ({"memory_bytes": 1 << 63}, "memory_bytes"),
    ({"memory_bytes": "64M"}, "memory_bytes"),
    ({"max_processes": 0}, "max_processes"),
    ({"max_processes": 1 << 63}, "max_processes"),
    ({"max_processes": 1.5}, "max_processes"),
    ({"max_processes": True}, "max_processes"),
    ({"open_files": 15}, "open_files"),
    ({"open_files": -32}, "open_files"),
    ({"memry_bytes": 64 * MiB}, "memry_bytes"),
]


@case("bad limits are refused naming the key; disk_bytes on a command, unknown targets, pause when not running")
def t_bad_input():
    with case_user() as pw:
        section = ("[runtime idle]\ncommand = /bin/sh\nuser = %s\nworkspace = %s\nrpc = %s\n"
                   % (pw.pw_name, user_dir(pw), shfile("exec sleep 100\n")))
        with Sandbox(config=limits_config(True, section)) as sb:
            c = sb.ws()
            for limits, key in BAD_LIMITS:
                for op, args in (("proc.start", {"argv": ["true"]}), ("pty.open", {"argv": ["true"]}),
                                 ("runtime.start", {"name": "idle", "mode": "rpc"})):
                    r = c.request(op, dict(args, limits=limits))
                    what = "%s with limits %r" % (op, limits)
                    expect(not r["ok"], "%s succeeded" % what)
                    expect_eq(r["error"]["code"], "bad_args", what)
                    expect_in(key, r["error"]["message"], "the message of %s" % what)
            r = c.request("proc.start", {"argv": ["true"], "limits": {"memory_bytes": 0}})
            expect_in("4194304", r["error"]["message"], "the message names the range")
            for op in ("proc.start", "pty.open"):
                r = c.request(op, {"argv": ["true"], "limits": {"disk_bytes": 32 * MiB}})
                expect_eq(r["error"]["code"] if not r["ok"] else None, "bad_args", "%s with disk_bytes" % op)
                expect_in("disk_bytes", r["error"]["message"], "the message of %s with disk_bytes" % op)
            for limits in ("64M", [64], 5):
                expect_eq(c.error_of("proc.start", {"argv": ["true"], "limits": limits}), "bad_args",
                          "limits %r" % (limits,))
            expect_eq(c.call("proc.list")["procs"], [], "the commands started by bad requests")
            expect_eq(c.call("pty.list")["sessions"], [], "the sessions opened by bad requests")
            expect_eq(c.call("runtime.status", {"name": "idle"})["state"], "stopped", "the runtime")
            for target in ("proc/00000000", "pty/00000000", "runtime/nope", "task/0123456789abcdef"):
                expect_eq(c.error_of("limits.status", {"target": target}), "not_found", "limits.status %s" % target)
            expect_eq(c.error_of("limits.status", {}), "bad_args", "limits.status without a target")
            expect_eq(c.error_of("limits.status", {"target": 5}), "bad_args", "limits.status of a number")
            expect_eq(c.error_of("runtime.pause", {"name": "idle"}), "conflict", "pause of a stopped runtime")
            expect_eq(c.error_of("runtime.resume", {"name": "idle"}), "conflict", "resume of a stopped runtime")
            expect_eq(c.error_of("runtime.pause", {"name": "nope"}), "not_found", "pause of an unknown runtime")
            c.call("ping")


@case("values the kernel rounds (memory to pages) or keeps exactly are said enforced, at the value asked")
def t_odd_values():
    with Sandbox(config=limits_config(True)) as sb:
        c = sb.unix()
        want = {"memory_bytes": 64 * MiB + 100, "cpu_millis": 333, "max_processes": 77, "open_files": 99}
        p = c.call("proc.start", {"argv": ["sleep", "30"], "user": "nobody", "limits": want})
        st = limits_of(c, "proc/" + p["id"])
        for k, v in want.items():
            h = held(st, k)
            expect_eq((h["value"], h["enforced"]), (v, True), "%s asked as %d" % (k, v))
        pid = sb.host_pid(p["pid"])
        groups = cgroups_of(pid)
        # The kernel keeps a memory limit in whole pages.
        page = os.sysconf("SC_PAGE_SIZE")
        kept = {"memory_bytes": ("memory", ["%d" % (64 * MiB), "%d" % (64 * MiB + page)]),
                "max_processes": ("pids", ["77"]), "cpu_millis": ("cpu", ["33300", "33300 100000"])}
        for key, (ctl, values) in kept.items():
            version, name = st["limits"][key]["how"].split()[:2]
            hier = "0" if version == "cgroup-v2" else [x for x in groups if ctl in x.split(",")][0]
            with open(os.path.join(cgroup_dir(hier, groups[hier]), name)) as f:
                expect_in(f.read().strip(), values, "the command's %s" % name)
        c.call("proc.signal", {"id": p["id"], "signal": "KILL"})


@case("limits in the catalog: good ones start, a bad one stops berthd at start, naming the file and the line")
def t_bad_catalog():
    good = "".join("%s\n" % kv for kv in ("cpu_millis = 500", "memory_bytes = 64M", "max_processes = 32",
                                           "disk_bytes = 1G", "open_files = 64"))
    runtime = "[runtime r]\ncommand = /bin/true\nuser = nobody\nworkspace = %s\nrpc =\n" % scratch()
    with Sandbox(config=limits_config(True, runtime + good),
                 wait="socket") as sb:
        sb.unix().call("ping")
    for line in ("memory_bytes = 1K", "max_processes = 0", "cpu_millis = lots", "open_files = 2000000"):
        text = limits_config(True, runtime + line + "\n")
        at = text.splitlines().index(line) + 1
        with Sandbox(config=text, wait=None) as sb:
            rc = sb.wait_exit(10)
            log = sb.log()
            where = "%s:%d:" % (sb.config_path, at)
        expect(rc != 0, "berthd started with %r; log:\n%s" % (line, log))
        expect(where in log, "the log does not name %r for %r:\n%s" % (where, line, log))
        expect_in(line.split()[0], log, "the log names the key")


@case("runtime.start's limits override the catalog's key by key; the process runs under both")
def t_catalog_override():
    with case_user() as pw:
        section = ("[runtime idle]\ncommand = /bin/sh\nuser = %s\nworkspace = %s\nrpc = %s\n"
                   "max_processes = 32\nopen_files = 64\n"
                   % (pw.pw_name, user_dir(pw), shfile("exec sleep 100\n")))
        with Sandbox(config=limits_config(True, section)) as sb:
            c = sb.unix()
            st = c.call("runtime.start", {"name": "idle", "mode": "rpc", "limits": {"open_files": 40}}, timeout=30)
            pid = sb.host_pid(st["pid"])
            lim = limits_of(c, "runtime/idle")["limits"]
            expect_eq({k: v["value"] for k, v in lim.items()}, {"max_processes": 32, "open_files": 40},
                      "the limits of the catalog and of the request")
            expect_eq(c.call("runtime.status", {"name": "idle"})["limits"]["limits"], lim, "runtime.status's limits")
            with open("/proc/%d/limits" % pid) as f:
                nofile = [ln.split()[3:5] for ln in f if ln.startswith("Max open files")][0]
            expect_eq(nofile, ["40", "40"], "the runtime's RLIMIT_NOFILE (soft, hard)")
            pids = [v for h, v in cgroups_of(pid).items() if "pids" in h.split(",")]
            expect(pids, "the runtime is in no pids group")
            mount = [ln.split()[4] for ln in open("/proc/self/mountinfo")
                     if " - cgroup " in ln and "pids" in ln.split()[-1].split(",")]
            if mount:
                with open(os.path.join(mount[0], pids[0].lstrip("/"), "pids.max")) as f:
                    expect_eq(f.read().strip(), "32", "the runtime's pids.max")
            c.call("runtime.stop", {"name": "idle"}, timeout=30)


# ---------------------------------------------------------------------
# berth itself

def oom_score_adj(pid):
    with open("/proc/%d/oom_score_adj" % pid) as f:
        return int(f.read())


def under(path, subtree):
    return path == subtree or path.startswith(subtree.rstrip("/") + "/")


def limited_command(sb, c):
    """Starts a limited command: (its proc.start result, its cgroups,
    berth's subtree in each hierarchy where it has a group of its own)."""
    p = c.call("proc.start", {"argv": ["sleep", "30"], "user": "nobody",
                              "limits": {"memory_bytes": 64 * MiB, "max_processes": 8, "cpu_millis": 500}})
    cmd = cgroups_of(sb.host_pid(p["pid"]))
    own = cgroups_of(sb.berthd_pid())
    note("berthd's cgroups: %r; the command's: %r" % (own, cmd))
    # A target's group is "<berth's subtree>/<tag>.<name>", the subtree
    # named berth.
    subtrees = {h: os.path.dirname(path) for h, path in cmd.items() if path != own.get(h)}
    for ctl in ("memory", "pids"):
        expect(any(ctl in h.split(",") for h in subtrees), "the command is in no %s group of its own" % ctl)
    for h, subtree in subtrees.items():
        expect_eq(os.path.basename(subtree), "berth", "the parent of the command's %s group %s" % (h, cmd[h]))
    return p, cmd, subtrees


def outside(who, pid, subtrees):
    """pid is in none of berth's subtrees."""
    theirs = cgroups_of(pid)
    expect(theirs, "%s's cgroups are not readable" % who)
    for h, subtree in subtrees.items():
        expect(not under(theirs.get(h, ""), subtree), "%s is in %s's group %s" % (who, h, theirs.get(h)))


@case("berthd and its gateway are in no limited cgroup; a limited command is, under berth's subtree; "
      "the log says once which hierarchies are used")
def t_berth_outside():
    with Sandbox(config=limits_config(True)) as sb:
        c = sb.unix()
        p, cmd, subtrees = limited_command(sb, c)
        dirs = [cgroup_dir(h, cmd[h]) for h in subtrees]
        expect(all(d and os.path.isdir(d) for d in dirs), "the command's groups are not where /proc says: %r" % dirs)
        for who, pid in (("berthd", sb.berthd_pid()), ("the gateway", sb.gateway_pid())):
            outside(who, pid, subtrees)
        # Under a host's memory pressure an agent's processes go first:
        # berth lowers its own score where it may, and says so where not.
        target_adj = oom_score_adj(sb.host_pid(p["pid"]))
        for who, pid, word in (("berthd", sb.berthd_pid(), "berthd"), ("the gateway", sb.gateway_pid(), "gateway")):
            adj = oom_score_adj(pid)
            note("%s's oom_score_adj: %d; the command's: %d" % (who, adj, target_adj))
            said = [ln for ln in sb.log().splitlines() if "oom_score_adj" in ln and word in ln]
            protected = adj < 0 and target_adj > adj
            expect(protected or said, "%s's oom_score_adj is %d (the command's %d) and the log does not say why"
                   % (who, adj, target_adj))
        c.call("proc.signal", {"id": p["id"], "signal": "KILL"})
        c.call("proc.wait", {"id": p["id"]})
        lines = [ln for ln in sb.log().splitlines() if "cgroup" in ln]
        note("the log's cgroup lines: %r" % lines)
        expect_eq(len(lines), 1, "lines of the log saying which cgroups are used")
    # Ended, the command's groups are removed; stopped, berthd leaves
    # none behind.
    # The subtree itself may go with the last berthd that used it.
    tag = os.path.basename(dirs[0]).split(".")[0] + "."
    parents = [os.path.dirname(d) for d in dirs if os.path.isdir(os.path.dirname(d))]
    left = [os.path.join(p, n) for p in parents for n in os.listdir(p) if n.startswith(tag)]
    expect(not left, "groups left after berthd stopped: %r" % left)
    with Sandbox(config=limits_config(False)) as sb:
        lines = [ln for ln in sb.log().splitlines() if "cgroup" in ln]
        note("with cgroups = off: %r" % lines)
        expect_eq(len(lines), 1, "lines of the log saying cgroups are off")
        expect(re.search(r"\boff\b", lines[0]), "the log does not say cgroups are off: %r" % lines[0])


@case("berth-desktop, a service of berthd's, is in no limited cgroup", timeout=60)
def t_desktop_outside():
    if not os.access(DESKTOP, os.X_OK):
        raise Skip("berth-desktop is not built here (./configure --disable-desktop)")
    need("Xvfb", "xdpyinfo")
    n = free_display()
    track_closer(lambda: forget_display(n))
    with Sandbox(config=limits_config(True, xvfb_service(n) + desktop_service(n, debug=False))) as sb:
        c = sb.unix()
        desktop = host_pid(sb, "berth-desktop")
        p, cmd, subtrees = limited_command(sb, c)
        outside("berth-desktop", desktop, subtrees)
        c.call("proc.signal", {"id": p["id"], "signal": "KILL"})


run()
