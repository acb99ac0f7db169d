#!/usr/bin/env bash
# Terminal sessions: berthd beside a tmux server on the same work, each
# run starting both afresh. Prints medians over RUNS runs and the ratios:
#
# - output throughput of a flood (`yes` text, MBYTES of it, the terminal's
#   output processing off so every byte counts) to one attached client:
#   berth's client reads data messages on the Unix socket; tmux's is a
#   control-mode client (`tmux -C attach`) reading %output lines. The
#   ceiling is the same writer on a bare PTY read by one process.
# - keystroke echo latency into `cat` on a raw terminal, KEYS keys a run,
#   one at a time: pty.input until the data message holds the key, against
#   `send-keys -l` in control mode until %output holds it (median, p99).
# - reattaching with a 1 MiB backlog: berth attaches a new connection from
#   offset 0 and reads the 1 MiB. tmux has no replay; the nearest work is
#   a new control client plus `capture-pane -p -S -` of a pane whose
#   history holds the same text, so that figure is an approximation.
# - memory per idle session: berthd's RSS growth over SESSIONS `sh`
#   sessions (and its berth-vt children's, when berth-vt is built) against
#   the tmux server's over as many windows; the shells are not counted.
#
#   bench/pty.sh [BUILD_DIR]     (default: build)
#   RUNS=5 MBYTES=50 KEYS=500 SESSIONS=20 bench/pty.sh
#
# Installs tmux with apt-get when it is missing.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
py=/usr/bin/python3
if ! command -v tmux >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y tmux >/dev/null
fi
for tool in unshare "$py"; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
. "$src/bench/lib.sh"
bench_need berthd berth-gateway

cat >"$bench_dir/bench.py" <<'EOF'
import os, pty, re, signal, statistics, subprocess, sys, time

src, build, d = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "bench"))
import benchlib  # noqa: E402
from benchlib import children, cmdline, latency_ms as lat, wait_until  # noqa: E402

# A stopped bench still stops its berthd and tmux server (the finally below).
signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
RUNS, MBYTES, KEYS, SESSIONS = (int(os.environ.get(k, v)) for k, v in
                                (("RUNS", 5), ("MBYTES", 50), ("KEYS", 500), ("SESSIONS", 20)))
FLOOD = MBYTES * 1000 * 1000
BACKLOG = 1 << 20
TEXT = "the quick brown fox jumps over the lazy dog 0123456789"
HISTORY = BACKLOG // (len(TEXT) + 1) + 100


def writer(n, go):
    """The flood: n bytes of text once go exists, output processing off."""
    return "stty -opost; while [ ! -e %s ]; do sleep 0.002; done; yes '%s' | head -c %d" % (go, TEXT, n)


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def pss(pid):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        return int(re.search(r"Pss:\s+(\d+)", f.read()).group(1))


def go_file(name):
    path = os.path.join(d, name)
    if os.path.exists(path):
        os.unlink(path)
    return path


def touch(path):
    open(path, "w").close()


# ---- berth


class Berth(benchlib.Berth):
    """berthd and one client connection."""

    def __init__(self, run):
        super().__init__(src, build, d, run)

    def connect(self):
        return Conn(self.sock)

    def vts(self):
        return [p for p in children(self.pid) if b"berth-vt" in cmdline(p)]


class Conn(benchlib.Conn):
    """berthd's client, reading a terminal's stream too."""

    def read_to(self, pty_id, until):
        """Reads data messages until the stream reaches until; returns the
        bytes lost on the way."""
        stream, lost, at = "pty/" + pty_id, 0, None
        while at is None or at < until:
            m = self.recv()
            if m["type"] == "data" and m["stream"] == stream:
                if at is not None and m["offset"] > at:
                    lost += m["offset"] - at
                at = m["offset"] + len(m["data"])
        return lost


