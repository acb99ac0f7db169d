#!/usr/bin/python3
"""The real agent runtimes run a real task, started by runtime.start: each
is pointed at a scripted model on the sandbox's loopback (the sandbox is
offline: nothing reaches beyond it, no model is downloaded), which first
has the agent call its write tool on a file of the workspace, then
answers a final message. Pi is driven in its rpc mode (a prompt on stdin,
its JSON events on stdout), OpenCode in its server mode (a session
through its own HTTP API on the port berthd gave it, with the password
berthd made), both in their TUI mode (a prompt typed on the berth PTY
session). Pi also resumes its own session, and works in a clone that
workspace.prepare made; the provider's key is a berth secret."""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, case, expect, expect_eq, expect_in, note, run  # noqa: E402
from harness.gitserver import GitServer, git  # noqa: E402
from harness.model import ScriptedModel, call_id, text, tool_call  # noqa: E402
from harness.netns import netns_call, netns_http  # noqa: E402
from harness.runtimes import (  # noqa: E402
    OPENCODE,
    PI,
    AgentDirs,
    JsonLines,
    Terminal,
    need_program,
    opencode_auth,
    runtime_sections,
    start_ready,
)

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
    result = model.wait_tool_result(call_id(0))
    note("the write tool's result: %r" % result)
    expect(result_word in result.lower(), "the tool's result sent back to the model: %r" % result)
    model.check()
    with open(target) as f:
        expect_eq(f.read(), EDITED, "the workspace's file after the task")
    expect_eq(dirs.owner(target), dirs.user, "the owner of the file the agent wrote")


def events_of(sb, name):
    """The journal's runtime.* events of runtime name: [(kind, data)]."""
    return [(e["kind"], e["data"]) for e in sb.events()
            if e["kind"].startswith("runtime.") and e["data"].get("name") == name]


@case("Pi in rpc mode, started by runtime.start, runs a task: the scripted model's write reaches the workspace", 180)
def pi_rpc_task():
    need_program(PI, "Pi")
    dirs = AgentDirs()
    with Sandbox(extra=runtime_sections(dirs), offline=True) as sb:
        target, script = task(dirs)
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        st = start_ready(c, "pi", "rpc")
        expect_eq((st["workspace"], "pty" in st, "port" in st), (dirs.workspace, False, False), "Pi's status: %r" % st)
        rpc = JsonLines(c, st["proc"])
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
        expect_eq(c.call("runtime.stop", {"name": "pi"}, timeout=30), {}, "runtime.stop's answer")
        after = c.call("runtime.status", {"name": "pi"})
        expect(after["state"] == "exited" and after["exit"], "Pi's status after runtime.stop: %r" % after)
        kinds = [k for k, _ in events_of(sb, "pi")]
        expect_eq([k for k in kinds if k in ("runtime.started", "runtime.exited", "runtime.stopped")],
                  ["runtime.started", "runtime.exited", "runtime.stopped"], "Pi's runtime events")
        started = dict(events_of(sb, "pi"))["runtime.started"]
        expect_eq((started["pid"], started["proc"], started["mode"]), (st["pid"], st["proc"], "rpc"),
                  "runtime.started")


def tui_task(name):
    """The runtime's TUI, on its berth PTY session: drawn, a prompt typed
    into it and seen in its editor, Enter; the task is done and its final
    message drawn."""
    dirs = AgentDirs()
    with Sandbox(extra=runtime_sections(dirs), offline=True) as sb:
        target, script = task(dirs)
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        st = start_ready(c, name, "tui", cols=120, rows=40)
        expect_eq((st["state"], "proc" in st, "port" in st), ("ready", False, False), "the status of the TUI: %r" % st)
        term = Terminal(c, st["pty"])
        term.until(dirs.workspace)
        term.type(b"Rewrite hello.txt.")
        term.until("Rewrite hello.txt.")
        term.type(b"\r")
        expect_task_done(dirs, model, target, "wrote")
        term.until(FINAL, 60)
        c.call("runtime.stop", {"name": name}, timeout=30)


@case("Pi's TUI on its berth PTY session takes a typed prompt, does the task and draws the answer", 180)
def pi_tui_task():
    need_program(PI, "Pi")
    tui_task("pi")


@case("OpenCode's TUI on its berth PTY session takes a typed prompt, does the task and draws the answer", 180)
def opencode_tui_task():
    need_program(OPENCODE, "OpenCode")
    tui_task("opencode")


