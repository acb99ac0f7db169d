"""Task runs (task.*) from the test's side: a fake runtime whose prompt is
its script, the runtime sections of it and of the real runtimes' task
modes, a task's end, its streams read whole, its events, the runtime
user's processes and cgroups of a sandbox, a watch for a credential in
every process's cmdline and environ, and git trees and commits read back
to compare a delivery with the workspace.

    dirs = AgentDirs()
    with Sandbox(extra=fake_section("fake", dirs)) as sb:
        c = sb.unix()
        t = c.call("task.run", {"runtime": "fake", "prompt": steps(out(1 << 20, "s"), exit_with(0))})
        rec = wait_final(c, t["id"])
        _, data = attach_read(c, t["id"])

The fake runtime is a Python program run as the runtime's user: its
prompt (its one argument, or its stdin with task args without {prompt})
is a JSON list of steps it takes in order: report what it is and has,
write or remove workspace files, write known bytes to stdout at a pace,
sleep, leave a daemon behind, run a shell command, exit or kill itself.
"""

import json
import os
import stat
import subprocess
import threading
import time

import websockets

from .clients import WsClient
from .gitserver import GIT, GIT_ENV
from .limits import cgroup_dir, cgroups_of
from .netns import netns_connect
from .procs import proc_status, process_texts, pyfile, wait_for
from .runner import TestFailure, Timeout, expect, expect_eq, track_closer
from .runtimes import OPENCODE, OPENCODE_ENV, PI
from .streams import read_to_eof

PY = "/usr/bin/python3"
STATES = ("queued", "running", "checking", "succeeded", "failed", "cancelled", "timed_out", "interrupted")
FINAL = ("succeeded", "failed", "cancelled", "timed_out", "interrupted")

# The bytes a fake writes for a seed: SHA-256 blocks of "seed:i", so no
# two 32-byte blocks are alike, and every byte value occurs. The fake and
# the test define it from this one text.
PATTERN_SRC = r'''
def pattern(seed, n):
    import hashlib
    blocks = (n + 31) // 32
    return b"".join(hashlib.sha256(("%s:%d" % (seed, i)).encode()).digest() for i in range(blocks))[:n]
'''
_ns = {}
exec(PATTERN_SRC, _ns)
pattern = _ns["pattern"]

FAKE_SRC = PATTERN_SRC + r'''
import json, os, resource, signal, subprocess, sys, time

def report(step):
    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split(":", 1)[1].strip()
    with open("/proc/self/cgroup") as f:
        cgroup = f.read()
    line = {"how": HOW, "prompt_bytes": len(PROMPT.encode()), "argv": sys.argv, "uid": os.getuid(),
            "gid": os.getgid(), "groups": os.getgroups(), "cwd": os.getcwd(), "env": dict(os.environ),
            "no_new_privs": status("NoNewPrivs"), "cap_eff": status("CapEff"), "cap_bnd": status("CapBnd"),
            "cgroup": cgroup, "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE))}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()

def out(step):
    data = pattern(step["seed"], step["n"])
    chunk, pace = step.get("chunk", 65536), step.get("pace", 0)
    for i in range(0, len(data), chunk):
        sys.stdout.buffer.write(data[i:i + chunk])
        sys.stdout.buffer.flush()
        if pace:
            time.sleep(pace)

def daemon(step):
    # Twice forked and in a session of its own: no descendant, no process
    # group of the agent's.
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for fd in (0, 1, 2):
                os.dup2(os.open("/dev/null", os.O_RDWR), fd)
            time.sleep(step["daemon"])
            with open(step["mark"], "w") as f:
                f.write("the daemon outlived its task\n")
        os._exit(0)
    os.wait()

def run(step):
    if "report" in step:
        report(step)
    elif "write" in step:
        with open(step["write"], "w") as f:
            f.write(step["text"])
    elif "remove" in step:
        os.unlink(step["remove"])
    elif "out" in step:
        out(step["out"])
    elif "line" in step:
        sys.stdout.write(step["line"] + "\n")
        sys.stdout.flush()
    elif "err" in step:
        sys.stderr.write(step["err"])
        sys.stderr.flush()
    elif "sleep" in step:
        time.sleep(step["sleep"])
    elif "daemon" in step:
        daemon(step)
    elif "wait_file" in step:
        deadline = time.monotonic() + step.get("timeout", 60)
        while not os.path.exists(step["wait_file"]) and time.monotonic() < deadline:
            time.sleep(0.05)
    elif "sh" in step:
        r = subprocess.run(["/bin/sh", "-c", step["sh"]], stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0 and step.get("must", True):
            sys.stderr.write("sh failed (%d): %s\n" % (r.returncode, step["sh"]))
            sys.exit(97)
    elif "exit" in step:
        sys.exit(step["exit"])
    elif "kill" in step:
        os.kill(os.getpid(), step["kill"])
        time.sleep(10)

if len(sys.argv) > 1:
    HOW, PROMPT = "argv", sys.argv[1]
else:
    # Read to the end: a stdin left open would hang here.
    HOW, PROMPT = "stdin", sys.stdin.read()
for step in json.loads(PROMPT):
    run(step)
'''


