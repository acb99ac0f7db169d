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
import os, queue, random, signal, socket, statistics, struct, subprocess, sys, threading, time

import msgpack

src, build, d = sys.argv[1:4]
signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
RUNS, ACTIONS, TYPED = (int(os.environ.get(k, v)) for k, v in (("RUNS", 3), ("ACTIONS", 500), ("TYPED", 200)))
W, H = 1280, 800


def wait_until(pred, timeout=20, what="a condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            sys.exit("bench: timed out waiting for %s" % what)
        time.sleep(0.01)


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(x) for x in f.read().split()]


def free_display():
    for _ in range(200):
        n = random.randint(150, 899)
        if not os.path.exists("/tmp/.X11-unix/X%d" % n) and not os.path.exists("/tmp/.X%d-lock" % n):
            return n
    sys.exit("bench: no free X display")


class Conn:
    """A client of berthd's Unix socket."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = bytearray()
        self.next_id = 0
        self.call("hello", {"version": "berth.v1", "client": "bench"})

    def send(self, op, args):
        self.next_id += 1
        p = msgpack.packb({"type": "request", "id": self.next_id, "op": op, "args": args}, use_bin_type=True)
        self.s.sendall(struct.pack(">I", len(p)) + p)
        return self.next_id

    def recv(self):
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack_from(">I", self.buf)
                if len(self.buf) >= 4 + n:
                    m = msgpack.unpackb(bytes(self.buf[4:4 + n]), raw=False)
                    del self.buf[:4 + n]
                    return m
            chunk = self.s.recv(1 << 20)
            if not chunk:
                sys.exit("bench: berthd closed the connection")
            self.buf += chunk

    def response(self, i):
        while True:
            m = self.recv()
            if m.get("type") == "response" and m.get("id") == i:
                return m

    def call(self, op, args=None, check=True):
        m = self.response(self.send(op, args or {}))
        if check and not m["ok"]:
            sys.exit("bench: %s: %s" % (op, m["error"]))
        return m

    def close(self):
        self.s.close()


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


class Berth:
    """berthd in a PID namespace of its own, running Xvfb and
    berth-desktop; one kept connection; xevlog on the display."""

    def __init__(self, run):
        self.dir = os.path.join(d, "berthd-%d" % run)
        os.makedirs(self.dir)
        self.display = free_display()
        self.env = dict(os.environ, DISPLAY=":%d" % self.display)
        conf = os.path.join(self.dir, "berth.conf")
        with open(os.path.join(src, "images", "minimal", "berth.conf")) as f:
            text = f.read()
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        with open(conf, "w") as f:
            f.write(text + "\n[service xvfb]\ncommand = Xvfb :%d -screen 0 %dx%dx24 -nolisten tcp\n"
                    "ready = exec /usr/bin/xdpyinfo -display :%d\nrequired = no\n\n"
                    "[check xfce]\nready = report\n\n"
                    "[service desktop]\ncommand = %s --display :%d\nafter = xvfb\nrequired = no\n"
                    % (self.display, W, H, self.display, os.path.join(build, "berth-desktop"), self.display))
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
        wait_until(lambda: self.c.call("desktop.input", {"actions": [{"type": "move", "x": 1, "y": 1}]},
                                       check=False)["ok"], what="desktop.input answering")
        self.ev = Events(self.env)

    def input(self, *actions):
        return self.c.send("desktop.input", {"actions": list(actions)})

    def done(self, i):
        m = self.c.response(i)
        if not m["ok"]:
            sys.exit("bench: desktop.input: %s" % m["error"])

    def stop(self):
        self.ev.stop()
        self.c.close()
        os.kill(self.pid, signal.SIGTERM)
        self.proc.wait(10)


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


def lat(runs):
    def p99(xs):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(len(xs) * 0.99))]
    return med(med(x) for x in runs) * 1000, med(p99(x) for x in runs) * 1000


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
