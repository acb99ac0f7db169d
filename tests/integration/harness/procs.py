"""This host's side: polling, scratch directories, free ports and X
display numbers, /proc, and programs run beside the test."""

import contextlib
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import deque

from .paths import SRCDIR
from .runner import TestFailure, Timeout, expect, track_closer


def wait_for(pred, timeout=5.0, what="condition", interval=0.02):
    """Polls pred() until it returns something true, and returns that.
    Fails with what after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise Timeout("%s: not within %.1f s" % (what, timeout))
        time.sleep(interval)


def scratch(mode=0o755):
    """A directory of the case's own, removed when the case ends."""
    d = tempfile.mkdtemp(prefix="berth-it-")
    os.chmod(d, mode)
    track_closer(lambda: shutil.rmtree(d, ignore_errors=True))
    return d


def shfile(body, mode=0o755, name="prog", d=None):
    """A shell script of body, in d or a scratch directory of its own,
    executable by anyone (mode); its path."""
    path = os.path.join(d if d is not None else scratch(0o755), name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, mode)
    return path


def process_texts():
    """(pid, "cmdline" or "environ", bytes) of every process of the host
    (a sandbox's included), read as root: where a secret must not be."""
    texts = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open("/proc/%s/%s" % (pid, what), "rb") as f:
                    texts.append((pid, what, f.read()))
            except OSError:
                pass
    return texts


def files_under(root):
    """(path, bytes) of every file under root that can be read."""
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                with open(p, "rb") as fh:
                    yield p, fh.read()
            except OSError:
                pass


def pyfile(body, name="prog.py"):
    """A Python script anyone can read, in a scratch directory; its
    path."""
    path = os.path.join(scratch(0o755), name)
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, 0o644)
    return path


X11_DIR = "/tmp/.X11-unix"


def display_free(n):
    """Neither a socket file, a lock file nor an abstract socket for :n."""
    if os.path.exists("%s/X%d" % (X11_DIR, n)) or os.path.exists("/tmp/.X%d-lock" % n):
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind("\0%s/X%d" % (X11_DIR, n))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_display():
    """An X display number nothing uses, for an X server of the test's."""
    for _ in range(200):
        n = random.randint(150, 899)
        if display_free(n):
            return n
    raise AssertionError("no free X display number")


def forget_display(n):
    """What an X server killed with its namespace leaves behind."""
    for path in ("%s/X%d" % (X11_DIR, n), "/tmp/.X%d-lock" % n):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def free_port():
    """A TCP port nobody listens on right now (the kernel's pick)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def proc_children(pid):
    """Host pids of pid's children (every thread's), [] if pid is gone."""
    kids = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                kids.extend(int(x) for x in f.read().split())
    except (FileNotFoundError, ProcessLookupError):
        pass
    return kids


def proc_argv(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0")[:-1]]
    except (FileNotFoundError, ProcessLookupError):
        return []


def proc_stat(pid):
    """(comm, state, ppid) of pid, or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # comm is in parentheses and may itself hold spaces or parentheses.
    lpar, rpar = s.index("("), s.rindex(")")
    rest = s[rpar + 2 :].split()
    return s[lpar + 1 : rpar], rest[0], int(rest[1])


def proc_status(pid, field):
    """A field of /proc/PID/status ("Seccomp", "State"...), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key == field:
                    return value.strip()
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def pid_alive(pid):
    """Whether pid exists and is not a zombie."""
    st = proc_stat(pid)
    return st is not None and st[1] != "Z"


def host_processes():
    """Every process of the host as {pid: (comm, state, ppid)}."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None:
                out[int(name)] = st
    return out