def prompt_pi(c, st, message):
    """One prompt to Pi's rpc mode, read until the agent ends; returns
    agent_end."""
    rpc = JsonLines(c, st["proc"])
    rpc.send({"type": "prompt", "message": message})
    return rpc.until(lambda m: m.get("type") == "agent_end", 120)


def user_texts(body):
    """The user messages' texts of a chat-completion request."""
    out = []
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append(content)
    return out


@case("Pi started again with resume: true continues its own session: the model sees the earlier task; "
      "without it, a fresh one", 240)
def pi_resume_session():
    need_program(PI, "Pi")
    dirs = AgentDirs()
    with Sandbox(extra=runtime_sections(dirs), offline=True) as sb:
        target, script = task(dirs)
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        prompt_pi(c, start_ready(c, "pi", "rpc"), "Rewrite hello.txt.")
        expect_task_done(dirs, model, target, "successfully wrote")
        c.call("runtime.stop", {"name": "pi"}, timeout=30)
        for resume, want in ((True, ["Rewrite hello.txt.", "And now?"]), (False, ["And now?"])):
            before = len(model.completions())
            prompt_pi(c, start_ready(c, "pi", "rpc", resume=resume), "And now?")
            asked = [b for b in model.completions()[before:] if b.get("tools")]
            expect(asked, "no request reached the model after the prompt (resume %s)" % resume)
            expect_eq(user_texts(asked[0]), want, "the user messages the model saw, with resume %s" % resume)
            c.call("runtime.stop", {"name": "pi"}, timeout=30)


@case("Pi works in a clone workspace.prepare made over HTTPS: its edit is the clone's change, and "
      "preparing again leaves the dirty workspace alone", 240)
def pi_in_prepared_workspace():
    need_program(PI, "Pi")
    dirs = AgentDirs()
    # The git server's certificate is made once the sandbox runs; the
    # runtime's env names where it will be.
    ca = os.path.join(dirs.root, "ca.pem")
    with Sandbox(extra=runtime_sections(dirs, env={"GIT_SSL_CAINFO": ca}), offline=True) as sb:
        ns = sb.berthd_pid()
        gs = netns_call(ns, GitServer)
        shutil.copyfile(gs.cafile, ca)
        os.chmod(ca, 0o644)
        head = gs.repo("project").commit("main", {"hello.txt": "before\n", "README": "a project\n"})
        c = sb.unix(timeout=60)
        args = {"runtime": "pi", "repo": gs.url("project"), "branch": "main"}
        r = c.call("workspace.prepare", args, timeout=120)
        expect_eq((r["dir"], r["commit"], r["cloned"]), (dirs.workspace, head, True), "workspace.prepare's answer")
        target = os.path.join(dirs.workspace, "hello.txt")
        model = ScriptedModel([tool_call(["write"], file=target, content=EDITED), text(FINAL)], netns_of=ns)
        dirs.point_at(model)
        prompt_pi(c, start_ready(c, "pi", "rpc"), "Rewrite hello.txt.")
        expect_task_done(dirs, model, target, "successfully wrote")
        changed = git("-c", "safe.directory=*", "-C", dirs.workspace, "status", "--porcelain")
        expect_eq(changed, "M hello.txt", "git status of the clone after the task")
        c.call("runtime.stop", {"name": "pi"}, timeout=30)
        e = c.request("workspace.prepare", args, timeout=120)
        expect(not e.get("ok"), "preparing a dirty workspace again succeeded: %r" % e.get("result"))
        expect_eq((e["error"]["code"], e["error"].get("files")), ("conflict", ["hello.txt"]),
                  "the error of preparing the dirty workspace again")
        with open(target) as f:
            expect_eq(f.read(), EDITED, "the agent's edit after the refused prepare")


@case("the model provider's key is a berth secret: both runtimes send it to the model, the journal and "
      "berthd's log name it only", 300)
