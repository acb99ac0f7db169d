"""Access grants as berthd holds them (grant.*): made, listed and
revoked through the real gateway with the fields and links the docs
give; every bad argument refused with its own error; a scope the gateway
cannot serve refused as unavailable; each scope opening its own doors
and no other (gateway.check, the table of scope by door); a private
preview's link good once; the end of a grant by revocation and by expiry
journaled, within 100 ms of its expiry, and closing the door at once;
grants kept across a restart of berthd, one that expired meanwhile
journaled then; and no token in an event, a list, the journal or the
log."""

import base64
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    Closed,
    ProtoError,
    Sandbox,
    case,
    expect,
    expect_eq,
    expect_in,
    run,
    ws_upgrade,
)
from harness.clients import WsClient  # noqa: E402
from harness.procs import free_port  # noqa: E402

DOORS = ("v1", "novnc", "cdp", "cdp-relay", "pty", "preview", "runtime")
RUNTIMES = """[runtime srv]
command = /bin/sh
workspace = /tmp
user = nobody
server = -c 'exec sleep 1000 {port}'

[runtime pw]
command = /bin/sh
workspace = /tmp
user = nobody
server = -c 'exec sleep 1000 {port}'
server_password_env = PW
server_ready_timeout_ms = 120000

[runtime pwu]
command = /bin/sh
workspace = /tmp
user = nobody
server = -c 'exec sleep 1000 {port}'
server_password_env = PW
server_user = opencode
server_ready_timeout_ms = 120000

[runtime tui]
command = /bin/sh
workspace = /tmp
user = nobody
tui = -c 'exec sleep 1000'
"""


def grants_config(preview_port, max_ttl=None, domain=None):
    """A sandbox that serves every scope: the desktop's relays and
    DevTools are addresses (nothing needs to answer there for a grant to
    be made), previews on a port of their own."""
    text = ("[gateway]\nvnc = 127.0.0.1:%d\nnovnc_dir = /usr/share/novnc\ncdp = 127.0.0.1:%d\n"
            "preview_listen = 127.0.0.1:%d\n" % (free_port(), free_port(), preview_port))
    if max_ttl is not None:
        text += "grant_max_ttl_s = %d\n" % max_ttl
    if domain is not None:
        text += "preview_domain = %s\n" % domain
    return text + "\n" + RUNTIMES


def open_pty(c):
    return c.call("pty.open", {"argv": ["/bin/sleep", "1000"], "user": "nobody"})["id"]


def check(c, door, cred="", key=None):
    """gateway.check's answer, or its error code."""
    args = {"door": door, "peer": "test", "credential": cred}
    if key is not None:
        args["key"] = key
    try:
        return c.call("gateway.check", args)
    except ProtoError as e:
        return e.code


@case("grant.create answers id, token, url and the record; grant.list shows it without the token; "
      "grant.revoke ends it; the events carry no token")
