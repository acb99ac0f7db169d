#!/usr/bin/env bash
# Recording: record.start/record.stop beside `ffmpeg -f x11grab` with the
# same encoder settings (libx264, preset veryfast, tune zerolatency, CRF
# 26.9 = berth's default quality 60, a keyframe every FPS frames, 2
# threads, yuv420p, the pointer drawn), the same frame rate and size, on
# the same X server, alternating which goes first. Each run starts berthd
# afresh (Xvfb 1280x800 and berth-desktop as its services) and records
# DURATION seconds (default 20) of:
#
# - static: a desktop-like picture full screen (xpaint), nothing moving.
# - motion: a 4x4 grid of rectangles over the whole screen, each painted
#   a random colour 30 times a second (every frame changes everywhere).
#
# For each: CPU seconds per recorded minute (berth: berth-desktop's user
# + system time from record.start until record.stop has answered, i.e.
# including the drain, the trailer and the faststart remux, minus its
# idle rate measured just before; ffmpeg: the whole process), the peak
# RSS (berth: berth-desktop's VmRSS sampled every 100 ms while recording,
# and its growth over idle; ffmpeg: its maxrss), and the output's size
# (berth: the published artifact; ffmpeg: the file with +faststart).
# Prints medians over RUNS runs and the ratios.
#
#   bench/record.sh [BUILD_DIR]     (default: build; a build without
#                                    sanitizers; `make check` builds xpaint)
#   RUNS=5 DURATION=30 FPS=30 bench/record.sh
#
# Needs Xvfb, xdpyinfo and ffmpeg (with libx264); installs ffmpeg with
# apt-get when it is missing.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
py=/usr/bin/python3
if ! command -v ffmpeg >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y ffmpeg >/dev/null
fi
for tool in unshare Xvfb xdpyinfo ffmpeg "$py"; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth-desktop tests/x11/xpaint

cat >"$bench_dir/bench.py" <<'EOF'
import os, random, resource, signal, socket, statistics, struct, subprocess, sys, threading, time

import msgpack

src, build, d = sys.argv[1:4]
signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
RUNS = int(os.environ.get("RUNS", 3))
SECS = float(os.environ.get("DURATION", 20))
FPS = int(os.environ.get("FPS", 10))
IDLE = 5.0
W, H = 1280, 800
CRF = 40.0 - 59 * 22.0 / 99.0  # berth's quality 60
TICK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def wait_until(pred, timeout=20, what="a condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            sys.exit("bench: timed out waiting for %s" % what)
        time.sleep(0.02)


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(x) for x in f.read().split()]


