"""The gateway from an attacker's side: it runs as a user of its own with
no capability, no_new_privs, its seccomp filter and no core dump, so that
its own uid cannot read its memory; that memory holds no token; berthd's
socket lets no other local user in; and a connection from the gateway's
uid that shows no valid credential can run nothing."""

import json
import os
import pwd
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    ProtoError,
    Sandbox,
    UnixClient,
    case,
    expect,
    expect_eq,
    host_pid,
    proc_status,
    run,
    wait_for,
    ws_upgrade,
)

NOBODY = pwd.getpwnam("nobody")
# The ids berthd falls back to when there is no such user as [gateway] user.
FALLBACK_ID = 64701
TEST_USER = "berth-gw-test"
# What the gateway's uid may call before a client's credential attached.
GATEWAY_OPS = sorted(
    ["hello", "ping", "state", "events.subscribe", "gateway.attach", "gateway.check", "gateway.redeem",
     "gateway.auth_failed"]
)


def as_user(uid, gid, fn):
    """Runs fn() in a child that has dropped every group and switched to
    uid:gid (no capability left); returns what fn returned (JSON), or
    "raised NAME: MESSAGE"."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            out = fn()
        except BaseException as e:  # the verdict is the test's, not the child's
            out = "raised %s: %s" % (type(e).__name__, e)
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data) if data else "the child said nothing"


def ids_of(pid):
    """(real uid, real gid) of a process."""
    uid = int(proc_status(pid, "Uid").split()[0])
    gid = int(proc_status(pid, "Gid").split()[0])
    return uid, gid


def connect_unix(path):
    """Connects to path and sends hello; what happened, as a string."""
    try:
        c = UnixClient(path, hello=False, timeout=3.0)
    except OSError as e:
        return "connect: %s" % os.strerror(e.errno)
    try:
        c.hello()
        return "hello answered"
    except Exception as e:
        return "hello: %s" % type(e).__name__
    finally:
        c.close()


def ensure_user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
        )
        return pwd.getpwnam(name)


@case("the running gateway: its own uid, no capability, no_new_privs, filtered, not dumpable, no core")
def gateway_status():
    with Sandbox() as sb:
        pid = sb.gateway_pid()
        uid, gid = ids_of(pid)
        expect(uid not in (0, NOBODY.pw_uid), "the gateway runs as uid %d" % uid)
        expect(gid not in (0, NOBODY.pw_gid), "the gateway runs as gid %d" % gid)
        expect_eq(proc_status(pid, "Uid").split(), [str(uid)] * 4, "Uid (real, effective, saved, fs)")
        expect_eq(proc_status(pid, "Groups"), str(gid), "supplementary groups")
        for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            expect_eq(int(proc_status(pid, field), 16), 0, field)
        expect_eq(proc_status(pid, "NoNewPrivs"), "1", "NoNewPrivs")
        expect_eq(proc_status(pid, "Seccomp"), "2", "Seccomp")
        # A process that is not dumpable has its /proc files owned by
        # root, not by its uid; and its own uid cannot read its memory.
        expect_eq(os.stat("/proc/%d/mem" % pid).st_uid, 0, "owner of /proc/PID/mem")

        def read_mem():
            with open("/proc/%d/mem" % pid, "rb"):
                return "opened"

        got = as_user(uid, gid, read_mem)
        expect(got.startswith("raised PermissionError"), "the gateway's uid opening its memory: %s" % got)
        with open("/proc/%d/limits" % pid) as f:
            core = [line.split()[4:6] for line in f if line.startswith("Max core file size")]
        expect_eq(core, [["0", "0"]], "core file size limit (soft, hard)")
        # And it still serves, under all that.
        sb.ws().call("ping")


@case("[gateway] user: the gateway runs as that user; without one, as the fallback ids, never root or nobody")
def gateway_user():
    pw = ensure_user(TEST_USER)
    with Sandbox(extra="[gateway]\nuser = %s\n" % TEST_USER) as sb:
        expect_eq(ids_of(sb.gateway_pid()), (pw.pw_uid, pw.pw_gid), "the gateway's ids")
        expect_eq(os.stat(sb.socket).st_gid, pw.pw_gid, "the socket's group")
        expect_eq(os.stat(sb.socket).st_mode & 0o777, 0o660, "the socket's mode")
        sb.ws().call("ping")
    with Sandbox(extra="[gateway]\nuser = no-such-user-berth\n") as sb:
        expect_eq(ids_of(sb.gateway_pid()), (FALLBACK_ID, FALLBACK_ID), "the fallback ids")
        expect("no user no-such-user-berth" in sb.log(), "the log says what to do")
        sb.ws().call("ping")


# Larger mappings are address space reserved, not memory written: the
# sanitizers' shadow, terabytes of it, mostly never touched.
REGION_MAX = 1 << 32
CHUNK = 16 << 20


def search_memory(pid, needle):
    """Where needle is in pid's readable memory (read as root)."""
    found = []
    with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            name = fields[5] if len(fields) > 5 else ""
            if "r" not in fields[1] or name in ("[vvar]", "[vsyscall]") or end - start > REGION_MAX:
                continue
            tail = b""
            for at in range(start, end, CHUNK):
                try:
                    mem.seek(at)
                    data = tail + mem.read(min(CHUNK, end - at))
                except (OSError, OverflowError, ValueError):
                    tail = b""
                    continue
                if needle in data:
                    found.append("%s %s" % (fields[0], name))
                    break
                tail = data[-len(needle) :]
    return found


