"""berth-disk, run as root as berthd runs it, in a mount namespace of the
test's own (the mounts and their loop devices go with it): an empty
workspace bounded to 32 MiB that its unprivileged user fills until
ENOSPC while the image, and the disk under it, take no more than its
size; a workspace with content bounded with every file there, owners,
modes, times and links kept; a workspace made by root given to its
user; the mount nosuid and nodev, a set-uid root program in it giving
its user nothing; the same size again changing nothing; a larger size
grown with the user's files kept and room for more (while the user is
in it: online where the kernel lets root, else refused with nothing
changed); a smaller size refused; an image whose mount has gone mounted
again as it was, or grown; content larger than the size refused
with the directory left as it was and no image left; a symbolic link
put on the workspace's way by its user refused, nothing mounted where
it points; malformed arguments refused, each with one "error:" line."""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    BUILDDIR,
    SANITIZER_MARKS,
    Skip,
    case,
    desktop_user,
    expect,
    expect_eq,
    expect_in,
    note,
    run,
    run_program,
    scratch,
)
from harness.runner import track_closer  # noqa: E402

DISK = os.path.join(BUILDDIR, "berth-disk")
MIB = 1 << 20
# The mark of the re-run in a mount namespace of its own.
NS_MARK = "BERTH_DISK_TEST_NS"


def need_root():
    if os.geteuid() != 0:
        raise Skip("berth-disk mounts: the test runs as root")


def berth_disk(ws, state, size, pw, timeout=60):
    """Runs berth-disk: (exit status, its one line of stdout)."""
    argv = [DISK, "--dir", ws, "--bytes", str(size), "--uid", str(pw.pw_uid),
            "--gid", str(pw.pw_gid), "--state", state]
    status, out, err = run_program(argv, timeout=timeout)
    note("berth-disk %s %d: %d %r %r" % (ws, size, status, out, err[-400:]))
    expect(not any(m in err for m in SANITIZER_MARKS), "a sanitizer reported: %s" % err)
    expect(out.endswith("\n") and out.count("\n") == 1, "not one line: %r" % out)
    return status, out[:-1]


def unmount_at_end(ws):
    """However the case ends, what was mounted on ws goes before ws does."""
    track_closer(lambda: subprocess.run(["umount", "-R", "-l", ws], capture_output=True))


def workspace(pw):
    """An empty workspace of the user's, and a state directory (root's)."""
    ws = os.path.join(scratch(), "ws")
    os.mkdir(ws, 0o755)
    os.chown(ws, pw.pw_uid, pw.pw_gid)
    unmount_at_end(ws)
    return ws, scratch(0o700)


def as_user(pw, argv, timeout=30):
    return subprocess.run(argv, user=pw.pw_uid, group=pw.pw_gid, extra_groups=[],
                          capture_output=True, text=True, timeout=timeout)


def fill(pw, path, mib):
    """The user writes up to mib MiB of zeros to path: (dd's status, the
    file's size). Never more than mib, so that a bound that failed cannot
    fill the disk under it."""
    p = as_user(pw, ["dd", "if=/dev/zero", "of=" + path, "bs=1M", "count=%d" % mib, "conv=fsync"])
    note("dd %s: %d %s" % (path, p.returncode, p.stderr.strip()[-200:]))
    return p, os.stat(path).st_size


def fs_size(path):
    st = os.statvfs(path)
    return st.f_blocks * st.f_frsize


def images(state):
    d = os.path.join(state, "disks")
    return sorted(f for f in os.listdir(d) if f.endswith(".img")) if os.path.isdir(d) else []


def loops_of(state):
    """The loop devices whose backing file is in state."""
    out = []
    for dev in os.listdir("/sys/block"):
        try:
            with open("/sys/block/%s/loop/backing_file" % dev) as f:
                if f.read().strip().startswith(state + "/"):
                    out.append(dev)
        except OSError:
            pass
    return out


