"""Agent runtimes (runtime.*) with the real programs, OpenCode and Pi:
runtime.list detects each program and the version it prints (and says
unavailable, with why, for a program removed, replaced or failing);
runtime.start runs a TUI on a berth PTY session that replays from offset
0, an RPC mode whose stdin and stdout are a berth command's, and a server
that is ready once its port answers its own HTTP API with the password
berth made for it; the process is the runtime user's, with no_new_privs,
its own session, nothing inherited from berthd and only the secrets it
names; a second start, stop, unknown names and modes, and restart on
failure. Every sandbox that runs OpenCode or Pi is offline: they reach
nothing beyond loopback."""

import base64
import ctypes
import errno
import os
import pwd
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    Timeout,
    case,
    expect,
    expect_eq,
    expect_in,
    host_processes,
    note,
    pid_alive,
    proc_argv,
    pyfile,
    run,
    scratch,
    shfile,
    wait_for,
)

PI = os.environ.get("BERTH_PI", "/usr/local/bin/pi")
OPENCODE = os.environ.get("BERTH_OPENCODE", "/usr/local/bin/opencode")
USER = "agent"
PY = "/usr/bin/python3"


def agent():
    return pwd.getpwnam(USER)


def agent_dir():
    """A directory of the case's own, owned by the runtime user."""
    d = scratch(0o755)
    os.chown(d, agent().pw_uid, agent().pw_gid)
    return d


def section(name, command, ws, home, *lines):
    return "[runtime %s]\ncommand = %s\nuser = %s\nworkspace = %s\nenv = HOME=%s\n%s\n" % (
        name, command, USER, ws, home, "\n".join(lines))


def pi_section(name="pi", command=PI, *more):
    return section(name, command, agent_dir(), agent_dir(), "tui =", "rpc = --mode rpc", "resume = --continue",
                   "task = --mode json -p", "busy = queue", *more)


def opencode_section(name="opencode", command=OPENCODE, *more):
    return section(name, command, agent_dir(), agent_dir(), "tui =",
                   "server = serve --hostname 127.0.0.1 --port {port}",
                   "server_ready = http http://127.0.0.1:{port}/config 401",
                   "server_password_env = OPENCODE_SERVER_PASSWORD", *more)


def direct_version(program):
    """The first line of `program --version` run by hand as the user, in
    a network namespace of its own (loopback only): of its stdout, or of
    its stderr when stdout is empty (Pi prints its version there)."""
    home = agent_dir()
    r = subprocess.run(["unshare", "-n", "runuser", "-u", USER, "--", "env", "HOME=" + home, program, "--version"],
                       capture_output=True, timeout=60)
    expect_eq(r.returncode, 0, "%s --version run by hand (stderr %r)" % (program, r.stderr[-300:]))
    out = r.stdout.decode().strip() or r.stderr.decode().strip()
    expect(out, "%s --version printed nothing" % program)
    return out.splitlines()[0].strip()


def refused(c, op, args):
    """The error of a request that must fail: {code, message}."""
    r = c.request(op, args, timeout=30)
    expect(not r.get("ok"), "%s %r succeeded: %r" % (op, args, r))
    return r["error"]


def listed(c):
    return {r["name"]: r for r in c.call("runtime.list", timeout=30)["runtimes"]}


def start(c, args, timeout=30):
    r = c.call("runtime.start", args, timeout=timeout)
    note("runtime.start %s: %r" % (args.get("name"), r))
    return r


def events_of(sb, kind, name, timeout=30, from_seq=1):
    return sb.wait_event(lambda ev: ev["kind"] == kind and ev["data"].get("name") == name, timeout, from_seq)


def read_until(c, stream, pred, timeout):
    """Data of stream read from c until pred(bytes so far); the bytes."""
    out = bytearray()
    deadline = time.monotonic() + timeout
    while not pred(bytes(out)):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("%s: not seen within %.0f s; got %r" % (stream, timeout, bytes(out[-600:])))
        m = c.recv(left)
        if m.get("type") == "data" and m.get("stream") == stream and not m.get("eof"):
            expect_eq(m["offset"], len(out), "%s: the offset of the next chunk" % stream)
            out += bytes(m["data"])
    return bytes(out)


def screen_text(data):
    """What a terminal shows of data, roughly: escape sequences dropped."""
    return re.sub(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b.", b"",
                  data).decode("utf-8", "replace")


# ---------------------------------------------------------------------
# The catalog


