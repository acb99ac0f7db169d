#!/usr/bin/python3
"""Attacks on berthd's file operations, its artifact store and the
commands it runs for a user, each tried for real from the attacker's side:
the attacker is the unprivileged user nobody (its steps run as nobody),
berthd runs as root, and the backend (a root client) then does what it
would do in the attacker's directory. Each case is named after the attack
it tries."""

import os
import pwd
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    Sandbox,
    case,
    expect,
    expect_eq,
    note,
    read_to_eof,
    run,
    scratch,
)

PY = "/usr/bin/python3"
ATTACKER = "nobody"
CANARY = "BERTH_ATTACK_CANARY"


def attacker_ids():
    pw = pwd.getpwnam(ATTACKER)
    return pw.pw_uid, pw.pw_gid


def as_attacker(code, **kw):
    """Runs Python code as the attacker; returns the CompletedProcess."""
    uid, gid = attacker_ids()
    return subprocess.run(
        [PY, "-c", code], user=uid, group=gid, extra_groups=[], capture_output=True, timeout=30, **kw
    )


def attacker_home():
    """A directory the attacker owns, as their home would be."""
    d = scratch()
    home = os.path.join(d, "home")
    os.mkdir(home, 0o755)
    os.chown(home, *attacker_ids())
    return home


def plant(link, target):
    r = as_attacker("import os; os.symlink(%r, %r)" % (target, link))
    expect_eq(r.returncode, 0, "the attacker planted %s -> %s: %r" % (link, target, r.stderr))


def root_file(content, mode=0o600):
    """A root file in a root directory, out of the attacker's reach."""
    d = scratch()
    f = os.path.join(d, "root-only")
    with open(f, "wb") as o:
        o.write(content)
    os.chmod(f, mode)
    return d, f


def call_error(c, op, args):
    """Sends op, which must fail; returns the error map."""
    r = c.request(op, args, timeout=30)
    expect(not r.get("ok"), "%s %s succeeded: %r" % (op, harness.short(args, 200), harness.short(r, 300)))
    return r["error"]


def refused(c, op, args, code, path):
    e = call_error(c, op, args)
    expect_eq((e["code"], e.get("path")), (code, path), "%s %r: the error (%r)" % (op, args, e.get("message")))
    return e


@case("a symlink to the token planted where the backend publishes: refused, and the store is unreadable to the user")
def publish_planted_token_link():
    home = attacker_home()
    with Sandbox() as sb:
        token = sb.token.encode()
        c = sb.ws()
        plant(home + "/report.pdf", sb.token_file)
        e = refused(c, "artifact.publish", {"path": home + "/report.pdf"}, "symlink", home + "/report.pdf")
        note(e["message"])
        os.mkdir(home + "/../out")
        plant(home + "/out", sb.state_dir)
        refused(c, "artifact.publish", {"path": home + "/out/berthd.sock"}, "symlink", home + "/out/berthd.sock")
        refused(c, "artifact.publish", {"path": home + "/report.pdf", "as": ATTACKER, "follow_symlinks": True},
                "permission_denied", home + "/report.pdf")
        listed = c.call("artifact.list", {})["artifacts"]
        expect_eq(listed, [], "nothing was published")

        with open(home + "/ok.txt", "w") as f:
            f.write("a fine report\n")
        ref = c.call("artifact.publish", {"path": home + "/ok.txt"})
        store = os.path.join(sb.state_dir, "artifacts")
        expect_eq(oct(os.stat(store).st_mode & 0o777), oct(0o700), "the store's mode")
        for name in os.listdir(store):
            expect_eq(oct(os.stat(os.path.join(store, name)).st_mode & 0o777), oct(0o600), "%s's mode" % name)
        for p in (store, os.path.join(store, ref["id"]), os.path.join(store, "index")):
            r = as_attacker("import os, sys\np = %r\n"
                            "try:\n    print(os.listdir(p) if os.path.isdir(p) else open(p).read())\n"
                            "except PermissionError:\n    sys.exit(3)\n" % p)
            expect_eq(r.returncode, 3, "the user read %s: %r" % (p, r.stdout))
            expect(token not in r.stdout, "the token came out")


