"""harness: what every integration test shares, by concern.

- runner: the TAP runner (case, run), expectations, notes, cleanup.
- paths: where the programs and the sources are.
- procs: polling, scratch directories, free ports and displays, /proc,
  programs run beside the test.
- clients: berth.v1 on the Unix socket and the WebSocket; plain
  WebSockets, HTTP and raw sockets.
- sandbox: berthd as PID 1 of a namespace of its own, with its gateway.
- streams: events and data streams, checked as they are read.
- desktop: Xvfb (or Xvnc), berth-desktop and Chromium run by berthd;
  xpaint.
- rfb: RFB by hand over the noVNC relay.
- images: screenshots read back.
- cli: the berth CLI against a sandbox.

A test puts its own directory on sys.path and imports what it uses from
here: `from harness import Sandbox, case, expect, run`.
"""

from .cli import TRANSPORTS, berth, conn_args, text_ok
from .clients import (
    MAX_MSG,
    VERSION,
    Closed,
    HttpServer,
    PlainWs,
    ProtoError,
    UnixClient,
    WsClient,
    http_get,
    http_json,
    parse_metrics,
    raw_ws_socket,
    ws_upgrade,
)
from .desktop import (
    DESKTOP_USER,
    GREY,
    Desk,
    DesktopSandbox,
    Paint,
    chromium_service,
    desktop_service,
    desktop_user,
    hexcolor,
    served,
    xevlog_settle,
    xvfb_service,
    xvnc_service,
)
from .images import Image, png_decode
from .paths import BUILDDIR, CLI, DESKTOP, FORKBOMB, GATEWAY, SRCDIR, XEVLOG
from .procs import (
    X11_DIR,
    Spawned,
    browser_script,
    display_free,
    forget_display,
    free_display,
    free_port,
    host_processes,
    need,
    pid_alive,
    proc_argv,
    proc_children,
    proc_stat,
    proc_status,
    files_under,
    process_texts,
    pyfile,
    shfile,
    run_program,
    running,
    scratch,
    wait_for,
)
from .runner import (
    SANITIZER_MARKS,
    Skip,
    TestFailure,
    Timeout,
    case,
    expect,
    expect_eq,
    expect_in,
    note,
    run,
    short,
    track_closer,
)
from .sandbox import STATE_MARK, Sandbox, host_pid, minimal_config, v1_only_why
from .streams import EventStream, event_kinds, expect_contiguous, generate_events, pty_chunks, pty_read, read_to_eof
