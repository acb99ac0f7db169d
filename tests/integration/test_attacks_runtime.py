#!/usr/bin/python3
"""The boundary between an agent runtime and berth, tried for real from
inside a real runtime's process tree: the scripted model has the agent
run, with its own bash tool, an attack script that tries each attack and
writes one JSON line per attempt (what it tried, what happened) into the
workspace. The runtime is the least trusted program of the sandbox; each
case is named after the runtime it attacks from, and checks that the
script ran as the runtime's user under the runtime itself, and that every
attack failed for the reason it must: the token, berthd's socket, its
state directory, journal and artifact store, berth's processes (ptrace,
/proc memory and environment, signals), the gateway's door without the
token, the secrets of the backend's own commands and of the runtime's
not granted, and any new privilege."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Sandbox, case, expect, expect_eq, expect_in, note, proc_status, run, scratch  # noqa: E402
from harness.model import ScriptedModel, call_id, text, tool_call  # noqa: E402
from harness.netns import netns_http  # noqa: E402
from harness.runtimes import (  # noqa: E402
    OPENCODE,
    OPENCODE_ENV,
    PI,
    AgentDirs,
    JsonLines,
    need_program,
    opencode_auth,
    runtime_sections,
    start_ready,
)

PY = "/usr/bin/python3"
CANARY = "BERTH_ATTACK_CANARY"
# The environment of a user's program (docs/protocol.md).
USER_ENV = ("PATH", "LANG", "HOME", "SHELL", "USER", "LOGNAME")

# Run by the agent's bash tool: argv[1] the targets (JSON), argv[2] where
# to write what each attempt did.
ATTACK = r'''
import ctypes, errno, json, os, signal, socket, struct, subprocess, sys

t = json.load(open(sys.argv[1]))
out = open(sys.argv[2], "w")
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)
PTRACE_ATTACH, PTRACE_DETACH = 16, 17


def tell(attack, target, fn):
    rec = {"attack": attack, "target": target}
    try:
        got = fn()
        rec.update(result="done", got=got if isinstance(got, (str, int, list, dict)) else repr(got)[:300])
    except OSError as e:
        rec.update(result="refused", errno=errno.errorcode.get(e.errno, str(e.errno)), detail=str(e)[:200])
    except Exception as e:
        rec.update(result="error", detail=repr(e)[:300])
    out.write(json.dumps(rec) + "\n")
    out.flush()


def read(path):
    with open(path, "rb") as f:
        return f.read(4096).decode(errors="replace")


def hello(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    body = b"\x84\xa4type\xa7request\xa2id\x01\xa2op\xa5hello\xa4args\x81\xa7version\x01"
    s.sendall(struct.pack(">I", len(body)) + body)
    return s.recv(4096).hex()


def ptrace(pid):
    if libc.ptrace(PTRACE_ATTACH, pid, None, None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    libc.ptrace(PTRACE_DETACH, pid, None, None)
    return "attached"


def chain():
    """This process's ancestors as far as /proc shows them: hidepid hides
    another user's processes, so it stops at the first of those."""
    pid, seen = os.getpid(), []
    while pid > 0:
        try:
            with open("/proc/%d/stat" % pid) as f:
                s = f.read()
        except FileNotFoundError:
            break
        seen.append(pid)
        pid = int(s[s.rindex(")") + 2:].split()[1])
    return seen


def fds(pid):
    d = "/proc/%d/fd" % pid
    out = {}
    for n in os.listdir(d):
        try:
            out[n] = os.readlink(os.path.join(d, n))
        except FileNotFoundError:
            pass
    return out


def environ(pid):
    with open("/proc/%d/environ" % pid, "rb") as f:
        pairs = [kv.decode(errors="replace").partition("=") for kv in f.read().split(b"\0") if kv]
    return {k: v for k, _, v in pairs}


def upgrade(port, token):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    head = ("GET /v1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Protocol: berth.v1\r\n" % port)
    if token:
        head += "Authorization: Bearer %s\r\n" % token
    s.sendall((head + "\r\n").encode())
    return s.recv(256).decode(errors="replace").split("\r\n")[0]


def no_new_privs():
    return libc.prctl(39, 0, 0, 0, 0)


