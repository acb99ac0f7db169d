"""Task runs (task.*): a backend hands a runtime a prompt, berth runs it
and its checks, keeps its output whole and delivers its change as a git
branch. With the real runtimes (Pi, OpenCode) pointed at a scripted model
on loopback, offline: a task that edits a file and passes its check
succeeds, a failing check fails naming it, a timeout ends every process
of the task. With a fake runtime (a script as the runtime's user): its
user, workspace, confinement, cgroup, environment and limits; its failures
and cancels; its output read exactly across a cut connection and a killed
gateway; a berthd restart that interrupts it; a busy runtime that rejects
or queues; bad input that starts nothing. Delivery to a real git server
over HTTPS: exactly the workspace's changes on the branch, the credential
nowhere, a failed or busy task refused, and hooks or config the runtime
plants changing nothing about what is delivered or where."""

import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Closed,
    Sandbox,
    case,
    expect,
    expect_eq,
    expect_in,
    files_under,
    note,
    proc_argv,
    run,
    scratch,
    short,
    wait_for,
)
from harness.gitserver import GIT, GitServer, TunnelProxy, git  # noqa: E402
from harness.model import ScriptedModel, text, tool_call  # noqa: E402
from harness.runtimes import OPENCODE, PI, AgentDirs, need_program  # noqa: E402
from harness.streams import read_to_eof  # noqa: E402
from harness.tasks import (  # noqa: E402
    PY,
    ProcessWatch,
    agent_repo,
    attach_read,
    commit_meta,
    disk_files,
    gitb,
    read_artifact,
    tree_files,
    daemon,
    err,
    exit_with,
    expect_code,
    fake_section,
    kill_self,
    line,
    listed_ids,
    out,
    pattern,
    real_sections,
    remove,
    report,
    run_task,
    sh,
    show,
    sleep,
    steps,
    stream_name,
    task_error,
    task_events,
    task_groups,
    group_members,
    user_processes,
    wait_file,
    wait_final,
    wait_quiet,
    wait_state,
    write,
    ws_of,
)

EDITED = "edited by the agent, as its task\n"
FINAL = "The file says what you asked."
# A check that passes only once the agent's edit is there (a path
# relative to the workspace: it runs there).
GREP_EDIT = ["/bin/grep", "-qxF", EDITED.strip(), "hello.txt"]
# A check that reports what it is and has, as the fake's report does.
CHECK_REPORT = [PY, "-c", "import json, os; print(json.dumps({'uid': os.getuid(), 'cwd': os.getcwd(), "
                "'env': dict(os.environ), 'cgroup': open('/proc/self/cgroup').read()}))"]
WAIT_FOR = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"


def edit_script(dirs):
    """hello.txt before the task, and the model's script that rewrites
    it."""
    target = dirs.write(os.path.join(dirs.workspace, "hello.txt"), "before\n")
    return target, [tool_call(["write"], file=target, content=EDITED), text(FINAL)]


def expect_edited(dirs, target):
    with open(target) as f:
        expect_eq(f.read(), EDITED, "the workspace's file after the task")
    expect_eq(dirs.owner(target), dirs.user, "the owner of the file the agent wrote")


def json_lines(data):
    """The JSON objects of a runtime's stdout, one a line."""
    objs = []
    for ln in data.splitlines():
        if ln.strip():
            try:
                objs.append(json.loads(ln))
            except ValueError:
                objs.append({"line": ln.decode(errors="replace")})
    return objs


def kinds_of(sb, task_id):
    return [k for k, _ in task_events(sb, task_id)]


def event_of(sb, task_id, kind):
    evs = [d for k, d in task_events(sb, task_id) if k == kind]
    expect(evs, "no %s event of task %s (its events: %s)" % (kind, task_id, kinds_of(sb, task_id)))
    return evs[-1]


def expect_ended(rec, state, what, reason=None):
    expect_eq(rec["state"], state, "%s: the state (reason %r)" % (what, rec.get("reason")))
    if reason is not None:
        expect_eq(rec["reason"], reason, "%s: the reason" % what)


def no_agent_left(sb, pw, what, timeout=3.0):
    """No process of the runtime's user is left in the sandbox (zombies
    included), within timeout of the task's end."""
    t0 = time.monotonic()
    try:
        wait_for(lambda: not user_processes(sb, pw.pw_uid), timeout, what, 0.05)
    except Exception:
        left = user_processes(sb, pw.pw_uid)
        raise AssertionError("%s: processes of %s left: %s" % (what, pw.pw_name, [(p, proc_argv(p)) for p in left]))
    note("%s: none left after %.2f s" % (what, time.monotonic() - t0))


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def expect_same_bytes(got, want, what):
    if got != want:
        raise AssertionError("%s: %d bytes, %d wanted, first difference at offset %d"
                             % (what, len(got), len(want), first_difference(got, want)))


# ---------------------------------------------------------------------
# What runs, and its record


@case("a task of the fake runtime runs as its user in its workspace, confined, in a cgroup of its own, with the "
      "catalog's and the request's env and limits, the prompt as its argument or on its stdin; its check the same; "
      "the record, its streams and events say what happened, the env by name only")
