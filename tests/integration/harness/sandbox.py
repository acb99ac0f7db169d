"""Sandbox: berthd as PID 1 of a new PID namespace (with its gateway), in
a temporary state directory, on a free port; cleaned up whatever
happens."""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import websockets

from .clients import UnixClient, WsClient, http_get, parse_metrics
from .paths import BERTHD, GATEWAY, MINIMAL_CONF
from .procs import free_port, host_processes, pid_alive, proc_argv, proc_children, proc_status, wait_for
from .runner import TestFailure, Timeout, expect, expect_eq, track_sandbox

# How long berthd (and its gateway) may take to come up. Sanitizer builds
# start slowly on a busy machine; this bounds a failure, not a success.
START_TIMEOUT = 10.0
# In a config's text, stands for the sandbox's state directory.
STATE_MARK = "@STATE_DIR@"


def minimal_config():
    with open(MINIMAL_CONF) as f:
        return f.read()


# Where a hybrid host mounts its v2 hierarchy, beside the v1 ones.
V2_HYBRID_MOUNT = "/sys/fs/cgroup/unified"


def v1_only_why():
    """Why berthd cannot be run with v1 alone here (Sandbox cgroup_v1),
    or None: it needs root and a hybrid host, v2 at V2_HYBRID_MOUNT
    beside a v1 freezer."""
    if os.geteuid() != 0:
        return "not root"
    if not os.path.exists(os.path.join(V2_HYBRID_MOUNT, "cgroup.procs")):
        return "no v2 hierarchy at %s (not a hybrid host)" % V2_HYBRID_MOUNT
    if not os.path.exists("/sys/fs/cgroup/freezer/cgroup.procs"):
        return "no v1 freezer hierarchy"
    return None


