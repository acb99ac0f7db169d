"""berth record start, stop and status against a real X server (Xvfb)
with berth-desktop run by berthd, on both transports: the MP4 that
record stop -o fetches is whole, valid (ffprobe: H.264 or MPEG-4 in
MP4, a duration near the wall time) and the published artifact's bytes
(its SHA-256); status tells the states; usage errors exit 2 before
anything is sent, an unknown ID exits 1. Against a stand-in for berthd
on a Unix socket: record.stop asked again after a lost connection and
a download resumed at the byte it had reached, a SHA-256 that does not match landing nothing, a
FILE that cannot be written stopping nothing, and Ctrl-C leaving no
temp file."""

import hashlib
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    CLI,
    TRANSPORTS,
    Sandbox,
    berth,
    case,
    expect,
    expect_eq,
    expect_in,
    note,
    run,
    run_program,
    running,
    scratch,
    text_ok,
    wait_for,
)

WIDTH, HEIGHT = 640, 480
COLOURS = ("#c02020", "#20c020", "#2020c0", "#c0c020", "#20c0c0", "#c020c0")


class DesktopSandbox(harness.DesktopSandbox):
    """berthd running Xvfb (WIDTH x HEIGHT) and berth-desktop."""

    def __init__(self):
        super().__init__(WIDTH, HEIGHT, ("Xvfb", "xdpyinfo", "xsetroot", "ffprobe"))


def paint(desk, seconds):
    """Changes the root's colour every 0.3 s for about seconds."""
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        rc, _, err = run_program(["xsetroot", "-solid", COLOURS[i % len(COLOURS)]], env=desk.env)
        expect_eq(rc, 0, "xsetroot (stderr %r)" % err)
        i += 1
        time.sleep(0.3)


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def probe(path):
    """ffprobe's view of a file: (format, [streams])."""
    rc, out, err = run_program(
        ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", path], timeout=30
    )
    expect_eq(rc, 0, "ffprobe %s (stderr %r)" % (path, err))
    doc = json.loads(out)
    note(
        "ffprobe: format %s, streams %s"
        % (
            {k: doc["format"].get(k) for k in ("format_name", "duration", "size")},
            [{k: s.get(k) for k in ("codec_type", "codec_name", "width", "height")} for s in doc["streams"]],
        )
    )
    return doc["format"], doc["streams"]


def expect_mp4(path, low=1.5, high=4.0):
    """path is an MP4 holding one H.264 or MPEG-4 video lasting low to
    high seconds."""
    fmt, streams = probe(path)
    expect(
        "mp4" in fmt["format_name"].split(",") or "mov" in fmt["format_name"].split(","),
        "the format: %r" % fmt["format_name"],
    )
    video = [s for s in streams if s.get("codec_type") == "video"]
    expect_eq(len(video), 1, "video streams")
    expect_in(video[0]["codec_name"], ("h264", "mpeg4"), "the codec")
    expect_eq((video[0]["width"], video[0]["height"]), (WIDTH, HEIGHT), "the video's size")
    duration = float(fmt["duration"])
    expect(low <= duration <= high, "the duration: %.3f s, not %.1f to %.1f" % (duration, low, high))


def status_rows(out):
    """record status's table: {id: [cells]}, after checking the header."""
    lines = out.splitlines()
    expect(
        re.fullmatch(r"ID +STATE +STARTED +FPS +REGION +DURATION +FRAMES +DROPPED +BYTES +ARTIFACT/REASON", lines[0]),
        "the header: %r" % lines[0],
    )
    return {line.split()[0]: line.split() for line in lines[1:]}


