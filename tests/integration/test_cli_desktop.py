"""The berth commands for computer use against a real X server (Xvfb)
with berth-desktop run by berthd, on both transports: screenshots as PNG
and JPEG files of the right size and content, written whole, to stdout
when it is a pipe and never to a terminal; click, move, scroll, type and
key reaching the display (the pointer as X reports it, and the events an
X client receives); cursor, desktop info and windows; wait-change's exit
statuses; strict usage errors; and "unavailable" without berth-desktop."""

import json
import os
import re
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    CLI,
    TRANSPORTS,
    Image,
    XEVLOG,
    Sandbox,
    Spawned,
    TestFailure,
    berth,
    case,
    conn_args,
    expect,
    expect_eq,
    expect_in,
    note,
    png_decode,
    run,
    run_program,
    scratch,
    text_ok,
    wait_for,
)

WIDTH, HEIGHT = 800, 600


class DesktopSandbox(harness.DesktopSandbox):
    """berthd running Xvfb (WIDTH x HEIGHT) and berth-desktop."""

    def __init__(self):
        super().__init__(WIDTH, HEIGHT, ("Xvfb", "xdpyinfo", "xdotool"))


def pointer(desk):
    """Where X says the pointer is, by xdotool: (x, y)."""
    rc, out, err = run_program(["xdotool", "getmouselocation"], env=desk.env)
    expect_eq(rc, 0, "xdotool getmouselocation (stderr %r)" % err)
    m = re.match(r"x:(\d+) y:(\d+) ", out)
    expect(m is not None, "xdotool's answer: %r" % out)
    return int(m.group(1)), int(m.group(2))


