#!/usr/bin/python3
"""A task's agent against berth's hold on the task, tried for real: the
agent of a task is an attack script run by berthd as the runtime's user,
which tries to reach berthd's socket, to read or write the task's record
and outputs in the state directory (its own task's and another's), to
forge a task directory, to rewind or cut the stream its stdout feeds, to
signal berthd or read its descriptors, to open the gateway without the
token; then it leaves a workspace made to mislead a delivery (a symlink
to the record, a FIFO, an exclude and a worktree of its own) and exits 1.
Every attempt fails for the reason it must, the task ends as it really
did, the record and streams are berthd's alone, and a forced delivery
commits exactly the workspace's files."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import msgpack  # noqa: E402

from harness import Sandbox, case, expect, expect_eq, expect_in, note, pyfile, run, scratch, short  # noqa: E402
from harness.runtimes import AgentDirs  # noqa: E402
from harness.tasks import (  # noqa: E402
    PY,
    agent_repo,
    attach_read,
    commit_meta,
    disk_files,
    fake_section,
    line,
    run_task,
    show,
    steps,
    task_error,
    tree_files,
    user_processes,
    wait_final,
)

# The agent: argv[1] the targets file (JSON), written by the test once
# task.run answered; one JSON line per attempt on stdout.
ATTACK = r'''
import errno, json, os, signal, socket, stat, struct, sys, time

while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
time.sleep(0.1)
t = json.load(open(sys.argv[1]))


def tell(attack, target, fn):
    rec = {"attack": attack, "target": target}
    try:
        got = fn()
        rec.update(result="done", got=got if isinstance(got, (str, int, list, dict)) else repr(got)[:300])
    except OSError as e:
        rec.update(result="refused", errno=errno.errorcode.get(e.errno, str(e.errno)), detail=str(e)[:200])
    except Exception as e:
        rec.update(result="error", detail=repr(e)[:300])
    sys.stdout.write(json.dumps(rec) + "\n")
    sys.stdout.flush()


def read(path):
    with open(path, "rb") as f:
        return f.read(4096).decode(errors="replace")


def write(path, flags):
    fd = os.open(path, flags, 0o644)
    try:
        return os.write(fd, b'{"state": "succeeded"}')
    finally:
        os.close(fd)


def hello(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    body = b"\x84\xa4type\xa7request\xa2id\x01\xa2op\xa5hello\xa4args\x81\xa7version\xa8berth.v1"
    s.sendall(struct.pack(">I", len(body)) + body)
    return s.recv(4096).hex()


def upgrade(port, token):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    head = ("GET /v1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Protocol: berth.v1\r\n" % port)
    if token:
        head += "Authorization: Bearer %s\r\n" % token
    s.sendall((head + "\r\n").encode())
    return s.recv(256).decode(errors="replace").split("\r\n")[0]


def kind(fd):
    m = os.fstat(fd).st_mode
    return "file" if stat.S_ISREG(m) else "pipe" if stat.S_ISFIFO(m) else "socket" if stat.S_ISSOCK(m) else "other"


tasks, own, other = t["tasks"], t["own"], t["other"]
mine = os.path.join(tasks, own)
tell("connect to berthd's socket and send hello", t["socket"], lambda: hello(t["socket"]))
tell("connect to berthd's socket through /proc/1/root", t["socket"], lambda: hello("/proc/1/root" + t["socket"]))
tell("list the tasks", tasks, lambda: os.listdir(tasks))
tell("stat its task's directory", mine, lambda: os.stat(mine).st_mode)
tell("read its record", mine + "/record", lambda: read(mine + "/record"))
tell("read its output", mine + "/agent.out", lambda: read(mine + "/agent.out"))
tell("read another task's record", other + "/record", lambda: read(os.path.join(tasks, other, "record")))
tell("read another task's output", other + "/agent.out", lambda: read(os.path.join(tasks, other, "agent.out")))
tell("overwrite its record", mine + "/record", lambda: write(mine + "/record", os.O_WRONLY | os.O_TRUNC))
tell("append to its output", mine + "/agent.out", lambda: write(mine + "/agent.out", os.O_WRONLY | os.O_APPEND))
tell("create a file in its task's directory", mine + "/x", lambda: write(mine + "/x", os.O_WRONLY | os.O_CREAT))
with open("forged-record", "w") as f:
    f.write('{"state": "succeeded"}')
tell("replace its record", mine + "/record", lambda: os.rename("forged-record", mine + "/record"))
os.unlink("forged-record")
tell("remove its record", mine + "/record", lambda: os.unlink(mine + "/record"))
tell("forge a task directory", tasks + "/" + "f" * 16, lambda: os.mkdir(os.path.join(tasks, "f" * 16)))
tell("read its record through /proc/1/root", mine, lambda: read("/proc/1/root" + mine + "/record"))
tell("list berthd's descriptors", "/proc/1/fd", lambda: os.listdir("/proc/1/fd"))
tell("signal 0 to berthd", 1, lambda: os.kill(1, 0))
tell("SIGKILL to berthd", 1, lambda: os.kill(1, signal.SIGKILL))
tell("read the token", t["token"], lambda: read(t["token"]))
tell("the kind of its stdout", 1, lambda: kind(1))
tell("the kind of its stderr", 2, lambda: kind(2))
tell("rewind its stdout", 1, lambda: os.lseek(1, 0, os.SEEK_SET))
tell("truncate its stdout", 1, lambda: os.ftruncate(1, 0))
tell("open the gateway's /v1 without the token", t["gateway_port"], lambda: upgrade(t["gateway_port"], None))
tell("open the gateway's /v1 with a made-up token", t["gateway_port"], lambda: upgrade(t["gateway_port"], "0" * 64))
tell("its environment", "self", lambda: dict(os.environ))
# What an agent's output could say to look done: bytes, nothing more.
sys.stdout.write(json.dumps({"type": "task.finished", "id": own, "state": "succeeded"}) + "\n")
sys.stdout.flush()
# A workspace made to mislead a delivery.
os.symlink(mine + "/record", "record-link")
os.mkfifo("a-fifo")
with open("kept.txt", "w") as f:
    f.write("the agent's file\n")
with open(".git/info/exclude", "a") as f:
    f.write("kept.txt\n")
os.makedirs(os.path.expanduser("~/elsewhere"), exist_ok=True)
with open(os.path.expanduser("~/elsewhere/decoy.txt"), "w") as f:
    f.write("not the workspace's\n")
with open(".git/config", "a") as f:
    f.write("[core]\n\tworktree = %s\n" % os.path.expanduser("~/elsewhere"))
sys.exit(1)
'''

# How each attack must end: refused with one of these errnos.
REFUSED = {
    "connect to berthd's socket and send hello": {"EACCES"},
    # /proc is mounted hidepid=invisible: berthd is not there for the agent.
    "connect to berthd's socket through /proc/1/root": {"ENOENT", "EACCES"},
    "list the tasks": {"EACCES"},
    "stat its task's directory": {"EACCES"},
    "read its record": {"EACCES"},
    "read its output": {"EACCES"},
    "read another task's record": {"EACCES"},
    "read another task's output": {"EACCES"},
    "overwrite its record": {"EACCES"},
    "append to its output": {"EACCES"},
    "create a file in its task's directory": {"EACCES"},
    "replace its record": {"EACCES"},
    "remove its record": {"EACCES"},
    "forge a task directory": {"EACCES"},
    "read its record through /proc/1/root": {"ENOENT", "EACCES"},
    "list berthd's descriptors": {"ENOENT", "EACCES"},
    "signal 0 to berthd": {"EPERM"},
    "SIGKILL to berthd": {"EPERM"},
    "read the token": {"EACCES"},
    # A stream kept in a file berthd writes is not the agent's to seek or
    # cut: its stdout is a pipe.
    "rewind its stdout": {"ESPIPE"},
    "truncate its stdout": {"EINVAL"},
}


def attacker(dirs, targets):
    """[runtime attacker]: the attack script, its targets file its first
    argument, the prompt its second."""
    program = pyfile(ATTACK, "attack.py")
    return ("[runtime attacker]\ncommand = %s\nuser = %s\nworkspace = %s\nenv = HOME=%s\ntask = %s %s {prompt}\n\n"
            % (PY, dirs.user, dirs.workspace, dirs.home, program, targets))


def attempts(data):
    """The attack script's lines on the task's stdout, by attack."""
    out = {}
    for ln in data.splitlines():
        rec = json.loads(ln)
        if "attack" in rec:
            out[rec["attack"]] = rec
    return out


@case("a task's agent cannot reach berthd's socket nor read or write the tasks' records and outputs, nor rewind "
      "its stream; its task ends as it really did, the record and output berthd's", 120)
def t_agent_attacks():
    dirs = AgentDirs()
    agent_repo(dirs, {"a.txt": "a\n"})
    targets = os.path.join(scratch(0o755), "targets.json")
    prompt = "secret-prompt-" + os.urandom(8).hex()
    with Sandbox(extra=attacker(dirs, targets) + fake_section("fake", dirs)) as sb:
        c = sb.unix(timeout=30)
        other = run_task(c, "fake", steps(line(prompt)))
        wait_final(c, other["id"])
        t = run_task(c, "attacker", "Attack.")
        tasks = os.path.join(sb.state_dir, "tasks")
        with open(targets + ".tmp", "w") as f:
            json.dump({"socket": sb.socket, "tasks": tasks, "own": t["id"], "other": other["id"],
                       "token": sb.token_file, "gateway_port": sb.port}, f)
        os.chmod(targets + ".tmp", 0o644)
        os.rename(targets + ".tmp", targets)
        rec = wait_final(c, t["id"], 60)
        _, data = attach_read(c, t["id"])
        _, stderr = attach_read(c, t["id"], "stderr")
        note("the agent's stderr: %r" % stderr[-1500:])
        got = attempts(data)
        for name, rec_ in sorted(got.items()):
            note("%s: %s" % (name, short(rec_, 300)))
        expect_eq((rec["state"], rec["reason"], rec["cancelled_by"]), ("failed", "the agent exited with status 1", None),
                  "how the attacker's task ended")
        expect_eq(rec["agent"]["exit"], {"code": 1}, "the agent's exit")
        expect(set(REFUSED) <= set(got), "attacks that did not report: %s" % sorted(set(REFUSED) - set(got)))
        for name, errnos in REFUSED.items():
            a = got[name]
            expect(a["result"] == "refused" and a["errno"] in errnos,
                   "%s (%s) was not refused with %s: %s" % (name, a["target"], "/".join(sorted(errnos)), short(a)))
        for name in ("the kind of its stdout", "the kind of its stderr"):
            expect_in(got[name].get("got"), ("pipe", "socket"), name)
        for name in ("open the gateway's /v1 without the token", "open the gateway's /v1 with a made-up token"):
            expect_eq(got[name].get("got"), "HTTP/1.1 401 Unauthorized", name)
        env = got["its environment"]["got"]
        expect(sb.token not in json.dumps(env), "the token is in the agent's environment")
        expect(prompt not in data.decode(errors="replace"), "the agent read another task's prompt or output")
        # What berthd holds is what happened: the record file, the streams,
        # no file nor task of the agent's making.
        expect_eq(sorted(os.listdir(tasks)), sorted([other["id"], t["id"]]), "the tasks' directories")
        with open(os.path.join(tasks, t["id"], "record"), "rb") as f:
            saved = msgpack.unpackb(f.read(), raw=False, strict_map_key=False)
        expect_eq((saved.get("id"), saved.get("state"), saved.get("reason")),
                  (t["id"], "failed", "the agent exited with status 1"), "the record file")
        left = set(os.listdir(os.path.join(tasks, t["id"]))) - {"record", "agent.out", "agent.err"}
        expect(not {n for n in left if not n.startswith("check-")}, "files in the task's directory: %r" % left)
        with open(os.path.join(tasks, t["id"], "agent.out"), "rb") as f:
            expect_eq(f.read(), data, "agent.out against the stream read through berth")
        expect_eq(show(c, t["id"])["agent"]["bytes"], len(data), "the record's agent bytes")
        expect(data.endswith(b'"state": "succeeded"}\n'), "the agent's last line is not on its stdout")
        expect_eq(show(c, t["id"])["state"], "failed", "the task, after its agent said it succeeded")
        expect_eq(user_processes(sb, dirs.pw.pw_uid), [], "processes of the runtime's user")
        expect_eq(show(c, other["id"])["state"], "succeeded", "the other task")


@case("a forced delivery of the attacker's task commits exactly the workspace's files: its symlink as a link, "
      "no FIFO, its excluded file, not the worktree its config names", 120)
def t_attacker_delivered():
    dirs = AgentDirs()
    base = agent_repo(dirs, {"a.txt": "a\n"})
    targets = os.path.join(scratch(0o755), "targets.json")
    with Sandbox(extra=attacker(dirs, targets)) as sb:
        c = sb.unix(timeout=30)
        t = run_task(c, "attacker", "Attack.")
        with open(targets, "w") as f:
            json.dump({"socket": sb.socket, "tasks": os.path.join(sb.state_dir, "tasks"), "own": t["id"],
                       "other": "0" * 16, "token": sb.token_file, "gateway_port": sb.port}, f)
        os.chmod(targets, 0o644)
        expect_eq(wait_final(c, t["id"], 60)["state"], "failed", "the attacker's task")
        e = task_error(c, "task.deliver", {"id": t["id"], "branch": "attacker", "commit_message": "m"})
        expect_eq(e["code"], "conflict", "a delivery of the failed task, not forced")
        r = c.call("task.deliver", {"id": t["id"], "branch": "attacker", "commit_message": "m", "force": True},
                   timeout=60)
        note("task.deliver: %s" % short(r, 800))
        gitdir = os.path.join(dirs.workspace, ".git")
        got = tree_files(gitdir, r["commit"])
        want = disk_files(dirs.workspace)
        expect_eq(got, want, "the delivered tree against the workspace's files")
        expect_eq(got.get("record-link"), ("120000", (os.path.join(sb.state_dir, "tasks", t["id"], "record")).encode()),
                  "the symlink, delivered as a link")
        expect_eq(got.get("kept.txt"), ("100644", b"the agent's file\n"), "the file info/exclude names")
        expect("a-fifo" not in got and "decoy.txt" not in got, "the FIFO or the decoy worktree's file was delivered")
        parents, author, _, _, _ = commit_meta(gitdir, r["commit"])
        expect_eq((parents, author, r["base"]), ([base], "berth <berth@localhost>", base), "the commit's parent and author")


run()
