"""Ops served by another process through berthd (desktop.*): with no
server they are unavailable; a local connection that says desktop.provide
gets each client's request under an id of berthd's, and its answer — a
result, an error, a large binary — reaches the client that asked under
that client's id; a server that goes away fails what it owed; a new one
replaces the old; a WebSocket client can never become the server; and a
server that answers nonsense harms nobody."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    case,
    expect,
    expect_eq,
    run,
)


def provider(sb):
    """A stand-in for berth-desktop: a Unix client serving the desktop ops."""
    p = sb.unix()
    p.call("desktop.provide")
    return p


def next_request(p, timeout=5.0):
    """The next request berthd forwards to provider p."""
    while True:
        m = p.recv(timeout)
        if m.get("type") == "request":
            return m


def answer(p, req, result=None, error=None):
    msg = {"type": "response", "id": req["id"], "ok": error is None}
    if error is None:
        msg["result"] = result
    else:
        msg["error"] = error
    p.send(msg)


@case("without a desktop, the desktop ops are unavailable, say why, and hello lists none")
def no_server():
    with Sandbox() as sb:
        c = sb.ws()
        r = c.request("desktop.info")
        expect_eq(r["error"]["code"], "unavailable", "the code")
        expect("has no desktop" in r["error"]["message"], "the message: %r" % r["error"]["message"])
        expect("desktop.screenshot" not in c.hello_result["capabilities"], "desktop ops in the capabilities")
        expect_eq(c.hello_result["features"]["desktop"], False, "features.desktop")


@case("once a server says desktop.provide, hello lists the desktop ops")
def provided_hello():
    with Sandbox() as sb:
        provider(sb)
        h = sb.ws().hello_result
        expect("desktop.screenshot" in h["capabilities"], "desktop ops in the capabilities: %r" % h["capabilities"])
        expect_eq((h["features"]["desktop"], h["features"]["recording"]), (True, True), "features")


@case("requests reach the server under berthd's ids; answers come back under the client's")
def forwarding():
    with Sandbox() as sb:
        p = provider(sb)
        a, b = sb.ws(), sb.unix()
        ida = a.send_request("desktop.screenshot", {"format": "png", "region": {"x": 1, "y": 2, "width": 3, "height": 4}})
        idb = b.send_request("desktop.info")
        r1, r2 = next_request(p), next_request(p)
        expect_eq(sorted([r1["op"], r2["op"]]), ["desktop.info", "desktop.screenshot"], "the ops forwarded")
        shot = r1 if r1["op"] == "desktop.screenshot" else r2
        info = r2 if shot is r1 else r1
        expect_eq(shot["args"], {"format": "png", "region": {"x": 1, "y": 2, "width": 3, "height": 4}}, "args as sent")
        expect(shot["id"] != info["id"], "berthd's ids differ")
        # Answered out of order, a large binary among them.
        blob = os.urandom(3 << 20)
        answer(p, info, {"width": 1280, "height": 800})
        answer(p, shot, {"format": "png", "data": blob})
        ra = a.response(ida, 10)
        rb = b.response(idb, 10)
        expect_eq((ra["ok"], ra["result"]["data"] == blob), (True, True), "the screenshot's answer")
        expect_eq(rb["result"], {"width": 1280, "height": 800}, "the info's answer")
        idc = a.send_request("desktop.input", {"actions": []})
        answer(p, next_request(p), error={"code": "bad_args", "message": "actions must not be empty"})
        rc = a.response(idc, 10)
        expect_eq((rc["ok"], rc["error"]["code"], rc["error"]["message"]),
                  (False, "bad_args", "actions must not be empty"), "an error answer")


@case("a server that goes away fails what it owed; a client that went away is not answered")
def server_gone():
    with Sandbox() as sb:
        p = provider(sb)
        c = sb.ws()
        gone = sb.ws()
        gone.send_request("desktop.wait_change", {"timeout_ms": 10000})
        req_gone = next_request(p)
        gone.abort()
        i = c.send_request("desktop.wait_change", {"timeout_ms": 10000})
        next_request(p)
        answer(p, req_gone, {"changed": True})
        time.sleep(0.2)
        p.close()
        r = c.response(i, 10)
        expect_eq(r["error"]["code"], "unavailable", "the owed answer after the server left")
        expect_eq(c.request("desktop.info")["error"]["code"], "unavailable", "no server any more")
        c.call("ping")


@case("a new server replaces the old; what the old owed fails")
def replaced():
    with Sandbox() as sb:
        old = provider(sb)
        c = sb.ws()
        i = c.send_request("desktop.cursor")
        next_request(old)
        new = provider(sb)
        expect_eq(c.response(i, 10)["error"]["code"], "unavailable", "the old server's owed answer")
        j = c.send_request("desktop.cursor")
        answer(new, next_request(new), {"x": 5, "y": 6})
        expect_eq(c.response(j, 10)["result"], {"x": 5, "y": 6}, "the new server's answer")


@case("a WebSocket client cannot serve the desktop ops; nonsense from a server harms nobody")
def forbidden_and_nonsense():
    with Sandbox() as sb:
        c = sb.ws()
        expect_eq(c.error_of("desktop.provide"), "forbidden", "desktop.provide over the WebSocket")
        p = provider(sb)
        # An answer to nothing, and a response from a plain client.
        p.send({"type": "response", "id": 999999, "ok": True, "result": {}})
        plain = sb.unix()
        plain.send({"type": "response", "id": 1, "ok": True, "result": {}})
        i = c.send_request("desktop.info")
        answer(p, next_request(p), {"width": 1})
        expect_eq(c.response(i, 10)["result"], {"width": 1}, "answers still flow")
        c.call("ping")


@case("desktop.emit: only the server journals, only its own kinds, with the data as given")
def emit():
    with Sandbox() as sb:
        c = sb.ws()
        c.subscribe()
        other = sb.unix()
        expect_eq(other.error_of("desktop.emit", {"kind": "record.started", "data": {"id": "x"}}), "forbidden",
                  "desktop.emit from a connection that is not the server")
        p = provider(sb)
        for args in ({"kind": "service.started", "data": {}}, {"kind": "record.started"},
                     {"kind": "record.started", "data": [1]}, {"data": {}}):
            expect_eq(p.error_of("desktop.emit", args), "bad_args", "desktop.emit %r" % args)
        p.call("desktop.emit", {"kind": "record.published", "data": {"id": "r1", "size": 5}})
        ev = c.events_until(lambda e: e["kind"].startswith("record."))[-1]
        expect_eq((ev["kind"], ev["data"]), ("record.published", {"id": "r1", "size": 5}), "the event journaled")
        expect_eq(c.error_of("desktop.emit", {"kind": "record.published", "data": {}}), "forbidden",
                  "desktop.emit over the WebSocket")


if __name__ == "__main__":
    run()
