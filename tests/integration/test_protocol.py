"""berth.v1 on both transports: hello, ping, state, errors, hostile
input, and the event stream (replay, live, repositioning, gaps)."""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import msgpack  # noqa: E402

from harness import (  # noqa: E402
    MAX_MSG,
    Closed,
    Sandbox,
    Timeout,
    case,
    event_kinds,
    expect,
    expect_contiguous,
    expect_eq,
    generate_events,
    note,
    run,
    ws_upgrade,
)

REMOTE_OPS = ["hello", "ping", "state", "events.subscribe", "events.unsubscribe", "request.cancel",
              "service.list", "service.status", "service.start", "service.stop",
              "service.restart", "service.signal", "pty.open", "pty.attach", "pty.detach", "pty.input",
              "pty.resize", "pty.signal", "pty.close", "pty.list",
              "proc.start", "proc.attach", "proc.ack", "proc.detach", "proc.input", "proc.close_stdin",
              "proc.signal", "proc.wait", "proc.list",
              "secrets.set", "secrets.unset", "secrets.list",
              "fs.stat", "fs.list", "fs.read", "fs.write", "fs.mkdir", "fs.move", "fs.remove",
              "fs.chmod", "fs.watch", "fs.unwatch", "fs.watches",
              "artifact.publish", "artifact.read", "artifact.list",
              "runtime.list", "runtime.start", "runtime.stop", "runtime.status",
              "runtime.pause", "runtime.resume", "limits.status", "workspace.prepare",
              "task.run", "task.show", "task.list", "task.attach", "task.cancel", "task.deliver",
              "grant.create", "grant.list", "grant.revoke", "port.list"]
# Served only where there is a desktop, so not listed by the minimal sandbox's hello.
DESKTOP_OPS = ["desktop.screenshot", "desktop.input", "desktop.cursor", "desktop.info", "desktop.windows",
               "desktop.wait_change", "record.start", "record.stop", "record.status"]
LOCAL_OPS = ["check.report", "gateway.attach", "gateway.auth_failed", "gateway.check", "gateway.redeem",
             "desktop.provide", "desktop.emit"]


def check_hello(h, capabilities):
    expect_eq(h["version"], "berth.v1", "version")
    expect(re.fullmatch(r"[0-9a-f]{32}", h["boot_id"]), "boot_id is not 32 hex digits: %r" % h["boot_id"])
    expect(re.fullmatch(r"\d+\.\d+\.\d+.*", h["agent_version"]), "agent_version: %r" % h["agent_version"])
    expect_eq(h["labels"], {"image": "minimal"}, "labels")
    expect_eq(sorted(h["capabilities"]), sorted(capabilities), "capabilities")
    expect_eq(h["features"], {"desktop": False, "recording": False, "runtimes": [], "previews": False,
                              "idempotency_keys": 4096}, "features")
    expect_eq(h["limits"], {"max_message": MAX_MSG, "max_depth": 32, "max_in_flight": 256}, "limits")
    expect_eq(h["pid"], 1, "pid")
    now = time.time() * 1000
    expect(now - 3600e3 < h["started_at"] <= now + 1000, "started_at is not a recent ms time: %r" % h["started_at"])


def check_state(st, boot_id):
    expect_eq(st["boot_id"], boot_id, "state's boot_id")
    expect_eq(st["pid"], 1, "state's pid")
    expect_eq(st["version"], "berth.v1", "state's version (the protocol's)")
    expect(re.fullmatch(r"\d+\.\d+\.\d+.*", st["agent_version"]), "state's agent_version: %r" % st["agent_version"])
    expect_eq(st["checks"], {}, "checks")
    expect_eq(st["first_seq"], 1, "first_seq")
    expect(st["last_seq"] >= 2, "last_seq below 2 (berthd.started, service.started): %r" % st["last_seq"])
    gw = [s for s in st["services"] if s["name"] == "gateway"]
    expect(len(gw) == 1, "no gateway service in %r" % st["services"])
    expect_eq(gw[0]["state"], "ready", "the gateway's state")
    expect(gw[0]["pid"] > 1, "the gateway's pid: %r" % gw[0]["pid"])
    for key in ("since", "uptime_ms", "restarts", "last_exit"):
        expect(key in gw[0], "service lacks %s: %r" % (key, gw[0]))


