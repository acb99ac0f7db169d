"""The limits from the attacker's side: a limited command, run as an
unprivileged user, tries to lift its own limits (write its cgroup's
limit files, move itself to berth's subtree or the hierarchy's root,
make a group of its own, thaw or kill berth's groups) and a runtime's
user tries to reach or unmount the image that bounds its workspace.
Each attempt is made for real and must fail; the limits still hold
after."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, case, expect, expect_eq, note, pyfile, read_to_eof, run  # noqa: E402
from harness.limits import case_user, cgroups_of, limits_config, user_dir  # noqa: E402

PY = "/usr/bin/python3"
MiB = 1 << 20

# Every write the command can think of to escape its group, each tried
# and reported as "PATH: errno" (or "PATH: written" if one went
# through).
ESCAPE = r"""import errno, os, sys
me = str(os.getpid())
groups = {}
for line in open("/proc/self/cgroup"):
    num, ctls, path = line.rstrip("\n").split(":", 2)
    groups[ctls or num] = path
mounts = {}
for line in open("/proc/self/mountinfo"):
    f = line.split()
    sep = f.index("-")
    fstype, opts = f[sep + 1], f[sep + 3].split(",")
    if fstype == "cgroup2":
        mounts["0"] = f[4]
    elif fstype == "cgroup":
        for ctls in groups:
            if ctls != "0" and set(ctls.split(",")) <= set(opts):
                mounts[ctls] = f[4]
def tryw(path, text):
    try:
        with open(path, "w") as fh:
            fh.write(text)
        print("%s: written" % path)
    except OSError as e:
        print("%s: %s" % (path, errno.errorcode.get(e.errno, e.errno)))
def trymk(path):
    try:
        os.mkdir(path)
        print("%s: made" % path)
    except OSError as e:
        print("%s: %s" % (path, errno.errorcode.get(e.errno, e.errno)))
for ctls, path in sorted(groups.items()):
    if ctls not in mounts or "/berth/" not in path:
        continue
    own = mounts[ctls] + path
    subtree = os.path.dirname(own)
    for f in ("pids.max", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes",
              "cpu.cfs_quota_us", "memory.max", "cpu.max", "cgroup.freeze"):
        if os.path.exists(os.path.join(own, f)):
            tryw(os.path.join(own, f), "max\n" if f in ("pids.max", "memory.max", "cpu.max") else
                 ("0\n" if f == "cgroup.freeze" else "-1\n"))
    tryw(os.path.join(subtree, "cgroup.procs"), me)
    tryw(os.path.join(mounts[ctls], "cgroup.procs"), me)
    os.path.exists(os.path.join(subtree, "cgroup.kill")) and tryw(os.path.join(subtree, "cgroup.kill"), "1")
    trymk(os.path.join(own, "escape"))
    trymk(os.path.join(subtree, "escape"))
