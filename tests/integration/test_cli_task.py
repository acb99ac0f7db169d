"""berth task against a real sandbox, with runtimes whose command is a
small script run as the agent user: task run prints the id and state
(queued with its place), show the record's fields, list a line per task,
--json the ops' results; task attach writes a stream exactly (the agent's
stdout, its stderr, a check's output, from an offset), exits 0 if the
task succeeded and 1 otherwise with the end on stderr, and rides out a
gateway killed while it follows the stream or waits for the checks, and
berthd killed and started again; cancel says who cancelled; a busy
runtime refuses or queues; usage errors exit 2, refused requests 1 with
the error's code."""

import hashlib
import json
import os
import pwd
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, case, expect, expect_eq, expect_in, note, run, scratch, shfile, wait_for  # noqa: E402
from harness.cli import TRANSPORTS, berth, berth_running, read_all, text_ok  # noqa: E402

USER = "agent"
ID = re.compile(r"[0-9a-f]{16}")


def agent_dir():
    """A directory of the case's own, owned by the runtime's user."""
    d = scratch(0o755)
    pw = pwd.getpwnam(USER)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


def section(name, prog, ws, *lines):
    return "[runtime %s]\ncommand = %s\nuser = %s\nworkspace = %s\nenv = HOME=%s\n%s\n" % (
        name, prog, USER, ws, agent_dir(), "\n".join(lines))


def sha(data):
    return hashlib.sha256(data).hexdigest()


def task_run(sb, transport, *args, **kw):
    """berth task run ARGS must succeed: (id, the rest of its line)."""
    out = text_ok(sb, transport, "task", "run", *args, **kw).strip()
    tid, _, rest = out.partition(" ")
    expect(ID.fullmatch(tid), "task run printed %r" % out)
    return tid, rest


def record(sb, tid):
    return sb.unix().call("task.show", {"id": tid})


def wait_state(sb, tid, states, timeout=30):
    return wait_for(lambda: record(sb, tid)["state"] in states and record(sb, tid), timeout,
                    "task %s %s" % (tid, "/".join(states)))


def attach(sb, transport, tid, *args, **kw):
    """berth task attach ID ARGS: (status, stdout bytes, stderr str)."""
    rc, out, err = berth(sb, transport, "task", "attach", tid, *args, **kw)
    return rc, out, err.decode(errors="replace") if isinstance(err, bytes) else err


def attach_while(sb, transport, tid, on_out, timeout):
    """berth task attach ID to its end, on_out(stdout so far) called as
    it writes: (status, stdout, stderr) bytes."""
    with berth_running(sb, transport, "task", "attach", tid) as p:
        out, err = read_all(p, on_out, timeout=timeout)
        return p.wait(10), out, err


def fields(out):
    """A record's `key value` lines as a dict, up to the prompt's block."""
    got = {}
    for line in out.splitlines():
        if line == "prompt":
            break
        key, _, value = line.partition(" ")
        got[key] = value.strip()
    return got


ECHO = ('printf "prompt=%s\\n" "$1"; printf "FOO=%s\\n" "$FOO"; echo to-stderr >&2; '
        'printf "pwd=%s\\n" "$(pwd)"\n')


@case("task run prints the id and state; attach writes the agent's stdout, its stderr and each check's output "
      "exactly and exits 0 with the end on stderr; show and list are readable, --json their ops' results",
      transports=TRANSPORTS)