@case(
    "record start, a changing screen, record stop -o: a whole MP4 that is the artifact; status says published",
    timeout=240,
    transports=TRANSPORTS,
)
def start_stop_file(transport):
    d = scratch()
    desk = DesktopSandbox()
    with desk as sb:
        out = text_ok(sb, transport, "record", "start", "--fps", "10")
        expect(re.fullmatch(r"[0-9a-f]{8}\n", out), "record start prints the id: %r" % out)
        rid = out.strip()
        row = status_rows(text_ok(sb, transport, "record", "status"))[rid]
        expect_eq(
            (row[1], row[3], row[4]),
            ("recording", "10", "%dx%d+0+0" % (WIDTH, HEIGHT)),
            "the row while recording",
        )
        paint(desk, 2.2)
        path = os.path.join(d, "out.mp4")
        started = time.monotonic()
        out = text_ok(sb, transport, "record", "stop", rid, "-o", path, timeout=150)
        note("record stop took %.2f s" % (time.monotonic() - started))
        lines = out.splitlines()
        m = re.fullmatch(r"artifact ([0-9a-f]{64})", lines[0])
        expect(m is not None, "the artifact line: %r" % lines[0])
        art = m.group(1)
        size = os.path.getsize(path)
        expect_eq(
            lines[1],
            "name     recording-%s.mp4, video/mp4, %d bytes" % (rid, size),
            "the name line",
        )
        expect(
            re.fullmatch(r"video    \d+\.\d s, \d+ frames, \d+ dropped", lines[2]),
            "the video line: %r" % lines[2],
        )
        expect_eq(lines[3:], ["file     %s, SHA-256 checked" % path], "the file line")
        expect_eq(sha256_of(path), art, "the file's SHA-256 is the artifact's id")
        expect_mp4(path)
        row = status_rows(text_ok(sb, transport, "record", "status"))[rid]
        expect_eq((row[1], row[-1]), ("published", art), "the row once published")
        doc = json.loads(text_ok(sb, transport, "--json", "record", "status", rid))
        (rec,) = doc["recordings"]
        expect_eq(
            (rec["id"], rec["state"], rec["artifact"]["sha256"], rec["artifact"]["size"]),
            (rid, "published", art, size),
            "status --json ID",
        )
        expect_eq(os.listdir(d), ["out.mp4"], "the files left (no temp file)")


@case("--json: start's result; stop -o's with the file; stopping again answers the same artifact at once", timeout=180)
def json_and_again():
    d = scratch()
    desk = DesktopSandbox()
    with desk as sb:
        doc = json.loads(
            text_ok(
                sb,
                "unix",
                "--json",
                "record",
                "start",
                "--fps",
                "5",
                "--region",
                "0,0,320,240",
                "--quality",
                "30",
                "--max-seconds",
                "60",
            )
        )
        expect_eq(
            (doc["fps"], doc["region"]),
            (5, {"x": 0, "y": 0, "width": 320, "height": 240}),
            "start --json's fps and region",
        )
        expect(re.fullmatch(r"[0-9a-f]{8}", doc["id"]) and doc["started"] > 0, "start --json: %r" % doc)
        rid = doc["id"]
        paint(desk, 1.5)
        path = os.path.join(d, "r.mp4")
        doc = json.loads(text_ok(sb, "ws", "--json", "record", "stop", rid, "-o", path, timeout=150))
        expect_eq((doc["id"], doc["file"]), (rid, path), "stop --json's id and file")
        expect_eq(doc["artifact"]["sha256"], sha256_of(path), "stop --json's sha256 is the file's")
        expect_eq(doc["artifact"]["size"], os.path.getsize(path), "stop --json's size is the file's")
        fmt, _ = probe(path)
        expect("mp4" in fmt["format_name"], "the format: %r" % fmt["format_name"])
        started = time.monotonic()
        again = json.loads(text_ok(sb, "unix", "--json", "record", "stop", rid))
        expect(
            time.monotonic() - started < 10, "stopping an ended recording took %.1f s" % (time.monotonic() - started)
        )
        expect_eq(again["artifact"], doc["artifact"], "the artifact of a second stop")
        expect("file" not in again, "no file without -o: %r" % again)
        out = text_ok(sb, "ws", "record", "stop", rid)
        expect_eq(out.splitlines()[0], "artifact %s" % doc["artifact"]["id"], "stop without -o: the reference")
        expect_eq(os.listdir(d), ["r.mp4"], "the files left")