@case("ws: hello answers version, boot id, labels, remote capabilities, limits")
def ws_hello():
    with Sandbox() as sb:
        check_hello(sb.ws().hello_result, REMOTE_OPS)


@case("ws: ping and state")
def ws_ping_state():
    with Sandbox() as sb:
        c = sb.ws()
        boot = c.hello_result["boot_id"]
        p = c.call("ping")
        expect_eq(p["boot_id"], boot, "ping's boot_id")
        expect(abs(p["ts"] - time.time() * 1000) < 60e3, "ping's ts is not now: %r" % p["ts"])
        check_state(c.call("state"), boot)


@case("ws: unsupported version is refused, the connection stays usable")
def ws_unsupported_version():
    with Sandbox() as sb:
        c = sb.ws(hello=False)
        r = c.request("hello", {"version": "berth.v0", "client": "old/1"})
        expect(not r["ok"], "hello berth.v0 succeeded")
        expect_eq(r["error"]["code"], "unsupported_version", "error code")
        expect("berth.v1" in r["error"]["message"], "the message does not name berth.v1: %r" % r["error"])
        expect_eq(c.error_of("ping"), "hello_required", "ping after a refused hello")
        c.hello()
        c.call("ping")


@case("ws: a request before hello gets hello_required")
def ws_hello_required():
    with Sandbox() as sb:
        c = sb.ws(hello=False)
        for op in ("ping", "state", "events.subscribe"):
            expect_eq(c.error_of(op), "hello_required", op + " before hello")
        c.hello()
        c.call("state")


@case("ws: unknown op gets unknown_op")
def ws_unknown_op():
    with Sandbox() as sb:
        c = sb.ws()
        expect_eq(c.error_of("no.such.op"), "unknown_op", "error code")
        c.call("ping")


@case("ws: local ops are forbidden and do nothing")
def ws_local_ops():
    with Sandbox() as sb:
        c = sb.ws()
        before = sb.state()["last_seq"]
        expect_eq(c.error_of("gateway.attach", {"peer": "1.2.3.4:5"}), "forbidden", "gateway.attach")
        code = c.error_of("gateway.auth_failed", {"peer": "1.2.3.4:5", "reason": "invalid"})
        expect_eq(code, "forbidden", "gateway.auth_failed")
        c.call("ping")
        expect_eq(sb.state()["last_seq"], before, "last_seq (nothing journaled)")


@case("ws: a non-msgpack frame gets bad_message, then close 1008")
def ws_garbage():
    with Sandbox() as sb:
        c = sb.ws()
        c.send_raw(b"\xc1garbage")
        r = c.recv()
        expect_eq((r["type"], r["id"], r["ok"]), ("response", 0, False), "the answer")
        expect_eq(r["error"]["code"], "bad_message", "error code")
        code, _ = c.wait_closed()
        expect_eq(code, 1008, "close code")


@case("ws: a response sent by the client is unknown_type under its id; the connection stays")
def ws_not_a_request():
    with Sandbox() as sb:
        c = sb.ws()
        c.send({"type": "response", "id": 3, "ok": True, "result": {}})
        r = c.recv()
        expect_eq((r["id"], r["error"]["code"]), (3, "unknown_type"), "the answer")
        expect(c.call("ping") is not None, "ping after it")


@case("ws: a message at the limit is accepted")
def ws_at_limit():
    with Sandbox() as sb:
        c = sb.ws()
        head = msgpack.packb({"type": "request", "id": 2, "op": "ping", "args": {"pad": b""}})
        pad = MAX_MSG - len(head) - 5  # bin 32 adds 4 bytes of length
        msg = msgpack.packb({"type": "request", "id": 2, "op": "ping", "args": {"pad": b"x" * pad}})
        expect(len(msg) <= MAX_MSG, "test message is %d bytes" % len(msg))
        c.send_raw(msg)
        r = c.recv(timeout=15)
        expect_eq((r["id"], r["ok"]), (2, True), "the response to an 8 MiB ping")


@case("ws: nesting 40 deep gets bad_message and is closed")
def ws_deep():
    with Sandbox() as sb:
        c = sb.ws()
        deep = []
        for _ in range(40):
            deep = [deep]
        c.send({"type": "request", "id": 5, "op": "ping", "args": {"x": deep}})
        r = c.recv()
        expect_eq(r["error"]["code"], "bad_message", "error code")
        expect_eq(c.wait_closed()[0], 1008, "close code")