def run_attach_show_list(transport):
    ws = agent_dir()
    with Sandbox(extra=section("echo", shfile(ECHO), ws, "task = {prompt}")) as sb:
        tid, state = task_run(sb, transport, "echo", "--timeout", "60", "--env", "FOO=bar",
                              "--check", "sh", "-c", "echo check-out; echo check-err >&2",
                              "--check", "true", "--", "say hello")
        expect_in(state, ("running", "checking", "succeeded"), "the state run printed")
        rc, out, err = attach(sb, transport, tid)
        expect_eq(rc, 0, "attach's exit status (stderr %r)" % err)
        want = b"prompt=say hello\nFOO=bar\npwd=%s\n" % ws.encode()
        expect_eq(out, want, "the agent's stdout")
        expect_eq(err, "berth: task %s succeeded\n" % tid, "attach's stderr")
        for stream, want_out in (("stderr", b"to-stderr\n"), ("check/0", b"check-out\ncheck-err\n"),
                                 ("check/1", b"")):
            rc, out, err = attach(sb, transport, tid, "--stream", stream)
            expect_eq((rc, out), (0, want_out), "attach --stream %s (stderr %r)" % (stream, err))

        shown = text_ok(sb, transport, "task", "show", tid)
        f = fields(shown)
        expect_eq((f["id"], f["runtime"], f["state"]), (tid, "echo", "succeeded"), "show's fields")
        expect_eq(f["timeout"], "60 s", "show's timeout")
        expect_eq(f["env"], "FOO", "show's env: the names only")
        expect_eq(f["agent"], "exit 0, %d bytes, 10 on stderr" % len(want), "show's agent")
        expect_eq(f["check/0"], "exit 0, 20 bytes: sh -c echo check-out; echo check-err >&2", "show's check/0")
        expect_eq(f["check/1"], "exit 0, 0 bytes: true", "show's check/1")
        expect(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", f["created"]), "show's created: %r" % f["created"])
        expect(shown.endswith("prompt\n  say hello\n"), "show's prompt: %r" % shown)
        got = json.loads(text_ok(sb, transport, "--json", "task", "show", tid))
        expect_eq(got, record(sb, tid), "show --json is task.show's result")
        expect_eq(got["env"], ["FOO"], "the record's env")

        second, _ = task_run(sb, transport, "echo", "--", "line one\nline two that is long enough to be cut short")
        wait_state(sb, second, ("succeeded",))
        rows = text_ok(sb, transport, "task", "list").splitlines()
        expect_eq(rows[0].split(), ["ID", "RUNTIME", "STATE", "CREATED", "PROMPT"], "list's header")
        expect_eq([r.split()[:3] for r in rows[1:]], [[second, "echo", "succeeded"], [tid, "echo", "succeeded"]],
                  "list's rows, newest first")
        expect(rows[1].endswith("  line one..."), "a prompt cut to its first line: %r" % rows[1])
        expect(rows[2].endswith("  say hello"), "a short prompt whole: %r" % rows[2])
        got = json.loads(text_ok(sb, transport, "--json", "task", "list"))
        expect_eq(got, sb.unix().call("task.list"), "list --json is task.list's result")
        only = text_ok(sb, transport, "task", "list", "--state", "failed")
        expect_eq(only, "no tasks\n", "list --state failed")


@case("attach exits 1 for a task that did not succeed and says how it ended: the agent's status, a failing check",
      transports=TRANSPORTS)
def attach_failed(transport):
    prog = shfile('echo out; exit "${1#exit }"\n')
    with Sandbox(extra=section("ex", prog, agent_dir(), "task = {prompt}")) as sb:
        tid, _ = task_run(sb, transport, "ex", "--", "exit 3")
        rc, out, err = attach(sb, transport, tid)
        expect_eq((rc, out), (1, b"out\n"), "attach to an agent that exited 3")
        expect_eq(err, "berth: task %s failed: the agent exited with status 3\n" % tid, "its end")
        tid, _ = task_run(sb, transport, "ex", "--check", "true", "--check", "sh", "-c", "echo no; exit 1",
                          "--", "exit 0")
        rc, out, err = attach(sb, transport, tid, "--stream", "check/1")
        expect_eq((rc, out), (1, b"no\n"), "attach to the failing check")
        expect_in("berth: task %s failed: check 1 (sh) exited with status 1" % tid, err, "its end")
        f = fields(text_ok(sb, transport, "task", "show", tid))
        expect_eq(f["state"], "failed: check 1 (sh) exited with status 1", "show's state")


@case("attach --from OFFSET writes the stream from there; at the end nothing; past it bad_args")
def attach_from():
    prog = shfile("printf 0123456789\n")
    with Sandbox(extra=section("digits", prog, agent_dir(), "task =")) as sb:
        tid, _ = task_run(sb, "unix", "digits", "--", "x")
        wait_state(sb, tid, ("succeeded",))
        for start, want in ((0, b"0123456789"), (4, b"456789"), (10, b"")):
            rc, out, err = attach(sb, "unix", tid, "--from", str(start))
            expect_eq((rc, out), (0, want), "attach --from %d (stderr %r)" % (start, err))
        rc, out, err = attach(sb, "unix", tid, "--from", "11")
        expect_eq((rc, out), (1, b""), "attach --from past the end")
        expect_in("bad_args", err, "its error")


@case("a prompt from stdin (PROMPT -), larger than one argument may be, reaches an agent that reads stdin whole")
def prompt_stdin():
    prompt = (b"".join(b"line %06d of the prompt\n" % i for i in range(9000)))[:200 << 10]
    with Sandbox(extra=section("cat", shfile("exec cat\n"), agent_dir(), "task =")) as sb:
        tid, _ = task_run(sb, "unix", "cat", "--", "-", input=prompt)
        rc, out, err = attach(sb, "unix", tid)
        expect_eq(rc, 0, "attach's exit status (stderr %r)" % err)
        expect_eq((len(out), sha(out)), (len(prompt), sha(prompt)), "what the agent read")


# About 6 MiB over 3 s or more, tee'd to a file of the workspace.
NOISY = ('i=0; while [ $i -lt 200 ]; do head -c 32768 /dev/urandom; sleep 0.015; i=$((i+1)); done '
         '| tee out\n')


@case("attach over the WebSocket rides out a gateway killed mid-stream: stdout is the stream, whole and exact",
      timeout=180)
def attach_gateway_killed():
    ws = agent_dir()
    with Sandbox(extra=section("noisy", shfile(NOISY), ws, "task =")) as sb:
        tid, _ = task_run(sb, "ws", "noisy", "--", "x")
        killed = []

        def on_out(out):
            if not killed and len(out) >= 1 << 20:
                old = sb.gateway_pid()
                os.kill(old, signal.SIGKILL)
                killed.extend((len(out), old))

        rc, out, err = attach_while(sb, "ws", tid, on_out, timeout=120)
        note("berth said %r" % err)
        expect(killed, "the gateway was never killed")
        expect(sb.gateway_pid(timeout=10, other_than=killed[1]) != killed[1], "no new gateway")
        expect_eq(rc, 0, "attach's exit status")
        with open(os.path.join(ws, "out"), "rb") as f:
            want = f.read()
        expect_eq(len(want), 200 * 32768, "what the agent wrote")
        expect(killed[0] < len(out), "the kill came before the end (at %d of %d bytes)" % (killed[0], len(out)))
        expect_eq((len(out), sha(out)), (len(want), sha(want)), "stdout against the agent's file")
        expect_in(b"berth: task %s succeeded\n" % tid.encode(), err, "the end")


@case("attach over the WebSocket rides out a gateway killed after the stream's end, while the checks run: "
      "it exits by the task's end", timeout=120)
def attach_gateway_killed_checking():
    with Sandbox(extra=section("quick", shfile("echo hi\n"), agent_dir(), "task =")) as sb:
        tid, _ = task_run(sb, "ws", "quick", "--check", "sleep", "4", "--check", "false", "--", "x")
        killed = []

        def on_out(out):
            if not killed and out == b"hi\n":
                wait_state(sb, tid, ("checking",), timeout=3)
                killed.append(sb.gateway_pid())
                os.kill(killed[0], signal.SIGKILL)

        rc, out, err = attach_while(sb, "ws", tid, on_out, timeout=60)
        note("berth said %r" % err)
        expect(killed, "the gateway was never killed")
        expect_eq((rc, out), (1, b"hi\n"), "attach's exit status and stdout")
        expect_in(b"berth: task %s failed: check 1 (false) exited with status 1\n" % tid.encode(), err, "the end")


@case("attach rides out berthd killed and started again: the task it follows ends interrupted, its output kept; "
      "attach exits 1 and says so", timeout=120)
def attach_berthd_restart():
    prog = shfile("echo started; exec sleep 60\n")
    with Sandbox(extra=section("slow", prog, agent_dir(), "task =")) as sb:
        tid, _ = task_run(sb, "unix", "slow", "--", "x")
        restarted = []

        def on_out(out):
            if not restarted and out == b"started\n":
                sb.kill()
                sb.start(wait="socket")
                restarted.append(True)

        rc, out, err = attach_while(sb, "unix", tid, on_out, timeout=60)
        note("berth said %r" % err)
        expect(restarted, "berthd was never restarted")
        expect_eq((rc, out), (1, b"started\n"), "attach's exit status and stdout")
        expect(err.endswith(b"berth: task %s interrupted: berthd restarted while it ran\n" % tid.encode()),
               "attach's end: %r" % err)
        expect_eq(fields(text_ok(sb, "unix", "task", "show", tid))["state"],
                  "interrupted: berthd restarted while it ran", "show's state")


@case("cancel ends a running task, and says who did; attach exits 1; a busy runtime refuses another run; "
      "a queued one waits in its place", transports=TRANSPORTS)
def cancel_busy_queue(transport):
    prog = shfile("echo started; exec sleep 60\n")
    conf = (section("slow", prog, agent_dir(), "task =")
            + section("queued", prog, agent_dir(), "task =", "busy = queue"))
    who = {"unix": "root on the Unix socket", "ws": "the backend"}[transport]
    with Sandbox(extra=conf) as sb:
        tid, state = task_run(sb, transport, "slow", "--", "x")
        expect_eq(state, "running", "the state run printed")
        rc, _, err = berth(sb, transport, "task", "run", "slow", "--", "y", text=True)
        expect_eq(rc, 1, "a second run of a busy runtime")
        expect_in("berth: conflict: runtime slow is busy with task %s" % tid, err, "its error")
        got = []

        def on_out(out):
            if not got and out == b"started\n":
                got.append(text_ok(sb, transport, "task", "cancel", tid))

        rc, out, err = attach_while(sb, transport, tid, on_out, timeout=30)
        expect_eq(got, [""], "cancel's output")
        expect_eq((rc, out), (1, b"started\n"), "attach's exit status and stdout")
        expect_eq(err, b"berth: task %s cancelled by %s\n" % (tid.encode(), who.encode()), "attach's stderr")
        expect_eq(fields(text_ok(sb, transport, "task", "show", tid))["state"], "cancelled by %s" % who,
                  "show's state")
        rc, _, err = berth(sb, transport, "task", "cancel", tid, text=True)
        expect_eq(rc, 1, "cancelling a cancelled task")
        expect_in("conflict", err, "its error")

        first, state = task_run(sb, transport, "queued", "--", "a")
        expect_eq(state, "running", "the first of a queue")
        second, state = task_run(sb, transport, "queued", "--", "b")
        expect_eq(state, "queued (position 1)", "the second")
        f = fields(text_ok(sb, transport, "task", "show", second))
        expect_eq(f["state"], "queued (position 1)", "show's state of the queued one")
        text_ok(sb, transport, "task", "cancel", first)
        wait_state(sb, second, ("running",))
        text_ok(sb, transport, "task", "cancel", second)
        wait_state(sb, second, ("cancelled",))


@case("usage errors exit 2 and say what is wrong; refused requests exit 1 with the error's code")
def usage_and_refusals():
    with Sandbox(extra=section("echo", shfile(ECHO), agent_dir(), "task = {prompt}")
                 + section("tui", shfile("exit 0\n"), agent_dir(), "tui =")) as sb:
        some = "0123456789abcdef"
        for args, why in (
                (["task"], "task wants run, show, list, attach, cancel or deliver"),
                (["task", "run"], "task run wants a RUNTIME and -- PROMPT"),
                (["task", "run", "echo"], "task run wants the PROMPT after --"),
                (["task", "run", "echo", "--", ""], "the PROMPT is empty"),
                (["task", "run", "echo", "--", "a", "b"], "task run takes one PROMPT after -- (quote it): b"),
                (["task", "run", "echo", "x", "--", "a"], "task run takes one RUNTIME"),
                (["task", "run", "echo", "--check", "--", "a"], "--check wants a command"),
                (["task", "run", "echo", "--timeout", "0", "--", "a"], "--timeout wants whole seconds"),
                (["task", "run", "echo", "--env", "NOEQUALS", "--", "a"], "--env wants NAME=VALUE: NOEQUALS"),
                (["task", "show"], "task show wants an ID"),
                (["task", "show", "xyz"], "ID is what task run printed, 16 hex digits: 'xyz'"),
                (["task", "cancel", some, some], "task cancel takes one ID"),
                (["task", "list", "x"], "task list takes no words: x"),
                (["task", "attach", some, "--stream", "check/x"], "--stream wants agent, stderr or check/N"),
                (["task", "attach", some, "--from", "-1"], "--from wants a byte offset: -1"),
                (["task", "deliver", some, "--message", "m"], "task deliver wants --branch B"),
                (["task", "deliver", some, "--branch", "b"], "task deliver wants --message M"),
                (["task", "deliver", "--branch", "b", "--message", "m"], "task deliver wants an ID"),
                (["task", "deliver", some, "--branch", "b", "--message", "m", "--author-name", "n"],
                 "--author-name and --author-email go together"),
                (["task", "deliver", some, "--branch", "b", "--message", "m", "--password-stdin"],
                 "--password-stdin goes with --push"),
                (["task", "deliver", some, "--branch", "b", "--message", "m", "--push", "https://h/r.git",
                  "--username", "u"], "--username goes with --password-stdin")):
            rc, out, err = berth(sb, "unix", *args, text=True)
            expect_eq((rc, out), (2, ""), "%s: exit status and stdout" % args)
            expect_in("berth: " + why, err, "%s: the message" % args)
        rc, _, err = berth(sb, "unix", "task", "deliver", some, "--branch", "b", "--message", "m", "--push",
                           "https://h/r.git", "--password-stdin", input=b"", text=True)
        expect_eq(rc, 2, "--password-stdin with an empty stdin")
        expect_in("--password-stdin: stdin is empty", err, "its message")
        tid, _ = task_run(sb, "unix", "echo", "--", "x")
        wait_state(sb, tid, ("succeeded",))
        for args, code in ((["task", "run", "nosuch", "--", "x"], "not_found"),
                           (["task", "run", "tui", "--", "x"], "bad_args: runtime tui takes no tasks"),
                           (["task", "show", some], "not_found"),
                           (["task", "attach", some], "not_found"),
                           (["task", "attach", tid, "--stream", "check/0"], "not_found"),
                           (["task", "cancel", tid], "conflict")):
            rc, out, err = berth(sb, "unix", *args, text=True)
            expect_eq((rc, out), (1, ""), "%s: exit status and stdout" % args)
            expect_in("berth: " + code, err, "%s: the error" % args)


run()
