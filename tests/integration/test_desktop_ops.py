"""The desktop ops served by berth-desktop through berthd and the gateway,
against a real X server (Xvfb, no window manager) on which a test client
(tests/x11/xpaint) shows rectangles of known colours: desktop.screenshot
(PNG decoded here and compared pixel by pixel; JPEG within a tolerance;
regions, scales, the pointer drawn in or not), desktop.info against
xdpyinfo, desktop.cursor after xdotool moves the pointer, desktop.windows
naming the test window, desktop.wait_change answering a change inside its
region and timing out on one outside (and, cancelled by request.cancel,
answered at once, its late answer dropped), bad arguments refused while
berth-desktop lives on, and every op unavailable while the X server is
down, then working again once it is back."""

import io
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    Image,
    TestFailure,
    case,
    expect,
    expect_eq,
    expect_in,
    host_pid,
    need,
    note,
    png_decode,
    run,
    run_program,
    scratch,
    served,
    wait_for,
)

W, H = 1280, 800

# The test window and its four quarters, in screen coordinates.
WIN = (100, 50, 400, 300)
RED, GREEN, BLUE, YELLOW = (0xFF, 0, 0), (0, 0xFF, 0), (0, 0, 0xFF), (0xFF, 0xFF, 0)
QUARTERS = [  # (x, y, w, h) on the screen, colour
    ((100, 50, 200, 150), RED),
    ((300, 50, 200, 150), GREEN),
    ((100, 200, 200, 150), BLUE),
    ((300, 200, 200, 150), YELLOW),
]
TITLE = "berth test \u2713 window"


class Desk(harness.Desk):
    """Xvfb and berth-desktop under berthd (no XFCE). Xvfb comes back 1.5 s
    after a kill, so that the outage can be seen."""

    def __init__(self, own_ipc=False):
        super().__init__(W, H, xvfb_backoff_ms=(1500, 1500), own_ipc=own_ipc)


class Paint(harness.Paint):
    """The test window with its four quarters (or an image)."""

    def __init__(self, desk, title=TITLE, klass="xpaintinst,XPaintClass", image=None, geometry=WIN):
        x, y = geometry[:2]
        rects = [] if image is not None else [((rx - x, ry - y, rw, rh), c) for (rx, ry, rw, rh), c in QUARTERS]
        super().__init__(desk, geometry, rects, title, klass, image)


# -- images


def jpeg_decode(data):
    """(width, height, rgb bytes) of a JPEG, decoded by libjpeg (PIL), a
    decoder other than the encoder's own."""
    try:
        from PIL import Image as PILImage
    except ImportError:
        raise TestFailure("python3-pil is not installed (./dev test installs it)")
    expect_eq(data[:3], b"\xff\xd8\xff", "the JPEG's start of image")
    im = PILImage.open(io.BytesIO(data))
    expect_eq(im.format, "JPEG", "the format PIL sees")
    im.load()
    return im.width, im.height, im.convert("RGB").tobytes()


def shot(c, args=None, timeout=20.0):
    """desktop.screenshot: (result, decoded Image)."""
    r = c.call("desktop.screenshot", args or {}, timeout=timeout)
    data = r["data"]
    expect(isinstance(data, bytes), "data is bin: %r" % type(data))
    if r["format"] == "png":
        img = Image(*png_decode(data))
    else:
        img = Image(*jpeg_decode(data))
    expect_eq((img.w, img.h), (r["width"], r["height"]), "the decoded size against the result's")
    note("%s %dx%d, %d bytes, timing %r" % (r["format"], r["width"], r["height"], len(data), r.get("timing")))
    return r, img


def near(a, b, tol):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


def begin_wait(c, args):
    """Sends desktop.wait_change and returns its id once berth-desktop
    has taken it: it serves one connection's requests in order, so the
    answer to a desktop.cursor sent after it says the wait is pending."""
    rid = c.send_request("desktop.wait_change", args)
    c.call("desktop.cursor")
    return rid


def setup(desk, sb):
    """The WebSocket client once desktop.info answers, the test window,
    and the pointer out of its way."""
    c = sb.ws(timeout=20.0)
    served(c)
    paint = Paint(desk)
    desk.xdotool("mousemove", str(W - 10), str(H - 10))
    return c, paint