def t_what_runs():
    dirs = AgentDirs()
    secret = "v-" + os.urandom(12).hex()
    more = ("env = CATALOG_VAR=from-the-catalog", "open_files = 64")
    extra = fake_section("fake", dirs, lines=more) + fake_section("fakein", dirs, prompt_arg=False, lines=more)
    with Sandbox(extra=extra) as sb:
        c = sb.unix()
        ids = []
        for runtime, how in (("fake", "argv"), ("fakein", "stdin")):
            prompt = steps(report(), write("made-%s.txt" % how, "by the agent\n"), err("to stderr\n"), line("last"))
            t = run_task(c, runtime, prompt, checks=[CHECK_REPORT], env={"REQ_VAR": secret},
                         limits={"open_files": 40})
            expect_eq((t["state"], t.get("position")), ("running", None), "task.run's answer for %s" % runtime)
            ids.append(t["id"])
            rec = wait_final(c, t["id"])
            note("%s's record: %s" % (runtime, short(rec, 1500)))
            expect_eq((rec["state"], rec["reason"], rec["failed_check"], rec["cancelled_by"]),
                      ("succeeded", None, None, None), "%s: how the task ended" % runtime)
            _, stdout = attach_read(c, t["id"])
            first, rest = stdout.split(b"\n", 1)
            rep = json.loads(first)
            expect_eq(rest, b"last\n", "%s: the agent's stdout after its report" % runtime)
            expect_eq((rep["how"], rep["prompt_bytes"]), (how, len(prompt)), "%s: how the prompt came" % runtime)
            expect_eq((rep["uid"], rep["gid"]), (dirs.pw.pw_uid, dirs.pw.pw_gid), "%s: the agent's uid and gid" % runtime)
            expect_eq(rep["cwd"], dirs.workspace, "%s: the agent's directory" % runtime)
            env = rep["env"]
            expect_eq((env.get("REQ_VAR"), env.get("CATALOG_VAR"), env.get("HOME")),
                      (secret, "from-the-catalog", dirs.home), "%s: the agent's env" % runtime)
            expect_eq((rep["no_new_privs"], int(rep["cap_eff"], 16), int(rep["cap_bnd"], 16)), ("1", 0, 0),
                      "%s: no_new_privs, effective and bounding capabilities" % runtime)
            expect_eq(rep["nofile"], [40, 40], "%s: RLIMIT_NOFILE (the request's over the catalog's 64)" % runtime)
            expect(t["id"] in rep["cgroup"], "%s: the agent's cgroups do not name its task: %r" % (runtime, rep["cgroup"]))
            # The task's group, the limits of the catalog and the request
            # over them, told once the task has ended.
            lim = c.call("limits.status", {"target": "task/" + t["id"]})
            note("limits.status task/%s: %s" % (t["id"], short(lim, 800)))
            expect_eq((lim["target"], lim["cgroup"] is not None), ("task/" + t["id"], True),
                      "%s: limits.status of the task" % runtime)
            expect_eq({k: (v["value"], v["enforced"]) for k, v in lim["limits"].items()}, {"open_files": (40, True)},
                      "%s: the task's limits" % runtime)
            expect(lim["usage"].get("cpu_usec", 1) > 0, "%s: the task's CPU time: %r" % (runtime, lim["usage"]))
            _, checked = attach_read(c, t["id"], "check/0")
            crep = json.loads(checked)
            expect_eq((crep["uid"], crep["cwd"]), (dirs.pw.pw_uid, dirs.workspace), "%s: the check's uid and cwd" % runtime)
            expect_eq((crep["env"].get("REQ_VAR"), crep["env"].get("CATALOG_VAR")), (secret, "from-the-catalog"),
                      "%s: the check's env" % runtime)
            expect_eq(crep["cgroup"], rep["cgroup"], "%s: the check's cgroups against the agent's" % runtime)
            _, stderr = attach_read(c, t["id"], "stderr")
            expect_eq(stderr, b"to stderr\n", "%s: the agent's stderr" % runtime)
            made = os.path.join(dirs.workspace, "made-%s.txt" % how)
            expect_eq(dirs.owner(made), dirs.user, "%s: the owner of the file the agent made" % runtime)
            expect_eq((rec["id"], rec["runtime"], rec["prompt"], rec["env"], rec["timeout_s"]),
                      (t["id"], runtime, prompt, ["REQ_VAR"], 0), "%s: the record's request" % runtime)
            expect_eq(rec["agent"], {"exit": {"code": 0}, "bytes": len(stdout), "stderr_bytes": len(stderr)},
                      "%s: the record's agent" % runtime)
            expect_eq(len(rec["checks"]), 1, "%s: the record's checks" % runtime)
            chk = rec["checks"][0]
            expect_eq((chk["argv"], chk["ran"], chk["exit"], chk["bytes"]), (CHECK_REPORT, True, {"code": 0}, len(checked)),
                      "%s: the record's check" % runtime)
            expect(rec["created"] <= rec["started"] <= chk["started"] <= chk["finished"] <= rec["finished"],
                   "%s: the record's times are out of order: %r" % (runtime, rec))
            expect_eq((rec["delivery"], rec.get("position")), (None, None), "%s: delivery and position" % runtime)
            evs = task_events(sb, t["id"])
            expect_eq([k for k, _ in evs], ["task.started", "task.checking", "task.finished"], "%s: its events" % runtime)
            started, checking, finished = (d for _, d in evs)
            expect_eq(started["runtime"], runtime, "task.started's runtime")
            expect(isinstance(started["pid"], int) and started["pid"] > 1 and started.get("proc"),
                   "task.started's pid and proc: %r" % started)
            expect_eq((checking["check"], checking["argv"]), (0, CHECK_REPORT), "task.checking")
            expect_eq((finished["runtime"], finished["state"], finished["reason"], finished["failed_check"],
                       finished["cancelled_by"]), (runtime, "succeeded", None, None, None), "task.finished")
            expect(isinstance(finished["duration_ms"], int) and 0 <= finished["duration_ms"] <= rec["finished"] - rec["created"] + 1,
                   "task.finished's duration_ms: %r" % finished)
        expect_eq(listed_ids(c), ids[::-1], "task.list: newest first")
        expect_eq(listed_ids(c, runtime="fake"), ids[:1], "task.list of runtime fake")
        expect_eq(listed_ids(c, state="succeeded"), ids[::-1], "task.list of the succeeded")
        expect_eq(listed_ids(c, state="failed"), [], "task.list of the failed")
        expect_eq([t["id"] for t in sb.ws().call("task.list")["tasks"]], ids[::-1], "task.list over the WebSocket")
        # The value of the request's env is the agent's only.
        expect(secret not in repr(c.call("task.list")), "task.list holds the env's value")
        tasks = os.path.join(sb.state_dir, "tasks")
        st = os.stat(tasks)
        expect_eq((st.st_uid, st.st_mode & 0o777), (0, 0o700), "<state>/tasks: owner and mode")
        for path, data in files_under(tasks):
            # The outputs hold what the agent printed (its env, here);
            # the records hold the request.
            expect(not path.endswith("/record") or secret.encode() not in data, "%s holds the env's value" % path)
            fst = os.stat(path)
            expect(fst.st_uid == 0 and not fst.st_mode & 0o077, "%s: owner %d, mode %o" % (path, fst.st_uid, fst.st_mode))
        expect(secret.encode() not in sb.journal_bytes(), "the journal holds the env's value")
        expect(secret not in sb.log(), "berthd's log holds the env's value")


@case("the agent's exit status or signal fails the task and no check runs; a program that cannot start fails it "
      "too; a check past the timeout is killed and no later check runs; cancel, over either transport and while "
      "checking, kills every process of the task")
def t_failures():
    dirs = AgentDirs()
    broken = ("[runtime broken]\ncommand = /nonexistent/agent\nuser = agent\nworkspace = %s\ntask = {prompt}\n\n"
              % dirs.workspace)
    with Sandbox(extra=fake_section("fake", dirs) + broken) as sb:
        c = sb.unix()
        marker = [PY, "-c", "open('check-ran', 'w')"]
        for prompt, reason, exit_ in ((steps(exit_with(3)), "the agent exited with status 3", {"code": 3}),
                                      (steps(kill_self(9)), "the agent was killed by signal 9", {"signal": 9})):
            t = run_task(c, "fake", prompt, checks=[marker])
            rec = wait_final(c, t["id"])
            expect_ended(rec, "failed", reason, reason)
            expect_in(rec["failed_check"], (None, -1), "failed_check of a failed agent")
            expect_eq(rec["agent"]["exit"], exit_, "the agent's exit")
            expect_eq(rec["checks"][0]["ran"], False, "the check ran after the agent failed")
            expect("task.checking" not in kinds_of(sb, t["id"]), "a task.checking after the agent failed")
            expect(not os.path.exists(os.path.join(dirs.workspace, "check-ran")), "the check ran after the agent failed")
            fin = event_of(sb, t["id"], "task.finished")
            expect_eq((fin["state"], fin["reason"]), ("failed", reason), "task.finished")
        # It may be answered failed at once.
        t = c.call("task.run", {"runtime": "broken", "prompt": "anything"})
        rec = wait_final(c, t["id"])
        note("a program that cannot start: %r" % rec["reason"])
        expect(rec["state"] == "failed" and rec["reason"], "a program that cannot start: %r" % rec)
        # The timeout covers the checks too: the first is killed, the
        # second never runs.
        second = os.path.join(dirs.workspace, "second-check")
        t = run_task(c, "fake", steps(line("quick")), timeout_s=2,
                     checks=[[PY, "-c", "import time; time.sleep(60)"], [PY, "-c", "open(%r, 'w')" % second]])
        rec = wait_final(c, t["id"], 30)
        expect_ended(rec, "timed_out", "a check past the timeout")
        took = rec["finished"] - rec["started"]
        expect(1900 <= took < 10000, "the task timed out after %d ms, its timeout 2 s" % took)
        expect_eq([ch["ran"] for ch in rec["checks"]], [True, False], "which checks ran")
        expect(not os.path.exists(second), "a check ran after the timeout")
        no_agent_left(sb, dirs.pw, "after the timed out check")
        # Cancels: a running agent with a daemon of its own, over the
        # WebSocket; a checking task, over the Unix socket.
        w = sb.ws()
        for client, who, prompt, checks, at in (
                (w, "the backend", steps(daemon(60, os.path.join(dirs.home, "daemon")), sleep(60)), [], "running"),
                (c, "root on the Unix socket", steps(line("ok")), [[PY, "-c", "import time; time.sleep(60)"]],
                 "checking")):
            t = run_task(client, "fake", prompt, checks=checks)
            wait_state(c, t["id"], at, 20)
            wait_for(lambda: len(user_processes(sb, dirs.pw.pw_uid)) >= (2 if at == "running" else 1), 10,
                     "the task's processes")
            expect_eq(client.call("task.cancel", {"id": t["id"]}), {}, "task.cancel's answer (%s)" % at)
            rec = wait_final(c, t["id"], 20)
            expect_eq((rec["state"], rec["cancelled_by"]), ("cancelled", who), "the task cancelled while %s" % at)
            fin = event_of(sb, t["id"], "task.finished")
            expect_eq((fin["state"], fin["cancelled_by"]), ("cancelled", who), "task.finished of the cancel")
            no_agent_left(sb, dirs.pw, "after the cancel while %s" % at)
            expect_code(task_error(client, "task.cancel", {"id": t["id"]}), "conflict", "a cancel of an ended task")