def berth_flood(b):
    go = go_file("go-berth")
    pty_id = b.c.call("pty.open", {"argv": ["/bin/sh", "-c", writer(FLOOD, go)]})["id"]
    b.c.call("pty.attach", {"id": pty_id, "from_offset": 0})
    t0 = time.monotonic()
    touch(go)
    lost = b.c.read_to(pty_id, FLOOD)
    took = time.monotonic() - t0
    # berthd drops a berth-vt that falls too far behind.
    vt_kept = bool(b.vts())
    b.c.call("pty.detach", {"id": pty_id})
    b.c.call("pty.close", {"id": pty_id})
    return FLOOD / took, lost, vt_kept


def berth_latency(b):
    pty_id = b.c.call("pty.open", {"argv": ["/bin/sh", "-c", "stty raw -echo; echo ready; exec cat"]})["id"]
    b.c.call("pty.attach", {"id": pty_id, "from_offset": 0})
    seen = b""
    while b"ready" not in seen:
        m = b.c.recv()
        if m["type"] == "data":
            seen += m["data"]
    stream, out = "pty/" + pty_id, []
    for i in range(KEYS):
        key = bytes([0x61 + i % 26])
        t0 = time.monotonic()
        b.c.send("pty.input", {"id": pty_id, "data": key})
        while True:
            m = b.c.recv()
            if m["type"] == "data" and m["stream"] == stream and key in m["data"]:
                break
        out.append(time.monotonic() - t0)
    b.c.call("pty.close", {"id": pty_id})
    return out


def berth_reattach(b):
    go = go_file("go-backlog")
    pty_id = b.c.call("pty.open", {"argv": ["/bin/sh", "-c", writer(BACKLOG, go) + "; exec sleep 100000"]})["id"]
    touch(go)

    def written():
        return [s for s in b.c.call("pty.list")["sessions"] if s["id"] == pty_id][0]["bytes"] >= BACKLOG

    wait_until(written, what="the backlog")
    t0 = time.monotonic()
    c = b.connect()
    c.call("pty.attach", {"id": pty_id, "from_offset": 0})
    lost = c.read_to(pty_id, BACKLOG)
    took = time.monotonic() - t0
    c.close()
    b.c.call("pty.close", {"id": pty_id})
    return took, lost


def berth_memory(b):
    """(berthd's RSS growth, berth-vt's RSS, berth-vt's PSS), per session."""
    before = rss(b.pid)
    ids = [b.c.call("pty.open", {"argv": ["/bin/sh"]})["id"] for _ in range(SESSIONS)]

    def prompts():
        return all(s["bytes"] > 0 for s in b.c.call("pty.list")["sessions"] if s["id"] in ids)

    wait_until(prompts, what="the shells' prompts")
    time.sleep(0.3)
    after, vts = rss(b.pid), b.vts()
    vt_rss, vt_pss = sum(rss(p) for p in vts), sum(pss(p) for p in vts)
    for pty_id in ids:
        b.c.call("pty.close", {"id": pty_id})
    return (after - before) / SESSIONS, vt_rss / SESSIONS, vt_pss / SESSIONS


# ---- tmux


class Tmux:
    def __init__(self, run):
        self.name = "berth-bench-%d-%d" % (os.getpid(), run)
        self.conf = os.path.join(d, "tmux.conf")
        with open(self.conf, "w") as f:
            f.write("set -g history-limit %d\nset -g status off\n" % HISTORY)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        self.cmd("new-session", "-d", "-s", "bench", "-x", "80", "-y", "24", "sleep 100000")
        self.pid = int(self.cmd("display", "-p", "#{pid}"))

    def cmd(self, *args):
        return subprocess.run(["tmux", "-L", self.name, "-f", self.conf] + list(args), env=self.env,
                              check=True, capture_output=True).stdout.decode()

    def window(self, command):
        return self.cmd("new-window", "-d", "-P", "-F", "#{pane_id}", command).strip()

    def control(self):
        return Control(self)

    def stop(self):
        self.cmd("kill-server")


