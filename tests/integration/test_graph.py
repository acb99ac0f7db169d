"""The service graph: parallel and ordered starts, every kind of readiness
probe, liveness, /readyz, restarts with backoff and its reset, permanent
failure and what it does to dependents, the service ops, config errors
naming FILE:LINE, and a service killed over and over."""

import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    Sandbox,
    TestFailure,
    case,
    event_kinds,
    expect,
    expect_eq,
    expect_in,
    free_port,
    http_json,
    note,
    pid_alive,
    run,
    scratch,
    wait_for,
)

# ---------------------------------------------------------------------
# Helpers


def write_file(d, name, body, mode=0o755):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, mode)
    return path


def touch(path):
    open(path, "w").close()


def gated(path):
    """A service section body whose readiness is: path exists."""
    return "command = sleep 1000\nready = exec /usr/bin/test -f %s\n" % path


def of(events, kind, name=None):
    return [e for e in events if e["kind"] == kind and (name is None or e["data"].get("name") == name)]


def first_seq(events, kind, name):
    evs = of(events, kind, name)
    expect(evs, "no %s for %s in %r" % (kind, name, [(e["kind"], e["data"].get("name")) for e in events]))
    return evs[0]["seq"]


def service(sb, name, c=None):
    services = (c.call("state") if c is not None else sb.state())["services"]
    for s in services:
        if s["name"] == name:
            return s
    raise TestFailure("no service %r in state" % name)


def wait_event(sb, kind, name, from_seq=1, timeout=10.0, pred=None):
    return sb.wait_event(
        lambda e: e["kind"] == kind and e["data"].get("name") == name and (pred is None or pred(e["data"])),
        timeout,
        from_seq,
    )


def wait_state(sb, name, state, timeout=10.0, reason=None):
    """Waits until name is in state (and its reason holds reason)."""

    def check():
        s = service(sb, name)
        return s if s["state"] == state and (reason is None or reason in s["reason"]) else None

    return wait_for(check, timeout, "service %s %s%s" % (name, state, " (%s)" % reason if reason else ""))


def readyz(sb):
    return http_json(sb.port, "/readyz")


def wait_readyz(sb, status, timeout=10.0, pred=None):
    """Polls /readyz until it answers status (and pred(body) holds)."""

    def check():
        st, body = readyz(sb)
        return (st, body) if st == status and (pred is None or pred(body)) else None

    return wait_for(check, timeout, "/readyz %d" % status)[1]


def restarting_delays(sb, name, n, timeout=15.0):
    """Follows the journal until name has n service.restarting events;
    returns (their data, every event read)."""
    c = sb.unix(timeout=timeout)
    c.subscribe(1)
    seen = []

    def nth(ev):
        if ev["kind"] == "service.restarting" and ev["data"]["name"] == name:
            seen.append(ev["data"])
        return len(seen) == n

    evs = c.events_until(nth, timeout)
    return seen, evs


# ---------------------------------------------------------------------
# Starting


@case("services without dependencies start in parallel")
def parallel_start():
    d = scratch()
    go = os.path.join(d, "go")
    extra = "".join("[service %s]\n%s\n" % (n, gated(go)) for n in "abc")
    with Sandbox(extra=extra, wait="socket") as sb:
        for n in "abc":
            wait_event(sb, "service.started", n)
            wait_state(sb, n, "starting", reason="check exited with status 1")
        early = [e for n in "abc" for e in of(sb.events(), "service.ready", n)]
        expect(not early, "a service was ready before its file: %r" % early)
        touch(go)
        for n in "abc":
            wait_event(sb, "service.ready", n)
        evs = sb.events()
    started = [first_seq(evs, "service.started", n) for n in "abc"]
    ready = [first_seq(evs, "service.ready", n) for n in "abc"]
    expect(
        max(started) < min(ready),
        "started seqs %r, ready seqs %r: not all started before any was ready" % (started, ready),
    )