@case("runtime.list gives each runtime the version its program prints, its modes and policies as configured", timeout=120)
def t_list_versions():
    want = {"pi": direct_version(PI), "opencode": direct_version(OPENCODE)}
    with Sandbox(extra=pi_section() + opencode_section(), offline=True) as sb:
        c = sb.unix()
        rts = listed(c)
        expect_eq(sorted(rts), ["opencode", "pi"], "the runtimes listed")
        for name, version in want.items():
            r = rts[name]
            expect_eq(r["state"], "available", "%s's state (reason %r)" % (name, r["reason"]))
            expect_eq(r["version"], version, "%s's version" % name)
            expect_eq(r["program"], os.path.abspath(PI if name == "pi" else OPENCODE), "%s's program" % name)
            expect_eq(r["user"], USER, "%s's user" % name)
            expect_eq(r["running"], None, "%s's instance before any start" % name)
        expect_eq(rts["pi"]["modes"], ["tui", "rpc"], "pi's modes")
        expect_eq(rts["opencode"]["modes"], ["tui", "server"], "opencode's modes")
        expect_eq((rts["pi"]["resume"], rts["pi"]["tasks"], rts["pi"]["busy"]), ("session", True, "queue"),
                  "pi's resume, tasks and busy")
        expect_eq((rts["opencode"]["resume"], rts["opencode"]["tasks"], rts["opencode"]["busy"]),
                  ("replay", False, "reject"), "opencode's defaults")
        # Detected once for the file as it is: the second list is the
        # same answer, with no program run again.
        t0 = time.monotonic()
        again = listed(c)
        note("second list: %.3f s" % (time.monotonic() - t0))
        expect_eq({k: v["version"] for k, v in again.items()}, want, "the versions of a second list")


@case("a program removed is listed unavailable naming it, and one put in its place is detected afresh", timeout=120)
def t_list_removed_replaced():
    prog = shfile('exec %s "$@"\n' % PI)
    with Sandbox(extra=pi_section("copy", prog), offline=True) as sb:
        c = sb.unix()
        r = listed(c)["copy"]
        expect_eq((r["state"], r["version"]), ("available", direct_version(PI)), "the copy before its removal")
        os.unlink(prog)
        r = listed(c)["copy"]
        expect_eq((r["state"], r["version"], r["program"]), ("unavailable", None, None), "the copy removed")
        expect_eq(r["reason"], "program not found: %s" % prog, "the reason")
        err = refused(c, "runtime.start", {"name": "copy", "mode": "rpc"})
        expect_eq(err["code"], "unavailable", "runtime.start of a removed program")
        expect_in(prog, err["message"], "the error names the program")
        with open(prog, "w") as f:
            f.write('#!/bin/sh\nexec %s "$@"\n' % OPENCODE)
        os.chmod(prog, 0o755)
        r = listed(c)["copy"]
        expect_eq((r["state"], r["version"]), ("available", direct_version(OPENCODE)), "another program in its place")


@case("a version is detected once per program file: lists run nothing until the file changes", timeout=60)
def t_list_cached():
    count = os.path.join(agent_dir(), "runs")
    prog = shfile('[ "$1" = --version ] && echo run >> %s\necho 2.5.0\n' % count)
    with Sandbox(extra=section("counted", prog, agent_dir(), agent_dir(), "tui ="), offline=True) as sb:
        c = sb.unix()
        for _ in range(3):
            expect_eq(listed(c)["counted"]["version"], "2.5.0", "the version")
        expect_eq(open(count).read().count("run"), 1, "runs of --version after three lists")
        st = os.stat(prog)
        os.utime(prog, ns=(st.st_atime_ns, st.st_mtime_ns + 1000000000))
        expect_eq(listed(c)["counted"]["version"], "2.5.0", "the version of the touched file")
        expect_eq(open(count).read().count("run"), 2, "runs of --version once the file changed")


@case("a program whose --version fails, hangs or is not executable is unavailable with that reason", timeout=60)
def t_list_failing():
    fails = shfile("echo oops >&2; exit 1\n")
    silent = shfile("exit 0\n")
    hangs = shfile("exec sleep 60\n")
    noexec = shfile("echo 1.0\n", mode=0o644)
    with Sandbox(extra=section("fails", fails, agent_dir(), agent_dir(), "tui =")
                 + section("silent", silent, agent_dir(), agent_dir(), "tui =", "version = -V")
                 + section("hangs", hangs, agent_dir(), agent_dir(), "tui =")
                 + section("noexec", noexec, agent_dir(), agent_dir(), "tui =")
                 + section("missing", "no-such-runtime-program", agent_dir(), agent_dir(), "tui ="),
                 offline=True) as sb:
        c = sb.unix()
        # The list waits for the hung program; the loop does not: a ping
        # sent after it is answered first.
        list_id = c.send_request("runtime.list")
        ping_id = c.send_request("ping")
        first = c.recv(30)
        expect_eq((first.get("type"), first.get("id")), ("response", ping_id), "the first answer")
        rts = {r["name"]: r for r in c.response(list_id, 30)["result"]["runtimes"]}
        for name, reason in (("fails", "--version exited with code 1"), ("silent", "-V printed no version"),
                             ("hangs", "--version did not answer within 5 s"),
                             ("noexec", "program not executable: %s" % noexec),
                             ("missing", "program not found: no-such-runtime-program")):
            expect_eq((rts[name]["state"], rts[name]["reason"]), ("unavailable", reason), name)
        # The hung program was killed, not left behind.
        out = subprocess.run(["pgrep", "-u", USER, "-f", "sleep 60"], capture_output=True, timeout=10).stdout
        expect(not [p for p in out.split() if sb.in_namespace(int(p))], "the hung program still runs: %r" % out)


