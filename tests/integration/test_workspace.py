"""Workspaces (workspace.prepare), against a real git server over HTTPS on
loopback (git http-backend behind a TLS server with a self-signed
certificate the runtime's env trusts): a public branch cloned as the
runtime's user with progress events; a private repository with basic
auth, and git's reason when the credential is missing or wrong; the
credential nowhere afterwards (state directory, journal, logs, the
clone's .git) nor in any process's cmdline or environ while the clone
runs; refused URLs that run nothing; a re-prepare that fetches a new
commit; a dirty workspace or another repository's clone left alone; and,
from the runtime's side, a workspace's .git/config rewritten by its user
or a server's redirect that would send the credential to another server:
it never gets there."""

import os
import base64
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import msgpack  # noqa: E402

from harness import (  # noqa: E402
    Sandbox,
    TRANSPORTS,
    berth,
    case,
    desktop_user,
    expect,
    expect_eq,
    files_under,
    note,
    process_texts,
    run,
    scratch,
    text_ok,
    wait_for,
)
from harness.gitserver import GitServer, TunnelProxy, git  # noqa: E402
from harness.memory import memory_holds, vm_flags  # noqa: E402

RUNTIME = "ws"
GIT = "/usr/bin/git"


def runtime_config(gs, home):
    """A runtime whose only use here is its user, workspace and env:
    workspace.prepare starts no runtime."""
    return (
        "[runtime %s]\ncommand = /bin/true\nuser = agent\nworkspace = %s/workspace\n"
        "env = GIT_SSL_CAINFO=%s\nenv = HOME=%s\ntui =\n" % (RUNTIME, home, gs.cafile, home)
    )


def agent_home():
    """A home of the case's own, the agent user's."""
    pw = desktop_user()
    home = scratch(0o755)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    return home, pw


def prepare(c, args, timeout=60):
    return c.request("workspace.prepare", dict({"runtime": RUNTIME}, **args), timeout=timeout)


def result_of(r, what):
    expect(r.get("ok"), "%s: %r" % (what, r.get("error")))
    return r["result"]


def error_of(r, code, what):
    expect(not r.get("ok"), "%s succeeded where %s was expected: %r" % (what, code, r.get("result")))
    expect_eq(r["error"]["code"], code, "the error code of %s (%r)" % (what, r["error"]))
    return r["error"]


def owners(root):
    """The uids owning the files under root, .git excluded."""
    out = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git"]
        for f in files:
            out.add(os.lstat(os.path.join(d, f)).st_uid)
    return out


def head_of(dir):
    return git("-C", dir, "-c", "safe.directory=*", "rev-parse", "HEAD")


def kinds(sb, kind):
    return [ev["data"] for ev in sb.events() if ev["kind"] == kind]


def many_files(n, random_bytes=256):
    """Enough content that git reports progress in several steps (random
    bytes do not compress: they make the pack as large as wanted)."""
    return {"src/f%03d.txt" % i: ("line %d\n" % i) * 200 + os.urandom(random_bytes).hex() for i in range(n)}