@case("dependencies: each service starts only once what it waits for is ready")
def dependency_order():
    d = scratch()
    f = {n: os.path.join(d, n) for n in "abc"}
    extra = (
        "[service c]\n%srequires = b\n\n"
        "[service b]\n%safter = a\n\n"
        "[service a]\n%s\n" % (gated(f["c"]), gated(f["b"]), gated(f["a"]))
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        wait_event(sb, "service.started", "a")
        wait_state(sb, "a", "starting", reason="check exited")
        expect_eq(service(sb, "b")["state"], "waiting", "b's state while a is not ready")
        expect_in("waiting for a", service(sb, "b")["reason"], "b's reason")
        expect_in("waiting for b", service(sb, "c")["reason"], "c's reason")
        touch(f["a"])
        wait_event(sb, "service.started", "b")
        wait_state(sb, "b", "starting", reason="check exited")
        expect_eq(service(sb, "c")["state"], "waiting", "c's state while b is not ready")
        touch(f["b"])
        wait_event(sb, "service.started", "c")
        touch(f["c"])
        wait_event(sb, "service.ready", "c")
        evs = sb.events()
    seqs = [
        first_seq(evs, "service.started", "a"),
        first_seq(evs, "service.ready", "a"),
        first_seq(evs, "service.started", "b"),
        first_seq(evs, "service.ready", "b"),
        first_seq(evs, "service.started", "c"),
        first_seq(evs, "service.ready", "c"),
    ]
    expect_eq(seqs, sorted(seqs), "seqs of started a, ready a, started b, ready b, started c, ready c")


# ---------------------------------------------------------------------
# Probes


@case("exec probe: starting with a reason and /readyz 503 until the file appears, then ready and 200")
def exec_probe():
    d = scratch()
    f = os.path.join(d, "up")
    extra = (
        "[service web]\n%s\n[service extra]\ncommand = sleep 1000\nrequired = no\nready = exec /bin/false\n\n"
        "[service slow]\ncommand = sleep 1000\nrequired = no\nready = exec /bin/sleep 1000\n"
        "ready_timeout_ms = 100\n" % gated(f)
    )
    with Sandbox(extra=extra) as sb:
        s = wait_state(sb, "web", "starting", reason="check exited with status 1")
        note("web: %r" % s)
        st, body = readyz(sb)
        note("/readyz: %d %r" % (st, body))
        expect_eq(st, 503, "/readyz status while web is not ready")
        expect_eq(body.get("ready"), False, "/readyz ready")
        expect_in("web", body.get("checks", {}), "/readyz checks")
        expect_eq(body["checks"]["web"]["ok"], False, "web's check")
        # A service with required = no is no readiness check at all.
        expect("extra" not in body["checks"], "a required = no service is among the checks: %r" % body["checks"])
        checks = sb.state()["checks"]
        expect_eq(checks["web"]["ok"], False, "state's check of web")
        expect_in("check exited with status 1", checks["web"]["reason"], "state's reason for web")
        touch(f)
        wait_event(sb, "service.ready", "web")
        body = wait_readyz(sb, 200)
        expect_eq(body["checks"]["web"]["ok"], True, "web's check once ready")
        expect_eq(service(sb, "extra")["state"], "starting", "extra's state (its probe always fails)")
        # A check that runs past ready_timeout_ms is killed and counts as failed.
        wait_state(sb, "slow", "starting", reason="(timeout)")


@case("notify-fd: ready on the service's newline, not before; a reason once ready_timeout_ms passed")
def notify_fd_probe():
    d = scratch()
    go, waiting = os.path.join(d, "go"), os.path.join(d, "waiting")
    extra = (
        '[service n]\ncommand = /bin/sh -c "touch %s; while [ ! -e %s ]; do sleep 0.02; done; '
        'echo >&5; exec sleep 1000"\n'
        "ready = notify-fd 5\nready_timeout_ms = 200\n" % (waiting, go)
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        wait_for(lambda: os.path.exists(waiting), 10, "the service to wait for its go file")
        wait_state(sb, "n", "starting", reason="no notify-fd notification within 200 ms")
        touch(go)
        wait_event(sb, "service.ready", "n")
        expect_eq(service(sb, "n")["state"], "ready", "n's state")


SD_NOTIFY = """import os, socket, sys, time
d = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(b"STATUS=warming up\\n", os.environ["NOTIFY_SOCKET"])
open(os.path.join(d, "waiting-" + sys.argv[2]), "w").close()
while not os.path.exists(os.path.join(d, "go")):
    time.sleep(0.02)
s.sendto(b"STATUS=up\\nREADY=1\\n", os.environ["NOTIFY_SOCKET"])
time.sleep(1000)
"""


@case("sd_notify: READY=1 on $NOTIFY_SOCKET makes the service ready; other datagrams do not")
def sd_notify_probe():
    d = scratch()
    py = write_file(d, "notify.py", SD_NOTIFY, 0o644)
    extra = "[service sd]\ncommand = /usr/bin/python3 %s %s root\nready = sd_notify\n" % (py, d)
    with Sandbox(extra=extra, wait="socket") as sb:
        wait_for(lambda: os.path.exists(os.path.join(d, "waiting-root")), 10, "the service's STATUS datagram")
        expect_eq(service(sb, "sd")["state"], "starting", "sd's state after STATUS= alone")
        touch(os.path.join(d, "go"))
        wait_event(sb, "service.ready", "sd")


@case("sd_notify works for a service running as another user")
def sd_notify_unprivileged():
    d = scratch()
    py = write_file(d, "notify.py", SD_NOTIFY, 0o644)
    os.chmod(d, 0o777)
    extra = "[service sd]\ncommand = /usr/bin/python3 %s %s nobody\nready = sd_notify\nuser = nobody\n" % (py, d)
    # The state directory as berthd makes it, under a parent anyone may
    # cross (as /var/lib is).
    state = os.path.join(d, "state")
    with Sandbox(extra=extra, wait=None, args=["--state-dir", state]) as sb:
        sb.state_dir, sb.socket = state, os.path.join(state, "berthd.sock")
        sb.wait_socket()
        # The first datagram comes before the waiting file; a service that
        # cannot send exits (and is restarted) instead.
        wait_for(
            lambda: os.path.exists(os.path.join(d, "waiting-nobody")) or service(sb, "sd")["restarts"] > 0,
            10,
            "the service's STATUS datagram",
        )
        expect(
            os.path.exists(os.path.join(d, "waiting-nobody")),
            "the service running as nobody could not send on $NOTIFY_SOCKET: %r" % service(sb, "sd"),
        )
        touch(os.path.join(d, "go"))
        try:
            wait_event(sb, "service.ready", "sd", timeout=5)
        except TestFailure:
            raise TestFailure("the service running as nobody never got ready (state %r)" % service(sb, "sd"))


@case("report: check.report over the Unix socket sets readiness; over the WebSocket it is forbidden")
def report_probe():
    extra = "[service r]\ncommand = sleep 1000\nready = report\n\n[service plain]\ncommand = sleep 1000\n"
    with Sandbox(extra=extra) as sb:
        wait_event(sb, "service.started", "r")
        c = sb.unix()
        expect_eq(service(sb, "r", c)["state"], "starting", "r's state before any report")
        c.call("check.report", {"name": "r", "ok": True})
        wait_event(sb, "service.ready", "r")
        wait_readyz(sb, 200)
        before = c.call("state")["last_seq"]
        c.call("check.report", {"name": "r", "ok": False, "reason": "disk full"})
        ev = wait_event(sb, "service.unready", "r", before + 1)
        expect_eq(ev["data"]["reason"], "disk full", "service.unready's reason")
        ev = wait_event(sb, "check.changed", "r", before + 1)
        expect_eq((ev["data"]["ok"], ev["data"]["reason"]), (False, "disk full"), "check.changed")
        body = wait_readyz(sb, 503)
        expect_eq(body["checks"]["r"]["reason"], "disk full", "/readyz's reason for r")
        c.call("check.report", {"name": "r", "ok": True})
        wait_event(sb, "service.ready", "r", before + 1)
        wait_readyz(sb, 200)
        # Only local programs may report.
        w = sb.ws()
        expect_eq(
            w.error_of("check.report", {"name": "r", "ok": False, "reason": "remote"}),
            "forbidden",
            "over the WebSocket",
        )
        expect_eq(service(sb, "r", c)["state"], "ready", "r's state after the refused remote report")
        expect_eq(
            c.error_of("check.report", {"name": "plain", "ok": True}),
            "conflict",
            "a report for a service not probed by report",
        )
        expect_eq(c.error_of("check.report", {"name": "ghost", "ok": True}), "not_found", "a report for no service")
        expect_eq(c.error_of("check.report", {"name": "r"}), "bad_args", "a report without ok")


@case("[check]: no process; probed once its after is ready; ok and failing with reasons; stop, start, restart")
def check_section():
    d = scratch()
    gate = os.path.join(d, "gate")
    flag = os.path.join(d, "flag")
    extra = (
        "[service base]\n" + gated(gate) + "\n"
        "[check probe-only]\nready = exec /usr/bin/test -f %s\nafter = base\n"
        "ready_interval_ms = 100\n\n"
        "[check told]\nready = report\n" % flag
    )
    with Sandbox(extra=extra) as sb:
        c = sb.unix()
        expect_eq(service(sb, "probe-only", c)["state"], "waiting", "a check whose after is not ready")
        expect_eq(service(sb, "probe-only", c)["pid"], 0, "a check's pid")
        expect_eq(service(sb, "probe-only", c)["kind"], "check", "a check's kind")
        expect_eq(service(sb, "base", c)["kind"], "service", "a service's kind")
        status = c.call("service.status", {"name": "probe-only"})
        expect_eq((status["command"], status["probe"]), ([], "exec"), "a check's command and probe")
        touch(gate)
        wait_state(sb, "probe-only", "starting")
        body = wait_readyz(sb, 503, pred=lambda b: "exit" in b["checks"]["probe-only"]["reason"])
        expect_eq(body["checks"]["base"]["ok"], True, "base in /readyz")
        touch(flag)
        wait_event(sb, "check.changed", "probe-only", pred=lambda d: d["ok"])
        c.call("check.report", {"name": "told", "ok": True})
        wait_readyz(sb, 200)
        before = c.call("state")["last_seq"]
        os.unlink(flag)
        ev = wait_event(sb, "check.changed", "probe-only", before + 1, pred=lambda d: not d["ok"])
        expect(ev["data"]["reason"], "a failing check without a reason")
        body = wait_readyz(sb, 503)
        expect_eq(body["checks"]["probe-only"]["reason"], ev["data"]["reason"], "/readyz's reason")
        touch(flag)
        wait_readyz(sb, 200)
        c.call("service.stop", {"name": "probe-only"})
        wait_state(sb, "probe-only", "stopped")
        wait_readyz(sb, 503, pred=lambda b: b["checks"]["probe-only"]["reason"] == "stopped")
        c.call("service.start", {"name": "probe-only"})
        wait_readyz(sb, 200)
        c.call("service.restart", {"name": "probe-only"})
        wait_readyz(sb, 200)
        # A check runs nothing of its own: berthd's children are base and
        # the gateway (and a probe's short-lived test, at most).
        kids = [harness.proc_argv(pid) for pid in harness.proc_children(sb.berthd_pid())]
        names = sorted(os.path.basename(a[0]) for a in kids if a and os.path.basename(a[0]) != "test")
        expect_eq(names, ["berth-gateway", "sleep"], "berthd's children")
        expect_eq(sb.stop(), 0, "berthd's exit status after stopping with checks")


@case("{gateway} in a probe's arguments is the address --listen gave the gateway")
def gateway_placeholder():
    # Passes only if {gateway} became an address the gateway answers on;
    # the Sandbox's --listen port is not the config file's.
    extra = "[check g]\nready = exec /usr/bin/curl -fs -o /dev/null http://{gateway}/healthz\n"
    with Sandbox(extra=extra) as sb:
        expect_in("127.0.0.1:%d" % sb.port, harness.proc_argv(sb.gateway_pid()), "the gateway's argv")
        wait_readyz(sb, 200)
        expect(sb.state()["checks"]["g"]["ok"], "the check of {gateway}")


@case("every service finds berthd in $BERTH_SOCKET")
def berth_socket_env():
    d = scratch()
    out = os.path.join(d, "env")
    extra = "[service e]\ncommand = /bin/sh -c 'echo \"$BERTH_SOCKET\" > %s; exec sleep 1000'\n" % out
    with Sandbox(extra=extra) as sb:
        wait_for(lambda: os.path.exists(out) and os.path.getsize(out) > 0, 10, "the env file")
        with open(out) as f:
            expect_eq(f.read().strip(), sb.socket, "$BERTH_SOCKET")


@case("liveness: a ready service whose probe fails turns unready, /readyz 503 with the reason, and back")
def liveness():
    d = scratch()
    f = os.path.join(d, "alive")
    touch(f)
    extra = "[service live]\n%sready_interval_ms = 50\n" % gated(f)
    with Sandbox(extra=extra) as sb:
        wait_event(sb, "service.ready", "live")
        wait_readyz(sb, 200)
        before = sb.state()["last_seq"]
        os.unlink(f)
        ev = wait_event(sb, "service.unready", "live", before + 1)
        expect_eq(ev["data"]["reason"], "check exited with status 1", "service.unready's reason")
        ev = wait_event(sb, "check.changed", "live", before + 1)
        expect_eq((ev["data"]["ok"], ev["data"]["reason"]), (False, "check exited with status 1"), "check.changed")
        body = wait_readyz(sb, 503)
        expect_eq(body["checks"]["live"]["reason"], "check exited with status 1", "/readyz's reason")
        expect_eq(service(sb, "live")["state"], "unready", "live's state")
        expect(service(sb, "live")["pid"] > 0, "the unready service was not left running")
        touch(f)
        wait_event(sb, "service.ready", "live", before + 1)
        ev = wait_event(sb, "check.changed", "live", before + 1, pred=lambda d: d["ok"])
        body = wait_readyz(sb, 200)
        expect_eq(body["checks"]["live"]["ok"], True, "/readyz's check once back")
        exits = of(sb.events(before + 1), "service.exited", "live")
        expect(not exits, "the service was restarted for being unready: %r" % exits)


TCP_SERVER = """import os, socket, sys, time
port, d = int(sys.argv[1]), sys.argv[2]

def wait(name):
    while not os.path.exists(os.path.join(d, name)):
        time.sleep(0.02)

def listen():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(64)
    s.settimeout(0.02)
    return s

def serve_until(s, name):
    while not os.path.exists(os.path.join(d, name)):
        try:
            s.accept()[0].close()
        except socket.timeout:
            pass
    s.close()

wait("open")
serve_until(listen(), "close")
wait("reopen")
serve_until(listen(), "never")
"""

HTTP_SERVER = """import http.server, os, sys
port, d = int(sys.argv[1]), sys.argv[2]

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = os.path.exists(os.path.join(d, "healthy"))
        body = b"all good\\n" if ok else b"warming up\\n"
        self.send_response(200 if ok else 503)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


@case("tcp probe: starting while the port is closed, ready once it listens, unready when it stops, ready again")
def tcp_probe():
    d = scratch()
    py = write_file(d, "tcp_server.py", TCP_SERVER, 0o644)
    port = free_port()
    extra = "[service t]\ncommand = /usr/bin/python3 %s %d %s\nready = tcp 127.0.0.1:%d\nready_interval_ms = 50\n" % (
        py,
        port,
        d,
        port,
    )
    with Sandbox(extra=extra) as sb:
        s = wait_state(sb, "t", "starting", reason="refused")
        note("t while closed: %r" % s)
        st, body = readyz(sb)
        expect_eq((st, body["checks"]["t"]["ok"]), (503, False), "/readyz while the port is closed")
        touch(os.path.join(d, "open"))
        wait_event(sb, "service.ready", "t")
        wait_readyz(sb, 200)
        before = sb.state()["last_seq"]
        touch(os.path.join(d, "close"))
        ev = wait_event(sb, "service.unready", "t", before + 1)
        expect_in("refused", ev["data"]["reason"], "service.unready's reason")
        body = wait_readyz(sb, 503)
        expect_eq(body["checks"]["t"]["reason"], ev["data"]["reason"], "/readyz's reason")
        touch(os.path.join(d, "reopen"))
        wait_event(sb, "service.ready", "t", before + 1)
        wait_readyz(sb, 200)
        expect_eq(service(sb, "t")["restarts"], 0, "t's restarts (it never exited)")


@case("http probe: a status other than the one wanted, or a body without the text, is not ready")
def http_probe():
    d = scratch()
    py = write_file(d, "web_server.py", HTTP_SERVER, 0o644)
    port = free_port()
    url = "http://127.0.0.1:%d/health" % port
    extra = (
        "[service h]\ncommand = /usr/bin/python3 %s %d %s\nready = http %s 200 good\n\n"
        "[service body]\ncommand = sleep 1000\nafter = h\nready = http %s 200 excellent\n\n"
        "[service any]\ncommand = sleep 1000\nready = http %s 503\nrequired = no\n" % (py, port, d, url, url, url)
    )
    with Sandbox(extra=extra) as sb:
        s = wait_state(sb, "h", "starting", reason="503")
        note("h while 503: %r" % s)
        expect_eq(readyz(sb)[0], 503, "/readyz while h answers 503")
        # The same answer is ready for a probe that wants 503.
        wait_event(sb, "service.ready", "any")
        touch(os.path.join(d, "healthy"))
        wait_event(sb, "service.ready", "h")
        s = wait_state(sb, "body", "starting", reason="excellent")
        note("body: %r" % s)
        st, body = readyz(sb)
        expect_eq(
            (st, body["checks"]["h"]["ok"], body["checks"]["body"]["ok"]),
            (503, True, False),
            "/readyz with body unready",
        )


@case("/readyz tells the current reason of a check whose reason changed but not its verdict")
def readyz_reason_fresh():
    d = scratch()
    py = write_file(d, "web_server.py", HTTP_SERVER, 0o644)
    port = free_port()
    # Not ready twice over: first the port is closed, then it answers 503.
    extra = (
        '[service h]\ncommand = /bin/sh -c "while [ ! -e %s/listen ]; do sleep 0.02; done; '
        'exec /usr/bin/python3 %s %d %s"\nready = http http://127.0.0.1:%d/ 200\n' % (d, py, port, d, port)
    )
    with Sandbox(extra=extra) as sb:

        def agree(word):
            now = wait_state(sb, "h", "starting", reason=word)["reason"]
            try:
                wait_readyz(sb, 503, 3, lambda b: word in b["checks"]["h"]["reason"])
            except TestFailure:
                raise TestFailure("state says %r, /readyz still %r" % (now, readyz(sb)[1]["checks"]["h"]["reason"]))

        agree("refused")
        touch(os.path.join(d, "listen"))
        agree("503")


# ---------------------------------------------------------------------
# Restarts


@case("restart with doubling backoff up to its cap: 50, 100, 200, 200")
def backoff():
    extra = (
        '[service flaky]\ncommand = /bin/sh -c "exit 1"\nbackoff_min_ms = 50\nbackoff_max_ms = 200\n'
        "max_deaths = 100\n"
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        seen, evs = restarting_delays(sb, "flaky", 4)
    expect_eq([x["delay_ms"] for x in seen], [50, 100, 200, 200], "delay_ms of the restarts")
    expect_eq([x["restarts"] for x in seen], [1, 2, 3, 4], "restarts of the restarts")
    exits = of(evs, "service.exited", "flaky")
    expect_eq(len(exits), 4, "exits before the 4th restart")
    expect(all(e["data"].get("code") == 1 for e in exits), "flaky's exits: %r" % exits)
    expect_eq(len(of(evs, "service.started", "flaky")), 4, "starts before the 4th restart")


@case("backoff starts over after a run that stayed ready backoff_reset_ms, not after a shorter one")
def backoff_reset():
    d = scratch()
    # Runs 1-4 exit at once; run 5 stays up $2 seconds; later runs exit at once.
    sh = write_file(
        d,
        "count.sh",
        "f=%s/count.$1\nn=$(cat $f 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > $f\n"
        "[ $n -eq 5 ] && sleep $2\nexit 1\n" % d,
    )
    common = "backoff_min_ms = 50\nbackoff_max_ms = 2000\nbackoff_reset_ms = 300\nmax_deaths = 100\n"
    extra = (
        "[service long]\ncommand = /bin/sh %s long 0.6\n%s\n"
        "[service short]\ncommand = /bin/sh %s short 0.1\n%s" % (sh, common, sh, common)
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        long_seen, _ = restarting_delays(sb, "long", 6)
        short_seen, _ = restarting_delays(sb, "short", 5)
    expect_eq([x["delay_ms"] for x in long_seen], [50, 100, 200, 400, 50, 100], "long's delays (reset after 0.6 s up)")
    expect_eq([x["delay_ms"] for x in short_seen], [50, 100, 200, 400, 800], "short's delays (0.1 s up: no reset)")


@case("max_deaths exits within the window: failed for good; requires fails, after starts; service.start revives")
def permanent_failure():
    # flaky is never ready, so its dependents wait for its verdict.
    extra = (
        '[service flaky]\ncommand = /bin/sh -c "exit 1"\nready = exec /bin/false\nmax_deaths = 3\n'
        "death_window_ms = 60000\nbackoff_min_ms = 20\nbackoff_max_ms = 40\n\n"
        "[service needs]\ncommand = sleep 1000\nrequires = flaky\n\n"
        "[service later]\ncommand = sleep 1000\nafter = flaky\n"
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        ev = wait_event(sb, "service.failed", "flaky")
        note("service.failed: %r" % ev["data"])
        expect(ev["data"]["reason"], "service.failed has no reason")
        expect_in("3 exits", ev["data"]["reason"], "service.failed's reason")
        ev = wait_event(sb, "service.failed", "needs")
        expect_eq(ev["data"]["reason"], "requires flaky, which failed", "needs' reason")
        wait_event(sb, "service.started", "later")
        # Many times the backoff: nothing more may start.
        time.sleep(0.3)
        evs = sb.events()
        expect_eq(len(of(evs, "service.started", "flaky")), 3, "flaky's starts")
        expect_eq(len(of(evs, "service.exited", "flaky")), 3, "flaky's exits")
        expect_eq(len(of(evs, "service.restarting", "flaky")), 2, "flaky's restarts")
        expect(not of(evs, "service.started", "needs"), "needs started")
        s = service(sb, "flaky")
        expect_eq((s["state"], s["pid"]), ("failed", 0), "flaky's state and pid")
        expect_in("3 exits", s["reason"], "flaky's reason in state")
        expect_eq(service(sb, "needs")["state"], "failed", "needs' state")
        expect_eq(service(sb, "later")["state"], "ready", "later's state")
        # service.start gives it a new life, with a new count of deaths.
        c = sb.unix()
        before = c.call("state")["last_seq"]
        c.call("service.start", {"name": "flaky"})
        wait_event(sb, "service.started", "flaky", before + 1)
        wait_event(sb, "service.failed", "flaky", before + 1)
        evs = sb.events(before + 1)
        expect_eq(len(of(evs, "service.exited", "flaky")), 3, "flaky's exits in its second life")


@case("exits spread wider than death_window_ms never make a service failed")
def death_window():
    # Delays 200, 400, 400...: no three exits fall within 300 ms.
    extra = (
        '[service slowflaky]\ncommand = /bin/sh -c "exit 1"\nmax_deaths = 3\ndeath_window_ms = 300\n'
        "backoff_min_ms = 200\nbackoff_max_ms = 400\n"
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        seen, evs = restarting_delays(sb, "slowflaky", 4)
    expect_eq([x["delay_ms"] for x in seen], [200, 400, 400, 400], "delays")
    expect(not of(evs, "service.failed"), "failed although its exits were spread out: %r" % of(evs, "service.failed"))


@case("a running service that requires one failing for good fails too")
def requirement_fails_later():
    d = scratch()
    # base is ready at once and dies only once told; top starts on it.
    extra = (
        '[service base]\ncommand = /bin/sh -c "while [ ! -e %s/die ]; do sleep 0.02; done; exit 1"\n'
        "max_deaths = 1\n\n"
        "[service top]\ncommand = sleep 1000\nrequires = base\n" % d
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        wait_event(sb, "service.ready", "top")
        touch(os.path.join(d, "die"))
        wait_event(sb, "service.failed", "base")
        ev = wait_event(sb, "service.failed", "top", timeout=5)
        expect_eq(ev["data"]["reason"], "requires base, which failed", "top's reason")
        expect_eq(service(sb, "top")["state"], "failed", "top's state")


# ---------------------------------------------------------------------
# Ops


LIST_FIELDS = {"name", "kind", "state", "reason", "pid", "since", "uptime_ms", "restarts", "required", "last_exit"}
STATUS_FIELDS = LIST_FIELDS | {"command", "after", "requires", "probe", "restart_policy", "main"}


@case("ops: service.list, status, stop (stays stopped), start, restart (new pid), and their errors")
def ops():
    extra = (
        "[service s]\ncommand = sleep 1000\nbackoff_min_ms = 20\nafter = t\n\n"
        "[service t]\ncommand = sleep 999\nrequired = no\n"
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        wait_event(sb, "service.ready", "s")
        c = sb.unix()
        listed = c.call("service.list")["services"]
        expect_eq(sorted(x["name"] for x in listed), ["gateway", "s", "t"], "the services listed")
        for x in listed:
            expect_eq(set(x), LIST_FIELDS, "fields of %s" % x["name"])
        st = c.call("service.status", {"name": "s"})
        expect_eq(set(st), STATUS_FIELDS, "service.status fields")
        keys = ("name", "state", "command", "after", "requires", "restart_policy", "main", "required")
        expect_eq(
            tuple(st[k] for k in keys),
            ("s", "ready", ["sleep", "1000"], ["t"], [], "always", False, True),
            "s's status",
        )
        expect(st["pid"] > 0 and st["last_exit"] is None and st["restarts"] == 0, "s's status: %r" % st)
        expect_eq(c.call("service.status", {"name": "t"})["required"], False, "t's required")
        old = st["pid"]

        before = c.call("state")["last_seq"]
        c.call("service.stop", {"name": "s"})
        ev = wait_event(sb, "service.exited", "s", before + 1)
        expect_eq((ev["data"]["pid"], ev["data"].get("signal")), (old, signal.SIGTERM), "s's exit")
        wait_state(sb, "s", "stopped")
        time.sleep(0.3)  # fifteen times its backoff: it must not come back
        evs = sb.events(before + 1)
        expect(not of(evs, "service.started", "s"), "s restarted after service.stop: %r" % of(evs, "service.started"))
        st = c.call("service.status", {"name": "s"})
        expect_eq(
            (st["state"], st["pid"], st["last_exit"]),
            ("stopped", 0, {"signal": signal.SIGTERM, "core": False}),
            "s after the stop",
        )

        before = c.call("state")["last_seq"]
        c.call("service.start", {"name": "s"})
        started = wait_event(sb, "service.started", "s", before + 1)["data"]["pid"]
        wait_state(sb, "s", "ready")

        before = c.call("state")["last_seq"]
        c.call("service.restart", {"name": "s"})
        ev = wait_event(sb, "service.started", "s", before + 1)
        expect(ev["data"]["pid"] not in (old, started), "service.restart kept the pid %d" % ev["data"]["pid"])
        evs = sb.events(before + 1)
        expect_eq(of(evs, "service.exited", "s")[0]["data"]["pid"], started, "the pid service.restart stopped")
        wait_state(sb, "s", "ready")

        for op in ("service.status", "service.start", "service.stop", "service.restart"):
            expect_eq(c.error_of(op, {"name": "ghost"}), "not_found", op + " of an unknown service")
            expect_eq(c.error_of(op, {}), "bad_args", op + " without a name")
        expect_eq(c.error_of("service.stop", {"name": "gateway"}), "forbidden", "service.stop of the gateway")
        expect_eq(service(sb, "gateway", c)["state"], "ready", "the gateway's state after the refused stop")


# ---------------------------------------------------------------------
# Config errors


def refused(text, lines, *words):
    """berthd given config text exits non-zero and its log names
    FILE:LINE (one of lines) and every word."""
    with Sandbox(config=text, wait=None) as sb:
        rc = sb.wait_exit(10)
        log = sb.log()
        path = sb.config_path
    expect(rc != 0, "berthd exited 0 with a bad config; log:\n%s" % log)
    found = [int(m) for m in re.findall(re.escape(path) + r":(\d+):", log)]
    expect(any(n in lines for n in found), "the log names none of %s:%r:\n%s" % (path, lines, log))
    for w in words:
        expect(w in log, "the log does not say %r:\n%s" % (w, log))
    return log


HEAD = "[berthd]\nstate_dir = /nonexistent\n\n"  # lines 1-3


@case("config: an unknown dependency names both services and the line")
def unknown_dependency():
    refused(HEAD + "[service a]\ncommand = true\nrequires = ghost\n", [4], '"a"', '"ghost"')


@case("config: a dependency cycle is refused, naming the cycle and a line")
def cycle():
    text = HEAD + (
        "[service a]\ncommand = true\nafter = c\n\n"  # line 4
        "[service b]\ncommand = true\nrequires = a\n\n"  # line 8
        "[service c]\ncommand = true\nafter = b\n"  # line 12
    )
    log = refused(text, [4, 5, 6, 8, 9, 10, 12, 13, 14], "cycle")
    # Each arrow points at what a service waits for: a at c, c at b, b at a.
    cycles = ("a -> c -> b -> a", "c -> b -> a -> c", "b -> a -> c -> b")
    expect(any(x in log for x in cycles), "the log does not spell the cycle out:\n%s" % log)


@case("config: two main services are refused, naming both")
def two_mains():
    text = HEAD + "[service a]\ncommand = true\nmain = yes\n\n[service b]\ncommand = true\nmain = yes\n"
    refused(text, [8], '"a"', '"b"', "main")


@case("config: an unknown ready type is refused")
def bad_ready_type():
    refused(HEAD + "[service a]\ncommand = true\nready = telepathy 1\n", [6], "telepathy")


@case("config: ready with the wrong number of arguments is refused")
def bad_ready_arity():
    refused(HEAD + "[service a]\ncommand = true\nready = tcp\n", [6], "tcp")
    refused(HEAD + "[service a]\ncommand = true\nready = sd_notify now\n", [6], "sd_notify")


@case("config: a bad stop_signal is refused")
def bad_stop_signal():
    refused(HEAD + "[service a]\ncommand = true\nstop_signal = SIGFOO\n", [6], "stop_signal", "SIGFOO")


@case("config: notify-fd 2 (or any fd under 3) is refused")
def bad_notify_fd():
    refused(HEAD + "[service a]\ncommand = true\nready = notify-fd 2\n", [6], "notify-fd")


@case("config: a check with a command, without ready, or with a notify probe is refused")
def bad_checks():
    refused(HEAD + "[check a]\nready = tcp 127.0.0.1:1\ncommand = true\n", [6], "command", "[check a]")
    refused(HEAD + "[check a]\nrequired = yes\n", [4], '"a"', "ready")
    refused(HEAD + "[check a]\nready = notify-fd 3\n", [5], "check")
    refused(HEAD + "[service a]\ncommand = true\n\n[check a]\nready = report\n", [7], '"a"', "twice")
    refused(HEAD + "[check a]\nready = cdp 127.0.0.1:1 please\n", [5], "auth")


@case("config: the TCP CDP relay needs the address it relays to")
def relay_needs_cdp():
    with Sandbox(config=HEAD + "[gateway]\ncdp_relay_listen = 127.0.0.1:9\n", wait=None) as sb:
        rc = sb.wait_exit(10)
        log = sb.log()
    expect(rc != 0, "berthd accepted cdp_relay_listen without cdp")
    expect("cdp_relay_listen needs cdp" in log, "the log does not say why:\n%s" % log)


# ---------------------------------------------------------------------
# Faults


@case("kill -9 a ready service five times: restarted each time, /readyz 503 then 200", timeout=120)
def kill_loop():
    d = scratch()
    f = os.path.join(d, "up")
    touch(f)
    # A long interval: the probe runs at each start, not while it is up,
    # so removing the file holds the next start in "starting" (and /readyz
    # at 503) until the test puts it back.
    extra = (
        "[service victim]\n%sready_interval_ms = 60000\nbackoff_min_ms = 50\nbackoff_max_ms = 50\n"
        "max_deaths = 100\n" % gated(f)
    )
    with Sandbox(extra=extra) as sb:
        wait_event(sb, "service.ready", "victim")
        wait_readyz(sb, 200)
        pids = [service(sb, "victim")["pid"]]
        for round in range(5):
            before = sb.state()["last_seq"]
            hp = sb.host_pid(pids[-1])
            os.unlink(f)
            os.kill(hp, signal.SIGKILL)
            body = wait_readyz(sb, 503)
            expect_eq(body["checks"]["victim"]["ok"], False, "round %d: /readyz's check" % round)
            touch(f)
            wait_event(sb, "service.ready", "victim", before + 1)
            wait_readyz(sb, 200)
            evs = sb.events(before + 1)
            mine = [e for e in evs if e["data"].get("name") == "victim"]
            kinds = event_kinds(mine)
            note("round %d: %r" % (round, [(e["kind"], e["data"]) for e in mine]))
            want = ["service.exited", "service.restarting", "service.starting", "service.started", "service.ready"]
            expect_eq([k for k in kinds if k in want], want, "round %d: the events, in order" % round)
            seq = {k: first_seq(mine, k, "victim") for k in want}
            # A failing check is announced again whenever its reason changes;
            # the verdicts, taken once each, go false then true.
            checks = of(mine, "check.changed")
            verdicts = [ok for i, ok in enumerate(e["data"]["ok"] for e in checks)
                        if i == 0 or ok != checks[i - 1]["data"]["ok"]]
            expect_eq(verdicts, [False, True], "round %d: check.changed verdicts" % round)
            expect(checks[0]["seq"] > seq["service.exited"], "round %d: check.changed ok=false before the exit" % round)
            expect(
                checks[-1]["seq"] > seq["service.started"], "round %d: check.changed ok=true before the start" % round
            )
            ex = of(mine, "service.exited")[0]["data"]
            expect_eq((ex["pid"], ex.get("signal")), (pids[-1], signal.SIGKILL), "round %d: the exit" % round)
            new = of(mine, "service.started")[0]["data"]["pid"]
            expect(new not in pids, "round %d: pid %d again" % (round, new))
            expect(not pid_alive(hp), "round %d: the killed process is still there" % round)
            pids.append(new)
        expect_eq(readyz(sb)[0], 200, "/readyz at the end")
        expect_eq(service(sb, "victim")["restarts"], 5, "victim's restarts")


run()