def argv0(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return os.path.basename(f.read().split(b"\0")[0].decode())
    except OSError:
        return ""


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_kb(pid):
    with open("/proc/%d/statm" % pid) as f:
        return int(f.read().split()[1]) * PAGE_KB


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
    """A desktop-like 1280x800 PPM: a gradient, a panel, windows of
    text-like glyph lines."""
    rnd = random.Random(7)
    px = bytearray(W * H * 3)

    def fill(x, y, w, h, c):
        row = bytes(c) * w
        for j in range(y, y + h):
            px[(j * W + x) * 3:(j * W + x + w) * 3] = row

    for y in range(H):
        fill(0, y, W, 1, (30, 60 + y * 100 // H, 120 + y * 80 // H))
    fill(0, 0, W, 28, (220, 220, 224))
    for wx, wy, ww, wh in ((40, 60, 560, 420), (640, 90, 600, 500), (200, 420, 520, 340)):
        fill(wx - 1, wy - 1, ww + 2, wh + 2, (90, 90, 90))
        fill(wx, wy, ww, 24, (60, 90, 160))
        fill(wx, wy + 24, ww, wh - 24, (250, 250, 250))
        for line in range(wy + 32, wy + wh - 14, 14):
            x = wx + 8
            while x < wx + ww - 60:
                for _ in range(rnd.randrange(2, 10)):
                    for gy in range(10):
                        bits = rnd.getrandbits(6)
                        for gx in range(6):
                            if bits >> gx & 1 and gy % 3:
                                i = ((line + gy) * W + x + gx) * 3
                                px[i:i + 3] = b"\x20\x20\x28"
                    x += 7
                x += 7
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
        found = [p for p in children(self.pid) if argv0(p) == "berth-desktop"]
        if not found:
            sys.exit("bench: no berth-desktop under berthd")
        self.desktop = found[0]

    def record(self):
        """(cpu s above idle, peak rss KiB, rss growth KiB, bytes, frames)."""
        c0, t0 = cpu_s(self.desktop), time.monotonic()
        time.sleep(IDLE)
        idle_rate = (cpu_s(self.desktop) - c0) / (time.monotonic() - t0)
        base = rss_kb(self.desktop)
        peak = [base]
        stop = threading.Event()

        def sample():
            while not stop.wait(0.1):
                peak[0] = max(peak[0], rss_kb(self.desktop))

        th = threading.Thread(target=sample)
        c0, t0 = cpu_s(self.desktop), time.monotonic()
        th.start()
        r = self.c.call("record.start", {"fps": FPS})
        time.sleep(SECS)
        res = self.c.call("record.stop", {"id": r["id"]})
        stop.set()
        th.join()
        cpu = cpu_s(self.desktop) - c0 - idle_rate * (time.monotonic() - t0)
        if res["dropped"]:
            print("  (berth dropped %d frames)" % res["dropped"], file=sys.stderr)
        return cpu, peak[0], peak[0] - base, res["artifact"]["size"], res["frames"]

    def stop(self):
        self.c.close()
        os.kill(self.pid, signal.SIGTERM)
        self.proc.wait(10)
        for path in ("/tmp/.X11-unix/X%d" % self.display, "/tmp/.X%d-lock" % self.display):
            if os.path.exists(path):
                os.unlink(path)


def ffmpeg(display, out):
    """(cpu s, maxrss KiB, bytes, frames) of ffmpeg recording SECS."""
    argv = ["ffmpeg", "-v", "error", "-y", "-f", "x11grab", "-framerate", str(FPS), "-video_size", "%dx%d" % (W, H),
            "-draw_mouse", "1", "-i", ":%d" % display, "-t", str(SECS),
            "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-crf", "%.2f" % CRF,
            "-g", str(FPS), "-threads", "2", "-pix_fmt", "yuv420p", "-movflags", "+faststart", out]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = status
    if status != 0:
        sys.exit("bench: ffmpeg failed: %s" % err.decode(errors="replace"))
    n = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_packets", "-of", "csv=p=0", out], capture_output=True).stdout
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss, os.path.getsize(out), int(n.strip() or 0)


class Scene:
    """What the screen shows: static (a picture) or motion (a grid of
    rectangles repainted with random colours 30 times a second)."""

    def __init__(self, kind, display, pic):
        xpaint = os.path.join(build, "tests", "x11", "xpaint")
        argv = [xpaint, "-display", ":%d" % display, "-geometry", "%dx%d+0+0" % (W, H)]
        if kind == "static":
            argv += ["-image", pic]
        else:
            for j in range(4):
                for i in range(4):
                    argv.append("%d,%d,%d,%d,#808080" % (i * W // 4, j * H // 4, W // 4, H // 4))
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if not self.p.stdout.readline().startswith(b"ready"):
            sys.exit("bench: xpaint did not start")
        self.stop = threading.Event()
        self.th = None
        if kind == "motion":
            self.th = threading.Thread(target=self.animate)
            self.th.start()

    def animate(self):
        rnd = random.Random(1)
        while not self.stop.is_set():
            t = time.monotonic()
            lines = "".join("color %d #%06x\n" % (n, rnd.randrange(1 << 24)) for n in range(16))
            self.p.stdin.write(lines.encode())
            self.p.stdin.flush()
            for _ in range(16):
                self.p.stdout.readline()
            left = 1 / 30 - (time.monotonic() - t)
            if left > 0:
                time.sleep(left)

    def close(self):
        self.stop.set()
        if self.th:
            self.th.join()
        self.p.stdin.close()
        self.p.wait()


pic = os.path.join(d, "picture.ppm")
picture(pic)
res = {}
for run in range(RUNS):
    display = free_display()
    b = Berth(run, display)
    try:
        for kind in ("static", "motion"):
            scene = Scene(kind, display, pic)
            try:
                order = ("berth", "ffmpeg") if run % 2 == 0 else ("ffmpeg", "berth")
                for who in order:
                    if who == "berth":
                        cpu, peak, grow, size, frames = b.record()
                    else:
                        cpu, peak, size, frames = ffmpeg(display, os.path.join(d, "ff-%d-%s.mp4" % (run, kind)))
                        grow = peak
                    res.setdefault((kind, who), []).append((cpu * 60 / SECS, peak, grow, size, frames))
            finally:
                scene.close()
    finally:
        b.stop()
    print("run %d of %d done" % (run + 1, RUNS), file=sys.stderr)


def med(kind, who, i):
    return statistics.median(x[i] for x in res[(kind, who)])


print("recording %dx%d at %d fps for %.0f s, libx264 veryfast/zerolatency CRF %.1f, median of %d runs"
      % (W, H, FPS, SECS, CRF, RUNS))
print("  %-8s %-7s %14s %10s %12s %10s %7s" % ("screen", "", "CPU s/min", "RSS MiB", "RSS +MiB", "KiB", "frames"))
for kind in ("static", "motion"):
    for who in ("berth", "ffmpeg"):
        print("  %-8s %-7s %14.3f %10.1f %12.1f %10.1f %7d" % (
            kind, who, med(kind, who, 0), med(kind, who, 1) / 1024, med(kind, who, 2) / 1024,
            med(kind, who, 3) / 1024, med(kind, who, 4)))
    f = med(kind, "ffmpeg", 0)
    print("  %-8s ratio berth/ffmpeg: CPU %.3fx, peak RSS %.2fx, size %.2fx" % (
        kind, med(kind, "berth", 0) / f if f else float("nan"), med(kind, "berth", 1) / med(kind, "ffmpeg", 1),
        med(kind, "berth", 3) / med(kind, "ffmpeg", 3)))
print("  berth's RSS is berth-desktop's whole process (it also serves the other desktop ops); "
      "+MiB is its growth while recording")
EOF

"$py" "$bench_dir/bench.py" "$src" "$build" "$bench_dir"
