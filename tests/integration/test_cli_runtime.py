"""berth runtime list, status, start and stop against the real runtimes
(OpenCode and Pi, offline): the table shows each runtime with the
version its program prints and what runs now, a start prints the status
and, for a terminal UI, the session to attach to, which is a real berth
PTY session; stop ends it; --json gives the ops' results; usage errors
exit 2 and a refused request 1 with the error's code."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, berth, case, expect, expect_eq, expect_in, run, text_ok  # noqa: E402
from harness.limits import case_user, limits_config, user_dir  # noqa: E402
from harness.runtimes import OPENCODE, PI, AgentDirs, need_program, runtime_sections  # noqa: E402


def printed_version(program):
    """What program --version prints, run as the agent user with no
    network (Pi prints it on stderr)."""
    r = subprocess.run(["unshare", "-n", "runuser", "-u", "agent", "--", program, "--version"],
                       capture_output=True, timeout=60, cwd="/")
    return (r.stdout.decode().strip() or r.stderr.decode().strip()).splitlines()[0]


def rows(table):
    """A table's rows as lists of words, the header first."""
    return [line.split() for line in table.splitlines() if line.strip()]


def fields(out):
    """key value lines as a dict of strings."""
    return dict(line.split(None, 1) for line in out.splitlines() if " " in line.strip() and not line.startswith(" "))


@case("berth runtime list shows both runtimes with the versions their programs print; start, status and "
      "stop run Pi's TUI on a real PTY session", 180)
def list_start_stop():
    need_program(PI, "Pi")
    need_program(OPENCODE, "OpenCode")
    dirs = AgentDirs()
    with Sandbox(extra=runtime_sections(dirs), offline=True) as sb:
        t = rows(text_ok(sb, "unix", "runtime", "list", timeout=60))
        expect_eq(t[0], ["NAME", "VERSION", "MODES", "RUNNING", "STATE"], "the header")
        by_name = {r[0]: r for r in t[1:]}
        expect_eq(by_name["pi"], ["pi", printed_version(PI), "tui,rpc", "-", "available"], "pi's row")
        expect_eq(by_name["opencode"], ["opencode", printed_version(OPENCODE), "tui,server", "-", "available"],
                  "opencode's row")

        out = text_ok(sb, "unix", "runtime", "start", "pi", "tui")
        st = fields(out)
        expect_eq((st["name"], st["mode"], st["state"]), ("pi", "tui", "ready"), "the start's status")
        expect("proc" not in st and "port" not in st and "password" not in st, "nil fields shown: %r" % out)
        expect_in("watch it with: berth pty attach %s" % st["pty"], out, "the hint")
        sessions = sb.unix().call("pty.list")["sessions"]
        expect_in(st["pty"], [s["id"] for s in sessions], "the PTY sessions")

        t = rows(text_ok(sb, "unix", "runtime", "list"))
        expect_eq({r[0]: r[3:6] for r in t[1:]}["pi"], ["tui", "ready", "pid"], "pi's RUNNING")
        expect_eq(fields(text_ok(sb, "unix", "runtime", "status", "pi"))["pid"], st["pid"], "status's pid")

        expect_eq(text_ok(sb, "unix", "runtime", "stop", "pi"), "", "stop's output")
        expect_eq(fields(text_ok(sb, "unix", "runtime", "status", "pi"))["state"], "exited", "the state after stop")
        rc, _, err = berth(sb, "unix", "runtime", "stop", "pi", text=True)
        expect_eq(rc, 1, "a second stop's exit status")
        expect_in("conflict", err, "a second stop's error")


