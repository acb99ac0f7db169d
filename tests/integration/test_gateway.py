"""berth-gateway's HTTP face: the probes, /metrics, 404s, and the token
check before any WebSocket upgrade (refusals journaled, the token never
written anywhere)."""

import datetime
import os
import re
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    TestFailure,
    case,
    expect,
    expect_eq,
    http_get,
    http_json,
    note,
    parse_metrics,
    run,
    scratch,
    wait_for,
    ws_upgrade,
)

METRICS = [
    "berth_gateway_uptime_seconds",
    "berth_gateway_connections_total",
    "berth_gateway_connections_active",
    "berth_gateway_messages_in_total",
    "berth_gateway_messages_out_total",
    "berth_gateway_bytes_in_total",
    "berth_gateway_bytes_out_total",
    "berth_gateway_auth_failures_total",
    "berth_gateway_slow_consumer_drops_total",
    "berth_gateway_http_requests_total",
    "berth_gateway_upstream_connect_retries_total",
    "berth_events_total",
    "berth_up",
]


@case("/healthz: 200 with boot_id, version, uptime_ms and labels")
def healthz():
    with Sandbox() as sb:
        hello = sb.unix().hello_result
        status, headers, body = http_get(sb.port, "/healthz")
        expect_eq(status, 200, "status")
        expect("json" in headers.get("content-type", ""), "content-type: %r" % headers.get("content-type"))
        _, h = http_json(sb.port, "/healthz")
        expect_eq(h.get("status"), "ok", "status field")
        expect_eq(h.get("boot_id"), hello["boot_id"], "boot_id (hello's)")
        expect_eq(h.get("version"), hello["agent_version"], "version (hello's agent_version)")
        expect_eq(h.get("labels"), {"image": "minimal"}, "labels")
        expect(isinstance(h.get("uptime_ms"), int) and h["uptime_ms"] >= 0, "uptime_ms: %r" % h.get("uptime_ms"))
        # It is a clock, not a constant.
        wait_for(lambda: http_json(sb.port, "/healthz")[1]["uptime_ms"] > h["uptime_ms"], 3, "uptime_ms to grow")


def rfc3339(s):
    """An RFC 3339 UTC time with milliseconds, as seconds since the epoch."""
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


@case("/readyz: 200 ready with no checks, ready since berthd answered")
def readyz():
    t0 = time.time()
    with Sandbox() as sb:
        status, r = http_json(sb.port, "/readyz")
        t1 = time.time()
        expect_eq(status, 200, "status")
        expect_eq(sorted(r), ["checks", "ready", "ready_since"], "fields")
        expect_eq((r["ready"], r["checks"]), (True, {}), "ready and checks")
        since = rfc3339(r["ready_since"])
        expect(t0 - 0.01 <= since <= t1 + 0.01, "ready_since %s is not between the start and now" % r["ready_since"])


@case("/readyz unready: since a failing check's start, growing; why is the check and its reason; "
      "failed lists a service that failed for good; ready_since once ready")
def readyz_unready():
    gate = os.path.join(scratch(), "up")
    extra = (
        "[service web]\ncommand = sleep 1000\nready = exec /usr/bin/test -f %s\n\n"
        "[service crasher]\ncommand = /bin/false\nrequired = no\nmax_deaths = 1\n" % gate
    )
    t0 = time.time()
    with Sandbox(extra=extra, wait="socket") as sb:

        def unready():
            st, r = http_json(sb.port, "/readyz")
            u = r.get("unready") or {}
            return r if st == 503 and u.get("failed") and u.get("why") and "status" in u["why"][0] else None

        r = wait_for(unready, 20, "/readyz unready with crasher failed and web's check failing", 0.1)
        note("/readyz: %r" % r)
        u = r["unready"]
        expect_eq(r["ready"], False, "ready")
        expect_eq(u["failed"], ["crasher"], "failed")
        expect_eq(sb.state()["checks"]["web"]["ok"], False, "web's check")
        reason = sb.state()["checks"]["web"]["reason"]
        expect_eq(u["why"], ["check web: " + reason], "why")
        since = rfc3339(u["since"])
        expect_eq(since, rfc3339(r["checks"]["web"]["since"]), "since (web's check's since)")
        expect(t0 - 0.01 <= since <= time.time(), "since %s is not between the start and now" % u["since"])
        time.sleep(0.5)
        later = http_json(sb.port, "/readyz")[1]["unready"]
        expect_eq(later["since"], u["since"], "since, asked again")
        expect(later["for_ms"] >= u["for_ms"] + 450, "for_ms did not grow: %d then %d" % (u["for_ms"], later["for_ms"]))
        touched = time.time()
        open(gate, "w").close()
        r = wait_for(lambda: (lambda st_r: st_r[1] if st_r[0] == 200 else None)(http_json(sb.port, "/readyz")), 10, "/readyz 200")
        expect("unready" not in r, "unready while ready: %r" % r)
        expect(rfc3339(r["ready_since"]) >= touched - 0.01, "ready since %s, the gate was made at %.3f" % (r["ready_since"], touched))
        expect_eq(r["ready_since"], r["checks"]["web"]["since"], "ready_since (web's check turned ok)")


