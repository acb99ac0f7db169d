"""The protocol's promises where there is a desktop (berth-desktop built,
against Xvfb): hello lists the desktop's ops and says features.desktop,
a desktop op with unknown keys is served (test_honest.py has the
sandbox without a desktop), and record.start's idempotency key answers
a repeat the first recording (test_idempotency.py has the other ops).
With berth-desktop stopped (SIGSTOP), a record.start waits for as long
as the test likes: what its key does with the repeats that wait on it,
16 at most and told when their key is forgotten, is shown there."""

import os
import signal
import sys
import uuid
from contextlib import contextmanager

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    DesktopSandbox,
    case,
    expect,
    expect_eq,
    expect_in,
    host_pid,
    need,
    note,
    run,
)
from harness.desktop import served  # noqa: E402

# From supervisor/idem.h.
IDEM_MAX = 4096
IDEM_WAITERS_MAX = 16


def events_of(sb, kind):
    return [e["data"] for e in sb.events() if e["kind"] == kind]


@contextmanager
def keyed_desk():
    """A desktop served, and record.start's args with a fresh key:
    (sandbox, args)."""
    need("Xvfb", "xdpyinfo")
    with harness.Desk(320, 240) as sb:
        served(sb.ws(timeout=20))
        yield sb, {"fps": 5, "key": "k-" + uuid.uuid4().hex}


@case("with a desktop: hello lists its ops, features.desktop; a desktop op with an unknown key is served",
      timeout=120)
def hello_desktop():
    with DesktopSandbox(640, 480) as sb:
        c = sb.ws(timeout=20.0)
        h = c.hello_result
        for op in ("desktop.screenshot", "desktop.windows", "record.start", "record.status"):
            expect_in(op, h["capabilities"], "the capabilities")
        expect_eq((h["features"]["desktop"], h["features"]["recording"]), (True, True), "features")
        r = c.request("desktop.windows", {"all": True, "newer_option": {"x": 1}})
        expect(r["ok"], "desktop.windows with unknown keys: %r" % r.get("error"))
        expect(isinstance(r["result"].get("windows"), list), "desktop.windows' result: %r" % r["result"])


@case("record.start: a repeat on a new connection answers the same recording, and berth-desktop starts one",
      timeout=120)
def t_record_start():
    with keyed_desk() as (sb, args):
        a = sb.ws(timeout=20)
        first = a.call("record.start", args, timeout=20)
        b = sb.ws(timeout=20)
        expect_eq(b.call("record.start", args, timeout=20), first, "the repeat's result")
        recs = b.call("record.status", {}, timeout=20)["recordings"]
        expect_eq([r["id"] for r in recs], [first["id"]], "record.status after the repeat")
        expect_eq(len(events_of(sb, "record.started")), 1, "record.started events")
        b.call("record.stop", {"id": first["id"]}, timeout=30)


@contextmanager
def desktop_held(sb):
    """berth-desktop stopped until the block ends: what berthd forwards
    to it waits."""
    pid = host_pid(sb, "berth-desktop")
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def first_held(sb, args):
    """A record.start of args sent on a new connection while berth-desktop
    is held: (the connection, its id), once berthd has taken it (a ping
    sent after it on the same connection is answered)."""
    a = sb.ws(timeout=20)
    first_id = a.send_request("record.start", args)
    a.call("ping")
    return a, first_id


def error(r):
    expect(not r.get("ok"), "an error was expected: %r" % (r,))
    return r["error"]["code"], r["error"]["message"]


@case("record.start waiting on a stopped berth-desktop: 16 repeats of its key wait and get its answer; "
      "a 17th is unavailable at once; one recording", timeout=120)
def t_waiters_bound():
    with keyed_desk() as (sb, args):
        b = sb.unix(timeout=20)
        with desktop_held(sb):
            a, first_id = first_held(sb, args)
            for i in range(1, IDEM_WAITERS_MAX + 2):
                b.send({"type": "request", "id": i, "op": "record.start", "args": args})
            code, msg = error(b.response(IDEM_WAITERS_MAX + 1))
            expect_eq(code, "unavailable", "the 17th repeat's code")
            expect_in("16 repeats of key %s wait already" % args["key"], msg, "the 17th repeat's message")
            ping_id = b.send_request("ping")
            expect_eq(b.recv()["id"], ping_id, "the next answer on the repeats' connection, berth-desktop held")
        first = a.response(first_id, timeout=20)
        expect(first["ok"], "the first record.start: %r" % (first,))
        for i in range(1, IDEM_WAITERS_MAX + 1):
            expect_eq(b.response(i), {"type": "response", "id": i, "ok": True, "result": first["result"]},
                      "repeat %d" % i)
        recs = b.call("record.status", {}, timeout=20)["recordings"]
        expect_eq([r["id"] for r in recs], [first["result"]["id"]], "record.status")
        b.call("record.stop", {"id": first["result"]["id"]}, timeout=30)


@case("a repeat waiting on a key that 4096 newer keys push out is unavailable, send again, at the 4096th "
      "and not before; the first is still answered", timeout=300)
def t_waiting_key_evicted():
    with keyed_desk() as (sb, args):
        b, c = sb.unix(timeout=20), sb.unix(timeout=120)
        with desktop_held(sb):
            a, first_id = first_held(sb, args)
            b.send({"type": "request", "id": 1, "op": "record.start", "args": args})
            keys = ["newer-%d" % i for i in range(IDEM_MAX)]
            for at in range(0, IDEM_MAX - 1, 255):
                batch = keys[at : min(at + 255, IDEM_MAX - 1)]
                ids = [c.send_request("secrets.set", {"S": "v", "key": k}) for k in batch]
                for i in ids:
                    expect(c.response(i)["ok"], "secrets.set %d" % i)
            ping_id = b.send_request("ping")
            expect_eq(b.recv()["id"], ping_id, "the next answer on the repeat's connection after 4095 newer keys")
            c.call("secrets.set", {"S": "v", "key": keys[-1]})
            code, msg = error(b.response(1, timeout=20))
            note("the repeat's answer: %s" % msg)
            expect_eq(code, "unavailable", "the repeat's code")
            expect_in("key %s was forgotten before its first request was answered" % args["key"], msg,
                      "the repeat's message")
        first = a.response(first_id, timeout=20)
        expect(first["ok"], "the first record.start, its key forgotten: %r" % (first,))
        b.call("record.stop", {"id": first["result"]["id"]}, timeout=30)


run()
