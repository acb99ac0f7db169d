"""berth-gateway's HTTP face: the probes, /metrics, 404s, and the token
check before any WebSocket upgrade (refusals journaled, the token never
written anywhere)."""

import os
import re
import signal
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


@case("/readyz: 200 ready with no checks")
def readyz():
    with Sandbox() as sb:
        status, r = http_json(sb.port, "/readyz")
        expect_eq(status, 200, "status")
        expect_eq(r, {"ready": True, "checks": {}}, "body")


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
        try:
            stopped_at = time.monotonic()
            wait_for(lambda: http_get(sb.port, "/healthz")[0] == 503, 8, "/healthz 503 with berthd stopped", 0.1)
            note("503 after %.1f s" % (time.monotonic() - stopped_at))
            status, h = http_json(sb.port, "/healthz")
            expect_eq(status, 503, "status")
            expect_eq(h.get("status"), "unavailable", "status field")
            expect(h.get("reason"), "no reason in %r" % h)
            expect_eq(http_get(sb.port, "/readyz")[0], 503, "/readyz status")
            expect_eq(sb.metrics()["berth_up"], 0, "berth_up")
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_for(lambda: http_get(sb.port, "/healthz")[0] == 200, 8, "/healthz 200 after SIGCONT", 0.05)
        expect_eq(http_get(sb.port, "/readyz")[0], 200, "/readyz status after SIGCONT")
        sb.ws().call("ping")


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