print("done", flush=True)
"""




@case("a limited command cannot lift its own limits: its cgroup's files, berth's subtree and the root refuse it", timeout=90)
def t_cannot_lift():
    with case_user() as pw, Sandbox(config=limits_config(True)) as sb:
        c = sb.unix()
        limits = {"max_processes": 32, "memory_bytes": 64 * MiB, "cpu_millis": 500}
        path = pyfile(ESCAPE + "import time\ntime.sleep(30)\n", "escape.py")
        p = c.call("proc.start", {"argv": [PY, path], "user": pw.pw_name, "limits": limits, "attach": True})
        out = b""
        stream = "proc/%s/stdout" % p["id"]
        while b"done\n" not in out:
            m = c.recv(30)
            if m.get("type") == "data" and m.get("stream") == stream:
                expect(not m.get("eof"), "the command ended before it was done: %r" % out)
                out += bytes(m["data"])
        text = out.decode()
        note("attempts:\n" + text)
        lines = [ln for ln in text.splitlines() if ln != "done"]
        expect(len(lines) >= 12, "too few attempts were made: %r" % lines)
        for ln in lines:
            expect(ln.endswith(": EACCES") or ln.endswith(": EPERM") or ln.endswith(": EROFS"),
                   "an escape was not refused: %s" % ln)
        before = cgroups_of(sb.host_pid(p["pid"]))
        expect(all("/berth/" in before[k] for k in ("0", "pids", "memory", "cpu") if k in before),
               "the command left its group: %r" % before)
        st = c.call("limits.status", {"target": "proc/" + p["id"]})
        for k, v in limits.items():
            expect_eq(st["limits"][k]["value"], v, "%s after the attempts" % k)
            expect(st["limits"][k]["enforced"], "%s no longer enforced: %r" % (k, st["limits"][k]))
        # The files themselves still say what berthd wrote.
        for ctls, f, want in (("pids", "pids.max", "32"), ("memory", "memory.limit_in_bytes", str(64 * MiB)),
                              ("cpu", "cpu.cfs_quota_us", "50000")):
            if ctls not in before:
                continue
            with open("/sys/fs/cgroup/%s%s/%s" % (ctls, before[ctls], f)) as fh:
                expect_eq(fh.read().strip(), want, "%s of the command's group" % f)
        c.call("proc.signal", {"id": p["id"], "signal": "KILL"})


def as_user(c, pw, script, *args):
    """Runs a Python script as pw in the sandbox (berthd's own mount
    namespace, where the workspace is mounted); its stdout."""
    path = pyfile(script, "probe.py")
    p = c.call("proc.start", {"argv": [PY, path] + list(args), "user": pw.pw_name, "attach": True})
    return read_to_eof(c, ["proc/%s/stdout" % p["id"]])["proc/%s/stdout" % p["id"]].decode()


DISK_PROBE = """import os, subprocess, sys
ws, image, disks = sys.argv[1:]
try:
    os.stat(image)
    print("image reached")
except OSError as e:
    print("image", e.strerror)
try:
    print("disks listed", os.listdir(disks))
except OSError as e:
    print("disks", e.strerror)
try:
    open(image, "r+b")
    print("image opened")
except OSError as e:
    print("image", e.strerror)
r = subprocess.run(["umount", ws], capture_output=True)
print("umount", "refused" if r.returncode else "done")
r = subprocess.run(["umount", "-l", ws], capture_output=True)
print("lazy umount", "refused" if r.returncode else "done")
st = os.statvfs(ws)
print("size", st.f_blocks * st.f_frsize)
"""


@case("a runtime's user can neither reach the image that bounds its workspace nor unmount it", timeout=120)
def t_disk_image():
    with case_user() as pw:
        ws = user_dir(pw)
        conf = limits_config(True, "[runtime w]\ncommand = /bin/sleep\nuser = %s\nworkspace = %s\n"
                             "disk_bytes = 32M\nrpc = 60\n" % (pw.pw_name, ws))
        with Sandbox(config=conf) as sb:
            c = sb.unix()
            st = c.call("runtime.start", {"name": "w", "mode": "rpc"}, timeout=60)
            h = st["limits"]["limits"]["disk_bytes"]
            expect(h["enforced"], "disk_bytes not enforced: %r" % h)
            disks = os.path.join(sb.state_dir, "disks")
            images = [f for f in os.listdir(disks) if f.endswith(".img")]
            expect_eq(len(images), 1, "images in the state directory")
            out = as_user(c, pw, DISK_PROBE, ws, os.path.join(disks, images[0]), disks)
            note("as %s:\n%s" % (pw.pw_name, out))
            expect("image reached" not in out and "disks listed" not in out,
                   "the user reached the image or listed its folder: %r" % out)
            expect("image opened" not in out, "the user opened the image: %r" % out)
            expect("umount refused" in out and "lazy umount refused" in out, "the user unmounted the workspace: %r" % out)
            size = int(out.rsplit("size ", 1)[1].split()[0])
            expect(size <= 32 * MiB, "the workspace's filesystem after the attempts is %d bytes" % size)
            again = c.call("limits.status", {"target": "runtime/w"})
            expect(again["limits"]["disk_bytes"]["enforced"], "the bound after the attempts: %r" % again)
            c.call("runtime.stop", {"name": "w"}, timeout=30)


run()
