"""A scripted model: an OpenAI-compatible chat-completions server on
loopback that answers from a script the test gives, so a real coding
agent runs a real task with no model and no network.

    model = ScriptedModel([tool_call(["write"], file=path, content="hi\\n"),
                           text("Done.")], netns_of=sb.berthd_pid())

GET /v1/models lists one model, "scripted". POST /v1/chat/completions
(stream true: SSE chunks; false: one JSON answer) answers a request that
offers tools with the script's step numbered by how many assistant
messages the conversation already holds, so a retried request gets the
same step and the conversation alone says where it is; past the script,
and for a request without tools (a runtime's title or summary request),
a short text. Every request is recorded (requests) for the test to
inspect, with its headers (names in lower case; a provider's key
arrives as the bearer).

A tool call's arguments are built from the tool's own JSON schema: the
step gives values by role (file, content, command, description) and each
property of the schema takes the value of the role its name stands for,
so OpenCode's write {filePath, content} and Pi's write {path, content}
are both served by one step.
"""

import http.server
import json
import socket
import threading

from .netns import netns_socket
from .procs import wait_for
from .runner import TestFailure, note, track_closer

MODEL_ID = "scripted"

# The property names a role goes by in the runtimes' tool schemas.
ROLE_NAMES = {
    "file": ("filePath", "file_path", "path", "file"),
    "content": ("content", "text"),
    "command": ("command", "cmd"),
    "description": ("description",),
    "timeout": ("timeout",),
}

# What a required property the step gave no value for gets, by role.
ROLE_DEFAULTS = {"description": "a step of the scripted task"}

def tool_call(names, **values):
    """A step: call the first tool of names the request offers, with the
    arguments its schema asks for, from values by role."""
    unknown = set(values) - set(ROLE_NAMES)
    if unknown:
        raise ValueError("unknown roles %s" % sorted(unknown))
    return {"tool": list(names), "values": values}


def text(content):
    """A step: a final assistant message."""
    return {"text": content}


def tool_args(schema, values):
    """The arguments of a call to a tool of this JSON schema: each
    property whose name stands for a role takes that role's value; a
    required property nothing fills is an error of the script."""
    props = (schema or {}).get("properties") or {}
    args = {}
    for prop in props:
        for role, names in ROLE_NAMES.items():
            if prop in names and role in values:
                args[prop] = values[role]
                break
    for prop in (schema or {}).get("required") or []:
        if prop in args:
            continue
        role = next((r for r, names in ROLE_NAMES.items() if prop in names), None)
        if role not in ROLE_DEFAULTS:
            raise ValueError("the tool's required property %r has no value in the step" % prop)
        args[prop] = ROLE_DEFAULTS[role]
    return args


class ScriptedModel:
    """The server, in a thread of the test, listening on 127.0.0.1 of the
    network namespace of netns_of (a pid; None: the test's own). Stopped
    at the end of the case."""

    def __init__(self, script, netns_of=None, title="Scripted task"):
        self.script = list(script)
        self.title = title
        self.requests = []
        self.errors = []
        self._lock = threading.Lock()
        sock = netns_socket(netns_of) if netns_of else socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.port = sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d/v1" % self.port
        handler = type("Handler", (_Handler,), {"model": self})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler, bind_and_activate=False)
        self.server.socket.close()
        self.server.socket = sock
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        track_closer(self.close)

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # -- what the test reads

    def authorizations(self):
        """The Authorization headers of the chat-completion requests."""
        with self._lock:
            return [r["headers"].get("authorization") for r in self.requests if r["path"].endswith("/chat/completions")]

    def completions(self):
        """The chat-completion requests so far (their bodies)."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def tool_results(self, call_id):
        """The contents of the tool messages answering call_id, in every
        request so far."""
        out = []
        for body in self.completions():
            for m in body.get("messages") or []:
                if m.get("role") == "tool" and m.get("tool_call_id") == call_id:
                    out.append(_content_text(m.get("content")))
        return out

    def wait_tool_result(self, call_id, timeout=60.0):
        """Waits for the runtime to send the result of call_id back;
        returns its text."""
        return wait_for(lambda: (self.tool_results(call_id) or [None])[0], timeout,
                        "the result of tool call %s sent back to the model" % call_id, 0.1)

    def check(self):
        """Fails the case if a request could not be answered from the
        script."""
        if self.errors:
            raise TestFailure("the scripted model: %s" % "; ".join(self.errors))

    # -- answering

    def answer(self, body):
        """(delta, finish_reason) for a chat-completion request."""
        tools = body.get("tools") or []
        if not tools:
            return {"role": "assistant", "content": self.title}, "stop"
        done = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        if done >= len(self.script):
            return {"role": "assistant", "content": "Done."}, "stop"
        step = self.script[done]
        if "text" in step:
            return {"role": "assistant", "content": step["text"]}, "stop"
        offered = {t["function"]["name"]: t["function"] for t in tools if t.get("type") == "function"}
        name = next((n for n in step["tool"] if n in offered), None)
        if name is None:
            raise ValueError("none of the tools %s is offered (offered: %s)" % (step["tool"], sorted(offered)))
        args = tool_args(offered[name].get("parameters"), step["values"])
        call = {"index": 0, "id": call_id(done), "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"


def call_id(step):
    """The id of the tool call the script's step number step makes."""
    return "call_%d" % step


def _content_text(content):
    """A message's content as text (a string, or a list of text parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


class _Handler(http.server.BaseHTTPRequestHandler):
    model = None
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with self.model._lock:
            self.model.requests.append({"method": "GET", "path": self.path, "body": None,
                                        "headers": {k.lower(): v for k, v in self.headers.items()}})
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "test"}]})
        else:
            self._json(404, {"error": {"message": "no such path"}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(n))
        except ValueError:
            self._json(400, {"error": {"message": "not JSON"}})
            return
        with self.model._lock:
            self.model.requests.append({"method": "POST", "path": self.path, "body": body,
                                        "headers": {k.lower(): v for k, v in self.headers.items()}})
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": "no such path"}})
            return
        try:
            delta, finish = self.model.answer(body)
        except ValueError as e:
            with self.model._lock:
                self.model.errors.append(str(e))
            note("the scripted model: %s" % e)
            self._json(400, {"error": {"message": str(e)}})
            return
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        base = {"id": "chatcmpl-scripted", "created": 0, "model": MODEL_ID}
        if not body.get("stream"):
            msg = {k: v for k, v in delta.items() if k != "tool_calls" or v}
            msg.setdefault("content", None)
            if "tool_calls" in msg:
                msg["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in msg["tool_calls"]]
            self._json(200, dict(base, object="chat.completion", usage=usage,
                                 choices=[{"index": 0, "message": msg, "finish_reason": finish}]))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        chunk = dict(base, object="chat.completion.chunk")
        for piece in (
            dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
            dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}], usage=usage),
        ):
            self.wfile.write(b"data: " + json.dumps(piece).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True