# ---------------------------------------------------------------------
# Modes


@case("pi's TUI runs on a berth PTY session: drawn, and replayed byte for byte from offset 0 on reattach", timeout=120)
def t_tui_replay():
    with Sandbox(extra=pi_section(), offline=True) as sb:
        c = sb.unix()
        st = start(c, {"name": "pi", "mode": "tui", "cols": 100, "rows": 30})
        expect_eq((st["mode"], st["state"]), ("tui", "ready"), "the status")
        expect("proc" not in st and "port" not in st and "password" not in st, "no proc, port or password: %r" % st)
        events_of(sb, "runtime.started", "pi")
        stream = "pty/" + st["pty"]
        c.call("pty.attach", {"id": st["pty"], "from_offset": 0})
        # Pi's editor shows its model line and the working directory.
        first = read_until(c, stream, lambda b: st["workspace"] in screen_text(b), 60)
        note("drawn: %r" % screen_text(first)[-400:])
        c.call("pty.detach", {"id": st["pty"]})
        other = sb.unix()
        other.call("pty.attach", {"id": st["pty"], "from_offset": 0})
        again = read_until(other, stream, lambda b: len(b) >= len(first), 20)
        expect_eq(again[:len(first)], first, "the bytes replayed from offset 0")
        expect_eq(other.call("runtime.status", {"name": "pi"})["state"], "ready", "the status while it runs")


@case("opencode's server mode is ready once its port answers, and answers its own API with berth's password", timeout=120)
def t_server():
    with Sandbox(extra=opencode_section(), offline=True) as sb:
        c = sb.unix()
        st = start(c, {"name": "opencode", "mode": "server"})
        expect_eq((st["mode"], "pty" in st, "proc" in st), ("server", False, True), "the status")
        expect(isinstance(st["port"], int) and st["port"] > 0, "a port: %r" % st["port"])
        expect(re.fullmatch(r"[0-9a-f]{32}", st["password"] or ""), "a password: %r" % st["password"])
        ev = events_of(sb, "runtime.ready", "opencode", timeout=60)
        expect_eq(ev["data"]["port"], st["port"], "runtime.ready's port")
        ready = c.call("runtime.status", {"name": "opencode"})
        expect_eq((ready["state"], ready["port"]), ("ready", st["port"]), "the status once ready")
        expect(ready["ready_ms"] is not None, "ready_ms once ready")
        url = "http://127.0.0.1:%d/config" % st["port"]
        auth = base64.b64encode(("opencode:" + st["password"]).encode()).decode()
        probe = ("import sys, urllib.request, urllib.error\n"
                 "req = urllib.request.Request(sys.argv[1])\n"
                 "if len(sys.argv) > 2: req.add_header('Authorization', 'Basic ' + sys.argv[2])\n"
                 "try:\n    r = urllib.request.urlopen(req, timeout=10); print(r.status); print(r.read().decode())\n"
                 "except urllib.error.HTTPError as e: print(e.code)\n")
        out = subprocess.run(sb.netns([PY, "-c", probe, url, auth]), capture_output=True, timeout=30).stdout.decode()
        expect_eq(out.splitlines()[0], "200", "GET /config with the password")
        expect_in('"username":"%s"' % USER, out, "opencode's own config answer")
        out = subprocess.run(sb.netns([PY, "-c", probe, url]), capture_output=True, timeout=30).stdout.decode()
        expect_eq(out.strip(), "401", "GET /config without the password")
        # The password goes to the one who asks, never into an event or
        # a list.
        expect("password" not in listed(c)["opencode"]["running"], "the password in runtime.list")
        expect(st["password"].encode() not in sb.journal_bytes(), "the password is not in the journal")
        # A port asked for is the one it serves on, and a new password is
        # made for the new start.
        c.call("runtime.stop", {"name": "opencode"}, timeout=30)
        again = start(c, {"name": "opencode", "mode": "server", "port": 40123})
        expect_eq(again["port"], 40123, "the port asked for")
        expect(again["password"] != st["password"], "a new password per start")
        ev = sb.wait_event(lambda e: e["kind"] == "runtime.ready" and e["data"].get("port") == 40123, 60)
        expect_eq(ev["data"]["name"], "opencode", "runtime.ready on the port asked for")


@case("pi's RPC mode is a berth command: proc.input of get_state is answered on proc stdout", timeout=120)
def t_rpc():
    with Sandbox(extra=pi_section(), offline=True) as sb:
        c = sb.unix()
        st = start(c, {"name": "pi", "mode": "rpc"})
        expect_eq((st["mode"], st["state"], "pty" in st, "port" in st), ("rpc", "ready", False, False), "the status")
        c.call("proc.attach", {"id": st["proc"], "from_offset": 0})
        c.call("proc.input", {"id": st["proc"], "data": b'{"id": "q1", "type": "get_state"}\n'})
        out = read_until(c, "proc/%s/stdout" % st["proc"], lambda b: b'"command":"get_state"' in b, 60)
        line = [ln for ln in out.splitlines() if b'"get_state"' in ln][0]
        note(line[:300])
        expect_in(b'"type":"response"', line, "an RPC response")
        expect_in(b'"success":true', line, "a successful one")