def provider_key_secret():
    need_program(PI, "Pi")
    need_program(OPENCODE, "OpenCode")
    dirs = AgentDirs()
    key = "sk-scripted-" + os.urandom(12).hex()
    with Sandbox(extra=runtime_sections(dirs, secrets=["SCRIPTED_API_KEY"]), offline=True) as sb:
        model = ScriptedModel([text(FINAL)], netns_of=sb.berthd_pid())
        dirs.point_at(model, key_env="SCRIPTED_API_KEY")
        c = sb.unix(timeout=30)
        c.call("secrets.set", {"SCRIPTED_API_KEY": key})
        prompt_pi(c, start_ready(c, "pi", "rpc"), "Say something.")
        st = start_ready(c, "opencode", "server")
        ns, port, auth = sb.berthd_pid(), st["port"], opencode_auth(st)
        session = json.loads(netns_http(ns, port, "POST", "/session", {}, headers=auth)[2])["id"]
        status, _, body = netns_http(ns, port, "POST", "/session/%s/message" % session,
                                     {"parts": [{"type": "text", "text": "Say something."}]}, headers=auth, timeout=120)
        expect_eq(status, 200, "the prompt through OpenCode's API: %r" % body[:300])
        seen = model.authorizations()
        note("the model saw %d requests" % len(seen))
        expect(len(seen) >= 2 and all(a == "Bearer " + key for a in seen),
               "the provider's key as each request's bearer: %r" % [a and a[:20] for a in seen])
        injected = [e["data"] for e in sb.events() if e["kind"] == "secrets.injected"]
        expect_eq(sorted((d["target"], tuple(d["names"])) for d in injected),
                  [("runtime/opencode", ("SCRIPTED_API_KEY",)), ("runtime/pi", ("SCRIPTED_API_KEY",))],
                  "secrets.injected: targets and names")
        for r in ("pi", "opencode"):
            c.call("runtime.stop", {"name": r}, timeout=30)
        expect(key.encode() not in sb.journal_bytes(), "the key is in the journal")
        expect(key not in sb.log(), "the key is in berthd's log")
        listed = json.dumps(c.call("runtime.list", timeout=30), default=str)
        expect(key not in listed, "the key is in runtime.list")


@case("OpenCode in server mode, started by runtime.start, passes its readiness check, answers its HTTP API "
      "on its port and runs a task through a session", 240)
def opencode_server_task():
    need_program(OPENCODE, "OpenCode")
    dirs = AgentDirs()
    with Sandbox(extra=runtime_sections(dirs), offline=True) as sb:
        target, script = task(dirs)
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        st = start_ready(c, "opencode", "server")
        port = st["port"]
        note("OpenCode ready on port %d after %s ms" % (port, st.get("ready_ms")))
        expect(isinstance(st.get("ready_ms"), int), "ready_ms in the status of a ready server: %r" % st)
        ready = dict(events_of(sb, "opencode")).get("runtime.ready")
        expect(ready is not None and ready["port"] == port, "runtime.ready with the port: %r" % ready)
        ns = sb.berthd_pid()
        expect_eq(netns_http(ns, port, "GET", "/path")[0], 401, "GET /path on OpenCode's port without the password")
        wrong = dict(st, password="not-" + st["password"])
        expect_eq(netns_http(ns, port, "GET", "/path", headers=opencode_auth(wrong))[0], 401,
                  "GET /path with a wrong password")
        auth = opencode_auth(st)
        status, _, body = netns_http(ns, port, "GET", "/path", headers=auth)
        expect_eq(status, 200, "GET /path on OpenCode's port with the password of runtime.status")
        expect_eq(json.loads(body).get("directory"), dirs.workspace, "the directory OpenCode serves")
        status, _, body = netns_http(ns, port, "POST", "/session", {}, headers=auth)
        expect_eq(status, 200, "POST /session: %r" % body[:300])
        session = json.loads(body)["id"]
        prompt = {"parts": [{"type": "text", "text": "Rewrite hello.txt."}]}
        status, _, body = netns_http(ns, port, "POST", "/session/%s/message" % session, prompt, headers=auth, timeout=120)
        expect_eq(status, 200, "POST /session/ID/message: %r" % body[:300])
        answer = json.loads(body)
        note("OpenCode's answer: %s" % body[:600])
        expect_task_done(dirs, model, target, "wrote file")
        said = "".join(p.get("text", "") for p in answer.get("parts") or [] if p.get("type") == "text")
        expect_eq(said, FINAL, "the agent's final message, in OpenCode's answer")
        expect_eq(answer["info"].get("finish"), "stop", "how the last step finished")
        status, _, body = netns_http(ns, port, "GET", "/session/%s/message" % session, headers=auth)
        parts = [p for m in json.loads(body) for p in m.get("parts") or []]
        tools = [(p.get("tool"), p.get("state", {}).get("status")) for p in parts if p.get("type") == "tool"]
        expect_in(("write", "completed"), tools, "the tools of the session, as OpenCode keeps them")
        expect_eq(c.call("runtime.stop", {"name": "opencode"}, timeout=30), {}, "runtime.stop's answer")
        try:
            netns_http(ns, port, "GET", "/path", timeout=5)
            answered = True
        except OSError:
            answered = False
        expect(not answered, "OpenCode still answers on port %d after runtime.stop" % port)


run()
