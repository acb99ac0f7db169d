#!/usr/bin/python3
"""berth probe, as a warm-pool manager's exec probe runs it against a real
sandbox over either transport: 0 once every readiness check passes and
each --label matches, 1 while a check fails (naming it and its reason)
or a label differs, 2 when it cannot ask (no berthd, a refused token, a
berthd that does not answer within --timeout); --json says the same for
a program to read."""

import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, case, expect, expect_eq, expect_in, run, scratch, wait_for  # noqa: E402
from harness.cli import TRANSPORTS, berth  # noqa: E402
from harness.paths import CLI  # noqa: E402
from harness.procs import run_program  # noqa: E402


def gated_config(flag):
    """A sandbox with labels and a required check that passes once flag
    exists."""
    return ("[labels]\npool = warm\ntier = probe-test\n\n"
            "[check gate]\nready = exec /usr/bin/test -e %s\nready_interval_ms = 100\n" % flag)


@case("not ready: exit 1 naming the failing check and its reason; once it passes, exit 0")
def t_ready():
    flag = os.path.join(scratch(0o755), "open")
    with Sandbox(extra=gated_config(flag)) as sb:
        for transport in TRANSPORTS:
            rc, out, err = berth(sb, transport, "probe", text=True)
            expect_eq((rc, err), (1, ""), "probe while the gate is shut (%s)" % transport)
            expect_in("not ready: gate: ", out, "the failing check named (%s)" % transport)
            rc, out, _ = berth(sb, transport, "--json", "probe", text=True)
            got = json.loads(out)
            expect_eq((rc, got["ready"]), (1, False), "--json probe while shut (%s)" % transport)
            expect_eq([f["what"] for f in got["failing"]], ["gate"], "--json's failing checks (%s)" % transport)
            expect(got["failing"][0]["why"], "a reason for the gate: %r" % got)
        open(flag, "w").close()
        wait_for(lambda: berth(sb, "unix", "probe")[0] == 0, 10, "the probe once the gate is open")
        for transport in TRANSPORTS:
            rc, out, err = berth(sb, transport, "probe", text=True)
            expect_eq((rc, err), (0, ""), "probe once ready (%s)" % transport)
            expect(out.startswith("ready ("), "probe's line when ready: %r" % out)
            got = json.loads(berth(sb, transport, "--json", "probe", text=True)[1])
            expect_eq((got["ready"], got["failing"]), (True, []), "--json probe once ready (%s)" % transport)
            expect(got["checks"] >= 1, "the gate counted among the checks: %r" % got)


@case("--label KEY=VALUE: exit 0 only when every one matches; a wrong or missing label is 1 and says which")
def t_labels():
    flag = os.path.join(scratch(0o755), "open")
    open(flag, "w").close()
    with Sandbox(extra=gated_config(flag)) as sb:
        wait_for(lambda: berth(sb, "unix", "probe")[0] == 0, 10, "the sandbox ready")
        for transport in TRANSPORTS:
            rc, _, _ = berth(sb, transport, "probe", "--label", "pool=warm", "--label", "tier=probe-test")
            expect_eq(rc, 0, "both labels as they are (%s)" % transport)
            rc, out, _ = berth(sb, transport, "probe", "--label", "pool=cold", text=True)
            expect_eq(rc, 1, "a label with another value (%s)" % transport)
            expect_in('label pool: "warm", not "cold"', out, "the label that differs")
            rc, out, _ = berth(sb, transport, "probe", "--label", "zone=eu", text=True)
            expect_eq(rc, 1, "a label the sandbox lacks (%s)" % transport)
            expect_in("label zone: not set", out, "the missing label")
        for bad in ("pool", "=warm"):
            rc, _, err = berth(sb, "unix", "probe", "--label", bad, text=True)
            expect_eq(rc, 2, "--label %r" % bad)
            expect_in("KEY=VALUE", err, "the usage error of --label %r" % bad)


@case("cannot ask: no socket, a refused token, a berthd that does not answer within --timeout: exit 2, why on stderr")
def t_no_answer():
    d = scratch(0o755)
    rc, _, err = run_program([CLI, "--socket", os.path.join(d, "none.sock"), "probe"], 20, None, text=True)
    expect_eq(rc, 2, "probe of a socket that is not there")
    expect_in("cannot connect", err, "why")
    # A socket that accepts and never answers: --timeout bounds the whole.
    path = os.path.join(d, "mute.sock")
    mute = socket.socket(socket.AF_UNIX)
    mute.bind(path)
    mute.listen(4)
    t0 = time.monotonic()
    rc, _, err = run_program([CLI, "--socket", path, "--timeout", "1", "probe"], 20, None, text=True)
    took = time.monotonic() - t0
    mute.close()
    expect_eq(rc, 2, "probe of a berthd that does not answer")
    expect(took < 5, "--timeout 1 bounded the probe: it took %.1f s" % took)
    with Sandbox() as sb:
        bad = os.path.join(d, "bad-token")
        with open(bad, "w") as f:
            f.write("0" * 40 + "\n")
        os.chmod(bad, 0o600)
        rc, _, err = run_program([CLI, "--url", sb.url, "--token-file", bad, "probe"], 20, None, text=True)
        expect_eq(rc, 2, "probe with a refused token")
        expect(err.strip(), "a refused token says why")


run()
