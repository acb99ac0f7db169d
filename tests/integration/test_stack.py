"""The desktop image as shipped (images/desktop/berth.conf, with free ports
and a free display): booted under berthd as PID 1, strictly ready, each of
the six checks verified here without berth's help, noVNC showing the
desktop in a real browser, Playwright driving the desktop's Chromium
through the TCP relay, and every component killed in turn: readiness
drops with the right check and reason, the component comes back,
readiness returns, and the journal has it all."""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    BUILDDIR,
    PlainWs,
    SRCDIR,
    STATE_MARK,
    Sandbox,
    TestFailure,
    browser_script,
    case,
    desktop_user,
    expect,
    expect_eq,
    expect_in,
    free_display,
    free_port,
    http_get,
    note,
    run,
    run_program,
    wait_for,
)

CHECKS = ("rfb", "xfce", "cdp", "novnc", "cdp-relay", "cdp-ws")
READY_TIMEOUT = 90.0
CHROMIUM = "/usr/bin/chromium"


class Desktop:
    """The shipped config with this run's ports and display."""

    def __init__(self):
        desktop_user()
        self.display = free_display()
        self.cdp = free_port()
        self.relay = free_port()
        with open(os.path.join(SRCDIR, "images", "desktop", "berth.conf")) as f:
            text = f.read()
        subs = [
            ("/var/lib/berth/", STATE_MARK + "/"),
            ("127.0.0.1:9222", "127.0.0.1:%d" % self.cdp),
            ("BERTH_CDP_PORT=9222", "BERTH_CDP_PORT=%d" % self.cdp),
            ("127.0.0.1:9223", "127.0.0.1:%d" % self.relay),
            ("berth-xserver :1 ", "berth-xserver :%d " % self.display),
            ("--display :1", "--display :%d" % self.display),
            ("DISPLAY=:1", "DISPLAY=:%d" % self.display),
        ]
        for old, new in subs:
            expect(old in text, "the desktop config no longer has %r" % old)
            text = text.replace(old, new)
        self.config = text
        self.sb = Sandbox(config=text)
        self.rfb = os.path.join(self.sb.state_dir, "vnc", "rfb.sock")
        # The display takes its cookie: the X tools here read it (as root).
        os.environ["XAUTHORITY"] = os.path.join(self.sb.state_dir, "desktop", "Xauthority")
        self.token = self.sb.token
        self.auth = {"Authorization": "Bearer " + self.token}

    def readyz(self):
        status, _, body = http_get(self.sb.port, "/readyz")
        return status, json.loads(body)

    def wait_ready(self, timeout=READY_TIMEOUT):
        def ready():
            st, body = self.readyz()
            return body if st == 200 else None

        try:
            return wait_for(ready, timeout, "/readyz 200", 0.1)
        except TestFailure:
            raise TestFailure("not ready in %.0f s: %r" % (timeout, self.readyz()[1]))

    def pid_of(self, service):
        for s in self.sb.state()["services"]:
            if s["name"] == service:
                return s["pid"]
        raise TestFailure("no service %r" % service)


def browser_version(url, headers=None):
    """Browser.getVersion over a DevTools WebSocket at url."""
    ws = PlainWs(url, headers=headers)
    try:
        return ws.call("Browser.getVersion")
    finally:
        ws.close()