def png_size(data):
    """(width, height) of a whole PNG, from its IHDR; fails unless the
    signature, the IHDR first and the IEND last are there."""
    expect(data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature: %r" % data[:16])
    expect_eq(data[12:16], b"IHDR", "the first chunk")
    expect_eq(data[-8:-4], b"IEND", "the last chunk")
    return struct.unpack(">II", data[16:24])


def jpeg_size(data):
    """(width, height) of a whole JPEG, from its frame header."""
    expect(data[:3] == b"\xff\xd8\xff", "no JPEG start: %r" % data[:16])
    expect_eq(data[-2:], b"\xff\xd9", "the JPEG's end marker")
    pos = 2
    while pos + 4 <= len(data):
        expect_eq(data[pos], 0xFF, "a JPEG marker at %d" % pos)
        marker = data[pos + 1]
        (n,) = struct.unpack(">H", data[pos + 2 : pos + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            return width, height
        pos += 2 + n
    raise TestFailure("no JPEG frame header")


def read(path):
    with open(path, "rb") as f:
        return f.read()


@case("screenshot: a PNG file of the screen's size and pixels, --json without the image, on both transports",
      transports=TRANSPORTS)
def screenshot_png(transport):
    d = scratch()
    desk = DesktopSandbox()
    with desk as sb:
        rc, _, err = run_program(["xsetroot", "-solid", "#3060c0"], env=desk.env)
        expect_eq(rc, 0, "xsetroot (stderr %r)" % err)
        path = os.path.join(d, "screen.png")
        out = text_ok(sb, transport, "screenshot", "-o", path, "--no-cursor")
        data = read(path)
        expect_eq(png_size(data), (WIDTH, HEIGHT), "the PNG's size")
        expect_eq(out, "%s: %dx%d png, %d bytes\n" % (path, WIDTH, HEIGHT, len(data)), "the line")
        img = Image(*png_decode(data))
        expect_eq({img.at(x, y) for y in (0, 299, 599) for x in (0, 400, 799)},
                  {(0x30, 0x60, 0xC0)}, "the root's colour in the image")
        rc, out, _ = berth(sb, transport, "--json", "screenshot", "-o", path)
        expect_eq(rc, 0, "--json exit status")
        doc = json.loads(out)
        expect("data" not in doc, "--json holds the image: %r" % (sorted(doc),))
        expect_eq((doc["file"], doc["format"], doc["width"], doc["height"]), (path, "png", WIDTH, HEIGHT),
                  "--json's file, format and size")
        expect_eq(doc["region"], {"x": 0, "y": 0, "width": WIDTH, "height": HEIGHT}, "region")
        expect_eq(os.listdir(d), ["screen.png"], "the files left (no temp file)")


@case("screenshot: JPEG by the file's extension or --format, --quality changes the size")
def screenshot_jpeg():
    d = scratch()
    desk = DesktopSandbox()
    with desk as sb:
        for transport, name in (("unix", "a.jpg"), ("ws", "b.JPEG")):
            path = os.path.join(d, name)
            out = text_ok(sb, transport, "screenshot", "-o", path)
            expect_eq(jpeg_size(read(path)), (WIDTH, HEIGHT), "%s: the JPEG's size" % transport)
            expect(" jpeg, " in out, "%s: the line says jpeg: %r" % (transport, out))
        path = os.path.join(d, "forced.png")
        text_ok(sb, "unix", "screenshot", "--format", "jpeg", "-o", path)
        expect_eq(jpeg_size(read(path)), (WIDTH, HEIGHT), "--format jpeg into a .png name")
        # Text makes the quality tell: draw a window full of it.
        Spawned(["xmessage", "-geometry", "%dx%d+0+0" % (WIDTH, HEIGHT), "the quick brown fox " * 40],
                env=desk.env)
        time.sleep(1)
        low, high = os.path.join(d, "low.jpg"), os.path.join(d, "high.jpg")
        text_ok(sb, "unix", "screenshot", "--quality", "5", "-o", low)
        text_ok(sb, "unix", "screenshot", "--quality", "95", "-o", high)
        note("quality 5: %d bytes, 95: %d bytes" % (os.path.getsize(low), os.path.getsize(high)))
        expect(os.path.getsize(low) < os.path.getsize(high), "quality 5 is not smaller than 95")


@case("screenshot: --region and --scale set the image's size; a region off the screen is refused",
      transports=TRANSPORTS)
def screenshot_region_scale(transport):
    d = scratch()
    path = os.path.join(d, "s.png")
    cases = [
        (["--region", "10,20,300,200"], (300, 200)),
        (["--scale", "0.5"], (400, 300)),
        (["--region", "10,20,300,200", "--scale", "0.5"], (150, 100)),
        (["--scale", "2"], (1600, 1200)),
        (["--region", "799,599,1,1", "--scale", "0.05"], (1, 1)),
    ]
    with DesktopSandbox() as sb:
        for args, size in cases:
            text_ok(sb, transport, "screenshot", "-o", path, *args)
            expect_eq(png_size(read(path)), size, "the size with %s" % " ".join(args))
        with open(path, "wb") as f:
            f.write(b"old")
        rc, _, err = berth(sb, transport, "screenshot", "-o", path, "--region", "700,500,200,200")
        expect_eq(rc, 1, "a region off the screen: exit status")
        expect_in("bad_args", err, "the message")
        expect_eq(read(path), b"old", "the file after a refused screenshot")
        rc, _, err = berth(sb, transport, "screenshot", "-o", os.path.join(d, "none", "s.png"))
        expect_eq(rc, 1, "into a missing directory: exit status")
        expect_in("cannot write %s" % os.path.join(d, "none", "s.png"), err, "the message")
        expect_eq(os.listdir(d), ["s.png"], "the files left")


@case("screenshot: to stdout when it is a pipe (also -o -), refused on a terminal", transports=TRANSPORTS)
def screenshot_stdout(transport):
    with DesktopSandbox() as sb:
        for args in ([], ["-o", "-"]):
            rc, out, err = berth(sb, transport, "screenshot", *args)
            expect_eq(rc, 0, "%s: exit status" % (args,))
            expect_eq(png_size(out), (WIDTH, HEIGHT), "%s: the PNG on stdout" % (args,))
            expect_eq(err, "", "stderr")
        master, slave = os.openpty()
        try:
            p = subprocess.run([CLI] + conn_args(sb, transport) + ["screenshot"], stdin=subprocess.DEVNULL,
                               stdout=slave, stderr=subprocess.PIPE, timeout=30)
            os.close(slave)
            slave = -1
            os.set_blocking(master, False)
            try:
                shown = os.read(master, 65536)
            except OSError:
                shown = b""
        finally:
            if slave != -1:
                os.close(slave)
            os.close(master)
        note("on a terminal: %d, stderr %r" % (p.returncode, p.stderr))
        expect_eq(p.returncode, 2, "exit status on a terminal")
        expect_in(b"-o FILE", p.stderr, "the message")
        expect_eq(shown, b"", "what reached the terminal")


class XevLog:
    """xevlog full screen on the display, when it is built: the lines it
    prints, read up to a pattern."""

    def __init__(self, desk):
        self.prog = Spawned([XEVLOG], env=desk.env)
        self.until("READY")

    def until(self, pattern, timeout=10.0):
        """The lines up to and with the first one matching pattern."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            line = self.prog.line(max(0.1, deadline - time.monotonic()))
            seen.append(line)
            if re.fullmatch(pattern, line):
                note("xevlog: %s" % " | ".join(seen))
                return seen


def keys_pressed(lines):
    return [line.split()[1] for line in lines if line.startswith("K ")]


@case("move, click and scroll move the pointer and reach an X client; cursor says where")
def pointer_input():
    desk = DesktopSandbox()
    with desk as sb:
        log = XevLog(desk) if os.access(XEVLOG, os.X_OK) else None
        note("xevlog: %s" % ("running" if log else "not built: the pointer only"))
        for transport, (x, y) in (("unix", (100, 150)), ("ws", (640, 480))):
            text_ok(sb, transport, "move", str(x), str(y))
            expect_eq(pointer(desk), (x, y), "%s: the pointer after move" % transport)
            if log:
                log.until("M %d %d" % (x, y))
            expect_eq(text_ok(sb, transport, "cursor"), "%d %d\n" % (x, y), "%s: cursor" % transport)
            expect_eq(json.loads(text_ok(sb, transport, "--json", "cursor")), {"x": x, "y": y},
                      "%s: cursor --json" % transport)
        text_ok(sb, "unix", "click", "200", "250")
        expect_eq(pointer(desk), (200, 250), "the pointer after click")
        if log:
            lines = log.until("BR 1")
            expect_in("BP 1 200 250", lines, "the press")
        text_ok(sb, "ws", "click", "--button", "right", "--double")
        expect_eq(pointer(desk), (200, 250), "the pointer after a click where it is")
        if log:
            lines = log.until("BR 3")
            lines += log.until("BR 3")
            expect_eq([l for l in lines if l.startswith("B")], ["BP 3 200 250", "BR 3"] * 2, "a right double click")
        rc, out, _ = berth(sb, "unix", "--json", "scroll", "--dy", "2", "300", "310")
        expect_eq((rc, json.loads(out)), (0, {"done": 1}), "scroll --json")
        expect_eq(pointer(desk), (300, 310), "the pointer after scroll at X Y")
        if log:
            lines = log.until("BR 5")
            lines += log.until("BR 5")
            expect_eq([l for l in lines if l.startswith("B")], ["BP 5 300 310", "BR 5"] * 2, "two clicks down")
            text_ok(sb, "ws", "scroll", "--dx", "-1")
            expect_in("BP 6 300 310", log.until("BR 6"), "one click left")


@case("type and key reach an X client: text, UTF-8, stdin, combos in turn")
def key_input():
    desk = DesktopSandbox()
    with desk as sb:
        log = XevLog(desk) if os.access(XEVLOG, os.X_OK) else None
        note("xevlog: %s" % ("running" if log else "not built: the commands' statuses only"))
        text_ok(sb, "unix", "type", "Hi é!")
        if log:
            lines = log.until("K exclam 21")
            expect_eq([l for l in lines if l.startswith("K ") and "Shift" not in l],
                      ["K H 48", "K i 69", "K space 20", "K eacute c3a9", "K exclam 21"], "what was typed")
        text_ok(sb, "ws", "type", "-", input="x-1\n".encode())
        if log:
            lines = log.until("K Return 0d")
            expect_eq(keys_pressed(lines), ["x", "minus", "1", "Return"], "what stdin typed")
        text_ok(sb, "unix", "type", "--delay", "20", "--", "-q")
        if log:
            expect_eq(keys_pressed(log.until("K q 71")), ["minus", "q"], "text after --")
        text_ok(sb, "ws", "key", "ctrl+l", "Return", "alt+F4")
        if log:
            lines = log.until("KR F4")
            keys = keys_pressed(lines)
            note("keys: %r" % keys)
            expect(keys[0].startswith("Control"), "ctrl first: %r" % keys)
            expect_eq([k for k in keys if not k.startswith(("Control", "Alt", "Meta"))], ["l", "Return", "F4"],
                      "the keys in turn")
            expect_in("K l 0c", lines, "ctrl+l's text")
            rc, out, _ = run_program([XEVLOG, "--query"], env=desk.env)
            expect_eq((rc, out.split("\n")[0]), (0, "KEYS"), "no key left down")
        rc, _, err = berth(sb, "unix", "key", "ctrl+nosuchkey")
        expect_eq(rc, 1, "an unknown key: exit status")
        expect("bad_args" in err and "nosuchkey" in err, "the message names the key: %r" % err)


@case("desktop info, windows and cursor: text for people, --json for scripts", transports=TRANSPORTS)
def info_windows(transport):
    desk = DesktopSandbox()
    with desk as sb:
        out = text_ok(sb, transport, "desktop", "info")
        expect_in("display :%d\n" % desk.display, out, "the display line")
        expect_in("size    %dx%d, depth 24\n" % (WIDTH, HEIGHT), out, "the size line")
        expect_in("screen  %dx%d+0+0\n" % (WIDTH, HEIGHT), out, "the screen line")
        doc = json.loads(text_ok(sb, transport, "--json", "desktop", "info"))
        expect_eq((doc["width"], doc["height"], doc["depth"]), (WIDTH, HEIGHT, 24), "--json")
        Spawned(["xmessage", "-geometry", "+50+60", "hello from the test"], env=desk.env)

        def mapped():
            rc, out, _ = run_program(["xwininfo", "-name", "xmessage"], env=desk.env)
            return out if rc == 0 and "IsViewable" in out else None

        info = wait_for(mapped, 10, "xmessage's window")
        wid = int(re.search(r"Window id: (0x[0-9a-f]+)", info).group(1), 16)
        w, h, x, y, border = (
            int(re.search(r"%s:\s+(-?\d+)" % k, info).group(1))
            for k in ("Width", "Height", "Absolute upper-left X", "Absolute upper-left Y", "Border width"))
        # xwininfo gives the border's corner; the op, the inside's.
        geo = "%dx%d+%d+%d" % (w, h, x + border, y + border)
        lines = text_ok(sb, transport, "windows").splitlines()
        expect(re.fullmatch(r"ID +GEOMETRY +ACTIVE +CLASS +TITLE", lines[0]), "the header: %r" % lines[0])
        row = [l for l in lines if l.startswith("0x%08x " % wid)]
        expect_eq(len(row), 1, "xmessage's row in %r" % lines)
        expect_eq(row[0].split(None, 4), ["0x%08x" % wid, geo, "-", "Xmessage", "xmessage"], "xmessage's row")
        doc = json.loads(text_ok(sb, transport, "--json", "windows"))
        (win,) = [win for win in doc["windows"] if win["id"] == wid]
        expect_eq((win["class"], win["title"], win["active"]), ("Xmessage", "xmessage", False), "--json")


@case("wait-change: exit 1 at the timeout on a static screen, 0 with the area when it changes", transports=TRANSPORTS)
def wait_change(transport):
    desk = DesktopSandbox()
    with desk as sb:
        started = time.monotonic()
        rc, out, _ = berth(sb, transport, "wait-change", "--timeout", "1")
        took = time.monotonic() - started
        expect_eq((rc, out), (1, b"no change within 1 s\n"), "a static screen")
        expect(0.9 < took < 8, "took %.2f s" % took)
        rc, out, _ = berth(sb, transport, "--json", "wait-change", "--timeout", "0.3")
        doc = json.loads(out)
        expect_eq((rc, doc["changed"]), (1, False), "--json at the timeout")
        expect(doc["waited_ms"] >= 250, "waited_ms: %r" % doc)
        # Paint the root again and again until the wait ends: the wait may
        # reach berth-desktop after the first paint.
        for region in (None, (100, 50, 200, 150)):
            args = ["wait-change", "--timeout", "20"] + (["--region", "%d,%d,%d,%d" % region] if region else [])
            result = {}
            waiter = threading.Thread(target=lambda: result.update(r=berth(sb, transport, *args)))
            waiter.start()
            colours = ("#102030", "#405060")
            deadline = time.monotonic() + 20
            i = 0
            while waiter.is_alive() and time.monotonic() < deadline:
                run_program(["xsetroot", "-solid", colours[i % 2]], env=desk.env)
                i += 1
                time.sleep(0.2)
            waiter.join(30)
            rc, out, _ = result["r"]
            expect_eq(rc, 0, "%s: exit status after a change" % " ".join(args))
            m = re.fullmatch(rb"changed: (\d+)x(\d+)\+(\d+)\+(\d+) after \d+ ms\n", out)
            expect(m is not None, "%s: the line: %r" % (" ".join(args), out))
            w, h, x, y = (int(v) for v in m.groups())
            rx, ry, rw, rh = region or (0, 0, WIDTH, HEIGHT)
            expect(rx <= x and ry <= y and x + w <= rx + rw and y + h <= ry + rh and w > 0 and h > 0,
                   "%s: the area %r lies within %r" % (" ".join(args), (x, y, w, h), (rx, ry, rw, rh)))


USAGE = [
    (["screenshot", "--region", "1,2,3"], "--region wants X,Y,W,H"),
    (["screenshot", "--region", "0,0,-5,10"], "--region wants X,Y,W,H"),
    (["screenshot", "--region", "0,0,5,10,7"], "--region wants X,Y,W,H"),
    (["screenshot", "--scale", "big"], "--scale wants a number"),
    (["screenshot", "--scale", "0.01"], "--scale wants a number"),
    (["screenshot", "--format", "gif", "-o", "x"], "--format wants png or jpeg"),
    (["screenshot", "--quality", "0", "-o", "x.jpg"], "--quality wants an integer"),
    (["screenshot", "--quality", "50", "-o", "x.png"], "--quality is for JPEG"),
    (["screenshot", "--json"], "give -o FILE"),
    (["screenshot", "now"], "takes no words"),
    (["click", "10"], "click wants X and Y"),
    (["click", "1", "2", "3"], "too many arguments"),
    (["click", "--button", "fourth", "1", "2"], "--button wants"),
    (["move", "ten", "20"], "X and Y are pixels"),
    (["move", "40000", "20"], "X and Y are pixels"),
    (["scroll", "5", "5"], "scroll wants --dy"),
    (["scroll", "--dy", "1.5"], "--dy wants"),
    (["type"], "type wants TEXT"),
    (["type", "a", "b"], "type takes one TEXT"),
    (["type", "--delay", "5000", "x"], "--delay wants"),
    (["key"], "key wants a key"),
    (["desktop"], "desktop wants info"),
    (["desktop", "info", "now"], "takes no arguments"),
    (["windows", "all"], "takes no arguments"),
    (["wait-change", "--timeout", "90"], "--timeout wants seconds"),
    (["wait-change", "--timeout", "-1"], "--timeout wants seconds"),
]


@case("usage errors exit 2 with a message before asking; without berth-desktop every command exits 1: unavailable",
      transports=TRANSPORTS)
def usage_and_unavailable(transport):
    d = scratch()
    with Sandbox() as sb:
        for args, words in USAGE:
            rc, out, err = berth(sb, transport, *args)
            expect_eq(rc, 2, "%s: exit status" % " ".join(args))
            expect_in(words, err, "%s: the message" % " ".join(args))
            expect_in("usage: berth [OPTIONS] %s" % args[0], err, "%s: the synopsis" % " ".join(args))
        rc, _, err = berth(sb, transport, "type", "-", input=b"\xff\xfe")
        expect_eq((rc, "not valid UTF-8" in err), (2, True), "invalid UTF-8 on stdin: %r" % err)
        rc, _, err = berth(sb, transport, "type", "-", input=b"a" * 10001)
        expect_eq((rc, "at most 10000 characters" in err), (2, True), "too long a text: %r" % err)
        path = os.path.join(d, "none.png")
        commands = [
            ["screenshot", "-o", path], ["click", "1", "1"], ["move", "1", "1"], ["scroll", "--dy", "1"],
            ["type", "x"], ["key", "Return"], ["cursor"], ["desktop", "info"], ["windows"], ["wait-change"],
        ]
        for args in commands:
            rc, out, err = berth(sb, transport, *args)
            expect_eq(rc, 1, "%s: exit status" % " ".join(args))
            expect(err.startswith("berth: unavailable: "), "%s: stderr %r" % (" ".join(args), err))
            expect_eq(out, b"", "%s: stdout" % " ".join(args))
        expect_eq(os.listdir(d), [], "files left by a refused screenshot")


if __name__ == "__main__":
    run()