# ---------------------------------------------------------------------
# The real runtimes


def real_sandbox(dirs, **kw):
    return Sandbox(extra=real_sections(dirs, **kw), offline=True)


@case("Pi: a task that edits a file and whose check passes ends succeeded; its stdout is Pi's JSON events", 150)
def t_pi_succeeds():
    need_program(PI, "Pi")
    dirs = AgentDirs()
    with real_sandbox(dirs) as sb:
        target, script = edit_script(dirs)
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        t = run_task(c, "pi", "Rewrite hello.txt.", checks=[GREP_EDIT], timeout_s=120)
        rec = wait_final(c, t["id"], 120)
        model.check()
        expect_ended(rec, "succeeded", "Pi's task")
        expect_edited(dirs, target)
        expect_eq((rec["checks"][0]["ran"], rec["checks"][0]["exit"]), (True, {"code": 0}), "the check")
        _, data = attach_read(c, t["id"])
        objs = json_lines(data)
        types = [o.get("type") for o in objs]
        note("Pi's events: %s" % short(types, 400))
        expect_in("agent_end", types, "Pi's events on the task's stdout")
        said = [m for m in objs if m.get("type") == "message_end" and m["message"].get("role") == "user"]
        expect(said and said[0]["message"]["content"][0]["text"] == "Rewrite hello.txt.",
               "the prompt Pi read on its stdin: %s" % short(said))
        expect_eq(rec["agent"]["bytes"], len(data), "the record's agent bytes")


@case("OpenCode: a task whose second check fails ends failed naming it; every check runs", 150)
def t_opencode_check_fails():
    need_program(OPENCODE, "OpenCode")
    dirs = AgentDirs()
    with real_sandbox(dirs) as sb:
        target, script = edit_script(dirs)
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        checks = [GREP_EDIT, ["/bin/sh", "-c", "echo the first failing; exit 3"], ["/bin/sh", "-c", "exit 4"]]
        t = run_task(c, "opencode", "Rewrite hello.txt.", checks=checks, timeout_s=120)
        rec = wait_final(c, t["id"], 120)
        model.check()
        expect_edited(dirs, target)
        note("the record: %s" % short(rec, 1500))
        expect_eq((rec["state"], rec["failed_check"]), ("failed", 1), "OpenCode's task with a failing check")
        expect(rec["reason"].startswith("check 1 (/bin/sh") and rec["reason"].endswith(") exited with status 3"),
               "the reason: %r" % rec["reason"])
        expect_eq([(ch["ran"], ch["exit"]) for ch in rec["checks"]], [(True, {"code": 0}), (True, {"code": 3}),
                                                                     (True, {"code": 4})], "every check ran")
        _, said = attach_read(c, t["id"], "check/1")
        expect_eq(said, b"the first failing\n", "check 1's output")
        evs = task_events(sb, t["id"])
        expect_eq([(k, d.get("check")) for k, d in evs if k != "task.started"],
                  [("task.checking", 0), ("task.checking", 1), ("task.checking", 2), ("task.finished", None)],
                  "the task's events")
        expect_eq((evs[-1][1]["state"], evs[-1][1]["failed_check"], evs[-1][1]["reason"]),
                  ("failed", 1, rec["reason"]), "task.finished")
        _, data = attach_read(c, t["id"])
        tools = [(o["part"].get("tool"), o["part"]["state"].get("status")) for o in json_lines(data)
                 if o.get("type") == "tool_use"]
        expect_eq(tools, [("write", "completed")], "the tools on OpenCode's JSON stdout")


@case("Pi: a task past its timeout ends timed_out: every process of it, a setsid daemon of its bash tool "
      "included, is killed, its cgroup empty, and no check runs", 150)
def t_pi_timeout():
    need_program(PI, "Pi")
    dirs = AgentDirs()
    with real_sandbox(dirs) as sb:
        cmd = "setsid sleep 300 </dev/null >/dev/null 2>&1 & exec sleep 120"
        model = ScriptedModel([tool_call(["bash"], command=cmd), text("never")], netns_of=sb.berthd_pid())
        dirs.point_at(model)
        c = sb.unix(timeout=30)
        t = run_task(c, "pi", "Sleep a while.", checks=[["/bin/true"]], timeout_s=15)
        uid = dirs.pw.pw_uid

        def sleepers():
            found = {" ".join(proc_argv(p)[:2]): p for p in user_processes(sb, uid)}
            return found if {"sleep 300", "sleep 120"} <= set(found) else None

        found = wait_for(sleepers, 14, "the bash tool's sleeps running")
        groups = {name: task_groups(pid, t["id"]) for name, pid in found.items() if name.startswith("sleep")}
        note("the task's processes: %r; the sleeps' groups: %r" % (found, groups))
        for name, dirs_ in groups.items():
            expect(dirs_, "%s is in no cgroup of the task's" % name)
            for d in dirs_:
                expect_in(found[name], group_members(d), "the members of %s" % d)
        expect_eq(show(c, t["id"])["state"], "running", "the task while its tool sleeps")
        rec = wait_final(c, t["id"], 30)
        expect_ended(rec, "timed_out", "Pi's task past its timeout")
        took = rec["finished"] - rec["started"]
        expect(14900 <= took < 25000, "the task ended %d ms after it started, its timeout 15 s" % took)
        expect_eq(rec["checks"][0]["ran"], False, "the check ran after the timeout")
        expect("task.checking" not in kinds_of(sb, t["id"]), "a task.checking after the timeout")
        no_agent_left(sb, dirs.pw, "after the timeout")
        for d in {d for ds in groups.values() for d in ds}:
            expect_eq(group_members(d), [], "the members of the task's cgroup %s" % d)
        fin = event_of(sb, t["id"], "task.finished")
        expect_eq(fin["state"], "timed_out", "task.finished")


@case("Pi's output over a gateway killed mid-task: the new connection reads on from its offset, and the whole "
      "stream is what a reader that never disconnected saw; the task succeeds", 150)
def t_pi_gateway_killed():
    need_program(PI, "Pi")
    dirs = AgentDirs()
    with real_sandbox(dirs) as sb:
        target = dirs.write(os.path.join(dirs.workspace, "hello.txt"), "before\n")
        script = [tool_call(["bash"], command="sleep 6; echo slept"), tool_call(["write"], file=target, content=EDITED),
                  text(FINAL)]
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        u = sb.unix(timeout=30)
        w = ws_of(sb)
        t = run_task(w, "pi", "Sleep, then rewrite hello.txt.", checks=[GREP_EDIT], timeout_s=120)
        name = stream_name(t["id"])
        u.call("task.attach", {"id": t["id"]})
        w.call("task.attach", {"id": t["id"]})
        got = bytearray()
        deadline = time.monotonic() + 60
        while b"tool_execution_start" not in got:
            m = w.recv(max(deadline - time.monotonic(), 0.1))
            if m.get("type") == "data" and m.get("stream") == name:
                expect_eq(m["offset"], len(got), "the offset of the next chunk")
                expect(not m.get("eof"), "Pi's stdout ended before its bash tool ran")
                got += m["data"]
        expect_eq(show(u, t["id"])["state"], "running", "the task when the gateway is killed")
        gw = sb.gateway_pid()
        os.kill(gw, signal.SIGKILL)
        try:
            while True:
                m = w.recv(10)
                if m.get("type") == "data" and m.get("stream") == name and not m.get("eof"):
                    expect_eq(m["offset"], len(got), "the offset of the next chunk")
                    got += m["data"]
        except Closed:
            pass
        note("%d bytes read before the gateway went" % len(got))
        sb.gateway_pid(timeout=15, other_than=gw)
        w = ws_of(sb)
        _, rest = attach_read(w, t["id"], from_offset=len(got), timeout=90)
        got += rest
        rec = wait_final(w, t["id"], 60)
        model.check()
        expect_ended(rec, "succeeded", "Pi's task across the gateway's death")
        expect_edited(dirs, target)
        whole = read_to_eof(u, [name], timeout=30)[name]
        expect_same_bytes(bytes(got), whole, "what the backend read across two connections, against the reader that "
                          "never disconnected")
        expect_same_bytes(attach_read(sb.unix(), t["id"])[1], whole, "the stream read again from offset 0")
        expect_eq(rec["agent"]["bytes"], len(whole), "the record's agent bytes")
        expect_in("agent_end", [o.get("type") for o in json_lines(whole)], "Pi's events")


