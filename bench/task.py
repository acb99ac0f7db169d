"""task: a task's output kept whole while a backend follows it, beside
tmux keeping a pane's output and the same program writing to a file.

  task.py SRC BUILD DIR RUNS MBYTES

The work: a shell script run as the user agent that writes MBYTES MB of
text lines (`yes | head -c`) to stdout as fast as it can, then exits 0.

berth: task.run of a `[runtime bench]` whose `task` runs the script; one
client of berthd's Unix socket, subscribed to events, task.attach'es
the agent stream from offset 0 as soon as task.run answers and reads
data messages to eof. Wall time from task.run until both the eof and
task.finished are in, MB/s, berthd's CPU s per MB (it keeps the file
and feeds the client). Then a new connection attaches from offset 0
and reads it all: replay MB/s.

tmux: a pane running the same script as the same user (setpriv), its
output processing off so the bytes are the program's, its output kept
in a file (`pipe-pane -o 'exec cat >> FILE'`), one control-mode client
(`tmux -C attach`) reading %output. The pane's shell waits for a go
file, so the pipe and the client are there before the first byte, runs
the program, writes its status to a file and stays (a pane that dies
loses what its control clients have not had yet). Wall time from go
until the client has every byte, the file holds all of it and the
status is written; CPU s per MB of the tmux server, and of it with the
pipe's cat (together they do what berthd does). berth's time counts
the start (the record, the cgroup, the spawn); tmux's begins with the
pane's shell already running. tmux replays nothing but its history
(2000 lines by default), so its replay is `cat FILE` of the piped file
read through a pipe.

floor: `sh -c 'SCRIPT N > FILE'` as the same user, wall time.

Each run starts berthd and a tmux server afresh and measures the three
in an order that rotates every run; medians over RUNS, ratios."""

import os
import pwd
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import children, cpu_s  # noqa: E402

src, build, d = sys.argv[1], sys.argv[2], sys.argv[3]
RUNS, MBYTES = int(sys.argv[4]), int(sys.argv[5])
FLOOD = MBYTES * 1000 * 1000
USER = "agent"
TEXT = "the quick brown fox jumps over the lazy dog 0123456789"
# A reader that waits this long for a byte ends the bench.
STALL = 60
AS_AGENT = ["setpriv", "--reuid=" + USER, "--regid=" + USER, "--init-groups"]

# A stopped bench still stops its berthd and tmux server (the finally below).
signal.signal(signal.SIGTERM, lambda *a: sys.exit("bench: terminated"))
pw = pwd.getpwnam(USER)


def agent_dir(path):
    os.makedirs(path, exist_ok=True)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    return path


workspace = agent_dir(os.path.join(d, "workspace"))
floor_dir = agent_dir(os.path.join(d, "floor"))
SCRIPT = os.path.join(d, "flood.sh")
with open(SCRIPT, "w") as f:
    f.write("# $1 bytes of text lines on stdout, as fast as they go.\nyes '%s' | head -c \"$1\"\n" % TEXT)
os.chmod(SCRIPT, 0o644)
RUNTIME = "\n[runtime bench]\ncommand = /bin/sh\nuser = %s\nworkspace = %s\ntask = %s {prompt}\n" % (
    USER, workspace, SCRIPT)


def fresh(path):
    if os.path.exists(path):
        os.unlink(path)
    return path


def size(path):
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


# ---- berth


def read_to_eof(c, name):
    """Reads the data messages of stream name from offset 0 to its eof,
    checking that each follows the last: the bytes read."""
    at = 0
    while True:
        m = c.recv()
        if m.get("type") == "data" and m["stream"] == name:
            if m["offset"] != at:
                sys.exit("bench: %s: offset %d after %d bytes" % (name, m["offset"], at))
            at += len(m["data"])
            if m.get("eof"):
                return at


