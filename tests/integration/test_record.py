"""Recording the screen (record.start, record.stop, record.status) through
the gateway, against a real X server (Xvfb) on which a test client
(tests/x11/xpaint) paints known colours on cue. The MP4 that record.stop
publishes is read back with artifact.read and decoded by ffprobe and
ffmpeg: the colours come in order at the wall-clock times they were
painted, the duration is the wall time, the index (moov) comes before
the media and mvhd holds the real duration. A static screen encodes
almost nothing; berth-desktop killed mid-recording leaves a fragmented
file that plays up to its last fragment; a limit ends a recording by
itself and publishes it; bad arguments are refused and berth-desktop
lives on; the events record.started and record.published (with the
artifact.published reference) are journaled."""

import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    GREY,
    TestFailure,
    case,
    expect,
    expect_eq,
    expect_in,
    hexcolor,
    host_pid,
    need,
    note,
    pid_alive,
    run,
    served,
    wait_for,
)

W, H = 640, 480
WIN = (100, 80, 320, 240)  # x, y, width, height of the painted window
RED, GREEN, BLUE = (0xFF, 0, 0), (0, 0xFF, 0), (0, 0, 0xFF)


class Desk(harness.Desk):
    """Xvfb and berth-desktop under berthd (no window manager)."""

    def __init__(self):
        super().__init__(W, H)


class Paint(harness.Paint):
    """xpaint: one window filled by one rectangle whose colour changes on
    command."""

    def __init__(self, desk, color):
        super().__init__(desk, WIN, [((0, 0, WIN[2], WIN[3]), color)], "record test")

    def color(self, c):
        """Paints c; returns the wall clock (ms) once it is drawn."""
        self.command("color 0 %s" % hexcolor(c))
        return time.time() * 1000


def setup(desk, sb, color=RED):
    c = sb.ws(timeout=20.0)
    served(c)
    paint = Paint(desk, color)
    # The pointer out of the way, and still: only the paint changes.
    desk.xdotool("mousemove", str(W - 5), str(H - 5))
    return c, paint


# -- reading the file back


def artifact_bytes(c, art):
    data, offset = b"", 0
    while True:
        r = c.call("artifact.read", {"id": art["id"], "offset": offset})
        data += r["data"]
        offset += len(r["data"])
        if r["eof"]:
            break
    expect_eq(len(data), art["size"], "the artifact's size")
    return data


