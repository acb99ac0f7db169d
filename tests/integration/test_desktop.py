"""berth-desktop and the xfce check, against a real X server and real XFCE
parts run by berthd: Xvfb, xfwm4, xfce4-panel and xfdesktop. The check
turns ok; a killed window manager or panel is named in the reason and the
check comes back once berthd restarts it; a killed X server leaves
berth-desktop running (Xlib's fatal I/O error does not end it) and the
check comes back with the server. An X server that drops the connection
inside XOpenDisplay is survived too. Against a stand-in berthd, the
reporter's messages are checked byte for byte: sent on change, sent again
on a new connection, retried after a refusal, and a last word at exit."""

import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness.clients import pump  # noqa: E402
from harness import (  # noqa: E402
    DESKTOP,
    SANITIZER_MARKS,
    TestFailure,
    X11_DIR,
    case,
    desktop_service,
    display_free,
    expect,
    expect_eq,
    expect_in,
    forget_display,
    free_display,
    host_pid,
    http_json,
    need,
    note,
    pid_alive,
    proc_status,
    run,
    run_program,
    scratch,
    track_closer,
    wait_for,
    xvfb_service,
)

PANEL_LAYOUT = "/etc/xdg/xfce4/panel/default.xml"


class Desktop(harness.Desk):
    """A scratch home (with the panel's default layout, so that the panel
    does not stop to ask for one), a display number, and the config that
    runs Xvfb, a D-Bus session bus, berth-desktop and (with xfce) xfwm4,
    xfce4-panel and xfdesktop under berthd, with the xfce check. Entered
    as a Desk."""

    def __init__(self, xfce=True):
        super().__init__()
        self.xfce = xfce
        d = scratch()
        self.home = os.path.join(d, "home")
        xml = os.path.join(self.home, ".config", "xfce4", "xfconf", "xfce-perchannel-xml")
        os.makedirs(xml)
        if os.path.exists(PANEL_LAYOUT):
            shutil.copy(PANEL_LAYOUT, os.path.join(xml, "xfce4-panel.xml"))
        self.bus = os.path.join(d, "bus")
        # Where berth-desktop looks: the real display, or a stand-in.
        self.desktop_display = self.display

    def session_env(self):
        return (
            "env = DISPLAY=:%d\nenv = HOME=%s\nenv = DBUS_SESSION_BUS_ADDRESS=unix:path=%s\n"
            % (self.display, self.home, self.bus)
        )

    def part(self, name, command):
        # Restarted a second after a kill: long enough to look at the
        # display without it, with xprop and xdotool, before it is back.
        return (
            "[service %s]\ncommand = %s\n%safter = xvfb dbus\nrequired = no\n"
            "backoff_min_ms = 1000\nbackoff_max_ms = 2000\nmax_deaths = 50\n\n" % (name, command, self.session_env())
        )

    def config(self):
        text = xvfb_service(self.display, backoff_ms=(300, 1000))
        text += (
            "[service dbus]\ncommand = dbus-daemon --session --nofork --nopidfile "
            "--address=unix:path=%s\nready = exec /usr/bin/test -S %s\nrequired = no\n\n" % (self.bus, self.bus)
        )
        if self.xfce:
            text += self.part("xfwm4", "xfwm4 --compositor=off")
            text += self.part("panel", "xfce4-panel")
            text += self.part("xfdesktop", "xfdesktop")
        text += "[check xfce]\nready = report\n\n"
        text += desktop_service(self.desktop_display, after=None)
        return text


def check_of(sb, name="xfce"):
    checks = sb.state()["checks"]
    expect_in(name, checks, "state's checks")
    return checks[name]


def wait_check(sb, ok, words=None, from_seq=1, timeout=60.0):
    """Waits for a check.changed of the xfce check to ok (and a reason
    holding words) at or after from_seq; returns its data."""

    def match(ev):
        if ev["kind"] != "check.changed" or ev["data"]["name"] != "xfce":
            return False
        note("xfce: %s %s" % (ev["data"]["ok"], ev["data"]["reason"]))
        return ev["data"]["ok"] == ok and (words is None or words in ev["data"]["reason"])

    return sb.wait_event(match, timeout, from_seq)["data"]