@case("an older store of 0755 and 0644 files is tightened to 0700 and 0600 at start")
def publish_old_store_tightened():
    d = scratch()
    with open(d + "/a.txt", "w") as f:
        f.write("kept\n")
    with Sandbox() as sb:
        ref = sb.ws().call("artifact.publish", {"path": d + "/a.txt"})
        store = os.path.join(sb.state_dir, "artifacts")
        sb.stop()
        os.chmod(store, 0o755)
        for n in os.listdir(store):
            os.chmod(os.path.join(store, n), 0o644)
        sb.start()
        expect_eq(oct(os.stat(store).st_mode & 0o777), oct(0o700), "the store's mode after a start")
        for n in os.listdir(store):
            expect_eq(oct(os.stat(os.path.join(store, n)).st_mode & 0o777), oct(0o600), "%s's mode" % n)
        r = sb.ws().call("artifact.read", {"id": ref["id"]})
        expect_eq(r["data"], b"kept\n", "the artifact is still there")


@case("fs.read through a planted symlink to the token, last component or above: refused, nothing read")
def read_planted_token_link():
    home = attacker_home()
    with Sandbox() as sb:
        c = sb.ws()
        plant(home + "/notes.txt", sb.token_file)
        plant(home + "/cfg", os.path.dirname(sb.token_file))
        for p in (home + "/notes.txt", home + "/cfg/" + os.path.basename(sb.token_file)):
            e = refused(c, "fs.read", {"path": p}, "symlink", p)
            expect(sb.token not in e["message"], "the token in the error")
        for op in ("fs.list", "fs.stat"):
            refused(c, op, {"path": home + "/cfg/" + os.path.basename(sb.token_file)}, "symlink",
                    home + "/cfg/" + os.path.basename(sb.token_file))
        r = c.call("fs.stat", {"path": home + "/notes.txt"})
        expect_eq((r["type"], r["target"]), ("symlink", sb.token_file), "fs.stat of the link itself still works")
        r = c.call("fs.list", {"path": home})
        expect_eq(sorted(e["name"] for e in r["entries"]), ["cfg", "notes.txt"], "fs.list of the links")


@case("fs.chmod through a planted symlink to a root 0600 file: refused, the file stays 0600")
def chmod_planted_link():
    home = attacker_home()
    d, victim = root_file(b"root's\n")
    with Sandbox() as sb:
        c = sb.ws()
        plant(home + "/mine", victim)
        plant(home + "/dir", d)
        refused(c, "fs.chmod", {"path": home + "/mine", "mode": 0o777}, "symlink", home + "/mine")
        refused(c, "fs.chmod", {"path": home + "/dir/root-only", "mode": 0o777}, "symlink", home + "/dir/root-only")
        expect_eq(oct(os.stat(victim).st_mode & 0o7777), oct(0o600), "the root file's mode")
        expect_eq(oct(os.lstat(home + "/mine").st_mode & 0o170000), oct(0o120000), "the link is still a link")