def save(data):
    fd, path = tempfile.mkstemp(suffix=".mp4", prefix="berth-rec-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def ffprobe(path, *args):
    p = subprocess.run(["ffprobe", "-v", "error"] + list(args) + ["-of", "json", path],
                       capture_output=True, timeout=60)
    expect_eq(p.returncode, 0, "ffprobe's status on %s (stderr %r)" % (path, p.stderr[-500:]))
    return json.loads(p.stdout)


def packets(path):
    """[(pts in s, key)] of the video stream, as ffprobe reads them."""
    j = ffprobe(path, "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags")
    return [(float(p["pts_time"]), "K" in p.get("flags", "")) for p in j.get("packets", [])]


def frame_colors(path, x, y):
    """[(pts in s, rgb)] of every decoded frame, sampled at (x, y)."""
    j = ffprobe(path, "-select_streams", "v:0", "-show_entries", "frame=pts_time")
    times = [float(f["pts_time"]) for f in j.get("frames", [])]
    p = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vf", "crop=2:2:%d:%d" % (x, y),
                        "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                       capture_output=True, timeout=60)
    expect_eq(p.returncode, 0, "ffmpeg's status (stderr %r)" % p.stderr[-500:])
    px = [tuple(p.stdout[i : i + 3]) for i in range(0, len(p.stdout), 12)]
    expect_eq(len(px), len(times), "decoded frames against ffprobe's count")
    return list(zip(times, px))


def nearest(rgb):
    """The test colour rgb is, within the video's error; None if none."""
    for name, c in (("red", RED), ("green", GREEN), ("blue", BLUE), ("grey", GREY)):
        if all(abs(a - b) <= 40 for a, b in zip(rgb, c)):
            return name
    return None


def boxes(data):
    """The top-level MP4 boxes: [(type, offset, size)]."""
    out, pos = [], 0
    while pos + 8 <= len(data):
        size, kind = struct.unpack_from(">I4s", data, pos)
        if size == 1:
            (size,) = struct.unpack_from(">Q", data, pos + 8)
        elif size == 0:
            size = len(data) - pos
        expect(size >= 8, "a box of size %d at %d" % (size, pos))
        out.append((kind.decode("latin-1"), pos, size))
        pos += size
    return out


def mvhd_seconds(data):
    """mvhd's duration / timescale, from the moov box."""
    for kind, pos, size in boxes(data):
        if kind != "moov":
            continue
        inner = pos + 8
        while inner < pos + size:
            bsize, bkind = struct.unpack_from(">I4s", data, inner)
            if bkind == b"mvhd":
                version = data[inner + 8]
                if version == 1:
                    timescale, duration = struct.unpack_from(">IQ", data, inner + 12 + 16)
                else:
                    timescale, duration = struct.unpack_from(">II", data, inner + 12 + 8)
                return duration / timescale
            inner += bsize
    raise TestFailure("no mvhd in moov")


def recordings_dir(sb):
    return os.path.join(sb.state_dir, "recordings")


# -- cases


@case("record: the colours painted come back in order, at their wall-clock times; duration, faststart, events",
      timeout=120)
def colours_in_order():
    need("Xvfb", "xdpyinfo", "xdotool", "ffprobe", "ffmpeg")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        ev = sb.ws(timeout=20.0)
        ev.subscribe()
        t_start = time.time() * 1000
        r = c.call("record.start", {"fps": 10})
        note("record.start: %r" % r)
        expect(len(r["id"]) == 8 and all(ch in "0123456789abcdef" for ch in r["id"]), "id %r" % r["id"])
        expect_eq(r["fps"], 10, "fps")
        expect_eq(r["region"], {"x": 0, "y": 0, "width": W, "height": H}, "region")
        expect(t_start - 1000 <= r["started"] <= time.time() * 1000 + 1000, "started %r" % r["started"])
        expect_in(r["encoder"], ("libx264", "mpeg4", "libopenh264"), "encoder")
        rid, started = r["id"], r["started"]

        st = c.call("record.status", {"id": rid})["recordings"]
        expect_eq(len(st), 1, "record.status with an id")
        expect_eq((st[0]["state"], st[0]["artifact"]), ("recording", None), "state while recording")

        # red from the start, then green and blue, a second each.
        time.sleep(1.0)
        t_green = paint.color(GREEN)
        time.sleep(1.0)
        t_blue = paint.color(BLUE)
        time.sleep(1.0)
        t_stop = time.time() * 1000
        res = c.call("record.stop", {"id": rid}, timeout=30)
        note("record.stop: %r" % res)
        wall = t_stop - started
        expect_eq(res["id"], rid, "the stop's id")
        expect_eq(res["started"], started, "the stop's started")
        expect(abs(res["duration_ms"] - wall) <= 0.1 * wall, "duration_ms %d against %d ms of wall time"
               % (res["duration_ms"], wall))
        art = res["artifact"]
        expect_eq((art["media_type"], art["name"]), ("video/mp4", "recording-%s.mp4" % rid), "the artifact")
        expect_eq(art["id"], art["sha256"], "the artifact's id is its sha256")

        st = c.call("record.status")["recordings"]
        mine = [x for x in st if x["id"] == rid]
        expect_eq(len(mine), 1, "the recording in record.status")
        expect_eq(mine[0]["state"], "published", "state after the stop")
        expect_eq(mine[0]["artifact"], art, "the status's artifact")
        expect_eq(mine[0]["end"], "stop", "why it ended")
        # The local files went once published.
        expect_eq(os.listdir(recordings_dir(sb)), [], "the recordings directory after publishing")

        # Stopping it again answers the same at once.
        again = c.call("record.stop", {"id": rid})
        expect_eq(again["artifact"], art, "a second stop's artifact")

        data = artifact_bytes(c, art)
        path = save(data)
        try:
            kinds = [k for k, _, _ in boxes(data)]
            note("top-level boxes: %r" % kinds)
            expect("moov" in kinds and "mdat" in kinds, "moov and mdat: %r" % kinds)
            expect(kinds.index("moov") < kinds.index("mdat"), "moov before mdat (faststart): %r" % kinds)
            expect("moof" not in kinds, "a plain MP4, not fragmented: %r" % kinds)
            secs = mvhd_seconds(data)
            expect(abs(secs * 1000 - res["duration_ms"]) <= 20, "mvhd's duration %.3f s against %d ms"
                   % (secs, res["duration_ms"]))
            fmt = ffprobe(path, "-show_entries", "format=duration:stream=codec_name,width,height")
            expect(abs(float(fmt["format"]["duration"]) * 1000 - wall) <= 0.1 * wall,
                   "ffprobe's duration %s s against %d ms of wall time" % (fmt["format"]["duration"], wall))
            s0 = fmt["streams"][0]
            expect_eq((s0["width"], s0["height"]), (W, H), "the video's size")

            pk = packets(path)
            pts = [p for p, _ in pk]
            expect(pk[0][1], "the first packet is a keyframe")
            expect(all(b > a for a, b in zip(pts, pts[1:])), "pts increase: %r" % pts)
            # Frames come only when something changed: two changes
            # (plus the first and the last) make a handful, not 30.
            note("%d packets at %r" % (len(pk), pts))
            expect(len(pk) <= 10, "%d packets for two changes" % len(pk))

            cx, cy = WIN[0] + WIN[2] // 2, WIN[1] + WIN[3] // 2
            fc = frame_colors(path, cx, cy)
            names = [(t, nearest(rgb)) for t, rgb in fc]
            note("frames: %r" % names)
            runs = []
            for t, n in names:
                if not runs or runs[-1][1] != n:
                    runs.append((t, n))
            expect_eq([n for _, n in runs], ["red", "green", "blue"], "the colours in order")
            # Each change shows at its wall-clock time since started,
            # within a frame period and the capture's latency.
            for (t, n), want in zip(runs[1:], (t_green, t_blue)):
                got = started + t * 1000
                expect(-50 <= got - want <= 400, "%s shows at %.0f ms, painted at %.0f ms (started %d)"
                       % (n, got - started, want - started, started))
        finally:
            os.unlink(path)

        # The journal: started, then artifact.published and
        # record.published with the same reference.
        got = ev.events_until(lambda e: e["kind"] == "record.published", timeout=10)
        kinds = [e["kind"] for e in got]
        expect_in("record.started", kinds, "the events")
        started_ev = [e for e in got if e["kind"] == "record.started"][0]["data"]
        expect_eq((started_ev["id"], started_ev["started"], started_ev["fps"]), (rid, started, 10),
                  "record.started's data")
        pub = [e for e in got if e["kind"] == "artifact.published"]
        expect(pub and pub[-1]["data"]["id"] == art["id"], "artifact.published for %s: %r" % (art["id"], pub))
        rp = got[-1]["data"]
        expect_eq((rp["id"], rp["artifact"], rp["frames"], rp["started"]),
                  (rid, art, res["frames"], started), "record.published's data")
        expect(kinds.index("record.started") < kinds.index("record.published"), "the events' order")


@case("record: a static screen for 30 s at 10 fps encodes a handful of frames, not 300", timeout=120)
def static_screen():
    need("Xvfb", "xdpyinfo", "xdotool", "ffprobe")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        time.sleep(0.3)
        r = c.call("record.start", {"fps": 10})
        time.sleep(15)
        st = c.call("record.status", {"id": r["id"]})["recordings"][0]
        note("status after 15 s: %r" % st)
        expect_eq(st["state"], "recording", "the state")
        expect(st["frames"] <= 3, "%d frames written after 15 s of a still screen" % st["frames"])
        expect(14000 <= st["duration_ms"] <= 17000, "duration_ms %d after 15 s" % st["duration_ms"])
        time.sleep(15)
        res = c.call("record.stop", {"id": r["id"]}, timeout=30)
        note("record.stop: %r" % res)
        expect(29000 <= res["duration_ms"] <= 33000, "duration_ms %d after 30 s" % res["duration_ms"])
        path = save(artifact_bytes(c, res["artifact"]))
        try:
            j = ffprobe(path, "-count_packets", "-select_streams", "v:0",
                        "-show_entries", "stream=nb_read_packets:format=duration")
            n = int(j["streams"][0]["nb_read_packets"])
            note("%d packets in %s s" % (n, j["format"]["duration"]))
            expect(n < 10, "%d packets for 30 s of a still screen (300 at a constant rate)" % n)
            expect_eq(n, res["frames"], "the packets against record.stop's frames")
            expect(29.0 <= float(j["format"]["duration"]) <= 33.0, "duration %s" % j["format"]["duration"])
        finally:
            os.unlink(path)


@case("record: berth-desktop killed mid-recording leaves a fragmented MP4 that plays to its last fragment",
      timeout=120)
def killed():
    need("Xvfb", "xdpyinfo", "xdotool", "ffprobe")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        pid = host_pid(sb, "berth-desktop")
        r = c.call("record.start", {"fps": 10})
        path = os.path.join(recordings_dir(sb), r["id"] + ".mp4")
        # Something changes all along: red, green, blue, ...
        t0 = time.monotonic()
        cycle = (GREEN, BLUE, RED)
        i = 0
        while time.monotonic() - t0 < 5.0:
            paint.color(cycle[i % 3])
            i += 1
            time.sleep(0.25)
        os.kill(pid, signal.SIGKILL)
        recorded = time.monotonic() - t0
        wait_for(lambda: not pid_alive(pid), 10, "berth-desktop gone")
        expect(os.path.exists(path), "the fragmented file %s is left" % path)
        ffprobe(path, "-count_packets", "-select_streams", "v:0", "-show_entries", "stream=nb_read_packets")
        pk = packets(path)
        note("%d packets, the last at %.3f s of %.1f s recorded; %d bytes"
             % (len(pk), pk[-1][0] if pk else -1, recorded, os.path.getsize(path)))
        expect(len(pk) >= 10, "%d packets read from the killed recording" % len(pk))
        expect(pk[-1][0] >= recorded - 2.0, "the file plays to %.3f s of %.1f s" % (pk[-1][0], recorded))
        keys = [t for t, k in pk if k]
        expect(len(keys) >= 3, "keyframes at least every second of activity: %r" % keys)
        # Every frame decodes.
        p = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"], capture_output=True,
                           timeout=60)
        expect_eq((p.returncode, p.stderr), (0, b""), "decoding the killed file")

        # berthd starts it again; the recording is not its business.
        host_pid(sb, "berth-desktop", other_than=pid)
        served(c)
        expect_eq(c.error_of("record.status", {"id": r["id"]}), "not_found", "the old id after a restart")
        expect_eq(c.call("record.status")["recordings"], [], "no recordings after a restart")