def last_seq(sb):
    return sb.state()["last_seq"]


def xprop(display, *args):
    return run_program(["xprop", "-display", ":%d" % display] + list(args))


def wm_check_window(display):
    """The root's _NET_SUPPORTING_WM_CHECK, read by xprop: an id or None."""
    status, out, _ = xprop(display, "-root", "_NET_SUPPORTING_WM_CHECK")
    note("xprop -root: %d %s" % (status, out.strip()))
    m = re.search(r"window id # (0x[0-9a-f]+)", out)
    return m.group(1) if status == 0 and m else None


def wm_check_alive(display, wid):
    """Whether the window wid exists and names itself, as xprop sees it."""
    status, out, err = xprop(display, "-id", wid, "_NET_SUPPORTING_WM_CHECK")
    note("xprop -id %s: %d %s %s" % (wid, status, out.strip(), err.strip()[:200]))
    return status == 0 and wid in out


def visible_windows(display, cls):
    status, out, _ = run_program(
        ["xdotool", "search", "--onlyvisible", "--class", cls], env=dict(os.environ, DISPLAY=":%d" % display)
    )
    return out.split() if status == 0 else []


def live_wm(display):
    """The root's check window if xprop finds it alive, else None."""
    wid = wm_check_window(display)
    return wid if wid is not None and wm_check_alive(display, wid) else None


def wait_ready(sb, desk, from_seq=1, settle=1.5, timeout=60.0):
    """The check goes ok (at or after from_seq) and stays so for settle
    seconds; then xprop finds a live window manager and /readyz says ok.
    (Freshly started, the XFCE parts may briefly take a window back: the
    check says so, and the desktop is not taken as up before it settles.)"""
    wait_check(sb, True, None, from_seq, timeout)
    held = {}

    def settled():
        check = check_of(sb)
        if not check["ok"]:
            held.clear()
            return False
        first = held.setdefault(check["since"], time.monotonic())
        return time.monotonic() - first >= settle

    wait_for(settled, timeout, "the xfce check to stay ok for %.1f s" % settle, 0.1)
    expect(live_wm(desk.display), "xprop finds no live window manager")
    status, body = http_json(sb.port, "/readyz")
    expect_eq(status, 200, "/readyz status (body %r)" % body)
    expect(body["checks"]["xfce"]["ok"], "/readyz's xfce check: %r" % body)


def no_exit_of(sb, name):
    exits = [e for e in sb.events() if e["kind"] == "service.exited" and e["data"]["name"] == name]
    expect(not exits, "%s exited: %r" % (name, exits))


@case("xfce: ok once X and XFCE are up; a killed window manager, then panel, is named and comes back", timeout=180)
def xfce_parts():
    need("Xvfb", "xfwm4", "xfce4-panel", "xfdesktop", "dbus-daemon", "xprop", "xdpyinfo", "xdotool")
    desk = Desktop()
    with desk as sb:
        wait_ready(sb, desk)
        desktop_pid = host_pid(sb, "berth-desktop")
        expect(visible_windows(desk.display, "xfce4-panel"), "xdotool sees no panel window")

        # The window manager: its check window dies with it, the
        # root's property stays behind naming it.
        seq = last_seq(sb)
        wm = host_pid(sb, "xfwm4")
        os.kill(wm, signal.SIGKILL)
        reason = wait_check(sb, False, "window manager", seq)["reason"]
        note("reason: %s" % reason)
        m = re.search(r"names (0x[0-9a-f]+), which does not exist", reason)
        expect(m is not None, "the reason names no dead check window: %r" % reason)
        expect_eq(wm_check_window(desk.display), m.group(1), "the root's check window, as xprop reads it")
        expect(not wm_check_alive(desk.display, m.group(1)), "xprop still finds window %s" % m.group(1))
        host_pid(sb, "xfwm4", other_than=wm)
        wait_ready(sb, desk, seq)

        # The panel.
        seq = last_seq(sb)
        panel = host_pid(sb, "xfce4-panel")
        os.kill(panel, signal.SIGKILL)
        reason = wait_check(sb, False, "xfce4-panel", seq)["reason"]
        note("reason: %s" % reason)
        expect("window manager" not in reason, "only the panel is missing: %r" % reason)
        expect(not visible_windows(desk.display, "xfce4-panel"), "xdotool still sees a panel window")
        host_pid(sb, "xfce4-panel", other_than=panel)
        wait_ready(sb, desk, seq)
        expect(visible_windows(desk.display, "xfce4-panel"), "xdotool sees no panel window after the restart")

        expect_eq(host_pid(sb, "berth-desktop"), desktop_pid, "berth-desktop's pid")
        no_exit_of(sb, "desktop")


