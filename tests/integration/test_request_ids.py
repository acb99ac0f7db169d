"""Request ids and request.cancel, on both transports: a request whose id
is missing, not a uint or 0 is bad_id under id 0 and the connection goes
on; a second request under the id of a waiting one is duplicate_id and
the first is still answered; request.cancel answers a waiting request
cancelled (the command runs on), tells whether there was one to cancel,
drops the late answer of a forwarded desktop op, and keeps the gateway's
count of requests in flight exact."""

import os
import pwd
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Closed, Sandbox, Timeout, case, expect, expect_eq, run, scratch, shfile, wait_for  # noqa: E402

IN_FLIGHT = 256
# berthd takes at most this many waits on one process.
WAITS_PER_PROC = 64


def client(sb, transport):
    return sb.ws() if transport == "ws" else sb.unix()


def expect_silent(c, msg_id, seconds=1.0):
    """Nothing more comes under msg_id for a while."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            m = c.recv(left)
        except Timeout:
            return
        expect(not (m.get("type") == "response" and m.get("id") == msg_id),
               "a second answer under id %d: %r" % (msg_id, m))


def expect_cancelled(r, msg_id):
    expect_eq((r["id"], r["ok"], r["error"]["code"], r["error"]["message"]),
              (msg_id, False, "cancelled", "cancelled by request.cancel"), "the cancelled request's answer")


def state_of(c, pid):
    return {q["id"]: q for q in c.call("proc.list")["procs"]}[pid]["state"]


@case("an id that is missing, not a uint, or 0: bad_id under id 0, and the next ping is answered",
      transports=("ws", "unix"))
def bad_ids(transport):
    with Sandbox() as sb:
        c = client(sb, transport)
        for msg in (
            {"type": "request", "id": 0, "op": "ping"},
            {"type": "request", "id": "7", "op": "ping"},
            {"type": "request", "op": "ping"},
            {"type": "request", "id": -3, "op": "ping"},
            {"type": "request", "id": 1.5, "op": "proc.list"},
        ):
            c.send(msg)
            r = c.recv()
            expect_eq((r["type"], r["id"], r["ok"], r["error"]["code"]), ("response", 0, False, "bad_id"),
                      "the answer to %r" % msg)
            expect(c.call("ping") is not None, "ping after %r" % msg)


@case("a duplicate id of a waiting proc.wait: duplicate_id under that id; the first still answers at the exit, "
      "and the id is free again once answered", transports=("ws", "unix"))
def duplicate_of_wait(transport):
    with Sandbox() as sb:
        c = client(sb, transport)
        pid = c.call("proc.start", {"argv": ["sleep", "600"]})["id"]
        wid = 1000
        c.send({"type": "request", "id": wid, "op": "proc.wait", "args": {"id": pid}})
        c.call("ping")  # the wait has reached berthd
        c.send({"type": "request", "id": wid, "op": "ping", "args": {}})
        r = c.response(wid)
        expect_eq((r["ok"], r["error"]["code"]), (False, "duplicate_id"), "the duplicate's answer")
        c.call("proc.signal", {"id": pid, "signal": "KILL"})
        w = c.response(wid, 10, "the first proc.wait")
        expect_eq((w["ok"], w["result"]["state"], w["result"]["exit"]["signal"]), (True, "exited", 9),
                  "the first proc.wait's answer")
        c.send({"type": "request", "id": wid, "op": "ping", "args": {}})
        expect(c.response(wid)["ok"], "a ping under the id once its wait was answered")


@case("request.cancel of a waiting proc.wait: it is answered cancelled, cancel says true, the command runs on, "
      "a new proc.wait works, and nothing more comes under the cancelled id", transports=("ws", "unix"))
def cancel_wait(transport):
    with Sandbox() as sb:
        c = client(sb, transport)
        pid = c.call("proc.start", {"argv": ["sleep", "600"]})["id"]
        wid = c.send_request("proc.wait", {"id": pid})
        expect_eq(c.call("request.cancel", {"id": wid}), {"cancelled": True}, "cancel's result")
        expect_cancelled(c.response(wid), wid)
        expect_eq(state_of(c, pid), "running", "the command after the cancel")
        expect_eq(c.call("request.cancel", {"id": wid}), {"cancelled": False}, "a second cancel")
        again = c.send_request("proc.wait", {"id": pid})
        c.call("proc.signal", {"id": pid, "signal": "KILL"})
        w = c.response(again, 10, "the new proc.wait")
        expect_eq((w["ok"], w["result"]["state"]), (True, "exited"), "the new proc.wait's answer")
        expect_silent(c, wid)


@case("request.cancel of an answered request, of an id never used, of another connection's wait: "
      "cancelled false; bad args: bad_args", transports=("ws", "unix"))
def cancel_nothing(transport):
    with Sandbox() as sb:
        c, other = client(sb, transport), client(sb, transport)
        pid = c.call("proc.start", {"argv": ["sleep", "600"]})["id"]
        pinged = c.send_request("ping")
        expect(c.response(pinged)["ok"], "the ping")
        expect_eq(c.call("request.cancel", {"id": pinged}), {"cancelled": False}, "cancel of an answered ping")
        expect_eq(c.call("request.cancel", {"id": 987654}), {"cancelled": False}, "cancel of an unused id")
        wid = c.send_request("proc.wait", {"id": pid})
        c.call("ping")
        expect_eq(other.call("request.cancel", {"id": wid}), {"cancelled": False},
                  "cancel from another connection")
        for args in ({}, {"id": "1"}, {"id": -1}):
            expect_eq(c.error_of("request.cancel", args), "bad_args", "request.cancel %r" % args)
        c.call("proc.signal", {"id": pid, "signal": "KILL"})
        expect(c.response(wid, 10)["ok"], "the wait the other connection could not cancel")


@case("over the WebSocket, cancelled requests leave the gateway's count: 255 waits cancelled one by one, "
      "then 256 more waits are all held and answered without 4008")
def cancel_keeps_count():
    with Sandbox() as sb:
        c = sb.ws()
        pids = [c.call("proc.start", {"argv": ["sleep", "600"]})["id"] for _ in range(IN_FLIGHT // WAITS_PER_PROC)]
        # One place is left for each cancel.
        ids = [c.send_request("proc.wait", {"id": pids[i // WAITS_PER_PROC]}) for i in range(IN_FLIGHT - 1)]
        for i in ids:
            expect_eq(c.call("request.cancel", {"id": i}, timeout=10), {"cancelled": True}, "cancel of %d" % i)
        for i in ids:
            expect_cancelled(c.response(i, 10), i)
        ids = [c.send_request("proc.wait", {"id": pids[i // WAITS_PER_PROC]}) for i in range(IN_FLIGHT)]
        time.sleep(1)
        other = sb.ws()
        for pid in pids:
            other.call("proc.signal", {"id": pid, "signal": "KILL"})
        try:
            got = [c.response(i, timeout=20) for i in ids]
        except Closed as e:
            raise AssertionError("the gateway closed the client: %s %s" % (e.code, e.reason))
        expect(all(r["ok"] for r in got), "a proc.wait failed: %r" % [r for r in got if not r["ok"]][:1])
        expect(c.call("ping") is not None, "ping after the waits")
        expect_eq(sb.metrics()["berth_gateway_slow_consumer_drops_total"], 0, "slow consumer drops")


@case("request.cancel of a desktop.wait_change forwarded to the desktop's server: answered cancelled at once, "
      "the server's late answer dropped; a duplicate while it waits is duplicate_id", transports=("ws", "unix"))
def cancel_forwarded(transport):
    with Sandbox() as sb:
        p = sb.unix()
        p.call("desktop.provide")
        c = client(sb, transport)
        wid = c.send_request("desktop.wait_change", {"timeout_ms": 60000})
        fwd = p.recv(5)
        expect_eq((fwd["type"], fwd["op"]), ("request", "desktop.wait_change"), "the request forwarded")
        c.send({"type": "request", "id": wid, "op": "desktop.info", "args": {}})
        r = c.response(wid)
        expect_eq((r["ok"], r["error"]["code"]), (False, "duplicate_id"), "the duplicate's answer")
        expect_eq(c.call("request.cancel", {"id": wid}), {"cancelled": True}, "cancel's result")
        expect_cancelled(c.response(wid), wid)
        p.send({"type": "response", "id": fwd["id"], "ok": True, "result": {"changed": True}})
        expect_silent(c, wid)
        # The server still serves, and the id is free again.
        c.send({"type": "request", "id": wid, "op": "desktop.info", "args": {}})
        info = p.recv(5)
        expect_eq(info["op"], "desktop.info", "the next request forwarded")
        p.send({"type": "response", "id": info["id"], "ok": True, "result": {"width": 640}})
        expect_eq(c.response(wid, 5)["result"], {"width": 640}, "the next answer")


def agent_dir():
    """A directory of the case's own, owned by the runtime user."""
    d = scratch(0o755)
    pw = pwd.getpwnam("agent")
    os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


