"""berth cp, ls and cat against a real sandbox (whose files are this
machine's, so the test looks at both ends): 50 MiB each way by hash on
both transports, the mode kept, copies into directories, clear errors
with their exit statuses, a transfer resumed after a killed gateway (at
the byte reached, not from the start), ls and ls -l -a -R --json, cat,
a progress bar only on a terminal, --as and --follow-symlinks."""

import glob
import hashlib
import json
import os
import pty
import pwd
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    CLI,
    TRANSPORTS,
    Sandbox,
    Timeout,
    berth,
    case,
    conn_args,
    expect,
    expect_eq,
    note,
    run,
    running,
    scratch,
)

BIG = 50 << 20


def sha_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def random_file(path, size, mode=0o644):
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, 1 << 20)
            f.write(os.urandom(n))
            left -= n
    os.chmod(path, mode)
    return sha_file(path)


@case("cp: 50 MiB into the sandbox and back, by hash, on both transports", timeout=240, transports=TRANSPORTS)
def cp_both_ways(transport):
    d = scratch()
    src = os.path.join(d, "src.bin")
    digest = random_file(src, BIG)
    with Sandbox() as sb:
        remote = os.path.join(d, "in-sandbox.bin")
        rc, out, err = berth(sb, transport, "cp", src, ":" + remote, timeout=180)
        expect_eq((rc, out, err), (0, b"", ""), "upload status, stdout, stderr")
        expect_eq(sha_file(remote), digest, "the hash of the uploaded file")
        back = os.path.join(d, "back.bin")
        rc, out, err = berth(sb, transport, "cp", ":" + remote, back, timeout=180)
        expect_eq((rc, out, err), (0, b"", ""), "download status, stdout, stderr")
        expect_eq(sha_file(back), digest, "the hash of the downloaded file")
        leftovers = [n for n in os.listdir(d) if n.startswith(".")]
        expect_eq(leftovers, [], "temporary files left behind")