class Sandbox:
    """berthd as PID 1 of a new PID namespace, with a temporary state
    directory, token file and port of its own.

        with Sandbox(extra="[service s]\\ncommand = sleep 100\\n") as sb:
            c = sb.unix()
            ...

    config: the whole config text (default images/minimal/berth.conf);
    extra: text appended to it; config_file: a file to pass as is (not
    written). token: the token file's content (default: berthd creates
    one). wait: "healthz" (the gateway answers 200), "socket" (berthd
    answers hello on its Unix socket) or None (do not wait: for a berthd
    expected to fail, see wait_exit). args: more berthd options.
    listen: pass --listen (default True). pid1: run berthd as PID 1 of a
    new PID namespace (default), or as a plain process, a child subreaper.
    offline: also in a new network namespace with only loopback, up: what
    runs in the sandbox reaches nothing beyond it (the gateway's port is
    then inside it too: wait is "socket", and netns() runs a program there).
    cgroup_v1: the v2 hierarchy of a hybrid host unmounted in berthd's
    mount namespace before it starts, so that it uses v1 alone (the v1
    freezer kills and freezes); v1_only_why() says where it cannot.
    """

    def __init__(
        self,
        config=None,
        extra=None,
        config_file=None,
        token=None,
        wait="healthz",
        args=(),
        listen=True,
        debug=False,
        pid1=True,
        offline=False,
        cgroup_v1=False,
    ):
        self.dir = tempfile.mkdtemp(prefix="berth-it-")
        # Searchable, as the state directory's parent is in an install:
        # the gateway and the probes run as a user of their own.
        os.chmod(self.dir, 0o711)
        self.state_dir = os.path.join(self.dir, "state")
        self.token_file = os.path.join(self.dir, "token")
        self.socket = os.path.join(self.state_dir, "berthd.sock")
        self.log_path = os.path.join(self.dir, "berthd.log")
        self.port = free_port()
        self.url = "ws://127.0.0.1:%d/v1" % self.port
        self.proc = None
        self.args = list(args)
        self.listen = listen
        self.debug = debug
        self.pid1 = pid1
        self.offline = offline
        self.cgroup_v1 = cgroup_v1
        if offline and wait == "healthz":
            wait = "socket"
        self.clients = []
        self._log_saved = None
        track_sandbox(self)
        if config_file is not None:
            self.config_path = config_file
        else:
            text = minimal_config() if config is None else config
            if extra:
                text = text.rstrip("\n") + "\n\n" + extra
            text = text.replace(STATE_MARK, self.state_dir)
            self.config_path = os.path.join(self.dir, "berth.conf")
            with open(self.config_path, "w") as f:
                f.write(text)
        if token is not None:
            fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(token)
        try:
            self.start(wait)
        except BaseException:
            self.close()
            raise

    # -- lifetime

    def command(self):
        cmd = ["unshare", "-p", "-f", "--mount-proc"] if self.pid1 else []
        if self.offline:
            # lo is down in a new network namespace; the shell brings it up
            # and execs berthd, which stays the namespace's PID 1.
            cmd += ["-n", "/bin/sh", "-c", 'ip link set lo up && exec "$0" "$@"']
        if self.cgroup_v1:
            # unshare's mount namespace is private: the host keeps its v2.
            cmd += ["/bin/sh", "-c", 'umount -l %s && exec "$0" "$@"' % V2_HYBRID_MOUNT]
        cmd += [BERTHD, "--config", self.config_path]
        if self.listen:
            cmd += ["--listen", "127.0.0.1:%d" % self.port]
        cmd += ["--token-file", self.token_file, "--state-dir", self.state_dir]
        if self.debug:
            cmd.append("--debug")
        return cmd + self.args

    def start(self, wait="healthz"):
        """Starts berthd (again) on this state directory."""
        if self.offline and wait == "healthz":
            wait = "socket"
        expect(os.access(BERTHD, os.X_OK), "no berthd program at %s" % BERTHD)
        if wait == "healthz":
            expect(os.access(GATEWAY, os.X_OK), "no berth-gateway program at %s" % GATEWAY)
        with open(self.log_path, "ab") as log:
            log.write(("=== %s\n" % " ".join(self.command())).encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        if wait == "healthz":
            self.wait_healthy()
        elif wait == "socket":
            self.wait_socket()

    def _check_running(self, what):
        rc = self.proc.poll()
        if rc is not None:
            raise TestFailure("berthd exited (status %d) while waiting for %s" % (rc, what))

    def wait_socket(self, timeout=START_TIMEOUT):
        """Waits until berthd answers hello on its Unix socket."""

        def answers():
            self._check_running("its Unix socket")
            try:
                c = UnixClient(self.socket, hello=True, timeout=2)
            except (OSError, TestFailure):
                return False
            c.close()
            return True

        wait_for(answers, timeout, "berthd answering on %s" % self.socket, 0.02)

    def wait_healthy(self, timeout=START_TIMEOUT):
        """Waits until GET /healthz answers 200."""

        def healthy():
            self._check_running("/healthz")
            try:
                return http_get(self.port, "/healthz", timeout=2)[0] == 200
            except OSError:
                return False

        wait_for(healthy, timeout, "/healthz 200 on port %d" % self.port, 0.02)

    def wait_exit(self, timeout=10.0):
        """Waits for berthd to exit on its own; returns its status."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Timeout("berthd still runs after %.1f s" % timeout)

    def netns(self, argv):
        """argv, to run in berthd's network namespace (offline sandboxes:
        a server the sandbox's programs reach on its loopback)."""
        return ["nsenter", "-t", str(self.berthd_pid()), "-n"] + list(argv)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def in_namespace(self, pid):
        """Whether host pid runs in berthd's PID namespace."""
        try:
            return os.readlink("/proc/%d/ns/pid" % pid) == os.readlink("/proc/%d/ns/pid" % self.berthd_pid())
        except OSError:
            return False

    def host_pid(self, nspid, timeout=5.0):
        """The host pid of the process that is nspid in berthd's
        namespace."""

        def find():
            for pid in host_processes():
                v = proc_status(pid, "NSpid")
                if v and int(v.split()[-1]) == nspid and self.in_namespace(pid):
                    return pid
            return None

        return wait_for(find, timeout, "host pid of namespace pid %d" % nspid)

    def berthd_pid(self, timeout=5.0):
        """berthd's pid on the host: the child of unshare, once exec'd."""

        if not self.pid1:
            return self.proc.pid

        def find():
            self._check_running("berthd's pid")
            for pid in proc_children(self.proc.pid):
                argv = proc_argv(pid)
                if argv and os.path.basename(argv[0]) == "berthd":
                    return pid
            return None

        return wait_for(find, timeout, "berthd's host pid")

    def gateway_pid(self, timeout=5.0, other_than=None):
        """The gateway's pid on the host: berthd's child running
        berth-gateway (other than other_than, to wait for a restart)."""

        return host_pid(self, "berth-gateway", other_than, timeout)

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends sig to berthd and waits for it to exit: returns its exit
        status (as unshare reports it). Kills everything on timeout."""
        if not self.running():
            return self.proc.returncode if self.proc else None
        pid = self.berthd_pid()
        os.kill(pid, sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Timeout("berthd did not exit within %.1f s of signal %d" % (timeout, sig))
        self._close_clients()
        return rc

    def restart(self, sig=signal.SIGTERM, wait="healthz"):
        """Stops berthd with sig and starts it again on the same state
        directory and port. Returns the stop's exit status."""
        rc = self.stop(sig)
        self.start(wait)
        return rc

    def kill(self):
        """SIGKILL to PID 1 of the namespace takes everything in it."""
        for pid in proc_children(self.proc.pid):
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def _close_clients(self):
        for c in self.clients:
            try:
                c.close()
            except Exception:
                pass
        self.clients = []

    def close(self):
        """Stops berthd (SIGTERM, then SIGKILL) and removes the directory.
        Keeps the log's text for diagnostics."""
        self._close_clients()
        if self.running():
            try:
                pid = self.berthd_pid(timeout=1)
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGTERM)
                self.proc.wait(8)
            except (TestFailure, ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()
        if os.path.isdir(self.dir):
            self._log_saved = self.log()
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- what berthd left

    def log(self):
        """berthd's (and its children's) stderr and stdout so far."""
        if self._log_saved is not None:
            return self._log_saved
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, n):
        return self.log().splitlines()[-n:]

    @property
    def token(self):
        """The token file's content, stripped."""
        with open(self.token_file) as f:
            return f.read().strip()

    def journal_bytes(self):
        """Every byte of every journal file, concatenated."""
        out = b""
        jdir = os.path.join(self.state_dir, "journal")
        for name in sorted(os.listdir(jdir)):
            with open(os.path.join(jdir, name), "rb") as f:
                out += f.read()
        return out

    # -- clients and shortcuts

    def unix(self, hello=True, timeout=5.0):
        c = UnixClient(self.socket, hello=hello, timeout=timeout)
        self.clients.append(c)
        return c

    def ws(self, token=None, hello=True, timeout=5.0, **kw):
        """A WebSocket client with this sandbox's token (unless given)."""
        c = WsClient(self.url, token=self.token if token is None else token, hello=hello, timeout=timeout, **kw)
        self.clients.append(c)
        return c

    def ws_retry(self, timeout=10.0, **kw):
        """ws(), retrying while the gateway is away (restarting, say)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.ws(**kw)
            except (OSError, TestFailure, websockets.WebSocketException) as e:
                if time.monotonic() > deadline:
                    raise Timeout("could not connect within %.1f s: %r" % (timeout, e))
                time.sleep(0.05)

    def state(self):
        c = UnixClient(self.socket)
        try:
            return c.call("state")
        finally:
            c.close()

    def events(self, from_seq=1, timeout=10.0):
        """The journal from from_seq up to its last seq at the time of the
        call, read over a fresh Unix connection."""
        c = UnixClient(self.socket, timeout=timeout)
        try:
            sub = c.subscribe(from_seq)
            last = sub["last_seq"]
            if last < max(from_seq, 1):
                return []
            return c.events_until(lambda ev: ev["seq"] >= last, timeout)
        finally:
            c.close()

    def wait_event(self, pred, timeout=10.0, from_seq=1):
        """Subscribes from from_seq and returns the first event for which
        pred holds (waiting for it to happen if need be)."""
        c = UnixClient(self.socket, timeout=timeout)
        try:
            c.subscribe(from_seq)
            return c.events_until(pred, timeout)[-1]
        finally:
            c.close()

    def metrics(self):
        """/metrics as {name: value} (label sets summed)."""
        status, _, body = http_get(self.port, "/metrics")
        expect_eq(status, 200, "GET /metrics status")
        return parse_metrics(body.decode())[0]


def host_pid(sb, argv0, other_than=None, timeout=30.0):
    """The host pid of berthd's child running argv0 (another one than
    other_than, to wait for a restart)."""

    def find():
        for pid in proc_children(sb.berthd_pid()):
            argv = proc_argv(pid)
            if argv and os.path.basename(argv[0]) == argv0 and pid != other_than and pid_alive(pid):
                return pid
        return None

    return wait_for(find, timeout, "%s running under berthd" % argv0, 0.05)