@case("an empty workspace bounded to 32 MiB: its user fills it to ENOSPC, and the disk under it gains no more", timeout=60)
def test_fill():
    need_root()
    pw = desktop_user()
    ws, state = workspace(pw)
    status, line = berth_disk(ws, state, 32 * MIB, pw)
    expect_eq((status, line), (0, "ok loop"), "berth-disk's answer")
    expect(os.path.ismount(ws), "%s is not a mount" % ws)
    expect(16 * MIB < fs_size(ws) <= 32 * MIB, "the filesystem on %s is %d bytes" % (ws, fs_size(ws)))
    expect_eq(sorted(os.listdir(ws)), [], "what the new workspace holds")
    # What the docs say is left once ext4's metadata is made (24.6 MiB).
    free = os.statvfs(ws).f_bavail * os.statvfs(ws).f_frsize
    note("a fresh 32 MiB image leaves %.1f MiB free" % (free / MIB))
    expect(24 * MIB <= free <= 25.5 * MIB, "a fresh 32 MiB image leaves %.1f MiB free" % (free / MIB))
    st = os.stat(ws)
    expect_eq((st.st_uid, st.st_gid, st.st_mode & 0o7777), (pw.pw_uid, pw.pw_gid, 0o755), "the workspace's owner and mode")
    outer_before = os.statvfs(state).f_bavail * os.statvfs(state).f_frsize
    p, size = fill(pw, os.path.join(ws, "fill"), 64)
    outer_after = os.statvfs(state).f_bavail * os.statvfs(state).f_frsize
    expect(p.returncode != 0 and "No space left on device" in p.stderr, "dd did not end on ENOSPC: %r" % p.stderr)
    expect(20 * MIB <= size <= 32 * MIB, "the user wrote %d bytes" % size)
    (img,) = images(state)
    ist = os.stat(os.path.join(state, "disks", img))
    expect_eq(ist.st_size, 32 * MIB, "the image's size")
    expect(ist.st_blocks * 512 <= 32 * MIB, "the image takes %d bytes on disk" % (ist.st_blocks * 512))
    expect_eq((ist.st_uid, ist.st_mode & 0o777), (0, 0o600), "the image's owner and mode")
    # Other programs share the disk: some slack beyond the image's size.
    expect(outer_before - outer_after <= 40 * MIB,
           "the disk under it lost %d bytes while the user filled 32 MiB" % (outer_before - outer_after))
    left = os.statvfs(ws).f_bavail * os.statvfs(ws).f_frsize
    expect(left < MIB, "%d bytes left free after ENOSPC" % left)