@case("a public branch is cloned as the runtime's user, with progress and a prepared event")
def t_public_clone():
    gs = GitServer()
    repo = gs.repo("pub")
    main1 = repo.commit("main", many_files(60))
    main2 = repo.commit("main", {"README": "two\n"})
    dev = repo.commit("dev", {"dev.txt": "on dev\n"})
    home, pw = agent_home()
    with Sandbox(extra=runtime_config(gs, home)) as sb:
        c = sb.ws()
        dest = os.path.join(home, "ws")
        res = result_of(prepare(c, {"repo": gs.url("pub"), "branch": "dev", "dir": dest}), "prepare dev")
        expect_eq(res["commit"], dev, "the commit prepared")
        expect_eq(res["branch"], "dev", "the branch prepared")
        expect_eq(res["cloned"], True, "cloned")
        expect_eq(res["dir"], dest, "dir")
        expect_eq(res["repo"], gs.url("pub"), "repo")
        expect_eq(head_of(dest), dev, "HEAD of the clone")
        with open(os.path.join(dest, "dev.txt")) as f:
            expect_eq(f.read(), "on dev\n", "dev.txt")
        expect(os.path.exists(os.path.join(dest, "src", "f059.txt")), "main's files are there too")
        expect_eq(owners(dest), {pw.pw_uid}, "the owners of the files")
        expect_eq(os.lstat(os.path.join(dest, ".git")).st_uid, pw.pw_uid, "the owner of .git")
        progress = [p for p in kinds(sb, "workspace.progress") if p["dir"] == dest]
        note("progress events: %r" % progress[:12])
        expect(progress, "no workspace.progress event")
        phases = {p["phase"] for p in progress}
        expect("receiving" in phases, "no receiving phase in %r" % phases)
        for p in progress:
            expect(p["phase"] in ("counting", "compressing", "receiving", "resolving", "checkout"),
                   "phase %r" % p["phase"])
            expect(p["total"] == 0 or p["objects"] <= p["total"], "objects past total: %r" % p)
        recv = [p for p in progress if p["phase"] == "receiving"]
        expect(max(p["total"] for p in recv) >= 60, "receiving's total %r is below the files sent" % recv)
        done = [p for p in kinds(sb, "workspace.prepared") if p["dir"] == dest]
        expect_eq(len(done), 1, "workspace.prepared events")
        expect_eq((done[0]["commit"], done[0]["branch"], done[0]["cloned"]), (dev, "dev", True),
                  "workspace.prepared's data")
        err = error_of(prepare(c, {"repo": gs.url("pub"), "branch": "nope", "dir": home + "/n"}),
                       "git_failed", "a branch the server has not")
        expect("nope" in err["message"] and "not found" in err["message"], "git's reason: %r" % err["message"])
        expect(not os.path.exists(home + "/n"), "the failed clone left its directory")
        # The default: the runtime's workspace, the remote's HEAD.
        res = result_of(prepare(c, {"repo": gs.url("pub")}), "prepare the default")
        expect_eq((res["dir"], res["branch"], res["commit"]), (home + "/workspace", "main", main2),
                  "the default workspace and branch")
        expect(main1 != main2, "two commits on main")


@case("a private repository is cloned with the credential; without it or with a wrong one, git's reason")
def t_private_clone():
    gs = GitServer()
    secret = "pw-" + os.urandom(12).hex()
    wrong = "wrong-" + os.urandom(12).hex()
    repo = gs.repo("priv", private=("alice", secret))
    head = repo.commit("main", {"a.txt": "private\n"})
    home, pw = agent_home()
    with Sandbox(extra=runtime_config(gs, home)) as sb:
        c = sb.ws()
        dest = os.path.join(home, "p")
        err = error_of(prepare(c, {"repo": gs.url("priv"), "dir": dest}), "git_failed", "no credential")
        note("without a credential: %s" % err["message"])
        expect("Username" in err["message"] or "credential" in err["message"].lower(),
               "the reason names the missing credential: %r" % err["message"])
        err = error_of(prepare(c, {"repo": gs.url("priv"), "dir": dest,
                                   "credential": {"username": "alice", "password": wrong}}),
                       "git_failed", "a wrong password")
        note("with a wrong one: %s" % err["message"])
        expect("Authentication failed" in err["message"], "git's reason: %r" % err["message"])
        expect(wrong not in msgpack.packb(err).decode(errors="replace"), "the wrong password is in the error")
        expect(not os.path.exists(dest), "a failed clone left %s" % dest)
        failed = [f for f in kinds(sb, "workspace.failed") if f["dir"] == dest]
        expect_eq(len(failed), 2, "workspace.failed events")
        expect("Authentication failed" in failed[1]["reason"], "the event's reason: %r" % failed[1])
        # A password that is also in the URL git names in its reason: the
        # reason comes back redacted.
        echo = "e" + os.urandom(10).hex()
        gs.repo(echo, private=("alice", secret)).commit("main", {"e": "e\n"})
        err = error_of(prepare(c, {"repo": gs.url(echo), "dir": dest,
                                   "credential": {"username": "alice", "password": echo}}),
                       "git_failed", "a password git names")
        note("a reason that held the password: %s" % err["message"])
        expect(echo not in err["message"] and "[redacted" in err["message"],
               "the reason is not redacted: %r" % err["message"])
        expect(echo not in repr([f["reason"] for f in kinds(sb, "workspace.failed")]),
               "a workspace.failed reason holds the password")
        res = result_of(prepare(c, {"repo": gs.url("priv"), "dir": dest,
                                    "credential": {"username": "alice", "password": secret}}), "the right one")
        expect_eq((res["commit"], res["cloned"]), (head, True), "the private clone")
        expect_eq(owners(dest), {pw.pw_uid}, "the owners of the files")
        # A fetch needs the credential again: it was one-shot.
        newer = repo.commit("main", {"a.txt": "newer\n"})
        err = error_of(prepare(c, {"repo": gs.url("priv"), "dir": dest}), "git_failed", "a fetch without it")
        expect("Username" in err["message"], "the fetch's reason: %r" % err["message"])
        res = result_of(prepare(c, {"repo": gs.url("priv"), "dir": dest,
                                    "credential": {"username": "alice", "password": secret}}), "a fetch with it")
        expect_eq((res["commit"], res["cloned"]), (newer, False), "the private fetch")