def t_lifecycle():
    pport = free_port()
    with Sandbox(extra=grants_config(pport)) as sb:
        ws = sb.ws()
        before = int(time.time() * 1000)
        g = ws.call("grant.create", {"scope": "preview:3000", "label": "dev server", "ttl_s": 600})
        expect(len(g["id"]) == 17 and g["id"][0] == "g" and all(ch in "0123456789abcdef" for ch in g["id"][1:]),
               "the id: %r" % g["id"])
        expect(len(g["token"]) == 40 and all(ch in "0123456789abcdef" for ch in g["token"]), "the token")
        expect_eq((g["scope"], g["label"], g["visibility"], g["redeemed"]),
                  ("preview:3000", "dev server", "private", False), "the record")
        expect(before <= g["created"] <= time.time() * 1000 + 1, "created: %r" % g["created"])
        expect_eq(g["expires_at"] - g["created"], 600000, "expires_at is created + ttl")
        expect(g["url"].startswith("http://127.0.0.1:%d/preview/%s/?berth_link=" % (pport, g["id"])),
               "a private preview's link: %r" % g["url"])
        code = g["url"].rsplit("=", 1)[1]
        expect(len(code) == 40 and code != g["token"], "the link's code is no token")
        listed = ws.call("grant.list")["grants"]
        expect_eq([x["id"] for x in listed], [g["id"]], "grant.list")
        expect("token" not in listed[0] and g["token"] not in repr(listed), "the list shows no token")
        ev = sb.wait_event(lambda e: e["kind"] == "grant.created", 5)
        expect_eq((ev["data"]["id"], ev["data"]["scope"], ev["data"]["label"], ev["data"]["expires_at"]),
                  (g["id"], "preview:3000", "dev server", g["expires_at"]), "grant.created")
        ws.call("grant.revoke", {"id": g["id"]})
        ev = sb.wait_event(lambda e: e["kind"] == "grant.revoked", 5)
        expect_eq(ev["data"], {"id": g["id"], "scope": "preview:3000", "label": "dev server"}, "grant.revoked")
        expect_eq(ws.call("grant.list")["grants"], [], "grant.list after the revoke")
        expect_eq(ws.error_of("grant.revoke", {"id": g["id"]}), "not_found", "a second revoke")
        expect_eq(check(sb.unix(), "preview", key=g["token"]), "unauthorized", "the revoked grant's token")
        expect(g["token"].encode() not in sb.journal_bytes(), "the token is in the journal")
        expect(g["token"] not in sb.log(), "the token is in berthd's log")
        expect(code.encode() not in sb.journal_bytes(), "the link's code is in the journal")


@case("each link has its door's form: desktop, cdp, pty, public and private previews by path and by host, runtime")
def t_links():
    pport = free_port()
    with Sandbox(extra=grants_config(pport, domain="preview.example.test")) as sb:
        ws = sb.ws()
        pty = open_pty(ws)
        base = "127.0.0.1:%d" % sb.port
        forms = {
            "desktop:view": lambda g: "http://%s/novnc/?token=%s" % (base, g["token"]),
            "desktop:control": lambda g: "http://%s/novnc/?token=%s" % (base, g["token"]),
            "cdp": lambda g: "ws://%s/v1/cdp" % base,
            "pty:%s:view" % pty: lambda g: "ws://%s/v1/pty/%s" % (base, pty),
            "runtime:srv": lambda g: "http://127.0.0.1:%d/runtime/%s/" % (pport, g["token"]),
        }
        for scope, want in forms.items():
            g = ws.call("grant.create", {"scope": scope})
            expect_eq(g["url"], want(g), "the link of %s" % scope)
        g = ws.call("grant.create", {"scope": "preview:8080", "visibility": "public"})
        expect_eq(g["url"], "http://8080-%s.preview.example.test/" % g["token"], "a public preview by host")
        g = ws.call("grant.create", {"scope": "preview:8080"})
        expect_eq(g["url"], "http://8080-%s.preview.example.test/?berth_link=%s" % (g["id"], g["url"][-40:]),
                  "a private preview by host")
        expect_eq(len(ws.call("grant.list")["grants"]), 7, "every grant listed")
        expect("serves no preview proxy" not in sb.log(), "the log says the previews' links do not answer")
        expect_in("preview proxy listening on 127.0.0.1:%d, hosts *.preview.example.test" % pport, sb.log(),
                  "the gateway serves the previews' links")


