"""Desktops: Xvfb and berth-desktop run by berthd, and xpaint, a test
window of known colours."""

import os
import pwd
import subprocess

from .paths import CLI, DESKTOP, XPAINT
from .procs import Spawned, forget_display, free_display, need, run_program, wait_for
from .runner import expect, expect_eq, note
from .sandbox import Sandbox


GREY = (0x20, 0x20, 0x20)
# The desktop image's user (images/desktop/berth.conf).
DESKTOP_USER = "agent"


def desktop_user(name=DESKTOP_USER):
    """The unprivileged user name (its pwd entry), created with a home if
    missing (tests run as root)."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
        return pwd.getpwnam(name)


def hexcolor(c):
    return "#%02x%02x%02x" % c


def xvfb_service(display, width=1280, height=800, backoff_ms=None, own_ipc=False):
    """The config of a service "xvfb" running Xvfb on display. backoff_ms
    (min, max) keeps it down a while after a kill, so that the outage can
    be seen. An X server in an IPC namespace of its own (own_ipc) cannot
    attach a client's shared memory: as if it ran on another host."""
    text = (
        "[service xvfb]\ncommand = %sXvfb :%d -screen 0 %dx%dx24 -nolisten tcp\n"
        "ready = exec /usr/bin/xdpyinfo -display :%d\nrequired = no\n"
        % ("unshare --ipc " if own_ipc else "", display, width, height, display)
    )
    if backoff_ms is not None:
        text += "backoff_min_ms = %d\nbackoff_max_ms = %d\nmax_deaths = 50\n" % backoff_ms
    return text + "\n"


def xvnc_service(display, port, width=1280, height=800):
    """The config of a service "xvnc": TigerVNC's Xvnc on display, its
    RFB server on 127.0.0.1:port with security None (the gateway's
    `vnc`), every client shared."""
    return (
        "[service xvnc]\ncommand = Xvnc :%d -geometry %dx%d -depth 24 -rfbport %d -localhost -SecurityTypes None "
        "-AlwaysShared -nolisten tcp\nready = exec /usr/bin/xdpyinfo -display :%d\nrequired = no\n\n"
        % (display, width, height, port, display)
    )


def chromium_service(cdp_port, udd, restart="always"):
    """The config of a service "browser": headless Chromium with its
    DevTools on 127.0.0.1:cdp_port and its profile in udd, ready once
    they answer."""
    return (
        "[service browser]\n"
        "command = chromium --headless=new --no-sandbox --disable-gpu --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync "
        "--remote-debugging-port=%d --remote-debugging-address=127.0.0.1 --user-data-dir=%s about:blank\n"
        "ready = cdp 127.0.0.1:%d\n"
        "ready_timeout_ms = 5000\n"
        "restart = %s\n" % (cdp_port, udd, cdp_port, restart)
    )


def desktop_service(display, debug=True, after="xvfb", backoff_ms=None):
    """The config of a service "desktop" running berth-desktop on display
    (after the service named after, if any)."""
    text = "[service desktop]\ncommand = %s --display :%d%s\n" % (DESKTOP, display, " --debug" if debug else "")
    if after:
        text += "after = %s\n" % after
    text += "required = no\n"
    if backoff_ms is not None:
        text += "backoff_min_ms = %d\nbackoff_max_ms = %d\n" % backoff_ms
    return text + "\n"