USAGE = [
    (["record"], "record wants start, stop or status"),
    (["record", "rewind"], "record wants start, stop or status"),
    (["record", "start", "--fps", "0"], "--fps wants"),
    (["record", "start", "--fps", "31"], "--fps wants"),
    (["record", "start", "--fps", "ten"], "--fps wants"),
    (["record", "start", "--region", "1,2,3"], "--region wants X,Y,W,H"),
    (["record", "start", "--region", "0,0,0,10"], "--region wants X,Y,W,H"),
    (["record", "start", "--max-seconds", "0"], "--max-seconds wants"),
    (["record", "start", "--quality", "101"], "--quality wants"),
    (["record", "start", "now"], "takes no words"),
    (["record", "stop"], "record stop wants the ID"),
    (["record", "stop", "-o", "x.mp4"], "record stop wants the ID"),
    (["record", "stop", "a", "b"], "takes one ID"),
    (["record", "stop", "1a2b3c4d", "-o", "-"], "-o wants a FILE"),
    (["record", "status", "a", "b"], "one ID at most"),
]


@case("usage errors exit 2 before anything is sent; an unknown ID exits 1 not_found; no desktop: unavailable",
      transports=TRANSPORTS)
def usage_unknown_unavailable(transport):
    desk = DesktopSandbox()
    with desk as sb:
        for args, words in USAGE:
            rc, out, err = berth(sb, transport, *args, text=True)
            expect_eq(rc, 2, "%s: exit status" % " ".join(args))
            expect_in(words, err, "%s: the message" % " ".join(args))
            expect_in("usage: berth [OPTIONS] record", err, "%s: the synopsis" % " ".join(args))
            expect_eq(out, "", "%s: stdout" % " ".join(args))
        doc = json.loads(text_ok(sb, transport, "--json", "record", "status"))
        expect_eq(doc["recordings"], [], "no recording was started by a usage error")
        d = scratch()
        unknown = (
            ["record", "stop", "deadbeef"],
            ["record", "stop", "deadbeef", "-o", os.path.join(d, "x.mp4")],
            ["record", "status", "deadbeef"],
        )
        for args in unknown:
            rc, out, err = berth(sb, transport, *args, text=True)
            expect_eq(rc, 1, "%s: exit status" % " ".join(args))
            expect(err.startswith("berth: not_found: "), "%s: stderr %r" % (" ".join(args), err))
        expect_eq(os.listdir(d), [], "the files left by a refused stop -o")
        expect_eq(text_ok(sb, transport, "record", "status"), "no recordings\n", "status with none")
    with Sandbox() as sb:
        for args in (["record", "start"], ["record", "stop", "deadbeef"], ["record", "status"]):
            rc, out, err = berth(sb, transport, *args, text=True)
            expect_eq(rc, 1, "%s without berth-desktop: exit status" % " ".join(args))
            expect(err.startswith("berth: unavailable: "), "%s: stderr %r" % (" ".join(args), err))


# ---------------------------------------------------------------------
# A stand-in for berthd on a Unix socket, for what the real one cannot be
# made to do on cue: drop a connection mid-download, answer a reference
# whose SHA-256 is not its bytes', never answer.


