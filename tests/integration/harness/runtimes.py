"""The real agent runtimes (OpenCode, Pi) as a sandbox runs them: their
[runtime NAME] sections, a home and a workspace of the case's own owned
by the runtime's user, and each runtime's own config pointing it at the
scripted model (harness.model).

    dirs = AgentDirs()
    with Sandbox(extra=runtime_sections(dirs), offline=True) as sb:
        model = ScriptedModel(script, netns_of=sb.berthd_pid())
        dirs.point_at(model)
        status = start_ready(sb.unix(), "pi", "rpc")

The programs are $BERTH_OPENCODE and $BERTH_PI, by default where the
image's setup installs them.
"""

import base64
import json
import os
import pwd
import re
import time

from .desktop import DESKTOP_USER, desktop_user
from .model import MODEL_ID
from .procs import scratch, wait_for
from .runner import TestFailure, Timeout, expect_eq, short

OPENCODE = os.environ.get("BERTH_OPENCODE", "/usr/local/bin/opencode")
PI = os.environ.get("BERTH_PI", "/usr/local/bin/pi")
PROVIDER = "scripted"

# OpenCode's switches that keep it from reaching out (for updates, a
# models catalogue, plugins) where the sandbox's loopback would refuse it
# anyway: fewer failed attempts, a quicker start.
OPENCODE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}


def need_program(path, what):
    """Fails a case whose runtime is not installed: ./dev installs both
    (images/runtimes.sh), so a missing one is a broken setup, not a case
    that cannot run here."""
    if not os.access(path, os.X_OK):
        raise TestFailure("%s is not installed at %s (images/runtimes.sh installs it)" % (what, path))


class AgentDirs:
    """A home and a workspace for the runtime's user, in a scratch
    directory of the case (searchable by that user, owned by root)."""

    def __init__(self, user=DESKTOP_USER):
        self.user = user
        self.pw = desktop_user(user)
        self.root = scratch(0o755)
        self.home = self._mkdir("home")
        self.workspace = self._mkdir("workspace")

    def _mkdir(self, name, parent=None):
        path = os.path.join(parent or self.root, name)
        os.mkdir(path, 0o755)
        os.chown(path, self.pw.pw_uid, self.pw.pw_gid)
        return path

    def write(self, path, content, mode=0o644):
        """A file of the user's (its directories made the user's too)."""
        parts = os.path.relpath(os.path.dirname(path), self.root).split(os.sep)
        at = self.root
        for part in parts:
            if part in ("", "."):
                continue
            nxt = os.path.join(at, part)
            if not os.path.isdir(nxt):
                self._mkdir(part, at)
            at = nxt
        with open(path, "w") as f:
            f.write(content)
        os.chmod(path, mode)
        os.chown(path, self.pw.pw_uid, self.pw.pw_gid)
        return path

    def point_at(self, model, key_env=None):
        """Both runtimes' configs in the home, with the scripted model as
        their only provider and default model; its API key is the value
        of the variable key_env if given (each runtime reads it from its
        environment), else a placeholder."""
        oc_key, pi_key = ("{env:%s}" % key_env, key_env) if key_env else ("none", "none")
        opencode = {
            "provider": {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Scripted",
                    "options": {"baseURL": model.url, "apiKey": oc_key},
                    "models": {MODEL_ID: {"name": MODEL_ID, "tool_call": True}},
                }
            },
            "model": "%s/%s" % (PROVIDER, MODEL_ID),
            "small_model": "%s/%s" % (PROVIDER, MODEL_ID),
            "autoupdate": False,
            "share": "disabled",
        }
        self.write(os.path.join(self.home, ".config/opencode/opencode.json"), json.dumps(opencode, indent=1))
        pi_models = {
            "providers": {
                PROVIDER: {
                    "baseUrl": model.url,
                    "api": "openai-completions",
                    "apiKey": pi_key,
                    "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                    "models": [{"id": MODEL_ID}],
                }
            }
        }
        self.write(os.path.join(self.home, ".pi/agent/models.json"), json.dumps(pi_models, indent=1))
        settings = {"defaultProvider": PROVIDER, "defaultModel": MODEL_ID}
        self.write(os.path.join(self.home, ".pi/agent/settings.json"), json.dumps(settings, indent=1))

    def owner(self, path):
        """The user name owning path."""
        return pwd.getpwuid(os.stat(path).st_uid).pw_name