@case("bad arguments are refused, each with its own error and nothing made")
def t_bad_args():
    with Sandbox(extra=grants_config(free_port(), max_ttl=60)) as sb:
        ws = sb.ws()
        bad = [
            ({}, "bad_args"),
            ({"scope": 7}, "bad_args"),
            ({"scope": "desktop"}, "bad_args"),
            ({"scope": "desktop:admin"}, "bad_args"),
            ({"scope": "files:/etc"}, "bad_args"),
            ({"scope": "preview:0"}, "bad_args"),
            ({"scope": "preview:65536"}, "bad_args"),
            ({"scope": "preview:-1"}, "bad_args"),
            ({"scope": "preview:80x"}, "bad_args"),
            ({"scope": "preview:"}, "bad_args"),
            ({"scope": "pty:abc:view"}, "bad_args"),
            ({"scope": "pty:0123456789:view"}, "bad_args"),
            ({"scope": "pty:01234567:admin"}, "bad_args"),
            ({"scope": "runtime:"}, "bad_args"),
            ({"scope": "runtime:a/b"}, "bad_args"),
            ({"scope": "runtime:" + "r" * 65}, "bad_args"),
            ({"scope": "cdp", "ttl_s": 0}, "bad_args"),
            ({"scope": "cdp", "ttl_s": 61}, "bad_args"),
            ({"scope": "cdp", "ttl_s": -5}, "bad_args"),
            ({"scope": "cdp", "ttl_s": "10"}, "bad_args"),
            ({"scope": "cdp", "ttl_s": 10, "expires_at": int(time.time() * 1000) + 10000}, "bad_args"),
            ({"scope": "cdp", "expires_at": int(time.time() * 1000) - 1000}, "bad_args"),
            ({"scope": "cdp", "expires_at": int(time.time() * 1000) + 120000}, "bad_args"),
            ({"scope": "cdp", "label": "x" * 257}, "bad_args"),
            ({"scope": "cdp", "label": 5}, "bad_args"),
            ({"scope": "preview:80", "visibility": "secret"}, "bad_args"),
            ({"scope": "cdp", "visibility": "public"}, "bad_args"),
            ({"scope": "pty:01234567:view"}, "not_found"),
            ({"scope": "runtime:nosuch"}, "not_found"),
            ({"scope": "runtime:tui"}, "unavailable"),
        ]
        for args, code in bad:
            expect_eq(ws.error_of("grant.create", args), code, "grant.create %r" % (args,))
        for args, words in (({"scope": "cdp", "ttl_s": 61}, "1-60 seconds"),
                            ({"scope": "nosuch"}, "preview:PORT")):
            try:
                ws.call("grant.create", args)
                expect(False, "grant.create %r was taken" % (args,))
            except ProtoError as e:
                expect_in(words, e.message, "the refusal of %r" % (args,))
        expect_eq(ws.call("grant.list")["grants"], [], "nothing was made")
        g = ws.call("grant.create", {"scope": "cdp", "ttl_s": 60, "label": "x" * 256})
        expect_eq(g["expires_at"] - g["created"], 60000, "the maximum itself is taken")
        expect_eq(ws.error_of("grant.revoke", {}), "bad_args", "grant.revoke without an id")


@case("a scope the gateway does not serve is unavailable: no desktop, no DevTools, no previews")
def t_unavailable():
    with Sandbox() as sb:
        ws = sb.ws()
        for scope in ("desktop:view", "desktop:control", "cdp", "preview:3000"):
            expect_eq(ws.error_of("grant.create", {"scope": scope}), "unavailable", scope)
        pty = open_pty(ws)
        g = ws.call("grant.create", {"scope": "pty:%s:write" % pty})
        expect_eq(g["scope"], "pty:%s:write" % pty, "a terminal session needs nothing more")