@case("fs.write and fs.mkdir into a directory that is a planted symlink to a root directory: refused, nothing made")
def write_into_planted_dir_link():
    home = attacker_home()
    d, victim = root_file(b"root's\n")
    with Sandbox() as sb:
        c = sb.ws()
        plant(home + "/uploads", d)
        for data in ({"offset": 0, "data": b"evil", "done": True}, {}):
            refused(c, "fs.write", dict({"path": home + "/uploads/new"}, **data), "symlink", home + "/uploads/new")
        refused(c, "fs.write", {"path": home + "/uploads/a/b", "offset": 0, "data": b"x", "parents": True},
                "symlink", home + "/uploads/a/b")
        refused(c, "fs.mkdir", {"path": home + "/uploads/sub"}, "symlink", home + "/uploads/sub")
        refused(c, "fs.mkdir", {"path": home + "/uploads/x/y", "parents": True}, "symlink", home + "/uploads/x/y")
        refused(c, "fs.move", {"from": home + "/uploads/root-only", "to": home + "/stolen"}, "symlink",
                home + "/uploads/root-only")
        refused(c, "fs.remove", {"path": home + "/uploads/root-only"}, "symlink", home + "/uploads/root-only")
        expect_eq(sorted(os.listdir(d)), ["root-only"], "the root directory's entries")
        r = c.call("fs.remove", {"path": home + "/uploads"})
        expect_eq(r["removed"], 1, "the link itself is removed")
        expect(os.path.exists(victim), "the file behind the link")


HOLDER = r"""
import os, sys
fds = {}
for p in sys.argv[1:]:
    fds[p] = os.open(p, os.O_RDWR | os.O_CREAT, 0o666)
print("ready", flush=True)
sys.stdin.readline()
for p, fd in fds.items():
    os.lseek(fd, 0, 0)
    print(p, len(os.read(fd, 1 << 20)), flush=True)
"""