BAD_START = [
    ({"fps": 0}, "fps"),
    ({"fps": 31}, "fps"),
    ({"fps": "10"}, "fps"),
    ({"fps": 2.5}, "fps"),
    ({"region": {"x": W - 10, "y": 0, "width": 20, "height": 10}}, "region"),
    ({"region": {"x": 0, "y": 0, "width": 0, "height": 10}}, "region"),
    ({"region": {"x": 0, "y": 0, "width": 1, "height": 10}}, "region"),
    ({"region": {"x": -1, "y": 0, "width": 10, "height": 10}}, "region"),
    ({"region": [0, 0, 10, 10]}, "region"),
    ({"max_seconds": 0}, "max_seconds"),
    ({"max_seconds": 86401}, "max_seconds"),
    ({"max_bytes": 1000}, "max_bytes"),
    ({"max_bytes": 5 << 30}, "max_bytes"),
    ({"quality": 0}, "quality"),
    ({"quality": 101}, "quality"),
    # An unknown key is ignored, as by every op: the bad one is still told.
    ({"fps": 0, "bogus": 1}, "fps"),
]


@case("record: bad arguments are refused with clear errors, two recordings at most, berth-desktop unharmed",
      timeout=120)
def bad_args():
    need("Xvfb", "xdpyinfo", "xdotool")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        pid = host_pid(sb, "berth-desktop")
        for args, word in BAD_START:
            r = c.request("record.start", args)
            expect(not r["ok"], "record.start %r succeeded" % (args,))
            expect_eq(r["error"]["code"], "bad_args", "the code for %r" % (args,))
            expect_in(word, r["error"]["message"], "the message for %r" % (args,))
        for op, args, code in (
            ("record.stop", {}, "bad_args"),
            ("record.stop", {"id": 5}, "bad_args"),
            ("record.stop", {"id": "deadbeef"}, "not_found"),
            ("record.stop", {"id": "x" * 5000}, "not_found"),
            ("record.stop", {"id": "deadbeef", "more": 1}, "not_found"),
            ("record.status", {"id": "deadbeef"}, "not_found"),
            ("record.status", {"id": []}, "bad_args"),
        ):
            expect_eq(c.error_of(op, args), code, "%s %r" % (op, args))
        expect_eq(c.call("record.status")["recordings"], [], "nothing started")
        expect_eq(os.listdir(recordings_dir(sb)) if os.path.exists(recordings_dir(sb)) else [], [],
                  "no file made")

        # Two at once; a third waits for one to end.
        a = c.call("record.start", {"fps": 5, "bogus": 1})
        b = c.call("record.start", {"fps": 30, "region": {"x": 10, "y": 10, "width": 64, "height": 64}})
        expect(a["id"] != b["id"], "two ids")
        expect_eq(c.error_of("record.start", {}), "unavailable", "a third recording")
        st = c.call("record.status")["recordings"]
        expect_eq(sorted(x["id"] for x in st), sorted((a["id"], b["id"])), "record.status lists both")
        expect(all(x["state"] == "recording" for x in st), "both recording: %r" % st)
        ra = c.call("record.stop", {"id": a["id"]}, timeout=30)
        rb = c.call("record.stop", {"id": b["id"]}, timeout=30)
        expect(ra["artifact"]["id"] != rb["artifact"]["id"], "two artifacts")
        expect_eq(host_pid(sb, "berth-desktop"), pid, "berth-desktop's pid")
        expect_eq(c.call("desktop.info")["width"], W, "desktop.info after it all")


