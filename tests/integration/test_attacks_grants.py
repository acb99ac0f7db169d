"""Access grants from the attacker's side: a program run by berth as the
unprivileged agent user, holding a view-only grant of one terminal
session (as a hostile viewer would), tries for real to widen it — to
type into the session, resize or signal it, watch another session, list
the sessions, subscribe to the journal, start a command, mint a grant of
its own, use the grant at /v1 or through berthd's socket, read the
grants file in the state directory — and to open the session's door
with no token, a made-up one, or the grant's id. Every attempt is
refused for the reason it must, the session's input never changed, and
the grants file's tokens are not in anything the program saw."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Sandbox, case, expect, expect_eq, note, pyfile, read_to_eof, run, scratch, short  # noqa: E402

PY = "/usr/bin/python3"

ATTACK = r'''
import asyncio, errno, json, os, socket, struct, sys
import msgpack, websockets

t = json.load(open(sys.argv[1]))
out = {}


def tell(name, fn):
    try:
        out[name] = {"result": "done", "got": fn()}
    except OSError as e:
        out[name] = {"result": "refused", "errno": errno.errorcode.get(e.errno, str(e.errno))}
    except Exception as e:
        out[name] = {"result": "error", "detail": repr(e)[:300]}


def read(path):
    with open(path, "rb") as f:
        return f.read(200).hex()


async def door(path, token, calls):
    """Each call's error code (or "ok") on a connection to path with token
    as the bearer; the HTTP status if the upgrade is refused."""
    url = "ws://127.0.0.1:%d%s" % (t["port"], path)
    headers = {"Authorization": "Bearer " + token} if token else {}
    try:
        ws = await websockets.connect(url, subprotocols=["berth.v1"], extra_headers=headers, open_timeout=5)
    except websockets.exceptions.InvalidStatusCode as e:
        return {"status": e.status_code}
    got = {}
    for i, (op, args) in enumerate([("hello", {"version": "berth.v1"})] + calls):
        await ws.send(msgpack.packb({"type": "request", "id": i + 1, "op": op, "args": args}))
        while True:
            m = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 5), raw=False)
            if m.get("type") == "response" and m.get("id") == i + 1:
                break
        got[op + " " + json.dumps(args, default=repr)[:60]] = "ok" if m["ok"] else m["error"]["code"]
    await ws.close()
    return got


def hello(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    return "connected"


pty, other, view = t["pty"], t["other"], t["view"]
tell("read the grants file", lambda: read(t["grants"]))
tell("list the state directory", lambda: os.listdir(t["state"]))
tell("connect to berthd's socket", lambda: hello(t["socket"]))
tell("widen a view grant", lambda: asyncio.run(door("/v1/pty/" + pty, view, [
    ("pty.attach", {"id": pty, "from_offset": 0}),
    ("pty.input", {"id": pty, "data": b"typed by the viewer\n"}),
    ("pty.resize", {"id": pty, "cols": 20, "rows": 5}),
    ("pty.signal", {"id": pty, "signal": "KILL"}),
    ("pty.attach", {"id": other, "from_offset": 0}),
    ("pty.list", {}),
    ("pty.close", {"id": pty}),
    ("events.subscribe", {"from_seq": 1}),
    ("proc.start", {"argv": ["/bin/true"]}),
    ("grant.create", {"scope": "pty:%s:write" % pty}),
    ("grant.list", {}),
    ("gateway.check", {"door": "v1", "peer": "x", "credential": view}),
    ("secrets.list", {}),
    ("fs.read", {"path": "/etc/hostname"}),
])))
tell("the grant at another session's door", lambda: asyncio.run(door("/v1/pty/" + other, view, [
    ("pty.attach", {"id": other, "from_offset": 0})])))
tell("the grant at /v1", lambda: asyncio.run(door("/v1", view, [])))
tell("no token", lambda: asyncio.run(door("/v1/pty/" + pty, "", [])))
tell("a made-up token", lambda: asyncio.run(door("/v1/pty/" + pty, "0" * 40, [])))
tell("the grant's id as its token", lambda: asyncio.run(door("/v1/pty/" + pty, t["view_id"], [])))
print(json.dumps(out))
'''


@case("a hostile holder of a view-only pty grant, run as the agent user, cannot widen it, reach berthd or read "
      "the grants; every door refuses what it was not given", 120)
def t_hostile_viewer():
    targets = os.path.join(scratch(0o755), "targets.json")
    with Sandbox() as sb:
        c = sb.ws()
        pty = c.call("pty.open", {"argv": ["/bin/cat"], "user": "nobody"})["id"]
        other = c.call("pty.open", {"argv": ["/bin/cat"], "user": "nobody"})["id"]
        c.call("pty.input", {"id": pty, "data": b"the owner's line\n"})
        view = c.call("grant.create", {"scope": "pty:%s:view" % pty, "label": "hostile"})
        write = c.call("grant.create", {"scope": "pty:%s:write" % pty})
        with open(targets, "w") as f:
            json.dump({"port": sb.port, "pty": pty, "other": other, "view": view["token"], "view_id": view["id"],
                       "grants": os.path.join(sb.state_dir, "grants"), "state": sb.state_dir,
                       "socket": sb.socket}, f)
        os.chmod(targets, 0o644)
        p = c.call("proc.start", {"argv": [PY, pyfile(ATTACK, "attack.py"), targets], "user": "agent",
                                  "attach": True})
        streams = ["proc/%s/stdout" % p["id"], "proc/%s/stderr" % p["id"]]
        got = read_to_eof(c, streams, timeout=60)
        note("stderr: %r" % got[streams[1]][-1500:])
        out = json.loads(got[streams[0]])
        for name, rec in sorted(out.items()):
            note("%s: %s" % (name, short(rec, 400)))
        for name in ("read the grants file", "list the state directory", "connect to berthd's socket"):
            expect_eq((out[name]["result"], out[name].get("errno")), ("refused", "EACCES"), name)
        widen = out["widen a view grant"]
        expect(widen["result"] == "done", "the view grant's door: %s" % short(widen))
        expect_eq(len(widen["got"]), 15, "the attempts through the view grant's door")
        for call, code in widen["got"].items():
            want = "ok" if call.startswith("hello") or call.startswith('pty.attach {"id": "%s"' % pty) else "forbidden"
            expect_eq(code, want, "the viewer's %s" % call)
        for name in ("the grant at another session's door",):
            calls = out[name]["got"]
            expect_eq(list(calls.values()), ["ok", "forbidden"], name)
        for name in ("the grant at /v1", "no token", "a made-up token", "the grant's id as its token"):
            expect_eq(out[name]["got"], {"status": 401}, name)
        # The session took nothing from the viewer: what it echoed is the
        # owner's line alone, read through a write grant's door.
        w = c.call("pty.attach", {"id": pty, "from_offset": 0})
        expect_eq(w["state"], "running", "the session after the viewer (no signal reached it)")
        c.call("pty.input", {"id": pty, "data": b"the owner's last line\n"})
        echoed = b""
        while b"the owner's last line" not in echoed:
            m = c.recv(5)
            if m.get("type") == "data":
                echoed += m["data"]
        expect(b"typed by the viewer" not in echoed, "the viewer's input reached the session: %r" % echoed)
        text = json.dumps(out)
        with open(os.path.join(sb.state_dir, "grants"), "rb") as f:
            held = f.read()
        expect(write["token"].encode() in held, "the grants file holds the write grant (the test reads it as root)")
        expect(write["token"] not in text, "the write grant's token reached the attacker")
        expect_eq([g["id"] for g in c.call("grant.list")["grants"]], [view["id"], write["id"]],
                  "no grant of the attacker's making")


run()
