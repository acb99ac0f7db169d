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
import os, signal, statistics, subprocess, sys, time

src, build, d = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "bench"))
from benchlib import Berth, free_display, picture  # noqa: E402

signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
RUNS, SHOTS = (int(os.environ.get(k, v)) for k, v in (("RUNS", 5), ("SHOTS", 20)))
W, H = 1280, 800
IMPORT = "/usr/bin/import"


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
picture(pic, W, H, rich=True)
res = {}
split = {"png": ([], []), "jpeg": ([], [])}
sizes = {}
for run in range(RUNS):
    display = free_display()
    b = Berth(src, build, d, run, display, (W, H))
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
