"""The desktop from an attacker's side. berth-desktop runs as the desktop
user and reaches berthd only through the connections berthd hands it at
spawn; a program in its place (here a stand-in run the same way, as the
same user) can call the desktop's own ops on them and nothing else: no
proc.start, fs.read, service.stop, no check but its own, no file to
publish that its user does not own, no oversized or foreign event.

The shipped image (images/desktop/berth.conf) from another local user's
side, nobody's: the display's names cannot be taken over, and the X
server comes back whatever nobody leaves in its way."""

import json
import os
import pwd
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    DESKTOP_USER,
    SRCDIR,
    STATE_MARK,
    Sandbox,
    desktop_user,
    forget_display,
    free_display,
    free_port,
    PlainWs,
    http_get,
    note,
    proc_argv,
    proc_children,
    run_program,
    case,
    expect,
    expect_eq,
    run,
    wait_for,
)

# What the stand-in does on each handed connection: every request, and
# berthd's answer (ok, or the error's code), as JSON lines.
STAND_IN = r'''
import json, os, socket, struct, sys
import msgpack

out = open(sys.argv[1], "w")
def conn(name):
    return socket.socket(fileno=int(os.environ[name]))
def ask(s, i, op, args):
    b = msgpack.packb({"type": "request", "id": i, "op": op, "args": args})
    s.sendall(struct.pack(">I", len(b)) + b)
    while True:
        n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
        m = msgpack.unpackb(s.recv(n, socket.MSG_WAITALL), raw=False)
        if m.get("type") == "response" and m.get("id") == i:
            return m
def tell(where, op, m):
    code = None if m["ok"] else m["error"]["code"]
    out.write(json.dumps({"conn": where, "op": op, "code": code}) + "\n")
    out.flush()
mine = sys.argv[2]
plan = [
    ("hello", {"version": "berth.v1", "client": "stand-in"}),
    ("ping", {}),
    ("desktop.provide", {}),
    ("check.report", {"name": "xfce", "ok": True}),
    ("check.report", {"name": "other", "ok": True}),
    ("proc.start", {"argv": ["/bin/sh", "-c", "id > /tmp/pwned"]}),
    ("fs.read", {"path": "/etc/shadow"}),
    ("service.stop", {"name": "other"}),
    ("service.signal", {"name": "other", "signal": "KILL"}),
    ("secrets.list", {}),
    ("desktop.emit", {"kind": "record.failed", "data": {"x": "y" * 20000}}),
    ("desktop.emit", {"kind": "service.failed", "data": {"name": "other"}}),
    ("desktop.emit", {"kind": "record.failed", "data": {"id": "r1"}}),
    ("artifact.publish", {"path": sys.argv[3], "name": "token"}),
    ("artifact.publish", {"path": mine, "name": "mine"}),
]
for where in ("BERTH_REPORT_FD", "BERTH_SERVE_FD"):
    s = conn(where)
    for i, (op, args) in enumerate(plan, 1):
        tell(where, op, ask(s, i, op, args))
out.write("done\n")
out.close()
import time
time.sleep(3600)
'''


EXPECTED = [
    None,  # hello
    None,  # ping
    None,  # desktop.provide
    None,  # its own check
    "forbidden",  # another check
    "forbidden",  # proc.start
    "forbidden",  # fs.read
    "forbidden",  # service.stop
    "forbidden",  # service.signal
    "forbidden",  # secrets.list
    "too_large",  # an oversized event
    "bad_args",  # an event not the desktop's
    None,  # its own event
    "forbidden",  # a file of root's
    None,  # a file of its own
]


@case("berth-desktop's handed connections refuse all but the desktop's own ops")
def handed_connection_limited():
    pw = desktop_user()
    work = tempfile.mkdtemp(prefix="berth-it-desk-")
    os.chmod(work, 0o755)
    script = os.path.join(work, "stand_in.py")
    with open(script, "w") as f:
        f.write(STAND_IN)
    results = os.path.join(work, "results")
    open(results, "w").close()
    os.chown(results, pw.pw_uid, pw.pw_gid)
    mine = os.path.join(work, "mine.txt")
    with open(mine, "w") as f:
        f.write("the desktop user's own file\n")
    os.chown(mine, pw.pw_uid, pw.pw_gid)
    secret = os.path.join(work, "secret.txt")
    with open(secret, "w") as f:
        f.write("root's\n")
    os.chmod(secret, 0o600)
    config = (
        "[check xfce]\nready = report\nrequired = no\n\n"
        "[check other]\nready = report\nrequired = no\n\n"
        "[service desktop]\ncommand = /usr/bin/python3 %s %s %s %s\n"
        "user = %s\ndesktop_check = xfce\nrequired = no\n\n" % (script, results, mine, secret, DESKTOP_USER)
    )
    with Sandbox(extra=config) as sb:
        wait_for(lambda: open(results).read().endswith("done\n"), 20, "the stand-in's tries")
        lines = [json.loads(x) for x in open(results).read().splitlines() if x != "done"]
        for where in ("BERTH_REPORT_FD", "BERTH_SERVE_FD"):
            codes = [x["code"] for x in lines if x["conn"] == where]
            expect_eq(codes, EXPECTED, "the answers on %s" % where)
        expect(not os.path.exists("/tmp/pwned"), "proc.start ran nothing")
        c = sb.unix()
        expect_eq(c.call("service.status", {"name": "xfce"})["state"], "ready", "the desktop's own check, reported")
        other = c.call("service.status", {"name": "other"})
        expect(other["state"] != "ready", "the other check stays unreported: %r" % other)