class FakeBerthd:
    """Answers hello, record.stop (with a reference to data, claiming
    sha) and artifact.read (ranges of data). drops: on the first
    connection, close it after that many reads are answered (None: never;
    0: at record.stop, unanswered). hang: never answer record.stop.
    Every request is kept in ops as (connection number, op, args)."""

    def __init__(self, data, sha=None, drops=None, hang=False):
        self.data = data
        self.id = hashlib.sha256(data).hexdigest()
        self.sha = sha or self.id
        self.drops = drops
        self.hang = hang
        self.ops = []
        self.dir = scratch()
        self.path = os.path.join(self.dir, "fake.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        self.sock.close()

    def _serve(self):
        n = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            n += 1
            with conn:
                try:
                    self._conn(conn, n)
                except (OSError, EOFError):
                    pass

    def _take(self, conn, buf, pending, n, wait):
        """Reads what has come (waiting for something unless not wait)
        and queues each whole request in pending, noted in ops."""
        conn.settimeout(None if wait else 0.3)
        try:
            chunk = conn.recv(1 << 20)
        except socket.timeout:
            return buf
        if not chunk:
            raise EOFError
        buf += chunk
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
            (length,) = struct.unpack(">I", buf[:4])
            req = msgpack.unpackb(buf[4 : 4 + length], raw=False)
            buf = buf[4 + length :]
            self.ops.append((n, req["op"], req.get("args") or {}))
            pending.append(req)
        return buf

    def _conn(self, conn, n):
        buf, pending, reads = b"", [], 0
        while True:
            if not pending:
                buf = self._take(conn, buf, pending, n, True)
                continue
            req = pending.pop(0)
            op, args = req["op"], req.get("args") or {}
            if op == "artifact.read" and reads == 0:
                # What a client sends without waiting has come by now.
                time.sleep(0.3)
                buf = self._take(conn, buf, pending, n, False)
            if op == "hello":
                result = {"version": "berth.v1", "agent_version": "0", "boot_id": "0" * 32}
            elif op == "record.stop":
                if n == 1 and self.drops == 0:
                    return
                if self.hang:
                    continue
                result = {
                    "id": args["id"],
                    "duration_ms": 2000,
                    "frames": 20,
                    "dropped": 0,
                    "started": 1,
                    "artifact": {
                        "id": self.id,
                        "sha256": self.sha,
                        "size": len(self.data),
                        "media_type": "video/mp4",
                        "name": "recording-%s.mp4" % args["id"],
                    },
                }
            elif op == "artifact.read":
                off, length = args["offset"], args["length"]
                chunk = self.data[off : off + length]
                result = {
                    "data": chunk,
                    "offset": off,
                    "size": len(self.data),
                    "eof": off + len(chunk) >= len(self.data),
                }
            else:
                result = None
            body = msgpack.packb({"type": "response", "id": req["id"], "ok": True, "result": result}, use_bin_type=True)
            conn.sendall(struct.pack(">I", len(body)) + body)
            if op == "artifact.read":
                reads += 1
                if n == 1 and self.drops is not None and reads == self.drops:
                    return


def fake_run(fake, *args, timeout=30):
    argv = [CLI, "--socket", fake.path] + list(args)
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    note("%s -> %d\nstdout: %s\nstderr: %s" % (" ".join(args), p.returncode, out, err))
    return p.returncode, out, err


def reads(fake, conn):
    return [args["offset"] for n, op, args in fake.ops if n == conn and op == "artifact.read"]


@case("stop -o: 1 MiB reads, a few in flight; after a lost connection the fetch resumes at the byte reached")
def resume_after_loss():
    data = os.urandom(3 * 1024 * 1024 + 12345)
    fake = FakeBerthd(data, drops=1)
    try:
        d = scratch()
        path = os.path.join(d, "r.mp4")
        rc, out, err = fake_run(fake, "record", "stop", "1a2b3c4d", "-o", path)
        expect_eq(rc, 0, "exit status (stderr %r)" % err)
        with open(path, "rb") as f:
            expect(f.read() == data, "the file is not the artifact's bytes")
        expect_eq(os.listdir(d), ["r.mp4"], "the files left")
        expect_eq(err, "", "stderr: a loss mended at the first try goes unsaid")
        mib = 1 << 20
        expect_eq(
            [(op, args.get("id")) for n, op, args in fake.ops if n == 1][:2],
            [("hello", None), ("record.stop", "1a2b3c4d")],
            "the first connection's requests",
        )
        expect_eq(reads(fake, 1), [0, mib, 2 * mib, 3 * mib], "the reads sent on the first connection")
        expect_eq(
            [op for n, op, _ in fake.ops if n == 2],
            ["hello"] + ["artifact.read"] * 3,
            "the second connection's requests (record.stop's answer is kept)",
        )
        expect_eq(reads(fake, 2), [mib, 2 * mib, 3 * mib], "the reads after the loss start at the byte reached")
        expect(
            all(args["length"] == mib for _, op, args in fake.ops if op == "artifact.read"), "every read asks for 1 MiB"
        )
    finally:
        fake.close()


@case("stop: a connection lost before the answer asks record.stop again on the next one")
def stop_again_after_loss():
    data = os.urandom(5000)
    fake = FakeBerthd(data, drops=0)
    try:
        d = scratch()
        path = os.path.join(d, "r.mp4")
        rc, out, err = fake_run(fake, "record", "stop", "1a2b3c4d", "-o", path)
        expect_eq(rc, 0, "exit status (stderr %r)" % err)
        with open(path, "rb") as f:
            expect(f.read() == data, "the file is not the artifact's bytes")
        expect_eq(
            [(n, op) for n, op, _ in fake.ops],
            [(1, "hello"), (1, "record.stop"), (2, "hello"), (2, "record.stop"), (2, "artifact.read")],
            "the requests",
        )
        rc, out, err = fake_run(fake, "--json", "record", "stop", "1a2b3c4d")
        expect_eq(rc, 0, "without -o: exit status (stderr %r)" % err)
        expect_eq(json.loads(out)["artifact"]["id"], fake.id, "without -o: the reference")
        expect_eq([op for n, op, _ in fake.ops if n == 3], ["hello", "record.stop"], "without -o: no read")
    finally:
        fake.close()


@case("stop -o: bytes whose SHA-256 is not the reference's land nothing; an unwritable FILE stops nothing")
def sha_mismatch_and_unwritable():
    data = os.urandom(200000)
    fake = FakeBerthd(data, sha=hashlib.sha256(b"other bytes").hexdigest())
    try:
        d = scratch()
        path = os.path.join(d, "r.mp4")
        with open(path, "wb") as f:
            f.write(b"old")
        rc, out, err = fake_run(fake, "record", "stop", "1a2b3c4d", "-o", path)
        expect_eq(rc, 1, "a SHA-256 that does not match: exit status")
        expect_in("SHA-256", err, "the message")
        expect_eq(out, "", "stdout")
        with open(path, "rb") as f:
            expect_eq(f.read(), b"old", "the target after a mismatch")
        expect_eq(os.listdir(d), ["r.mp4"], "the files left (no temp file)")
        before = len(fake.ops)
        rc, out, err = fake_run(fake, "record", "stop", "1a2b3c4d", "-o", os.path.join(d, "none", "r.mp4"))
        expect_eq(rc, 1, "into a missing directory: exit status")
        expect_in("cannot write %s" % os.path.join(d, "none", "r.mp4"), err, "the message")
        expect_eq(fake.ops[before:], [], "what was asked before the FILE failed")
    finally:
        fake.close()


@case("stop -o interrupted while it waits: exit 130, no temp file")
def interrupted():
    fake = FakeBerthd(b"x" * 1000, hang=True)
    try:
        d = scratch()
        with running([CLI, "--socket", fake.path, "record", "stop", "1a2b3c4d", "-o", os.path.join(d, "r.mp4")]) as p:
            wait_for(lambda: any(op == "record.stop" for _, op, _ in fake.ops), 10, "record.stop asked")
            expect_eq(len(os.listdir(d)), 1, "the temp file while waiting")
            p.send_signal(signal.SIGINT)
            rc = p.wait(10)
        expect_eq(rc, 130, "exit status after SIGINT")
        expect_eq(os.listdir(d), [], "the files left")
    finally:
        fake.close()


if __name__ == "__main__":
    run()