def rfb_handshake(path):
    """RFB by hand on the Unix socket at path: banner, None security,
    ServerInit, one update."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)

    def read(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise TestFailure("the RFB server closed after %r" % buf)
            buf += chunk
        return buf

    try:
        banner = read(12)
        s.sendall(b"RFB 003.008\n")
        types = read(read(1)[0])
        expect(1 in types, "no None security among %r" % types)
        s.sendall(b"\x01")
        expect_eq(read(4), b"\0\0\0\0", "SecurityResult")
        s.sendall(b"\x01")
        w, h = struct.unpack(">HH", read(4))
        read(16)
        read(struct.unpack(">I", read(4))[0])
        s.sendall(struct.pack(">BxHi", 2, 1, 0))
        s.sendall(struct.pack(">BBHHHH", 3, 0, 0, 0, 8, 8))
        msg = read(4)
        expect_eq(msg[0], 0, "the first server message after the request (FramebufferUpdate)")
        return banner, w, h
    finally:
        s.close()


@case("the shipped desktop boots to strict readiness; each check verified independently", timeout=180)
def boot_and_verify():
    d = Desktop()
    t0 = time.monotonic()
    body = d.wait_ready()
    note("strictly ready %.1f s after /healthz" % (time.monotonic() - t0))
    expect_eq(sorted(body["checks"]), sorted(CHECKS), "the checks /readyz waits for")
    for name in CHECKS:
        expect(body["checks"][name]["ok"], "%s not ok in a 200: %r" % (name, body))

    # rfb: the RFB server itself.
    banner, w, h = rfb_handshake(d.rfb)
    expect(banner.startswith(b"RFB 003."), "RFB banner %r" % banner)
    expect_eq((w, h), (1280, 800), "the framebuffer size")

    # xfce: the window manager's check window, the panel, the desktop.
    disp = ":%d" % d.display
    rc, out, _ = run_program(["xprop", "-display", disp, "-root", "_NET_SUPPORTING_WM_CHECK"])
    m = re.search(r"window id # (0x[0-9a-f]+)", out)
    expect(rc == 0 and m, "no _NET_SUPPORTING_WM_CHECK on the root: %r" % out)
    rc, out, _ = run_program(["xprop", "-display", disp, "-id", m.group(1), "_NET_WM_NAME"])
    expect_in("Xfwm4", out, "the window manager's name")
    rc, out, _ = run_program(["xwininfo", "-display", disp, "-root", "-tree"])
    expect_in("xfce4-panel", out, "the window tree")
    expect_in("xfdesktop", out, "the window tree")

    # cdp: Chromium itself.
    st, _, raw = http_get(d.cdp, "/json/version")
    expect_eq(st, 200, "Chromium's /json/version")
    version = browser_version(json.loads(raw)["webSocketDebuggerUrl"])
    expect_in("Chrome", version["product"], "Browser.getVersion's product")

    # novnc: the page and, through the relay, the RFB banner.
    st, _, page = http_get(d.sb.port, "/novnc/vnc.html", headers=d.auth)
    expect_eq(st, 200, "GET /novnc/vnc.html with the token")
    expect_in(b"noVNC", page, "the page")
    st, _, _ = http_get(d.sb.port, "/novnc/vnc.html")
    expect_eq(st, 401, "GET /novnc/vnc.html without the token")
    ws = PlainWs("ws://127.0.0.1:%d/novnc/websockify" % d.sb.port, headers=d.auth)
    first = ws.recv()
    ws.close()
    expect(bytes(first).startswith(b"RFB 003."), "the relay's first message %r" % first)

    # cdp-relay: /json/version names the relay, and the browser answers.
    st, _, raw = http_get(d.relay, "/json/version", headers=d.auth)
    expect_eq(st, 200, "the relay's /json/version")
    url = json.loads(raw)["webSocketDebuggerUrl"]
    expect(url.startswith("ws://127.0.0.1:%d/" % d.relay), "the relay's webSocketDebuggerUrl %r" % url)
    expect_eq(browser_version(url, d.auth)["product"], version["product"], "the product through the relay")
    st, _, _ = http_get(d.relay, "/json/version")
    expect_eq(st, 401, "the relay without the token")

    # cdp-ws: DevTools on the gateway's own WebSocket endpoint.
    got = browser_version("ws://127.0.0.1:%d/v1/cdp" % d.sb.port, d.auth)
    expect_eq(got["product"], version["product"], "the product through /v1/cdp")


@case("a real browser shows the desktop through the noVNC page; Playwright drives Chromium through the relay", timeout=240)
def real_browser():
    d = Desktop()
    d.wait_ready()
    url = "http://127.0.0.1:%d/novnc/?token=%s" % (d.sb.port, d.token)
    canvas = browser_script("novnc_canvas.js", url, CHROMIUM, "60000", timeout=120)
    note("noVNC canvas %dx%d, %d colours sampled" % (canvas["width"], canvas["height"], canvas["colours"]))
    expect_eq((canvas["width"], canvas["height"]), (1280, 800), "the canvas size")
    expect(canvas["colours"] > 1, "the canvas is blank")
    expect(d.token not in canvas["url"], "the token stayed in the page's address: %s" % canvas["url"])

    result = browser_script("cdp_connect.js", "http://127.0.0.1:%d" % d.relay, d.token)
    expect_eq(result["value"], [42, "berth", "relayed"], "what the page evaluated")
    # The desktop's Chromium is still there, and still the same one.
    expect_eq(d.readyz()[0], 200, "/readyz after Playwright left")


def check_events(d, name, after_seq, timeout):
    """Waits for check name to fail and then pass again, after after_seq;
    returns the failing event's reason."""
    down = d.sb.wait_event(
        lambda e: e["kind"] == "check.changed" and e["data"]["name"] == name and not e["data"]["ok"],
        timeout,
        after_seq + 1,
    )
    d.sb.wait_event(
        lambda e: e["kind"] == "check.changed" and e["data"]["name"] == name and e["data"]["ok"],
        READY_TIMEOUT,
        down["seq"] + 1,
    )
    return down["data"]["reason"]