# -- cases


@case("screenshot: a PNG with exactly the window's colours at their places, whole screen and a region", timeout=120)
def png_exact():
    need("Xvfb", "xdpyinfo", "xdotool")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        before = int(time.time() * 1000)
        r, img = shot(c, {"cursor": False})
        after = int(time.time() * 1000)
        expect_eq((r["format"], r["width"], r["height"]), ("png", W, H), "format and size")
        expect_eq(r["region"], {"x": 0, "y": 0, "width": W, "height": H}, "the region")
        expect_eq(r["scale"], 1.0, "the scale")
        expect(before - 1000 <= r["taken"] <= after + 1000,
               "taken %d not within [%d, %d]" % (r["taken"], before, after))
        for (x, y, w, h), col in QUARTERS:
            expect_eq(img.block(x, y, w, h), {col}, "the colours of the block %r" % ((x, y, w, h),))
        # The window's edges are where xpaint put them.
        expect(img.at(99, 60) != RED and img.at(100, 60) == RED, "the left edge at x=100")
        expect(img.at(499, 60) == GREEN and img.at(500, 60) != GREEN, "the right edge at x=500")
        expect(img.at(150, 49) != RED and img.at(150, 349) == BLUE and img.at(150, 350) != BLUE, "top and bottom")

        # A region: its own pixels, from its corner.
        region = {"x": 250, "y": 150, "width": 101, "height": 99}
        r, img = shot(c, {"region": region, "cursor": False})
        expect_eq((r["width"], r["height"], r["region"]), (101, 99, region), "the region's image")
        expect_eq(img.block(0, 0, 50, 50), {RED}, "the region's top left quarter")
        expect_eq(img.block(50, 0, 51, 50), {GREEN}, "the region's top right quarter")
        expect_eq(img.block(0, 50, 50, 49), {BLUE}, "the region's bottom left quarter")
        expect_eq(img.block(50, 50, 51, 49), {YELLOW}, "the region's bottom right quarter")
        # The smallest region, in a corner of the screen.
        r, img = shot(c, {"region": {"x": W - 1, "y": H - 1, "width": 1, "height": 1}, "cursor": False})
        expect_eq((img.w, img.h), (1, 1), "a 1x1 region's image")


@case("screenshot: without MIT-SHM (the X server cannot attach the segment), the same pixels", timeout=120)
def no_shm():
    need("Xvfb", "xdpyinfo", "xdotool", "unshare")
    desk = Desk(own_ipc=True)
    with desk as sb:
        c, paint = setup(desk, sb)
        expect_eq(c.call("desktop.info")["shm"], False, "shm")
        r, img = shot(c, {"cursor": False})
        expect_eq((r["width"], r["height"]), (W, H), "the size")
        for (x, y, w, h), col in QUARTERS:
            expect_eq(img.block(x, y, w, h), {col}, "the colours of the block %r" % ((x, y, w, h),))
        r, img = shot(c, {"region": {"x": 290, "y": 190, "width": 20, "height": 20}, "cursor": False})
        expect_eq(img.block(0, 0, 10, 10) | img.block(10, 10, 10, 10), {RED, YELLOW}, "a region's corners")
        expect_in("without MIT-SHM", sb.log(), "berth-desktop's log")


