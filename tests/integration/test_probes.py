"""Readiness probes against the real programs they are for: the rfb probe
against TigerVNC's Xvnc (a good handshake, a wrong framebuffer size, a
server that wants a password), the cdp probe against headless Chromium,
and the http probe's body check against a real HTTP server."""

import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    case,
    expect,
    expect_in,
    free_port,
    http_json,
    note,
    run,
    wait_for,
)


def scratch():
    d = tempfile.mkdtemp(prefix="berth-it-probes-")
    os.chmod(d, 0o755)
    return d


def free_display():
    """An X display number with neither a socket nor a lock file."""
    for _ in range(200):
        n = random.randint(150, 899)
        if not os.path.exists("/tmp/.X11-unix/X%d" % n) and not os.path.exists("/tmp/.X%d-lock" % n):
            return n
    raise AssertionError("no free X display number")


def xvnc_service(port, display, security="None", extra_args="", ready_size="1280x800"):
    return (
        "[service vnc]\n"
        "command = Xvnc :%d -geometry 1280x800 -depth 24 -rfbport %d -SecurityTypes %s "
        "-nolisten tcp -localhost %s\n"
        "ready = rfb 127.0.0.1:%d %s\n"
        "ready_timeout_ms = 3000\n" % (display, port, security, extra_args, port, ready_size)
    )


def service(sb, name):
    return [s for s in sb.state()["services"] if s["name"] == name][0]


def wait_reason(sb, name, words, timeout=20.0):
    """Waits until the service's reason holds words; returns it."""

    def check():
        s = service(sb, name)
        return s["reason"] if words in s["reason"] else None

    return wait_for(check, timeout, "%s's reason to say %r" % (name, words))


def readyz(sb):
    return http_json(sb.port, "/readyz")


@case("rfb: Xvnc with security None is ready after a full handshake of the right size")
def rfb_ready():
    port, display = free_port(), free_display()
    with Sandbox(extra=xvnc_service(port, display)) as sb:
        sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "vnc", 20)
        status, body = wait_for(lambda: (lambda r: r if r[0] == 200 else None)(readyz(sb)), 10, "/readyz 200")
        expect(body["checks"]["vnc"]["ok"], "the vnc check: %r" % body)


@case("rfb: a framebuffer of another size keeps the service starting, with the sizes in the reason")
def rfb_wrong_size():
    port, display = free_port(), free_display()
    with Sandbox(extra=xvnc_service(port, display, ready_size="1024x768"), wait="socket") as sb:
        reason = wait_reason(sb, "vnc", "1280x800")
        expect_in("1024x768", reason, "the reason")
        expect(service(sb, "vnc")["state"] == "starting", "vnc must not be ready")
        status, body = readyz(sb)
        expect(status == 503, "/readyz must be 503, got %d" % status)
        expect_in("1280x800", body["checks"]["vnc"]["reason"], "/readyz's reason")


@case("rfb: a VNC server that wants a password is not ready, and says so")
def rfb_password():
    port, display = free_port(), free_display()
    d = scratch()
    try:
        pwfile = os.path.join(d, "passwd")
        with open(pwfile, "wb") as f:
            f.write(subprocess.run(["vncpasswd", "-f"], input=b"secret1\n", stdout=subprocess.PIPE, check=True).stdout)
        extra = xvnc_service(port, display, security="VncAuth", extra_args="-PasswordFile %s" % pwfile)
        with Sandbox(extra=extra, wait="socket") as sb:
            reason = wait_reason(sb, "vnc", "password")
            note("reason: %s" % reason)
            expect(service(sb, "vnc")["state"] == "starting", "vnc must not be ready")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("cdp: headless Chromium is ready once Browser.getVersion answers over its DevTools WebSocket")
def cdp_ready():
    port = free_port()
    d = scratch()
    try:
        extra = (
            "[service browser]\n"
            "command = chromium --headless --no-sandbox --disable-gpu --no-first-run "
            "--disable-background-networking --disable-component-update --disable-sync "
            "--remote-debugging-address=127.0.0.1 --remote-debugging-port=%d --user-data-dir=%s about:blank\n"
            "ready = cdp 127.0.0.1:%d\n"
            "ready_timeout_ms = 5000\n" % (port, d, port)
        )
        with Sandbox(extra=extra, wait="socket") as sb:
            sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "browser", 60)
            expect(service(sb, "browser")["state"] == "ready", "browser must be ready")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("cdp: a plain HTTP server on the port is not a browser")
def cdp_not_a_browser():
    port = free_port()
    d = scratch()
    try:
        extra = (
            "[service fake]\n"
            "command = /usr/bin/python3 -m http.server %d --bind 127.0.0.1 --directory %s\n"
            "ready = cdp 127.0.0.1:%d\n" % (port, d, port)
        )
        with Sandbox(extra=extra, wait="socket") as sb:
            reason = wait_reason(sb, "fake", "cdp")
            note("reason: %s" % reason)
            expect(service(sb, "fake")["state"] == "starting", "fake must not be ready")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("http: the body must hold the substring; when the file changes, the service turns ready")
def http_body():
    port = free_port()
    d = scratch()
    try:
        with open(os.path.join(d, "health"), "w") as f:
            f.write("warming up\n")
        extra = (
            "[service web]\n"
            "command = /usr/bin/python3 -m http.server %d --bind 127.0.0.1 --directory %s\n"
            "ready = http http://127.0.0.1:%d/health 200 all-good\n" % (port, d, port)
        )
        with Sandbox(extra=extra, wait="socket") as sb:
            reason = wait_reason(sb, "web", "all-good")
            note("reason: %s" % reason)
            with open(os.path.join(d, "health"), "w") as f:
                f.write("all-good\n")
            sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "web", 10)
    finally:
        shutil.rmtree(d, ignore_errors=True)


run()