@case("/metrics: every metric is there and they move")
def metrics():
    with Sandbox() as sb:
        status, headers, body = http_get(sb.port, "/metrics")
        expect_eq(status, 200, "status")
        ctype = headers.get("content-type", "")
        expect(ctype.startswith("text/plain"), "content-type: %r" % ctype)
        m0, series0 = parse_metrics(body.decode())
        for name in METRICS:
            expect(name in m0, "metric %s missing from:\n%s" % (name, body.decode()))
        expect_eq(m0["berth_up"], 1, "berth_up")

        c = sb.ws()
        c.call("ping")
        expect_eq(ws_upgrade(sb.port, token="not-the-token")[0], 401, "refused upgrade")
        http_get(sb.port, "/healthz")
        m1, series1 = parse_metrics(http_get(sb.port, "/metrics")[2].decode())
        note("before: %r\nafter: %r" % (series0, series1))

        def rise(name):
            return m1["berth_gateway_" + name] - m0["berth_gateway_" + name]

        expect_eq(rise("connections_total"), 1, "connections_total's rise")
        expect_eq(rise("connections_active"), 1, "connections_active's rise")
        expect(rise("messages_in_total") >= 2, "messages_in_total did not count hello and ping")
        expect(rise("messages_out_total") >= 2, "messages_out_total did not count two responses")
        expect(rise("bytes_in_total") > 0, "bytes_in_total did not move")
        expect_eq(rise("auth_failures_total"), 1, "auth_failures_total's rise")
        key = 'berth_gateway_http_requests_total{path="/healthz"}'
        expect(series1.get(key, 0) >= series0.get(key, 0) + 1, "%s did not count the GET" % key)
        c.close()
        active = m0["berth_gateway_connections_active"]
        wait_for(lambda: sb.metrics()["berth_gateway_connections_active"] == active, 5, "connections_active down again")


@case("unknown path: 404")
def not_found():
    with Sandbox() as sb:
        for path in ("/nope", "/healthz/x", "/v2"):
            expect_eq(http_get(sb.port, path)[0], 404, "GET %s" % path)


def refusal(reason, **upgrade):
    """An upgrade with these arguments is refused with 401 (never 101),
    journaled as auth.failed with reason, and no token string shows up in
    the journal or the log."""
    with Sandbox() as sb:
        token = sb.token
        wrong = upgrade.pop("wrong", None)
        path = upgrade.pop("path", "/v1").replace("TOKEN", token)
        status, headers = ws_upgrade(sb.port, path=path, **upgrade)
        expect_eq(status, 401, "status of the upgrade")
        expect_eq(headers.get("www-authenticate", "").split(" ")[0].lower(), "bearer", "WWW-Authenticate")
        expect("sec-websocket-accept" not in headers, "the refusal carries Sec-WebSocket-Accept")
        ev = sb.wait_event(lambda e: e["kind"] == "auth.failed")
        expect_eq(ev["data"].get("reason"), reason, "auth.failed reason")
        expect_eq(ev["data"].get("peer"), "127.0.0.1", "auth.failed peer (the address, summed over its ports)")
        expect_eq(ev["data"].get("count"), 1, "auth.failed count")
        # A good connection afterwards, so the real token crossed the
        # gateway at least once too.
        sb.ws().call("ping")
        journal, log = sb.journal_bytes(), sb.log()
        for secret in filter(None, (token, wrong)):
            expect(secret.encode() not in journal, "a token is in the journal")
            expect(secret not in log, "a token is in the log")


@case("upgrade without a token: 401, auth.failed missing")
def no_token():
    refusal("missing")


@case("upgrade with a wrong token: 401, auth.failed invalid")
def wrong_token():
    wrong = "0123456789abcdef" * 4
    refusal("invalid", token=wrong, wrong=wrong)


@case("token in the URL query: 401, auth.failed missing")
def token_in_query():
    refusal("missing", path="/v1?token=TOKEN")


@case("not a bearer token: 401, auth.failed malformed")
def malformed_token():
    refusal("malformed", headers={"Authorization": "Basic dXNlcjpwYXNz"})


@case("the websockets library is refused too without the token")
def library_refused():
    import websockets.exceptions

    from harness import WsClient

    with Sandbox() as sb:
        try:
            WsClient(sb.url, token="f" * 64, hello=False)
        except websockets.exceptions.InvalidStatusCode as e:
            expect_eq(e.status_code, 401, "status")
        else:
            raise TestFailure("the upgrade with a wrong token succeeded")