def identity(pid):
    """(uid, NoNewPrivs) of a process, or None once it is gone."""
    try:
        with open("/proc/%s/status" % pid) as f:
            status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        return int(status["Uid"].split()[0]), status["NoNewPrivs"]
    except (OSError, KeyError, ValueError):
        return None


@case("the credential appears nowhere: not in files, logs, events, nor any process's cmdline or environ",
      timeout=120)
def t_credential_nowhere():
    # Each round of the protocol waits, and the pack comes slowly: the
    # clone lasts long enough to be watched.
    gs = GitServer(delay=0.5, chunk_delay=0.1)
    user = "u-" + os.urandom(16).hex()
    secret = "pw-" + os.urandom(16).hex()
    repo = gs.repo("priv", private=(user, secret))
    head = repo.commit("main", many_files(150, 2048))
    home, pw = agent_home()
    with Sandbox(extra=runtime_config(gs, home)) as sb:
        c = sb.ws()
        dest = os.path.join(home, "p")
        found, seen = [], set()
        stop = threading.Event()

        ids = set()
        berthd = sb.berthd_pid()
        held = {}

        def scan_berthd():
            """Where berthd holds the credential while git runs: only in
            mappings locked against swap and kept out of core dumps."""
            locked = {s for s, f in vm_flags(berthd).items() if {"lo", "dd"} <= set(f)}
            held["anywhere"] = memory_holds(berthd, [secret.encode()])
            held["outside"] = memory_holds(berthd, [secret.encode()], skip=locked)

        def watch():
            while not stop.is_set():
                if "cmdline:git" in seen and not held:
                    scan_berthd()
                for pid, what, text in process_texts():
                    # Other programs on the machine may run git too: only
                    # this sandbox's count.
                    if (b"berth-workspace" in text or b"remote-https" in text) and sb.in_namespace(int(pid)):
                        seen.add(what + ":" + (b"remote-https" in text and "git" or "helper"))
                        if what == "cmdline":
                            ids.add(identity(pid))
                    for part in (secret, user):
                        if part.encode() in text:
                            found.append((pid, what, part == secret and "password" or "username"))
                stop.wait(0.02)

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        try:
            res = result_of(prepare(c, {"repo": gs.url("priv"), "dir": dest,
                                        "credential": {"username": user, "password": secret}}, timeout=90),
                            "the slow private clone")
        finally:
            stop.set()
            t.join(5)
        expect_eq(res["commit"], head, "the commit cloned")
        done = [p for p in kinds(sb, "workspace.prepared") if p["dir"] == dest][0]
        progress = [p for p in kinds(sb, "workspace.progress") if p["dir"] == dest]
        phases = len({p["phase"] for p in progress})
        note("%d progress events in %d ms, %d phases" % (len(progress), done["duration_ms"], phases))
        note("progress: %r" % progress)
        last = [p for p in progress if p["phase"] == "receiving"][-1]
        expect_eq(last["objects"], last["total"], "receiving's last event (its end)")
        got = max((p["bytes"] for p in progress if p["phase"] == "receiving"), default=0)
        expect(got > 100 * 1024, "receiving's bytes reached %d, below the pack's size" % got)
        expect(done["duration_ms"] > 1000, "the clone took %d ms: too fast to watch" % done["duration_ms"])
        expect(len(progress) <= done["duration_ms"] / 100 + 2 * phases + 1,
               "%d progress events in %d ms: more than ten a second" % (len(progress), done["duration_ms"]))
        note("processes seen during the clone: %r" % sorted(seen))
        expect("cmdline:git" in seen and "cmdline:helper" in seen,
               "the watch never saw git's or berth-workspace's processes: %r" % sorted(seen))
        expect(not found, "the credential was in a process's cmdline or environ: %r" % found[:5])
        note("berthd's memory during the clone: %r" % {k: bool(v) for k, v in held.items()})
        expect(held.get("anywhere"), "the scan of berthd's memory during the clone found no copy of the "
               "credential (%r)" % held)
        expect(not held.get("outside"), "berthd holds the credential outside locked, undumpable memory")
        ids.discard(None)
        note("uid and NoNewPrivs of git and berth-workspace: %r" % sorted(ids))
        expect(ids == {(pw.pw_uid, "1")}, "git or berth-workspace ran as %r, not the runtime's user with "
               "no_new_privs" % sorted(ids))
        expect(any(a for n, a in gs.auths if n == "priv" and a), "git never sent the credential")
        for where, root in (("the state directory", sb.state_dir), ("the clone", dest), ("the home", home)):
            for path, data in files_under(root):
                for part in (secret, user):
                    expect(part.encode() not in data, "%s: %s holds the credential" % (where, path))
        # berthd wiped its copies: the request's, the job's, the pipe's. The
        # scan finds a value berthd does hold (a secret set for the purpose).
        control = os.urandom(16).hex()
        c.call("secrets.set", {"CONTROL": control.encode()})
        pid = sb.berthd_pid()
        expect_eq(memory_holds(pid, [control.encode()]), {control.encode()}, "the scan of berthd's memory")
        held = memory_holds(pid, [secret.encode(), user.encode()])
        expect(not held, "berthd's memory still holds the credential's %s"
               % " and ".join(sorted("password" if v == secret.encode() else "username" for v in held)))
        log = sb.log()
        for part in (secret, user):
            expect(part not in log, "berthd's or the gateway's log holds the credential")
            expect(part.encode() not in sb.journal_bytes(), "the journal holds the credential")
            expect(part not in repr(sb.events()), "an event holds the credential")


