"""Running the berth CLI against a sandbox, over either transport."""

import os
import select
import time

from .paths import CLI
from .procs import run_program, running
from .runner import Timeout, expect_eq, note

# Both ways to reach berthd: its Unix socket and the gateway's WebSocket.
TRANSPORTS = ("unix", "ws")


def conn_args(sb, transport):
    """The berth CLI's options to reach sb over transport (of TRANSPORTS)."""
    if transport == "unix":
        return ["--socket", sb.socket]
    return ["--url", sb.url, "--token-file", sb.token_file]


def berth_argv(sb, transport, *args):
    """The command line of berth ARGS against sb over transport."""
    return [CLI] + conn_args(sb, transport) + list(args)


def berth(sb, transport, *args, input=None, timeout=60, text=False):
    """Runs berth ARGS against sb: (status, stdout, stderr str); stdout is
    bytes, or str with text."""
    rc, out, err = run_program(berth_argv(sb, transport, *args), timeout, input, text=False)
    shown = out[:300] if not out.startswith((b"\x89PNG", b"\xff\xd8")) else b"<image>"
    note("%s (%s) -> %d\nstdout: %r\nstderr: %s" % (" ".join(args), transport, rc, shown, err))
    return rc, out.decode(errors="replace") if text else out, err


def text_ok(sb, transport, *args, **kw):
    """berth ARGS must succeed: its stdout as text."""
    rc, out, err = berth(sb, transport, *args, text=True, **kw)
    expect_eq(rc, 0, "%s (%s): exit status (stderr %r)" % (" ".join(args), transport, err))
    return out


def berth_running(sb, transport, *args, **kw):
    """berth ARGS against sb, for the with block to drive: running()'s
    Popen (kw are running()'s)."""
    return running(berth_argv(sb, transport, *args), **kw)


def read_all(p, on_out=None, timeout=60):
    """Reads a berth Popen's stdout and stderr to their ends: (stdout,
    stderr) bytes. on_out(stdout so far) is called after each chunk of
    stdout."""
    out, err = bytearray(), bytearray()
    open_fds = {p.stdout.fileno(): out, p.stderr.fileno(): err}
    deadline = time.monotonic() + timeout
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("no end of berth's output within %d s (%d bytes, stderr %r)" % (
                timeout, len(out), bytes(err[-300:])))
        ready, _, _ = select.select(list(open_fds), [], [], left)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                del open_fds[fd]
                continue
            open_fds[fd] += chunk
            if fd == p.stdout.fileno() and on_out is not None:
                on_out(bytes(out))
    return bytes(out), bytes(err)
