"""What the peers' scenarios need beside a Sandbox: berthd (or tini, or
dumb-init) started by a dirty parent, by a parent that goes away, or in
a background process group of a terminal; the peers run as PID 1 of a
namespace of their own; and what /proc says of signal masks."""

import os
import pty
import shutil
import signal
import subprocess
import threading

from .paths import BERTHD
from .procs import host_processes, pid_alive, proc_argv, proc_children, proc_status, wait_for
from .runner import expect, note, track_closer
from .sandbox import Sandbox

PYTHON = "/usr/bin/python3"

# Execs argv[3:] with the signals named in argv[1] blocked and those in
# argv[2] ignored ("-" for none): a parent that left its mess behind.
DIRTY = """
import os, signal, sys
names = lambda s: [] if s == "-" else [getattr(signal, "SIG" + n) for n in s.split(",")]
signal.pthread_sigmask(signal.SIG_BLOCK, names(sys.argv[1]))
for s in names(sys.argv[2]):
    signal.signal(s, signal.SIG_IGN)
os.execvp(sys.argv[3], sys.argv[3:])
"""

# Forks argv[1:] and waits for it, exiting as it did: a parent that can
# be killed while its child lives on.
PARENT = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) & 255)
"""

# On the terminal that is its stdin, as the session's leader: turns on
# TOSTOP, forks argv[1:] into a process group of its own (in the
# background: the leader's group keeps the foreground), and waits.
BACKGROUND = """
import fcntl, os, sys, termios
fcntl.ioctl(0, termios.TIOCSCTTY, 0)
attrs = termios.tcgetattr(0)
attrs[3] |= termios.TOSTOP
termios.tcsetattr(0, termios.TCSANOW, attrs)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.execvp(sys.argv[1], sys.argv[1:])
os.setpgid(pid, pid)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) & 255)
"""


def dirty(block=(), ignore=()):
    """The argv prefix that runs a program as a dirty parent would: with
    block blocked and ignore at SIG_IGN (names without SIG)."""
    return [PYTHON, "-c", DIRTY, ",".join(block) or "-", ",".join(ignore) or "-"]


def parent():
    """The argv prefix that runs a program as the child of a parent that
    waits for it (and can be killed)."""
    return [PYTHON, "-c", PARENT]


def descendants(pid):
    """Host pids under pid, nearest first."""
    out, todo = [], [pid]
    while todo:
        kids = proc_children(todo.pop(0))
        out += kids
        todo += kids
    return out


def named(argv0, among):
    """The first of the pids among that runs argv0 (its basename)."""
    for p in among:
        argv = proc_argv(p)
        if argv and os.path.basename(argv[0]) == argv0:
            return p
    return None


def pids_running(argv):
    """Host pids whose command line is argv, live ones only."""
    return [p for p in host_processes() if proc_argv(p) == argv and pid_alive(p)]


def kill_pids(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def sigsets(pid):
    """{"SigBlk": set, "SigIgn": set} of signal numbers of pid, leaving
    out 32 and 33 (the C library's own, which sigaction cannot reset)."""
    out = {}
    for field in ("SigBlk", "SigIgn"):
        bits = int(proc_status(pid, field) or "0", 16)
        out[field] = {n for n in range(1, 65) if bits & (1 << (n - 1)) and n not in (32, 33)}
    return out


def signames(nums):
    return sorted(signal.Signals(n).name if n in signal.Signals._value2member_map_ else str(n) for n in nums)


class WrappedSandbox(Sandbox):
    """A Sandbox whose berthd is started through wrap (an argv prefix put
    right before berthd, inside unshare for PID 1). berthd may be the
    wrapper's exec or its child: its pid is found under the wrapper."""

    def __init__(self, wrap=(), **kw):
        self.wrap = list(wrap)
        super().__init__(**kw)

    def command(self):
        cmd = super().command()
        i = cmd.index(BERTHD)
        return cmd[:i] + self.wrap + cmd[i:]

    def berthd_pid(self, timeout=5.0):
        def find():
            self._check_running("berthd's pid")
            argv = proc_argv(self.proc.pid)
            if argv and os.path.basename(argv[0]) == "berthd":
                return self.proc.pid
            return named("berthd", descendants(self.proc.pid))

        return wait_for(find, timeout, "berthd's host pid")


class Terminal:
    """A new pseudo-terminal: slave to hand to a program (closed here
    once it has it), and all it wrote read from the master side."""

    def __init__(self):
        self.master, self.slave = pty.openpty()
        track_closer(lambda: os.close(self.master))
        self.out = b""

    def started(self):
        os.close(self.slave)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.out += chunk

    def text(self):
        return self.out.decode(errors="replace")


class TtySandbox(WrappedSandbox):
    """berthd (a plain process unless pid1) in a background process group
    of a new terminal with TOSTOP set, its stdout and stderr that
    terminal: what it writes is read from the master side (log())."""

    def __init__(self, **kw):
        self.tty = None
        kw.setdefault("pid1", False)
        super().__init__(wait="socket", **kw)

    def start(self, wait="socket"):
        self.tty = Terminal()
        slave = self.tty.slave
        self.proc = subprocess.Popen(
            [PYTHON, "-c", BACKGROUND] + self.command(), stdin=slave, stdout=slave, stderr=slave, start_new_session=True
        )
        self.tty.started()
        if wait:
            self.wait_socket()

    def log(self):
        return self.tty.text() if self.tty else ""


class Peer:
    """tini or dumb-init (argv) run as PID 1 of a new PID namespace,
    through prefix (an argv put before it, inside the namespace), or as
    a plain process (ns=False). Killed with its namespace at the end of
    the case."""

    def __init__(self, argv, ns=True, prefix=(), outer=(), **popen):
        expect(shutil.which(argv[0]) is not None, "%s is not installed (./dev test installs it)" % argv[0])
        self.name = argv[0]
        cmd = list(outer) + (["unshare", "-p", "-f", "--mount-proc"] if ns else []) + list(prefix) + argv
        popen.setdefault("stdin", subprocess.DEVNULL)
        popen.setdefault("stdout", subprocess.DEVNULL)
        popen.setdefault("stderr", subprocess.DEVNULL)
        self.proc = subprocess.Popen(cmd, start_new_session=True, **popen)
        track_closer(self.kill)

    def pid(self, timeout=5.0):
        """The peer's host pid, once it runs."""

        def find():
            argv = proc_argv(self.proc.pid)
            if argv and os.path.basename(argv[0]) == self.name:
                return self.proc.pid
            return named(self.name, descendants(self.proc.pid))

        return wait_for(find, timeout, "%s's host pid" % self.name)

    def wait(self, timeout=10.0):
        """Its exit status, or None if it still runs after timeout."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        for p in [self.proc.pid] + descendants(self.proc.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            note("%s did not go after SIGKILL" % self.name)

    def signal(self, sig):
        os.kill(self.pid(), sig)


class TtyPeer(Peer):
    """A peer, a plain process in a background group of a new terminal
    with TOSTOP set; what it writes there is tty.text()."""

    def __init__(self, argv):
        self.tty = Terminal()
        slave = self.tty.slave
        super().__init__(argv, ns=False, outer=[PYTHON, "-c", BACKGROUND], stdin=slave, stdout=slave, stderr=slave)
        self.tty.started()


def trap_lines(path):
    """The lines a trap appended to path so far ([] if none)."""
    try:
        with open(path) as f:
            return f.read().split()
    except FileNotFoundError:
        return []


def wait_trap(path, want, timeout=5.0, what=None):
    """Waits until the trap log at path holds want (a word)."""
    return wait_for(lambda: want in trap_lines(path), timeout, what or "%s in %s" % (want, path))