@case("refused URLs, dirs and runtimes: bad_args or not_found, nothing run, nothing created")
def t_refused():
    gs = GitServer()
    gs.repo("pub").commit("main", {"a": "a\n"})
    home, pw = agent_home()
    token = "tok" + os.urandom(8).hex()
    port = gs.port
    with Sandbox(extra=runtime_config(gs, home)) as sb:
        c = sb.ws()
        dest = os.path.join(home, "never")
        marker = os.path.join(home, "ran")
        bad = [
            ("http://127.0.0.1:%d/pub.git" % port, "scheme"),
            ("ssh://git@127.0.0.1/pub.git", "scheme"),
            ("git://127.0.0.1/pub.git", "scheme"),
            ("file:///tmp/pub.git", "scheme"),
            ("ext::sh%20-c%20touch%20" + marker, "scheme"),
            ("HTTPS://127.0.0.1:%d/pub.git" % port, "scheme"),
            ("https://%s@127.0.0.1:%d/pub.git" % (token, port), "username/password"),
            ("https://alice:%s@127.0.0.1:%d/pub.git" % (token, port), "username/password"),
            ("https://127.0.0.1:%d/pub.git?access_token=%s" % (port, token), "query"),
            ("https://127.0.0.1:%d/pub.git#%s" % (port, token), "fragment"),
            ("https://127.0.0.1:99999/pub.git", "port"),
            ("https:///pub.git", "host"),
            ("https://127.0.0.1:%d" % port, "path"),
            ("https://127.0.0.1:%d/a b" % port, "space"),
            ("", "https"),
        ]
        for url, part in bad:
            err = error_of(prepare(c, {"repo": url, "dir": dest}), "bad_args", "repo %r" % url)
            expect(part in err["message"], "the error for %r does not name the %s: %r" % (url, part, err["message"]))
            expect(token not in msgpack.packb(err).decode(errors="replace"), "the error echoes the token: %r" % err)
        err = error_of(prepare(c, {"repo": gs.url("pub"), "dir": "relative/dir"}), "bad_args", "a relative dir")
        expect("absolute" in err["message"], "the error: %r" % err["message"])
        for branch in ("-b", "a..b", "x y", "a.lock", "@{1}", "HEAD", "a/.b", "a.lock/b"):
            error_of(prepare(c, {"repo": gs.url("pub"), "dir": dest, "branch": branch}), "bad_args",
                     "branch %r" % branch)
        for cred in ("pw", {"password": ""}, {"password": "a\nb"}, {"username": "u"}, {"password": "p", "x": 1}):
            err = error_of(prepare(c, {"repo": gs.url("pub"), "dir": dest, "credential": cred}), "bad_args",
                           "credential %r" % (cred,))
        err = error_of(c.request("workspace.prepare", {"runtime": "nope", "repo": gs.url("pub"), "dir": dest}),
                       "not_found", "an unknown runtime")
        expect("nope" in err["message"], "the error names the runtime: %r" % err["message"])
        error_of(c.request("workspace.prepare", {"repo": gs.url("pub")}), "bad_args", "no runtime")
        expect(not os.path.exists(dest), "a refused request created %s" % dest)
        expect(not os.path.exists(marker), "ext:: ran something")
        expect(not [n for n, _ in gs.auths], "a refused request reached the server: %r" % gs.auths)
        expect(not kinds(sb, "workspace.failed") and not kinds(sb, "workspace.progress"),
               "a refused request ran git")