# ---------------------------------------------------------------------
# Streams, connections, restarts

BIG = 6 << 20


@case("the backend's connection cut, then the gateway killed with SIGKILL, while a task writes 6 MiB: the task "
      "goes on, each new connection reads on from its offset, and every byte is exact", 150)
def t_cut_and_gateway_killed():
    dirs = AgentDirs()
    with Sandbox(extra=fake_section("fake", dirs)) as sb:
        u = sb.unix(timeout=30)
        t = run_task(u, "fake", steps(out(BIG, "big", 48 << 10, 0.06), err("written\n")))
        tid, name = t["id"], stream_name(t["id"])
        # The reader that never disconnects: attached now, read at the end.
        u.call("task.attach", {"id": tid})
        got = bytearray()

        def take(c, upto):
            while len(got) < upto:
                m = c.recv(30)
                if m.get("type") == "data" and m.get("stream") == name:
                    expect_eq(m["offset"], len(got), "the offset of the next chunk")
                    expect(not m.get("eof"), "the stream ended at %d bytes" % len(got))
                    got.extend(m["data"])

        w = ws_of(sb)
        r = w.call("task.attach", {"id": tid})
        expect_eq((r["id"], r["stream"], r["offset"], r["ended"], r["state"]), (tid, "agent", 0, False, "running"),
                  "task.attach's answer")
        take(w, 1 << 20)
        expect_eq(show(u, tid)["state"], "running", "the task when the connection is cut")
        w.abort()
        w = ws_of(sb)
        r = w.call("task.attach", {"id": tid, "from_offset": len(got)})
        expect(r["offset"] == len(got) <= r["end"] and not r["ended"], "task.attach from %d: %r" % (len(got), r))
        take(w, 3 << 20)
        rec = show(u, tid)
        expect(rec["state"] == "running" and rec["agent"]["bytes"] < BIG,
               "the task when the gateway is killed: %s, %d bytes" % (rec["state"], rec["agent"]["bytes"]))
        gw = sb.gateway_pid()
        os.kill(gw, signal.SIGKILL)
        try:
            take(w, BIG + 1)
        except Closed:
            pass
        note("%d bytes read before the gateway went" % len(got))
        sb.gateway_pid(timeout=15, other_than=gw)
        expect_eq(show(u, tid)["state"], "running", "the task once the gateway is back")
        w = ws_of(sb)
        _, rest = attach_read(w, tid, from_offset=len(got), timeout=90)
        got += rest
        rec = wait_final(w, tid, 60)
        expect_ended(rec, "succeeded", "the task")
        expect_eq((rec["agent"]["bytes"], rec["agent"]["stderr_bytes"]), (BIG, 8), "the record's stream sizes")
        want = pattern("big", BIG)
        expect_same_bytes(bytes(got), want, "what the backend read across three connections")
        expect_same_bytes(read_to_eof(u, [name], timeout=60)[name], want, "what the reader that never disconnected read")
        expect_same_bytes(attach_read(sb.unix(timeout=30), tid, timeout=60)[1], want, "the stream read again from 0")
        r, tail = attach_read(w, tid, from_offset=BIG)
        expect_eq((r["end"], r["ended"], tail), (BIG, True, b""), "an attach at the end of the ended stream")
        expect_code(task_error(w, "task.attach", {"id": tid, "from_offset": BIG + 1}), "bad_args",
                    "an attach past the end")
        # Attaching again on a connection moves its place on the stream:
        # what came before the answer follows on from 0, what comes after
        # it starts at the new offset.
        c = sb.unix(timeout=30)
        c.call("task.attach", {"id": tid})
        time.sleep(0.5)
        r = c.response(c.send_request("task.attach", {"id": tid, "from_offset": BIG - 10}))
        expect(r.get("ok"), "attaching again: %r" % r)
        before = [m for m in c._pending if m.get("type") == "data" and m.get("stream") == name]
        c._pending.clear()
        at = 0
        for m in before:
            expect(m["offset"] == at and not m.get("eof"), "the chunks before the second attach: %r at %d"
                   % ((m["offset"], m.get("eof")), at))
            at += len(m["data"])
        note("%d bytes came before the second attach's answer" % at)
        expect(at < BIG - 10, "the whole stream came before the second attach's answer")
        again = read_to_eof(c, [name], {name: BIG - 10})[name]
        expect_eq(again, want[-10:], "the bytes after attaching again from another offset")
        expect_eq(attach_read(c, tid, "stderr")[1], b"written\n", "the stderr stream")


@case("berthd killed, then stopped, and started again over the same state directory: its running and queued "
      "tasks are interrupted, the output up to then readable; the runtime takes tasks again", 120)
def t_interrupted():
    dirs = AgentDirs()
    with Sandbox(extra=fake_section("fake", dirs, busy="queue")) as sb:
        c = sb.unix()
        a = run_task(c, "fake", steps(out(300000, "a", 10000, 0.01), sleep(120)))
        b = run_task(c, "fake", steps(write("b-ran", "x")))
        expect_eq((b["state"], b["position"]), ("queued", 1), "the second task.run's answer")
        wait_for(lambda: show(c, a["id"])["agent"]["bytes"] >= 300000, 30, "the first task's output")
        sb.kill()
        sb.start()
        c = sb.unix()
        ra, rb = show(c, a["id"]), show(c, b["id"])
        expect_ended(ra, "interrupted", "the running task after berthd was killed", "berthd restarted while it ran")
        expect_ended(rb, "interrupted", "the queued task after berthd was killed", "berthd restarted before it ran")
        r, data = attach_read(c, a["id"])
        expect_eq(r["ended"], True, "the interrupted task's stream ended")
        expect_same_bytes(data, pattern("a", 300000), "the interrupted task's output")
        expect(wait_quiet(lambda: not os.path.exists(os.path.join(dirs.workspace, "b-ran")), 1.0),
               "the queued task ran after the restart")
        expect_eq(user_processes(sb, dirs.pw.pw_uid), [], "processes of the runtime's user after the restart")
        expect_eq(listed_ids(c, state="interrupted"), [b["id"], a["id"]], "task.list of the interrupted")
        d = run_task(c, "fake", steps(line("d's line"), sleep(120)))
        wait_for(lambda: show(c, d["id"])["agent"]["bytes"] >= 9, 20, "the third task's line")
        expect_eq(sb.restart(), 0, "berthd's exit status on SIGTERM")
        c = sb.unix()
        rd = show(c, d["id"])
        expect_ended(rd, "interrupted", "the task running when berthd was stopped", "berthd stopped while it ran")
        expect_eq(attach_read(c, d["id"])[1], b"d's line\n", "its output")
        e = run_task(c, "fake", steps(line("after")))
        expect_eq(e["state"], "running", "a task after the restarts")
        expect_ended(wait_final(c, e["id"]), "succeeded", "a task after the restarts")
        expect_eq(len(listed_ids(c)), 4, "the tasks listed")


# ---------------------------------------------------------------------
# A busy runtime


