#!/usr/bin/python3
"""The image's steps, for real: images/install.sh builds berth's packages
from the tree (as images/Dockerfile's build stage does) and installs them
and the desktop into a Debian 12 root (as its final stage does), a root
of this machine's own system seen through an overlay, with berth's users
removed first so that the packages must make them; then berthd boots
from that root as the image runs it (ENTRYPOINT and CMD of the
Dockerfile, in a network namespace of its own) as PID 1 of a PID
namespace, and /readyz says the whole desktop is strictly ready: the
gateway as berth-gateway, the desktop as agent, every check passing.
SIGTERM ends it with status 0."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BUILDDIR, SRCDIR, case, expect, expect_eq, note, run, scratch, wait_for  # noqa: E402
from harness.netns import netns_http  # noqa: E402
from harness.procs import proc_argv, proc_children  # noqa: E402

ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
PORT = 7100

# Run in a mount namespace of its own: the overlay, the root's own /proc,
# /dev, /tmp, the packages bound in, the users removed, install.sh, then
# berthd as the image's entry point runs it.
SCRIPT = r"""
set -eu
top=$1 debs=$2 images=$3 out=$4
mount -t tmpfs -o size=4g tmpfs "$top"
mkdir "$top/upper" "$top/work" "$top/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$top/upper,workdir=$top/work" "$top/root"
r=$top/root
mount -t proc proc "$r/proc"
mount --rbind /sys "$r/sys"
mount --rbind /dev "$r/dev"
mount -t tmpfs tmpfs "$r/tmp"
mount -t tmpfs tmpfs "$r/run"
mount -t tmpfs tmpfs "$r/dev/shm"
mkdir "$r/tmp/debs" "$r/tmp/images" "$r/tmp/out"
mount --bind "$debs" "$r/tmp/debs"
mount --bind "$images" "$r/tmp/images"
mount --bind "$out" "$r/tmp/out"
rm -rf "$r/var/lib/berth" "$r/etc/berth"
# pivot_root, not chroot: a chrooted process may not make a user
# namespace, which Chromium's sandbox needs.
mkdir -p "$r/.oldroot"
cd "$r"
pivot_root . .oldroot
cd /
umount -l /.oldroot
for u in agent berth-gateway; do
	getent passwd $u >/dev/null && userdel -f $u
	getent group $u >/dev/null && groupdel $u
done
/tmp/images/install.sh install /tmp/debs desktop >/tmp/out/install.log 2>&1
echo installed
exec unshare -p -f -n --mount-proc /bin/sh -c \
	'ip link set lo up && exec /usr/sbin/berthd --config /etc/berth/berth.conf --listen 127.0.0.1:7100'
"""


def sh(argv, cwd=None, timeout=900):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=ENV)
    return p.returncode, p.stdout, p.stderr


def build_packages():
    """images/install.sh build on make distdir's tree: the packages' directory."""
    d = scratch(0o755)
    tree = os.path.join(d, "berth")
    rc, _, err = sh(["make", "-s", "-C", BUILDDIR, "distdir", "distdir=" + tree])
    expect_eq(rc, 0, "make distdir: %s" % err[-1500:])
    out = os.path.join(d, "debs")
    rc, so, err = sh([os.path.join(tree, "images", "install.sh"), "build", tree, out])
    if rc != 0:
        note((so + err)[-4000:])
    expect_eq(rc, 0, "images/install.sh build")
    return out


def berthd_of(pid):
    """The berthd under the chroot and unshare the script execs into."""
    for _ in range(3):
        kids = proc_children(pid)
        if not kids:
            return None
        pid = kids[0]
        argv = proc_argv(pid)
        if argv and argv[0].endswith("berthd"):
            return pid
    return None


def descendants(pid):
    """{program name: pid} of every process under pid."""
    out, todo = {}, [pid]
    while todo:
        for kid in proc_children(todo.pop()):
            argv = proc_argv(kid)
            if argv:
                out.setdefault(os.path.basename(argv[0]), kid)
            todo.append(kid)
    return out


def uid_name(pid, root):
    """The user name, in the image's own passwd, of pid's real uid."""
    with open("/proc/%d/status" % pid) as f:
        uid = re.search(r"^Uid:\s+(\d+)", f.read(), re.M).group(1)
    with open(os.path.join(root, "etc", "passwd")) as f:
        for line in f:
            parts = line.split(":")
            if parts[2] == uid:
                return parts[0]
    return "#" + uid


@case("install.sh builds and installs the packages into a Debian 12 root; berthd boots from it as PID 1 and "
      "/readyz says the desktop is strictly ready", 900)
def t_image():
    for tool in ("dpkg-buildpackage", "chroot", "unshare"):
        expect(shutil.which(tool), "no %s (./dev test installs it)" % tool)
    debs = build_packages()
    top = scratch(0o755)
    out = scratch(0o755)
    log = os.path.join(out, "install.log")
    script = os.path.join(scratch(0o755), "boot.sh")
    with open(script, "w") as f:
        f.write(SCRIPT)
    errlog = os.path.join(scratch(0o755), "berthd.log")
    err = open(errlog, "w")
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "/bin/sh", script, top, debs,
                          os.path.join(SRCDIR, "images"), out], stdout=subprocess.PIPE, stderr=err,
                         text=True, start_new_session=True)
    err.close()
    try:
        line = p.stdout.readline()
        if line.strip() != "installed":
            p.wait(30)
            with open(log) as f:
                note(f.read()[-4000:])
            with open(errlog) as f:
                raise AssertionError("install.sh install failed: %s" % f.read()[-2000:])
        pid = wait_for(lambda: berthd_of(p.pid), 30, "berthd in the image's root")
        root = "/proc/%d/root" % pid

        def ready():
            try:
                status, _, body = netns_http(pid, PORT, "GET", "/readyz", timeout=5)
            except OSError:
                return None
            return json.loads(body) if status == 200 else None

        t0 = time.monotonic()
        try:
            got = wait_for(ready, 180, "/readyz 200 from the image's berthd", 0.5)
        except BaseException:
            with open(errlog) as f:
                note("berthd's log: %s" % f.read()[-6000:])
            raise
        note("ready %.1f s after berthd started: %s" % (time.monotonic() - t0, json.dumps(got)[:800]))
        for user in ("agent", "berth-gateway"):
            with open(os.path.join(root, "etc", "passwd")) as f:
                expect(any(line.startswith(user + ":") for line in f), "the packages made no user %s" % user)
        procs = descendants(pid)
        for prog, user in (("berth-gateway", "berth-gateway"), ("Xvnc", "agent"), ("berth-desktop", "agent")):
            expect(prog in procs, "no %s under berthd: %r" % (prog, sorted(procs)))
            expect_eq(uid_name(procs[prog], root), user, "%s's user" % prog)
        with open(os.path.join(root, "etc", "berth", "berth.conf")) as f, \
                open(os.path.join(SRCDIR, "images", "desktop", "berth.conf")) as g:
            expect_eq(f.read(), g.read(), "/etc/berth/berth.conf: the desktop image's")
        os.kill(pid, signal.SIGTERM)
        expect_eq(p.wait(60), 0, "berthd's exit status after SIGTERM")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


run()