# ---------------------------------------------------------------------
# The process


def fd_targets(pid):
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return out


KCMP = {"x86_64": 312, "aarch64": 272}
KCMP_FILE = 0


def same_file(pid1, fd1, pid2, fd2):
    """Whether two descriptors are one open file description (kcmp(2)):
    what a descriptor inherited across fork and exec would be."""
    nr = KCMP.get(os.uname().machine)
    expect(nr is not None, "kcmp's syscall number on %s" % os.uname().machine)
    r = ctypes.CDLL(None, use_errno=True).syscall(nr, pid1, pid2, KCMP_FILE, fd1, fd2)
    # A descriptor closed since it was listed is no longer anyone's.
    expect(r >= 0 or ctypes.get_errno() == errno.EBADF, "kcmp: %s" % os.strerror(ctypes.get_errno()))
    return r == 0


def inherited(pid, other):
    """The descriptors of pid above 2 that are open files of other."""
    theirs = list(fd_targets(other))
    return {fd: t for fd, t in fd_targets(pid).items()
            if fd > 2 and any(same_file(pid, fd, other, o) for o in theirs)}


def environ_of(pid):
    """pid's environment, once it has one: a program started through a
    #! line (env, then node) shows none while it is between its execs."""
    env = {}

    def read():
        env.clear()
        with open("/proc/%d/environ" % pid) as f:
            env.update(kv.split("=", 1) for kv in f.read().split("\0") if "=" in kv)
        return bool(env)

    wait_for(read, 10, "pid %d's environment" % pid)
    return env


@case("a runtime runs as its user, with no_new_privs, in its own session, in its workspace, with nothing of berthd's", timeout=120)
def t_process():
    ws = agent_dir()
    sec = section("pi", PI, ws, agent_dir(), "tui =", "rpc = --mode rpc", "env = FROM_CONF=1",
                  "secrets = GIVEN NOT_SET")
    with Sandbox(extra=sec, offline=True) as sb:
        c = sb.unix()
        c.call("secrets.set", {"GIVEN": b"given-value", "OTHER": b"other-value"})
        for mode in ("tui", "rpc"):
            st = start(c, {"name": "pi", "mode": mode, "env": {"FROM_REQ": "2"}})
            pid = sb.host_pid(st["pid"])
            status = open("/proc/%d/status" % pid).read()
            uid = agent().pw_uid
            expect_in("Uid:\t%d\t%d\t%d\t%d" % (uid, uid, uid, uid), status, "%s: the uids" % mode)
            expect_in("NoNewPrivs:\t1", status, "%s: no_new_privs" % mode)
            expect_in("CapBnd:\t0000000000000000", status, "%s: no capability can come back" % mode)
            fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
            # Seen from the host, as pid is.
            expect_eq((int(fields[2]), int(fields[3])), (pid, pid), "%s: its own group and session" % mode)
            expect_eq(os.readlink("/proc/%d/cwd" % pid), ws, "%s: cwd" % mode)
            env = environ_of(pid)
            expect_eq((env.get("USER"), env.get("FROM_CONF"), env.get("FROM_REQ"), env.get("GIVEN")),
                      (USER, "1", "2", "given-value"), "%s: user, env and the secret it names" % mode)
            expect("OTHER" not in env and "NOT_SET" not in env, "%s: no other secret" % mode)
            expect(not [k for k in env if k.startswith("BERTH")], "%s: nothing of berthd's environment" % mode)
            # An inherited descriptor is an open file description berthd
            # holds too; the runtime's stdio is the one thing it gets.
            shared = inherited(pid, sb.berthd_pid())
            expect(not shared, "%s: descriptors shared with berthd: %r" % (mode, shared))
            open_paths = list(fd_targets(pid).values())
            expect(not [t for t in open_paths if t.startswith(sb.state_dir)], "%s: a state file open" % mode)
            ev = sb.wait_event(lambda e: e["kind"] == "secrets.injected" and e["data"]["target"] == "runtime/pi"
                               and e["seq"] > 0)
            expect_eq(ev["data"]["names"], ["GIVEN"], "secrets.injected names what was given")
            c.call("runtime.stop", {"name": "pi"}, timeout=30)


# ---------------------------------------------------------------------
# Lifecycle


