#!/usr/bin/env bash
# Screenshots: desktop.screenshot beside the tools people reach for, on
# the same X server showing the same picture, in the same run. Each run
# starts berthd afresh (Xvfb 1280x800 and berth-desktop as its services)
# and shows a desktop-like picture (a gradient, a panel, windows of
# text-like glyphs, a noisy photo-like area) full screen with xpaint.
# Prints medians over RUNS runs (each run's figure is the median of SHOTS
# shots) and the ratios:
#
# - desktop.screenshot of the whole screen, PNG and JPEG (quality 80),
#   each a request on one Unix socket connection kept open to berthd
#   (which forwards it to berth-desktop), until the image is in hand;
#   with berth-desktop's own split of the time (the result's `timing`):
#   capture (XShmGetImage and the pointer) and encode (swscale and
#   libavcodec), the rest being the trip through berthd.
# - ImageMagick: `import -window root png:-` (and jpeg:-, -quality 80).
# - ffmpeg: `-f x11grab -frames:v 1` to PNG (and to MJPEG at -q:v 3, about
#   quality 80), writing to a pipe.
# The tools start a process and open a connection per shot, as a script
# calling them would; berth's figure is a request on a connection kept.
#
#   bench/shot.sh [BUILD_DIR]     (default: build; `make check` builds xpaint)
#   RUNS=5 SHOTS=20 bench/shot.sh
#
# Needs Xvfb, xdpyinfo, ImageMagick (import) and ffmpeg; installs
# imagemagick and ffmpeg with apt-get when they are missing.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
py=/usr/bin/python3
if ! [ -x /usr/bin/import ] || ! command -v ffmpeg >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y imagemagick ffmpeg >/dev/null
fi
for tool in unshare Xvfb xdpyinfo ffmpeg "$py"; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth-desktop tests/x11/xpaint

cat >"$bench_dir/bench.py" <<'EOF'
import os, random, signal, socket, statistics, struct, subprocess, sys, time

import msgpack

src, build, d = sys.argv[1:4]
signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
RUNS, SHOTS = (int(os.environ.get(k, v)) for k, v in (("RUNS", 5), ("SHOTS", 20)))
W, H = 1280, 800
IMPORT = "/usr/bin/import"


def wait_until(pred, timeout=20, what="a condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            sys.exit("bench: timed out waiting for %s" % what)
        time.sleep(0.02)


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(x) for x in f.read().split()]


def free_display():
    for n in random.sample(range(150, 900), 750):
        if not os.path.exists("/tmp/.X11-unix/X%d" % n) and not os.path.exists("/tmp/.X%d-lock" % n):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.bind("\0/tmp/.X11-unix/X%d" % n)
                return n
            except OSError:
                pass
            finally:
                s.close()
    sys.exit("bench: no free display")