@case("record: max_seconds ends a recording by itself and publishes it; an odd region is cut to even sides",
      timeout=120)
def max_seconds():
    need("Xvfb", "xdpyinfo", "xdotool", "ffprobe")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        ev = sb.ws(timeout=20.0)
        ev.subscribe()
        region = {"x": 101, "y": 81, "width": 201, "height": 151}
        r = c.call("record.start", {"max_seconds": 2, "region": region, "quality": 90})
        expect_eq(r["region"], dict(region, width=200, height=150), "the region as recorded")
        time.sleep(0.5)
        paint.color(GREEN)
        got = ev.events_until(lambda e: e["kind"] in ("record.published", "record.failed"), timeout=15)
        expect_eq(got[-1]["kind"], "record.published", "the recording's end: %r" % got[-1])
        pub = got[-1]["data"]
        expect(1900 <= pub["duration_ms"] <= 2300, "duration_ms %d for max_seconds 2" % pub["duration_ms"])
        st = c.call("record.status", {"id": r["id"]})["recordings"][0]
        expect_eq((st["state"], st["end"], st["artifact"]), ("published", "max_seconds", pub["artifact"]),
                  "the status once ended")
        res = c.call("record.stop", {"id": r["id"]}, timeout=5)
        expect_eq(res["artifact"], pub["artifact"], "record.stop after the end")
        path = save(artifact_bytes(c, res["artifact"]))
        try:
            j = ffprobe(path, "-show_entries", "stream=width,height:format=duration")
            expect_eq((j["streams"][0]["width"], j["streams"][0]["height"]), (200, 150), "the video's size")
            expect(1.9 <= float(j["format"]["duration"]) <= 2.3, "duration %s" % j["format"]["duration"])
            colours = [nearest(rgb) for _, rgb in frame_colors(path, 100, 100)]
            expect_eq(colours[0], "red", "the first frame's colour")
            expect_eq(colours[-1], "green", "the last frame's colour")
        finally:
            os.unlink(path)


run()