@case("re-prepare fetches a new commit; a dirty workspace or another repository's clone is left alone")
def t_reprepare():
    gs = GitServer()
    repo = gs.repo("pub")
    first = repo.commit("main", {"a.txt": "one\n", "b.txt": "b\n"})
    other = gs.repo("other")
    other.commit("main", {"o": "o\n"})
    home, pw = agent_home()
    with Sandbox(extra=runtime_config(gs, home)) as sb:
        c = sb.ws()
        # An empty directory is cloned into; a directory with files that is
        # no clone is left alone; one the user cannot write is git's failure.
        empty = os.path.join(home, "empty")
        os.mkdir(empty)
        os.chown(empty, pw.pw_uid, pw.pw_gid)
        res = result_of(prepare(c, {"repo": gs.url("pub"), "dir": empty}), "a clone into an empty directory")
        expect_eq((res["commit"], res["cloned"]), (first, True), "the clone into an empty directory")
        full = os.path.join(home, "full")
        os.mkdir(full)
        with open(os.path.join(full, "mine.txt"), "w") as f:
            f.write("mine\n")
        err = error_of(prepare(c, {"repo": gs.url("pub"), "dir": full}), "conflict", "a directory with files")
        expect("neither empty nor a clone" in err["message"], "the error: %r" % err["message"])
        expect_eq(os.listdir(full), ["mine.txt"], "the directory with files after the refusal")
        rootdir = scratch(0o755)
        err = error_of(prepare(c, {"repo": gs.url("pub"), "dir": rootdir + "/sub"}), "git_failed",
                       "a directory the user cannot write")
        expect("Permission denied" in err["message"], "git's reason: %r" % err["message"])
        dest = os.path.join(home, "ws")
        res = result_of(prepare(c, {"repo": gs.url("pub"), "dir": dest}), "the first prepare")
        expect_eq((res["commit"], res["cloned"]), (first, True), "the first prepare")
        second = repo.commit("main", {"a.txt": "two\n"})
        res = result_of(prepare(c, {"repo": gs.url("pub"), "dir": dest}), "the second prepare")
        expect_eq((res["commit"], res["cloned"], res["branch"]), (second, False, "main"), "the re-prepare")
        expect_eq(head_of(dest), second, "HEAD after the re-prepare")
        with open(os.path.join(dest, "a.txt")) as f:
            expect_eq(f.read(), "two\n", "a.txt after the re-prepare")
        dev = repo.commit("dev", {"d.txt": "d\n"})
        res = result_of(prepare(c, {"repo": gs.url("pub"), "dir": dest, "branch": "dev"}), "a new branch")
        expect_eq((res["commit"], res["branch"], res["cloned"]), (dev, "dev", False), "the branch checked out")
        # Dirty: a changed file and a new one, both the user's.
        with open(os.path.join(dest, "b.txt"), "w") as f:
            f.write("local change\n")
        with open(os.path.join(dest, "new file.txt"), "w") as f:
            f.write("untracked\n")
        for name in ("b.txt", "new file.txt"):
            os.chown(os.path.join(dest, name), pw.pw_uid, pw.pw_gid)
        third = repo.commit("dev", {"d.txt": "d2\n"})
        err = error_of(prepare(c, {"repo": gs.url("pub"), "dir": dest, "branch": "dev"}), "conflict", "dirty")
        note("the conflict: %r" % err)
        expect_eq(sorted(err.get("files", [])), ["b.txt", "new file.txt"], "the files of the conflict")
        expect_eq(err.get("more"), 0, "more")
        with open(os.path.join(dest, "b.txt")) as f:
            expect_eq(f.read(), "local change\n", "b.txt after the refused prepare")
        expect_eq(head_of(dest), dev, "HEAD after the refused prepare")
        expect(third != dev, "a new commit was there to fetch")
        # Past 100 changes: the first 100 named, the rest counted.
        for i in range(120):
            with open(os.path.join(dest, "extra%03d" % i), "w") as f:
                f.write("x\n")
        err = error_of(prepare(c, {"repo": gs.url("pub"), "dir": dest, "branch": "dev"}), "conflict", "very dirty")
        expect_eq((len(err["files"]), err["more"]), (100, 22), "files named and counted")
        err = error_of(prepare(c, {"repo": gs.url("other"), "dir": dest}), "conflict", "another repository")
        expect("another repository" in err["message"], "the error: %r" % err["message"])


