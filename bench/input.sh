#!/usr/bin/env bash
# Input: desktop.input beside xdotool on the same display, in the same run.
# berthd runs Xvfb and berth-desktop; xevlog (tests/x11) holds the focus
# over the whole screen and prints each event that reaches it. Prints
# medians and p99 over ACTIONS actions a run (medians over RUNS runs) and
# the ratios:
#
# - the latency of one action until xevlog prints it: a pointer motion,
#   and a key press. berth sends desktop.input on one Unix connection to
#   berthd kept open (berthd forwards to berth-desktop, which has XTest on
#   its X connection); xdotool runs one process per action (`xdotool
#   mousemove X Y`, `xdotool key a`), as the peers that drive a desktop
#   through it do.
# - typing a string of TYPED characters, ASCII and a mixed one (a quarter
#   of it accented letters, symbols, CJK and emoji, none in the keyboard
#   map): berth's `type` against `xdotool type` with its default delay
#   (12 ms between keys) and with --delay 0; until the last character
#   reaches xevlog, and until the answer (berth: it waits 50 ms before it
#   gives back the spare keycodes) or the exit (xdotool). Whether the text
#   arrived intact is printed beside each figure: a fast typist that loses
#   characters has not typed.
#
#   bench/input.sh [BUILD_DIR]     (default: build; needs `make check` for
#                                   tests/x11/xevlog)
#   RUNS=3 ACTIONS=500 TYPED=200 bench/input.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
py=/usr/bin/python3
for tool in unshare Xvfb xdpyinfo xdotool "$py"; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth-desktop tests/x11/xevlog

cat >"$bench_dir/bench.py" <<'EOF'
import os, queue, random, signal, statistics, subprocess, sys, threading, time

src, build, d = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "bench"))
import benchlib  # noqa: E402
from benchlib import latency_ms as lat  # noqa: E402

signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
RUNS, ACTIONS, TYPED = (int(os.environ.get(k, v)) for k, v in (("RUNS", 3), ("ACTIONS", 500), ("TYPED", 200)))
W, H = 1280, 800


class Events:
    """xevlog's lines, each stamped (clock_monotonic) by a reader thread
    as it arrives, so that a figure does not depend on when the bench
    looks."""

    def __init__(self, env):
        self.p = subprocess.Popen([os.path.join(build, "tests", "x11", "xevlog")], env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, bufsize=0)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.until(lambda l: l == "READY")

    def _read(self):
        buf = b""
        while True:
            chunk = os.read(self.p.stdout.fileno(), 1 << 16)
            now = time.monotonic()
            if not chunk:
                self.q.put((now, None))
                return
            *whole, buf = (buf + chunk).split(b"\n")
            for w in whole:
                self.q.put((now, w.decode()))

    def until(self, pred, timeout=20):
        """The (time, line) pairs up to and with the first line for which
        pred holds."""
        seen = []
        while True:
            try:
                t, line = self.q.get(timeout=timeout)
            except queue.Empty:
                sys.exit("bench: xevlog printed nothing for %d s" % timeout)
            if line is None:
                sys.exit("bench: xevlog ended")
            seen.append((t, line))
            if pred(line):
                return seen

    def stop(self):
        self.p.kill()
        self.p.wait()


def typed(seen):
    """The text of the key presses in (time, line) pairs, and the time the
    last character came."""
    out, last = "", None
    for t, line in seen:
        parts = line.split()
        if parts[0] == "K" and parts[2] != "-":
            out += bytes.fromhex(parts[2]).decode()
            last = t
    return out, last


class Berth(benchlib.Berth):
    """berthd running Xvfb and berth-desktop; one kept connection; xevlog
    on the display."""

    def __init__(self, run):
        display = benchlib.free_display()
        self.env = dict(os.environ, DISPLAY=":%d" % display)
        super().__init__(src, build, d, run, display, (W, H),
                         ("desktop.input", {"actions": [{"type": "move", "x": 1, "y": 1}]}))
        self.ev = Events(self.env)

    def input(self, *actions):
        return self.c.send("desktop.input", {"actions": list(actions)})

    def done(self, i):
        m = self.c.response(i)
        if not m["ok"]:
            sys.exit("bench: desktop.input: %s" % m["error"])

    def stop(self):
        self.ev.stop()
        super().stop()


def positions():
    """ACTIONS distinct consecutive pointer positions."""
    return [(100 + (i % 2) * 500 + i % 7, 100 + (i % 3) * 200) for i in range(ACTIONS)]


def berth_moves(b):
    out = []
    for x, y in positions():
        t0 = time.monotonic()
        i = b.input({"type": "move", "x": x, "y": y})
        out.append(b.ev.until(lambda l: l == "M %d %d" % (x, y))[-1][0] - t0)
        b.done(i)
    return out


def xdotool_moves(b):
    out = []
    for x, y in positions():
        t0 = time.monotonic()
        p = subprocess.Popen(["xdotool", "mousemove", str(x), str(y)], env=b.env)
        out.append(b.ev.until(lambda l: l == "M %d %d" % (x, y))[-1][0] - t0)
        p.wait()
    return out


