#!/usr/bin/python3
"""A runtime's own client through a runtime:NAME grant: the real
`opencode attach LINK` (a developer's own client, with no password and
nothing of the runtime's but the link; run on a berth PTY session and
read from its screen) against the real OpenCode server in the sandbox,
reached at the grant's link on the preview proxy (PREVIEW/runtime/TOKEN/,
the server's password put in by the gateway), runs a task in the
runtime's workspace: the scripted model's write lands there, and the
answer is drawn on the client's screen. The grant's end shuts the
link."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, case, expect, expect_eq, note, run, scratch, wait_for  # noqa: E402
from harness.model import ScriptedModel, call_id, text, tool_call  # noqa: E402
from harness.netns import netns_http  # noqa: E402
from harness.procs import free_port  # noqa: E402
from harness.runtimes import (  # noqa: E402
    OPENCODE,
    OPENCODE_ENV,
    AgentDirs,
    Terminal,
    need_program,
    runtime_sections,
    start_ready,
)

FINAL = "Done through the developer's own client."
EDITED = "edited from opencode attach, through a berth grant\n"


def preview_config(dirs, port):
    return "[gateway]\npreview_listen = 127.0.0.1:%d\n\n%s" % (port, runtime_sections(dirs))


def link_path(url, port):
    """The path of a runtime link on the preview listener at port."""
    base = "http://127.0.0.1:%d" % port
    expect(url.startswith(base + "/runtime/"), "a runtime grant's link: %r" % url)
    return url[len(base):]


@case("the real `opencode attach` on a runtime grant's link runs a task in the runtime's workspace, "
      "its answer drawn on the developer's screen", 300)
def t_attach():
    need_program(OPENCODE, "OpenCode")
    dirs = AgentDirs()
    port = free_port()
    with Sandbox(extra=preview_config(dirs, port), offline=True) as sb:
        target = dirs.write(os.path.join(dirs.workspace, "hello.txt"), "before\n")
        model = ScriptedModel([tool_call(["write"], file=target, content=EDITED), text(FINAL)],
                              netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        start_ready(c, "opencode", "server")
        g = c.call("grant.create", {"scope": "runtime:opencode", "ttl_s": 600})
        link_path(g["url"], port)
        # The developer's machine: another home, no password, nothing of
        # the runtime's but the link.
        home = scratch(0o755)
        env = dict(OPENCODE_ENV, HOME=home, TERM="xterm-256color", LANG="C.UTF-8")
        pty = c.call("pty.open", {"argv": [OPENCODE, "attach", g["url"]], "cwd": home, "env": env,
                                  "cols": 120, "rows": 40})["id"]
        term = Terminal(c, pty)
        term.until(dirs.workspace, 120)
        term.type(b"Rewrite hello.txt.")
        term.until("Rewrite hello.txt.")
        term.type(b"\r")
        result = model.wait_tool_result(call_id(0))
        note("the write tool's result: %r" % result)
        model.check()
        with open(target) as f:
            expect_eq(f.read(), EDITED, "the workspace's file after the task run from opencode attach")
        expect_eq(dirs.owner(target), dirs.user, "the file's owner: the runtime's user, not the client's")
        term.until(FINAL, 60)
        c.call("grant.revoke", {"id": g["id"]})
        ns = sb.berthd_pid()
        wait_for(lambda: netns_http(ns, port, "GET", link_path(g["url"], port) + "path")[0] == 401, 5,
                 "the link shut after grant.revoke")
        c.call("pty.close", {"id": pty})
        c.call("runtime.stop", {"name": "opencode"}, timeout=30)


run()