def as_agent_git(pw, home, dest, *args, env=()):
    """git run by the runtime's user in its workspace, as the runtime
    could: what it writes in .git/config is the user's to write."""
    env = ["PATH=/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
           "GIT_TERMINAL_PROMPT=0", *env]
    return subprocess.run(["runuser", "-u", pw.pw_name, "--", "env", "-i", *env, GIT, "-C", dest, *args],
                          capture_output=True, timeout=60)


def agent_config(pw, home, dest, *pairs):
    for key, value in pairs:
        r = as_agent_git(pw, home, dest, "config", key, value)
        expect_eq(r.returncode, 0, "git config %s as the runtime's user (%r)" % (key, r.stderr))


def agent_unconfig(pw, home, dest, *keys):
    for key in keys:
        as_agent_git(pw, home, dest, "config", "--unset-all", key)


def decoy_fetch(pw, home, dest, cafile, what, decoy):
    """What the workspace's config does to a plain git of the user's, with
    the runtime's env and a helper that answers a decoy password: proof
    that the attack is real."""
    helper = "!f() { echo username=alice; echo password=%s; }; f" % decoy
    return as_agent_git(pw, home, dest, "-c", "credential.helper=", "-c", "credential.helper=" + helper,
                        "fetch", what, env=["GIT_SSL_CAINFO=" + cafile])


def sent(servers, password):
    """Whether an Authorization header any of servers saw holds password."""
    for gs in servers:
        for _, auth in gs.auths:
            if auth.startswith("Basic ") and password.encode() in base64.b64decode(auth[6:] + "=="):
                return True
    return False


@case("a re-prepare sends the credential only to the requested repository, whatever the runtime's user "
      "wrote in .git/config", timeout=180)