@case("one instance per runtime: a second start is a conflict; stop ends it with runtime.exited and runtime.stopped", timeout=120)
def t_lifecycle():
    with Sandbox(extra=pi_section(), offline=True) as sb:
        c = sb.unix()
        expect_eq(c.call("runtime.status", {"name": "pi"}), {"name": "pi", "state": "stopped"}, "never started")
        st = start(c, {"name": "pi", "mode": "rpc"})
        err = refused(c, "runtime.start", {"name": "pi", "mode": "tui"})
        expect_eq(err["code"], "conflict", "a second start")
        expect_in("rpc", err["message"], "the conflict names the mode")
        expect_in(str(st["pid"]), err["message"], "and the pid")
        expect_eq(c.call("runtime.stop", {"name": "pi"}, timeout=30), {}, "runtime.stop")
        ex = events_of(sb, "runtime.exited", "pi")
        expect_eq((ex["data"]["pid"], ex["data"]["mode"]), (st["pid"], "rpc"), "runtime.exited")
        stopped = events_of(sb, "runtime.stopped", "pi")
        expect(stopped["seq"] > ex["seq"], "runtime.stopped after runtime.exited")
        s = c.call("runtime.status", {"name": "pi"})
        expect_eq(s["state"], "exited", "the status after stop")
        expect(s["exit"] is not None, "the exit status: %r" % s["exit"])
        expect_eq(c.error_of("runtime.stop", {"name": "pi"}), "conflict", "stop when not running")
        # resume: the runtime's own resume arguments are appended.
        res = start(c, {"name": "pi", "mode": "rpc", "resume": True})
        # runtime.start answers once the exec began: the new program's
        # command line is there a moment later.
        path = "/proc/%d/cmdline" % sb.host_pid(res["pid"])
        argv = wait_for(lambda: open(path).read().split("\0")[:-1], 5, "the resumed start's command line", 0.01)
        expect_in("--continue", argv, "the command line of a resumed start")
        c.call("runtime.stop", {"name": "pi"}, timeout=30)
        # Started again after a stop: a new instance.
        again = start(c, {"name": "pi", "mode": "tui"})
        expect(again["pid"] != st["pid"] and again.get("pty"), "a new instance: %r" % again)


@case("runtime.stop kills a runtime that ignores SIGTERM after stop_timeout_ms", timeout=60)
def t_stop_kill():
    armed = os.path.join(agent_dir(), "armed")
    prog = shfile("trap '' TERM\ntouch %s\nwhile :; do sleep 1; done\n" % armed)
    with Sandbox(extra=section("stubborn", prog, agent_dir(), agent_dir(), "rpc =", "stop_timeout_ms = 300"),
                 offline=True) as sb:
        c = sb.unix()
        st = start(c, {"name": "stubborn", "mode": "rpc"})
        wait_for(lambda: os.path.exists(armed), 10, "the runtime ignoring SIGTERM")
        expect_eq(c.call("runtime.stop", {"name": "stubborn"}, timeout=20), {}, "runtime.stop")
        ex = events_of(sb, "runtime.exited", "stubborn")
        expect_eq((ex["data"]["pid"], ex["data"].get("signal")), (st["pid"], 9), "the exit: SIGKILL")
        expect_eq(c.call("runtime.status", {"name": "stubborn"})["exit"]["signal"], 9, "the status's exit")


@case("berthd shutting down sends a running runtime SIGTERM, so it can save its state, and does not restart it", timeout=60)
def t_shutdown_term():
    d = agent_dir()
    armed, saved = os.path.join(d, "armed"), os.path.join(d, "saved")
    prog = shfile("trap 'touch %s; exit 0' TERM\ntouch %s\nwhile :; do sleep 0.1; done\n" % (saved, armed))
    with Sandbox(extra=section("saver", prog, agent_dir(), agent_dir(), "rpc =", "restart = always"),
                 offline=True) as sb:
        start(sb.unix(), {"name": "saver", "mode": "rpc"})
        wait_for(lambda: os.path.exists(armed), 10, "the runtime's trap")
        sb.stop()
        expect(os.path.exists(saved), "the runtime did not get SIGTERM at shutdown")
        kinds = [k for k in (b"runtime.restarting",) if k in sb.journal_bytes()]
        expect(not kinds, "restarted during shutdown")


@case("bad runtime.start requests: unknown name, mode not offered, bad workspace, resume without support", timeout=60)
def t_bad_requests():
    prog = shfile("sleep 100\n")
    with Sandbox(extra=section("sh", prog, agent_dir(), agent_dir(), "rpc =", "tui ="), offline=True) as sb:
        c = sb.unix()
        for args, code, says in (
            ({"name": "nope", "mode": "tui"}, "not_found", "nope"),
            ({"name": "sh", "mode": "server"}, "bad_args", "tui, rpc"),
            ({"name": "sh"}, "bad_args", "tui, rpc"),
            ({"name": "sh", "mode": "tui", "workspace": "/no/such/dir"}, "bad_args", "/no/such/dir"),
            ({"name": "sh", "mode": "tui", "workspace": "relative"}, "bad_args", "absolute"),
            ({"name": "sh", "mode": "tui", "resume": True}, "bad_args", "resume"),
            ({"name": "sh", "mode": "tui", "env": {"A=B": "x"}}, "bad_args", "env"),
            ({"name": "sh", "mode": "tui", "cols": 0}, "bad_args", "cols"),
            ({"mode": "tui"}, "bad_args", "name"),
        ):
            err = refused(c, "runtime.start", args)
            expect_eq(err["code"], code, "runtime.start %r" % args)
            expect_in(says, err["message"], "the message of runtime.start %r" % args)
        # A directory the runtime's user cannot enter is not handed to it
        # as its working directory by berthd's root.
        closed = scratch(0o700)
        err = refused(c, "runtime.start", {"name": "sh", "mode": "rpc", "workspace": closed})
        expect_eq(err["code"], "unavailable", "a workspace the user cannot enter")
        expect_in("chdir", err["message"], "the step that failed")
        expect_eq(c.call("runtime.status", {"name": "sh"})["state"], "stopped", "nothing started there")
        expect_eq(c.error_of("runtime.status", {"name": "nope"}), "not_found", "status of an unknown runtime")
        expect_eq(c.error_of("runtime.stop", {"name": "nope"}), "not_found", "stop of an unknown runtime")
        expect_eq(c.call("runtime.status", {"name": "sh"})["state"], "stopped", "nothing was started")