@case("/healthz turns 503 while berthd does not answer, 200 again after")
def healthz_follows_berthd():
    with Sandbox() as sb:
        pid = sb.berthd_pid()
        os.kill(pid, signal.SIGSTOP)
        stopped_wall = time.time()
        try:
            stopped_at = time.monotonic()
            wait_for(lambda: http_get(sb.port, "/healthz")[0] == 503, 8, "/healthz 503 with berthd stopped", 0.1)
            note("503 after %.1f s" % (time.monotonic() - stopped_at))
            status, h = http_json(sb.port, "/healthz")
            expect_eq(status, 503, "status")
            expect_eq(h.get("status"), "unavailable", "status field")
            expect(h.get("reason"), "no reason in %r" % h)
            st, r = http_json(sb.port, "/readyz")
            expect_eq(st, 503, "/readyz status")
            expect_eq(sb.metrics()["berth_up"], 0, "berth_up")
            # Unready since berthd's last answer, a ping at most a second
            # (and a turn of the loop) before it stopped; why is the
            # reason, and it grows.
            u = r.get("unready")
            expect(u is not None, "no unready in %r" % r)
            note("/readyz with berthd stopped: %r" % r)
            expect_eq(len(u["why"]), 1, "why: %r" % u["why"])
            expect("ping" in u["why"][0] and "berthd" in u["why"][0], "why: %r" % u["why"])
            expect_eq(u["failed"], [], "failed")
            since = rfc3339(u["since"])
            expect(stopped_wall - 1.6 <= since <= stopped_wall, "unready since %s, berthd stopped at %.3f" % (u["since"], stopped_wall))
            expect(abs(u["for_ms"] / 1000 - (time.time() - since)) < 0.5, "for_ms %d from since %s" % (u["for_ms"], u["since"]))
            time.sleep(0.3)
            later = http_json(sb.port, "/readyz")[1]["unready"]
            expect_eq(later["since"], u["since"], "since, asked again")
            expect(later["for_ms"] >= u["for_ms"] + 250, "for_ms did not grow: %d then %d" % (u["for_ms"], later["for_ms"]))
        finally:
            cont_wall = time.time()
            os.kill(pid, signal.SIGCONT)
        wait_for(lambda: http_get(sb.port, "/healthz")[0] == 200, 8, "/healthz 200 after SIGCONT", 0.05)
        st, r = http_json(sb.port, "/readyz")
        expect_eq(st, 200, "/readyz status after SIGCONT")
        expect("unready" not in r, "unready while ready: %r" % r)
        expect(rfc3339(r["ready_since"]) >= cont_wall - 0.01, "ready since %s, berthd went on at %.3f" % (r["ready_since"], cont_wall))
        sb.ws().call("ping")


@case("/healthz after the gateway's loop stood still for 4 s: 200, berthd answered the ping meanwhile")
def healthz_after_gateway_stall():
    with Sandbox() as sb:
        gw = sb.gateway_pid()
        # The gateway stopped is its loop busy elsewhere: berthd's pong
        # waits unread in the liveness socket, and the probe's request in
        # the HTTP one, both read at the same turn once it goes on.
        statuses = []
        for _ in range(3):
            os.kill(gw, signal.SIGSTOP)
            try:
                time.sleep(4)
                s = socket.create_connection(("127.0.0.1", sb.port), timeout=10)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            finally:
                os.kill(gw, signal.SIGCONT)
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            s.close()
            statuses.append(data.split(b"\r\n", 1)[0].decode())
            note("after the stall: %r" % data[-200:])
        expect_eq(statuses, ["HTTP/1.1 200 OK"] * 3, "/healthz's answers after each stall")


@case("an upgrade while berthd cannot check the token: 503 within the check's deadline, never 101 or 401")
def upgrade_without_berthd():
    with Sandbox() as sb:
        token = sb.token
        expect_eq(ws_upgrade(sb.port, token=token)[0], 101, "an upgrade with berthd up")
        pid = sb.berthd_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            t = time.monotonic()
            status, _ = ws_upgrade(sb.port, token=token, timeout=5.0)
            took = time.monotonic() - t
            expect_eq(status, 503, "an upgrade with the token, berthd stopped")
            expect(0.9 < took < 3.0, "the answer took %.2f s (the deadline is 1 s)" % took)
            expect_eq(ws_upgrade(sb.port, token="x" * 64, timeout=5.0)[0], 503, "with a wrong token")
        finally:
            os.kill(pid, signal.SIGCONT)
        # The late answers are not taken for later questions.
        expect_eq(ws_upgrade(sb.port, token="x" * 64)[0], 401, "a wrong token after SIGCONT")
        expect_eq(ws_upgrade(sb.port, token=token)[0], 101, "the token after SIGCONT")
        sb.ws().call("ping")


run()