@case("busy = reject: a task.run while a task runs or checks is a conflict naming it, and starts nothing; "
      "once it ended, a task runs")
def t_busy_reject():
    dirs = AgentDirs()
    gates = scratch(0o755)
    go1, go2 = os.path.join(gates, "go1"), os.path.join(gates, "go2")
    with Sandbox(extra=fake_section("fake", dirs, busy="reject")) as sb:
        c = sb.unix()
        a = run_task(c, "fake", steps(wait_file(go1)), checks=[[PY, "-c", WAIT_FOR, go2]])
        second = {"runtime": "fake", "prompt": steps(write("second-ran", "x"))}
        for at, gate in (("running", go1), ("checking", go2)):
            wait_state(c, a["id"], at, 20)
            for client in (c, sb.ws()):
                e = task_error(client, "task.run", second)
                expect_eq((e["code"], e["message"], e.get("task")),
                          ("conflict", "runtime fake is busy with task %s" % a["id"], a["id"]),
                          "a task.run while the task is %s" % at)
            expect_eq(listed_ids(c), [a["id"]], "the tasks while one is %s" % at)
            with open(gate, "w"):
                pass
        expect_ended(wait_final(c, a["id"]), "succeeded", "the first task")
        expect(not os.path.exists(os.path.join(dirs.workspace, "second-ran")), "a refused task ran")
        expect_eq({d["id"] for _, d in task_events(sb)}, {a["id"]}, "the tasks with events")
        b = c.call("task.run", second)
        expect_eq(b["state"], "running", "a task.run once the first ended")
        expect_ended(wait_final(c, b["id"]), "succeeded", "the second task")


@case("busy = queue: tasks queue in order with their positions and run one after another; a queued task "
      "cancelled leaves the queue; events queued, started and finished in order")
def t_busy_queue():
    dirs = AgentDirs()
    go = os.path.join(scratch(0o755), "go")
    with Sandbox(extra=fake_section("fake", dirs, busy="queue")) as sb:
        c = sb.unix()
        a = run_task(c, "fake", steps(wait_file(go), line("a")))
        queued = []
        for n in ("b", "x", "d"):
            r = run_task(c, "fake", steps(write("ran-" + n, n), sleep(0.3)))
            queued.append(r)
            expect_eq((r["state"], r["position"]), ("queued", len(queued)), "task.run of %s" % n)
        b, x, d = (r["id"] for r in queued)
        expect_eq([show(c, i).get("position") for i in (a["id"], b, x, d)], [None, 1, 2, 3], "the positions")
        # The running task's group holds its agent; a queued one has none.
        lim = c.call("limits.status", {"target": "task/" + a["id"]})
        expect(lim["cgroup"] is not None and lim["usage"].get("processes", 1) >= 1,
               "limits.status of the running task: %r" % lim)
        r = c.request("limits.status", {"target": "task/" + b})
        expect_eq(r["error"]["code"] if not r["ok"] else None, "not_found", "limits.status of a queued task")
        expect_eq(c.call("task.cancel", {"id": x}), {}, "task.cancel of a queued task")
        rx = show(c, x)
        expect_eq((rx["state"], rx["started"], rx.get("position")), ("cancelled", None, None), "the cancelled queued task")
        expect_eq([show(c, i)["position"] for i in (b, d)], [1, 2], "the positions after the cancel")
        expect_eq(listed_ids(c), [d, x, b, a["id"]], "task.list, newest first")
        expect_eq(listed_ids(c, state="queued"), [d, b], "task.list of the queued")
        with open(go, "w"):
            pass
        rd = wait_final(c, d, 30)
        ra, rb = show(c, a["id"]), show(c, b)
        for rec in (ra, rb, rd):
            expect_ended(rec, "succeeded", "task %s" % rec["id"])
        expect(ra["finished"] <= rb["started"] and rb["finished"] <= rd["started"],
               "the tasks overlapped: %r" % [(r["started"], r["finished"]) for r in (ra, rb, rd)])
        expect(not os.path.exists(os.path.join(dirs.workspace, "ran-x")), "the cancelled task ran")
        evs = [(k, dd["id"]) for k, dd in task_events(sb)]
        expect_eq([e for e in evs if e[0] == "task.queued"], [("task.queued", i) for i in (b, x, d)], "task.queued")
        expect_eq([e for e in evs if e[0] != "task.queued"],
                  [("task.started", a["id"]), ("task.finished", x), ("task.finished", a["id"]), ("task.started", b),
                   ("task.finished", b), ("task.started", d), ("task.finished", d)],
                  "task.started and task.finished in order")
        qd = [dd for k, dd in task_events(sb) if k == "task.queued"]
        expect_eq([(q["runtime"], q["position"]) for q in qd], [("fake", 1), ("fake", 2), ("fake", 3)],
                  "task.queued's runtime and position")
        expect_eq(event_of(sb, x, "task.finished")["cancelled_by"], "root on the Unix socket", "who cancelled")


# ---------------------------------------------------------------------
# Bad input

def check_named(message, i):
    return re.search(r"check\w*\W{0,2}%d\b" % i, message) is not None


@case("bad task.run arguments, unknown runtimes and tasks: clear errors, nothing started")
def t_bad_input():
    dirs = AgentDirs()
    plain = "[runtime plain]\ncommand = /bin/true\nuser = agent\nworkspace = %s\nrpc =\n\n" % dirs.workspace
    with Sandbox(extra=fake_section("fake", dirs) + plain) as sb:
        c = sb.unix()
        good = steps(write("ran", "x"))
        base = {"runtime": "fake", "prompt": good}
        t = ["/bin/true"]
        refused = [
            ({"runtime": "nope", "prompt": good}, "not_found", "nope"),
            ({"runtime": "plain", "prompt": good}, "bad_args", "runtime plain takes no tasks"),
            ({"prompt": good}, "bad_args", "runtime"),
            ({"runtime": "fake"}, "bad_args", "prompt"),
            (dict(base, prompt=""), "bad_args", "prompt"),
            (dict(base, prompt="x" * (256 * 1024 + 1)), "bad_args", "prompt"),
            (dict(base, prompt=7), "bad_args", "prompt"),
            (dict(base, checks="/bin/true"), "bad_args", "checks"),
            (dict(base, checks=[t] * 17), "bad_args", "checks"),
            (dict(base, timeout_s=604801), "bad_args", "timeout_s"),
            (dict(base, timeout_s=-1), "bad_args", "timeout_s"),
            (dict(base, timeout_s="10"), "bad_args", "timeout_s"),
            (dict(base, env={"": "x"}), "bad_args", "env"),
            (dict(base, env={"A=B": "x"}), "bad_args", "env"),
            (dict(base, env={"A": 1}), "bad_args", "env"),
            (dict(base, env={"V%d" % i: "x" for i in range(65)}), "bad_args", "env"),
            (dict(base, env=["A=B"]), "bad_args", "env"),
            (dict(base, limits={"memory_bytes": 1}), "bad_args", "memory_bytes"),
            (dict(base, limits={"nonsense": 1}), "bad_args", "nonsense"),
        ]
        bad_checks = [
            ([["/bin/true"], "/bin/true"], 1),
            ([[]], 0),
            ([t, t, ["/bin/echo", 1]], 2),
            ([t, [""]], 1),
            ([["a" * 4097]], 0),
            ([["a"] * 65], 0),
            ([t, {"argv": t}], 1),
        ]
        for args, code, word in refused:
            e = task_error(c, "task.run", args)
            expect_code(e, code, "task.run %s" % short(args, 120))
            expect(word in e["message"], "the error of task.run %s does not say %r: %r" % (short(args, 120), word, e))
        for checks, i in bad_checks:
            e = task_error(c, "task.run", dict(base, checks=checks))
            expect_code(e, "bad_args", "checks %s" % short(checks, 120))
            expect(check_named(e["message"], i), "the error of checks %s does not name check %d: %r"
                   % (short(checks, 120), i, e["message"]))
        unknown = "0123456789abcdef"
        for op, args in (("task.show", {}), ("task.attach", {}), ("task.cancel", {})):
            expect_code(task_error(c, op, dict(args, id=unknown)), "not_found", "%s of an unknown task" % op)
            for bad in ("xyz", unknown.upper(), unknown[:-1], unknown + "0", 12):
                expect_code(task_error(c, op, dict(args, id=bad)), "bad_args", "%s of id %r" % (op, bad))
            expect_code(task_error(c, op, args), "bad_args", "%s without an id" % op)
        expect(wait_quiet(lambda: not os.path.exists(os.path.join(dirs.workspace, "ran")), 0.5), "a refused task ran")
        expect_eq(c.call("task.list")["tasks"], [], "task.list after the refusals")
        expect_eq(task_events(sb), [], "task events after the refusals")
        expect_eq(user_processes(sb, dirs.pw.pw_uid), [], "processes of the runtime's user")
        # A task's streams: a check not started (there, empty, not
        # ended), one that is not there, a stream that is no stream.
        go = os.path.join(scratch(0o755), "go")
        r = run_task(c, "fake", steps(wait_file(go)), checks=[t])
        a = c.call("task.attach", {"id": r["id"], "stream": "check/0"})
        expect_eq((a["stream"], a["offset"], a["end"], a["ended"]), ("check/0", 0, 0, False),
                  "an attach to a check not started yet")
        expect_code(task_error(c, "task.attach", {"id": r["id"], "stream": "check/1"}), "not_found",
                    "an attach to check/1 of a task with one check")
        e = task_error(c, "task.attach", {"id": r["id"], "stream": "bogus"})
        expect_in(e["code"], ("bad_args", "not_found"), "an attach to stream bogus")
        expect_code(task_error(c, "task.attach", {"id": r["id"], "from_offset": 1}), "bad_args",
                    "an attach past the end of an empty stream")
        with open(go, "w"):
            pass
        expect_ended(wait_final(c, r["id"]), "succeeded", "the task")
        expect_code(task_error(c, "task.attach", {"id": r["id"], "stream": "check/1"}), "not_found",
                    "an attach to a check that is not there")