def keys():
    return [("a", "61") if i % 2 == 0 else ("b", "62") for i in range(ACTIONS)]


def berth_keys(b):
    out = []
    for k, h in keys():
        t0 = time.monotonic()
        i = b.input({"type": "key", "combo": k})
        out.append(b.ev.until(lambda l: l == "K %s %s" % (k, h))[-1][0] - t0)
        b.ev.until(lambda l: l == "KR %s" % k)
        b.done(i)
    return out


def xdotool_keys(b):
    out = []
    for k, h in keys():
        t0 = time.monotonic()
        p = subprocess.Popen(["xdotool", "key", k], env=b.env)
        out.append(b.ev.until(lambda l: l == "K %s %s" % (k, h))[-1][0] - t0)
        b.ev.until(lambda l: l == "KR %s" % k)
        p.wait()
    return out


ASCII = "The quick brown fox jumps over the lazy dog, 0123456789 times! "
MIXED = ["\u00e9", "\u00fc", "\u2713", "\u2192", "\u4e2d", "\u6587", "\U0001f600", "\u20ac"]


def texts():
    rng = random.Random(7)
    ascii_text = (ASCII * (TYPED // len(ASCII) + 1))[:TYPED]
    mixed = "".join(rng.choice(MIXED) if rng.random() < 0.25 else c for c in ascii_text)
    return ascii_text, mixed


def is_escape(line):
    return line.startswith("K Escape")


def berth_type(b, text):
    """(ms until the last character came, ms until the answer, intact)"""
    t0 = time.monotonic()
    i = b.input({"type": "type", "text": text})
    b.done(i)
    done = time.monotonic()
    b.done(b.input({"type": "key", "combo": "Escape"}))
    got, last = typed(b.ev.until(is_escape)[:-1])
    return (last - t0) * 1000, (done - t0) * 1000, got == text


def xdotool_type(b, text, delay):
    """The same for one xdotool process; its end is its exit."""
    t0 = time.monotonic()
    argv = ["xdotool", "type"] + (["--delay", str(delay)] if delay is not None else []) + ["--", text]
    subprocess.run(argv, env=b.env, check=True)
    done = time.monotonic()
    subprocess.run(["xdotool", "key", "Escape"], env=b.env, check=True)
    got, last = typed(b.ev.until(is_escape)[:-1])
    return ((last or done) - t0) * 1000, (done - t0) * 1000, got == text


r = {k: [] for k in ("bm", "xm", "bk", "xk")}
ty = {}
ascii_text, mixed = texts()
for run in range(RUNS):
    b = Berth(run)
    try:
        r["bm"].append(berth_moves(b))
        r["xm"].append(xdotool_moves(b))
        r["bk"].append(berth_keys(b))
        r["xk"].append(xdotool_keys(b))
        for name, text in (("ascii", ascii_text), ("mixed", mixed)):
            for who, fn in (("berth", lambda: berth_type(b, text)),
                            ("xdotool", lambda: xdotool_type(b, text, None)),
                            ("xdotool0", lambda: xdotool_type(b, text, 0))):
                ty.setdefault((name, who), []).append(fn())
    finally:
        b.stop()
    print("run %d of %d done" % (run + 1, RUNS), file=sys.stderr)

med = statistics.median

print("latency of one action until the X client sees it, ms (%d actions a run; medians of %d runs)"
      "   median      p99" % (ACTIONS, RUNS))
for what, bk, xk, peer in (("pointer motion", "bm", "xm", "xdotool mousemove X Y"),
                           ("key press", "bk", "xk", "xdotool key a")):
    (b50, b99), (x50, x99) = lat(r[bk]), lat(r[xk])
    print("  %-60s %8.3f %8.3f" % ("%s, berth: desktop.input on a kept connection" % what, b50, b99))
    print("  %-60s %8.3f %8.3f" % ("%s, %s (a process each)" % (what, peer), x50, x99))
    print("  ratio xdotool/berth %.1fx median, %.1fx p99" % (x50 / b50, x99 / b99))
print("typing %d characters, ms (median of %d runs): until the last character reaches the client, until the "
      "request is answered (berth) or the process has exited (xdotool)" % (TYPED, RUNS))
for name, label in (("ascii", "ASCII"), ("mixed", "mixed: a quarter outside the keyboard map")):
    print("  %-60s %8s %8s" % (label, "last", "done"))
    base = med(last for last, _, _ in ty[(name, "berth")])
    for who, desc in (("berth", "berth: desktop.input type"), ("xdotool", "xdotool type (default 12 ms delay)"),
                      ("xdotool0", "xdotool type --delay 0")):
        runs = ty[(name, who)]
        last, done = med(x for x, _, _ in runs), med(y for _, y, _ in runs)
        ok = sum(1 for _, _, good in runs if good)
        print("    %-58s %8.1f %8.1f   %d of %d intact%s" % (desc, last, done, ok, len(runs),
                                                            "" if who == "berth" else ", %.1fx berth" % (last / base)))
EOF

"$py" "$bench_dir/bench.py" "$src" "$build" "$bench_dir"
