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
import os, random, signal, statistics, subprocess, sys, threading, time

src, build, d = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "bench"))
import benchlib  # noqa: E402
from benchlib import cpu_s, free_display, picture  # noqa: E402

signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
RUNS = int(os.environ.get("RUNS", 3))
SECS = float(os.environ.get("DURATION", 20))
FPS = int(os.environ.get("FPS", 10))
IDLE = 5.0
W, H = 1280, 800
CRF = 40.0 - 59 * 22.0 / 99.0  # berth's quality 60
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss_kb(pid):
    with open("/proc/%d/statm" % pid) as f:
        return int(f.read().split()[1]) * PAGE_KB


class Berth(benchlib.Berth):
    """berthd running Xvfb and berth-desktop, and berth-desktop's pid."""

    def __init__(self, run, display):
        super().__init__(src, build, d, run, display, (W, H))
        self.desktop = self.child("berth-desktop")

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
picture(pic, W, H)
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