@case("a backend reaches runtime.* through the gateway's WebSocket, and hello lists them", timeout=60)
def t_over_websocket():
    prog = shfile('[ "$1" = --version ] && { echo 3.1; exit 0; }\nexec sleep 100\n')
    # No OpenCode or Pi here: this sandbox may have the gateway's port.
    with Sandbox(extra=section("sh", prog, agent_dir(), agent_dir(), "rpc =")) as sb:
        c = sb.ws()
        for op in ("runtime.list", "runtime.start", "runtime.stop", "runtime.status"):
            expect_in(op, c.hello_result["capabilities"], "hello's capabilities")
        expect_eq(c.call("runtime.list")["runtimes"][0]["version"], "3.1", "the version over the WebSocket")
        st = c.call("runtime.start", {"name": "sh", "mode": "rpc"})
        expect_eq(c.call("runtime.status", {"name": "sh"})["pid"], st["pid"], "the status over the WebSocket")
        expect_eq(c.call("runtime.stop", {"name": "sh"}, timeout=20), {}, "runtime.stop over the WebSocket")


@case("restart = on-failure restarts a runtime that exits 1, with backoff; one that exits 0 stays exited", timeout=60)
def t_restart():
    flag = os.path.join(agent_dir(), "fail")
    open(flag, "w").close()
    os.chmod(flag, 0o666)
    prog = shfile('[ -e %s ] && exit 1\nexit 0\n' % flag)
    with Sandbox(extra=section("flaky", prog, agent_dir(), agent_dir(), "rpc =", "restart = on-failure",
                               "backoff_min_ms = 50", "backoff_max_ms = 200"), offline=True) as sb:
        c = sb.unix()
        first = start(c, {"name": "flaky", "mode": "rpc"})
        r1 = events_of(sb, "runtime.restarting", "flaky")
        expect_eq(r1["data"]["restarts"], 1, "the first restart's count")
        r2 = sb.wait_event(lambda e: e["kind"] == "runtime.restarting" and e["data"]["restarts"] == 2)
        expect(r2["data"]["delay_ms"] >= r1["data"]["delay_ms"], "the backoff grows: %r" % ([r1, r2],))
        os.unlink(flag)
        # Once it exits 0 it is left alone.
        def settled():
            s = c.call("runtime.status", {"name": "flaky"})
            return s if s["state"] == "exited" and s["exit"] == {"code": 0} else None
        s = wait_for(settled, 20, "an exit 0 that is not restarted")
        expect(s["restarts"] >= 2 and s["pid"] != first["pid"], "restarted as new processes: %r" % s)
        time.sleep(0.5)
        expect_eq(c.call("runtime.status", {"name": "flaky"})["restarts"], s["restarts"], "no restart after exit 0")


def kinds_of(sb, name, kinds):
    """The events of runtime name among kinds, in the journal's order."""
    return [(e["kind"], e["data"]) for e in sb.events()
            if e["kind"] in kinds and e["data"].get("name", e["data"].get("id")) == name]


