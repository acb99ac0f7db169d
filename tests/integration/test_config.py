"""The config file and berthd's options: errors name FILE:LINE and the
problem, --listen overrides the file, the token file is made or kept."""

import os
import re
import socket
import stat
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    case,
    expect,
    expect_eq,
    free_port,
    proc_argv,
    run,
)


def refused(text, line, *words):
    """berthd given config text exits non-zero, and its log names
    FILE:LINE (line None: the file alone) and every word."""
    with Sandbox(config=text, wait=None) as sb:
        rc = sb.wait_exit(10)
        log = sb.log()
        path = sb.config_path
    expect(rc != 0, "berthd exited 0 with a bad config; log:\n%s" % log)
    where = "%s:%d:" % (path, line) if line is not None else path
    expect(where in log, "the log does not name %r:\n%s" % (where, log))
    for w in words:
        expect(w in log, "the log does not say %r:\n%s" % (w, log))


@case("unknown section names its line")
def unknown_section():
    refused("[berthd]\n# a comment\n\n[bogus]\nx = 1\n", 4, "unknown section", "bogus")


@case("unknown key names its line and section")
def unknown_key():
    refused("[gateway]\nclient_queue = 1M\nlistne = 127.0.0.1:1\n", 3, '"listne"', "[gateway]")


@case("line without '=' is refused")
def missing_equals():
    refused("[journal]\nsync yes\n", 2, "key = value")


@case("bad size is refused")
def bad_size():
    refused("[journal]\nmax_bytes = 12Q\n", 2, '"12Q"', "size")


@case("size below the minimum is refused")
def small_size():
    refused("[gateway]\nclient_queue = 1K\n", 2, '"1K"', "size")


@case("bad listen port is refused")
def bad_listen():
    refused("[gateway]\nlisten = 127.0.0.1:70000\n", 2, "127.0.0.1:70000", "1-65535")


@case("unterminated quote in a service command is refused")
def unterminated_quote():
    refused('[service s]\nrestart = never\ncommand = /bin/sh -c "echo hi\n', 3, "unterminated")


@case("duplicate service is refused")
def duplicate_service():
    refused("[service a]\ncommand = true\n\n[service a]\ncommand = true\n", 4, '"a"', "twice")


@case("an unknown key in a runtime section names its line and the runtime")
def runtime_unknown_key():
    refused("[runtime pi]\ncommand = pi\nuser = agent\nworkspace = /w\ntui =\nmodel = big\n", 6,
            '"model"', "[runtime pi]")


@case("a runtime that offers no mode names the section's line")
def runtime_without_mode():
    refused("[labels]\nimage = x\n\n[runtime pi]\ncommand = pi\nuser = agent\nworkspace = /w\n", 4,
            '"pi"', "offers no mode")


@case("service without a command names the section's line")
def service_without_command():
    refused("[labels]\nimage = x\n\n[service lonely]\nrestart = never\n", 4, '"lonely"', "no command")


@case("line too long is refused")
def line_too_long():
    refused("[labels]\nimage = x\nk = %s\n" % ("x" * 9000), 3, "longer than")


@case("missing config file is refused with its path")
def missing_file():
    path = os.path.join(tempfile.gettempdir(), "berth-it-absent-%d" % os.getpid(), "berth.conf")
    with Sandbox(config_file=path, wait=None) as sb:
        rc = sb.wait_exit(10)
        log = sb.log()
    expect(rc != 0, "berthd exited 0 without its config file")
    expect(path in log, "the log does not name %s:\n%s" % (path, log))
    expect(re.search(r"No such file", log), "the log does not say why:\n%s" % log)


@case("--listen overrides the file's listen")
def listen_override():
    other = free_port()
    with Sandbox(extra="[gateway]\nlisten = 127.0.0.1:%d\n" % other) as sb:
        # Sandbox waits for /healthz on the --listen port.
        argv = proc_argv(sb.gateway_pid())
        expect("127.0.0.1:%d" % sb.port in argv, "the gateway was not told --listen's address: %r" % argv)
        s = socket.socket()
        try:
            s.settimeout(2)
            listening = s.connect_ex(("127.0.0.1", other)) == 0
        finally:
            s.close()
        expect(not listening, "something listens on the file's port %d too" % other)


@case("a missing token file is created: mode 0600, 64 hex digits")
def token_created():
    with Sandbox() as sb:
        expect(os.path.exists(sb.token_file), "no token file at %s" % sb.token_file)
        mode = stat.S_IMODE(os.stat(sb.token_file).st_mode)
        expect_eq(oct(mode), oct(0o600), "token file mode")
        with open(sb.token_file) as f:
            text = f.read()
        expect(re.fullmatch(r"[0-9a-f]{64}\n?", text), "token is not 64 hex digits: %r" % text)
        # And it is the token the gateway checks.
        c = sb.ws()
        expect_eq(c.call("ping")["boot_id"], c.hello_result["boot_id"], "ping's boot_id")


@case("an existing token file is kept unchanged")
def token_kept():
    token = "a-token-of-my-own-0123456789\n"
    with Sandbox(token=token) as sb:
        before = os.stat(sb.token_file)
        with open(sb.token_file) as f:
            expect_eq(f.read(), token, "token file content after start")
        expect_eq(stat.S_IMODE(before.st_mode), 0o600, "token file mode")
        c = sb.ws(token=token.strip())
        c.call("ping")
        after = os.stat(sb.token_file)
        expect_eq(after.st_mtime_ns, before.st_mtime_ns, "token file mtime")


run()