@case("xfce: a killed X server does not end berth-desktop; the check comes back with X and XFCE", timeout=180)
def xfce_x_restart():
    need("Xvfb", "xfwm4", "xfce4-panel", "xfdesktop", "dbus-daemon", "xprop", "xdpyinfo")
    desk = Desktop()
    with desk as sb:
        wait_ready(sb, desk)
        desktop_pid = host_pid(sb, "berth-desktop")

        seq = last_seq(sb)
        xvfb = host_pid(sb, "Xvfb")
        os.kill(xvfb, signal.SIGKILL)
        reason = wait_check(sb, False, "X server :%d unreachable" % desk.display, seq)["reason"]
        note("reason: %s" % reason)
        expect(pid_alive(desktop_pid), "berth-desktop died with the X server")

        host_pid(sb, "Xvfb", other_than=xvfb)
        wait_ready(sb, desk, seq)
        expect_eq(host_pid(sb, "berth-desktop"), desktop_pid, "berth-desktop's pid")
        no_exit_of(sb, "desktop")
        expect_in("connection lost", sb.log(), "berth-desktop's log")


class CuttingProxy:
    """An X display (:n, an abstract socket) in front of a real one that
    hangs up on the first `cuts` clients right after the connection setup:
    the client is then inside XOpenDisplay, waiting for its first reply.
    Later clients are relayed both ways."""

    def __init__(self, upstream, cuts):
        self.upstream = upstream
        self.cuts = cuts
        self.cutting = 0
        self.accepted = 0
        self.display = None
        for _ in range(200):
            n = random.randint(150, 899)
            if not display_free(n):
                continue
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.bind("\0%s/X%d" % (X11_DIR, n))
            except OSError:
                self.sock.close()
                continue
            self.display = n
            break
        expect(self.display is not None, "no display number for the proxy")
        track_closer(self.close)
        self.sock.listen(16)
        self.stopped = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stopped:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                up.connect("\0%s/X%d" % (X11_DIR, self.upstream))
            except OSError:
                # The real server is not up yet: a plain refusal.
                client.close()
                continue
            if self.cutting < self.cuts:
                self.cutting += 1
                threading.Thread(target=self._cut, args=(client, up), daemon=True).start()
            else:
                for a, b in ((client, up), (up, client)):
                    threading.Thread(target=pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _read(sock, have, n):
        """have, read on from sock to at least n bytes; EOFError if sock
        closes first (a loop on recv's b"" would spin for ever)."""
        while len(have) < n:
            more = sock.recv(65536)
            if not more:
                raise EOFError
            have += more
        return have

    @classmethod
    def _cut(cls, client, up):
        """Passes the client's whole connection setup and the server's
        whole reply, then hangs up: inside XOpenDisplay."""
        try:
            setup = cls._read(client, b"", 12)
            order = ">" if setup[:1] == b"B" else "<"
            name, data = struct.unpack_from(order + "HH", setup, 6)
            setup = cls._read(client, setup, 12 + (name + 3) // 4 * 4 + (data + 3) // 4 * 4)
            up.sendall(setup)
            reply = cls._read(up, b"", 8)
            total = 8 + 4 * struct.unpack_from(order + "H", reply, 6)[0]
            client.sendall(cls._read(up, reply, total)[:total])
            time.sleep(0.1)
        except (OSError, EOFError):
            pass
        client.close()
        up.close()

    def close(self):
        self.stopped = True
        self.sock.close()


@case("xconn: an X server that hangs up inside XOpenDisplay does not end berth-desktop")
def xopen_cut():
    need("Xvfb", "xdpyinfo", "dbus-daemon")
    desk = Desktop(xfce=False)
    proxy = CuttingProxy(desk.display, cuts=3)
    desk.desktop_display = proxy.display
    with desk as sb:
        # Connected through the proxy at last: the display has no XFCE.
        data = wait_check(sb, False, "no window manager", timeout=30)
        note("reason: %s" % data["reason"])
        expect_eq(proxy.cutting, proxy.cuts, "connections cut inside XOpenDisplay")
        # Nearly always every cut is seen inside XOpenDisplay; now and
        # then one is seen just after it returned, as an ordinary lost
        # connection. Either way berth-desktop must live on.
        log = sb.log()
        inside = log.count("connection lost while opening the display")
        after = log.count("connection lost (closed by the server)")
        note("cuts seen inside XOpenDisplay: %d, after it: %d" % (inside, after))
        expect(inside >= 1, "no connection was lost inside XOpenDisplay")
        expect(inside + after >= proxy.cuts, "cuts seen: %d inside and %d after, of %d" % (inside, after, proxy.cuts))
        no_exit_of(sb, "desktop")


class FakeBerthd:
    """A stand-in for berthd's Unix socket: one connection at a time,
    each request decoded and kept; answer() replies to the last one."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(4)
        self.conn = None
        self.connections = 0
        self.pending = None
        self.serving = []

    def accept(self, timeout=10.0):
        """The next connection that reports; berth-desktop's other one,
        which serves the desktop ops (it opens with hello), is set aside
        unanswered."""
        deadline = time.monotonic() + timeout
        while True:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                self.conn, _ = self.sock.accept()
            except socket.timeout:
                raise TestFailure("berth-desktop did not connect within %.1f s" % timeout)
            self.pending = None
            self.pending = self.request(max(deadline - time.monotonic(), 0.01))
            if self.pending.get("op") != "hello":
                break
            self.serving.append(self.conn)
        self.connections += 1
        return self.conn

    def _read(self, n, deadline):
        buf = b""
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            self.conn.settimeout(left)
            chunk = self.conn.recv(n - len(buf))
            if not chunk:
                raise TestFailure("berth-desktop closed the connection")
            buf += chunk
        return buf

    def request(self, timeout=10.0):
        """The next request on the current connection (a dict)."""
        if self.pending is not None:
            req, self.pending = self.pending, None
            return req
        deadline = time.monotonic() + timeout
        try:
            (n,) = struct.unpack(">I", self._read(4, deadline))
            return msgpack.unpackb(self._read(n, deadline), raw=False)
        except socket.timeout:
            raise TestFailure("no request within %.1f s" % timeout)

    def silent(self, seconds):
        """Nothing arrives on the current connection for seconds."""
        self.conn.settimeout(seconds)
        try:
            data = self.conn.recv(1)
        except socket.timeout:
            return True
        return data == b""

    def answer(self, req, error=None):
        msg = {"type": "response", "id": req["id"]}
        if error is None:
            msg.update(ok=True, result={})
        else:
            msg.update(ok=False, error={"code": error, "message": "not now"})
        data = msgpack.packb(msg, use_bin_type=True)
        self.conn.sendall(struct.pack(">I", len(data)) + data)

    def hang_up(self):
        self.conn.close()
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
        for conn in self.serving:
            conn.close()
        self.sock.close()


def expect_report(req, ok, reason_words):
    expect_eq(req.get("type"), "request", "the message type")
    expect_eq(req.get("op"), "check.report", "the op")
    args = req.get("args") or {}
    expect_eq(sorted(args), ["name", "ok", "reason"], "the args")
    expect_eq(args["name"], "xfce", "the check's name")
    expect_eq(args["ok"], ok, "ok")
    expect_in(reason_words, args["reason"], "the reason")
    return args


@case("confine: once X answers berth-desktop runs under its filter, which refuses exec, ptrace, mount and IP")
def confine():
    need("Xvfb", "xdpyinfo", "dbus-daemon")
    rc, out = run_program([DESKTOP, "--confine-selftest"])[:2]
    note(out)
    expect_eq(rc, 0, "the self-test's status")
    for call in ("execve", "ptrace", "mount", "socket(AF_INET)"):
        expect("%s: blocked" % call in out, "%s is not refused: %r" % (call, out))
    desk = Desktop(xfce=False)
    with desk as sb:
        pid = host_pid(sb, "berth-desktop")
        wait_for(lambda: proc_status(pid, "Seccomp") == "2", 10, "berth-desktop's filter in /proc")
        expect_eq(proc_status(pid, "NoNewPrivs"), "1", "no_new_privs")
        wait_for(lambda: "confined (seccomp)" in sb.log(), 10, "the log line")


@case("report: check.report on change, again on a new connection, retried after a refusal, and at exit")
def report_protocol():
    need("Xvfb")
    d = tempfile.mkdtemp(prefix="berth-it-report-")
    display = free_display()
    fake = xvfb = desk = None
    try:
        fake = FakeBerthd(os.path.join(d, "berthd.sock"))
        xvfb = subprocess.Popen(
            ["Xvfb", ":%d" % display, "-screen", "0", "640x480x24", "-nolisten", "tcp"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: run_program(["xdpyinfo", "-display", ":%d" % display])[0] == 0, 10, "Xvfb answering")
        env = dict(os.environ, BERTH_SOCKET=fake.path)
        log = open(os.path.join(d, "desktop.log"), "wb")
        desk = subprocess.Popen(
            [DESKTOP, "--display", ":%d" % display], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=log, env=env,
        )
        log.close()

        # The display has no XFCE: a stable "not ok" to report.
        fake.accept()
        req = fake.request()
        first = expect_report(req, False, "no window manager")
        fake.answer(req)
        expect(fake.silent(1.5), "a report although nothing changed")

        # berthd hangs up: a new connection, the same state again.
        fake.hang_up()
        fake.accept()
        req = fake.request()
        expect_eq(expect_report(req, False, "no window manager"), first, "the state sent again")
        # A refusal: tried again, on a new connection.
        fake.answer(req, error="unavailable")
        fake.accept()
        req = fake.request()
        expect_eq(expect_report(req, False, "no window manager"), first, "the state after a refusal")
        fake.answer(req)
        expect(fake.silent(1.0), "a report although nothing changed")

        # The X server goes: that is news.
        xvfb.kill()
        xvfb.wait()
        req = fake.request()
        expect_report(req, False, "X server :%d unreachable" % display)
        fake.answer(req)

        # SIGTERM: a last "not ok", then status 0. (Before it, the reason
        # may still change, from the lost connection to the refused one.)
        desk.send_signal(signal.SIGTERM)
        for _ in range(5):
            req = fake.request(5)
            fake.answer(req)
            if "stopped" in req["args"]["reason"]:
                break
        expect_report(req, False, "berth-desktop stopped")
        expect_eq(desk.wait(5), 0, "berth-desktop's exit status")
        with open(os.path.join(d, "desktop.log"), "rb") as f:
            err = f.read().decode(errors="replace")
        note(err)
        for mark in SANITIZER_MARKS:
            expect(mark not in err, "a sanitizer reported: %s" % err)
    finally:
        for p in (desk, xvfb):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        if fake is not None:
            fake.close()
        forget_display(display)
        shutil.rmtree(d, ignore_errors=True)


run()