def t_config_redirects():
    gs = GitServer()
    secret = "pw-" + os.urandom(12).hex()
    repo = gs.repo("priv", private=("alice", secret))
    first = repo.commit("main", {"a.txt": "one\n"})
    # rogue: another server the runtime's CAs trust; untrusted: one they do
    # not (its own certificate), reached through a proxy that tunnels every
    # CONNECT to it. Both ask for a password and record what they get.
    rogue = GitServer(cert_of=gs)
    rogue.repo("priv", private=("alice", "x")).commit("main", {"r": "r\n"})
    untrusted = GitServer()
    untrusted.repo("priv", private=("alice", "x")).commit("main", {"r": "r\n"})
    proxy = TunnelProxy(untrusted.port)
    # elsewhere: one with its own certificate at the real server's port on
    # another loopback address, for curl to be told the host is there.
    elsewhere = GitServer(bind=("127.0.0.2", gs.port))
    elsewhere.repo("priv", private=("alice", "x")).commit("main", {"r": "r\n"})
    resolve = "127.0.0.1:%d:127.0.0.2" % gs.port
    home, pw = agent_home()
    url = gs.url("priv")
    cred = {"username": "alice", "password": secret}
    with Sandbox(extra=runtime_config(gs, home)) as sb:
        c = sb.ws()
        dest = os.path.join(home, "ws")
        res = result_of(prepare(c, {"repo": url, "dir": dest, "credential": cred}), "the first clone")
        expect_eq(res["commit"], first, "the first clone")
        attacks = [
            ("url.insteadOf", [("url.%s.insteadOf" % rogue.url("priv"), url)], [rogue], "git_failed"),
            ("remote.<url>.url", [("remote.%s.url" % url, rogue.url("priv"))], [rogue], "git_failed"),
            ("remote.origin.url", [("remote.origin.url", rogue.url("priv"))], [rogue], "conflict"),
            ("url.insteadOf, for origin", [("url.%s.insteadOf" % rogue.url("priv"), url)], [rogue], "git_failed"),
            ("no TLS check, through a proxy", [
                ("http.sslVerify", "false"), ("http.%s.sslVerify" % url, "false"),
                ("http.proxy", proxy.url), ("http.%s.proxy" % url, proxy.url),
                ("remote.%s.proxy" % url, proxy.url)], [untrusted], None),
            ("another CA, through a proxy", [
                ("http.sslCAInfo", untrusted.cafile), ("http.%s.sslCAInfo" % url, untrusted.cafile),
                ("http.%s.sslCAPath" % url, os.path.dirname(untrusted.cafile)),
                ("http.%s.proxy" % url, proxy.url)], [untrusted], None),
            ("no TLS check, the host resolved elsewhere", [
                ("http.sslVerify", "false"), ("http.%s.sslVerify" % url, "false"),
                ("http.curloptResolve", resolve), ("http.%s.curloptResolve" % url, resolve)], [elsewhere], None),
        ]
        for name, pairs, rogues, code in attacks:
            head = head_of(dest)
            agent_config(pw, home, dest, *pairs)
            decoy = "decoy-" + os.urandom(8).hex()
            what = "origin" if "origin" in name else url
            r = decoy_fetch(pw, home, dest, gs.cafile, what, decoy)
            note("%s: a plain git fetch of the user's: %r" % (name, r.stderr.decode(errors="replace")[-200:]))
            expect(sent(rogues, decoy), "%s: the user's own git did not send its decoy elsewhere: the attack is "
                   "not real" % name)
            newer = repo.commit("main", {"a.txt": os.urandom(4).hex() + "\n"})
            seen = [len(x.auths) for x in rogues]
            connects = len(proxy.connects)
            r = prepare(c, {"repo": url, "dir": dest, "credential": cred})
            note("%s: the prepare: %r" % (name, r.get("error") or r.get("result")))
            expect(not sent(rogues, secret), "%s: the credential reached the other server" % name)
            if code is None:
                # What TLS and the proxy are is berth's: the real server, directly.
                res = result_of(r, name)
                expect_eq((res["commit"], res["cloned"]), (newer, False), "%s: the fetch from the real server" % name)
                expect_eq(len(proxy.connects), connects, "%s: the proxy was used: %r" % (name, proxy.connects))
            else:
                err = error_of(r, code, name)
                expect(secret not in repr(err), "%s: the error holds the credential" % name)
                expect_eq([len(x.auths) for x in rogues], seen, "%s: the other server was asked at all" % name)
                expect_eq(head_of(dest), head, "%s: HEAD after the refused prepare" % name)
            agent_unconfig(pw, home, dest, *[k for k, _ in pairs])
            agent_config(pw, home, dest, ("remote.origin.url", url))
        expect(as_agent_git(pw, home, dest, "status", "--porcelain").stdout == b"", "the workspace is not clean")
        res = result_of(prepare(c, {"repo": url, "dir": dest, "credential": cred}), "a prepare once the config "
                        "is the user's again")
        expect_eq(res["commit"], head_of(dest), "the last prepare")


