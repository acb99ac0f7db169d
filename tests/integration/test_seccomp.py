"""The gateway's seccomp filter: its self-test finds execve, ptrace and
mount refused, and the running gateway is filtered."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    GATEWAY,
    Sandbox,
    case,
    expect,
    expect_eq,
    proc_status,
    run,
    run_program,
)


@case("--seccomp-selftest: execve, ptrace and mount are blocked")
def selftest():
    rc, out, err = run_program([GATEWAY, "--seccomp-selftest"], timeout=30)
    text = out + err
    lines = [line for line in text.splitlines() if line.strip()]
    expect_eq(rc, 0, "exit status (output: %r)" % text)
    for call in ("execve", "ptrace", "mount"):
        mine = [line for line in lines if line.startswith(call)]
        expect(mine, "no line about %s in %r" % (call, text))
        expect("blocked" in mine[0], "%s is not blocked: %r" % (call, mine[0]))
    loose = [line for line in lines if "blocked" not in line]
    expect(not loose, "lines that do not say blocked: %r" % loose)


@case("the running gateway is under a seccomp filter, with no_new_privs")
def live_gateway():
    with Sandbox() as sb:
        pid = sb.gateway_pid()
        expect_eq(proc_status(pid, "Seccomp"), "2", "Seccomp in /proc/%d/status" % pid)
        expect_eq(proc_status(pid, "NoNewPrivs"), "1", "NoNewPrivs in /proc/%d/status" % pid)
        # And it still does its job under the filter.
        sb.ws().call("ping")


run()