@case("the partial upload pre-created and held open by the user: the upload goes elsewhere, the user gets nothing")
def upload_partial_precreated():
    home = attacker_home()
    secret = b"the backend's secret report\n" * 1000
    guesses = [home + "/.report.berth-upload", home + "/.report.0000000000000000.berth-upload"]
    uid, gid = attacker_ids()
    with Sandbox() as sb:
        c = sb.ws()
        holder = subprocess.Popen([PY, "-c", HOLDER] + guesses, user=uid, group=gid, extra_groups=[],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            expect_eq(holder.stdout.readline(), b"ready\n", "the attacker holds the guessed partials")
            c.call("fs.write", {"path": home + "/report", "offset": 0, "data": secret[:5000]})
            expect_eq(c.call("fs.write", {"path": home + "/report"})["pending"], 5000, "pending, found again")
            c.call("fs.write", {"path": home + "/report", "offset": 5000, "data": secret[5000:], "done": True})
            holder.stdin.write(b"go\n")
            holder.stdin.flush()
            out, _ = holder.communicate(timeout=20)
        finally:
            holder.kill()
        expect_eq(out.decode().split(), [guesses[0], "0", guesses[1], "0"], "what the attacker read")
        with open(home + "/report", "rb") as f:
            expect_eq(f.read(), secret, "the upload")
        st = os.stat(home + "/report")
        expect_eq((st.st_uid, st.st_nlink, oct(st.st_mode & 0o777)), (0, 1, oct(0o644)), "the target")
        r = as_attacker("open(%r).read()" % (home + "/report"))
        expect_eq(r.returncode, 0, "the report was given 0644: readable")


@case("a hard link to the partial upload taken before done: that file is no longer the upload, done is refused")
def upload_partial_linked():
    d = scratch()
    with Sandbox() as sb:
        c = sb.ws()
        c.call("fs.write", {"path": d + "/t", "offset": 0, "data": b"secret"})
        part = [n for n in os.listdir(d) if n.endswith(".berth-upload")]
        expect_eq(len(part), 1, "one partial")
        os.link(d + "/" + part[0], d + "/kept")
        expect_eq(c.call("fs.write", {"path": d + "/t"})["pending"], 0, "a linked partial is not the upload's")
        refused(c, "fs.write", {"path": d + "/t", "done": True}, "not_found", d + "/t")
        refused(c, "fs.write", {"path": d + "/t", "offset": 6, "data": b"!", "done": True}, "conflict", d + "/t")
        expect(not os.path.exists(d + "/t"), "the target was made from a linked partial")
        c.call("fs.write", {"path": d + "/t", "offset": 0, "data": b"fresh", "done": True})
        expect_eq(open(d + "/t", "rb").read(), b"fresh", "a fresh upload")
        expect_eq(open(d + "/kept", "rb").read(), b"secret", "the linked file was not touched")


@case("fs ops as the user (\"as\") have the user's rights: a root 0600 file is unreadable, writes are the user's")
def ops_as_user():
    home = attacker_home()
    d, victim = root_file(b"root's\n")
    os.chmod(d, 0o755)
    with Sandbox() as sb:
        c = sb.ws()
        refused(c, "fs.read", {"path": victim, "as": ATTACKER}, "permission_denied", victim)
        refused(c, "fs.chmod", {"path": victim, "mode": 0o777, "as": ATTACKER}, "permission_denied", victim)
        refused(c, "fs.write", {"path": d + "/new", "offset": 0, "data": b"x", "done": True, "as": ATTACKER},
                "permission_denied", d + "/new")
        refused(c, "fs.remove", {"path": victim, "as": ATTACKER}, "permission_denied", victim)
        expect_eq(oct(os.stat(victim).st_mode & 0o777), oct(0o600), "the root file's mode")
        r = c.call("fs.write", {"path": home + "/mine", "offset": 0, "data": b"hi", "done": True, "as": ATTACKER})
        st = os.stat(home + "/mine")
        expect_eq((st.st_uid, st.st_gid), attacker_ids(), "a file written as the user is the user's")
        expect_eq(c.call("fs.read", {"path": home + "/mine", "as": ATTACKER})["data"], b"hi", "read back as the user")
        c.call("fs.mkdir", {"path": home + "/sub", "as": ATTACKER})
        expect_eq(os.stat(home + "/sub").st_uid, attacker_ids()[0], "a directory made as the user")
        expect_eq(c.call("fs.read", {"path": victim})["data"], b"root's\n", "root still reads it")
        for bad in ("no-such-user-here", 7, ""):
            e = call_error(c, "fs.stat", {"path": home, "as": bad})
            expect_eq(e["code"], "bad_args", "as %r" % (bad,))


@case("follow_symlinks: true follows a symlink, for read, stat, list, chmod and write")
def follow_symlinks_follows():
    d = scratch()
    os.mkdir(d + "/real")
    with open(d + "/real/f", "wb") as f:
        f.write(b"content")
    os.symlink("real", d + "/link")
    with Sandbox() as sb:
        c = sb.ws()
        fs = {"follow_symlinks": True}
        expect_eq(c.call("fs.read", dict(fs, path=d + "/link/f"))["data"], b"content", "read")
        expect_eq(c.call("fs.stat", dict(fs, path=d + "/link"))["type"], "dir", "stat")
        expect_eq([e["name"] for e in c.call("fs.list", dict(fs, path=d + "/link"))["entries"]], ["f"], "list")
        c.call("fs.chmod", dict(fs, path=d + "/link/f", mode=0o640))
        expect_eq(oct(os.stat(d + "/real/f").st_mode & 0o777), oct(0o640), "chmod")
        c.call("fs.write", dict(fs, path=d + "/link/g", offset=0, data=b"g", done=True))
        expect_eq(open(d + "/real/g", "rb").read(), b"g", "write")
        refused(c, "fs.read", {"path": d + "/link/f"}, "symlink", d + "/link/f")


def env_of(c, args):
    p = c.call("proc.start", dict(args, attach=True))
    ids = ["proc/%s/stdout" % p["id"], "proc/%s/stderr" % p["id"]]
    got = read_to_eof(c, ids, timeout=30)
    c.call("proc.wait", {"id": p["id"]}, timeout=30)
    return dict(line.split("=", 1) for line in got[ids[0]].decode().splitlines() if "=" in line)


@case("a command run for a user sees only the documented environment, none of berthd's")
def command_env_clean():
    os.environ[CANARY] = "berthd-only"
    try:
        sb = Sandbox()
    finally:
        del os.environ[CANARY]
    with sb:
        c = sb.ws()
        env = env_of(c, {"argv": ["/usr/bin/env"], "user": ATTACKER, "env": {"MINE": "1"}})
        pw = pwd.getpwnam(ATTACKER)
        expect_eq(env, {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": pw.pw_dir,
                        "USER": ATTACKER, "LOGNAME": ATTACKER, "SHELL": pw.pw_shell, "MINE": "1"},
                  "the environment of a command run as the user")
        env = env_of(c, {"argv": ["/usr/bin/env"]})
        expect_eq(env.get(CANARY), "berthd-only", "without user: berthd's environment, as before")


@case("fs.watch of a planted symlink to a root-only directory, last component or above: refused with symlink")
def watch_planted_dir_link():
    home = attacker_home()
    d, victim = root_file(b"root's\n")
    os.chmod(d, 0o700)
    with Sandbox() as sb:
        c = sb.ws(timeout=20)
        plant(home + "/watched", d)
        for args in (
            {"path": home + "/watched"},
            {"path": home + "/watched", "recursive": True},
            {"path": home + "/watched", "as": ATTACKER},
            {"path": home + "/watched/root-only"},
            {"path": home + "/watched/root-only", "as": ATTACKER},
        ):
            e = refused(c, "fs.watch", args, "symlink", args["path"])
        note(e["message"])
        expect_eq(c.call("fs.watches")["watches"], [], "no watch was made")
        refused(c, "fs.watch", {"path": home + "/watched", "as": ATTACKER, "follow_symlinks": True},
                "permission_denied", home + "/watched")
        refused(c, "fs.watch", {"path": d, "as": ATTACKER}, "permission_denied", d)
        refused(c, "fs.watch", {"path": victim, "as": ATTACKER}, "permission_denied", victim)
        os.chmod(d, 0o711)
        refused(c, "fs.watch", {"path": d, "as": ATTACKER}, "permission_denied", d)
        expect_eq(c.call("fs.watches")["watches"], [], "no watch was made as the user")


def changes_until(c, wid, path):
    """The fs.changed changes of watch wid until one names path."""
    got = []

    def arrived(ev):
        if ev["kind"] != "fs.changed" or ev["data"]["watch"] != wid:
            return False
        got.extend(ev["data"]["changes"])
        return any(ch["path"] == path for ch in ev["data"]["changes"])

    c.events_until(arrived, 20)
    return got


@case("a recursive watch as the user goes through no planted link, nor into a directory the user cannot read")
def watch_tree_as_user():
    home = attacker_home()
    d, victim = root_file(b"")
    os.chmod(d, 0o755)
    os.mkdir(home + "/locked", 0o700)
    with Sandbox() as sb:
        c = sb.ws(timeout=20)
        plant(home + "/before", d)
        w = c.call("fs.watch", {"path": home, "recursive": True, "as": ATTACKER})
        c.subscribe()
        plant(home + "/after", d)
        with open(d + "/through-link", "w") as f:
            f.write("x")
        with open(home + "/locked/secret-name", "w") as f:
            f.write("x")
        r = as_attacker("open(%r, 'w').write('m')" % (home + "/mark"))
        expect_eq(r.returncode, 0, "the user wrote a mark: %r" % r.stderr)
        got = changes_until(c, w["id"], home + "/mark")
        told = sorted(ch["path"] for ch in got)
        expect_eq(told, [home + "/after", home + "/mark"], "what the user's watch told")
        listed = {x["id"]: x for x in c.call("fs.watches")["watches"]}
        expect_eq(listed[w["id"]]["dirs"], 1, "directories the user's watch holds")
        root = c.call("fs.watch", {"path": home, "recursive": True})
        listed = {x["id"]: x for x in c.call("fs.watches")["watches"]}
        expect_eq(listed[root["id"]]["dirs"], 2, "without as, berthd's watch holds the locked directory too")


run()
