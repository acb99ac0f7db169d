"""Files (fs.*) and watches (fs.watch) through the real gateway: stat,
list, read, mkdir, move, remove and chmod with each typed error naming
its path; uploads that appear whole or not at all (200 MiB resumed after
an abrupt disconnect while another process reads the target, a full
disk); watches that tell created, modified, deleted and moved, in new
subdirectories too, coalesced, and a 10 000-file burst counted exactly;
bad input for every op."""

import hashlib
import os
import grp
import pwd
import random
import re
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    Sandbox,
    Skip,
    case,
    expect,
    expect_eq,
    expect_in,
    note,
    run,
    scratch,
    wait_for,
)

PY = "/usr/bin/python3"
MIB = 1024 * 1024
CHUNK = 4 * MIB


# ---------------------------------------------------------------------
# Helpers


def error(c, op, args, code, path=None):
    """Sends op, which must fail with code (and name path, if given);
    returns the error map."""
    r = c.request(op, args, timeout=30)
    expect(
        not r.get("ok"),
        "%s %s succeeded where %s was expected: %r" % (op, harness.short(args, 200), code, harness.short(r, 300)),
    )
    e = r["error"]
    expect_eq(e["code"], code, "%s %s: the error code (message %r)" % (op, harness.short(args, 200), e.get("message")))
    if path is not None:
        expect_eq(e.get("path"), path, "%s: the path the error names" % op)
    return e


def write_file(path, data, mode=None):
    with open(path, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)
    return path


def sha(data):
    return hashlib.sha256(data).hexdigest()


def file_sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(MIB)
            if not b:
                return h.hexdigest()
            h.update(b)


def mount_tmpfs(d, opts):
    """Mounts a tmpfs on d (before the sandbox starts, so that berthd's
    mount namespace, a copy, has it too); unmounted when the case ends."""
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", d], capture_output=True)
    if r.returncode != 0:
        raise Skip("cannot mount a tmpfs: %s" % r.stderr.decode().strip())
    harness.track_closer(lambda: subprocess.run(["umount", "-l", d], capture_output=True))


def upload(c, path, data, start=0, chunk=CHUNK, **extra):
    """Writes data[start:] in chunks, done with the last; returns the
    last result. extra goes with the last chunk."""
    off, result = start, None
    while True:
        piece = data[off : off + chunk]
        done = off + len(piece) >= len(data)
        args = {"path": path, "offset": off, "data": piece, "done": done}
        if done:
            args.update(extra)
        result = c.call("fs.write", args, timeout=120)
        off += len(piece)
        if done:
            return result
        expect_eq(result["pending"], off, "pending after the chunk at %d" % (off - len(piece)))


def read_all(c, path, chunk=2 * MIB, window=3):
    """The whole file, read with up to window requests in flight (their
    answers stay under the gateway's 8 MiB per client)."""
    out = bytearray()
    pending, offset, size = [], 0, None
    while True:
        while len(pending) < window and (size is None or offset < size or not pending):
            pending.append((offset, c.send_request("fs.read", {"path": path, "offset": offset, "length": chunk})))
            offset += chunk
            if size is None:
                break
        at, msg_id = pending.pop(0)
        r = c.response(msg_id, timeout=60)
        expect(r.get("ok"), "fs.read at %d: %r" % (at, r.get("error")))
        res = r["result"]
        expect_eq(res["offset"], at, "the offset of a read")
        expect_eq(at, len(out), "where the read lands")
        out += res["data"]
        size = res["size"]
        if res["eof"]:
            for _, rest in pending:
                c.response(rest, timeout=60)
            return bytes(out)


def listing(c, path, **args):
    return c.call("fs.list", dict(args, path=path))


def names(result):
    return [e["name"] for e in result["entries"]]


class Watched:
    """The changes of one watch as a subscribed client reads them: every
    fs.changed event's list, and every fs.overflow."""

    def __init__(self, c, watch_id):
        self.c = c
        self.id = watch_id
        self.events = []  # [[change, ...], ...]
        self.overflows = []

    @property
    def changes(self):
        return [ch for ev in self.events for ch in ev]

    def until(self, path, kind="created", timeout=20.0, overflow=None):
        """Reads until a change (path, kind) of this watch arrives, or
        with overflow, an fs.overflow of that reason; returns the changes
        read by this call."""
        first = len(self.events)

        def arrived(ev):
            data = ev["data"]
            if data.get("watch") != self.id:
                return False
            if ev["kind"] == "fs.overflow":
                self.overflows.append(data)
                return data["reason"] == overflow
            if ev["kind"] != "fs.changed":
                return False
            self.events.append(data["changes"])
            return any(ch["path"] == path and ch["kind"] == kind for ch in data["changes"])

        self.c.events_until(arrived, timeout)
        return [ch for ev in self.events[first:] for ch in ev]


def kinds_of(changes, path):
    return [ch["kind"] for ch in changes if ch["path"] == path]


def watch(c, path, recursive=False):
    """fs.watch, then a subscription from now on; returns a Watched."""
    w = c.call("fs.watch", {"path": path, "recursive": recursive})
    expect_eq(w["path"], path, "the watched path")
    expect(len(w["id"]) == 8 and all(x in "0123456789abcdef" for x in w["id"]), "a watch id of 8 hex: %r" % w["id"])
    c.subscribe()
    return Watched(c, w["id"])


def watch_ids(c):
    return {w["id"]: w for w in c.call("fs.watches")["watches"]}


# ---------------------------------------------------------------------
# stat, list, read