class Control:
    """A control-mode client: commands in, notifications out."""

    def __init__(self, t):
        self.p = subprocess.Popen(["tmux", "-L", t.name, "-f", t.conf, "-C", "attach", "-t", "bench"],
                                  env=t.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.buf = b""
        self.lines = []
        while not self.line().startswith(b"%session-changed"):
            pass

    def send(self, line):
        self.p.stdin.write(line.encode() + b"\n")

    def line(self):
        while not self.lines:
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                sys.exit("bench: the tmux control client ended")
            *whole, self.buf = (self.buf + chunk).split(b"\n")
            self.lines.extend(whole)
            self.lines.reverse()
        return self.lines.pop()

    def output(self, pane):
        """The next %output of pane, still escaped."""
        head = b"%%output %s " % pane.encode()
        while True:
            ln = self.line()
            if ln.startswith(head):
                return ln[len(head):]

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


def unescaped_len(data):
    # Control mode writes every byte below 32 and the backslash as \ooo.
    return len(data) - 3 * data.count(b"\\")


def tmux_flood(t):
    go = go_file("go-tmux")
    c = t.control()
    # The pane stays: tmux drops a pane's last output when it closes.
    pane = t.window("sh -c \"%s; exec sleep 100000\"" % writer(FLOOD, go))
    t0 = time.monotonic()
    touch(go)
    got = 0
    while got < FLOOD:
        got += unescaped_len(c.output(pane))
    took = time.monotonic() - t0
    c.close()
    t.cmd("kill-pane", "-t", pane)
    return FLOOD / took


def tmux_latency(t):
    c = t.control()
    pane = t.window("sh -c 'stty raw -echo; echo ready; exec cat'")
    while b"ready" not in c.output(pane):
        pass
    out = []
    for i in range(KEYS):
        key = chr(0x61 + i % 26)
        t0 = time.monotonic()
        c.send("send-keys -t %s -l %s" % (pane, key))
        while key.encode() not in c.output(pane):
            pass
        out.append(time.monotonic() - t0)
    c.close()
    t.cmd("kill-pane", "-t", pane)
    return out


def tmux_reattach(t):
    go = go_file("go-tmux-backlog")
    pane = t.window("sh -c \"%s; exec sleep 100000\"" % writer(BACKLOG, go).replace("stty -opost; ", ""))
    touch(go)
    lines = BACKLOG // (len(TEXT) + 1)

    def written():
        return int(t.cmd("display", "-p", "-t", pane, "#{history_size}")) + 24 >= lines

    wait_until(written, what="tmux's history")
    t0 = time.monotonic()
    c = t.control()
    c.send("capture-pane -p -S - -E - -t %s" % pane)
    got, inside = 0, False
    while True:
        ln = c.line()
        if ln.startswith(b"%begin"):
            inside = True
        elif ln.startswith(b"%end") and inside:
            break
        elif inside:
            got += len(ln) + 1
    took = time.monotonic() - t0
    c.close()
    t.cmd("kill-pane", "-t", pane)
    return took, got


def tmux_memory(t):
    before = rss(t.pid)
    panes = [t.window("/bin/sh") for _ in range(SESSIONS)]
    wait_until(lambda: all(t.cmd("capture-pane", "-p", "-t", p).strip() for p in panes), what="tmux's prompts")
    time.sleep(0.3)
    after = rss(t.pid)
    for p in panes:
        t.cmd("kill-pane", "-t", p)
    return (after - before) / SESSIONS


# ---- the ceiling


def bare_flood():
    go = go_file("go-bare")
    master, slave = pty.openpty()
    p = subprocess.Popen(["/bin/sh", "-c", writer(FLOOD, go)], stdin=slave, stdout=slave, stderr=slave,
                         start_new_session=True)
    os.close(slave)
    t0 = time.monotonic()
    touch(go)
    got = 0
    while got < FLOOD:
        got += len(os.read(master, 1 << 16))
    took = time.monotonic() - t0
    p.wait()
    os.close(master)
    return FLOOD / took


# ---- runs

r = {k: [] for k in ("bare", "bflood", "blost", "tflood", "blat", "tlat", "bre", "brelost", "tre", "tregot",
                     "bmem", "vtrss", "vtpss", "tmem", "vtkept")}
for run in range(RUNS):
    b, t = Berth(run), Tmux(run)
    try:
        m, vt_rss, vt_pss = berth_memory(b)
        r["bmem"].append(m)
        r["vtrss"].append(vt_rss)
        r["vtpss"].append(vt_pss)
        r["tmem"].append(tmux_memory(t))
        r["bare"].append(bare_flood())
        rate, lost, vt_kept = berth_flood(b)
        r["bflood"].append(rate)
        r["blost"].append(lost)
        r["vtkept"].append(vt_kept)
        r["tflood"].append(tmux_flood(t))
        r["blat"].append(berth_latency(b))
        r["tlat"].append(tmux_latency(t))
        took, lost = berth_reattach(b)
        r["bre"].append(took)
        r["brelost"].append(lost)
        took, got = tmux_reattach(t)
        r["tre"].append(took)
        r["tregot"].append(got)
    finally:
        b.stop()
        t.stop()
    print("run %d of %d done" % (run + 1, RUNS), file=sys.stderr)

med = statistics.median

bare, bflood, tflood = med(r["bare"]) / 1e6, med(r["bflood"]) / 1e6, med(r["tflood"]) / 1e6
(bl50, bl99), (tl50, tl99) = lat(r["blat"]), lat(r["tlat"])
bre, tre = med(r["bre"]) * 1000, med(r["tre"]) * 1000
bmem, tmem, vtrss, vtpss = med(r["bmem"]), med(r["tmem"]), med(r["vtrss"]), med(r["vtpss"])
vt = "with berth-vt" if vtrss > 0 else "no berth-vt running"
print("pty throughput, MB/s (%d MB of text to one client; median of %d runs)" % (MBYTES, RUNS))
print("  %-58s %8.1f" % ("bare PTY, one reader, no berth (the ceiling)", bare))
print("  %-58s %8.1f   (lost %d bytes, the most in a run)" % ("berth: data messages on the Unix socket (%s)" % vt,
                                                            bflood, max(r["blost"])))
if vtrss:
    print("  berth-vt kept up with the flood in %d of %d runs (else berthd dropped it)" % (sum(r["vtkept"]), RUNS))
print("  %-58s %8.1f" % ("tmux: control-mode client, %output", tflood))
print("  ratio berth/tmux %.2fx, berth/ceiling %.2fx, tmux/ceiling %.2fx" % (bflood / tflood, bflood / bare,
                                                                           tflood / bare))
print("keystroke echo latency into cat, ms (%d keys a run; medians of %d runs)   median      p99" % (KEYS, RUNS))
print("  %-58s %8.3f %8.3f" % ("berth: pty.input until the data message", bl50, bl99))
print("  %-58s %8.3f %8.3f" % ("tmux: send-keys -l until %output", tl50, tl99))
print("  ratio berth/tmux %.2fx median, %.2fx p99" % (bl50 / tl50, bl99 / tl99))
print("reattach with a 1 MiB backlog, ms (median of %d runs)" % RUNS)
print("  %-58s %8.1f   (lost %d)" % ("berth: new connection, attach from 0, read 1 MiB", bre, max(r["brelost"])))
print("  %-58s %8.1f   (%d bytes of text)" % ("tmux, approximate: new control client + capture-pane -S -", tre,
                                             med(r["tregot"])))
print("  ratio berth/tmux %.2fx" % (bre / tre))
print("memory per idle sh session, KiB of server RSS (%d sessions; median of %d runs)" % (SESSIONS, RUNS))
print("  %-58s %8.1f" % ("berthd, its growth", bmem))
if vtrss:
    print("  %-58s %8.1f   (PSS %.1f)" % ("berth-vt, the session's terminal model (a process each)", vtrss, vtpss))
print("  %-58s %8.1f" % ("tmux server, one window each", tmem))
print("  ratio berthd/tmux %.2fx" % (bmem / tmem), end="")
print(", berthd+berth-vt PSS/tmux %.1fx" % ((bmem + vtpss) / tmem) if vtrss else "")
EOF

"$py" "$bench_dir/bench.py" "$src" "$build" "$bench_dir"