def berth_run(b):
    """(wall s, eof s, berthd CPU s, replay s, berthd's replay CPU s)."""
    c = b.c
    c.s.settimeout(STALL)
    c.call("events.subscribe")
    cpu0 = cpu_s(b.pid)
    start = time.monotonic()
    task = c.call("task.run", {"runtime": "bench", "prompt": str(FLOOD)})
    if task["state"] != "running":
        sys.exit("bench: task.run: %r" % task)
    name = "task/%s/agent" % task["id"]
    i = c.send("task.attach", {"id": task["id"], "from_offset": 0})
    at, eof, fin = 0, None, None
    while eof is None or fin is None:
        m = c.recv()
        kind = m.get("type")
        if kind == "data" and m["stream"] == name:
            if m["offset"] != at:
                sys.exit("bench: %s: offset %d after %d bytes" % (name, m["offset"], at))
            at += len(m["data"])
            if m.get("eof"):
                eof = time.monotonic()
        elif kind == "event" and m["kind"] == "task.finished" and m["data"]["id"] == task["id"]:
            fin = m["data"]
        elif kind == "response" and m["id"] == i and not m["ok"]:
            sys.exit("bench: task.attach: %s" % m["error"])
    took = time.monotonic() - start
    cpu = cpu_s(b.pid) - cpu0
    if fin["state"] != "succeeded" or at != FLOOD:
        sys.exit("bench: the task ended %s (%s) with %d bytes of %d" % (fin["state"], fin["reason"], at, FLOOD))
    c.call("events.unsubscribe")

    r = b.connect()
    r.s.settimeout(STALL)
    cpu0 = cpu_s(b.pid)
    t0 = time.monotonic()
    r.call("task.attach", {"id": task["id"], "from_offset": 0})
    got = read_to_eof(r, name)
    replay = time.monotonic() - t0
    replay_cpu = cpu_s(b.pid) - cpu0
    r.close()
    if got != FLOOD:
        sys.exit("bench: the replay read %d bytes of %d" % (got, FLOOD))
    return took, eof - start, cpu, replay, replay_cpu


# ---- tmux