class Desk:
    """A free display number and the config that runs Xvfb and
    berth-desktop under berthd (no window manager); with xfce_check, the
    xfce check that berth-desktop reports to. The fixture of the desktop
    tests:

        desk = Desk()
        with desk as sb:
            ...

    Entering starts berthd (with its gateway) running config() and waits
    for ready(); leaving stops it and forgets the display, whatever
    happened, also when entering failed halfway."""

    def __init__(self, width=1280, height=800, xvfb_backoff_ms=None, own_ipc=False, desktop_backoff_ms=None,
                 debug=True, xfce_check=True):
        self.display = free_display()
        self.env = dict(os.environ, DISPLAY=":%d" % self.display)
        self.width, self.height = width, height
        self.xvfb_backoff_ms, self.own_ipc = xvfb_backoff_ms, own_ipc
        self.desktop_backoff_ms, self.debug, self.xfce_check = desktop_backoff_ms, debug, xfce_check
        self.sb = None

    def config(self):
        d = self.display
        text = xvfb_service(d, self.width, self.height, self.xvfb_backoff_ms, self.own_ipc)
        if self.xfce_check:
            text += "[check xfce]\nready = report\n\n"
        return text + desktop_service(d, self.debug, backoff_ms=self.desktop_backoff_ms)

    def ready(self):
        """What entering waits for once berthd answers: here nothing more."""

    def xdotool(self, *args):
        """Runs xdotool on the display; its stdout."""
        status, out, err = run_program(["xdotool"] + list(args), env=self.env)
        expect_eq(status, 0, "xdotool %s (stderr %r)" % (" ".join(args), err))
        return out

    def __enter__(self):
        try:
            self.sb = Sandbox(extra=self.config())
            self.ready()
        except BaseException:
            self.__exit__()
            raise
        return self.sb

    def __exit__(self, *exc):
        if self.sb is not None:
            self.sb.close()
        forget_display(self.display)


class DesktopSandbox(Desk):
    """A Desk without the xfce check or --debug, ready once berth desktop
    info answers."""

    def __init__(self, width, height, programs=("Xvfb", "xdpyinfo")):
        need(*programs)
        super().__init__(width, height, debug=False, xfce_check=False)

    def ready(self):
        last = []

        def serving():
            rc, _, err = run_program([CLI, "--socket", self.sb.socket, "desktop", "info"])
            last[:] = [err.strip()]
            return rc == 0

        try:
            wait_for(serving, 30, "berth desktop info answers", 0.2)
        finally:
            note("berth desktop info, last: %s" % last)


def xevlog_settle(ev, ws, mark):
    """Every line xevlog (ev, its Spawned) printed since the last call:
    the pointer goes to mark (x, y), a spot no action of the test goes
    to, through desktop.input on ws, and the lines before that motion
    are returned. Alternate between two marks: a motion to where the
    pointer is already prints nothing."""
    x, y = mark
    expect_eq(ws.call("desktop.input", {"actions": [{"type": "move", "x": x, "y": y}]}), {"done": 1},
              "desktop.input's result")
    lines = []
    while True:
        line = ev.line()
        if line == "M %d %d" % (x, y):
            note("xevlog: %s" % " | ".join(lines))
            return lines
        lines.append(line)


def served(c, timeout=30.0):
    """Waits until berth-desktop serves the ops and is connected to X:
    desktop.info's result."""

    def answers():
        r = c.request("desktop.info")
        if not r["ok"]:
            note("desktop.info: %s" % r["error"])
        return r["result"] if r["ok"] else None

    return wait_for(answers, timeout, "desktop.info answering", 0.1)


class Paint(Spawned):
    """xpaint on desk's display: a window at geometry (x, y, w, h) showing
    rects [((x, y, w, h) in the window, colour)] or an image; command()
    waits for the "ok" that says the server has drawn."""

    def __init__(self, desk, geometry, rects=(), title="berth test", klass=None, image=None):
        x, y, w, h = geometry
        argv = [XPAINT, "-display", ":%d" % desk.display, "-geometry", "%dx%d+%d+%d" % (w, h, x, y), "-title", title]
        if klass is not None:
            argv += ["-class", klass]
        argv += ["-bg", hexcolor(GREY)]
        if image is not None:
            argv += ["-image", image]
        argv += ["%d,%d,%d,%d,%s" % (rx, ry, rw, rh, hexcolor(c)) for (rx, ry, rw, rh), c in rects]
        super().__init__(argv, writable=True)
        line = self.line()
        expect(line.startswith("ready 0x"), "xpaint said %r" % line)
        self.id = int(line.split()[1], 16)

    def command(self, text):
        self.write((text + "\n").encode())
        expect_eq(self.line(), "ok", "xpaint's answer to %r" % text)