@case("a server whose port never answers fails after server_ready_timeout_ms: stopped, reported, and restarted on failure", timeout=60)
def t_server_ready_timeout():
    d = agent_dir()
    runs = os.path.join(d, "runs")
    # It even exits 0 on SIGTERM: a failure all the same, for on-failure.
    prog = shfile("echo run >> %s\ntrap 'exit 0' TERM\nwhile :; do sleep 0.1; done\n" % runs)
    with Sandbox(extra=section("mute", prog, d, agent_dir(), "server = --port {port}", "restart = on-failure",
                               "server_ready_timeout_ms = 800", "backoff_min_ms = 50"), offline=True) as sb:
        c = sb.unix()
        st = start(c, {"name": "mute", "mode": "server"})
        expect_eq(st["state"], "starting", "the state before the port answers")
        failed = events_of(sb, "runtime.failed", "mute", timeout=20)
        note("runtime.failed: %r" % failed["data"])
        expect_eq(failed["data"]["mode"], "server", "runtime.failed's mode")
        expect_in("port %d not ready within 800 ms" % st["port"], failed["data"]["reason"], "the reason")
        ex = events_of(sb, "runtime.exited", "mute", from_seq=failed["seq"])
        expect_eq((ex["data"]["pid"], ex["data"].get("code")), (st["pid"], 0), "the failed instance's exit")
        rs = events_of(sb, "runtime.restarting", "mute", from_seq=ex["seq"])
        expect_eq(rs["data"]["restarts"], 1, "restarted by its on-failure policy")
        again = events_of(sb, "runtime.started", "mute", from_seq=rs["seq"])
        expect(again["data"]["pid"] != st["pid"], "a new process: %r" % again["data"])
        c.call("runtime.stop", {"name": "mute"}, timeout=20)
    # Without a restart policy it stays failed, with the reason.
    with Sandbox(extra=section("mute", prog, d, agent_dir(), "server = --port {port}",
                               "server_ready_timeout_ms = 500"), offline=True) as sb:
        c = sb.unix()
        st = start(c, {"name": "mute", "mode": "server"})
        events_of(sb, "runtime.exited", "mute", timeout=20)
        s = c.call("runtime.status", {"name": "mute"})
        expect_eq((s["state"], s["exit"]), ("failed", {"code": 0}), "the status after the failure")
        expect_in("not ready within 500 ms", s["reason"], "the status's reason")
        expect_eq(listed(c)["mute"]["running"]["state"], "failed", "runtime.list's view")
        expect_eq(c.error_of("runtime.stop", {"name": "mute"}), "conflict", "stop of a failed runtime")
        expect_eq(start(c, {"name": "mute", "mode": "server"})["state"], "starting", "a new start after a failure")


LISTENER = """import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
s.close()
open(sys.argv[2] + ".closed", "w").close()
while True:
    time.sleep(1)
"""


@case("a ready server whose port stops answering is unready with the reason, then failed and stopped", timeout=60)
def t_server_liveness():
    d = agent_dir()
    flag = os.path.join(d, "close")
    prog = pyfile(LISTENER)
    with Sandbox(extra=section("live", PY, d, agent_dir(), "server = %s {port} %s" % (prog, flag),
                               "server_ready_timeout_ms = 1500"), offline=True) as sb:
        c = sb.unix()
        st = start(c, {"name": "live", "mode": "server"})
        ready = events_of(sb, "runtime.ready", "live", timeout=20)
        open(flag, "w").close()
        unready = events_of(sb, "runtime.unready", "live", timeout=20, from_seq=ready["seq"])
        note("runtime.unready: %r" % unready["data"])
        expect(unready["data"]["reason"], "runtime.unready's reason")
        # The deadline is 1.5 s away: the status says why meanwhile.
        s = c.call("runtime.status", {"name": "live"})
        expect_eq((s["state"], s["reason"]), ("unready", unready["data"]["reason"]), "the status while unready")
        expect_eq(s["ready_ms"], ready["data"]["ready_ms"], "ready_ms is the first readiness's")
        failed = events_of(sb, "runtime.failed", "live", timeout=20, from_seq=unready["seq"])
        expect_in("port %d unready for 1500 ms" % st["port"], failed["data"]["reason"], "the reason")
        ex = events_of(sb, "runtime.exited", "live", timeout=20, from_seq=failed["seq"])
        expect_eq(ex["data"].get("signal"), 15, "stopped with SIGTERM")
        expect_eq(c.call("runtime.status", {"name": "live"})["state"], "failed", "the status after")


@case("the restart backoff starts over once a runtime has been ready for backoff_reset_ms", timeout=60)
def t_backoff_reset():
    d = agent_dir()
    count = os.path.join(d, "count")
    # Runs 1-3 exit at once, run 4 lives 1.2 s, later runs live on.
    prog = shfile('echo run >> %s\nn=$(wc -l < %s)\n[ "$n" -le 3 ] && exit 1\n[ "$n" -eq 4 ] && { sleep 1.2; exit 1; }\n'
                  "exec sleep 100\n" % (count, count))
    with Sandbox(extra=section("flappy", prog, d, agent_dir(), "rpc =", "restart = always", "backoff_min_ms = 100",
                               "backoff_max_ms = 5000", "backoff_reset_ms = 500"), offline=True) as sb:
        c = sb.unix()
        start(c, {"name": "flappy", "mode": "rpc"})
        sb.wait_event(lambda e: e["kind"] == "runtime.restarting" and e["data"]["restarts"] == 4, 30)
        delays = [data["delay_ms"] for kind, data in kinds_of(sb, "flappy", ("runtime.restarting",))]
        expect_eq(delays, [100, 200, 400, 100], "the delays: doubling, then from the minimum after 1.2 s ready")
        c.call("runtime.stop", {"name": "flappy"}, timeout=20)