class Spawned:
    """A program running beside the test, its stdout read line by line
    (stderr kept for diagnostics); with writable, write() feeds its stdin.
    Killed at the end of the case if the case did not stop it."""

    def __init__(self, argv, env=None, writable=False):
        self.argv = argv
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if writable else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._lines = deque()
        self._partial = b""
        self._err = b""
        self._eof = False
        track_closer(self.kill)

    def _pump(self, timeout):
        """Reads what stdout and stderr have, waiting up to timeout."""
        fds = [f for f in (self.proc.stdout, self.proc.stderr) if not f.closed]
        if not fds:
            time.sleep(timeout)
            return
        ready, _, _ = select.select(fds, [], [], timeout)
        for f in ready:
            chunk = os.read(f.fileno(), 65536)
            if f is self.proc.stderr:
                self._err += chunk
                if not chunk:
                    f.close()
                continue
            if not chunk:
                self._eof = True
                f.close()
                if self._partial:
                    self._lines.append(self._partial.decode(errors="replace"))
                    self._partial = b""
                continue
            *whole, self._partial = (self._partial + chunk).split(b"\n")
            self._lines.extend(w.decode(errors="replace") for w in whole)

    def line(self, timeout=10.0):
        """The next line of stdout (without its newline); Timeout, or
        TestFailure at the end of the output."""
        deadline = time.monotonic() + timeout
        while not self._lines:
            if self._eof:
                raise TestFailure("%s ended its output (stderr: %r)" % (self.argv[0], self.stderr()))
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("no line from %s within %.1f s (stderr: %r)" % (self.argv[0], timeout, self.stderr()))
            self._pump(left)
        return self._lines.popleft()

    def stderr(self):
        return self._err.decode(errors="replace")

    def write(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends sig and waits: returns the exit status."""
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Timeout("%s did not exit within %.1f s of signal %d" % (self.argv[0], timeout, sig))
        while not (self.proc.stderr.closed and self.proc.stdout.closed):
            self._pump(0.1)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None and not f.closed:
                f.close()


@contextlib.contextmanager
def running(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw):
    """A program the with block drives (its Popen): killed if it still runs
    when the block ends, however it ends, then waited for, its pipes
    closed."""
    with subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, **kw) as p:
        try:
            yield p
        finally:
            if p.poll() is None:
                p.kill()


def run_program(argv, timeout=15.0, input=None, env=None, text=True):
    """Runs a program to completion: (status, stdout, stderr str); stdout
    is str, or bytes without text."""
    try:
        p = subprocess.run(
            argv,
            input=input,
            capture_output=True,
            timeout=timeout,
            env=env,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise Timeout("%s did not finish within %.1f s (stderr: %r)" % (" ".join(argv), timeout, e.stderr))
    out = p.stdout.decode(errors="replace") if text else p.stdout
    return p.returncode, out, p.stderr.decode(errors="replace")


def need(*programs):
    """The programs are part of ./dev test's install: missing is a failure."""
    for p in programs:
        expect(shutil.which(p) is not None, "%s is not installed (./dev test installs it)" % p)


def browser_script(script, *args, timeout=90):
    """Runs tests/browser/SCRIPT with node and Playwright's client (from
    $BERTH_NODE_MODULES, else .node/ in the sources) and returns the JSON
    object of its last line that starts with "{"; the case fails if it
    printed none, exited with a status or reported an error."""
    modules = os.environ.get("BERTH_NODE_MODULES") or os.path.join(SRCDIR, ".node", "node_modules")
    expect(
        os.path.isdir(os.path.join(modules, "playwright-core")),
        "no playwright-core in %s (./dev test installs it; or set BERTH_NODE_MODULES)" % modules,
    )
    env = dict(os.environ, NODE_PATH=modules)
    rc, out, err = run_program(["node", os.path.join(SRCDIR, "tests", "browser", script)] + list(args), timeout, env=env)
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    expect(lines, "%s printed no result (status %d): %s %s" % (script, rc, out, err[-2000:]))
    result = json.loads(lines[-1])
    expect(rc == 0 and "error" not in result, "%s failed: %r\n%s" % (script, result, err[-2000:]))
    return result
