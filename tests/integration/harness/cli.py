"""Running the berth CLI against a sandbox, over either transport."""

import subprocess

from .paths import CLI
from .runner import TestFailure, expect_eq, note


def conn_args(sb, transport):
    """The berth CLI's options to reach sb over transport ("unix", "ws")."""
    if transport == "unix":
        return ["--socket", sb.socket]
    return ["--url", sb.url, "--token-file", sb.token_file]


def berth(sb, transport, *args, input=None, timeout=60, text=False):
    """Runs berth ARGS against sb: (status, stdout, stderr str); stdout is
    bytes, or str with text."""
    argv = [CLI] + conn_args(sb, transport) + list(args)
    try:
        p = subprocess.run(
            argv,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as e:
        raise TestFailure("%s did not finish within %d s (stderr: %r)" % (" ".join(argv), timeout, e.stderr))
    err = p.stderr.decode(errors="replace")
    shown = p.stdout[:300] if not p.stdout.startswith((b"\x89PNG", b"\xff\xd8")) else b"<image>"
    note("%s (%s) -> %d\nstdout: %r\nstderr: %s" % (" ".join(args), transport, p.returncode, shown, err))
    return p.returncode, p.stdout.decode(errors="replace") if text else p.stdout, err


def text_ok(sb, transport, *args, **kw):
    """berth ARGS must succeed: its stdout as text."""
    rc, out, err = berth(sb, transport, *args, text=True, **kw)
    expect_eq(rc, 0, "%s (%s): exit status (stderr %r)" % (" ".join(args), transport, err))
    return out