@case("a TUI's last session stays replayable after its exit, and is closed when the next instance starts", timeout=60)
def t_tui_sessions():
    d = agent_dir()
    count = os.path.join(d, "count")
    prog = shfile('echo run >> %s\nn=$(wc -l < %s)\necho "instance-$n"\n[ "$n" -le 3 ] && exit 1\n'
                  "exec sleep 100\n" % (count, count))
    with Sandbox(extra=section("term", prog, d, agent_dir(), "tui =", "restart = on-failure",
                               "backoff_min_ms = 50"), offline=True) as sb:
        c = sb.unix()
        first = start(c, {"name": "term", "mode": "tui"})
        wait_for(lambda: c.call("runtime.status", {"name": "term"})["restarts"] == 3 and
                 c.call("runtime.status", {"name": "term"})["state"] == "ready", 20, "the fourth instance")
        ids = [data["pty"] for kind, data in kinds_of(sb, "term", ("runtime.started",))]
        expect_eq(len(ids), 4, "four instances: %r" % ids)
        expect_eq(ids[0], first["pty"], "the first instance's session")
        live = [s["id"] for s in c.call("pty.list")["sessions"]]
        expect_eq(live, [ids[3]], "the sessions left: the running instance's only")
        closed = {e["data"]["id"]: e["data"]["reason"] for e in sb.events() if e["kind"] == "pty.closed"}
        expect_eq(closed, {i: "replaced" for i in ids[:3]}, "pty.closed of the earlier instances")
        # Ready is as soon as it is spawned: its line is awaited before the
        # stop, or the SIGTERM could come first.
        watch = sb.unix()
        watch.call("pty.attach", {"id": ids[3], "from_offset": 0})
        read_until(watch, "pty/" + ids[3], lambda b: b"instance-4" in b, 10)
        watch.close()
        c.call("runtime.stop", {"name": "term"}, timeout=20)
        # Stopped, its session is still there to read: the last output.
        last = c.call("runtime.status", {"name": "term"})["pty"]
        expect_eq(last, ids[3], "the status names the last session")
        c.call("pty.attach", {"id": last, "from_offset": 0})
        read_until(c, "pty/" + last, lambda b: b"instance-4" in b, 10)
        expect_eq([s["id"] for s in c.call("pty.list")["sessions"]], [last], "the exited instance's session")
        # The next start closes it.
        nxt = start(c, {"name": "term", "mode": "tui"})
        ev = sb.wait_event(lambda e: e["kind"] == "pty.closed" and e["data"]["id"] == last, 10)
        expect_eq(ev["data"]["reason"], "replaced", "pty.closed's reason")
        expect_eq([s["id"] for s in c.call("pty.list")["sessions"]], [nxt["pty"]], "the sessions after a new start")


SQUAT = """import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
open(sys.argv[2], "w").close()
while True:
    s.accept()[0].close()
"""


@case("a server's port taken first by another process of the runtime's user is not its: never ready, and failed", timeout=60)
def t_server_port_taken():
    d = agent_dir()
    up = os.path.join(d, "up")
    # The runtime never gets the port: the other process has it.
    prog = shfile("while :; do sleep 0.1; done\n")
    port = 20000 + os.getpid() % 20000
    with Sandbox(extra=section("victim", prog, d, agent_dir(), "server = --port {port}",
                               "server_ready_timeout_ms = 1500"), offline=True) as sb:
        c = sb.unix()
        # The same user, inside the sandbox, but not of the runtime's
        # processes: what a task of another runtime could run.
        c.call("proc.start", {"argv": [PY, pyfile(SQUAT), str(port), up], "user": USER})
        wait_for(lambda: os.path.exists(up), 10, "the other process listening")
        start(c, {"name": "victim", "mode": "server", "port": port})
        failed = events_of(sb, "runtime.failed", "victim", timeout=20)
        note("runtime.failed: %r" % failed["data"])
        expect_in("port %d not ready within 1500 ms" % port, failed["data"]["reason"], "the failure")
        expect_in("is not the runtime's", failed["data"]["reason"], "why")
        expect(not kinds_of(sb, "victim", ("runtime.ready",)), "the port of another process taken for ready")


@case("a server listening in a descendant that left the runtime's session is still the runtime's: ready; "
      "runtime.stop ends that descendant too", timeout=60)
def t_server_port_descendant():
    d = agent_dir()
    listener = pyfile(LISTENER)
    prog = shfile('setsid %s %s "$2" %s &\nwait\n' % (PY, listener, os.path.join(d, "never")))
    with Sandbox(extra=section("forks", prog, d, agent_dir(), "server = --port {port}",
                               "server_ready_timeout_ms = 5000"), offline=True) as sb:
        c = sb.unix()
        st = start(c, {"name": "forks", "mode": "server"})
        ev = events_of(sb, "runtime.ready", "forks", timeout=20)
        expect_eq(ev["data"]["port"], st["port"], "runtime.ready's port")

        def listeners():
            return [p for p in host_processes() if listener in " ".join(proc_argv(p) or [])]

        held = listeners()
        expect(held, "no process runs the listener")
        c.call("runtime.stop", {"name": "forks"}, timeout=20)
        wait_for(lambda: not any(pid_alive(p) for p in held), 10, "the setsid listener ended by runtime.stop")


run()