def fake_program():
    """The fake runtime's program, anyone can read; its path."""
    return pyfile(FAKE_SRC, "fake_agent.py")


# -- the steps of a fake's prompt

def steps(*s):
    """A fake's prompt: its steps as JSON."""
    return json.dumps(list(s))


def report():
    return {"report": True}


def write(path, text):
    return {"write": path, "text": text}


def remove(path):
    return {"remove": path}


def out(n, seed, chunk=65536, pace=0.0):
    """n bytes of pattern(seed, n) on stdout, chunk by chunk, pace seconds
    apart."""
    return {"out": {"n": n, "seed": seed, "chunk": chunk, "pace": pace}}


def line(text):
    return {"line": text}


def err(text):
    return {"err": text}


def sleep(s):
    return {"sleep": s}


def daemon(seconds, mark):
    """A process that leaves the agent's tree and session, then writes
    mark after seconds (if it is still alive)."""
    return {"daemon": seconds, "mark": mark}


def wait_file(path, timeout=60):
    return {"wait_file": path, "timeout": timeout}


def sh(cmd, must=True):
    """A shell command (its output on stderr); must: the fake exits 97 if
    it fails."""
    return {"sh": cmd, "must": must}


def exit_with(code):
    return {"exit": code}


def kill_self(sig):
    return {"kill": sig}


# -- runtime sections

def _section(name, command, dirs, task, busy=None, lines=()):
    text = "[runtime %s]\ncommand = %s\nuser = %s\nworkspace = %s\nenv = HOME=%s\ntask = %s\n" % (
        name, command, dirs.user, dirs.workspace, dirs.home, task)
    if busy:
        text += "busy = %s\n" % busy
    return text + "".join(ln + "\n" for ln in lines) + "\n"


def fake_section(name, dirs, prompt_arg=True, busy=None, lines=(), program=None):
    """[runtime NAME] running the fake as dirs.user in dirs.workspace: the
    prompt its argument ({prompt}), or its stdin."""
    task = (program or fake_program()) + (" {prompt}" if prompt_arg else "")
    return _section(name, PY, dirs, task, busy, lines)


def real_sections(dirs, busy=None, env=None, lines=()):
    """[runtime opencode] and [runtime pi] in their task modes, as the
    desktop image has them, in dirs.workspace with dirs.home as HOME
    (AgentDirs.point_at sets their model)."""
    more = tuple("env = %s=%s" % kv for kv in sorted((env or {}).items())) + tuple(lines)
    oc = tuple("env = %s=%s" % kv for kv in OPENCODE_ENV.items())
    return (_section("opencode", OPENCODE, dirs, "run --format json -- {prompt}", busy, oc + more)
            + _section("pi", PI, dirs, "--mode json -p", busy, more))


# -- ops

def run_task(c, runtime, prompt, timeout=30, **args):
    """task.run; its result, checked for its shape."""
    r = c.call("task.run", dict(args, runtime=runtime, prompt=prompt), timeout=timeout)
    expect(isinstance(r.get("id"), str) and len(r["id"]) == 16 and all(ch in "0123456789abcdef" for ch in r["id"]),
           "task.run's id is not 16 hex digits: %r" % r)
    expect(r.get("state") in ("running", "queued"), "task.run's state: %r" % r)
    return r