# ---------------------------------------------------------------------
# Delivery

def git_sections(gs, dirs, busy=None, name="fake"):
    return fake_section(name, dirs, busy=busy, lines=("env = GIT_SSL_CAINFO=%s" % gs.cafile,))


def pushable(repo):
    """git http-backend takes a push with no REMOTE_USER only so."""
    git("-C", repo.bare, "config", "http.receivepack", "true")


# The project's files before the task; what the task does to them; what
# the workspace then holds that git should see (.gitignore applies).
BEFORE = {"a.txt": "one\n", "b.txt": "two\n", "c.sh": "#!/bin/sh\necho c\n", "sub/d.txt": "dee\n",
          ".gitignore": "*.log\nbuild/\n"}
TASK_STEPS = (write("a.txt", "one, changed\n"), remove("b.txt"), write("new file.txt", "new\n"),
              write("sub/e.txt", "e\n"), write("debug.log", "ignored\n"), sh("mkdir -p build && echo x > build/out"),
              sh("chmod +x c.sh"))
IGNORED = ("debug.log", "build")


@case("task.deliver pushes the task's change to a real git server: the branch holds exactly the workspace's "
      "files on its HEAD, with the message and author asked; the diff is an artifact; the credential appears nowhere",
      150)
def t_deliver_push():
    gs = GitServer(delay=0.3)
    user, secret = "u-" + os.urandom(8).hex(), "pw-" + os.urandom(16).hex()
    repo = gs.repo("project", private=(user, secret))
    pushable(repo)
    base = repo.commit("main", BEFORE)
    dirs = AgentDirs()
    cred = {"username": user, "password": secret}
    with Sandbox(extra=git_sections(gs, dirs)) as sb:
        c = sb.ws(timeout=60)
        prep = c.call("workspace.prepare", {"runtime": "fake", "repo": gs.url("project"), "credential": cred},
                      timeout=90)
        expect_eq((prep["dir"], prep["commit"]), (dirs.workspace, base), "the prepared workspace")
        t = run_task(c, "fake", steps(*TASK_STEPS), checks=[["/bin/test", "-f", "new file.txt"]])
        expect_ended(wait_final(c, t["id"]), "succeeded", "the task")
        ws = dirs.workspace
        status_before = gitb("-C", ws, "status", "--porcelain")
        wrong = "wrong-" + os.urandom(8).hex()
        e = task_error(c, "task.deliver", {"id": t["id"], "branch": "task/wrong", "commit_message": "m", "push": True,
                                           "repo": gs.url("project"), "credential": {"username": user, "password": wrong}},
                       timeout=90)
        note("a push with a wrong password: %r" % e)
        expect_code(e, "git_failed", "a push with a wrong password")
        expect(wrong not in json.dumps(e), "the error holds the wrong password")
        watch = ProcessWatch([secret, user], marks=("berth-workspace", "remote-https"))
        args = {"id": t["id"], "branch": "task/one", "commit_message": "Do the task\n\nIn detail.",
                "author": {"name": "Task Author", "email": "task@example.invalid"}, "push": True,
                "repo": gs.url("project"), "credential": cred}
        try:
            r = c.call("task.deliver", args, timeout=90)
        finally:
            watch.stop()
        note("task.deliver: %s" % short(r, 1500))
        note("the watch saw %r" % sorted(watch.seen))
        expect(not watch.found, "the credential in a process's cmdline or environ: %r" % watch.found[:3])
        expect_eq(set(watch.seen), {"berth-workspace", "remote-https"}, "the processes the watch saw")
        commit = r["commit"]
        expect_eq((r["id"], r["branch"], r["base"], r["pushed"]), (t["id"], "task/one", base, True), "the answer")
        expect_eq(gitb("--git-dir", repo.bare, "rev-parse", "refs/heads/task/one").decode().strip(), commit,
                  "the branch on the server")
        expect_eq(gitb("-C", ws, "rev-parse", "refs/heads/task/one").decode().strip(), commit,
                  "the branch in the workspace's repository")
        parents, author, committer, message, raw = commit_meta(repo.bare, commit)
        expect_eq(parents, [base], "the commit's parents")
        expect_eq((author, committer), ("Task Author <task@example.invalid>",) * 2, "the author and committer")
        expect_eq(message.rstrip("\n"), "Do the task\n\nIn detail.", "the commit's message")
        expect_eq(tree_files(repo.bare, commit), disk_files(ws, IGNORED), "the commit's tree against the workspace")
        names = gitb("--git-dir", repo.bare, "diff", "--name-status", base, commit).decode().split("\n")
        expect_eq(sorted(n for n in names if n),
                  sorted(["M\ta.txt", "D\tb.txt", "M\tc.sh", "A\tnew file.txt", "A\tsub/e.txt"]), "what changed")
        numstat = [ln.split("\t") for ln in gitb("--git-dir", repo.bare, "diff", "--numstat", base, commit).decode().splitlines()]
        expect_eq(r["stat"], {"files": 5, "insertions": sum(int(n[0]) for n in numstat),
                              "deletions": sum(int(n[1]) for n in numstat)}, "the answer's stat")
        expect("5 files changed" in r["diffstat"] and "a.txt" in r["diffstat"], "the diffstat: %r" % r["diffstat"])
        ref = r["diff"]
        expect_eq((ref["media_type"], ref["name"]), ("text/x-diff", "task-%s.diff" % t["id"]), "the diff's reference")
        diff = read_artifact(c, ref)
        expect_eq((ref["size"], ref["sha256"]), (len(diff), hashlib.sha256(diff).hexdigest()), "the diff's size and hash")
        expect(diff.startswith(bytes(ref["preview"])), "the preview is not the diff's start")
        # The diff is the change: applied to the base it makes the commit's tree.
        applied = scratch()
        gitb("clone", "-q", "--no-checkout", repo.bare, applied)
        gitb("-C", applied, "checkout", "-q", base)
        with open(os.path.join(applied, "task.diff"), "wb") as f:
            f.write(diff)
        gitb("-C", applied, "apply", "--index", "task.diff")
        expect_eq(gitb("-C", applied, "write-tree").strip(), gitb("--git-dir", repo.bare, "rev-parse", commit + "^{tree}").strip(),
                  "the tree of the diff applied to the base")
        # The workspace itself is as it was: its HEAD, index and files.
        expect_eq(gitb("-C", ws, "rev-parse", "HEAD").decode().strip(), base, "the workspace's HEAD")
        expect_eq(gitb("-C", ws, "status", "--porcelain"), status_before, "the workspace's status")
        rec = show(c, t["id"])
        expect_eq(rec["delivery"] and {k: rec["delivery"][k] for k in ("branch", "commit", "base", "pushed", "diff")},
                  {"branch": "task/one", "commit": commit, "base": base, "pushed": True, "diff": ref["id"]},
                  "the record's delivery")
        ev = event_of(sb, t["id"], "task.delivered")
        diff_of = ev["diff"]["id"] if isinstance(ev["diff"], dict) else ev["diff"]
        expect_eq((ev["branch"], ev["commit"], ev["pushed"], diff_of), ("task/one", commit, True, ref["id"]),
                  "task.delivered")
        expect(any(a and base64.b64decode(a[6:]) == ("%s:%s" % (user, secret)).encode() for n, a in gs.auths
                   if n == "project" and a.startswith("Basic ")), "git never sent the credential")
        e = task_error(c, "task.deliver", dict(args, commit_message="again"), timeout=90)
        expect_code(e, "conflict", "a delivery to a branch that exists")
        for where, root in (("the state directory", sb.state_dir), ("the workspace", ws), ("the home", dirs.home)):
            for path, data in files_under(root):
                for part in (secret, user):
                    expect(part.encode() not in data, "%s: %s holds the credential" % (where, path))
        texts = sb.log() + repr(sb.events()) + repr(c.call("task.list")) + repr(r)
        for part in (secret, user):
            expect(part not in texts, "the log, an event, a record or the answer holds the credential")
            expect(part.encode() not in sb.journal_bytes(), "the journal holds the credential")