def picture(path):
    """A desktop-like 1280x800 PPM: a gradient, a panel, three windows of
    text-like glyph lines, and a noisy photo-like area."""
    rnd = random.Random(7)
    px = bytearray(W * H * 3)

    def fill(x, y, w, h, c):
        row = bytes(c) * w
        for j in range(y, y + h):
            px[(j * W + x) * 3:(j * W + x + w) * 3] = row

    for y in range(H):
        fill(0, y, W, 1, (30, 60 + y * 100 // H, 120 + y * 80 // H))
    fill(0, 0, W, 28, (220, 220, 224))
    for i in range(12):
        fill(8 + i * 30, 4, 20, 20, (rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)))
    for wx, wy, ww, wh in ((40, 60, 560, 420), (640, 90, 600, 500), (200, 420, 520, 340)):
        fill(wx - 1, wy - 1, ww + 2, wh + 2, (90, 90, 90))
        fill(wx, wy, ww, 24, (60, 90, 160))
        fill(wx, wy + 24, ww, wh - 24, (250, 250, 250))
        for line in range(wy + 32, wy + wh - 14, 14):
            x = wx + 8
            while x < wx + ww - 60:
                word = rnd.randrange(2, 10)
                for _ in range(word):
                    for gy in range(10):
                        bits = rnd.getrandbits(6)
                        for gx in range(6):
                            if bits >> gx & 1 and gy % 3:
                                i = ((line + gy) * W + x + gx) * 3
                                px[i:i + 3] = b"\x20\x20\x28"
                    x += 7
                x += 7
    for y in range(500, 700):
        for x in range(900, 1200):
            n = rnd.randrange(-12, 13)
            i = (y * W + x) * 3
            px[i:i + 3] = bytes((max(0, min(255, 120 + (x - 900) // 3 + n)), max(0, min(255, 80 + (y - 500) // 2 + n)),
                                 max(0, min(255, 60 + n))))
    with open(path, "wb") as f:
        f.write(b"P6 %d %d 255\n" % (W, H) + px)


class Conn:
    """A client of berthd's Unix socket."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = bytearray()
        self.next_id = 0
        self.call("hello", {"version": "berth.v1", "client": "bench"})

    def request(self, op, args=None):
        self.next_id += 1
        p = msgpack.packb({"type": "request", "id": self.next_id, "op": op, "args": args or {}}, use_bin_type=True)
        self.s.sendall(struct.pack(">I", len(p)) + p)
        while True:
            while len(self.buf) < 4 or len(self.buf) < 4 + struct.unpack_from(">I", self.buf)[0]:
                chunk = self.s.recv(1 << 20)
                if not chunk:
                    sys.exit("bench: berthd closed the connection")
                self.buf += chunk
            (n,) = struct.unpack_from(">I", self.buf)
            m = msgpack.unpackb(bytes(self.buf[4:4 + n]), raw=False)
            del self.buf[:4 + n]
            if m.get("type") == "response" and m.get("id") == self.next_id:
                return m

    def call(self, op, args=None):
        m = self.request(op, args)
        if not m["ok"]:
            sys.exit("bench: %s: %s" % (op, m["error"]))
        return m["result"]

    def close(self):
        self.s.close()


class Berth:
    """berthd in a PID namespace of its own, running Xvfb and berth-desktop."""

    def __init__(self, run, display):
        self.dir = os.path.join(d, "berthd-%d" % run)
        os.makedirs(self.dir)
        self.display = display
        conf = os.path.join(self.dir, "berth.conf")
        with open(os.path.join(src, "images", "minimal", "berth.conf")) as f:
            text = f.read()
        text += ("\n[service xvfb]\ncommand = Xvfb :%d -screen 0 %dx%dx24 -nolisten tcp\n"
                 "ready = exec /usr/bin/xdpyinfo -display :%d\n\n"
                 "[check xfce]\nready = report\n\n"
                 "[service desktop]\ncommand = %s --display :%d\nafter = xvfb\nrequired = no\n"
                 % (display, W, H, display, os.path.join(build, "berth-desktop"), display))
        with open(conf, "w") as f:
            f.write(text)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        self.sock = os.path.join(self.dir, "state", "berthd.sock")
        self.proc = subprocess.Popen(
            ["unshare", "-p", "-f", "--mount-proc", os.path.join(build, "berthd"), "--config", conf,
             "--listen", "127.0.0.1:%d" % port, "--state-dir", os.path.join(self.dir, "state"),
             "--token-file", os.path.join(self.dir, "token")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, "log"), "wb"), start_new_session=True)
        wait_until(lambda: os.path.exists(self.sock), what="berthd's socket")
        wait_until(lambda: children(self.proc.pid), what="berthd's pid")
        self.pid = children(self.proc.pid)[0]
        self.c = Conn(self.sock)
        wait_until(lambda: self.c.request("desktop.info")["ok"], 30, "desktop.info")

    def stop(self):
        self.c.close()
        os.kill(self.pid, signal.SIGTERM)
        self.proc.wait(10)
        for path in ("/tmp/.X11-unix/X%d" % self.display, "/tmp/.X%d-lock" % self.display):
            if os.path.exists(path):
                os.unlink(path)


def paint(display, pic):
    p = subprocess.Popen([os.path.join(build, "tests", "x11", "xpaint"), "-display", ":%d" % display,
                          "-geometry", "%dx%d+0+0" % (W, H), "-image", pic],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = p.stdout.readline()
    if not line.startswith(b"ready"):
        sys.exit("bench: xpaint said %r" % line)
    return p


def timed(fn):
    t0 = time.monotonic()
    out = fn()
    return time.monotonic() - t0, out


def tool(argv):
    def shoot():
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0 or not p.stdout:
            sys.exit("bench: %s: %s" % (" ".join(argv), p.stderr.decode(errors="replace")))
        return len(p.stdout)
    return shoot


pic = os.path.join(d, "picture.ppm")
picture(pic)
res = {}
split = {"png": ([], []), "jpeg": ([], [])}
sizes = {}
for run in range(RUNS):
    display = free_display()
    b = Berth(run, display)
    xp = paint(display, pic)
    try:
        dsp = ":%d" % display

        def berth(fmt):
            def shoot():
                r = b.c.call("desktop.screenshot", {"format": fmt})
                if (r["width"], r["height"]) != (W, H):
                    sys.exit("bench: a %dx%d screenshot" % (r["width"], r["height"]))
                split[fmt][0].append(r["timing"]["capture_ms"])
                split[fmt][1].append(r["timing"]["encode_ms"])
                return len(r["data"])
            return shoot

        ways = [
            ("berth png", berth("png")),
            ("import png", tool([IMPORT, "-display", dsp, "-window", "root", "png:-"])),
            ("ffmpeg png", tool(["ffmpeg", "-v", "error", "-f", "x11grab", "-video_size", "%dx%d" % (W, H), "-i", dsp,
                                 "-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "-"])),
            ("berth jpeg", berth("jpeg")),
            ("import jpeg", tool([IMPORT, "-display", dsp, "-window", "root", "-quality", "80", "jpeg:-"])),
            ("ffmpeg jpeg", tool(["ffmpeg", "-v", "error", "-f", "x11grab", "-video_size", "%dx%d" % (W, H), "-i", dsp,
                                  "-frames:v", "1", "-f", "image2pipe", "-c:v", "mjpeg", "-q:v", "3", "-"])),
        ]
        for _, fn in ways:
            fn()  # warm: caches, the SHM segment, the encoders
        for name, fn in (ways if run % 2 == 0 else list(reversed(ways))):
            times = []
            for _ in range(SHOTS):
                t, size = timed(fn)
                times.append(t)
                sizes[name] = size
            res.setdefault(name, []).append(statistics.median(times))
    finally:
        xp.stdin.close()
        xp.wait()
        b.stop()
    print("run %d of %d done" % (run + 1, RUNS), file=sys.stderr)

med = {k: statistics.median(v) * 1000 for k, v in res.items()}
print("screenshot of a %dx%d desktop-like picture, ms (median of %d runs of %d shots)" % (W, H, RUNS, SHOTS))
print("  %-58s %9s %9s" % ("", "ms", "KiB"))
for name, what in (("berth png", "berth: desktop.screenshot png, one Unix connection kept"),
                   ("import png", "ImageMagick: import -window root png:-"),
                   ("ffmpeg png", "ffmpeg: -f x11grab -frames:v 1, png to a pipe"),
                   ("berth jpeg", "berth: desktop.screenshot jpeg (quality 80)"),
                   ("import jpeg", "ImageMagick: import -quality 80 jpeg:-"),
                   ("ffmpeg jpeg", "ffmpeg: x11grab, mjpeg -q:v 3 to a pipe")):
    print("  %-58s %9.2f %9.1f" % (what, med[name], sizes[name] / 1024))
for fmt in ("png", "jpeg"):
    cap, enc = statistics.median(split[fmt][0]), statistics.median(split[fmt][1])
    print("  berth %s inside berth-desktop: capture %.2f ms (XShmGetImage, pointer), encode %.2f ms, "
          "the rest (through berthd) %.2f ms" % (fmt, cap, enc, med["berth " + fmt] - cap - enc))
    print("  ratio berth/import %.2fx, berth/ffmpeg %.2fx" % (med["berth " + fmt] / med["import " + fmt],
                                                            med["berth " + fmt] / med["ffmpeg " + fmt]))
EOF

"$py" "$bench_dir/bench.py" "$src" "$build" "$bench_dir"