def show(c, task_id, timeout=30):
    return c.call("task.show", {"id": task_id}, timeout=timeout)


def wait_state(c, task_id, states, timeout=60.0, what=None):
    """task.show until the task's state is one of states; the record."""
    states = (states,) if isinstance(states, str) else tuple(states)
    seen = []

    def reached():
        rec = show(c, task_id)
        if not seen or seen[-1] != rec["state"]:
            seen.append(rec["state"])
        return rec if rec["state"] in states else None

    try:
        return wait_for(reached, timeout, what or "task %s %s" % (task_id, "/".join(states)), 0.05)
    except TestFailure as e:
        raise TestFailure("%s (states seen: %s)" % (e, seen))


def wait_final(c, task_id, timeout=60.0):
    return wait_state(c, task_id, FINAL, timeout, "task %s to end" % task_id)


def stream_name(task_id, stream="agent"):
    """The name of a task's stream in data messages."""
    return "task/%s/%s" % (task_id, stream)


def attach_read(c, task_id, stream="agent", from_offset=0, timeout=60.0):
    """task.attach, then every byte to the stream's end (eof), each chunk
    following the last: (attach's result, bytes)."""
    args = {"id": task_id, "from_offset": from_offset}
    if stream != "agent":
        args["stream"] = stream
    r = c.call("task.attach", args, timeout=timeout)
    expect_eq((r["id"], r["offset"]), (task_id, from_offset), "task.attach's id and offset")
    name = stream_name(task_id, stream)
    data = read_to_eof(c, [name], {name: from_offset}, timeout)[name]
    return r, data


def task_error(c, op, args, timeout=30):
    """The error map of a request that must fail."""
    r = c.request(op, args, timeout=timeout)
    expect(not r.get("ok"), "%s %s succeeded where an error was expected: %s" % (op, _brief(args), _brief(r)))
    return r["error"]


def _brief(obj, limit=300):
    s = repr(obj)
    return s if len(s) <= limit else s[:limit] + "..."


def task_events(sb, task_id=None):
    """The journal's task.* events (of task_id): [(kind, data)]."""
    return [(e["kind"], e["data"]) for e in sb.events()
            if e["kind"].startswith("task.") and (task_id is None or e["data"].get("id") == task_id)]


def listed_ids(c, **filters):
    return [t["id"] for t in c.call("task.list", filters, timeout=30)["tasks"]]


def expect_code(err, code, what):
    expect_eq(err.get("code"), code, "the error code of %s (%r)" % (what, err))


def ws_of(sb, timeout=15.0):
    """A WebSocket client of sb's gateway with its token, retried while
    the gateway is away (a restart); in an offline sandbox, through its
    network namespace."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if not sb.offline:
                return sb.ws(timeout=30.0)
            sock = netns_connect(sb.berthd_pid(), sb.port, 5)
            c = WsClient(sb.url, token=sb.token, timeout=30.0, sock=sock)
            sb.clients.append(c)
            return c
        except (OSError, TestFailure, websockets.WebSocketException) as e:
            if time.monotonic() > deadline:
                raise Timeout("no WebSocket to the gateway within %.1f s: %r" % (timeout, e))
            time.sleep(0.05)


# -- processes and groups

def user_processes(sb, uid):
    """Host pids of the sandbox's processes running as uid (zombies
    included: a process not reaped is not gone)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        uids = proc_status(int(name), "Uid")
        if uids and int(uids.split()[0]) == uid and sb.in_namespace(int(name)):
            out.append(int(name))
    return out


def task_groups(pid, task_id):
    """The directories of pid's cgroups that are the task's own (named
    after task ID), in every hierarchy."""
    out = []
    for hier, path in cgroups_of(pid).items():
        if "task" in path and task_id in path:
            d = cgroup_dir(hier, path)
            if d:
                out.append(d)
    return out