@case("each scope opens its own doors and no other; the answer carries the door's fields")
def t_doors():
    with Sandbox(extra=grants_config(free_port())) as sb:
        ws = sb.ws()
        c = sb.unix()
        pty = open_pty(ws)
        scopes = ["desktop:view", "desktop:control", "cdp", "pty:%s:view" % pty, "pty:%s:write" % pty,
                  "preview:3000", "runtime:srv"]
        opens = {
            "desktop:view": {"novnc"},
            "desktop:control": {"novnc"},
            "cdp": {"cdp", "cdp-relay"},
            "pty:%s:view" % pty: {"pty"},
            "pty:%s:write" % pty: {"pty"},
            "preview:3000": {"preview"},
            "runtime:srv": {"runtime"},
        }
        for scope in scopes:
            g = ws.call("grant.create", {"scope": scope})
            for door in DOORS:
                keyed = door in ("preview", "runtime")
                got = check(c, door, "" if keyed else g["token"], g["token"] if keyed else None)
                if door in opens[scope]:
                    expect(isinstance(got, dict), "%s at door %s: %r" % (scope, door, got))
                    expect_eq((got["grant"], got["scope"], got["expires_at"]),
                              (g["id"], scope, g["expires_at"]), "the answer at %s" % door)
                else:
                    expect_eq(got, "unauthorized", "%s at door %s" % (scope, door))
            if scope.startswith("desktop"):
                expect_eq(check(c, "novnc", g["token"])["control"], scope == "desktop:control", "control")
            if scope.startswith("pty"):
                got = check(c, "pty", g["token"])
                expect_eq((got["pty"], got["write"]), (pty, scope.endswith("write")), "the pty's fields")
            if scope == "preview:3000":
                expect_eq(check(c, "preview", "", g["token"])["port"], 3000, "the preview's port")
                expect_eq(check(c, "preview", g["token"], g["id"])["grant"], g["id"], "its id with the token")
                expect_eq(check(c, "preview", "", g["id"]), "unauthorized", "its id alone")
                expect_eq(check(c, "preview", "0" * 40, g["id"]), "unauthorized", "its id with another token")
                expect_eq(check(c, "preview", g["token"]), "unauthorized", "no key at a keyed door")
            if scope == "runtime:srv":
                got = check(c, "runtime", "", g["token"])
                expect_eq((got["port"], got["authorization"]), (0, ""), "a runtime that runs no server")
        token = sb.token
        for door in DOORS:
            got = check(c, door, token, token if door in ("preview", "runtime") else None)
            want = door not in ("preview", "runtime")
            expect_eq(isinstance(got, dict), want, "the token at door %s: %r" % (door, got))
        expect_eq(check(c, "novnc", "g" + "0" * 16), "unauthorized", "an id is no credential")


@case("a private preview's link is good once; a public one needs none")
def t_redeem():
    with Sandbox(extra=grants_config(free_port())) as sb:
        ws = sb.ws()
        c = sb.unix()
        g = ws.call("grant.create", {"scope": "preview:3000"})
        code = g["url"].rsplit("=", 1)[1]
        expect_eq(c.error_of("gateway.redeem", {"grant": g["id"], "code": "0" * 40}), "unauthorized",
                  "a wrong code")
        expect_eq(c.call("gateway.redeem", {"grant": g["id"], "code": code}), {"token": g["token"]},
                  "the code's exchange")
        expect_eq(c.error_of("gateway.redeem", {"grant": g["id"], "code": code}), "unauthorized",
                  "the same code again")
        expect_eq(ws.call("grant.list")["grants"][0]["redeemed"], True, "redeemed in the list")
        p = ws.call("grant.create", {"scope": "preview:3000", "visibility": "public"})
        expect("berth_link" not in p["url"], "a public link has no code: %r" % p["url"])
        expect_eq(c.error_of("gateway.redeem", {"grant": p["id"], "code": ""}), "unauthorized",
                  "a public grant has no code to redeem")


@case("a grant expires on time: grant.expired within 100 ms of expires_at, and its door is shut at once")
def t_expiry():
    with Sandbox(extra=grants_config(free_port())) as sb:
        ws = sb.ws()
        c = sb.unix()
        g = ws.call("grant.create", {"scope": "cdp", "ttl_s": 1})
        expect(isinstance(check(c, "cdp", g["token"]), dict), "open before its expiry")
        ev = sb.wait_event(lambda e: e["kind"] == "grant.expired", 5)
        expect_eq(ev["data"]["id"], g["id"], "grant.expired's id")
        late = ev["ts"] - g["expires_at"]
        expect(0 <= late <= 100, "grant.expired %d ms after expires_at" % late)
        expect_eq(check(c, "cdp", g["token"]), "unauthorized", "shut after its expiry")
        expect_eq(ws.call("grant.list")["grants"], [], "gone from the list")


