"""The desktop from an attacker's side. berth-desktop runs as the desktop
user and reaches berthd only through the connections berthd hands it at
spawn; a program in its place (here a stand-in run the same way, as the
same user) can call the desktop's own ops on them and nothing else: no
proc.start, fs.read, service.stop, no check but its own, no file to
publish that its user does not own, no oversized or foreign event."""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    DESKTOP_USER,
    Sandbox,
    desktop_user,
    case,
    expect,
    expect_eq,
    run,
    wait_for,
)

# What the stand-in does on each handed connection: every request, and
# berthd's answer (ok, or the error's code), as JSON lines.
STAND_IN = r'''
import json, os, socket, struct, sys
import msgpack

out = open(sys.argv[1], "w")
def conn(name):
    return socket.socket(fileno=int(os.environ[name]))
def ask(s, i, op, args):
    b = msgpack.packb({"type": "request", "id": i, "op": op, "args": args})
    s.sendall(struct.pack(">I", len(b)) + b)
    while True:
        n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
        m = msgpack.unpackb(s.recv(n, socket.MSG_WAITALL), raw=False)
        if m.get("type") == "response" and m.get("id") == i:
            return m
def tell(where, op, m):
    code = None if m["ok"] else m["error"]["code"]
    out.write(json.dumps({"conn": where, "op": op, "code": code}) + "\n")
    out.flush()
mine = sys.argv[2]
plan = [
    ("hello", {"version": "berth.v1", "client": "stand-in"}),
    ("ping", {}),
    ("desktop.provide", {}),
    ("check.report", {"name": "xfce", "ok": True}),
    ("check.report", {"name": "other", "ok": True}),
    ("proc.start", {"argv": ["/bin/sh", "-c", "id > /tmp/pwned"]}),
    ("fs.read", {"path": "/etc/shadow"}),
    ("service.stop", {"name": "other"}),
    ("secrets.list", {}),
    ("desktop.emit", {"kind": "record.failed", "data": {"x": "y" * 20000}}),
    ("desktop.emit", {"kind": "service.failed", "data": {"name": "other"}}),
    ("desktop.emit", {"kind": "record.failed", "data": {"id": "r1"}}),
    ("artifact.publish", {"path": sys.argv[3], "name": "token"}),
    ("artifact.publish", {"path": mine, "name": "mine"}),
]
for where in ("BERTH_REPORT_FD", "BERTH_SERVE_FD"):
    s = conn(where)
    for i, (op, args) in enumerate(plan, 1):
        tell(where, op, ask(s, i, op, args))
out.write("done\n")
out.close()
import time
time.sleep(3600)
'''


EXPECTED = [
    None,  # hello
    None,  # ping
    None,  # desktop.provide
    None,  # its own check
    "forbidden",  # another check
    "forbidden",  # proc.start
    "forbidden",  # fs.read
    "forbidden",  # service.stop
    "forbidden",  # secrets.list
    "too_large",  # an oversized event
    "bad_args",  # an event not the desktop's
    None,  # its own event
    "forbidden",  # a file of root's
    None,  # a file of its own
]


@case("berth-desktop's handed connections refuse all but the desktop's own ops")
def handed_connection_limited():
    pw = desktop_user()
    work = tempfile.mkdtemp(prefix="berth-it-desk-")
    os.chmod(work, 0o755)
    script = os.path.join(work, "stand_in.py")
    with open(script, "w") as f:
        f.write(STAND_IN)
    results = os.path.join(work, "results")
    open(results, "w").close()
    os.chown(results, pw.pw_uid, pw.pw_gid)
    mine = os.path.join(work, "mine.txt")
    with open(mine, "w") as f:
        f.write("the desktop user's own file\n")
    os.chown(mine, pw.pw_uid, pw.pw_gid)
    secret = os.path.join(work, "secret.txt")
    with open(secret, "w") as f:
        f.write("root's\n")
    os.chmod(secret, 0o600)
    config = (
        "[check xfce]\nready = report\nrequired = no\n\n"
        "[check other]\nready = report\nrequired = no\n\n"
        "[service desktop]\ncommand = /usr/bin/python3 %s %s %s %s\n"
        "user = %s\ndesktop_check = xfce\nrequired = no\n\n" % (script, results, mine, secret, DESKTOP_USER)
    )
    with Sandbox(extra=config) as sb:
        wait_for(lambda: open(results).read().endswith("done\n"), 20, "the stand-in's tries")
        lines = [json.loads(x) for x in open(results).read().splitlines() if x != "done"]
        for where in ("BERTH_REPORT_FD", "BERTH_SERVE_FD"):
            codes = [x["code"] for x in lines if x["conn"] == where]
            expect_eq(codes, EXPECTED, "the answers on %s" % where)
        expect(not os.path.exists("/tmp/pwned"), "proc.start ran nothing")
        c = sb.unix()
        expect_eq(c.call("service.status", {"name": "xfce"})["state"], "ready", "the desktop's own check, reported")
        other = c.call("service.status", {"name": "other"})
        expect(other["state"] != "ready", "the other check stays unreported: %r" % other)


if __name__ == "__main__":
    run()