@case("fs.stat: files, directories, symlinks followed or not, owners by name; not_found, not_a_directory")
def stat():
    d = scratch()
    f = write_file(os.path.join(d, "f"), b"12345")
    os.chown(f, 65534, 0)
    os.chmod(f, 0o4751)  # after chown, which clears setuid
    os.symlink("f", os.path.join(d, "link"))
    os.symlink("/nowhere", os.path.join(d, "dangling"))
    with Sandbox() as sb:
        c = sb.ws()
        st = os.stat(f)
        r = c.call("fs.stat", {"path": f})
        expect_eq(r["type"], "file", "type")
        expect_eq(r["size"], 5, "size")
        expect_eq(r["mode"], 0o4751, "mode with setuid")
        expect_eq((r["uid"], r["gid"]), (65534, 0), "uid, gid")
        try:
            nobody = pwd.getpwuid(65534).pw_name
        except KeyError:
            nobody = None
        expect_eq(r["user"], nobody, "the user's name")
        expect_eq(r["group"], grp.getgrgid(0).gr_name, "the group's name")
        expect_eq(r["mtime"], st.st_mtime_ns // 1000000, "mtime in ms")
        expect("target" not in r, "a target for a plain file: %r" % r)

        r = c.call("fs.stat", {"path": d})
        expect_eq((r["type"], r["path"]), ("dir", d), "a directory")

        r = c.call("fs.stat", {"path": os.path.join(d, "link")})
        expect_eq((r["type"], r["target"]), ("symlink", "f"), "a symlink not followed (the default)")
        r = c.call("fs.stat", {"path": os.path.join(d, "link"), "follow": True})
        expect_eq((r["type"], r["size"]), ("file", 5), "a symlink followed (follow)")
        r = c.call("fs.stat", {"path": os.path.join(d, "link"), "follow_symlinks": True})
        expect_eq((r["type"], r["size"]), ("file", 5), "a symlink followed (follow_symlinks)")
        r = c.call("fs.stat", {"path": os.path.join(d, "dangling")})
        expect_eq(r["target"], "/nowhere", "a dangling symlink's target")

        error(
            c, "fs.stat", {"path": os.path.join(d, "dangling"), "follow": True}, "not_found", os.path.join(d, "dangling")
        )
        error(c, "fs.stat", {"path": d + "/nothing"}, "not_found", d + "/nothing")
        error(c, "fs.stat", {"path": f + "/x"}, "not_a_directory", f + "/x")
        r = c.call("fs.stat", {"path": "/dev/null"})
        expect_eq(r["type"], "other", "a character device")


@case("fs.list of an empty directory: no entries, and berthd goes on")
def list_empty():
    d = scratch()
    with Sandbox() as sb:
        c = sb.ws()
        r = c.call("fs.list", {"path": d})
        expect_eq((r["entries"], r["truncated"]), ([], False), "the listing of an empty directory")
        expect_eq(c.call("fs.list", {"path": d, "depth": 3})["entries"], [], "again, deeper: berthd still answers")


@case("fs.list: sorted, depth, symlinks not followed, limit truncates; not_found, not_a_directory")
def list_():
    d = scratch()
    for sub in ("b", "a", "a/z", "a/z/deep", "c"):
        os.mkdir(os.path.join(d, sub))
    write_file(os.path.join(d, "a", "f1"), b"x" * 10)
    write_file(os.path.join(d, "a", "z", "f2"), b"y")
    write_file(os.path.join(d, "a-b"), b"")
    outside = scratch()
    write_file(os.path.join(outside, "secret"), b"s")
    os.symlink(outside, os.path.join(d, "c", "out"))
    with Sandbox() as sb:
        c = sb.ws()
        r = listing(c, d)
        expect_eq(names(r), ["a", "a-b", "b", "c"], "depth 1: the directory's own entries, sorted")
        expect_eq((r["truncated"], r["skipped"]), (False, 0), "truncated, skipped")
        e = {x["name"]: x for x in r["entries"]}
        expect_eq((e["a"]["type"], e["a"]["path"]), ("dir", d + "/a"), "a directory entry")
        st = os.stat(d + "/a-b")
        expect_eq(
            (e["a-b"]["type"], e["a-b"]["size"], e["a-b"]["mode"], e["a-b"]["mtime"]),
            ("file", 0, st.st_mode & 0o7777, st.st_mtime_ns // 1000000),
            "a file entry",
        )

        r = listing(c, d, depth=3)
        paths = [x["path"] for x in r["entries"]]
        want = [d + p for p in ("/a", "/a/f1", "/a/z", "/a/z/deep", "/a/z/f2", "/a-b", "/b", "/c", "/c/out")]
        expect_eq(paths, sorted(want), "depth 3: every path, sorted by path")
        link = [x for x in r["entries"] if x["name"] == "out"][0]
        expect_eq((link["type"], link["target"]), ("symlink", outside), "the symlink entry")
        expect(not any("secret" in p for p in paths), "the listing followed a symlink: %r" % paths)
        r = listing(c, d, depth=2)
        expect(d + "/a/z/deep" not in [x["path"] for x in r["entries"]], "depth 2 went deeper")

        r = listing(c, d, depth=3, limit=4)
        expect_eq((len(r["entries"]), r["truncated"]), (4, True), "limit 4 of 9: entries, truncated")
        r = listing(c, d, depth=3, limit=9)
        expect_eq((len(r["entries"]), r["truncated"]), (9, False), "limit 9 of 9")

        error(c, "fs.list", {"path": d + "/nothing"}, "not_found", d + "/nothing")
        error(c, "fs.list", {"path": d + "/a/f1"}, "not_a_directory", d + "/a/f1")


@case("fs.read: ranges, eof and size, a 10 MiB file read chunk after chunk; is_a_directory, not_found")
def read():
    d = scratch()
    data = random.Random(1).randbytes(10 * MIB + 123)
    f = write_file(os.path.join(d, "big"), data)
    with Sandbox() as sb:
        c = sb.ws()
        r = c.call("fs.read", {"path": f, "offset": 100, "length": 50})
        expect_eq((r["data"], r["offset"], r["size"], r["eof"]), (data[100:150], 100, len(data), False), "a range")
        r = c.call("fs.read", {"path": f, "offset": len(data) - 10, "length": 50})
        expect_eq((r["data"], r["eof"]), (data[-10:], True), "the tail")
        r = c.call("fs.read", {"path": f, "offset": len(data) + 5})
        expect_eq((r["data"], r["eof"]), (b"", True), "past the end")
        r = c.call("fs.read", {"path": f})
        expect_eq(len(r["data"]), CHUNK, "the default length: 4 MiB")
        expect_eq(read_all(c, f), data, "the whole file, pipelined")
        expect_eq(read_all(c, f, chunk=CHUNK, window=1), data, "the whole file in 4 MiB chunks")
        empty = write_file(os.path.join(d, "empty"), b"")
        r = c.call("fs.read", {"path": empty})
        expect_eq((r["data"], r["size"], r["eof"]), (b"", 0, True), "an empty file")
        error(c, "fs.read", {"path": d}, "is_a_directory", d)
        error(c, "fs.read", {"path": d + "/nothing"}, "not_found", d + "/nothing")
        os.mkfifo(os.path.join(d, "fifo"))
        error(c, "fs.read", {"path": d + "/fifo"}, "bad_args", d + "/fifo")
        c.call("ping")


# ---------------------------------------------------------------------
# mkdir, move, remove, chmod


@case("fs.mkdir: the exact mode, parents; exists, not_a_directory, not_found")
def mkdir():
    d = scratch()
    write_file(os.path.join(d, "file"), b"")
    with Sandbox() as sb:
        c = sb.ws()
        expect_eq(c.call("fs.mkdir", {"path": d + "/a"}), {"path": d + "/a"}, "the result")
        expect_eq(os.stat(d + "/a").st_mode & 0o7777, 0o755, "the default mode")
        c.call("fs.mkdir", {"path": d + "/m", "mode": 0o1777})
        expect_eq(os.stat(d + "/m").st_mode & 0o7777, 0o1777, "mode 01777, not masked")
        c.call("fs.mkdir", {"path": d + "/x/y/z", "parents": True, "mode": 0o700})
        expect_eq(os.stat(d + "/x/y/z").st_mode & 0o7777, 0o700, "the last directory's mode")
        expect(os.path.isdir(d + "/x/y"), "the parents were made")
        c.call("fs.mkdir", {"path": d + "/x/y", "parents": True})
        error(c, "fs.mkdir", {"path": d + "/a"}, "exists", d + "/a")
        error(c, "fs.mkdir", {"path": d + "/file"}, "exists", d + "/file")
        error(c, "fs.mkdir", {"path": d + "/file", "parents": True}, "not_a_directory", d + "/file")
        error(c, "fs.mkdir", {"path": d + "/file/sub", "parents": True}, "not_a_directory", d + "/file/sub")
        error(c, "fs.mkdir", {"path": d + "/no/sub"}, "not_found", d + "/no/sub")


@case("fs.move: a rename, exists unless overwrite, a directory, not_found; another filesystem is bad_args")
def move():
    d = scratch()
    other = scratch()
    mount_tmpfs(other, "size=1m")
    write_file(d + "/a", b"A")
    write_file(d + "/b", b"B")
    os.mkdir(d + "/dir")
    write_file(d + "/dir/in", b"i")
    with Sandbox() as sb:
        c = sb.ws()
        expect_eq(
            c.call("fs.move", {"from": d + "/a", "to": d + "/c"}), {"from": d + "/a", "to": d + "/c"}, "the result"
        )
        expect(not os.path.exists(d + "/a") and open(d + "/c", "rb").read() == b"A", "a moved to c")
        error(c, "fs.move", {"from": d + "/c", "to": d + "/b"}, "exists", d + "/b")
        expect_eq(open(d + "/b", "rb").read(), b"B", "b after a refused move")
        c.call("fs.move", {"from": d + "/c", "to": d + "/b", "overwrite": True})
        expect_eq(open(d + "/b", "rb").read(), b"A", "b after an overwriting move")
        c.call("fs.move", {"from": d + "/dir", "to": d + "/dir2"})
        expect_eq(open(d + "/dir2/in", "rb").read(), b"i", "a directory moved with its content")
        error(c, "fs.move", {"from": d + "/nothing", "to": d + "/x"}, "not_found", d + "/nothing")
        error(c, "fs.move", {"from": d + "/b", "to": d + "/no/x"}, "not_found", d + "/no/x")
        e = error(c, "fs.move", {"from": d + "/b", "to": other + "/b"}, "bad_args", other + "/b")
        expect_in("different filesystem", e["message"], "the message of a cross-filesystem move")
        expect(os.path.exists(d + "/b") and not os.path.exists(other + "/b"), "nothing was copied")


@case("fs.remove: a file, an empty directory, not_empty, a tree counted, no symlink followed, no mount crossed")
def remove():
    d = scratch()
    outside = scratch()
    write_file(outside + "/keep", b"k")
    write_file(d + "/f", b"")
    os.mkdir(d + "/empty")
    os.makedirs(d + "/tree/a/b/c")
    for i in range(5):
        write_file(d + "/tree/a/b/c/f%d" % i, b"x")
    write_file(d + "/tree/top", b"t")
    os.symlink(outside, d + "/tree/a/link")
    os.symlink(outside + "/keep", d + "/tree/filelink")
    os.makedirs(d + "/mounted/mnt")
    mount_tmpfs(d + "/mounted/mnt", "size=1m")
    write_file(d + "/mounted/mnt/theirs", b"m")
    with Sandbox() as sb:
        c = sb.ws()
        expect_eq(c.call("fs.remove", {"path": d + "/f"}), {"path": d + "/f", "removed": 1}, "a file")
        expect_eq(c.call("fs.remove", {"path": d + "/empty"})["removed"], 1, "an empty directory")
        error(c, "fs.remove", {"path": d + "/tree"}, "not_empty", d + "/tree")
        expect(os.path.exists(d + "/tree/top"), "not_empty removed something")
        r = c.call("fs.remove", {"path": d + "/tree", "recursive": True})
        # tree, a, b, c, f0-f4, top, link, filelink
        expect_eq(r["removed"], 12, "entries removed")
        expect(not os.path.exists(d + "/tree"), "the tree is still there")
        expect_eq(open(outside + "/keep", "rb").read(), b"k", "the file behind the symlinks")
        error(c, "fs.remove", {"path": d + "/tree"}, "not_found", d + "/tree")
        # Another filesystem mounted inside a tree is not emptied.
        e = error(c, "fs.remove", {"path": d + "/mounted", "recursive": True}, "io_error", d + "/mounted")
        expect_in(d + "/mounted/mnt", e["message"], "the error names the mount point")
        expect_eq(open(d + "/mounted/mnt/theirs", "rb").read(), b"m", "the file on the mounted filesystem")
        error(c, "fs.remove", {"path": "/"}, "bad_args", "/")
        error(c, "fs.remove", {"path": "//", "recursive": True}, "bad_args")
        expect(os.path.isdir(d), "the scratch directory")


@case("fs.chmod: every bit up to 07777; not_found")
def chmod():
    d = scratch()
    f = write_file(d + "/f", b"")
    with Sandbox() as sb:
        c = sb.ws()
        for mode in (0o600, 0o7777, 0o2755, 0):
            expect_eq(c.call("fs.chmod", {"path": f, "mode": mode}), {"path": f, "mode": mode}, "the result")
            expect_eq(os.stat(f).st_mode & 0o7777, mode, "the mode on disk")
        error(c, "fs.chmod", {"path": d + "/nothing", "mode": 0o644}, "not_found", d + "/nothing")


@case("permission_denied: every writing op on a read-only filesystem, naming the path")
def read_only():
    d = scratch()
    mount_tmpfs(d, "size=1m")
    write_file(d + "/f", b"old")
    os.mkdir(d + "/dir")
    r = subprocess.run(["mount", "-o", "remount,ro", d], capture_output=True)
    if r.returncode != 0:
        raise Skip("cannot remount read-only: %s" % r.stderr.decode().strip())
    with Sandbox() as sb:
        c = sb.ws()
        error(
            c, "fs.write", {"path": d + "/f", "offset": 0, "data": b"new", "done": True}, "permission_denied", d + "/f"
        )
        error(c, "fs.write", {"path": d + "/g", "offset": 0, "data": b"x"}, "permission_denied", d + "/g")
        error(c, "fs.mkdir", {"path": d + "/m"}, "permission_denied", d + "/m")
        error(c, "fs.remove", {"path": d + "/f"}, "permission_denied", d + "/f")
        error(c, "fs.remove", {"path": d + "/dir", "recursive": True}, "permission_denied", d + "/dir")
        error(c, "fs.chmod", {"path": d + "/f", "mode": 0o600}, "permission_denied", d + "/f")
        error(c, "fs.move", {"from": d + "/f", "to": d + "/h"}, "permission_denied")
        expect_eq(open(d + "/f", "rb").read(), b"old", "the file")
        expect_eq(sorted(os.listdir(d)), ["dir", "f"], "the directory")
        expect_eq(c.call("fs.read", {"path": d + "/f"})["data"], b"old", "reading still works")


# ---------------------------------------------------------------------
# uploads


@case("fs.write: mode, owner, parents; a replaced file keeps its mode and owner; offsets checked")
def write_basics():
    d = scratch()
    old = write_file(d + "/old", b"old content", 0o640)
    os.chown(old, 65534, 65534)
    with Sandbox() as sb:
        c = sb.ws()
        r = c.call("fs.write", {"path": d + "/new", "offset": 0, "data": b"hello", "done": True})
        expect_eq(r, {"path": d + "/new", "size": 5}, "the result of a one-chunk upload")
        st = os.stat(d + "/new")
        expect_eq((st.st_mode & 0o7777, open(d + "/new", "rb").read()), (0o644, b"hello"), "a new file: mode 0644")

        c.call("fs.write", {"path": old, "offset": 0, "data": b"replaced", "done": True})
        st = os.stat(old)
        expect_eq(
            (st.st_mode & 0o7777, st.st_uid, st.st_gid), (0o640, 65534, 65534), "the replaced file's mode and owner"
        )

        c.call(
            "fs.write",
            {"path": d + "/own", "offset": 0, "data": b"", "done": True, "mode": 0o4700, "user": "nobody", "group": 0},
        )
        st = os.stat(d + "/own")
        expect_eq(
            (st.st_mode & 0o7777, st.st_uid, st.st_gid, st.st_size),
            (0o4700, 65534, 0, 0),
            "mode (setuid kept after chown), user by name, group by number",
        )

        r = c.call("fs.write", {"path": d + "/p/q/r", "offset": 0, "data": b"deep", "done": True, "parents": True})
        expect_eq(open(d + "/p/q/r", "rb").read(), b"deep", "a file whose parents were made")
        error(c, "fs.write", {"path": d + "/s/t", "offset": 0, "data": b"x"}, "not_found", d + "/s/t")

        # A partial: offsets must follow on; offset 0 starts afresh.
        t = d + "/t"
        expect_eq(c.call("fs.write", {"path": t})["pending"], 0, "pending with no upload")
        expect_eq(c.call("fs.write", {"path": t, "offset": 0, "data": b"0123456789"})["pending"], 10, "pending")
        expect(not os.path.exists(t), "the target exists before done")
        parts = [n for n in os.listdir(d) if re.fullmatch(r"\.t\.[0-9a-f]{16}\.berth-upload", n)]
        expect_eq(len(parts), 1, "one partial, named .t.<16 hex digits>.berth-upload: %r" % os.listdir(d))
        expect_eq(oct(os.stat(d + "/" + parts[0]).st_mode & 0o7777), oct(0o600), "the partial's mode")
        e = error(c, "fs.write", {"path": t, "offset": 4, "data": b"x"}, "conflict", t)
        expect_in("10 bytes", e["message"], "the conflict says what the partial holds")
        error(c, "fs.write", {"path": t, "offset": 11, "data": b"x"}, "conflict", t)
        expect_eq(c.call("fs.write", {"path": t, "offset": 0, "data": b"abc"})["pending"], 3, "a fresh start truncates")
        expect_eq(
            c.call("fs.write", {"path": t, "done": True}), {"path": t, "size": 3}, "done alone commits the partial"
        )
        expect_eq(open(t, "rb").read(), b"abc", "the committed file")
        error(c, "fs.write", {"path": t, "done": True}, "not_found", t)
        error(c, "fs.write", {"path": t, "offset": 3, "data": b"x"}, "conflict", t)

        # A second writer made the partial grow: the first one's offset is stale.
        c2 = sb.ws()
        c.call("fs.write", {"path": t, "offset": 0, "data": b"AAAA"})
        c2.call("fs.write", {"path": t, "offset": 4, "data": b"BBBB"})
        e = error(c, "fs.write", {"path": t, "offset": 4, "data": b"AAAA"}, "conflict", t)
        expect_in("8 bytes", e["message"], "the conflict message")
        c.call("fs.write", {"path": t, "offset": 8, "data": b"", "done": True})
        expect_eq(open(t, "rb").read(), b"AAAABBBB", "the file both wrote")

        # Long names: the partial's name is cut, and still tells them apart.
        a, b = d + "/" + "n" * 250 + "A", d + "/" + "n" * 250 + "B"
        c.call("fs.write", {"path": a, "offset": 0, "data": b"aa"})
        c.call("fs.write", {"path": b, "offset": 0, "data": b"bbb"})
        expect_eq(
            (c.call("fs.write", {"path": a})["pending"], c.call("fs.write", {"path": b})["pending"]),
            (2, 3),
            "pending of two long names",
        )
        expect(all(len(n) <= 255 for n in os.listdir(d)), "a name past 255 bytes")
        c.call("fs.write", {"path": a, "done": True})
        expect_eq(open(a, "rb").read(), b"aa", "a long-named file")

        error(c, "fs.write", {"path": d, "offset": 0, "data": b"x", "done": True}, "is_a_directory", d)
        error(c, "fs.write", {"path": "/", "offset": 0, "data": b"x"}, "is_a_directory", "/")
        expect(
            not any(n.endswith(".berth-upload") and n.startswith(".p") for n in os.listdir(d)), "a partial left for p"
        )


READER = r"""
import hashlib, os, sys
path, stop = sys.argv[1], sys.argv[2]
seen = {}
while not os.path.exists(stop):
    try:
        with open(path, "rb") as f:
            h, n = hashlib.sha256(), 0
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                h.update(b)
                n += len(b)
        key = "%d:%s" % (n, h.hexdigest())
    except FileNotFoundError:
        key = "missing"
    seen[key] = seen.get(key, 0) + 1
for k, v in seen.items():
    print(k, v)
"""


@case("200 MiB in 4 MiB chunks: an abrupt disconnect, resumed from pending; a reader never sees a part", timeout=600)
def upload_resume():
    d = scratch()
    target = d + "/big.bin"
    old = write_file(target, b"the old content\n" * 1000, 0o640)
    old_key = "%d:%s" % (os.path.getsize(old), file_sha(old))
    data = random.Random(7).randbytes(200 * MIB)
    new_key = "%d:%s" % (len(data), sha(data))
    stop = d + "/stop"
    reader = subprocess.Popen([PY, "-c", READER, target, stop], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    harness.track_closer(lambda: reader.poll() is None and reader.kill())
    with Sandbox() as sb:
        c = sb.ws(timeout=60)
        # 12 chunks in flight, then the connection drops without a close.
        for i in range(12):
            c.send_request("fs.write", {"path": target, "offset": i * CHUNK, "data": data[i * CHUNK : (i + 1) * CHUNK]})
        c.response(1 + 5, timeout=60)  # hello was 1: the 5th chunk is in
        c.abort()

        c = sb.ws_retry(timeout=30)
        resumed, conflicts = None, 0
        while True:
            pending = c.call("fs.write", {"path": target})["pending"]
            expect(pending % CHUNK == 0 and 5 * CHUNK <= pending <= 12 * CHUNK, "pending after the drop: %d" % pending)
            resumed = resumed if resumed is not None else pending
            try:
                result = upload(c, target, data, start=pending)
                break
            except harness.ProtoError as e:
                # The old connection's last chunks may still land.
                expect_eq(e.code, "conflict", "the error of a resumed chunk")
                conflicts += 1
                expect(conflicts < 5, "conflict after conflict: %s" % e)
        note("resumed at %d MiB (%d conflicts)" % (resumed // MIB, conflicts))
        expect_eq(result, {"path": target, "size": len(data)}, "the final result")
        open(stop, "w").close()
        out, err = reader.communicate(timeout=120)
        expect_eq(reader.returncode, 0, "the reader's exit status (%s)" % err.decode()[-500:])
        seen = dict(line.split() for line in out.decode().splitlines())
        note("the reader saw: %r" % seen)
        expect(set(seen) <= {old_key, new_key}, "the reader saw something but the old and the new file: %r" % seen)
        expect_in(old_key, seen, "the reader saw the old file")
        expect_eq(file_sha(target), sha(data), "sha256 of the target")
        expect_eq(os.stat(target).st_mode & 0o7777, 0o640, "the replaced file's mode")
        expect_eq(sorted(os.listdir(d)), ["big.bin", "stop"], "the directory after the upload (no partial)")
        expect_eq(c.call("fs.write", {"path": target})["pending"], 0, "pending after done")
        got = read_all(c, target)
        expect_eq(sha(got), sha(data), "sha256 read back through fs.read")


@case("a full disk: no_space naming the path, no partial left, the old target untouched")
def disk_full():
    d = scratch()
    mount_tmpfs(d, "size=8m")
    target = write_file(d + "/target", b"old and small\n")
    data = random.Random(3).randbytes(16 * MIB)
    with Sandbox() as sb:
        c = sb.ws(timeout=30)
        failed = None
        for i in range(4):
            r = c.request(
                "fs.write",
                {"path": target, "offset": i * CHUNK, "data": data[i * CHUNK : (i + 1) * CHUNK], "done": i == 3},
                timeout=30,
            )
            if not r["ok"]:
                failed = r["error"]
                break
        expect(failed is not None, "16 MiB fit into 8 MiB")
        note("failed at chunk %d: %r" % (i, failed))
        expect_eq((failed["code"], failed["path"]), ("no_space", target), "the error")
        expect_eq(os.listdir(d), ["target"], "the directory after the failure")
        expect_eq(open(target, "rb").read(), b"old and small\n", "the old target")
        expect_eq(c.call("fs.write", {"path": target})["pending"], 0, "pending after the failure")
        # The space is back: a small upload goes through.
        c.call("fs.write", {"path": target, "offset": 0, "data": b"new", "done": True})
        expect_eq(open(target, "rb").read(), b"new", "the target after a small upload")


# ---------------------------------------------------------------------
# watches


@case("fs.watch: created, modified, deleted, moved under a recursive watch, new subdirectories too", timeout=120)
def watch_tree():
    d = scratch()
    outside = scratch()
    with Sandbox() as sb:
        c = sb.ws(timeout=20)
        w = watch(c, d, recursive=True)
        expect_eq(watch_ids(c)[w.id], {"id": w.id, "path": d, "recursive": True, "dirs": 1}, "fs.watches")

        write_file(d + "/f1", b"one")
        ch = w.until(d + "/f1")
        expect_eq(kinds_of(ch, d + "/f1"), ["created"], "a new file written at once: created, once")
        with open(d + "/f1", "ab") as f:
            f.write(b"more")
        w.until(d + "/f1", "modified")

        os.mkdir(d + "/s")
        w.until(d + "/s")
        # The subdirectory is watched now: a file made in it is told.
        write_file(d + "/s/g", b"g")
        w.until(d + "/s/g")
        expect_eq(watch_ids(c)[w.id]["dirs"], 2, "dirs held")
        os.rename(d + "/f1", d + "/s/f2")
        ch = w.until(d + "/s/f2", "moved")
        moved = [x for x in ch if x["path"] == d + "/s/f2"][0]
        expect_eq(moved, {"path": d + "/s/f2", "kind": "moved", "from": d + "/f1"}, "a move between directories")
        os.unlink(d + "/s/f2")
        w.until(d + "/s/f2", "deleted")

        # A subdirectory made with content at once, then renamed: its
        # files are told at their new paths.
        os.makedirs(d + "/n/m")
        write_file(d + "/n/m/x", b"x")
        w.until(d + "/n/m/x")
        os.rename(d + "/n", d + "/n2")
        w.until(d + "/n2", "moved")
        write_file(d + "/n2/m/y", b"y")
        w.until(d + "/n2/m/y")

        # Moved out of sight: deleted, and no longer watched.
        os.rename(d + "/n2", outside + "/n2")
        w.until(d + "/n2", "deleted")
        write_file(outside + "/n2/m/z", b"z")
        write_file(d + "/mark1", b"")
        ch = w.until(d + "/mark1")
        expect(not any("z" == os.path.basename(x["path"]) for x in ch), "a change outside the tree was told: %r" % ch)
        expect_eq(watch_ids(c)[w.id]["dirs"], 2, "dirs held after the move out")

        # Moved in: created, and watched.
        os.makedirs(outside + "/in/deep")
        os.rename(outside + "/in", d + "/in")
        w.until(d + "/in")
        write_file(d + "/in/deep/q", b"q")
        w.until(d + "/in/deep/q")

        # Coalescing: within one window a path is told once, created and
        # deleted at once is nothing, many writes are one change.
        with open(d + "/hot", "wb") as f:
            for i in range(1000):
                f.write(b"x")
                f.flush()
        write_file(d + "/brief", b"")
        os.unlink(d + "/brief")
        write_file(d + "/mark2", b"")
        ch = w.until(d + "/mark2")
        for ev in w.events:
            paths = [x["path"] for x in ev]
            expect_eq(len(paths), len(set(paths)), "one event tells a path once: %r" % ev)
        hot = kinds_of(ch, d + "/hot")
        expect(0 < len(hot) < 1000 and hot[0] == "created", "1000 writes told as %d changes: %r" % (len(hot), hot[:10]))
        expect(
            kinds_of(ch, d + "/brief") in ([], ["created", "deleted"]),
            "a file made and deleted: %r" % kinds_of(ch, d + "/brief"),
        )

        # Attributes are a modification too.
        os.chmod(d + "/hot", 0o600)
        w.until(d + "/hot", "modified")


@case("fs.watch on a file: replaced by an upload (moved), modified; deleted ends the watch; so does a deleted root")
def watch_file_and_root():
    d = scratch()
    f = write_file(d + "/watched", b"v1")
    write_file(d + "/other", b"")
    os.mkdir(d + "/root")
    with Sandbox() as sb:
        c = sb.ws(timeout=20)
        w = watch(c, f)
        c.call("fs.write", {"path": f, "offset": 0, "data": b"v2", "done": True})
        ch = w.until(f, "moved")
        frm = [x for x in ch if x["path"] == f][-1]["from"]
        expect(re.fullmatch(re.escape(d) + r"/\.watched\.[0-9a-f]{16}\.berth-upload", frm), "replaced by an upload: %r" % frm)
        with open(d + "/other", "ab") as o:
            o.write(b"not watched")
        with open(f, "ab") as o:
            o.write(b"more")
        ch = w.until(f, "modified")
        expect(all(x["path"] == f for x in ch), "a file watch told of other files: %r" % ch)
        os.unlink(f)
        w.until(f, "deleted")
        wait_for(lambda: w.id not in watch_ids(c), 5, "the file watch ending")
        error(c, "fs.unwatch", {"id": w.id}, "not_found")

        r = watch(c, d + "/root")
        write_file(d + "/root/x", b"")
        r.until(d + "/root/x")
        shutil.rmtree(d + "/root")
        r.until(d + "/root", "deleted")
        wait_for(lambda: r.id not in watch_ids(c), 5, "the watch of a deleted root ending")


@case("fs.watch: a symlink is refused, followed with follow_symlinks (new subdirectories too); as a user who may read")
def watch_follow_and_as():
    d = scratch()
    os.mkdir(d + "/real")
    os.symlink("real", d + "/link")
    with Sandbox() as sb:
        c = sb.ws(timeout=20)
        error(c, "fs.watch", {"path": d + "/link"}, "symlink", d + "/link")
        error(c, "fs.watch", {"path": d + "/link/f"}, "symlink", d + "/link/f")
        r = c.call("fs.watch", {"path": d + "/link", "recursive": True, "follow_symlinks": True})
        expect_eq(r["path"], d + "/link", "the watched path, as asked")
        c.subscribe()
        w = Watched(c, r["id"])
        os.mkdir(d + "/real/sub")
        w.until(d + "/link/sub")
        write_file(d + "/real/sub/f", b"f")
        w.until(d + "/link/sub/f")
        expect_eq(watch_ids(c)[w.id]["dirs"], 2, "the new subdirectory is watched through the link")

        u = Watched(c, c.call("fs.watch", {"path": d + "/real", "as": "nobody"})["id"])
        write_file(d + "/real/g", b"")
        u.until(d + "/real/g")
        uf = Watched(c, c.call("fs.watch", {"path": d + "/real/g", "as": "nobody"})["id"])
        with open(d + "/real/g", "ab") as o:
            o.write(b"more")
        uf.until(d + "/real/g", "modified")


@case("fs.unwatch ends a watch at once; watches outlive their connection; at most 64")
def watch_lifecycle():
    d = scratch()
    os.mkdir(d + "/a")
    os.mkdir(d + "/b")
    with Sandbox() as sb:
        c = sb.ws(timeout=20)
        a = c.call("fs.watch", {"path": d + "/a"})["id"]
        c.close()
        c = sb.ws(timeout=20)
        expect_in(a, watch_ids(c), "a watch after its connection closed")
        b = watch(c, d + "/b")
        expect_eq(c.call("fs.unwatch", {"id": a}), {}, "fs.unwatch")
        expect(a not in watch_ids(c), "fs.watches still lists an ended watch")
        write_file(d + "/a/after", b"")
        write_file(d + "/b/mark", b"")
        b.until(d + "/b/mark")
        events = sb.events()
        told = [e for e in events if e["kind"] == "fs.changed" and e["data"]["watch"] == a]
        expect_eq(told, [], "fs.changed of an ended watch")
        error(c, "fs.unwatch", {"id": a}, "not_found")
        error(c, "fs.unwatch", {"id": "00000000"}, "not_found")

        ids = [b.id]
        for i in range(63):
            ids.append(c.call("fs.watch", {"path": d + "/b"})["id"])
        expect_eq(len(set(ids)), 64, "distinct ids")
        expect_eq(error(c, "fs.watch", {"path": d + "/a"}, "unavailable")["code"], "unavailable", "the 65th watch")
        # 64 watches on one directory share one inotify watch; each tells.
        write_file(d + "/b/shared", b"")
        wait_for(
            lambda: len(
                {
                    e["data"]["watch"]
                    for e in sb.events()
                    if e["kind"] == "fs.changed" and any(x["path"] == d + "/b/shared" for x in e["data"]["changes"])
                }
            )
            == 64,
            10,
            "all 64 watches telling",
        )
        for i in ids:
            c.call("fs.unwatch", {"id": i})
        expect_eq(watch_ids(c), {}, "fs.watches after unwatching all")
        error(c, "fs.watch", {"path": d + "/nothing"}, "not_found", d + "/nothing")


@case("a burst of 10 000 files: every one told as created, or counted as lost", timeout=180)
def watch_burst():
    d = scratch()
    os.mkdir(d + "/burst")
    with Sandbox() as sb:
        c = sb.ws(timeout=30)
        w = watch(c, d + "/burst", recursive=True)
        want = set()
        for i in range(10000):
            p = "%s/burst/f%05d" % (d, i)
            with open(p, "wb") as f:
                f.write(b"x")
            want.add(p)
        write_file(d + "/burst/zz-mark", b"")
        w.until(d + "/burst/zz-mark", timeout=120)
        first, created = {}, set()
        for x in w.changes:
            if x["path"] in want:
                first.setdefault(x["path"], x["kind"])
                expect(x["kind"] in ("created", "modified"), "a new file told as %r" % x)
                if x["kind"] == "created":
                    created.add(x["path"])
        # A file's write may fall into the window after its creation:
        # modified then, but only after created.
        late = [p for p, k in first.items() if k != "created"]
        expect_eq(late, [], "files first told as something other than created")
        expect(all(len(ev) <= 1000 for ev in w.events), "an event of more than 1000 changes")
        lost = sum(o.get("lost", 0) for o in w.overflows if o["reason"] == "burst")
        kernel = [o for o in w.overflows if o["reason"] == "kernel"]
        note("%d events, %d created, %d lost, %d kernel overflows" % (len(w.events), len(created), lost, len(kernel)))
        if kernel:
            # The kernel dropped events and said so; nothing is silently
            # missing: the listing the client rescans has every file.
            r = listing(c, d + "/burst", limit=20000)
            expect_eq(len(r["entries"]), 10001, "the files listed after a kernel overflow")
        else:
            expect_eq(len(created) + lost, 10000, "files told as created plus those counted as lost")

        # 25 000 files moved in at once are all found in one window: the
        # first 20 000 paths are listed, the rest counted as lost.
        outside = scratch()
        os.mkdir(outside + "/many")
        for i in range(25000):
            open("%s/many/g%05d" % (outside, i), "wb").close()
        seen = len(w.events), len(w.overflows)
        os.rename(outside + "/many", d + "/burst/many")
        w.until(None, overflow="burst", timeout=120)
        told = {x["path"] for ev in w.events[seen[0] :] for x in ev if x["path"].startswith(d + "/burst/many")}
        lost = sum(o.get("lost", 0) for o in w.overflows[seen[1] :] if o["reason"] == "burst")
        note("moved in: %d told, %d lost" % (len(told), lost))
        expect(lost > 0, "no burst overflow for 25 001 paths in one window")
        expect_eq(len(told) + lost, 25001, "paths told plus paths counted as lost")


@case(
    "the kernel's queue overflows while berthd is stopped: fs.overflow for every watch, new directories still watched",
    timeout=180,
)
def watch_kernel_overflow():
    d = scratch()
    os.mkdir(d + "/one")
    os.mkdir(d + "/two")
    with Sandbox() as sb:
        c = sb.ws(timeout=30)
        one = watch(c, d + "/one", recursive=True)
        two = Watched(c, c.call("fs.watch", {"path": d + "/two"})["id"])
        queued = int(open("/proc/sys/fs/inotify/max_queued_events").read())
        pid = sb.berthd_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            for i in range(queued + 100):
                open("%s/one/f%06d" % (d, i), "wb").close()
            # Made after the queue is full: its creation is not told.
            os.mkdir(d + "/one/late")
        finally:
            os.kill(pid, signal.SIGCONT)
        one.until(None, overflow="kernel", timeout=120)
        two.until(None, overflow="kernel", timeout=30)
        # The watch looked for directories it missed: late is watched.
        write_file(d + "/one/late/x", b"")
        one.until(d + "/one/late/x", timeout=30)
        write_file(d + "/two/y", b"")
        two.until(d + "/two/y", timeout=30)


# ---------------------------------------------------------------------
# bad input


@case("bad input for every op: types, missing fields, huge lengths, NUL, relative and overlong paths")
def bad_input():
    d = scratch()
    f = write_file(d + "/f", b"data")
    long_path = "/" + "/".join(["x" * 200] * 25)  # 5025 bytes
    long_name = d + "/" + "y" * 256
    bad_paths = [None, 7, b"/bin", "relative/path", "", "/a\0b", long_path, long_name, ["/"]]
    path_ops = {
        "fs.stat": {},
        "fs.list": {},
        "fs.read": {},
        "fs.write": {"offset": 0, "data": b"x"},
        "fs.mkdir": {},
        "fs.remove": {},
        "fs.chmod": {"mode": 0o644},
        "fs.watch": {},
    }
    with Sandbox() as sb:
        c = sb.ws()
        for op, extra in path_ops.items():
            for p in bad_paths:
                args = dict(extra)
                if p is not None:
                    args["path"] = p
                error(c, op, args, "bad_args")
        for key in ("from", "to"):
            for p in bad_paths:
                args = {"from": f, "to": d + "/g"}
                if p is None:
                    del args[key]
                else:
                    args[key] = p
                error(c, "fs.move", args, "bad_args")
        cases = [
            ("fs.stat", {"path": f, "follow": "no"}),
            ("fs.list", {"path": d, "depth": 0}),
            ("fs.list", {"path": d, "depth": 33}),
            ("fs.list", {"path": d, "depth": -1}),
            ("fs.list", {"path": d, "limit": 0}),
            ("fs.list", {"path": d, "limit": 100001}),
            ("fs.list", {"path": d, "limit": "10"}),
            ("fs.read", {"path": f, "length": 1 << 30}),
            ("fs.read", {"path": f, "length": 0}),
            ("fs.read", {"path": f, "length": 4 * MIB + 1}),
            ("fs.read", {"path": f, "offset": -1}),
            ("fs.read", {"path": f, "offset": 1 << 63}),
            ("fs.read", {"path": f, "offset": 1.5}),
            ("fs.write", {"path": d + "/w", "data": b"x"}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": "text"}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": b"x" * (4 * MIB + 1)}),
            ("fs.write", {"path": d + "/w", "offset": -5, "data": b"x"}),
            ("fs.write", {"path": d + "/w", "offset": 1 << 63, "data": b"x"}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": b"x", "done": 1}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": b"x", "mode": 0o10000}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": b"x", "mode": "0644"}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": b"x", "user": "no-such-user-here"}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": b"x", "group": "no-such-group-here"}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": b"x", "user": -1}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": b"x", "user": ["root"]}),
            ("fs.write", {"path": d + "/w", "offset": 0, "data": b"x", "parents": "yes"}),
            ("fs.write", {"path": d + "/.", "offset": 0, "data": b"x"}),
            ("fs.write", {"path": d + "/..", "offset": 0, "data": b"x"}),
            ("fs.mkdir", {"path": d + "/m", "mode": 0o10000}),
            ("fs.mkdir", {"path": d + "/m", "parents": 1}),
            ("fs.move", {"from": f, "to": d + "/g", "overwrite": "yes"}),
            ("fs.remove", {"path": f, "recursive": 1}),
            ("fs.chmod", {"path": f}),
            ("fs.chmod", {"path": f, "mode": 0o17777}),
            ("fs.chmod", {"path": f, "mode": "0644"}),
            ("fs.watch", {"path": d, "recursive": "yes"}),
            ("fs.watch", {"path": d, "follow_symlinks": "yes"}),
            ("fs.watch", {"path": d, "as": 7}),
            ("fs.watch", {"path": d, "as": "no-such-user-here"}),
            ("fs.unwatch", {}),
            ("fs.unwatch", {"id": 5}),
            ("fs.unwatch", {"id": "x" * 100}),
        ]
        for op, args in cases:
            error(c, op, args, "bad_args")
        error(c, "fs.unwatch", {"id": "deadbeef"}, "not_found")
        # None of it touched anything.
        expect_eq(sorted(os.listdir(d)), ["f"], "the directory after the bad requests")
        expect_eq(open(f, "rb").read(), b"data", "the file after the bad requests")
        expect_eq(c.call("fs.read", {"path": f})["data"], b"data", "fs.read after the bad requests")


run()