@case("the gateway's memory holds no token: it never loads one, whatever clients present")
def no_token_in_memory():
    with Sandbox() as sb:
        token = sb.token
        # Clients that do not know the token: refused through berthd's
        # check, as before; the gateway had nothing to compare with.
        # None of them holds the token whole.
        last = "0" if token[-1] != "0" else "1"
        for bad in ("x" * len(token), token[:-1], token[:-1] + last):
            status, _ = ws_upgrade(sb.port, token=bad)
            expect_eq(status, 401, "an upgrade with a wrong token")
        status, _ = ws_upgrade(sb.port)
        expect_eq(status, 401, "an upgrade with no token")
        sb.metrics()
        pid = sb.gateway_pid()
        found = search_memory(pid, token.encode())
        expect(not found, "the token is in the gateway's memory at %s" % found)
        # The search does find what is there: the socket's path, which
        # the gateway was given.
        expect(search_memory(pid, sb.socket.encode()), "the search finds nothing at all")


@case("a local user other than the gateway's cannot connect to berthd's socket, nor talk if it could")
def other_users_refused():
    pw = ensure_user(TEST_USER)
    with Sandbox() as sb:
        gw_uid, gw_gid = ids_of(sb.gateway_pid())
        expect(pw.pw_uid != gw_uid, "the test user is the gateway's")
        for uid, gid in ((NOBODY.pw_uid, NOBODY.pw_gid), (pw.pw_uid, pw.pw_gid)):
            got = as_user(uid, gid, lambda: connect_unix(sb.socket))
            expect_eq(got, "connect: Permission denied", "uid %d connecting" % uid)
        # Even with the socket's mode opened, berthd refuses the peer.
        os.chmod(sb.socket, 0o666)
        got = as_user(NOBODY.pw_uid, NOBODY.pw_gid, lambda: connect_unix(sb.socket))
        expect(got.startswith("hello: "), "nobody on an open socket: %s" % got)
        # The gateway's uid gets in (what the gateway needs).
        got = as_user(gw_uid, gw_gid, lambda: connect_unix(sb.socket))
        expect_eq(got, "hello answered", "the gateway's uid")


def gateway_uid_session(path, token):
    """As the gateway's uid: what berthd answers to proc.start before a
    gateway.attach, after a wrong one, and after a right one."""
    out = {}

    def attempt(c, key):
        try:
            c.call("proc.start", {"argv": ["/bin/true"]})
            out[key] = "ok"
        except ProtoError as e:
            out[key] = e.code

    c = UnixClient(path, hello=False, timeout=5.0)
    out["capabilities"] = sorted(c.hello()["capabilities"])
    attempt(c, "before")
    for op in ("fs.read", "secrets.list", "service.list", "service.signal"):
        try:
            c.call(op, {"path": "/etc/hostname", "name": "gateway", "signal": "KILL"})
            out[op] = "ok"
        except ProtoError as e:
            out[op] = e.code
    for key, cred in (("wrong", "x" * len(token)), ("empty", "")):
        try:
            c.call("gateway.attach", {"peer": "1.2.3.4:5", "door": "v1", "credential": cred})
            out["attach_" + key] = "ok"
        except ProtoError as e:
            out["attach_" + key] = e.code
        attempt(c, "after_" + key)
    try:
        c.call("gateway.attach", {"peer": "1.2.3.4:5"})
        out["attach_bare"] = "ok"
    except ProtoError as e:
        out["attach_bare"] = e.code
    c.close()
    c = UnixClient(path, hello=True, timeout=5.0)
    c.call("gateway.attach", {"peer": "1.2.3.4:5", "door": "v1", "credential": token})
    attempt(c, "after_right")
    c.close()
    return out


