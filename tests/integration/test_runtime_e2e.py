#!/usr/bin/python3
"""The real agent runtimes run a real task, started by berthd: each is
pointed at a scripted model on the sandbox's loopback (the sandbox is
offline: nothing reaches beyond it, no model is downloaded), which first
has the agent call its write tool on a file of the workspace, then
answers a final message. Pi is driven in its rpc mode (a prompt on stdin,
its JSON events on stdout), OpenCode in its server mode (a session
through its own HTTP API on the port berthd gave it)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, case, expect, expect_eq, expect_in, note, run, wait_for  # noqa: E402
from harness.model import ScriptedModel, call_id, netns_http, text, tool_call  # noqa: E402
from harness.runtimes import OPENCODE, OPENCODE_ENV, PI, AgentDirs, JsonLines, need_program  # noqa: E402

FINAL = "The file now says what you asked."
EDITED = "edited by the agent, through berth\n"


def task(dirs):
    """The workspace's file before the task, and the script that has the
    agent rewrite it."""
    target = dirs.write(os.path.join(dirs.workspace, "hello.txt"), "before\n")
    return target, [tool_call(["write"], file=target, content=EDITED), text(FINAL)]


def expect_task_done(dirs, model, target, result_word):
    """The file really changed, as the runtime user's file, and the tool's
    result went back to the model."""
    with open(target) as f:
        expect_eq(f.read(), EDITED, "the workspace's file after the task")
    expect_eq(dirs.owner(target), dirs.user, "the owner of the file the agent wrote")
    result = model.wait_tool_result(call_id(0))
    note("the write tool's result: %r" % result)
    expect(result_word in result.lower(), "the tool's result sent back to the model: %r" % result)
    model.check()


def start_pi_rpc(c, dirs):
    p = c.call("proc.start", {"argv": [PI, "--mode", "rpc"], "user": dirs.user, "cwd": dirs.workspace,
                              "env": {"HOME": dirs.home}, "stdin": "pipe"})
    return p["id"], p["pid"]


@case("Pi in rpc mode, started by berthd, runs a task: the scripted model's write reaches the workspace", 180)
def pi_rpc_task():
    need_program(PI, "Pi")
    dirs = AgentDirs()
    with Sandbox(offline=True) as sb:
        target, script = task(dirs)
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        proc_id, pid = start_pi_rpc(c, dirs)
        rpc = JsonLines(c, proc_id)
        rpc.send({"id": "task-1", "type": "prompt", "message": "Rewrite hello.txt."})
        r = rpc.until(lambda m: m.get("type") == "response" and m.get("id") == "task-1", 60)
        expect_eq(r.get("success"), True, "Pi's answer to the prompt command: %r" % r)
        end = rpc.until(lambda m: m.get("type") == "agent_end", 120)
        expect_task_done(dirs, model, target, "successfully wrote")
        last = [m for m in end.get("messages") or [] if m.get("role") == "assistant"][-1]
        said = "".join(part.get("text", "") for part in last.get("content") or [] if part.get("type") == "text")
        expect_eq(said, FINAL, "the agent's final message, on Pi's stdout")
        tools = [m for m in rpc.seen if m.get("type") == "tool_execution_end"]
        expect_eq([(m.get("toolName"), m.get("isError")) for m in tools], [("write", False)], "the tools Pi ran")


def start_opencode_server(c, sb, dirs):
    from harness import free_port

    port = free_port()
    p = c.call("proc.start", {"argv": [OPENCODE, "serve", "--hostname", "127.0.0.1", "--port", str(port)],
                              "user": dirs.user, "cwd": dirs.workspace,
                              "env": dict(OPENCODE_ENV, HOME=dirs.home)})
    pid = sb.berthd_pid()

    def answers():
        try:
            return netns_http(pid, port, "GET", "/path", timeout=5)[0] == 200
        except OSError:
            return False

    wait_for(answers, 60, "OpenCode answering on port %d" % port, 0.2)
    return p["id"], port


@case("OpenCode in server mode, started by berthd, answers its HTTP API and runs a task through a session", 240)
def opencode_server_task():
    need_program(OPENCODE, "OpenCode")
    dirs = AgentDirs()
    with Sandbox(offline=True) as sb:
        target, script = task(dirs)
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        proc_id, port = start_opencode_server(c, sb, dirs)
        ns = sb.berthd_pid()
        status, _, body = netns_http(ns, port, "GET", "/path")
        expect_eq(status, 200, "GET /path on OpenCode's port")
        expect_eq(json.loads(body).get("directory"), dirs.workspace, "the directory OpenCode serves")
        status, _, body = netns_http(ns, port, "POST", "/session", {})
        expect_eq(status, 200, "POST /session: %r" % body[:300])
        session = json.loads(body)["id"]
        status, _, body = netns_http(ns, port, "POST", "/session/%s/message" % session,
                                     {"parts": [{"type": "text", "text": "Rewrite hello.txt."}]}, timeout=120)
        expect_eq(status, 200, "POST /session/ID/message: %r" % body[:300])
        answer = json.loads(body)
        note("OpenCode's answer: %s" % body[:600])
        expect_task_done(dirs, model, target, "wrote file")
        said = "".join(p.get("text", "") for p in answer.get("parts") or [] if p.get("type") == "text")
        expect_eq(said, FINAL, "the agent's final message, in OpenCode's answer")
        expect_eq(answer["info"].get("finish"), "stop", "how the last step finished")
        status, _, body = netns_http(ns, port, "GET", "/session/%s/message" % session)
        parts = [p for m in json.loads(body) for p in m.get("parts") or []]
        tools = [(p.get("tool"), p.get("state", {}).get("status")) for p in parts if p.get("type") == "tool"]
        expect_in(("write", "completed"), tools, "the tools of the session, as OpenCode keeps them")


run()
