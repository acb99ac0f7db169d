"""What berth says of itself holds: hello's capabilities and features
follow the configuration (no desktop op without a desktop, the runtimes
and previews configured; with a desktop: test_desktop_protocol.py),
state.version is the protocol's with the build beside it, and fs.write
at offset 0 that cannot make its partial answers the cause, never
conflict, so a client that resumes on conflict stops."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    case,
    expect,
    expect_eq,
    expect_in,
    run,
)
from harness.procs import free_port  # noqa: E402

RUNTIMES = ("alpha", "beta")


def runtime_section(name):
    return "[runtime %s]\ncommand = /bin/sh\nworkspace = /tmp\nuser = nobody\ntui = -c 'exec sleep 1000'\n\n" % name


# berthd's own local ops, by which berth-desktop offers the desktop: not desktop ops.
PROVIDER_OPS = ("desktop.provide", "desktop.emit")


def desktop_ops(capabilities):
    """The ops of capabilities that berth-desktop serves."""
    return [op for op in capabilities if op.startswith(("desktop.", "record.")) and op not in PROVIDER_OPS]


@case("hello without a desktop: no desktop or record op, features as configured (runtimes, previews)")
def hello_minimal():
    extra = "[gateway]\npreview_listen = 127.0.0.1:%d\n\n" % free_port()
    extra += "".join(runtime_section(n) for n in RUNTIMES)
    with Sandbox(extra=extra) as sb:
        for c in (sb.ws(), sb.unix()):
            h = c.hello_result
            expect_eq(desktop_ops(h["capabilities"]), [], "desktop and record ops in the capabilities")
            expect_in("runtime.start", h["capabilities"], "the capabilities")
            expect_eq(h["features"], {"desktop": False, "recording": False, "runtimes": list(RUNTIMES),
                                      "previews": True, "idempotency_keys": 4096}, "features")
            r = c.request("desktop.screenshot")
            expect_eq(r["error"]["code"], "unavailable", "desktop.screenshot without a desktop")
            expect_in("no desktop", r["error"]["message"], "its message")
    with Sandbox() as sb:
        f = sb.ws().hello_result["features"]
        expect_eq((f["runtimes"], f["previews"]), ([], False), "features with no runtime and no previews")


@case("state: version is the protocol's, agent_version the build hello states")
def state_version():
    with Sandbox() as sb:
        c = sb.ws()
        st = c.call("state")
        expect_eq(st["version"], c.hello_result["version"], "state's version against hello's")
        expect_eq(st["version"], "berth.v1", "state's version")
        expect_eq(st["agent_version"], c.hello_result["agent_version"], "state's agent_version against hello's")


def upload(c, path, data, tries=5):
    """A client that follows the conflict rule: on conflict it asks for
    pending and goes on from there. The last answer, or None if it was
    still resuming after tries requests."""
    offset = 0
    for _ in range(tries):
        r = c.request("fs.write", {"path": path, "offset": offset, "data": data[offset:], "done": True})
        if r["ok"] or r["error"]["code"] != "conflict":
            return r
        offset = c.call("fs.write", {"path": path})["pending"]
    return None


@case("fs.write at offset 0 where no partial can be made: the cause (not_found), never conflict")
def write_proc():
    with Sandbox() as sb:
        c = sb.ws()
        for path in ("/proc/1/nope", "/proc/nope"):
            r = c.request("fs.write", {"path": path, "offset": 0, "data": b"x", "done": True})
            expect(not r["ok"], "fs.write %s succeeded: %r" % (path, r))
            expect_eq(r["error"]["code"], "not_found", "fs.write %s: %s" % (path, r["error"]["message"]))
            expect_eq(r["error"].get("path"), path, "the error's path")
            r = upload(c, path, b"hello")
            expect(r is not None, "a client resuming on conflict never stopped for %s" % path)
            expect_eq(r["error"]["code"], "not_found", "what stopped it")


run()