def fault(d, what, service, pid, checks, words):
    """kill -9 pid, service's process; berthd journals its exit and starts
    it again; each of checks drops (reason with one of words for the
    first) and comes back, and /readyz is 200 again."""
    before = d.sb.state()["last_seq"]
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    exited = d.sb.wait_event(
        lambda e: e["kind"] == "service.exited" and e["data"]["name"] == service, 20, before + 1
    )
    expect_eq(exited["data"].get("signal"), signal.SIGKILL, "how %s's exit was journaled" % service)
    d.sb.wait_event(lambda e: e["kind"] == "service.started" and e["data"]["name"] == service, 20, exited["seq"])
    reasons = {}
    for name in checks:
        reasons[name] = check_events(d, name, before, 20)
    d.wait_ready()
    note("kill -9 %s: %s; ready again in %.1f s" % (what, reasons, time.monotonic() - t0))
    first = reasons[checks[0]].lower()
    expect(any(w in first for w in words), "%s: the %s check's reason %r names none of %r" % (what, checks[0], first, words))


@case("kill -9 the X and VNC server, the window manager, the panel, Chromium: readiness drops and returns", timeout=420)
def faults():
    d = Desktop()
    d.wait_ready()
    desktop_pid = d.pid_of("desktop")

    fault(d, "xfwm4", "wm", d.sb.host_pid(d.pid_of("wm")), ["xfce"], ["window manager", "wm"])
    fault(d, "xfce4-panel", "panel", d.sb.host_pid(d.pid_of("panel")), ["xfce"], ["panel"])
    browser = d.sb.host_pid(d.pid_of("browser"))
    fault(d, "chromium", "browser", browser, ["cdp", "cdp-relay", "cdp-ws"], ["connect", "refused", "reset", "cdp"])
    fault(
        d,
        "Xvnc",
        "xserver",
        d.sb.host_pid(d.pid_of("xserver")),
        ["rfb", "novnc", "xfce"],
        ["connect", "refused", "reset", "closed", "rfb"],
    )
    expect_eq(d.pid_of("desktop"), desktop_pid, "berth-desktop's pid (it reconnects, never exits)")


@case("berth-chromium removes a dead owner's profile lock, and keeps a live one's")
def chromium_lock():
    launcher = os.path.join(BUILDDIR, "berth-chromium")
    expect(os.access(launcher, os.X_OK), "no %s" % launcher)
    pw = desktop_user()
    d = tempfile.mkdtemp(prefix="berth-it-chromium-")
    os.chmod(d, 0o755)
    harness.track_closer(lambda: shutil.rmtree(d, ignore_errors=True))
    profile = os.path.join(d, "profile")
    os.makedirs(profile)
    os.chown(profile, pw.pw_uid, pw.pw_gid)
    # What a Chromium killed on another machine (or killed here) leaves.
    os.symlink("elsewhere-999999", os.path.join(profile, "SingletonLock"))
    port = free_port()
    env = dict(os.environ, DISPLAY=":0", BERTH_CHROMIUM_PROFILE=profile, BERTH_CDP_PORT=str(port))
    log = open(os.path.join(d, "first.log"), "w+")
    # Root gets no Chromium: without its sandbox it would be root's.
    rc, _, err = run_program([launcher, "--headless=new"], env=env)
    expect_eq(rc, 1, "berth-chromium as root (stderr %r)" % err)
    expect_in("refusing to run as root", err, "why")
    as_user = dict(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
    first = subprocess.Popen(
        [launcher, "--headless=new"], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, **as_user
    )
    harness.track_closer(lambda: (first.kill(), first.wait(), log.close()))
    wait_for(lambda: http_ok(port), 30, "the first Chromium's DevTools")
    lock = os.readlink(os.path.join(profile, "SingletonLock"))
    expect_eq(lock.rsplit("-", 1)[1], str(first.pid), "the lock's owner after the stale one was removed")
    log.seek(0)
    expect_in("removing the stale lock of elsewhere-999999", log.read(), "the launcher's word on it")
    # A second launcher on the same profile leaves the live owner's lock
    # alone (Chromium hands over to it and exits).
    env2 = dict(env, BERTH_CDP_PORT=str(free_port()))
    second = subprocess.run(
        [launcher, "--headless=new"], env=env2, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30, **as_user
    )
    err = second.stderr
    expect("removing the stale lock" not in err, "the live owner's lock was taken for stale: %s" % err[-500:])
    expect_eq(os.readlink(os.path.join(profile, "SingletonLock")), lock, "the lock after the second launch")
    expect(http_ok(port), "the first Chromium stopped answering")


def http_ok(port):
    try:
        return http_get(port, "/json/version", timeout=2)[0] == 200
    except OSError:
        return False


run()