@case("a gateway-uid connection without a valid credential can run nothing")
def gateway_uid_needs_credential():
    with Sandbox() as sb:
        uid, gid = ids_of(sb.gateway_pid())
        token = sb.token
        got = as_user(uid, gid, lambda: gateway_uid_session(sb.socket, token))
        expect(isinstance(got, dict), "the session: %s" % got)
        expect_eq(got["capabilities"], GATEWAY_OPS, "what hello offers the gateway's uid")
        expect_eq(got["before"], "forbidden", "proc.start before gateway.attach")
        for op in ("fs.read", "secrets.list", "service.list", "service.signal"):
            expect_eq(got[op], "forbidden", op + " before gateway.attach")
        expect_eq(got["attach_wrong"], "unauthorized", "gateway.attach with a wrong token")
        expect_eq(got["after_wrong"], "forbidden", "proc.start after a wrong gateway.attach")
        expect_eq(got["attach_empty"], "unauthorized", "gateway.attach with an empty credential")
        expect_eq(got["after_empty"], "forbidden", "proc.start after an empty credential")
        expect_eq(got["attach_bare"], "bad_args", "gateway.attach with no credential")
        # The same connection with the token is a remote client's.
        expect_eq(got["after_right"], "ok", "proc.start after gateway.attach with the token")


def gateway_uid_events(path):
    """As the gateway's uid: the kinds of the events a subscription from
    the start of the journal gets within a second."""
    c = UnixClient(path, hello=True, timeout=5.0)
    c.subscribe(from_seq=1)
    kinds = []
    try:
        while True:
            kinds.append(c.next_event(1.0)["kind"])
    except Exception:
        pass
    c.close()
    return kinds


@case("the gateway's uid, no client attached, reads only the checks' events from the journal (no port.opened)")
def gateway_uid_events_filtered():
    extra = "[service desk]\ncommand = sleep 1000\nready = tcp 127.0.0.1:1\n"
    with Sandbox(extra=extra) as sb:
        c = sb.unix()
        c.call("proc.start", {"argv": ["/bin/true"]})
        sb.wait_event(lambda e: e["kind"] == "proc.exited", 10)
        # The gateway's own listener, at least, is journaled as opened.
        sb.wait_event(lambda e: e["kind"] == "port.opened", 10)
        uid, gid = ids_of(sb.gateway_pid())
        kinds = as_user(uid, gid, lambda: gateway_uid_events(sb.socket))
        expect(isinstance(kinds, list), "the subscription: %s" % kinds)
        expect("check.changed" in kinds, "no check.changed among %r" % kinds)
        others = [k for k in kinds if not k.startswith("check.")]
        expect(not others, "the gateway's uid read %r" % others)
        # Root's subscription has them all, proc.started among them.
        root = [e["kind"] for e in sb.events()]
        expect("proc.started" in root and "port.opened" in root, "root's events: %r" % root)


@case("the probe runs as the gateway's user and holds no master token")
def probe_identity():
    port_holder = socket.socket()
    port_holder.bind(("127.0.0.1", 0))
    port = port_holder.getsockname()[1]
    port_holder.close()
    extra = "[service desk]\ncommand = sleep 1000\nready = novnc http://127.0.0.1:%d/novnc/\n" % port
    with Sandbox(extra=extra) as sb:
        probe = host_pid(sb, "berth-probe", timeout=20)
        gw = ids_of(sb.gateway_pid())
        expect_eq(ids_of(probe), gw, "the probe's ids")
        expect_eq(int(proc_status(probe, "CapEff"), 16), 0, "CapEff of the probe")
        expect_eq(int(proc_status(probe, "CapBnd"), 16), 0, "CapBnd of the probe")
        # From its first steps on (found just after its exec, it may not
        # have got there yet).
        wait_for(lambda: os.stat("/proc/%d/mem" % probe).st_uid == 0, 5, "the probe not dumpable")
        token = sb.token.encode()
        with open("/proc/%d/cmdline" % probe, "rb") as f:
            expect(token not in f.read(), "the token is in the probe's command line")
        with open("/proc/%d/environ" % probe, "rb") as f:
            expect(token not in f.read(), "the token is in the probe's environment")
        expect(not search_memory(probe, token), "the token is in the probe's memory")


run()