@case("grants are kept across berthd's restart; one that expired while it was down is journaled at its start")
def t_restart():
    with Sandbox(extra=grants_config(free_port())) as sb:
        ws = sb.ws()
        keep = ws.call("grant.create", {"scope": "cdp", "label": "kept"})
        short = ws.call("grant.create", {"scope": "cdp", "ttl_s": 2, "label": "short"})
        mode = os.stat(os.path.join(sb.state_dir, "grants")).st_mode & 0o777
        expect_eq(mode, 0o600, "the grants file's mode")
        sb.stop()
        time.sleep(2.2)
        sb.start()
        ws = sb.ws()
        ids = [x["id"] for x in ws.call("grant.list")["grants"]]
        expect_eq(ids, [keep["id"]], "what is kept after the restart")
        expect(isinstance(check(sb.unix(), "cdp", keep["token"]), dict), "the kept grant still opens its door")
        ev = sb.wait_event(lambda e: e["kind"] == "grant.expired", 5)
        expect_eq(ev["data"]["id"], short["id"], "the grant that expired meanwhile")
        with open(os.path.join(sb.state_dir, "grants"), "wb") as f:
            f.write(b"\x81\xa1v\x02")
        sb.stop()
        sb.start()
        expect_eq(sb.ws().call("grant.list")["grants"], [], "a bad file keeps no grant")
        expect(os.path.exists(os.path.join(sb.state_dir, "grants.bad")), "the bad file is set aside")
        expect_in("set aside", sb.log(), "the log says why")


@case("a runtime grant's answer is its server's port and the Basic credential of its password, "
      "for the runtime's name or its server_user; none once the server stops")
def t_runtime_auth():
    with Sandbox(extra=grants_config(free_port())) as sb:
        ws = sb.ws()
        c = sb.unix()
        for name, user in (("pw", "pw"), ("pwu", "opencode")):
            g = ws.call("grant.create", {"scope": "runtime:" + name})
            st = ws.call("runtime.start", {"name": name, "mode": "server"})
            got = check(c, "runtime", "", g["token"])
            want = "Basic " + base64.b64encode(("%s:%s" % (user, st["password"])).encode()).decode()
            expect_eq((got["port"], got["authorization"]), (st["port"], want), "runtime %s's answer" % name)
            ws.call("runtime.stop", {"name": name}, timeout=30)
            got = check(c, "runtime", "", g["token"])
            expect_eq((got["port"], got["authorization"]), (0, ""), "runtime %s stopped" % name)
            expect(st["password"].encode() not in sb.journal_bytes(), "the password is in the journal")


def pty_client(sb, pty, token, query=False):
    """A client of the terminal session door /v1/pty/ID with a grant's
    token, as a header or (as a browser must) in the query."""
    url = "ws://127.0.0.1:%d/v1/pty/%s" % (sb.port, pty)
    if query:
        return WsClient(url + "?token=" + token, token=None)
    return WsClient(url, token=token)


def data_until(c, want, timeout=10.0):
    """The pty's data read until want (bytes) is in it."""
    got = b""
    deadline = time.monotonic() + timeout
    while want not in got:
        m = c.recv(max(deadline - time.monotonic(), 0.01))
        if m.get("type") == "data":
            got += m["data"]
    return got


def closed_within(c, timeout=5.0):
    """Reads what comes until the server closes c (Closed); c.closed_at is
    then the wall-clock time it was seen."""
    t0 = time.monotonic()
    try:
        while True:
            c.recv(max(t0 + timeout - time.monotonic(), 0.01))
    except Closed:
        c.closed_at = time.time()


@case("a pty grant's door: that one session, replayed from an offset; view only cannot type; "
      "no other op or session; the grant's token is no token at /v1")
