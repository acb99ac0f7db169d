"""runtime: how long berth takes to bring an agent runtime up, and to
clone a workspace, beside doing the same by hand.

  runtime.py SRC BUILD DIR RUNS FILES

TUI: runtime.start {pi, tui}, then pty.attach from offset 0 until the
output shows Pi's banner ("pi v"); by hand, `runuser -u agent -- pi` on a
PTY of this script's own until the same text. Server: runtime.start
{opencode, server} until GET /global/health with its password answers
200 (polled every 10 ms); by hand, `runuser -u agent -- opencode serve`
with a password of the same kind, polled the same way. Clone:
workspace.prepare of a repository of FILES files from an HTTPS server on
loopback until it answers; by hand, `runuser -u agent -- git clone` from
the same server into a fresh directory. RUNS times each, alternating
(the clones taking turns to go first), after one unmeasured start of
each runtime (its first start in a fresh HOME makes its files); medians
and ratios."""

import base64
import fcntl
import os
import pty
import pwd
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import termios
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

src, build, d = sys.argv[1], sys.argv[2], sys.argv[3]
RUNS, FILES = int(sys.argv[4]), int(sys.argv[5])
sys.path.insert(0, os.path.join(src, "tests", "integration"))
from harness import gitserver  # noqa: E402

USER = "agent"
pw = pwd.getpwnam(USER)
OPENCODE, PI = shutil.which("opencode"), shutil.which("pi")
BANNER = "pi v"
ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b.")


def drawn(out):
    """Whether terminal output out shows Pi's banner (its words come with
    colour and cursor sequences between them)."""
    return BANNER in ESCAPES.sub(b"", out).decode("utf-8", "replace")


def agent_dir(path):
    os.makedirs(path, exist_ok=True)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    return path


home = agent_dir(os.path.join(d, "home"))
workspace = agent_dir(os.path.join(d, "workspace"))
clones = agent_dir(os.path.join(d, "clones"))
os.chmod(d, 0o711)


def runtimes_config(cafile):
    env = "env = HOME=%s\nenv = GIT_SSL_CAINFO=%s\n" % (home, cafile)
    return ("\n[runtime pi]\ncommand = %s\nuser = %s\nworkspace = %s\n%stui =\n"
            "\n[runtime opencode]\ncommand = %s\nuser = %s\nworkspace = %s\n%s"
            "env = OPENCODE_DISABLE_AUTOUPDATE=1\n"
            "server = serve --hostname 127.0.0.1 --port {port}\n"
            "server_password_env = OPENCODE_SERVER_PASSWORD\n"
            % (PI, USER, workspace, env, OPENCODE, USER, workspace, env))