@case("a workspace with content is bounded with all of it: owners, modes, times and links kept", timeout=60)
def test_content():
    need_root()
    pw = desktop_user()
    ws, state = workspace(pw)
    os.chmod(ws, 0o750)
    os.makedirs(os.path.join(ws, "src", "deep"))
    with open(os.path.join(ws, "src", "deep", "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    with open(os.path.join(ws, "blob"), "wb") as f:
        f.write(os.urandom(3 * MIB))
    os.chmod(os.path.join(ws, "blob"), 0o640)
    os.utime(os.path.join(ws, "blob"), (1_000_000_000, 1_000_000_000))
    os.symlink("src/deep/main.c", os.path.join(ws, "link"))
    os.symlink("/etc/passwd", os.path.join(ws, "outside"))
    with open(os.path.join(ws, "roots"), "w") as f:
        f.write("root's own\n")
    for root, dirs, files in os.walk(ws):
        for n in dirs + files:
            if n != "roots":
                os.lchown(os.path.join(root, n), pw.pw_uid, pw.pw_gid)
    before = tree(ws)
    status, line = berth_disk(ws, state, 32 * MIB, pw)
    expect_eq((status, line), (0, "ok loop"), "berth-disk's answer")
    expect(os.path.ismount(ws), "%s is not a mount" % ws)
    after = tree(ws)
    for path in sorted(set(before) | set(after)):
        expect_eq(after.get(path), before.get(path), "%s after the bound" % path)
    st = os.stat(ws)
    expect_eq((st.st_uid, st.st_mode & 0o7777), (pw.pw_uid, 0o750), "the workspace's owner and mode")


def tree(root):
    """Every entry under root (root itself as "."): owner, mode, size
    (not a directory's), mtime, and a link's target or a file's bytes."""
    st = os.lstat(root)
    out = {".": (st.st_uid, st.st_gid, st.st_mode)}
    for path, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(path, n)
            st = os.lstat(p)
            what = os.readlink(p) if os.path.islink(p) else (open(p, "rb").read() if os.path.isfile(p) else None)
            # A directory's size is its filesystem's business.
            size = None if os.path.isdir(p) and not os.path.islink(p) else st.st_size
            out[os.path.relpath(p, root)] = (st.st_uid, st.st_gid, st.st_mode, size, int(st.st_mtime), what)
    return out


@case("a workspace made by root is its runtime's user's once bounded, its mode kept", timeout=60)
def test_owner():
    need_root()
    pw = desktop_user()
    ws, state = workspace(pw)
    os.chown(ws, 0, 0)
    os.chmod(ws, 0o2770)
    expect_eq(berth_disk(ws, state, 32 * MIB, pw), (0, "ok loop"), "berth-disk's answer")
    st = os.stat(ws)
    expect_eq((st.st_uid, st.st_gid, st.st_mode & 0o7777), (pw.pw_uid, pw.pw_gid, 0o2770), "the workspace's owner and mode")
    p = as_user(pw, ["sh", "-c", "echo mine > %s/mine" % ws])
    expect_eq(p.returncode, 0, "the user's write (%s)" % p.stderr.strip())


@case("the bound workspace is nosuid and nodev: a set-uid root program copied in gives its user nothing", timeout=60)
def test_nosuid():
    need_root()
    pw = desktop_user()
    ws, state = workspace(pw)
    shutil.copy("/usr/bin/id", os.path.join(ws, "id"))
    os.chmod(os.path.join(ws, "id"), 0o4755)
    expect_eq(berth_disk(ws, state, 32 * MIB, pw), (0, "ok loop"), "berth-disk's answer")
    flags = os.statvfs(ws).f_flag
    expect(flags & os.ST_NOSUID and flags & os.ST_NODEV, "the mount's flags are %#x" % flags)
    st = os.stat(os.path.join(ws, "id"))
    expect_eq((st.st_uid, st.st_mode & 0o7777), (0, 0o4755), "the copied program's owner and mode")
    p = as_user(pw, [os.path.join(ws, "id"), "-u"])
    expect_eq((p.returncode, p.stdout.strip()), (0, str(pw.pw_uid)), "the effective uid of the set-uid program run by the user")


@case("the same size again changes nothing; a larger one grows it, the user's files kept, with room for more; a smaller one is refused", timeout=90)
def test_resize():
    need_root()
    pw = desktop_user()
    ws, state = workspace(pw)
    expect_eq(berth_disk(ws, state, 32 * MIB, pw), (0, "ok loop"), "the first bound")
    p = as_user(pw, ["sh", "-c", "echo kept > %s/marker" % ws])
    expect_eq(p.returncode, 0, "the user's first write")
    dev = os.stat(ws).st_dev
    expect_eq(berth_disk(ws, state, 32 * MIB, pw), (0, "ok loop"), "the same size again")
    expect_eq(os.stat(ws).st_dev, dev, "the filesystem on the workspace after the same size again")
    expect_eq(len(images(state)), 1, "images after the same size again")
    p, first = fill(pw, os.path.join(ws, "fill"), 64)
    expect(p.returncode != 0 and "No space left on device" in p.stderr, "the first fill did not end on ENOSPC")
    # A process of the user's in the workspace: grown online where the
    # kernel lets root (CAP_SYS_RESOURCE), else refused, nothing changed.
    holder = subprocess.Popen(["sleep", "60"], cwd=ws, user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
    track_closer(holder.kill)
    status, line = berth_disk(ws, state, 48 * MIB, pw)
    holder.kill()
    holder.wait()
    (img,) = images(state)
    if status == 0:
        expect(32 * MIB < fs_size(ws) <= 48 * MIB, "the filesystem grown online is %d bytes" % fs_size(ws))
    else:
        expect_in("while it is in use", line, "the refusal to grow a workspace in use")
        expect(fs_size(ws) <= 32 * MIB, "the filesystem after the refused grow is %d bytes" % fs_size(ws))
        expect_eq(os.stat(os.path.join(state, "disks", img)).st_size, 32 * MIB, "the image after the refused grow")
        expect_eq(berth_disk(ws, state, 32 * MIB, pw), (0, "ok loop"), "the same size after the refused grow")
    expect_eq(berth_disk(ws, state, 64 * MIB, pw), (0, "ok loop"), "grown to 64 MiB")
    expect(48 * MIB < fs_size(ws) <= 64 * MIB, "the filesystem after the grow is %d bytes" % fs_size(ws))
    expect_eq(open(os.path.join(ws, "marker")).read(), "kept\n", "the marker after the grow")
    expect_eq(os.stat(os.path.join(ws, "fill")).st_size, first, "the first fill after the grow")
    p, more = fill(pw, os.path.join(ws, "fill2"), 16)
    expect_eq(p.returncode, 0, "the user's write of 16 MiB more after the grow (%s)" % p.stderr.strip())
    expect_eq(more, 16 * MIB, "what the user wrote after the grow")
    expect_eq(os.listdir(ws).count("lost+found"), 0, "lost+found in the grown workspace")
    status, line = berth_disk(ws, state, 32 * MIB, pw)
    expect_eq(status, 1, "berth-disk's status for a smaller size")
    expect(line.startswith("error: conflict: ") and "cannot shrink" in line, "the refusal: %r" % line)
    expect(48 * MIB < fs_size(ws) <= 64 * MIB, "the filesystem after the refused shrink is %d bytes" % fs_size(ws))
    expect_eq(os.stat(os.path.join(ws, "fill2")).st_size, 16 * MIB, "the files after the refused shrink")


@case("an image whose mount has gone (an earlier berthd's) is mounted again as it was, and grown if asked", timeout=60)
def test_left_image():
    need_root()
    pw = desktop_user()
    ws, state = workspace(pw)
    expect_eq(berth_disk(ws, state, 32 * MIB, pw), (0, "ok loop"), "the first bound")
    expect_eq(as_user(pw, ["sh", "-c", "echo inside > %s/note" % ws]).returncode, 0, "the user's write")
    # What a mount namespace's end does to the mount; the image stays in
    # the state directory.
    subprocess.run(["umount", ws], check=True)
    expect(not os.path.exists(os.path.join(ws, "note")), "the note outside the image")
    expect_eq(berth_disk(ws, state, 32 * MIB, pw), (0, "ok loop"), "the bound again")
    expect_eq(open(os.path.join(ws, "note")).read(), "inside\n", "the note after the bound again")
    subprocess.run(["umount", ws], check=True)
    expect_eq(berth_disk(ws, state, 48 * MIB, pw), (0, "ok loop"), "the bound again, larger")
    expect(32 * MIB < fs_size(ws) <= 48 * MIB, "the filesystem is %d bytes" % fs_size(ws))
    expect_eq(open(os.path.join(ws, "note")).read(), "inside\n", "the note after the larger bound")
    expect_eq(os.listdir(ws).count("lost+found"), 0, "lost+found in the workspace")
    expect_eq(len(images(state)), 1, "images")
    subprocess.run(["umount", ws], check=True)
    status, line = berth_disk(ws, state, 32 * MIB, pw)
    expect(status == 1 and line.startswith("error: conflict: "), "a smaller bound of the image left: %r" % line)
    expect(not os.path.ismount(ws), "%s was mounted" % ws)


@case("content larger than the size is refused: the directory as it was, no image and no loop device left", timeout=60)
def test_too_big():
    need_root()
    pw = desktop_user()
    ws, state = workspace(pw)
    with open(os.path.join(ws, "big"), "wb") as f:
        for _ in range(40):
            f.write(os.urandom(MIB))
    os.chown(os.path.join(ws, "big"), pw.pw_uid, pw.pw_gid)
    before = tree(ws)
    status, line = berth_disk(ws, state, 32 * MIB, pw)
    expect_eq(status, 1, "berth-disk's status")
    expect(line.startswith("error: the workspace holds "), "the refusal: %r" % line)
    expect_in("more than disk_bytes", line, "the refusal")
    expect(not os.path.ismount(ws), "%s was mounted" % ws)
    expect_eq(tree(ws), before, "the workspace after the refusal")
    expect_eq(images(state), [], "images left")
    expect_eq(loops_of(state), [], "loop devices left")


@case("a symbolic link its user puts on the workspace's way is refused: nothing is mounted where it points", timeout=60)
def test_link_refused():
    need_root()
    pw = desktop_user()
    home = scratch()
    os.chown(home, pw.pw_uid, pw.pw_gid)
    target = scratch()  # root's, as /etc or /usr/bin would be
    unmount_at_end(target)
    # The user's own doing: the workspace replaced by a link to root's directory.
    p = as_user(pw, ["ln", "-s", target, os.path.join(home, "ws")])
    expect_eq(p.returncode, 0, "the user's link")
    state = scratch(0o700)
    status, line = berth_disk(os.path.join(home, "ws"), state, 32 * MIB, pw)
    expect_eq(status, 1, "berth-disk's status")
    expect_in("symbolic link", line, "the refusal")
    expect(not os.path.ismount(target), "%s was mounted" % target)
    # A link further up the path is refused too.
    real = os.path.join(home, "real")
    as_user(pw, ["mkdir", "-p", os.path.join(real, "ws")])
    as_user(pw, ["ln", "-s", real, os.path.join(home, "up")])
    unmount_at_end(os.path.join(real, "ws"))
    status, line = berth_disk(os.path.join(home, "up", "ws"), state, 32 * MIB, pw)
    expect_eq(status, 1, "berth-disk's status for a link further up")
    expect_in("symbolic link", line, "the refusal of a link further up")
    expect(not os.path.ismount(os.path.join(real, "ws")), "the directory behind the link was mounted")
    expect_eq(images(state), [], "images left")


@case("malformed arguments are refused, each with one error line, nothing touched", timeout=60)
def test_bad_args():
    need_root()
    pw = desktop_user()
    ws, state = workspace(pw)
    good = {"--dir": ws, "--bytes": str(32 * MIB), "--uid": str(pw.pw_uid), "--gid": str(pw.pw_gid), "--state": state}
    bad = [
        {"--bytes": str(16 * MIB - 1)},
        {"--bytes": "0"},
        {"--bytes": "-33554432"},
        {"--bytes": "+33554432"},
        {"--bytes": "033554432"},
        {"--bytes": "32M"},
        {"--bytes": str((1 << 50) + 1)},
        {"--bytes": "99999999999999999999999"},
        {"--uid": "4294967295"},
        {"--uid": "-1"},
        {"--dir": "relative/ws"},
        {"--dir": ws + "/"},
        {"--dir": ws + "/../ws"},
        {"--dir": ws.replace("/", "//", 1)},
        {"--dir": "/"},
        {"--dir": ws + "\nok loop"},
        {"--state": "state"},
        {"--dir": None},
        {"--uid": None},
    ]
    for change in bad:
        args = dict(good, **change)
        argv = [DISK]
        for k, v in args.items():
            if v is not None:
                argv += [k, v]
        status, out, err = run_program(argv)
        expect_eq(status, 1, "berth-disk's status for %r" % change)
        expect(out.startswith("error: ") and out.count("\n") == 1, "the answer to %r: %r" % (change, out))
        expect(not any(m in err for m in SANITIZER_MARKS), "a sanitizer reported: %s" % err)
    status, out, _ = run_program([DISK] + [x for kv in good.items() for x in kv] + ["--bytes", str(32 * MIB)])
    expect_eq(status, 1, "berth-disk's status with an argument given twice")
    expect(not os.path.ismount(ws), "%s was mounted" % ws)
    expect_eq(images(state), [], "images left")


def in_own_mount_namespace():
    """Re-runs this test in a mount namespace of its own, private, so that
    nothing it mounts is seen outside it or outlives it."""
    if os.environ.get(NS_MARK) or os.geteuid() != 0 or shutil.which("unshare") is None:
        return
    env = dict(os.environ, **{NS_MARK: "1"})
    os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable,
                           os.path.abspath(__file__)], env)


if __name__ == "__main__":
    in_own_mount_namespace()
    run()