def t_pty_door():
    with Sandbox() as sb:
        ws = sb.ws()
        pty = ws.call("pty.open", {"argv": ["/bin/cat"], "user": "nobody"})["id"]
        other = open_pty(ws)
        ws.call("pty.input", {"id": pty, "data": b"before the viewer\n"})
        view = ws.call("grant.create", {"scope": "pty:%s:view" % pty})
        write = ws.call("grant.create", {"scope": "pty:%s:write" % pty})
        v = pty_client(sb, pty, view["token"])
        expect_eq(sorted(v.hello_result["capabilities"]), ["hello", "ping", "pty.attach", "pty.detach"],
                  "a view grant's capabilities")
        v.call("pty.attach", {"id": pty, "from_offset": 0})
        expect_in(b"before the viewer", data_until(v, b"before the viewer"), "the replay from offset 0")
        for op, args in (("pty.input", {"id": pty, "data": b"x"}), ("pty.resize", {"id": pty, "cols": 10, "rows": 5}),
                         ("pty.attach", {"id": other, "from_offset": 0}), ("pty.list", {}),
                         ("events.subscribe", {}), ("fs.stat", {"path": "/"}), ("grant.list", {}),
                         ("proc.start", {"argv": ["/bin/true"]}), ("pty.close", {"id": pty})):
            expect_eq(v.error_of(op, args), "forbidden", "%s on a view grant" % op)
        w = pty_client(sb, pty, write["token"], query=True)
        expect_eq(sorted(w.hello_result["capabilities"]),
                  ["hello", "ping", "pty.attach", "pty.detach", "pty.input", "pty.resize"],
                  "a write grant's capabilities")
        w.call("pty.attach", {"id": pty})
        w.call("pty.input", {"id": pty, "data": b"typed through the grant\n"})
        data_until(w, b"typed through the grant")
        expect_in(b"typed through the grant", data_until(v, b"typed through the grant"), "the viewer sees it")
        expect_eq(w.error_of("pty.input", {"id": other, "data": b"x"}), "forbidden", "another session's input")
        for token in (view["token"], write["token"]):
            expect_eq(ws_upgrade(sb.port, "/v1", token=token)[0], 401, "a grant's token at /v1")
        expect_eq(ws_upgrade(sb.port, "/v1/pty/%s" % pty, token="0" * 40)[0], 401, "a wrong token")
        expect_eq(ws_upgrade(sb.port, "/v1/pty/%s" % pty)[0], 401, "no token")
        sb.ws().call("pty.list")


@case("a pty grant's revocation and expiry close its live viewers within 100 ms")
def t_pty_cut():
    with Sandbox() as sb:
        ws = sb.ws()
        pty = ws.call("pty.open", {"argv": ["/bin/cat"], "user": "nobody"})["id"]
        g = ws.call("grant.create", {"scope": "pty:%s:view" % pty})
        v = pty_client(sb, pty, g["token"])
        v.call("pty.attach", {"id": pty})
        ws.call("grant.revoke", {"id": g["id"]})
        closed_within(v)
        # From the revocation, as berthd journaled it, to the close the
        # viewer saw (the same clock: one machine).
        ev = sb.wait_event(lambda e: e["kind"] == "grant.revoked" and e["data"]["id"] == g["id"], 5)
        late = v.closed_at * 1000 - ev["ts"]
        expect(late < 100, "the viewer was closed %.0f ms after the revoke" % late)
        expect_eq(ws_upgrade(sb.port, "/v1/pty/%s" % pty, token=g["token"])[0], 401, "the revoked token")
        g = ws.call("grant.create", {"scope": "pty:%s:view" % pty, "ttl_s": 1})
        v = pty_client(sb, pty, g["token"])
        v.call("pty.attach", {"id": pty})
        closed_within(v, 5)
        late = v.closed_at * 1000 - g["expires_at"]
        expect(late < 100, "the viewer was closed %.0f ms after the expiry" % late)

run()