@case("berth runtime --json prints the ops' results; usage errors exit 2, a refused request 1", 120)
def json_and_usage():
    need_program(PI, "Pi")
    dirs = AgentDirs()
    with Sandbox(extra=runtime_sections(dirs), offline=True) as sb:
        listed = json.loads(text_ok(sb, "unix", "--json", "runtime", "list", timeout=60))
        expect_eq(listed, sb.unix().call("runtime.list", timeout=60), "--json list is runtime.list's result")
        st = json.loads(text_ok(sb, "unix", "--json", "runtime", "status", "opencode"))
        expect_eq(st, {"name": "opencode", "state": "stopped"}, "a runtime never started")
        for args, why in ((["runtime"], "runtime wants list, status, start, stop, pause or resume"),
                          (["runtime", "start", "pi"], "runtime start wants a NAME and a MODE"),
                          (["runtime", "status"], "runtime status wants a NAME"),
                          (["runtime", "list", "pi"], "runtime list takes 0 words: pi"),
                          (["runtime", "start", "pi", "tui", "--port", "0"], "--port wants a TCP port")):
            rc, _, err = berth(sb, "unix", *args, text=True)
            expect_eq(rc, 2, "%s: exit status" % args)
            expect_in(why, err, "%s: the message" % args)
        rc, _, err = berth(sb, "unix", "runtime", "start", "pi", "server", text=True)
        expect_eq(rc, 1, "a mode not offered: exit status")
        expect_in("bad_args", err, "a mode not offered: the error")


@case("berth runtime pause and resume freeze and thaw a runtime; berth limits shows each limit, what holds it, "
      "and the usage; --json is limits.status's result", 120)
def pause_and_limits():
    with case_user() as pw:
        conf = limits_config(True, "[runtime s]\ncommand = /bin/sleep\nuser = %s\nworkspace = %s\n"
                             "rpc = 60\nmax_processes = 16\n" % (pw.pw_name, user_dir(pw)))
        with Sandbox(config=conf) as sb:
            text_ok(sb, "unix", "runtime", "start", "s", "rpc")
            expect_eq(text_ok(sb, "unix", "runtime", "pause", "s"), "", "pause's output")
            expect_eq(fields(text_ok(sb, "unix", "runtime", "status", "s"))["paused"], "true", "paused")
            rc, _, err = berth(sb, "unix", "runtime", "pause", "s", text=True)
            expect_eq(rc, 1, "a second pause's exit status")
            expect_in("conflict", err, "a second pause's error")
            out = text_ok(sb, "unix", "limits", "runtime/s")
            lines = out.splitlines()
            expect_eq(lines[0], "cgroup v2+v1 (frozen), 0 OOM kills", "the first line")
            t = rows(out)
            expect_eq(t[1], ["LIMIT", "VALUE", "HELD", "BY"], "the table's header")
            expect_eq(t[2][:3], ["max_processes", "16", "cgroup-v1"], "the limit's row")
            expect_in("pids.max", t[2][3], "the limit's row")
            expect(lines[-1].startswith("usage  cpu_usec ") and " processes 1" in lines[-1],
                   "the usage line: %r" % lines[-1])
            expect_eq(text_ok(sb, "unix", "runtime", "resume", "s"), "", "resume's output")
            expect_eq(fields(text_ok(sb, "unix", "runtime", "status", "s"))["paused"], "false", "resumed")
            got = json.loads(text_ok(sb, "unix", "--json", "limits", "runtime/s"))
            want = sb.unix().call("limits.status", {"target": "runtime/s"})
            for k in ("target", "cgroup", "frozen", "limits", "oom_kills"):
                expect_eq(got[k], want[k], "--json limits' %s" % k)
            for args, code, why in ((["limits"], 2, "limits wants a TARGET"),
                                    (["limits", "a", "b"], 2, "limits takes one TARGET: b"),
                                    (["limits", "proc/nosuch"], 1, "not_found"),
                                    (["runtime", "resume"], 2, "runtime resume wants a NAME")):
                rc, _, err = berth(sb, "unix", *args, text=True)
                expect_eq(rc, code, "%s: exit status" % args)
                expect_in(why, err, "%s: the message" % args)
            text_ok(sb, "unix", "runtime", "stop", "s")


run()