def refs_of(ws):
    return gitb("-C", ws, "for-each-ref", "--format=%(refname) %(objectname)").decode()



@case("request.cancel of a task.deliver pushing to a slow git server: answered cancelled while git runs; the "
      "delivery goes on, its branch on the server, task.delivered journaled and the task's record told", 150)
def t_deliver_cancel():
    gs = GitServer(delay=0.5)
    repo = gs.repo("project")
    pushable(repo)
    repo.commit("main", BEFORE)
    dirs = AgentDirs()
    with Sandbox(extra=git_sections(gs, dirs)) as sb:
        c = sb.ws(timeout=60)
        c.call("workspace.prepare", {"runtime": "fake", "repo": gs.url("project")}, timeout=90)
        t = run_task(c, "fake", steps(write("a.txt", "one, changed\n")))
        expect_ended(wait_final(c, t["id"]), "succeeded", "the task")
        asked = len(gs.auths)
        did = c.send_request("task.deliver", {"id": t["id"], "branch": "task/cancelled", "commit_message": "m",
                                              "push": True, "repo": gs.url("project")})
        # Each answer of the server waits 0.5 s: the push has begun, and
        # has a round or more to go.
        wait_for(lambda: len(gs.auths) > asked, 60, "the push's first request")
        expect_eq(c.call("request.cancel", {"id": did}), {"cancelled": True}, "request.cancel's answer")
        r = c.response(did)
        expect_eq((r["ok"], r["error"]["code"]), (False, "cancelled"), "the cancelled delivery's answer")
        ev = sb.wait_event(lambda e: e["kind"] == "task.delivered" and e["data"].get("id") == t["id"], 60)
        expect(ev is not None, "task.delivered after the cancel")
        commit = ev["data"]["commit"]
        expect_eq(ev["data"]["pushed"], True, "task.delivered's pushed")
        expect_eq(gitb("--git-dir", repo.bare, "rev-parse", "refs/heads/task/cancelled").decode().strip(), commit,
                  "the branch on the server")
        rec = show(c, t["id"])
        expect_eq((rec["delivery"]["branch"], rec["delivery"]["commit"]), ("task/cancelled", commit),
                  "the record's delivery")

@case("task.deliver of a failed task is refused unless forced; of a busy runtime's, refused; an empty change, an "
      "existing branch, bad branches, messages, authors and push arguments refused, nothing made")
def t_deliver_refused():
    dirs, clean = AgentDirs(), AgentDirs()
    base = agent_repo(dirs, BEFORE)
    agent_repo(clean, {"x.txt": "x\n"})
    go = os.path.join(scratch(0o755), "go")
    with Sandbox(extra=fake_section("fake", dirs) + fake_section("clean", clean)) as sb:
        c = sb.unix(timeout=60)
        f = run_task(c, "fake", steps(write("a.txt", "changed by a failing task\n"), exit_with(1)))
        expect_ended(wait_final(c, f["id"]), "failed", "the failing task")
        args = {"id": f["id"], "branch": "failed-one", "commit_message": "the failed task's change"}
        e = task_error(c, "task.deliver", args)
        expect_code(e, "conflict", "a delivery of a failed task")
        expect("failed" in e["message"], "the refusal does not say the task failed: %r" % e["message"])
        expect_eq(refs_of(dirs.workspace).count("failed-one"), 0, "a refused delivery made a branch")
        w = run_task(c, "fake", steps(wait_file(go)))
        expect_code(task_error(c, "task.deliver", dict(args, force=True)), "conflict",
                    "a forced delivery while the runtime runs a task")
        c.call("task.cancel", {"id": w["id"]})
        wait_final(c, w["id"])
        r = c.call("task.deliver", dict(args, force=True), timeout=60)
        expect_eq((r["base"], r["pushed"]), (base, False), "the forced delivery")
        files = tree_files(os.path.join(dirs.workspace, ".git"), r["commit"])
        expect_eq(files.get("a.txt"), ("100644", b"changed by a failing task\n"), "a.txt on the forced delivery's branch")
        parents, author, committer, message, _ = commit_meta(os.path.join(dirs.workspace, ".git"), r["commit"])
        expect_eq((parents, author, committer), ([base], "berth <berth@localhost>", "berth <berth@localhost>"),
                  "the default author and committer")
        expect_code(task_error(c, "task.deliver", dict(args, force=True)), "conflict", "the same branch again")
        n = run_task(c, "clean", steps(line("no change")))
        expect_ended(wait_final(c, n["id"]), "succeeded", "a task that changed nothing")
        e = task_error(c, "task.deliver", {"id": n["id"], "branch": "empty", "commit_message": "m"})
        expect(e["code"] == "conflict" and e["message"].startswith("nothing to deliver"),
               "a delivery of no change: %r" % e)
        before = refs_of(dirs.workspace)
        delivered = len([k for k, _ in task_events(sb) if k == "task.delivered"])
        ok = {"id": f["id"], "branch": "fine", "commit_message": "m", "force": True}
        bad = [({"branch": b}, "branch") for b in ("a..b", "-x", "x y", "a.lock", "@{1}", "", "a~b", "a^b", "a:b",
                                                   "a?b", "a*b", "a[b", ".hidden", "a/.b", "ref/", "a//b", "HEAD",
                                                   "b" * 256, "a\nb", 7)]
        bad += [({"commit_message": ""}, "commit_message"), ({"commit_message": "m" * 65537}, "commit_message"),
                ({"author": {"name": "a<b", "email": "a@b"}}, "author"),
                ({"author": {"name": "a", "email": "a\n@b"}}, "author"),
                ({"author": {"name": "n" * 257, "email": "a@b"}}, "author"),
                ({"author": {"name": "", "email": "a@b"}}, "author"),
                ({"author": "berth"}, "author"),
                ({"push": True}, "repo"),
                ({"repo": "https://127.0.0.1/x.git"}, "repo"),
                ({"credential": {"password": "p"}}, "credential"),
                ({"push": True, "repo": "http://127.0.0.1/x.git"}, "repo"),
                ({"push": True, "repo": "https://u:p@127.0.0.1/x.git"}, "repo")]
        for change, word in bad:
            a = dict(ok, **change)
            e = task_error(c, "task.deliver", a)
            expect_code(e, "bad_args", "task.deliver with %s" % short(change, 100))
            expect(word in e["message"], "the error of %s does not name %s: %r" % (short(change, 100), word, e["message"]))
        for drop in ("branch", "commit_message", "id"):
            expect_code(task_error(c, "task.deliver", {k: v for k, v in ok.items() if k != drop}), "bad_args",
                        "task.deliver without %s" % drop)
        expect_code(task_error(c, "task.deliver", dict(ok, id="0123456789abcdef")), "not_found",
                    "a delivery of an unknown task")
        expect_eq(refs_of(dirs.workspace), before, "the workspace's refs after the refusals")
        expect_eq(len([k for k, _ in task_events(sb) if k == "task.delivered"]), delivered, "task.delivered events")


HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-push", "reference-transaction",
         "post-index-change", "pre-auto-gc", "post-checkout", "post-rewrite", "push-to-checkout", "pre-receive")


@case("hooks, filters and .git/config a runtime plants during its task change nothing about what is delivered "
      "or where: no hook runs, the real server gets exactly the workspace's files, nothing else is asked", 180)
def t_deliver_planted():
    gs = GitServer()
    user, secret = "alice", "pw-" + os.urandom(12).hex()
    repo = gs.repo("project", private=(user, secret))
    pushable(repo)
    base = repo.commit("main", BEFORE)
    rogue = GitServer(cert_of=gs)
    pushable(rogue.repo("project", private=(user, "x")))
    proxy = TunnelProxy(rogue.port)
    dirs = AgentDirs()
    url = gs.url("project")
    marks = os.path.join(dirs.home, "MARKS")
    hooks = os.path.join(dirs.home, "hooks")
    decoy = os.path.join(dirs.home, "decoy")
    hook = "#!/bin/sh\necho %s ran >> " + marks + "\ncat >/dev/null 2>&1 || true\nexit 0\n"
    plant = ["mkdir -p %s %s && echo decoy > %s/decoy.txt" % (hooks, decoy, decoy)]
    for h in HOOKS + ("fsmonitor", "gpg", "clean", "diff", "credential"):
        for d in (".git/hooks", hooks):
            plant.append("printf '%s' > %s/%s && chmod +x %s/%s" % (hook.replace("%s", h, 1).replace("\n", "\\n"),
                                                                   d, h, d, h))
    config = [("core.hooksPath", hooks), ("core.fsmonitor", hooks + "/fsmonitor"),
              ("url.%s.insteadOf" % rogue.url("project"), url), ("url.%s.pushInsteadOf" % rogue.url("project"), url),
              ("remote.origin.pushurl", rogue.url("project")), ("remote.origin.url", rogue.url("project")),
              ("user.name", "Mallory"), ("user.email", "mallory@example.invalid"), ("commit.gpgSign", "true"),
              ("gpg.program", hooks + "/gpg"), ("core.worktree", decoy), ("filter.evil.clean", hooks + "/clean"),
              ("filter.evil.smudge", hooks + "/clean"), ("filter.evil.required", "true"), ("core.autocrlf", "true"),
              ("diff.external", hooks + "/diff"), ("http.sslVerify", "false"), ("http.proxy", proxy.url),
              ("http.%s.proxy" % url, proxy.url), ("credential.helper", hooks + "/credential"),
              ("core.excludesFile", os.path.join(dirs.home, "excludes"))]
    plant += ["git config %s '%s'" % kv for kv in config]
    plant += ["printf '* filter=evil\\n' > .git/info/attributes", "printf 'secret.txt\\n' >> .git/info/exclude",
              "printf 'crlf.txt\\n' > %s/excludes" % dirs.home]
    with Sandbox(extra=git_sections(gs, dirs)) as sb:
        c = sb.unix(timeout=60)
        c.call("workspace.prepare", {"runtime": "fake", "repo": url, "credential": {"username": user, "password": secret}},
               timeout=90)
        task = steps(write("a.txt", "the agent's a\n"), write("secret.txt", "kept out by info/exclude\n"),
                     write("crlf.txt", "one\r\ntwo\r\n"), *[sh(cmd) for cmd in plant])
        t = run_task(c, "fake", task)
        rec = wait_final(c, t["id"], 60)
        if rec["state"] != "succeeded":
            note("the planting task's stderr: %r" % attach_read(c, t["id"], "stderr")[1][-2000:])
        expect_ended(rec, "succeeded", "the task that planted hooks and config")
        # The attack is real: the user's own git commit in a copy runs
        # what was planted.
        copy = os.path.join(dirs.home, "copy")
        subprocess.run(["runuser", "-u", dirs.user, "--", "cp", "-a", dirs.workspace, copy], check=True, timeout=30)
        subprocess.run(["runuser", "-u", dirs.user, "--", "env", "-i", "PATH=/usr/bin:/bin", "HOME=" + dirs.home,
                        "GIT_CONFIG_NOSYSTEM=1", GIT, "-C", copy, "commit", "--allow-empty", "-qm", "x"],
                       capture_output=True, timeout=60)
        with open(marks) as f:
            ran = f.read()
        note("a plain git commit of the user's ran: %r" % ran)
        expect("pre-commit ran" in ran or "fsmonitor ran" in ran, "nothing planted ran in the user's own commit: "
               "the attack is not real")
        # And the user's own push of the copy goes elsewhere.
        asked = len(rogue.auths) + len(proxy.connects)
        helper = "!f() { echo username=%s; echo password=decoy; }; f" % user
        subprocess.run(["runuser", "-u", dirs.user, "--", "env", "-i", "PATH=/usr/bin:/bin", "HOME=" + dirs.home,
                        "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", GIT, "-C", copy, "-c", "credential.helper=",
                        "-c", "credential.helper=" + helper, "push", url, "HEAD:refs/heads/probe"],
                       capture_output=True, timeout=60)
        note("the user's own push: the rogue server saw %d requests, the proxy %d"
             % (len(rogue.auths), len(proxy.connects)))
        expect(len(rogue.auths) + len(proxy.connects) > asked, "the user's own push of the copy went to the real "
               "server: the attack is not real")
        os.unlink(marks)
        seen_rogue, connects = len(rogue.auths), len(proxy.connects)
        r = c.call("task.deliver", {"id": t["id"], "branch": "task/planted", "commit_message": "planted", "push": True,
                                    "repo": url, "credential": {"username": user, "password": secret}}, timeout=90)
        note("task.deliver: %s" % short(r, 800))
        expect(not os.path.exists(marks), "something planted ran during the delivery: %r"
               % (open(marks).read() if os.path.exists(marks) else ""))
        expect_eq((len(rogue.auths), len(proxy.connects)), (seen_rogue, connects), "requests to the rogue server or proxy")
        commit = gitb("--git-dir", repo.bare, "rev-parse", "refs/heads/task/planted").decode().strip()
        expect_eq((commit, r["base"], r["pushed"]), (r["commit"], base, True), "the branch on the real server")
        got = tree_files(repo.bare, commit)
        want = disk_files(dirs.workspace, IGNORED)
        expect_eq(sorted(got), sorted(want), "the paths of the delivered tree against the workspace's files")
        expect_eq(got, want, "the delivered tree against the workspace's files")
        expect_eq(got["crlf.txt"][1], b"one\r\ntwo\r\n", "crlf.txt as the workspace has it")
        expect("decoy.txt" not in got, "the decoy worktree was delivered")
        parents, author, committer, _, raw = commit_meta(repo.bare, commit)
        expect_eq((parents, author, committer), ([base], "berth <berth@localhost>", "berth <berth@localhost>"),
                  "the commit's parent, author and committer")
        expect("gpgsig" not in raw, "the commit is signed: %r" % raw)


run()