# The gateway's group, which the VNC socket's directory is shared with.
VNC_GROUP = "berth-gateway"


def shipped_config(n):
    """The shipped desktop image's config with display n and free ports."""
    cdp, relay = free_port(), free_port()
    with open(os.path.join(SRCDIR, "images", "desktop", "berth.conf")) as f:
        text = f.read()
    for old, new in [
        ("/var/lib/berth/", STATE_MARK + "/"),
        ("127.0.0.1:9222", "127.0.0.1:%d" % cdp),
        ("BERTH_CDP_PORT=9222", "BERTH_CDP_PORT=%d" % cdp),
        ("127.0.0.1:9223", "127.0.0.1:%d" % relay),
        ("berth-xserver :1 ", "berth-xserver :%d " % n),
        ("--display :1", "--display :%d" % n),
        ("DISPLAY=:1", "DISPLAY=:%d" % n),
    ]:
        expect(old in text, "the desktop config no longer has %r" % old)
        text = text.replace(old, new)
    return text


class Shipped:
    """The shipped desktop image on display n (default: a free one),
    booted; with wait, until /readyz says 200. Leaving stops it and
    forgets the display."""

    def __init__(self, n=None, wait=True):
        desktop_user()
        if subprocess.run(["getent", "group", VNC_GROUP], capture_output=True).returncode != 0:
            subprocess.run(["groupadd", "--system", VNC_GROUP], check=True)
        self.n = free_display() if n is None else n
        self.wait = wait

    def __enter__(self):
        self.sb = Sandbox(config=shipped_config(self.n))
        try:
            if self.wait:
                self.wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self.sb

    def __exit__(self, *exc):
        self.sb.close()
        forget_display(self.n)

    def wait_ready(self, timeout=90):
        wait_for(lambda: http_get(self.sb.port, "/readyz")[0] == 200, timeout, "/readyz 200", 0.2)


def service_state(sb, name):
    return sb.unix().call("service.status", {"name": name})["state"]


# A squatter on an X display's abstract name: binds it, listens, says
# "bound", and accepts whatever comes (reading what a client sends: its
# cookie) until a line on stdin; then says how many connections and bytes
# it got and lets go.
SQUATTER = r"""
import select, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind("\0" + sys.argv[1])
s.listen(64)
print("bound", flush=True)
conns = got = 0
while True:
    r, _, _ = select.select([s, sys.stdin], [], [], 0.1)
    if sys.stdin in r:
        break
    if s in r:
        c, _ = s.accept()
        conns += 1
        c.settimeout(0.5)
        try:
            got += len(c.recv(4096))
        except OSError:
            pass
        c.close()
print(conns, got, flush=True)
"""


