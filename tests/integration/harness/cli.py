"""Running the berth CLI against a sandbox, over either transport."""

from .paths import CLI
from .procs import run_program
from .runner import expect_eq, note

# Both ways to reach berthd: its Unix socket and the gateway's WebSocket.
TRANSPORTS = ("unix", "ws")


def conn_args(sb, transport):
    """The berth CLI's options to reach sb over transport (of TRANSPORTS)."""
    if transport == "unix":
        return ["--socket", sb.socket]
    return ["--url", sb.url, "--token-file", sb.token_file]


def berth(sb, transport, *args, input=None, timeout=60, text=False):
    """Runs berth ARGS against sb: (status, stdout, stderr str); stdout is
    bytes, or str with text."""
    rc, out, err = run_program([CLI] + conn_args(sb, transport) + list(args), timeout, input, text=False)
    shown = out[:300] if not out.startswith((b"\x89PNG", b"\xff\xd8")) else b"<image>"
    note("%s (%s) -> %d\nstdout: %r\nstderr: %s" % (" ".join(args), transport, rc, shown, err))
    return rc, out.decode(errors="replace") if text else out, err


def text_ok(sb, transport, *args, **kw):
    """berth ARGS must succeed: its stdout as text."""
    rc, out, err = berth(sb, transport, *args, text=True, **kw)
    expect_eq(rc, 0, "%s (%s): exit status (stderr %r)" % (" ".join(args), transport, err))
    return out
