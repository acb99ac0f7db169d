"""The gateway's seccomp filter, an allow list that kills: its self-test,
which installs the same filter as the running gateway, finds every call
an attacker who owned the gateway would make killed, and what the gateway
needs allowed; the running gateway is filtered."""

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


ATTACKS = (
    "open(/proc/1/mem, O_RDWR)",
    "pidfd_getfd",
    "openat(/etc/ld.so.preload, O_CREAT)",
    "open(/tmp/..., O_CREAT)",
    "clone(CLONE_NEWUSER)",
    "unshare(CLONE_NEWUSER)",
    "socket(AF_PACKET)",
    "socket(AF_NETLINK)",
    "execve",
    "ptrace",
    "mount",
    "mmap(PROT_EXEC)",
)
NEEDS = ("open(/proc/self/status, O_RDONLY)", "socket(AF_INET)", "socket(AF_UNIX)")


@case("--seccomp-selftest: every attack is killed, what the gateway needs is allowed")
def selftest():
    preload = os.path.exists("/etc/ld.so.preload")
    rc, out, err = run_program([GATEWAY, "--seccomp-selftest"], timeout=30)
    text = out + err
    said = dict(line.rsplit(": ", 1) for line in text.splitlines() if ": " in line)
    for call in ATTACKS:
        expect_eq(said.get(call), "killed (SIGSYS)", "%s (output: %r)" % (call, text))
    for call in NEEDS:
        expect_eq(said.get(call), "allowed", "%s (output: %r)" % (call, text))
    expect_eq(rc, 0, "exit status (output: %r)" % text)
    expect_eq(os.path.exists("/etc/ld.so.preload"), preload, "/etc/ld.so.preload exists")


@case("the running gateway is under a seccomp filter, with no_new_privs")
def live_gateway():
    with Sandbox() as sb:
        pid = sb.gateway_pid()
        expect_eq(proc_status(pid, "Seccomp"), "2", "Seccomp in /proc/%d/status" % pid)
        expect_eq(proc_status(pid, "NoNewPrivs"), "1", "NoNewPrivs in /proc/%d/status" % pid)
        # And it still does its job under the filter.
        sb.ws().call("ping")


run()