@case("request.cancel of a runtime.stop waiting for a runtime that ignores SIGTERM: answered cancelled, "
      "the stop goes on to runtime.stopped, and nothing more comes under its id", timeout=60)
def cancel_runtime_stop():
    armed = os.path.join(agent_dir(), "armed")
    prog = shfile("trap '' TERM\ntouch %s\nwhile :; do sleep 1; done\n" % armed)
    ws, home = agent_dir(), agent_dir()
    conf = ("[runtime stubborn]\ncommand = %s\nuser = agent\nworkspace = %s\nenv = HOME=%s\nrpc =\n"
            "stop_timeout_ms = 2000\n" % (prog, ws, home))
    # Offline: the sandbox has a network of its own, so the socket, not the WebSocket.
    with Sandbox(extra=conf, offline=True) as sb:
        c = sb.unix()
        c.call("runtime.start", {"name": "stubborn", "mode": "rpc"}, timeout=30)
        wait_for(lambda: os.path.exists(armed), 10, "the runtime ignoring SIGTERM")
        sid = c.send_request("runtime.stop", {"name": "stubborn"})
        expect_eq(c.call("request.cancel", {"id": sid}), {"cancelled": True}, "cancel's result")
        expect_cancelled(c.response(sid), sid)
        stopped = sb.wait_event(lambda ev: ev["kind"] == "runtime.stopped" and ev["data"].get("name") == "stubborn", 20)
        expect(stopped is not None, "runtime.stopped")
        expect_silent(c, sid)
        expect_eq(c.call("runtime.status", {"name": "stubborn"})["exit"]["signal"], 9, "the stop's SIGKILL")


run()