def health(port, password):
    """Whether OpenCode's server on port answers its health endpoint."""
    req = urllib.request.Request("http://127.0.0.1:%d/global/health" % port)
    req.add_header("Authorization", "Basic " + base64.b64encode(b"opencode:" + password.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


# -- through berth

def berth_tui(b):
    c = b.c
    t0 = time.monotonic()
    st = c.call("runtime.start", {"name": "pi", "mode": "tui"})
    i = c.send("pty.attach", {"id": st["pty"], "from_offset": 0})
    out = b""
    while not drawn(out):
        m = c.recv()
        if m.get("type") == "response" and m.get("id") == i and not m["ok"]:
            sys.exit("bench: pty.attach: %s" % m["error"])
        if m.get("type") == "data":
            out += m["data"]
    t = time.monotonic() - t0
    c.call("runtime.stop", {"name": "pi"})
    return t


def berth_server(b):
    t0 = time.monotonic()
    st = b.c.call("runtime.start", {"name": "opencode", "mode": "server"})
    benchlib.wait_until(lambda: health(st["port"], st["password"]), 60, "OpenCode's server through berth")
    t = time.monotonic() - t0
    b.c.call("runtime.stop", {"name": "opencode"})
    return t


def berth_clone(b, url, run):
    dest = os.path.join(clones, "berth-%d" % run)
    t0 = time.monotonic()
    b.c.call("workspace.prepare", {"runtime": "pi", "repo": url, "dir": dest})
    t = time.monotonic() - t0
    shutil.rmtree(dest)
    return t


# -- by hand

def as_agent(argv, extra_env=()):
    env = ["HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "USER=" + USER,
           "TERM=xterm-256color"] + list(extra_env)
    return ["runuser", "-u", USER, "--", "env", "-i"] + env + argv


def hand_tui():
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        # berth's sessions are 80x24 unless asked; a new PTY is 0x0.
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.chdir(workspace)
        argv = as_agent([PI])
        os.execvp(argv[0], argv)
    out = b""
    deadline = t0 + 60
    while not drawn(out):
        if time.monotonic() > deadline:
            sys.exit("bench: Pi's banner did not come by hand")
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            out += os.read(fd, 65536)
    t = time.monotonic() - t0
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(fd)
    return t


def hand_server():
    port = benchlib.free_port()
    password = base64.b16encode(os.urandom(16)).decode()
    t0 = time.monotonic()
    p = subprocess.Popen(as_agent([OPENCODE, "serve", "--hostname", "127.0.0.1", "--port", str(port)],
                                  ["OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_SERVER_PASSWORD=" + password]),
                         cwd=workspace, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    benchlib.wait_until(lambda: health(port, password), 60, "OpenCode's server by hand")
    t = time.monotonic() - t0
    os.killpg(p.pid, signal.SIGTERM)
    p.wait(10)
    return t


def hand_clone(url, cafile, run):
    dest = os.path.join(clones, "hand-%d" % run)
    t0 = time.monotonic()
    subprocess.run(as_agent(["git", "clone", "-q", url, dest], ["GIT_SSL_CAINFO=" + cafile]),
                   check=True, stdin=subprocess.DEVNULL)
    t = time.monotonic() - t0
    shutil.rmtree(dest)
    return t


def report(what, berth, hand, peer):
    bm, hm = statistics.median(berth), statistics.median(hand)
    print("%-34s berth %8.1f ms   %-22s %8.1f ms   ratio %.2fx" % (what, bm * 1000, peer, hm * 1000, bm / hm))


def big_repo(srv):
    """A repository of FILES files of 4 KiB of text each, one commit:
    its URL."""
    repo = srv.repo("big")
    for i in range(FILES):
        path = os.path.join(repo.work, "src", "d%02d" % (i % 50), "f%05d.txt" % i)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(base64.b64encode(os.urandom(3072)).decode())
    gitserver.git("-C", repo.work, "add", "-A")
    gitserver.git("-C", repo.work, "commit", "-q", "-m", "files")
    gitserver.git("-C", repo.work, "push", "-q", "origin", "main")
    return srv.url("big")


def main():
    srv = gitserver.GitServer()
    url = big_repo(srv)
    b = benchlib.Berth(src, build, d, 0, services=runtimes_config(srv.cafile))
    try:
        berth_tui(b), hand_tui(), berth_server(b), hand_server()
        bt, ht, bs, hs, bc, hc = [], [], [], [], [], []
        for run in range(RUNS):
            bt.append(berth_tui(b))
            ht.append(hand_tui())
            bs.append(berth_server(b))
            hs.append(hand_server())
            # Each clone is slower than the one before it on the same
            # server (seen by hand alone too), so who goes first alternates.
            if run % 2 == 0:
                bc.append(berth_clone(b, url, run))
                hc.append(hand_clone(url, srv.cafile, run))
            else:
                hc.append(hand_clone(url, srv.cafile, run))
                bc.append(berth_clone(b, url, run))
        print("medians of %d runs; ratio = berth / by hand" % RUNS)
        report("Pi TUI drawn", bt, ht, "runuser pi")
        report("OpenCode server answering", bs, hs, "runuser opencode serve")
        report("clone of %d files" % FILES, bc, hc, "runuser git clone")
    finally:
        b.stop()
        srv.server.shutdown()
        shutil.rmtree(srv.root, ignore_errors=True)


main()