class Tmux:
    def __init__(self, run):
        self.name = "berth-bench-task-%d-%d" % (os.getpid(), run)
        self.conf = os.path.join(d, "tmux.conf")
        with open(self.conf, "w") as f:
            f.write("set -g status off\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        self.controls = []
        self.cmd("new-session", "-d", "-s", "bench", "-x", "80", "-y", "24", "sleep 100000")
        self.pid = int(self.cmd("display", "-p", "#{pid}"))
        self.socket = self.cmd("display", "-p", "#{socket_path}").strip()

    def cmd(self, *args):
        return subprocess.run(["tmux", "-L", self.name, "-f", self.conf] + list(args), env=self.env,
                              check=True, capture_output=True).stdout.decode()

    def control(self):
        c = Control(self)
        self.controls.append(c)
        return c

    def stop(self):
        # A control client a failure left unread would hold the server.
        for c in self.controls:
            if c.p.poll() is None:
                c.p.kill()
                c.p.wait()
        self.cmd("kill-server")
        if os.path.exists(self.socket):
            os.unlink(self.socket)


class Control:
    """A control-mode client: commands in, notifications out."""

    def __init__(self, t):
        self.p = subprocess.Popen(["tmux", "-L", t.name, "-f", t.conf, "-C", "attach", "-t", "bench"],
                                  env=t.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.buf = b""
        self.lines = []
        while not self.line().startswith(b"%session-changed"):
            pass

    def line(self):
        while not self.lines:
            if not select.select([self.p.stdout], [], [], STALL)[0]:
                sys.exit("bench: tmux's control client said nothing for %d s" % STALL)
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


def tmux_run(t):
    """(wall s, client s, server CPU s, its pipe's cat CPU s, replay s)."""
    go = fresh(os.path.join(d, "go-tmux"))
    done = fresh(os.path.join(d, "done-tmux"))
    out = fresh(os.path.join(d, "tmux.out"))
    # The pane outlives the program: tmux drops what its control clients
    # have not had yet of a pane that dies.
    wrapper = ("stty -opost; while [ ! -e %s ]; do sleep 0.002; done; %s /bin/sh %s %d; echo $? > %s; "
               "exec sleep 100000" % (go, " ".join(AS_AGENT), SCRIPT, FLOOD, done))
    pane = t.cmd("new-window", "-d", "-P", "-F", "#{pane_id}", "-c", workspace, wrapper).strip()
    t.cmd("pipe-pane", "-o", "-t", pane, "exec cat >> %s" % out)
    c = t.control()
    panes = {int(p) for p in t.cmd("list-panes", "-a", "-F", "#{pane_pid}").split()}
    pipes = [p for p in children(t.pid) if p not in panes]
    if len(pipes) != 1:
        sys.exit("bench: tmux's pipe-pane: %d processes" % len(pipes))
    cpu0, cat0 = cpu_s(t.pid), cpu_s(pipes[0])
    t0 = time.monotonic()
    open(go, "w").close()
    got = 0
    while got < FLOOD:
        got += unescaped_len(c.output(pane))
    client = time.monotonic() - t0
    while size(out) < FLOOD or size(done) == 0:
        time.sleep(0.001)
    took = time.monotonic() - t0
    cpu, cat = cpu_s(t.pid) - cpu0, cpu_s(pipes[0]) - cat0
    c.close()
    with open(done) as f:
        status = f.read().strip()
    if got != FLOOD or size(out) != FLOOD or status != "0":
        sys.exit("bench: tmux: the client read %d bytes, the file holds %d, of %d; the program's status %s"
                 % (got, size(out), FLOOD, status))
    t.cmd("kill-pane", "-t", pane)

    t0 = time.monotonic()
    p = subprocess.Popen(["cat", out], stdout=subprocess.PIPE)
    got = 0
    while True:
        chunk = os.read(p.stdout.fileno(), 1 << 20)
        if not chunk:
            break
        got += len(chunk)
    p.wait()
    replay = time.monotonic() - t0
    if got != FLOOD:
        sys.exit("bench: cat read %d bytes of %d" % (got, FLOOD))
    os.unlink(out)
    return took, client, cpu, cat, replay


# ---- the floor


def floor_run():
    out = fresh(os.path.join(floor_dir, "floor.out"))
    t0 = time.monotonic()
    subprocess.run(AS_AGENT + ["/bin/sh", "-c", "/bin/sh %s %d > %s" % (SCRIPT, FLOOD, out)], cwd=workspace,
                   check=True)
    took = time.monotonic() - t0
    if size(out) != FLOOD:
        sys.exit("bench: the floor wrote %d bytes of %d" % (size(out), FLOOD))
    os.unlink(out)
    return took


# ---- runs


def main():
    r = {k: [] for k in ("bwall", "beof", "bcpu", "brep", "brepcpu", "twall", "tclient", "tcpu", "tcat", "trep",
                         "floor")}

    def berth(run):
        b = benchlib.Berth(src, build, d, run, services=RUNTIME)
        try:
            for k, v in zip(("bwall", "beof", "bcpu", "brep", "brepcpu"), berth_run(b)):
                r[k].append(v)
        finally:
            b.stop()
            shutil.rmtree(b.dir)

    def tmux(run):
        t = Tmux(run)
        try:
            for k, v in zip(("twall", "tclient", "tcpu", "tcat", "trep"), tmux_run(t)):
                r[k].append(v)
        finally:
            t.stop()

    def floor(run):
        r["floor"].append(floor_run())

    kinds = [berth, tmux, floor]
    for run in range(RUNS):
        at = run % len(kinds)
        for fn in kinds[at:] + kinds[:at]:
            fn(run)
        print("run %d of %d done" % (run + 1, RUNS), file=sys.stderr)

    med = statistics.median
    bwall, beof, twall, tclient, floor_s = (med(r[k]) for k in ("bwall", "beof", "twall", "tclient", "floor"))
    bcpu, tcpu = (med(r[k]) / MBYTES * 1000 for k in ("bcpu", "tcpu"))
    tboth = med(a + b for a, b in zip(r["tcpu"], r["tcat"])) / MBYTES * 1000
    brep, trep = MBYTES / med(r["brep"]), MBYTES / med(r["trep"])
    print("a task's output, %d MB of text kept whole while one client follows it (medians of %d runs)"
          % (MBYTES, RUNS))
    row = "  %-64s %8.3f %8.1f"
    print("  %-64s %8s %8s %10s" % ("", "wall s", "MB/s", "CPU ms/MB"))
    print((row + " %10.2f") % ("berth: task.run to eof and task.finished, berthd's CPU", bwall, MBYTES / bwall, bcpu))
    print(row % ("  task.run to the client's eof", beof, MBYTES / beof))
    print((row + " %10.2f") % ("tmux: go to the file whole and the status written; server CPU", twall, MBYTES / twall,
                               tcpu))
    print(row % ("  go to the control client's last %output", tclient, MBYTES / tclient))
    print("  %-64s %8s %8s %10.2f" % ("  CPU of the server and its pipe-pane cat together", "", "", tboth))
    print(row % ("floor: sh -c 'prog > file', no reader", floor_s, MBYTES / floor_s))
    print("  ratio berth/tmux %.2fx MB/s, %.2fx CPU per MB (against the server and cat); berth/floor %.2fx MB/s"
          % (twall / bwall, bcpu / tboth, floor_s / bwall))
    print("replay of the whole output after its end, MB/s (median of %d runs)" % RUNS)
    print("  %-64s %8.1f   (berthd %.2f CPU ms/MB)" % ("berth: a new connection, task.attach from 0, to eof", brep,
                                                       med(r["brepcpu"]) / MBYTES * 1000))
    print("  %-64s %8.1f" % ("tmux has none beyond its history: cat FILE of the piped file", trep))
    print("  ratio berth/cat %.2fx" % (brep / trep))


main()