@case("ws: a text frame closes with 1003")
def ws_text():
    with Sandbox() as sb:
        c = sb.ws()
        c.send_raw('{"type": "request", "id": 1, "op": "ping"}')
        expect_eq(c.wait_closed()[0], 1003, "close code")


@case("ws: a fragmented message is put together")
def ws_fragments():
    with Sandbox() as sb:
        c = sb.ws()
        msg = msgpack.packb({"type": "request", "id": 9, "op": "ping", "args": {}})
        c.send_frame(2, msg[:5], fin=False)
        c.send_frame(0, msg[5:10], fin=False)
        c.send_frame(0, msg[10:], fin=True)
        r = c.recv()
        expect_eq((r["id"], r["ok"]), (9, True), "the response")


@case("unix: hello, ping, state and subscribe")
def unix_basics():
    with Sandbox() as sb:
        c = sb.unix(hello=False)
        expect_eq(c.error_of("ping"), "hello_required", "ping before hello")
        h = c.hello()
        check_hello(h, REMOTE_OPS + LOCAL_OPS)
        expect_eq(c.call("ping")["boot_id"], h["boot_id"], "ping's boot_id")
        st = c.call("state")
        check_state(st, h["boot_id"])
        sub = c.subscribe(1)
        expect_eq(sub, {"first_seq": 1, "last_seq": st["last_seq"], "from_seq": 1}, "subscribe's result")
        evs = c.events_until(lambda e: e["seq"] >= st["last_seq"])
        expect_contiguous([e["seq"] for e in evs], 1, st["last_seq"])
        expect_eq(evs[0]["kind"], "berthd.started", "the first event")
        expect_eq(evs[0]["data"]["boot_id"], h["boot_id"], "berthd.started's boot_id")


@case("unix: gateway.attach makes the connection remote: local ops forbidden from then on")
def unix_attach():
    with Sandbox() as sb:
        c = sb.unix(hello=False)
        expect_eq(c.call("gateway.attach", {"peer": "192.0.2.1:4000"}), {}, "gateway.attach's result")
        check_hello(c.hello(), REMOTE_OPS)
        before = c.call("state")["last_seq"]
        local = (("gateway.attach", {"peer": "x:1"}), ("gateway.auth_failed", {"peer": "x:1", "reason": "invalid"}))
        for op, args in local:
            expect_eq(c.error_of(op, args), "forbidden", op + " on an attached connection")
        expect_eq(c.call("state")["last_seq"], before, "last_seq (nothing journaled)")


@case("unix: garbage gets bad_message and the connection is closed")
def unix_garbage():
    with Sandbox() as sb:
        c = sb.unix()
        c.send_raw(b"\xc1\xc1")
        r = c.recv()
        expect_eq((r["id"], r["error"]["code"]), (0, "bad_message"), "the answer")
        try:
            extra = c.recv(timeout=5)
        except Closed:
            pass
        else:
            raise AssertionError("the connection stayed open; got %r" % (extra,))
        sb.unix().call("ping")  # and berthd is fine


@case("unix: an oversized frame gets too_large and the connection is closed")
def unix_too_large():
    with Sandbox() as sb:
        c = sb.unix()
        c.send_bytes((MAX_MSG + 1).to_bytes(4, "big"))
        r = c.recv()
        expect_eq((r["id"], r["error"]["code"]), (0, "too_large"), "the answer")
        try:
            c.recv(timeout=5)
            raise AssertionError("the connection stayed open")
        except Closed:
            pass


@case("ws: subscribe from 0 replays from seq 1 in order, then live events")
def ws_replay_then_live():
    with Sandbox() as sb:
        c = sb.ws()
        sub = c.subscribe(0)
        expect_eq(sub["from_seq"], 1, "effective from_seq")
        last = sub["last_seq"]
        evs = c.events_until(lambda e: e["seq"] >= last)
        expect_contiguous([e["seq"] for e in evs], 1, last)
        expect_eq(evs[0]["kind"], "berthd.started", "the first event")
        for e in evs:
            expect(isinstance(e["ts"], int) and isinstance(e["data"], dict), "event shape: %r" % e)
        expect_eq(ws_upgrade(sb.port, token="bad")[0], 401, "the refused upgrade")
        live = c.next_event()
        expect_eq((live["seq"], live["kind"]), (last + 1, "auth.failed"), "the live event")
        expect_eq(live["data"]["reason"], "invalid", "its reason")
        # The same events, byte for byte, as the Unix socket replays them.
        expect_eq(evs + [live], sb.events(1), "the WebSocket replay against the Unix one")