@case("cp: the mode follows the source, a directory target keeps the name, a file is replaced")
def cp_mode_and_targets():
    d = scratch()
    src = os.path.join(d, "tool.sh")
    with open(src, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(src, 0o751)
    into = os.path.join(d, "remote-dir")
    os.mkdir(into)
    with Sandbox() as sb:
        rc, _, _ = berth(sb, "unix", "cp", src, ":" + into)
        expect_eq(rc, 0, "upload into a directory")
        landed = os.path.join(into, "tool.sh")
        expect_eq(oct(os.stat(landed).st_mode & 0o7777), oct(0o751), "the uploaded file's mode")
        rc, out, _ = berth(sb, "unix", "exec", "--", landed)
        expect_eq((rc, out), (0, b"hi\n"), "the uploaded script runs")
        # Replaced whole, and the mode is the new source's.
        with open(src, "w") as f:
            f.write("new\n")
        os.chmod(src, 0o600)
        rc, _, _ = berth(sb, "ws", "cp", src, ":" + landed)
        expect_eq(rc, 0, "upload over an existing file")
        expect_eq(open(landed).read(), "new\n", "the replaced content")
        expect_eq(oct(os.stat(landed).st_mode & 0o7777), oct(0o600), "the replaced file's mode")
        # Out of the sandbox into a directory here: the name is kept.
        here = os.path.join(d, "here")
        os.mkdir(here)
        rc, _, _ = berth(sb, "unix", "cp", ":" + landed, here)
        expect_eq(rc, 0, "download into a directory")
        expect_eq(open(os.path.join(here, "tool.sh")).read(), "new\n", "the downloaded file")
        rc, _, _ = berth(sb, "unix", "cp", ":" + os.path.join(d, "empty"), os.path.join(here, "x"))
        expect(rc != 0, "a missing remote file copies nothing")
        open(os.path.join(d, "empty"), "w").close()
        rc, _, _ = berth(sb, "unix", "cp", ":" + os.path.join(d, "empty"), os.path.join(here, "empty"))
        expect_eq(rc, 0, "download of an empty file")
        expect_eq(os.path.getsize(os.path.join(here, "empty")), 0, "the empty file's size")


@case("cp: a missing directory, a missing file and bad arguments fail clearly")
def cp_errors():
    d = scratch()
    src = os.path.join(d, "a.txt")
    with open(src, "w") as f:
        f.write("a\n")
    missing_dir = os.path.join(d, "no-such-dir")
    with Sandbox() as sb:
        rc, _, err = berth(sb, "unix", "cp", src, ":" + os.path.join(missing_dir, "a.txt"))
        expect_eq(rc, 1, "upload to a missing directory: exit status")
        expect("not_found" in err and missing_dir in err, "the message names the directory: %r" % err)
        expect(not os.path.exists(missing_dir), "the directory was made")
        rc, _, err = berth(sb, "unix", "cp", os.path.join(d, "absent"), ":" + os.path.join(d, "b.txt"))
        expect_eq(rc, 1, "upload of a missing local file: exit status")
        expect(os.path.join(d, "absent") in err, "the message names the local file: %r" % err)
        rc, _, err = berth(sb, "ws", "cp", ":" + os.path.join(d, "absent"), os.path.join(d, "b.txt"))
        expect_eq(rc, 1, "download of a missing file: exit status")
        expect(os.path.join(d, "absent") in err, "the message names the remote file: %r" % err)
        expect(not os.path.exists(os.path.join(d, "b.txt")), "a file was made for a failed download")
        rc, _, err = berth(sb, "unix", "cp", ":" + d, os.path.join(d, "c"))
        expect_eq(rc, 1, "download of a directory: exit status")
        for args in ((src, os.path.join(d, "b.txt")), (":" + src, ":" + os.path.join(d, "x")), (src,), (src, ":relative/path")):
            rc, _, _ = berth(sb, "unix", "cp", *args)
            expect_eq(rc, 2, "usage error for %r" % (args,))


def found(path):
    """path, or the one file its glob pattern matches (berthd's partial
    upload has a random part in its name)."""
    hits = glob.glob(path)
    return hits[0] if len(hits) == 1 else path


def stop_at(p, path, size, timeout=60):
    """Stops process p (SIGSTOP) once the file at path (a glob pattern)
    holds size bytes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.path.getsize(found(path)) >= size:
                p.send_signal(signal.SIGSTOP)
                return
        except FileNotFoundError:
            pass
        if p.poll() is not None:
            raise AssertionError("berth ended (status %s) before %s held %d bytes" % (p.returncode, path, size))
        if time.monotonic() > deadline:
            raise Timeout("%s did not reach %d bytes" % (path, size))
        time.sleep(0.002)


def zero_head(path, n=4096):
    with open(path, "r+b") as f:
        f.write(b"\0" * n)


def interrupted_copy(sb, argv, partial, min_bytes):
    """Runs berth argv, stops it once partial holds min_bytes, kills the
    gateway, and, with a new gateway up, overwrites the partial's first
    4 KiB with zeros before berth goes on: a copy that resumes keeps the
    zeros, one that starts again from byte 0 does not. Returns berth's
    (status, stderr)."""
    with running(argv) as p:
        stop_at(p, partial, min_bytes)
        old = sb.gateway_pid()
        os.kill(old, signal.SIGKILL)
        sb.gateway_pid(timeout=10, other_than=old)
        sb.wait_healthy()
        partial = found(partial)
        held = os.path.getsize(partial)
        note("the partial held %d bytes when the gateway was killed" % held)
        expect(held < BIG, "the copy was done before the kill")
        zero_head(partial)
        p.send_signal(signal.SIGCONT)
        _, err = p.communicate(timeout=120)
    note("berth's stderr: %r" % err)
    return p.returncode, err.decode(errors="replace")


def expected_after_zeros(src):
    with open(src, "rb") as f:
        data = bytearray(f.read())
    data[:4096] = b"\0" * 4096
    return hashlib.sha256(bytes(data)).hexdigest()


@case("cp over the WebSocket survives a killed gateway and resumes at the byte reached, both ways", timeout=240)
def cp_resumes():
    d = scratch()
    src = os.path.join(d, "src.bin")
    random_file(src, BIG)
    want = expected_after_zeros(src)
    with Sandbox() as sb:
        remote = os.path.join(d, "up.bin")
        argv = [CLI] + conn_args(sb, "ws") + ["cp", src, ":" + remote]
        rc, _ = interrupted_copy(sb, argv, os.path.join(d, ".up.bin.*.berth-upload"), 8 << 20)
        expect_eq(rc, 0, "upload: exit status")
        expect_eq(os.path.getsize(remote), BIG, "upload: the size")
        expect_eq(sha_file(remote), want, "upload: the hash (the source with the zeroed head: resumed, not redone)")
        local = os.path.join(d, "down.bin")
        argv = [CLI] + conn_args(sb, "ws") + ["cp", ":" + src, local]
        rc, _ = interrupted_copy(sb, argv, os.path.join(d, ".down.bin.berth-download"), 8 << 20)
        expect_eq(rc, 0, "download: exit status")
        expect_eq(os.path.getsize(local), BIG, "download: the size")
        expect_eq(sha_file(local), want, "download: the hash (the source with the zeroed head: resumed, not redone)")


@case("cp stopped by Ctrl-C midway exits 130, makes no target, and a download leaves no temp file", timeout=120)
def cp_interrupted():
    d = scratch()
    src = os.path.join(d, "src.bin")
    random_file(src, BIG)
    with Sandbox() as sb:
        for argv, partial, target in (
            (["cp", ":" + src, os.path.join(d, "down.bin")], os.path.join(d, ".down.bin.berth-download"),
             os.path.join(d, "down.bin")),
            (["cp", src, ":" + os.path.join(d, "up.bin")], os.path.join(d, ".up.bin.*.berth-upload"),
             os.path.join(d, "up.bin")),
        ):
            with running([CLI] + conn_args(sb, "ws") + argv) as p:
                stop_at(p, partial, 8 << 20)
                p.send_signal(signal.SIGINT)
                p.send_signal(signal.SIGCONT)
                _, err = p.communicate(timeout=60)
            note("%s: stderr %r" % (argv[1], err))
            expect_eq(p.returncode, 128 + signal.SIGINT, "%s: the exit status of a copy Ctrl-C stopped" % argv[1])
            expect(not os.path.exists(target), "%s: the target was made" % argv[1])
            if argv[1].startswith(":"):
                expect(not os.path.exists(partial), "the download's temp file stays behind")


def progress_run(sb, argv):
    """Runs berth with stderr on a terminal: (status, what the terminal
    showed)."""
    master, slave = pty.openpty()
    shown = bytearray()
    with running(argv, stdout=subprocess.DEVNULL, stderr=slave) as p:
        os.close(slave)
        deadline = time.monotonic() + 60
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Timeout("berth under a terminal did not end")
                ready, _, _ = select.select([master], [], [], left)
                if not ready:
                    continue
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the terminal's last writer is gone
                    break
                if not chunk:
                    break
                shown += chunk
            rc = p.wait(30)
        finally:
            os.close(master)
    note("the terminal showed %r" % bytes(shown[-400:]))
    return rc, shown.decode(errors="replace")


@case("cp: a progress bar on a terminal only, and -q silences it")
def cp_progress():
    d = scratch()
    src = os.path.join(d, "src.bin")
    random_file(src, 6 << 20)
    with Sandbox() as sb:
        rc, _, err = berth(sb, "unix", "cp", src, ":" + os.path.join(d, "piped.bin"))
        expect_eq((rc, err), (0, ""), "stderr a pipe: status and stderr")
        base = [CLI] + conn_args(sb, "unix") + ["cp"]
        rc, shown = progress_run(sb, base + [src, ":" + os.path.join(d, "up.bin")])
        expect_eq(rc, 0, "upload on a terminal: status")
        expect("100%" in shown and "MiB" in shown and "/s" in shown, "no progress bar: %r" % shown)
        expect(shown.endswith("\n") and not shown.endswith("\n\r\n"), "the bar's line ends once: %r" % shown[-40:])
        rc, shown = progress_run(sb, base + [":" + src, os.path.join(d, "down.bin")])
        expect_eq(rc, 0, "download on a terminal: status")
        expect("100%" in shown, "no progress bar on the download: %r" % shown)
        rc, shown = progress_run(sb, base + ["-q", src, ":" + os.path.join(d, "quiet.bin")])
        expect_eq((rc, shown), (0, ""), "-q on a terminal: status and what it showed")
        expect_eq(sha_file(os.path.join(d, "down.bin")), sha_file(src), "the downloaded file")


def make_tree(d):
    with open(os.path.join(d, "a.txt"), "w") as f:
        f.write("alpha\n")
    with open(os.path.join(d, "script.sh"), "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(os.path.join(d, "script.sh"), 0o755)
    with open(os.path.join(d, ".hidden"), "w") as f:
        f.write("h")
    os.mkdir(os.path.join(d, "sub"))
    os.chmod(os.path.join(d, "sub"), 0o750)
    with open(os.path.join(d, "sub", "inner.txt"), "w") as f:
        f.write("inner\n")
    os.symlink("a.txt", os.path.join(d, "link"))
    when = 1612325100  # 2021-02-03 04:05:00 UTC
    for name in ("a.txt", "script.sh", "sub"):
        os.utime(os.path.join(d, name), (when, when))


@case("ls, ls -a, ls -R, ls -l and ls --json show the directory as it is")
def ls_outputs():
    d = scratch()
    make_tree(d)
    with Sandbox() as sb:
        rc, out, _ = berth(sb, "unix", "ls", d)
        expect_eq((rc, out.decode()), (0, "a.txt\nlink\nscript.sh\nsub\n"), "ls")
        rc, out, _ = berth(sb, "ws", "ls", "-a", ":" + d)
        expect_eq((rc, out.decode()), (0, ".hidden\na.txt\nlink\nscript.sh\nsub\n"), "ls -a over the WebSocket")
        rc, out, _ = berth(sb, "unix", "ls", "-R", d)
        expect_eq((rc, out.decode()), (0, "a.txt\nlink\nscript.sh\nsub\nsub/inner.txt\n"), "ls -R")
        rc, out, _ = berth(sb, "unix", "ls", "-l", d)
        expect_eq(rc, 0, "ls -l: status")
        rows = {line.split()[-1] if "->" not in line else line.split()[-3]: line.split()
                for line in out.decode().splitlines()}
        expect_eq(sorted(rows), ["a.txt", "link", "script.sh", "sub"], "ls -l: the names")
        expect_eq(rows["a.txt"][:4], ["-rw-r--r--", "6", "2021-02-03", "04:05"], "ls -l: a.txt")
        expect_eq(rows["script.sh"][:4], ["-rwxr-xr-x", "17", "2021-02-03", "04:05"], "ls -l: script.sh")
        expect_eq(rows["sub"][0], "drwxr-x---", "ls -l: sub's mode")
        expect_eq(rows["link"][0][0], "l", "ls -l: the link's type")
        expect_eq(rows["link"][-2:], ["->", "a.txt"], "ls -l: the link's target")
        rc, out, _ = berth(sb, "unix", "ls", "-l", os.path.join(d, "a.txt"))
        expect_eq(rc, 0, "ls -l of a file: status")
        expect_eq(out.decode().split()[:2], ["-rw-r--r--", "6"], "ls -l of a file")
        rc, out, _ = berth(sb, "unix", "--json", "ls", d)
        expect_eq(rc, 0, "ls --json: status")
        doc = json.loads(out)
        expect_eq([e["name"] for e in doc["entries"]], [".hidden", "a.txt", "link", "script.sh", "sub"],
                  "ls --json: the entries (fs.list's result as it is)")
        expect_eq(doc["entries"][1]["size"], 6, "ls --json: a.txt's size")
        rc, _, err = berth(sb, "unix", "ls", os.path.join(d, "nope"))
        expect_eq(rc, 1, "ls of a missing path: status")
        expect(os.path.join(d, "nope") in err, "the message names the path: %r" % err)
        rc, _, _ = berth(sb, "unix", "ls", "relative")
        expect_eq(rc, 2, "ls of a relative path: status")


@case("cat prints files whole; a missing one is named, the others still print, status 1")
def cat_files():
    d = scratch()
    make_tree(d)
    big = os.path.join(d, "big.bin")
    digest = random_file(big, 9 << 20 | 12345)
    with Sandbox() as sb:
        a, inner = os.path.join(d, "a.txt"), os.path.join(d, "sub", "inner.txt")
        rc, out, err = berth(sb, "unix", "cat", a)
        expect_eq((rc, out, err), (0, b"alpha\n", ""), "cat of a text file")
        rc, out, _ = berth(sb, "ws", "cat", a, ":" + inner)
        expect_eq((rc, out), (0, b"alpha\ninner\n"), "cat of two files over the WebSocket")
        rc, out, _ = berth(sb, "ws", "cat", big)
        expect_eq((rc, hashlib.sha256(out).hexdigest()), (0, digest), "cat of 9 MiB and a bit, by hash")
        missing = os.path.join(d, "missing.txt")
        rc, out, err = berth(sb, "unix", "cat", a, missing, inner)
        expect_eq(rc, 1, "cat with a missing file: status")
        expect_eq(out, b"alpha\ninner\n", "the files that exist still print")
        expect(missing in err and "not_found" in err, "the message names the missing file: %r" % err)
        rc, _, err = berth(sb, "unix", "cat", os.path.join(d, "sub"))
        expect_eq(rc, 1, "cat of a directory: status")
        rc, _, _ = berth(sb, "unix", "cat")
        expect_eq(rc, 2, "cat without a path: status")


USER = "nobody"


@case("--as USER: cp, ls and cat have the user's rights; a root 0600 file is refused, an upload is the user's",
      transports=TRANSPORTS)
def as_user(transport):
    d = scratch()
    secret = os.path.join(d, "secret")
    with open(secret, "w") as f:
        f.write("root's\n")
    os.chmod(secret, 0o600)
    locked = os.path.join(d, "locked")
    os.mkdir(locked, 0o700)
    home = os.path.join(d, "home")
    os.mkdir(home, 0o755)
    pw = pwd.getpwnam(USER)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    src = os.path.join(d, "src.txt")
    with open(src, "w") as f:
        f.write("mine\n")
    here = os.path.join(d, "here")
    with Sandbox() as sb:
        rc, out, err = berth(sb, transport, "cat", "--as", USER, secret)
        expect_eq((rc, out), (1, b""), "cat --as of a root 0600 file: status and output")
        expect("permission_denied" in err and secret in err, "the message: %r" % err)
        rc, out, _ = berth(sb, transport, "cat", secret)
        expect_eq((rc, out), (0, b"root's\n"), "cat without --as: berthd's rights")
        rc, _, err = berth(sb, transport, "cp", "--as", USER, ":" + secret, here)
        expect_eq(rc, 1, "cp --as out of a root 0600 file: status")
        expect(not os.path.exists(here), "a file was made for the refused download")
        rc, _, err = berth(sb, transport, "ls", locked, "--as", USER)
        expect_eq(rc, 1, "ls --as of a root 0700 directory: status")
        expect("permission_denied" in err, "the message: %r" % err)
        rc, _, _ = berth(sb, transport, "ls", locked)
        expect_eq(rc, 0, "ls without --as")
        rc, _, err = berth(sb, transport, "cp", "--as", USER, src, ":" + locked + "/x")
        expect_eq(rc, 1, "cp --as into a root 0700 directory: status")
        expect_eq(os.listdir(locked), [], "the root directory's entries")
        rc, _, err = berth(sb, transport, "cp", "-q", "--as", USER, src, ":" + home)
        expect_eq(rc, 0, "cp --as into the user's directory (stderr %r)" % err)
        st = os.stat(os.path.join(home, "src.txt"))
        expect_eq((st.st_uid, st.st_gid), (pw.pw_uid, pw.pw_gid), "the uploaded file's owner")
        rc, out, _ = berth(sb, transport, "cat", "--as", USER, os.path.join(home, "src.txt"))
        expect_eq((rc, out), (0, b"mine\n"), "cat --as of the user's file")
        rc, out, _ = berth(sb, transport, "ls", "--as", USER, home)
        expect_eq((rc, out), (0, b"src.txt\n"), "ls --as of the user's directory")
        rc, _, err = berth(sb, transport, "cat", "--as", "no-such-user-here", secret)
        expect_eq(rc, 1, "an unknown user: status")
        expect("bad_args" in err and "no-such-user-here" in err, "the message: %r" % err)
        for cmd in (["cat", "--as", "", secret], ["ls", "--as"], ["cp", "--as=", src, ":" + home]):
            rc, _, _ = berth(sb, transport, *cmd)
            expect_eq(rc, 2, "usage error for %r" % (cmd,))


@case("--follow-symlinks: cp, ls and cat go through a symlink in a sandbox path only when asked")
def follow_symlinks():
    d = scratch()
    os.mkdir(os.path.join(d, "real"))
    with open(os.path.join(d, "real", "f"), "w") as f:
        f.write("through\n")
    os.symlink("real", os.path.join(d, "link"))
    src = os.path.join(d, "src.txt")
    with open(src, "w") as f:
        f.write("up\n")
    via, here = os.path.join(d, "link", "f"), os.path.join(d, "here")
    with Sandbox() as sb:
        rc, out, err = berth(sb, "unix", "cat", via)
        expect_eq((rc, out), (1, b""), "cat through a symlink: status and output")
        expect("symlink" in err and via in err, "the message: %r" % err)
        rc, out, _ = berth(sb, "unix", "cat", "--follow-symlinks", via)
        expect_eq((rc, out), (0, b"through\n"), "cat --follow-symlinks")
        rc, _, err = berth(sb, "unix", "ls", os.path.join(d, "link"))
        expect_eq(rc, 1, "ls of a symlink to a directory: status")
        expect("symlink" in err, "the message: %r" % err)
        rc, out, _ = berth(sb, "unix", "ls", "--follow-symlinks", os.path.join(d, "link"))
        expect_eq((rc, out), (0, b"f\n"), "ls --follow-symlinks")
        rc, _, _ = berth(sb, "unix", "cp", ":" + via, here)
        expect_eq(rc, 1, "cp out through a symlink: status")
        expect(not os.path.exists(here), "a file was made for the refused download")
        rc, _, _ = berth(sb, "unix", "cp", "--follow-symlinks", ":" + via, here)
        expect_eq((rc, open(here).read()), (0, "through\n"), "cp --follow-symlinks out")
        target = os.path.join(d, "link", "g")
        rc, _, err = berth(sb, "ws", "cp", src, ":" + target)
        expect_eq(rc, 1, "cp in through a symlink: status")
        expect("symlink" in err, "the message: %r" % err)
        expect(not os.path.exists(os.path.join(d, "real", "g")), "the refused upload made a file")
        rc, _, _ = berth(sb, "ws", "cp", "-q", "--follow-symlinks", src, ":" + target)
        expect_eq((rc, open(os.path.join(d, "real", "g")).read()), (0, "up\n"), "cp --follow-symlinks in")


@case("exec --user runs the command as the user")
def exec_user():
    with Sandbox() as sb:
        rc, out, err = berth(sb, "unix", "exec", "--user", USER, "--", "id", "-un")
        expect_eq((rc, out), (0, (USER + "\n").encode()), "exec --user's output (stderr %r)" % err)
        rc, _, err = berth(sb, "unix", "exec", "--user", "no-such-user-here", "--", "true")
        expect_eq(rc, 125, "exec --user of an unknown user: berth's own failure")


run()