def su():
    r = subprocess.run(["su", "root", "-c", "id -u"], stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    return "rc %d: %s" % (r.returncode, (r.stdout + r.stderr).decode(errors="replace").strip()[:200])


tell("who am I", "self", lambda: {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
                                  "groups": os.getgroups(), "chain": chain()})
tell("the runtime's session and process group", t["runtime"],
     lambda: {"sid": os.getsid(t["runtime"]), "pgid": os.getpgid(t["runtime"])})
tell("the runtime's descriptors", t["runtime"], lambda: fds(t["runtime"]))
tell("read a file of the workspace", t["own"], lambda: read(t["own"]))
tell("read the token", t["token"], lambda: read(t["token"]))
tell("list the token's directory", os.path.dirname(t["token"]), lambda: os.listdir(os.path.dirname(t["token"])))
tell("connect to berthd's socket and send hello", t["socket"], lambda: hello(t["socket"]))
tell("list the state directory", t["state"], lambda: os.listdir(t["state"]))
tell("list the journal", t["journal"], lambda: os.listdir(t["journal"]))
for f in t["journal_files"]:
    tell("read a journal file", f, lambda: read(f))
tell("list the artifact store", t["artifacts"], lambda: os.listdir(t["artifacts"]))
for f in t["artifact_files"]:
    tell("read an artifact", f, lambda: read(f))
for name, pid in sorted(t["pids"].items()):
    tell("ptrace " + name, pid, lambda: ptrace(pid))
    tell("read the memory of " + name, pid, lambda: read("/proc/%d/mem" % pid))
    tell("read the environment of " + name, pid, lambda: read("/proc/%d/environ" % pid))
    tell("signal 0 to " + name, pid, lambda: os.kill(pid, 0))
    tell("SIGKILL to " + name, pid, lambda: os.kill(pid, signal.SIGKILL))
tell("the environment this script inherited", "self", lambda: dict(os.environ))
tell("the environment of the runtime", t["runtime"], lambda: environ(t["runtime"]))
tell("open the gateway's /v1 without the token", t["gateway_port"], lambda: upgrade(t["gateway_port"], None))
tell("open the gateway's /v1 with a made-up token", t["gateway_port"], lambda: upgrade(t["gateway_port"], "0" * 64))
tell("no_new_privs", "self", no_new_privs)
tell("setuid(0)", "self", lambda: os.setuid(0))
tell("su to root", "su", su)
'''

# What each attack on berth must end in: the errno it is refused with.
REFUSED = {
    "read the token": {"EACCES"},
    "list the token's directory": {"EACCES"},
    "connect to berthd's socket and send hello": {"EACCES"},
    "list the state directory": {"EACCES"},
    "list the journal": {"EACCES"},
    "read a journal file": {"EACCES"},
    "list the artifact store": {"EACCES"},
    "read an artifact": {"EACCES"},
    "ptrace": {"EPERM"},
    # /proc is mounted hidepid=invisible: another user's process is not
    # there at all.
    "read the memory of": {"ENOENT", "EACCES", "EPERM"},
    "read the environment of": {"ENOENT", "EACCES", "EPERM"},
    "signal 0 to": {"EPERM"},
    "SIGKILL to": {"EPERM"},
    "setuid(0)": {"EPERM"},
}


def ns_pid(host_pid):
    """The pid of host_pid in berthd's namespace (what the runtime sees)."""
    return int(proc_status(host_pid, "NSpid").split()[-1])


def targets(sb, c, dirs):
    """What the attack script goes for: berth's files and processes, and
    the backend's own commands holding a secret."""
    d = scratch()
    with open(os.path.join(d, "report.txt"), "w") as f:
        f.write("the backend's artifact\n")
    c.call("artifact.publish", {"path": os.path.join(d, "report.txt")})
    store = os.path.join(sb.state_dir, "artifacts")
    journal = os.path.join(sb.state_dir, "journal")
    root_cmd = c.call("proc.start", {"argv": ["sleep", "600"], "secrets": ["BACKEND_ONLY"], "tag": "victim"})
    nobody_cmd = c.call("proc.start", {"argv": ["sleep", "600"], "user": "nobody", "secrets": ["BACKEND_ONLY"],
                                       "tag": "victim"})
    own = dirs.write(os.path.join(dirs.workspace, "notes.txt"), "the agent's own notes\n")
    return {
        "own": own,
        "token": sb.token_file,
        "socket": sb.socket,
        "gateway_port": sb.port,
        "state": sb.state_dir,
        "journal": journal,
        "journal_files": [os.path.join(journal, n) for n in sorted(os.listdir(journal))],
        "artifacts": store,
        "artifact_files": [os.path.join(store, n) for n in sorted(os.listdir(store))],
        "pids": {
            "berthd": 1,
            "the gateway": ns_pid(sb.gateway_pid()),
            "the backend's root command": root_cmd["pid"],
            "the backend's command as nobody": nobody_cmd["pid"],
        },
    }


class Attack:
    """The attack script, its targets and the script for the model: one
    bash call running it, then a final message."""

    def __init__(self, sb, c, dirs, env_names):
        self.dirs = dirs
        self.env_names = set(USER_ENV) | set(env_names) | {"RUNTIME_GRANTED"}
        c.call("secrets.set", {"BACKEND_ONLY": "backend-only-value-7f3e9a", "RUNTIME_GRANTED": "granted-value-51c2d8"})
        self.targets = targets(sb, c, dirs)
        self.script_path = os.path.join(dirs.root, "attack.py")
        with open(self.script_path, "w") as f:
            f.write(ATTACK)
        self.targets_path = os.path.join(dirs.root, "targets.json")
        self.out = os.path.join(dirs.workspace, "attacks.jsonl")
        command = "%s %s %s %s" % (PY, self.script_path, self.targets_path, self.out)
        self.model = ScriptedModel([tool_call(["bash"], command=command, description="check the boundary"),
                                    text("Checked.")], netns_of=sb.berthd_pid())
        dirs.point_at(self.model)

    def survivors(self, sb, c):
        """After the SIGKILLs: the backend's commands and the gateway run
        on."""
        victims = [p for p in c.call("proc.list")["procs"] if p.get("tag") == "victim"]
        expect_eq([p["state"] for p in victims], ["running", "running"], "the backend's commands after the attacks")
        expect_eq(ns_pid(sb.gateway_pid()), self.targets["pids"]["the gateway"], "the gateway's pid after the attacks")

    def aim(self, runtime_pid):
        with open(self.targets_path, "w") as f:
            json.dump(dict(self.targets, runtime=runtime_pid), f)

    def results(self, timeout=120):
        """What the script reported, once the bash tool's result went back
        to the model."""
        self.model.wait_tool_result(call_id(0), timeout)
        self.model.check()
        with open(self.out) as f:
            recs = [json.loads(line) for line in f]
        for r in recs:
            what = r.get("errno") or str(r.get("got", r.get("detail")))[:120]
            note("%s %s: %s %s" % (r["attack"], r["target"], r["result"], what))
        return recs

    def check(self, recs, runtime_pid):
        by = {}
        for r in recs:
            by.setdefault(r["attack"], []).append(r)
        who = by["who am I"][0]
        expect_eq(who["result"], "done", "the script said who it is")
        expect_eq((who["got"]["uid"], who["got"]["euid"]), (self.dirs.pw.pw_uid,) * 2, "the script's uid and euid")
        expect_in(runtime_pid, who["got"]["chain"], "the runtime's pid among the script's ancestors")
        expect_eq(by["the runtime's session and process group"][0].get("got"),
                  {"sid": runtime_pid, "pgid": runtime_pid}, "the runtime leads a session and a process group of its own")
        held = by["the runtime's descriptors"][0]["got"]
        berths = [t for t in held.values() if t.startswith(os.path.dirname(self.targets["token"]))]
        expect_eq(berths, [], "berth's files among the runtime's open descriptors")
        expect_eq(by["read a file of the workspace"][0]["got"], "the agent's own notes\n",
                  "the script reads a file of the agent's (it can read what is its own)")
        for r in recs:
            want = next((errs for prefix, errs in REFUSED.items() if r["attack"].startswith(prefix)), None)
            if want is None:
                continue
            got = r.get("errno") or r.get("got") or r.get("detail")
            expect(r["result"] == "refused" and r.get("errno") in want,
                   "%s (%s): %s %s, where %s was due" % (r["attack"], r["target"], r["result"], got, sorted(want)))
        expect_eq(len([r for r in recs if r["attack"].startswith("ptrace ")]), 4, "the processes attacked")
        expect_eq(len(by["read a journal file"]), len(self.targets["journal_files"]), "the journal files tried")
        expect(self.targets["journal_files"] and self.targets["artifact_files"], "nothing to read in the store")
        inherited = by["the environment this script inherited"][0]["got"]
        runtime_env = by["the environment of the runtime"][0]
        expect_eq(runtime_env["result"], "done", "the runtime's own environment is the agent's to read")
        expect_eq(sorted(runtime_env["got"]), sorted(self.env_names), "the variables of the runtime's environment")
        for env in (json.dumps(inherited), json.dumps(runtime_env["got"])):
            expect("backend-only-value-7f3e9a" not in env, "a secret not granted to the runtime is in its environment")
            expect("BACKEND_ONLY" not in env, "the name of a secret not granted is in the runtime's environment")
            expect(CANARY not in env, "berthd's own environment reached the runtime")
        expect_eq(inherited.get("RUNTIME_GRANTED"), "granted-value-51c2d8", "the secret granted to the runtime")
        expect_eq(by["no_new_privs"][0]["got"], 1, "no_new_privs in the runtime's tree")
        for r in by["open the gateway's /v1 without the token"] + by["open the gateway's /v1 with a made-up token"]:
            expect(r["result"] == "done" and r["got"].startswith("HTTP/1.1 401"), "%s: %r" % (r["attack"], r))
        su = by["su to root"][0]
        expect(su["result"] != "done" or not su["got"].startswith("rc 0"), "su to root succeeded: %r" % su)


def offline_sandbox(dirs):
    """An offline sandbox with both runtimes (granted RUNTIME_GRANTED),
    whose berthd has a variable of its own in its environment, which
    nothing it runs for a user may inherit."""
    os.environ[CANARY] = "berthd-only"
    try:
        return Sandbox(extra=runtime_sections(dirs, secrets=["RUNTIME_GRANTED"]), offline=True)
    finally:
        del os.environ[CANARY]


@case("Pi: its bash tool's attacks on the token, the socket, the state, berth's processes and secrets fail", 180)
def from_pi():
    need_program(PI, "Pi")
    dirs = AgentDirs()
    with offline_sandbox(dirs) as sb:
        c = sb.unix(timeout=30)
        attack = Attack(sb, c, dirs, ["HOME"])
        st = start_ready(c, "pi", "rpc")
        attack.aim(st["pid"])
        rpc = JsonLines(c, st["proc"])
        rpc.send({"type": "prompt", "message": "Check the boundary."})
        attack.check(attack.results(), st["pid"])
        attack.survivors(sb, c)
        rpc.until(lambda m: m.get("type") == "agent_end", 60)


@case("OpenCode: its bash tool's attacks on the token, the socket, the state, berth's processes and secrets fail", 240)
def from_opencode():
    need_program(OPENCODE, "OpenCode")
    dirs = AgentDirs()
    with offline_sandbox(dirs) as sb:
        c = sb.unix(timeout=30)
        attack = Attack(sb, c, dirs, ["HOME", "OPENCODE_SERVER_PASSWORD"] + list(OPENCODE_ENV))
        st = start_ready(c, "opencode", "server")
        attack.aim(st["pid"])
        ns, port, auth = sb.berthd_pid(), st["port"], opencode_auth(st)
        session = json.loads(netns_http(ns, port, "POST", "/session", {}, headers=auth)[2])["id"]
        prompt = {"parts": [{"type": "text", "text": "Check the boundary."}]}
        status, _, body = netns_http(ns, port, "POST", "/session/%s/message" % session, prompt, headers=auth, timeout=150)
        expect_eq(status, 200, "the prompt through OpenCode's API: %r" % body[:300])
        attack.check(attack.results(), st["pid"])
        attack.survivors(sb, c)


run()