def runtime_sections(dirs, opencode=OPENCODE, pi=PI, secrets=(), env=None):
    """[runtime opencode] and [runtime pi] for a sandbox: the user's home
    is dirs.home (HOME in their env), their workspace dirs.workspace; env
    ({name: value}) adds to both runtimes' environment."""
    common = "user = %s\nworkspace = %s\nenv = HOME=%s\n" % (dirs.user, dirs.workspace, dirs.home)
    common += "".join("env = %s=%s\n" % kv for kv in sorted((env or {}).items()))
    if secrets:
        common += "secrets = %s\n" % " ".join(secrets)
    oc_env = "".join("env = %s=%s\n" % kv for kv in OPENCODE_ENV.items())
    return (
        "[runtime opencode]\ncommand = %s\n%s%s"
        "tui =\n"
        "server = serve --hostname 127.0.0.1 --port {port}\n"
        # The server asks every client for the password berthd made for
        # this start: a 401 says it is up.
        "server_ready = http http://127.0.0.1:{port}/global/health 401\n"
        "server_password_env = OPENCODE_SERVER_PASSWORD\n"
        "\n"
        "[runtime pi]\ncommand = %s\n%s"
        "tui =\n"
        "rpc = --mode rpc\n"
        "resume = --continue\n"
    ) % (opencode, common, oc_env, pi, common)


class JsonLines:
    """A command's stdout read as JSON lines over c, which it attaches
    (a runtime's rpc mode); send() writes one JSON line to its stdin.
    A line that is not JSON is kept as {"line": text}."""

    def __init__(self, c, proc_id):
        self.c = c
        self.id = proc_id
        self.stream = "proc/%s/stdout" % proc_id
        self.offset = 0
        self.partial = b""
        self.seen = []
        c.call("proc.attach", {"id": proc_id})

    def send(self, obj):
        self.c.call("proc.input", {"id": self.id, "data": (json.dumps(obj) + "\n").encode()})

    def _take(self, data):
        *whole, self.partial = (self.partial + data).split(b"\n")
        for line in whole:
            try:
                self.seen.append(json.loads(line))
            except ValueError:
                self.seen.append({"line": line.decode(errors="replace")})

    def until(self, pred, timeout=60.0):
        """Reads on until a line (parsed) satisfies pred; returns it."""
        deadline = time.monotonic() + timeout
        at = 0
        while True:
            for obj in self.seen[at:]:
                if pred(obj):
                    return obj
            at = len(self.seen)
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("%s: the awaited line did not come within %.1f s; the last: %s"
                              % (self.stream, timeout, short(self.seen[-5:])))
            m = self.c.recv(left)
            if m.get("type") != "data" or m.get("stream") != self.stream:
                continue
            if m.get("eof"):
                raise TestFailure("%s ended; the last lines: %s" % (self.stream, short(self.seen[-5:])))
            expect_eq(m["offset"], self.offset, "%s: the offset of the next chunk" % self.stream)
            self.offset += len(m["data"])
            self._take(bytes(m["data"]))


def start_ready(c, name, mode, timeout=90.0, **args):
    """runtime.start, then runtime.status until the runtime is ready (a
    server once its readiness probe passed); returns that status."""
    st = c.call("runtime.start", dict(args, name=name, mode=mode))
    expect_eq((st["name"], st["mode"]), (name, mode), "runtime.start's answer")

    def ready():
        now = c.call("runtime.status", {"name": name})
        if now["state"] == "exited":
            raise TestFailure("%s (%s) exited before it was ready: %r" % (name, mode, now.get("exit")))
        return now if now["state"] == "ready" else None

    return wait_for(ready, timeout, "runtime %s in mode %s ready" % (name, mode), 0.1)


def opencode_auth(status):
    """The header that opens OpenCode's server: basic auth with the
    password of this start, from runtime.status."""
    pair = ("opencode:%s" % status["password"]).encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


def screen_text(data):
    """What a terminal shows of a TUI's bytes, roughly: the escape
    sequences (CSI, OSC, charset, others) dropped."""
    return re.sub(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b.", b"",
                  data).decode("utf-8", "replace")


class Terminal:
    """A runtime's berth PTY session, attached over c from offset 0: its
    bytes as they come, and keys typed into it."""

    def __init__(self, c, pty_id):
        self.c = c
        self.id = pty_id
        self.stream = "pty/" + pty_id
        self.data = bytearray()
        c.call("pty.attach", {"id": pty_id, "from_offset": 0})

    def type(self, data):
        self.c.call("pty.input", {"id": self.id, "data": data})

    def until(self, words, timeout=60.0):
        """Reads on until the screen's text holds words (a str)."""
        deadline = time.monotonic() + timeout
        while words not in screen_text(bytes(self.data)):
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("%s: %r not drawn within %.0f s; the last: %r"
                              % (self.stream, words, timeout, screen_text(bytes(self.data[-1500:]))))
            m = self.c.recv(left)
            if m.get("type") == "data" and m.get("stream") == self.stream and not m.get("eof"):
                expect_eq(m["offset"], len(self.data), "%s: the offset of the next chunk" % self.stream)
                self.data += bytes(m["data"])
