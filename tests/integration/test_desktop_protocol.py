"""The protocol's promises where there is a desktop (berth-desktop built,
against Xvfb): hello lists the desktop's ops and says features.desktop,
a desktop op with unknown keys is served (test_honest.py has the
sandbox without a desktop), and record.start's idempotency key answers
a repeat the first recording (test_idempotency.py has the other ops)."""

import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    DesktopSandbox,
    case,
    expect,
    expect_eq,
    expect_in,
    need,
    run,
)
from harness.desktop import served  # noqa: E402


def events_of(sb, kind):
    return [e["data"] for e in sb.events() if e["kind"] == kind]


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
    need("Xvfb", "xdpyinfo")
    with harness.Desk(320, 240) as sb:
        a = sb.ws(timeout=20)
        served(a)
        key = "k-" + uuid.uuid4().hex
        args = {"fps": 5, "key": key}
        first = a.call("record.start", args, timeout=20)
        b = sb.ws(timeout=20)
        expect_eq(b.call("record.start", args, timeout=20), first, "the repeat's result")
        recs = b.call("record.status", {}, timeout=20)["recordings"]
        expect_eq([r["id"] for r in recs], [first["id"]], "record.status after the repeat")
        expect_eq(len(events_of(sb, "record.started")), 1, "record.started events")
        b.call("record.stop", {"id": first["id"]}, timeout=30)


run()