@case("screenshot: JPEG colours within a tolerance; quality trades size", timeout=120)
def jpeg_tolerance():
    need("Xvfb", "xdpyinfo", "xdotool")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        sizes = {}
        for q in (10, 80, 100):
            r, img = shot(c, {"format": "jpeg", "quality": q, "cursor": False})
            expect_eq((r["format"], r["width"], r["height"]), ("jpeg", W, H), "format and size")
            sizes[q] = len(r["data"])
            # Coarse quantising rings near edges: at quality 10 only
            # the middles are held to a (looser) tolerance.
            tol = 12 if q >= 80 else 40
            for (x, y, w, h), col in QUARTERS:
                inner = ((x + 10, y + 10), (x + w - 10, y + h - 10)) if q >= 80 else ()
                for px in ((x + w // 2, y + h // 2),) + inner:
                    got = img.at(*px)
                    expect(near(got, col, tol), "q%d: %r at %r, want %r within %d" % (q, got, px, col, tol))
        note("jpeg sizes by quality: %r" % sizes)
        expect(sizes[10] < sizes[80] < sizes[100], "sizes do not grow with quality: %r" % sizes)
        # The default quality is 80.
        r, _ = shot(c, {"format": "jpeg", "cursor": False})
        expect_eq(len(r["data"]), sizes[80], "the default quality's size")
        # An odd-sized region (chroma is subsampled by 2).
        odd = {"x": 101, "y": 51, "width": 33, "height": 17}
        r, img = shot(c, {"format": "jpeg", "region": odd, "cursor": False})
        expect_eq((img.w, img.h), (33, 17), "an odd region's JPEG size")
        expect(near(img.at(16, 8), RED, 12), "an odd region's colour: %r" % (img.at(16, 8),))


@case("screenshot: scale sets the size (rounded, at least 1x1) and keeps the colours", timeout=120)
def scaled():
    need("Xvfb", "xdpyinfo", "xdotool")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        r, img = shot(c, {"scale": 0.5, "cursor": False})
        expect_eq((r["width"], r["height"], r["scale"]), (640, 400, 0.5), "half size")
        for (x, y, w, h), col in QUARTERS:
            inner = (x // 2 + 2, y // 2 + 2, w // 2 - 4, h // 2 - 4)
            expect_eq(img.block(*inner), {col}, "the inside of %r at half size" % ((x, y, w, h),))
        region = {"x": 280, "y": 180, "width": 40, "height": 40}
        r, img = shot(c, {"region": region, "scale": 4, "cursor": False})
        expect_eq((r["width"], r["height"], r["region"]), (160, 160, region), "four times a 40x40 region")
        expect_eq(img.block(0, 0, 76, 76), {RED}, "enlarged top left")
        expect_eq(img.block(84, 84, 76, 76), {YELLOW}, "enlarged bottom right")
        # round(101 * 0.5) = 51 (halves away from zero), 0.05 of 1 px is 1 px.
        r, _ = shot(c, {"region": {"x": 0, "y": 0, "width": 101, "height": 3}, "scale": 0.5, "cursor": False})
        expect_eq((r["width"], r["height"]), (51, 2), "101x3 at 0.5")
        r, _ = shot(c, {"region": {"x": 0, "y": 0, "width": 1, "height": 1}, "scale": 0.05})
        expect_eq((r["width"], r["height"]), (1, 1), "1x1 at 0.05")
        r, _ = shot(c, {"scale": 0.05, "format": "jpeg"})
        expect_eq((r["width"], r["height"]), (64, 40), "the screen at 0.05")


@case("screenshot: the pointer is drawn in where it is, unless cursor is false", timeout=120)
def pointer_drawn():
    need("Xvfb", "xdpyinfo", "xdotool")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        # Over the green quarter, far from its edges.
        desk.xdotool("mousemove", "400", "120")
        wait_for(lambda: c.call("desktop.cursor") == {"x": 400, "y": 120}, 5, "the pointer at 400,120")
        region = {"x": 350, "y": 70, "width": 100, "height": 100}
        _, bare = shot(c, {"region": region, "cursor": False})
        _, drawn = shot(c, {"region": region})
        expect_eq(bare.block(0, 0, 100, 100), {GREEN}, "the region without the pointer")
        changed = [(x, y) for y in range(100) for x in range(100) if drawn.at(x, y) != GREEN]
        note("pointer pixels: %d, first %r" % (len(changed), changed[:5]))
        expect(len(changed) >= 10, "the pointer changed only %d pixels" % len(changed))
        # All of them around the pointer (50,50 in the region): a
        # cursor image is at most 64 px across, placed by its hot spot.
        expect(all(abs(x - 50) <= 64 and abs(y - 50) <= 64 for x, y in changed), "pixels far from the pointer")
        # Elsewhere, the pointer is not drawn.
        _, away = shot(c, {"region": {"x": 100, "y": 200, "width": 50, "height": 50}})
        expect_eq(away.block(0, 0, 50, 50), {BLUE}, "a region away from the pointer")
        # The pointer moves, the drawing follows.
        desk.xdotool("mousemove", "200", "270")
        wait_for(lambda: c.call("desktop.cursor") == {"x": 200, "y": 270}, 5, "the pointer at 200,270")
        _, drawn = shot(c, {"region": region})
        expect_eq(drawn.block(0, 0, 100, 100), {GREEN}, "the old place after the pointer left")


@case("info matches xdpyinfo; cursor follows xdotool mousemove", timeout=120)
def info_cursor():
    need("Xvfb", "xdpyinfo", "xdotool")
    desk = Desk()
    with desk as sb:
        c = sb.ws(timeout=20.0)
        info = served(c)
        status, out, _ = run_program(["xdpyinfo", "-display", ":%d" % desk.display])
        expect_eq(status, 0, "xdpyinfo's status")
        dims = re.search(r"dimensions:\s+(\d+)x(\d+) pixels", out)
        depth = re.search(r"depth of root window:\s+(\d+) planes", out)
        name = re.search(r"name of display:\s+(\S+)", out)
        note(info)
        expect_eq((info["width"], info["height"]), (int(dims.group(1)), int(dims.group(2))), "the size")
        expect_eq(info["depth"], int(depth.group(1)), "the depth")
        expect_eq(info["display"], name.group(1), "the display's name")
        expect_eq(info["screens"], [{"x": 0, "y": 0, "width": W, "height": H}], "the screens")
        expect_eq(info["shm"], True, "shm (berth-desktop and Xvfb share the host)")
        for x, y in ((0, 0), (W - 1, H - 1), (640, 400), (17, 733)):
            desk.xdotool("mousemove", str(x), str(y))
            expect_eq(c.call("desktop.cursor"), {"x": x, "y": y}, "the pointer after mousemove %d %d" % (x, y))
        out = desk.xdotool("getmouselocation")
        expect_in("x:17 y:733", out, "xdotool's own idea")


@case("windows: the test window with its title, class, instance and geometry; a new title shows", timeout=120)
def windows_listed():
    need("Xvfb", "xdpyinfo", "xdotool")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        wins = c.call("desktop.windows")["windows"]
        note(wins)
        mine = [w for w in wins if w["id"] == paint.id]
        expect_eq(len(mine), 1, "entries for window 0x%x" % paint.id)
        x, y, w, h = WIN
        expect_eq(
            mine[0],
            {"id": paint.id, "title": TITLE, "class": "XPaintClass", "instance": "xpaintinst", "x": x, "y": y,
             "width": w, "height": h, "active": False, "desktop": None},
            "the test window",
        )
        # A second window is listed too, above the first (bottom to top).
        other = Paint(desk, title="second", klass="two")
        try:
            wins = c.call("desktop.windows")["windows"]
            ids = [w["id"] for w in wins]
            expect(paint.id in ids and other.id in ids, "both windows: %r" % ids)
            expect(ids.index(paint.id) < ids.index(other.id), "stacking order: %r" % ids)
            two = [w for w in wins if w["id"] == other.id][0]
            expect_eq((two["title"], two["class"], two["instance"]), ("second", "two", "two"), "the second")
        finally:
            other.kill()
        wait_for(lambda: other.id not in [w["id"] for w in c.call("desktop.windows")["windows"]], 5,
                 "the closed window gone from the list")
        paint.command("title renamed \u00e9")
        mine = [w for w in c.call("desktop.windows")["windows"] if w["id"] == paint.id]
        expect_eq(mine[0]["title"], "renamed \u00e9", "the new title")


@case("wait_change: a change in the region answers at once; one outside it times out", timeout=120)
def wait_change():
    need("Xvfb", "xdpyinfo", "xdotool")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        yellow = {"x": 300, "y": 200, "width": 200, "height": 150}
        # A change inside: answered as soon as it is drawn.
        rid = begin_wait(c, {"region": yellow, "timeout_ms": 10000})
        paint.command("color 3 #ff00ff")
        drawn = time.monotonic()
        r = c.response(rid, timeout=15)
        late = (time.monotonic() - drawn) * 1000
        note("answered %.1f ms after the change was drawn: %r" % (late, r))
        expect(r["ok"], "wait_change failed: %r" % r)
        res = r["result"]
        expect_eq(res["changed"], True, "changed")
        expect_eq(res["area"], yellow, "the area (the quarter, repainted)")
        expect(res["waited_ms"] < 10000, "waited_ms %r" % res["waited_ms"])
        expect(late < 2000, "answered %.0f ms after the change" % late)

        # A change outside the region: nothing until the timeout.
        far = {"x": 900, "y": 500, "width": 200, "height": 200}
        t0 = time.monotonic()
        rid = begin_wait(c, {"region": far, "timeout_ms": 700})
        paint.command("color 0 #00ffff")
        r = c.response(rid, timeout=15)
        took = (time.monotonic() - t0) * 1000
        note("outside: %r after %.0f ms" % (r, took))
        expect(r["ok"], "wait_change failed: %r" % r)
        expect_eq(r["result"]["changed"], False, "changed")
        expect_eq(sorted(r["result"]), ["changed", "waited_ms"], "the fields")
        expect(r["result"]["waited_ms"] >= 700 and took >= 690, "answered before the timeout: %r" % r)

        # A region overlapping the window's corner: the area is cut to it.
        corner = {"x": 50, "y": 20, "width": 100, "height": 80}
        rid = begin_wait(c, {"region": corner, "timeout_ms": 10000})
        paint.command("color 0 #123456")
        r = c.response(rid, timeout=15)
        expect_eq(r["result"]["area"], {"x": 100, "y": 50, "width": 50, "height": 50}, "the cut area")

        # Several at once: each answered for its own region.
        green = {"x": 300, "y": 50, "width": 200, "height": 150}
        a = begin_wait(c, {"region": green, "timeout_ms": 10000})
        b = begin_wait(c, {"region": far, "timeout_ms": 1500})
        whole = begin_wait(c, {"timeout_ms": 10000})
        paint.command("color 1 #808080")
        ra, rw = c.response(a, timeout=15), c.response(whole, timeout=15)
        expect_eq(ra["result"]["changed"], True, "the green quarter's wait")
        expect_eq(rw["result"]["changed"], True, "the whole screen's wait")
        expect_eq(rw["result"]["area"], green, "the whole screen's area")
        rb = c.response(b, timeout=15)
        expect_eq(rb["result"]["changed"], False, "the far region's wait")

        # What changed before the request is not news.
        paint.command("color 2 #010203")
        r = c.call("desktop.wait_change", {"region": {"x": 100, "y": 200, "width": 200, "height": 150},
                                           "timeout_ms": 300}, timeout=15)
        expect_eq(r["changed"], False, "a change made before the request")


@case("wait_change cancelled by request.cancel: answered cancelled at once, berth-desktop's answer at the "
      "change dropped, and the next wait answers the next change", timeout=120)
def wait_change_cancelled():
    need("Xvfb", "xdpyinfo", "xdotool")
    desk = Desk()
    with desk as sb:
        c, paint = setup(desk, sb)
        rid = begin_wait(c, {"timeout_ms": 10000})
        expect_eq(c.call("request.cancel", {"id": rid}), {"cancelled": True}, "cancel's result")
        r = c.response(rid)
        expect_eq((r["ok"], r["error"]["code"]), (False, "cancelled"), "the wait's answer")
        # berth-desktop still waits, and answers this change to berthd.
        paint.command("color 3 #ff00ff")
        again = begin_wait(c, {"timeout_ms": 10000})
        paint.command("color 3 #00ff00")
        r = c.response(again, timeout=15)
        expect_eq((r["ok"], r["result"]["changed"]), (True, True), "the next wait")
        expect_eq(c.call("request.cancel", {"id": again}), {"cancelled": False}, "a cancel after the answer")
        time.sleep(0.5)
        try:
            while True:
                m = c.recv(0.5)
                expect(m.get("id") != rid, "a second answer under the cancelled id: %r" % m)
        except harness.Timeout:
            pass


@case("screenshot: an image past the largest answer is too_large, saying what to do instead", timeout=180)
def too_large():
    need("Xvfb", "xdpyinfo", "xdotool")
    # Noise does not compress: 1280x800 of it is a 3 MB PNG, and four
    # times as wide and high, over the 8 MB a message may hold.
    noise = os.path.join(scratch(), "noise.ppm")
    with open(noise, "wb") as f:
        f.write(b"P6 %d %d 255\n" % (W, H) + os.urandom(W * H * 3))
    desk = Desk()
    with desk as sb:
        c = sb.ws(timeout=60.0)
        served(c)
        pid = host_pid(sb, "berth-desktop")
        Paint(desk, image=noise, geometry=(0, 0, W, H))
        r = c.request("desktop.screenshot", {"scale": 4}, timeout=60)
        note(r if not r["ok"] else "ok: %d bytes" % len(r["result"]["data"]))
        expect(not r["ok"], "a %s answer" % ("successful" if r["ok"] else "failed"))
        expect_eq(r["error"]["code"], "too_large", "the code")
        for words in ("png", "scale", "jpeg"):
            expect_in(words, r["error"]["message"], "the message")
        # What it suggests works, and nothing was harmed.
        r, img = shot(c, {"scale": 4, "format": "jpeg", "quality": 30}, timeout=60)
        expect_eq((r["width"], r["height"]), (4 * W, 4 * H), "the JPEG's size")
        r, _ = shot(c, {"cursor": False})
        expect(len(r["data"]) > W * H * 3 * 0.9, "noise compressed to %d bytes" % len(r["data"]))
        expect_eq(host_pid(sb, "berth-desktop"), pid, "berth-desktop's pid")


# op, args, words the message must hold
BAD = [
    ("desktop.screenshot", {"region": {"x": -1, "y": 0, "width": 10, "height": 10}}, "within the screen"),
    ("desktop.screenshot", {"region": {"x": W, "y": 0, "width": 1, "height": 1}}, "within the screen"),
    ("desktop.screenshot", {"region": {"x": 0, "y": 0, "width": 0, "height": 10}}, "at least 1x1"),
    ("desktop.screenshot", {"region": {"x": 0, "y": 0, "width": W + 1, "height": 10}}, "within the screen"),
    ("desktop.screenshot", {"region": {"x": 10, "y": 10, "width": 2 ** 31 - 1, "height": 2 ** 31 - 1}}, "within"),
    ("desktop.screenshot", {"region": {"x": 0, "y": 0, "width": 2 ** 40, "height": 1}}, "\"width\""),
    ("desktop.screenshot", {"region": {"x": 0, "y": 0, "width": 10}}, "\"height\" is missing"),
    ("desktop.screenshot", {"region": {"x": 0, "y": 0, "width": "10", "height": 10}}, "\"width\" must be an integer"),
    ("desktop.screenshot", {"region": [0, 0, 10, 10]}, "\"region\" must be a map"),
    ("desktop.screenshot", {"scale": 0}, "\"scale\" must be a number in 0.05-4"),
    ("desktop.screenshot", {"scale": 0.04}, "\"scale\""),
    ("desktop.screenshot", {"scale": 100}, "\"scale\""),
    ("desktop.screenshot", {"scale": float("nan")}, "\"scale\""),
    ("desktop.screenshot", {"scale": "1"}, "\"scale\""),
    ("desktop.screenshot", {"format": "gif"}, "\"format\" must be one of: png, jpeg"),
    ("desktop.screenshot", {"format": 1}, "\"format\""),
    ("desktop.screenshot", {"quality": 0}, "\"quality\" must be an integer in 1-100"),
    ("desktop.screenshot", {"quality": 101}, "\"quality\""),
    ("desktop.screenshot", {"quality": 50.5}, "\"quality\""),
    ("desktop.screenshot", {"cursor": "yes"}, "\"cursor\" must be a bool"),
    ("desktop.wait_change", {"timeout_ms": 0}, "\"timeout_ms\" must be an integer in 1-60000"),
    ("desktop.wait_change", {"timeout_ms": 60001}, "\"timeout_ms\""),
    ("desktop.wait_change", {"timeout_ms": -5}, "\"timeout_ms\""),
    ("desktop.wait_change", {"timeout_ms": "10"}, "\"timeout_ms\""),
    ("desktop.wait_change", {"timeout_ms": 1.5}, "\"timeout_ms\""),
    ("desktop.wait_change", {"region": {"x": 0, "y": H, "width": 1, "height": 1}}, "within the screen"),
]

# op, args with keys the op does not read: served as if they were absent
UNKNOWN = [
    ("desktop.screenshot", {"colour": True, "\xff\x00": 1}),
    ("desktop.wait_change", {"region": None, "since": 1, "timeout_ms": 10}),
    ("desktop.info", {"verbose": True}),
    ("desktop.cursor", {"x": 1}),
    ("desktop.windows", {"all": True}),
    ("record.status", {"verbose": True}),
]


@case("bad arguments: bad_args with a clear message for each, unknown keys ignored, and berth-desktop lives on",
      timeout=120)
def bad_arguments():
    need("Xvfb", "xdpyinfo")
    desk = Desk()
    with desk as sb:
        c = sb.ws(timeout=20.0)
        served(c)
        pid = host_pid(sb, "berth-desktop")
        for op, args, words in BAD:
            r = c.request(op, args)
            expect(not r["ok"], "%s %r succeeded: %r" % (op, args, r))
            err = r["error"]
            note("%s %r: %s" % (op, args, err))
            expect_eq(err["code"], "bad_args", "%s %r: the code (%s)" % (op, args, err["message"]))
            expect_in(words, err["message"], "%s %r: the message" % (op, args))
        # Still serving, the same process; nil is the same as absent.
        r, _ = shot(c, {"region": None, "scale": None, "format": "jpeg", "quality": 1})
        expect_eq((r["width"], r["height"]), (W, H), "a screenshot after the bad ones")
        # Unknown keys, of the args and of a region, strings or not, are ignored.
        for op, args in UNKNOWN:
            r = c.request(op, args)
            expect(r["ok"], "%s %r: %r" % (op, args, r.get("error")))
        r, _ = shot(c, {"region": {"x": 0, "y": 0, "width": 10, "height": 20, "z": 1}, "colour": True})
        expect_eq((r["width"], r["height"]), (10, 20), "the region read beside an unknown key")
        expect_eq(host_pid(sb, "berth-desktop"), pid, "berth-desktop's pid")


@case("X server killed: every op unavailable, a pending wait fails; all work again once X is back", timeout=180)
def x_restart():
    need("Xvfb", "xdpyinfo")
    desk = Desk()
    with desk as sb:
        c = sb.ws(timeout=20.0)
        served(c)
        pid = host_pid(sb, "berth-desktop")
        xvfb = host_pid(sb, "Xvfb")
        pending = begin_wait(c, {"timeout_ms": 60000})
        os.kill(xvfb, signal.SIGKILL)
        r = c.response(pending, timeout=15)
        note("the pending wait: %r" % r)
        expect(not r["ok"] and r["error"]["code"] == "unavailable", "the pending wait: %r" % r)

        # Down (for 1.5 s): every op says so.
        for op, args in (("desktop.screenshot", {}), ("desktop.info", {}), ("desktop.cursor", {}),
                         ("desktop.windows", {}), ("desktop.wait_change", {"timeout_ms": 100})):
            r = c.request(op, args)
            note("%s while X is down: %r" % (op, r))
            expect(not r["ok"], "%s answered while X was down: %r" % (op, r))
            expect_eq(r["error"]["code"], "unavailable", "%s's code" % op)
            expect_in("not connected", r["error"]["message"], "%s's message" % op)

        host_pid(sb, "Xvfb", other_than=xvfb)

        def works():
            r = c.request("desktop.screenshot", {"format": "jpeg"})
            return r["ok"] and r["result"]["width"] == W

        wait_for(works, 30, "a screenshot after X came back", 0.1)
        expect_eq(c.call("desktop.info")["width"], W, "info after X came back")
        r = c.call("desktop.wait_change", {"timeout_ms": 100})
        expect_eq(r["changed"], False, "a wait after X came back")
        expect_eq(host_pid(sb, "berth-desktop"), pid, "berth-desktop's pid")


run()