class Squatter:
    """SQUATTER as nobody on display n's abstract name."""

    def __init__(self, n):
        self.p = subprocess.Popen(
            ["/usr/bin/python3", "-c", SQUATTER, "/tmp/.X11-unix/X%d" % n],
            user="nobody", group="nogroup", extra_groups=[],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        expect_eq(self.p.stdout.readline().strip(), "bound", "nobody binding @/tmp/.X11-unix/X%d" % n)

    def release(self):
        """Lets go: (connections, bytes) the squatter received."""
        out, _ = self.p.communicate("release\n", timeout=10)
        conns, got = out.split()
        return int(conns), int(got)


# The desktop's X clients: each must get back onto the display.
X_CLIENTS = ("wm", "panel", "backdrop", "settings", "desktop", "browser")


def desktop_works(sb):
    """Every X client is ready and berth-desktop answers a screenshot."""
    wait_for(lambda: http_get(sb.port, "/readyz")[0] == 200, 90, "/readyz 200 again", 0.2)
    # /readyz answers for the checks, not for every client: one that died
    # while the name was taken (the settings daemon, which no check
    # covers) may still be in its restart delay.
    for name in X_CLIENTS:
        wait_for(lambda: service_state(sb, name) == "ready", 30, "service %s ready" % name, 0.2)
    r = sb.unix().call("desktop.screenshot", {}, timeout=20)
    expect(r["width"] == 1280 and len(r["data"]) > 0, "a screenshot of the display: %r" % {k: r[k] for k in ("width", "height", "format")})


def squat_then_release(sb, sq, hold_s):
    """Keeps sq on the name until the X server is ready and hold_s more,
    then lets go and checks that no client came to it."""
    wait_for(lambda: service_state(sb, "xserver") == "ready", 60, "the X server ready", 0.1)
    time.sleep(hold_s)
    conns, got = sq.release()
    expect_eq((conns, got), (0, 0), "connections and bytes (a cookie) the squatter received")


@case("nobody squatting the display's abstract name while X restarts receives no client; the desktop comes back", timeout=240)
def abstract_name_squatted_on_restart():
    desk = Shipped()
    with desk as sb:
        sq = Squatter(desk.n)
        sb.unix().call("service.restart", {"name": "xserver"})
        squat_then_release(sb, sq, 3)
        desktop_works(sb)


@case("nobody squatting the display's abstract name before the desktop starts receives no client", timeout=240)
def abstract_name_squatted_at_boot():
    n = free_display()
    sq = Squatter(n)
    with Shipped(n, wait=False) as sb:
        squat_then_release(sb, sq, 3)
        desktop_works(sb)



# Keeps trying to make an X display's lock file in the shared /tmp, naming
# a live process of its own (so that the lock is not stale to an X
# server), until a line on stdin; then says how many times it made it.
LOCKER = r"""
import os, select, sys
path = sys.argv[1]
made = 0
while True:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        os.write(fd, b"%10d\n" % os.getpid())
        os.close(fd)
        made += 1
    except FileExistsError:
        pass
    if select.select([sys.stdin], [], [], 0.01)[0]:
        break
print(made, flush=True)
"""


@case("nobody keeping the display's lock file in /tmp does not keep the X server from restarting", timeout=240)
def lock_file_kept():
    desk = Shipped()
    with desk as sb:
        lock = "/tmp/.X%d-lock" % desk.n
        p = subprocess.Popen(
            ["/usr/bin/python3", "-c", LOCKER, lock],
            user="nobody", group="nogroup", extra_groups=[],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        try:
            started = sb.unix().call("service.status", {"name": "xserver"}).get("pid")
            sb.unix().call("service.restart", {"name": "xserver"})

            def back():
                st = sb.unix().call("service.status", {"name": "xserver"})
                return st["state"] == "ready" and st.get("pid") != started

            wait_for(back, 60, "the X server ready again, with nobody's lock in /tmp", 0.1)
        finally:
            out, _ = p.communicate("stop\n", timeout=10)
        try:
            expect(int(out) >= 1 and os.stat(lock).st_uid == pwd.getpwnam("nobody").pw_uid, "nobody's lock in /tmp")
        finally:
            try:
                os.unlink(lock)
            except FileNotFoundError:
                pass
        desktop_works(sb)



def as_user(user, group, argv):
    """Runs argv as user: (status, stdout, stderr)."""
    p = subprocess.run(argv, user=user, group=group, extra_groups=[], capture_output=True, text=True, timeout=20)
    return p.returncode, p.stdout, p.stderr


def pid_user(pid):
    """The name of the real user of host process pid."""
    with open("/proc/%d/status" % pid) as f:
        uid = next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
    return pwd.getpwuid(uid).pw_name


def service_pid(sb, name):
    """The host pid of service name's process."""
    return sb.host_pid(sb.unix().call("service.status", {"name": name})["pid"])


def descendants(pid):
    """Host pids of every process below pid."""
    out, todo = [], [pid]
    while todo:
        kids = proc_children(todo.pop())
        out += kids
        todo += kids
    return out


# Connects to the Unix socket argv[1]; exits 1 printing errno if it cannot.
TRY_CONNECT = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "try:\n"
    "    s.connect(sys.argv[1])\n"
    "except OSError as e:\n"
    "    print(e.errno)\n"
    "    sys.exit(1)\n"
)


@case("nobody reaches neither the VNC server nor the display; the desktop is the agent's", timeout=180)
def display_closed():
    desk = Shipped()
    with desk as sb:
        n = desk.n
        xvnc = service_pid(sb, "xserver")
        expect_eq(os.path.basename(proc_argv(xvnc)[0]), "Xvnc", "the xserver service's program")
        rc, out, _ = run_program(["ss", "-Hltnp"])
        mine = [line for line in out.splitlines() if "pid=%d," % xvnc in line]
        expect_eq(mine, [], "Xvnc's TCP listeners")
        rc, out, _ = run_program(["ss", "-Hxlp"])
        expect("@/tmp/.X11-unix/X%d " % n not in out, "an abstract X socket for :%d is open" % n)
        expect(any("/tmp/.X11-unix/X%d " % n in line and "pid=%d," % xvnc in line for line in out.splitlines()),
               "Xvnc's X socket file is not listening")
        rfb = os.path.join(sb.state_dir, "vnc", "rfb.sock")
        expect(any(rfb in line and "pid=%d," % xvnc in line for line in out.splitlines()), "Xvnc's RFB socket")
        rc, out, err = as_user("nobody", "nogroup", ["/usr/bin/python3", "-c", TRY_CONNECT, rfb])
        expect_eq((rc, out.strip()), (1, "13"), "nobody connecting to the RFB socket (EACCES; %s)" % err)
        rc, out, err = as_user("nobody", "nogroup", ["xdpyinfo", "-display", ":%d" % n])
        expect(rc != 0 and "unable to open display" in err, "nobody opened :%d: %r" % (n, err))
        expect_eq(pid_user(xvnc), DESKTOP_USER, "Xvnc's user")
        for name in X_CLIENTS:
            expect_eq(pid_user(service_pid(sb, name)), DESKTOP_USER, "%s's user" % name)


@case("berth-desktop runs as the agent, which cannot reach berthd's socket", timeout=180)
def desktop_is_agent():
    with Shipped() as sb:
        pid = service_pid(sb, "desktop")
        expect_eq(os.path.basename(proc_argv(pid)[0]), "berth-desktop", "the desktop service's program")
        expect_eq(pid_user(pid), DESKTOP_USER, "berth-desktop's user")
        rc, out, err = as_user(DESKTOP_USER, DESKTOP_USER, ["/usr/bin/python3", "-c", TRY_CONNECT, sb.socket])
        expect_eq((rc, out.strip()), (1, "13"), "the agent connecting to berthd's socket (EACCES; %s)" % err)


def ns(pid, kind):
    return os.readlink("/proc/%d/ns/%s" % (pid, kind))


@case("Chromium runs as the agent in its own sandbox", timeout=180)
def chromium_sandboxed():
    with Shipped() as sb:
        browser = service_pid(sb, "browser")
        procs = [browser] + descendants(browser)
        # Chromium rewrites its command line into one string (its title).
        argvs = {p: (" ".join(proc_argv(p) or [])).split() for p in procs}
        for p in procs:
            expect("--no-sandbox" not in argvs[p], "Chromium without its sandbox: %r" % argvs[p][:3])
            expect_eq(pid_user(p), DESKTOP_USER, "the user of Chromium's %r" % argvs[p][:2])
        sandboxed = [p for p in procs if "--type=zygote" in argvs[p] and "--no-zygote-sandbox" not in argvs[p]]
        sandboxed += [p for p in procs if "--type=renderer" in argvs[p]]
        expect(sandboxed, "no sandboxed zygote or renderer: %r" % [a[:2] for a in argvs.values()])
        inside = [p for p in sandboxed if ns(p, "user") != ns(browser, "user") and ns(p, "pid") != ns(browser, "pid")]
        expect(inside, "no zygote or renderer in user and PID namespaces of its own (the namespace sandbox)")


def page_text(sb, url):
    """What a new tab on url shows (document.body.innerText), driven through
    the gateway's DevTools relay."""
    ws = PlainWs("ws://127.0.0.1:%d/v1/cdp" % sb.port, token=sb.token)
    try:
        target = ws.call("Target.createTarget", {"url": url})["targetId"]
        session = ws.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

        def text():
            ws.next_id += 1
            i = ws.next_id
            ws.send(json.dumps({"id": i, "sessionId": session, "method": "Runtime.evaluate",
                                "params": {"expression": "document.readyState == 'complete' ? "
                                           "document.body.innerText : null", "returnByValue": True}}))
            while True:
                m = json.loads(ws.recv(20))
                if m.get("id") == i:
                    return m.get("result", {}).get("result", {}).get("value")

        out = wait_for(text, 20, "the page of %s loaded" % url, 0.2)
        ws.call("Target.closeTarget", {"targetId": target})
        return out
    finally:
        ws.close()


@case("a tab on the token file cannot read it, where it reads a file of the agent's", timeout=180)
def token_unreadable():
    with Shipped() as sb:
        mine = os.path.join(sb.dir, "readable.txt")
        with open(mine, "w") as f:
            f.write("a file any user may read\n")
        os.chmod(mine, 0o644)
        expect("a file any user may read" in page_text(sb, "file://" + mine), "a tab reading a readable file")
        token = sb.token
        expect(len(token) >= 16, "a token to look for")
        for path in (sb.token_file, os.path.join(sb.state_dir, "token")):
            if os.path.exists(path):
                shown = page_text(sb, "file://" + path)
                expect(token not in shown, "the token shown in a tab on %s" % path)
                note("a tab on %s shows %r" % (path, shown[:120]))


if __name__ == "__main__":
    run()