def group_members(d):
    """The pids in cgroup directory d ([] once it is gone)."""
    try:
        with open(os.path.join(d, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


# -- a credential, nowhere



class ProcessWatch:
    """A thread that reads every process's cmdline and environ, over and
    over until stop(): where any of secrets appears (found), and which
    processes with a word of marks in their cmdline it saw (seen)."""

    def __init__(self, secrets, marks=()):
        self.secrets = [s.encode() for s in secrets]
        self.marks = [m.encode() for m in marks]
        self.found, self.seen = [], set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        track_closer(self.stop)

    def _watch(self):
        while not self._stop.is_set():
            for pid, what, text in process_texts():
                if what == "cmdline":
                    self.seen.update(m.decode() for m in self.marks if m in text)
                for s in self.secrets:
                    if s in text:
                        self.found.append((pid, what, text[:200]))
            self._stop.wait(0.01)

    def stop(self):
        self._stop.set()
        self._thread.join(5)


def wait_quiet(pred, seconds):
    """pred() holds throughout seconds (polled): for "nothing happens"."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pred():
            return False
        time.sleep(0.05)
    return True


# -- git, as the test and as the runtime's user

def gitb(*args, cwd=None):
    """git as the test, its stdout as bytes."""
    r = subprocess.run([GIT, "-c", "safe.directory=*", *args], cwd=cwd, env=GIT_ENV, capture_output=True, timeout=60)
    if r.returncode != 0:
        raise TestFailure("git %s: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout


def tree_files(gitdir, commit):
    """{path: (mode, bytes)} of commit's tree."""
    files = {}
    for entry in gitb("--git-dir", gitdir, "ls-tree", "-r", "-z", commit).split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, _, sha = meta.decode().split()
        files[path.decode()] = (mode, gitb("--git-dir", gitdir, "cat-file", "blob", sha))
    return files


def disk_files(root, skip=()):
    """{path: (mode, bytes)} of the files under root as git would record
    them (regular files and symlinks; git has nothing for a FIFO or a
    socket), .git and the paths of skip left out."""
    files = {}
    for d, subdirs, names in os.walk(root):
        subdirs[:] = [s for s in subdirs if s != ".git" and os.path.relpath(os.path.join(d, s), root) not in skip]
        # A symlink to a directory is listed with the directories.
        for n in names + [s for s in subdirs if os.path.islink(os.path.join(d, s))]:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if rel in skip:
                continue
            if stat.S_ISLNK(st.st_mode):
                files[rel] = ("120000", os.readlink(p).encode())
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    files[rel] = ("100755" if st.st_mode & 0o100 else "100644", f.read())
    return files


def commit_meta(gitdir, commit):
    """(parents, author line, committer line, message, raw) of commit."""
    raw = gitb("--git-dir", gitdir, "cat-file", "commit", commit).decode()
    head, _, message = raw.partition("\n\n")
    fields = [ln.split(" ", 1) for ln in head.splitlines() if " " in ln]
    parents = [v for k, v in fields if k == "parent"]
    author = [v for k, v in fields if k == "author"][0].rsplit(" ", 2)[0]
    committer = [v for k, v in fields if k == "committer"][0].rsplit(" ", 2)[0]
    return parents, author, committer, message, raw


def read_artifact(c, ref):
    data = bytearray()
    while True:
        r = c.call("artifact.read", {"id": ref["id"], "offset": len(data)}, timeout=30)
        data += r["data"]
        if r["eof"]:
            return bytes(data)


def agent_git(dirs, *args):
    """git as the runtime's user in its workspace."""
    env = ["PATH=/usr/bin:/bin", "HOME=" + dirs.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
           "GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.invalid", "GIT_COMMITTER_NAME=Agent",
           "GIT_COMMITTER_EMAIL=agent@example.invalid"]
    r = subprocess.run(["runuser", "-u", dirs.user, "--", "env", "-i", *env, GIT, "-C", dirs.workspace, *args],
                       capture_output=True, timeout=60)
    expect_eq(r.returncode, 0, "git %s as the runtime's user (%r)" % (" ".join(args), r.stderr[-300:]))
    return r.stdout.decode().strip()


def agent_repo(dirs, files):
    """The workspace as a repository of the runtime's user with one
    commit of files; the commit's id."""
    for path, content in files.items():
        dirs.write(os.path.join(dirs.workspace, path), content)
    agent_git(dirs, "init", "-q", "-b", "main")
    agent_git(dirs, "add", "-A")
    agent_git(dirs, "commit", "-q", "-m", "start")
    return agent_git(dirs, "rev-parse", "HEAD")