@case("a server's redirect to another host gets no credential: git's reason names that host")
def t_redirect_refused():
    gs = GitServer()
    secret = "pw-" + os.urandom(12).hex()
    rogue = GitServer(cert_of=gs)
    rogue.repo("moved", private=("alice", "x")).commit("main", {"r": "r\n"})
    gs.redirect("moved", rogue.url("moved"))
    home, pw = agent_home()
    with Sandbox(extra=runtime_config(gs, home)) as sb:
        c = sb.ws()
        dest = os.path.join(home, "m")
        os.mkdir(dest)
        os.chown(dest, pw.pw_uid, pw.pw_gid)
        as_agent_git(pw, home, dest, "init", "-q")
        r = decoy_fetch(pw, home, dest, gs.cafile, gs.url("moved"), "decoy-" + secret[3:])
        expect(sent([rogue], "decoy-" + secret[3:]), "git did not follow the redirect with a credential: %r"
               % r.stderr[-200:])
        shutil.rmtree(dest)
        err = error_of(prepare(c, {"repo": gs.url("moved"), "dir": dest,
                                   "credential": {"username": "alice", "password": secret}}),
                       "git_failed", "a clone redirected to another host")
        note("the reason: %s" % err["message"])
        expect_eq(err["message"], "git asked for a credential for another host: 127.0.0.1:%d" % rogue.port,
                  "git's reason")
        expect(not sent([rogue], secret), "the credential reached the host redirected to")
        expect(any(n == "moved" for n, _ in rogue.auths), "git never followed the redirect")
        expect(not os.path.exists(dest), "the failed clone left %s" % dest)


@case("berth workspace prepare clones a private repository with the password from stdin", transports=TRANSPORTS)
def t_cli(transport):
    gs = GitServer()
    secret = "pw-" + os.urandom(12).hex()
    head = gs.repo("priv", private=("alice", secret)).commit("main", {"a.txt": "a\n"})
    home, pw = agent_home()
    with Sandbox(extra=runtime_config(gs, home)) as sb:
        dest = os.path.join(home, "cli")
        rc, out, err = berth(sb, transport, "workspace", "prepare", RUNTIME, gs.url("priv"), "--dir", dest,
                             "--username", "alice", "--password-stdin", input=b"wrong-" + secret.encode() + b"\n",
                             text=True)
        expect(rc != 0, "a wrong password succeeded")
        expect("Authentication failed" in err, "the CLI's error: %r" % err)
        expect(secret not in out + err, "the CLI printed the password")
        out = text_ok(sb, transport, "workspace", "prepare", RUNTIME, gs.url("priv"), "--dir", dest,
                      "--username", "alice", "--password-stdin", input=secret.encode() + b"\n")
        expect(head in out, "the commit is not in the CLI's output: %r" % out)
        expect(secret not in out, "the CLI printed the password")
        expect_eq(head_of(dest), head, "HEAD of the clone")


@case("berthd stops at once while a clone is under way")
def t_stop_during_clone():
    gs = GitServer(delay=3.0)
    gs.repo("slow").commit("main", {"a": "a\n"})
    home, pw = agent_home()
    with Sandbox(extra=runtime_config(gs, home)) as sb:
        c = sb.unix()
        c.send_request("workspace.prepare", {"runtime": RUNTIME, "repo": gs.url("slow"), "dir": home + "/slow"})
        wait_for(lambda: any(b"berth-workspace" in text for _, what, text in process_texts() if what == "cmdline"),
                 10, "berth-workspace to run")
        t0 = time.monotonic()
        rc = sb.stop(timeout=10)
        took = time.monotonic() - t0
        note("berthd stopped in %.2f s (status %r)" % (took, rc))
        expect_eq(rc, 0, "berthd's exit status")
        expect(took < 5, "berthd took %.1f s to stop with a clone under way" % took)


run()