@case("ws: subscribe without from_seq gets only new events")
def ws_live_only():
    with Sandbox() as sb:
        c = sb.ws()
        sub = c.subscribe()
        expect_eq(sub["from_seq"], sub["last_seq"] + 1, "effective from_seq")
        expect_eq(ws_upgrade(sb.port)[0], 401, "the refused upgrade")
        ev = c.next_event()
        expect_eq((ev["seq"], ev["kind"]), (sub["from_seq"], "auth.failed"), "the first event received")


@case("ws: unsubscribe stops the stream; subscribing again repositions it")
def ws_unsubscribe_resubscribe():
    with Sandbox() as sb:
        c = sb.ws()
        last = c.subscribe(1)["last_seq"]
        c.events_until(lambda e: e["seq"] >= last)
        expect_eq(c.call("events.unsubscribe"), {}, "unsubscribe's result")
        generate_events(sb, 3)
        c.call("ping")
        # berthd queues an event before any later response: none came.
        try:
            stray = c.recv(timeout=0.3)
            raise AssertionError("a message after unsubscribe: %r" % (stray,))
        except Timeout:
            pass
        c.subscribe(2)
        expect_eq(c.next_event()["seq"], 2, "the first seq after subscribing from 2")
        c.subscribe(last + 2)
        expect_eq(c.next_event()["seq"], last + 2, "the first seq after subscribing from %d" % (last + 2))


@case("subscribe past the end: nothing below from_seq, no bogus gap")
def subscribe_past_end():
    with Sandbox(wait="socket") as sb:
        c = sb.unix()
        last = c.call("state")["last_seq"]
        r = c.request("events.subscribe", {"from_seq": last + 3})
        generate_events(sb, 5)
        if not r["ok"]:
            # Refusing a position that does not exist yet keeps the promise too.
            expect_eq(r["error"]["code"], "bad_args", "the refusal's code")
            return
        ev = c.next_event()
        expect_eq((ev["seq"], ev["kind"]), (last + 3, "auth.failed"), "the first event from seq %d" % (last + 3))


@case("subscribe with a from_seq that is not a uint gets bad_args")
def subscribe_bad_args():
    with Sandbox(wait="socket") as sb:
        c = sb.unix()
        for bad in ("1", -1, 1.5, [1]):
            expect_eq(c.error_of("events.subscribe", {"from_seq": bad}), "bad_args", "from_seq %r" % (bad,))
        c.call("ping")


@case("a from_seq older than the journal gets events.gap first, and from_seq answers the first seq sent")
def gap():
    extra = "[journal]\nmax_bytes = 64K\nsegment_bytes = 16K\n"
    with Sandbox(extra=extra) as sb:
        last = generate_events(sb, 1500, peer="127.0.0.1:" + "9" * 40)
        st = sb.state()
        first = st["first_seq"]
        note("journal holds %d..%d" % (first, st["last_seq"]))
        expect(first > 1, "the journal was not trimmed (first_seq %d)" % first)
        for c in (sb.unix(), sb.ws()):
            sub = c.subscribe(1)
            expect_eq(sub["first_seq"], first, "subscribe's first_seq")
            g = c.next_event()
            expect_eq((g["seq"], g["kind"]), (0, "events.gap"), "the first event")
            expect_eq(g["data"], {"requested": 1, "first_seq": first, "lost": first - 1}, "the gap's data")
            evs = c.events_until(lambda e: e["seq"] >= last, timeout=15)
            expect_contiguous([e["seq"] for e in evs], first, last)
            expect_eq(sub["from_seq"], evs[0]["seq"], "subscribe's from_seq: the first event sent")
        expect(event_kinds(evs)[-1] == "auth.failed", "the last event: %r" % evs[-1])


run()
