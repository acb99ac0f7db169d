"""What the gateway holds for one WebSocket client, and what it tells a
client it gives up on: at most max_in_flight (256, as hello says)
requests unanswered, one more is 4008 with the count; a message over
max_message gets the error too_large before the 1009; a message of a
type the server does not know gets unknown_type and the connection goes
on (on berthd's socket too); a client that stops reading while a command
floods it is closed."""

import os
import sys
import time

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import MAX_MSG, Closed, Sandbox, case, expect, expect_eq, note, raw_ws_socket, run, wait_for  # noqa: E402

IN_FLIGHT = 256
REASON = "slow consumer: %d requests in flight; resume with from_seq and resend unanswered requests" % (IN_FLIGHT + 1)


def close_of(c, timeout=10.0):
    """Reads until the server closes: (code, reason, messages read)."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            seen.append(c.recv(max(deadline - time.monotonic(), 0.01)))
        except Closed as e:
            return e.code, e.reason, seen


# berthd takes at most this many waits on one process.
WAITS_PER_PROC = 64


def sleepers(c, n=IN_FLIGHT // WAITS_PER_PROC):
    """Commands that run until they are killed; their ids."""
    return [c.call("proc.start", {"argv": ["sleep", "600"]})["id"] for _ in range(n)]


def waits(c, pids, n):
    """n proc.waits spread over pids, none answered while they run; their
    ids."""
    return [c.send_request("proc.wait", {"id": pids[i // WAITS_PER_PROC]}) for i in range(n)]


def kill(sb, pids):
    """Kills the commands from another connection."""
    other = sb.ws()
    for pid in pids:
        other.call("proc.signal", {"id": pid, "signal": "KILL"})


@case("256 requests unanswered, the number hello states: the connection stays, and all 256 are answered")
def at_the_limit():
    with Sandbox() as sb:
        c = sb.ws()
        expect_eq(c.hello_result["limits"]["max_in_flight"], IN_FLIGHT, "hello's limits.max_in_flight")
        pids = sleepers(c)
        ids = waits(c, pids, IN_FLIGHT)
        # The waits reach berthd before the kill does: they are in flight.
        time.sleep(1)
        kill(sb, pids)
        got = [c.response(i, timeout=20) for i in ids]
        expect(all(r["ok"] for r in got), "a proc.wait failed: %r" % [r for r in got if not r["ok"]][:1])
        expect(c.call("ping") is not None, "ping after 256 answers")
        expect_eq(sb.metrics()["berth_gateway_slow_consumer_drops_total"], 0, "slow consumer drops")


@case("a request past 256 unanswered ones: 4008 naming the count")
def past_the_limit():
    with Sandbox() as sb:
        c = sb.ws()
        c.subscribe()
        pids = sleepers(c)
        waits(c, pids, IN_FLIGHT)
        # Events written to the client meanwhile answer nothing.
        other = sb.ws()
        for _ in range(5):
            other.call("proc.start", {"argv": ["true"]})
        time.sleep(1)
        c.send_request("ping")
        code, reason, seen = close_of(c)
        note("close %s %r after %d messages" % (code, reason, len(seen)))
        expect_eq(code, 4008, "close code")
        expect_eq(reason, REASON, "close reason")
        expect_eq(sb.metrics()["berth_gateway_slow_consumer_drops_total"], 1, "slow consumer drops")
        # Nothing was answered: no pong slipped through; the events did.
        expect_eq([m for m in seen if m.get("type") == "response"], [], "responses before the close")
        expect(any(m.get("type") == "event" for m in seen), "no event came before the close")
        kill(sb, pids)


@case("answers written to the client end requests in flight: 1000 pings, 200 at a time, are all answered")
def answers_count_down():
    with Sandbox() as sb:
        c = sb.ws()
        for _ in range(5):
            ids = [c.send_request("ping") for _ in range(200)]
            for i in ids:
                expect(c.response(i, timeout=20)["ok"], "a ping failed")
        pids = sleepers(c)
        # The 1000 answers counted down: 256 more still fit.
        ids = waits(c, pids, IN_FLIGHT)
        time.sleep(1)
        kill(sb, pids)
        expect(all(c.response(i, timeout=20)["ok"] for i in ids), "a proc.wait failed")


def expect_too_large(c):
    code, reason, seen = close_of(c, timeout=20)
    note("close %s %r after %r" % (code, reason, seen))
    expect_eq(code, 1009, "close code")
    errors = [(m["id"], m["error"]["code"]) for m in seen if m.get("type") == "response" and not m.get("ok")]
    expect_eq(errors, [(0, "too_large")], "the error responses before the close")


@case("a message over max_message: the error too_large (id 0), then 1009")
def too_large():
    with Sandbox() as sb:
        c = sb.ws()
        # The header announces it; the gateway does not wait for the rest.
        c.send_frame(2, b"\x80" * 1000, length=MAX_MSG + 1)
        expect_too_large(c)
    with Sandbox() as sb:
        c = sb.ws()
        big = msgpack.packb({"type": "request", "id": 2, "op": "ping", "args": {"pad": b"x" * MAX_MSG}})
        try:
            c.send_raw(big)
        except Closed:
            pass
        expect_too_large(c)


@case("messages of a type other than request: unknown_type under their id (or 0), the connection goes on, "
      "through the gateway and on berthd's socket alike", transports=("ws", "unix"))
def unknown_type(transport):
    with Sandbox() as sb:
        c = sb.ws() if transport == "ws" else sb.unix()
        for msg, want in (
            ({"type": "request.v2", "id": 5, "op": "ping"}, 5),
            ({"type": "cancel"}, 0),
            ({"type": "future", "id": "7"}, 0),
            ({"type": "response", "id": 3, "ok": True, "result": {}}, 3),
            ({"type": "event", "seq": 1, "ts": 1, "kind": "x", "data": {}}, 0),
        ):
            c.send(msg)
            r = c.recv()
            expect_eq((r["type"], r["id"], r["ok"], r["error"]["code"]), ("response", want, False, "unknown_type"), "the answer to %r" % msg)
        expect(c.call("ping") is not None, "ping after the unknown types")


def flood_unread(sb, pause):
    """A client that stops reading while a command floods it, and reads
    again pause seconds after the gateway dropped it: (close code, reason,
    seconds from the drop to the end)."""
    c = sb.ws(sock=raw_ws_socket(sb.port, rcvbuf=4096))
    c.send_request("proc.start", {"argv": ["yes"], "attach": True, "timeout_ms": 120000})
    wait_for(lambda: sb.metrics()["berth_gateway_slow_consumer_drops_total"] >= 1, 30, "the drop")
    dropped = time.monotonic()
    time.sleep(pause)
    code, reason, seen = close_of(c, timeout=30)
    took = time.monotonic() - dropped
    note("close %s %r after %d messages, %.1f s after the drop" % (code, reason, len(seen), took))
    expect(sb.ws().call("ping") is not None, "another client after the drop")
    return code, reason, took


@case("a client that stops reading while a command floods it, and reads again at once: 4008")
def stops_reading():
    with Sandbox(extra="[gateway]\nclient_queue = 1M\nclient_stall_ms = 1000\n") as sb:
        code, reason, _ = flood_unread(sb, 0)
        expect_eq((code, reason), (4008, "slow consumer: resume with from_seq"), "the close")


@case("a client that stops reading while a command floods it, for longer than the close's 5 s of grace: "
      "4008 if its socket took the close frame, else none (1006); either way the gateway lets it go")
def stops_reading_for_good():
    with Sandbox(extra="[gateway]\nclient_queue = 1M\nclient_stall_ms = 1000\n") as sb:
        code, reason, _ = flood_unread(sb, 8)
        expect((code, reason) in ((4008, "slow consumer: resume with from_seq"), (None, "")),
               "the close: %r %r" % (code, reason))
        # The one left is the client flood_unread pinged with.
        wait_for(lambda: sb.metrics()["berth_gateway_connections_active"] == 1, 10, "the gateway to forget the client")


run()
