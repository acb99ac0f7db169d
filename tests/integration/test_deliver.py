"""berth-workspace deliver (task.deliver's git), run directly as berthd
runs it: as the runtime's user (`agent`) with no_new_privs, the diff
written to a file root made and handed over as an fd, the credential on
a pipe, against a real git server over HTTPS on loopback. The commit's
tree is the workspace's files byte for byte (modes, links, CRLF, binary,
the .gitignore files applied, .git never), on HEAD, made as a new branch
of the workspace and pushed as a new branch of the repository; the diff
applies to the base and gives that tree; the credential is nowhere (no
process's cmdline or environ, no file, no output); a wrong password, or
a branch the repository has already, leaves nothing made. What the
runtime's user plants in the workspace — hooks in .git/hooks or through
core.hooksPath, a .git/config that rewrites or redirects the URL, a
filter, an fsmonitor, excludes and attributes of its own — and git's
settings in the environment change nothing of what is committed or
where it goes, while the user's own git proves each planted attack real.
An existing branch, no change, no clone, no commit: refused; a branch
name git would refuse: refused before any git runs."""

import os
import shutil
import stat
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (  # noqa: E402
    BUILDDIR,
    SANITIZER_MARKS,
    case,
    desktop_user,
    expect,
    expect_eq,
    files_under,
    note,
    process_texts,
    run,
    scratch,
)
from harness.gitserver import GIT, GIT_ENV, GitServer, git  # noqa: E402

WORKSPACE = os.path.join(BUILDDIR, "berth-workspace")
AUTHOR = ("Dee Liver", "dee@example.invalid")
ZERO = "0" * 40


def agent_home():
    pw = desktop_user()
    home = scratch(0o755)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    return home, pw


def agent_env(home, gs, tmp):
    """The clean environment berthd gives the runtime's user, with the
    runtime's env (its CAs) and a TMPDIR of the case's own."""
    return {"PATH": "/usr/bin:/bin", "HOME": home, "USER": "agent", "LOGNAME": "agent",
            "SHELL": "/bin/sh", "LANG": "C.UTF-8", "GIT_SSL_CAINFO": gs.cafile, "TMPDIR": tmp,
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def agent_tmp(pw):
    d = scratch(0o700)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


def as_agent(pw, argv):
    """argv as the runtime's user, its groups dropped, no_new_privs."""
    return ["setpriv", "--reuid", str(pw.pw_uid), "--regid", str(pw.pw_gid), "--clear-groups",
            "--no-new-privs", "--"] + list(argv)


def run_ws(pw, args, env, pass_fds=(), wrap=None, timeout=60):
    """berth-workspace ARGS as the user: (status, report lines, stderr)."""
    argv = as_agent(pw, [WORKSPACE] + list(args))
    if wrap is not None:
        argv = wrap(argv)
    p = subprocess.run(argv, env=env, pass_fds=pass_fds, capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    note("berth-workspace %s: %d\n%s%s" % (" ".join(args[:3]), p.returncode, out[-3000:], err[-2000:]))
    expect(not any(m in err for m in SANITIZER_MARKS), "a sanitizer reported: %s" % err)
    return p.returncode, out.splitlines(), err


def diff_file():
    """A file of root's in a directory of root's (0700): the user gets an
    fd to it, never a path. (fd, path)."""
    d = scratch(0o700)
    path = os.path.join(d, "diff")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    return fd, path


def clone(gs, name, pw, home, tmp):
    """The workspace: a clone of NAME made by berth-workspace's prepare,
    as the user."""
    dest = os.path.join(home, "ws-" + name)
    status, lines, _ = run_ws(pw, ["--repo", gs.url(name), "--dir", dest], agent_env(home, gs, tmp))
    expect(status == 0 and lines and lines[-1].startswith("done "), "the clone of %s: %r" % (name, lines))
    return dest


def deliver(pw, ws, env, branch, fd, message="Deliver the task\n\nWhat it did.", push=None, credfd=None,
            wrap=None, timeout=60):
    args = ["deliver", "--dir", ws, "--branch", branch, "--message", message, "--author-name", AUTHOR[0],
            "--author-email", AUTHOR[1], "--diff-fd", str(fd)]
    fds = [fd]
    if push is not None:
        args += ["--push", push]
    if credfd is not None:
        args += ["--credential-fd", str(credfd)]
        fds.append(credfd)
    return run_ws(pw, args, env, pass_fds=fds, wrap=wrap, timeout=timeout)


def cred_pipe(user, password):
    """The credential on a pipe, filled and closed as berthd does: its
    read end."""
    r, w = os.pipe()
    os.write(w, ("%s\n%s\n" % (user, password)).encode())
    os.close(w)
    return r


def delivered(lines):
    """(commit, base, pushed) of the last line, which must be delivered."""
    expect(lines and lines[-1].startswith("delivered "), "no delivered line: %r" % lines)
    _, commit, base, pushed = lines[-1].split(" ")
    return commit, base, pushed == "1"


def rgit(wsgit, *args, raw=False):
    """Plumbing as root on the workspace's repository, with none of its
    hooks or fsmonitor (root must not run what the user planted)."""
    r = subprocess.run([GIT, "--git-dir=" + wsgit, "-c", "core.hooksPath=/dev/null", "-c",
                        "core.fsmonitor=false", "-c", "safe.directory=*", *args],
                       env=GIT_ENV, capture_output=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("git %s: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout if raw else r.stdout.decode().strip()


def ref_of(wsgit, ref):
    r = subprocess.run([GIT, "--git-dir=" + wsgit, "-c", "safe.directory=*", "rev-parse", "-q", "--verify", ref],
                       env=GIT_ENV, capture_output=True, timeout=60)
    return r.stdout.decode().strip() if r.returncode == 0 else None


def tree_files(wsgit, commit):
    """{path: (mode, bytes)} of every blob of commit's tree."""
    out = {}
    for entry in rgit(wsgit, "ls-tree", "-r", "-z", "--full-tree", commit, raw=True).split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, kind, oid = meta.decode().split()
        expect_eq(kind, "blob", "the kind of %r in the tree" % path)
        out[path.decode()] = (mode, rgit(wsgit, "cat-file", "blob", oid, raw=True))
    return out


def disk_files(root, leave_out=()):
    """{path: (mode, bytes)} of every file under root as git would see it
    (a link's bytes are its target), .git and leave_out aside."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != ".git")
        for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)
            if rel in leave_out:
                continue
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("120000", os.readlink(p).encode())
            else:
                with open(p, "rb") as fh:
                    out[rel] = ("100755" if st.st_mode & stat.S_IXUSR else "100644", fh.read())
    return out


def commit_of(wsgit, commit):
    """(tree, parents, author line, committer line, message)."""
    raw = rgit(wsgit, "cat-file", "commit", commit, raw=True).decode()
    head, _, message = raw.partition("\n\n")
    fields = [ln.split(" ", 1) for ln in head.split("\n")]
    get = lambda k: [v for key, v in fields if key == k]  # noqa: E731
    return get("tree")[0], get("parent"), get("author")[0], get("committer")[0], message


def fingerprint(wsgit):
    """The workspace's own HEAD, index and branches, as bytes: what a
    delivery must leave as it was (but for the branch it makes)."""
    out = {}
    for name in ("HEAD", "index", "packed-refs"):
        p = os.path.join(wsgit, name)
        out[name] = open(p, "rb").read() if os.path.exists(p) else None
    out["refs"] = rgit(wsgit, "for-each-ref", "--format=%(refname) %(objectname)")
    return out


def write(path, data, mode=0o644, pw=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    if pw is not None:
        os.chown(path, pw.pw_uid, pw.pw_gid)


def chown_tree(root, pw):
    for d, dirs, files in os.walk(root):
        for x in dirs + files:
            os.lchown(os.path.join(d, x), pw.pw_uid, pw.pw_gid)
    os.lchown(root, pw.pw_uid, pw.pw_gid)


def agent_git(pw, home, dest, *args, env=()):
    """The runtime's user's own git in a workspace (the attack's proof)."""
    e = ["PATH=/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
         "GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u",
         "GIT_COMMITTER_EMAIL=u@x", *env]
    return subprocess.run(as_agent(pw, ["env", "-i", *e, GIT, "-C", dest, *args]), capture_output=True, timeout=60)


def agent_copy(pw, ws):
    """A copy of the workspace (its .git too) for the user's own git to
    show what the planted set-up does, leaving the workspace as it is."""
    copy = ws + "-copy"
    shutil.copytree(ws, copy, symlinks=True)
    chown_tree(copy, pw)
    return copy


def applied_tree(gs, name, base, diff):
    """The tree that the diff gives when git apply puts it on base, in a
    clone of root's own."""
    work = os.path.join(scratch(), "apply")
    git("clone", "-q", gs.repos[name].bare, work)
    git("-C", work, "checkout", "-q", "--detach", base)
    r = subprocess.run([GIT, "-C", work, "apply", "--index", "-"], input=diff, env=GIT_ENV,
                       capture_output=True, timeout=60)
    expect(r.returncode == 0, "git apply of the diff: %r" % r.stderr)
    return git("-C", work, "write-tree")


def shortstat(wsgit, base, commit):
    out = rgit(wsgit, "diff", "--shortstat", "--find-renames", base, commit)
    nums = []
    for word in ("file", "insertion", "deletion"):
        n = 0
        for part in out.split(","):
            if word in part:
                n = int(part.split()[0])
        nums.append(n)
    return nums


@case("the commit's tree is the workspace's files byte for byte, on HEAD, as a new branch; the diff applies")
def t_tree_exact():
    gs = GitServer()
    repo = gs.repo("proj")
    repo.commit("main", {"README": "readme\n", "del.txt": "gone soon\n", "mod.txt": "one\n",
                         ".gitignore": "build/*\n!build/keep.o\n*.log\n", "build/keep.o": "kept\n",
                         ".gitattributes": "*.bin binary\n"})
    home, pw = agent_home()
    tmp = agent_tmp(pw)
    env = agent_env(home, gs, tmp)
    ws = clone(gs, "proj", pw, home, tmp)
    wsgit = os.path.join(ws, ".git")
    head = rgit(wsgit, "rev-parse", "HEAD")
    os.unlink(os.path.join(ws, "del.txt"))
    write(os.path.join(ws, "mod.txt"), b"one\ntwo\n")
    os.chmod(os.path.join(ws, "README"), 0o755)
    write(os.path.join(ws, "new.txt"), b"new\n")
    write(os.path.join(ws, "crlf.txt"), b"a\r\nb\r\n")
    write(os.path.join(ws, "lf.md"), b"lf\nonly\n")
    write(os.path.join(ws, "ident.id"), b"$Id: not git's $\n$Id$\n")
    write(os.path.join(ws, "run.sh"), b"#!/bin/sh\necho hi\n", 0o755)
    write(os.path.join(ws, "dir/sub/deep.bin"), bytes(range(256)) + b"\0\r\n" + os.urandom(3000))
    write(os.path.join(ws, "a b \u00e9.txt"), b"spaces and unicode\n")
    write(os.path.join(ws, "build/keep.o"), b"kept, changed\n")
    write(os.path.join(ws, "build/new.o"), b"ignored\n")
    write(os.path.join(ws, "x.log"), b"ignored\n")
    os.symlink("new.txt", os.path.join(ws, "link"))
    os.symlink("/etc/passwd", os.path.join(ws, "abs-link"))
    os.mkdir(os.path.join(ws, "empty"))
    chown_tree(ws, pw)
    before = fingerprint(wsgit)
    fd, path = diff_file()
    status, lines, _ = deliver(pw, ws, env, "task/0123abcd", fd)
    expect_eq(status, 0, "berth-workspace's exit status")
    commit, base, pushed = delivered(lines)
    expect_eq(base, head, "the base (the workspace's HEAD)")
    expect(not pushed, "pushed without --push")
    expect_eq(ref_of(wsgit, "refs/heads/task/0123abcd"), commit, "the branch in the workspace")
    tree, parents, author, committer, message = commit_of(wsgit, commit)
    expect_eq(parents, [head], "the commit's parents")
    for what, line in (("author", author), ("committer", committer)):
        expect(line.startswith("%s <%s> " % AUTHOR), "the %s: %r" % (what, line))
    expect_eq(message, "Deliver the task\n\nWhat it did.\n", "the message")
    want = disk_files(ws, leave_out=("build/new.o", "x.log"))
    got = tree_files(wsgit, commit)
    expect_eq(sorted(got), sorted(want), "the paths of the commit's tree")
    for p in want:
        expect_eq(got[p], want[p], "%s in the commit (mode, bytes)" % p)
    after = fingerprint(wsgit)
    expect_eq(after["HEAD"], before["HEAD"], "the workspace's HEAD file")
    expect_eq(after["index"], before["index"], "the workspace's index")
    expect_eq(sorted(set(after["refs"].split("\n")) - set(before["refs"].split("\n"))),
              ["refs/heads/task/0123abcd %s" % commit], "the refs the delivery added")
    with open(path, "rb") as f:
        diff = f.read()
    expect(b"GIT binary patch" in diff, "the binary file is not in the diff as a binary patch")
    expect_eq(applied_tree(gs, "proj", base, diff), tree, "the tree the diff gives on the base")
    stats = [ln for ln in lines if ln.startswith("stat ")]
    expect_eq(len(stats), 1, "stat lines")
    expect_eq([int(x) for x in stats[0].split()[1:]], shortstat(wsgit, base, commit), "stat")
    diffstat = [ln[len("diffstat "):] for ln in lines if ln.startswith("diffstat ")]
    expect_eq(diffstat, rgit(wsgit, "diff", "--stat=80", "--stat-count=600", "--find-renames", base,
                             commit, raw=True).decode().rstrip("\n").split("\n"), "diffstat")
    expect(os.listdir(tmp) == [], "berth-workspace left %r in its TMPDIR" % os.listdir(tmp))
    for d, _, files in os.walk(os.path.join(wsgit, "objects")):
        for f in files:
            expect_eq(os.lstat(os.path.join(d, f)).st_uid, pw.pw_uid, "the owner of %s" % f)
    # Once more, as a second branch: the same tree, another commit.
    fd2, _ = diff_file()
    status, lines, _ = deliver(pw, ws, env, "again", fd2, message="m")
    commit2, base2, _ = delivered(lines)
    expect_eq((base2, commit_of(wsgit, commit2)[0]), (head, tree), "the second delivery's base and tree")


def pushable(gs, name):
    """git http-backend takes pushes only from an authenticated user
    unless the repository says otherwise: this one does."""
    git("--git-dir=" + gs.repos[name].bare, "config", "http.receivepack", "true")


def server_ref(gs, name, ref):
    r = subprocess.run([GIT, "--git-dir=" + gs.repos[name].bare, "rev-parse", "-q", "--verify", ref],
                       env=GIT_ENV, capture_output=True, timeout=60)
    return r.stdout.decode().strip() if r.returncode == 0 else None


@case("pushed as a new branch with the credential, which appears nowhere; a wrong password or a branch the "
      "repository has already leaves nothing made", timeout=180)
def t_push():
    gs = GitServer(delay=0.4)
    user = "u-" + os.urandom(12).hex()
    secret = "pw-" + os.urandom(16).hex()
    repo = gs.repo("priv", private=(user, secret))
    repo.commit("main", {"a.txt": "a\n"})
    taken = repo.commit("taken", {"t.txt": "t\n"})
    pushable(gs, "priv")
    home, pw = agent_home()
    tmp = agent_tmp(pw)
    env = agent_env(home, gs, tmp)
    ws = os.path.join(home, "ws")
    r = cred_pipe(user, secret)
    status, lines, _ = run_ws(pw, ["--repo", gs.url("priv"), "--dir", ws, "--credential-fd", str(r)], env,
                              pass_fds=[r])
    os.close(r)
    expect(status == 0, "the private clone: %r" % lines)
    wsgit = os.path.join(ws, ".git")
    write(os.path.join(ws, "b.txt"), b"b\n" * 1000, pw=pw)
    found, seen, stop = [], set(), threading.Event()

    def watch():
        while not stop.is_set():
            for pid, what, text in process_texts():
                if b"remote-https" in text or b"berth-workspace" in text:
                    seen.add(what)
                for part in (secret, user):
                    if part.encode() in text:
                        found.append((pid, what, part == secret and "password" or "username"))
            stop.wait(0.02)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    fd, path = diff_file()
    r = cred_pipe(user, secret)
    try:
        status, lines, err = deliver(pw, ws, env, "feature/done", fd, push=gs.url("priv"), credfd=r, timeout=120)
    finally:
        stop.set()
        t.join(5)
        os.close(r)
    expect_eq(status, 0, "the delivery's exit status")
    commit, base, pushed = delivered(lines)
    expect(pushed, "the delivery says it did not push")
    expect_eq(server_ref(gs, "priv", "refs/heads/feature/done"), commit, "the branch on the server")
    expect_eq(ref_of(wsgit, "refs/heads/feature/done"), commit, "the branch in the workspace")
    expect(any(a for n, a in gs.auths if n == "priv" and a), "git never sent the credential")
    expect("cmdline" in seen, "the watch never saw the delivery's processes")
    expect(not found, "the credential was in a process's cmdline or environ: %r" % found[:5])
    expect(secret not in "\n".join(lines) + err and user not in "\n".join(lines) + err,
           "the credential is in berth-workspace's output")
    for root in (home, tmp, os.path.dirname(path)):
        for p, data in files_under(root):
            for part in (secret, user):
                expect(part.encode() not in data, "%s holds the credential" % p)
    # A wrong password: git's reason, redacted; the branch it made is gone.
    write(os.path.join(ws, "c.txt"), b"c\n", pw=pw)
    wrong = "wrong-" + os.urandom(12).hex()
    fd, _ = diff_file()
    r = cred_pipe(user, wrong)
    status, lines, err = deliver(pw, ws, env, "feature/wrong", fd, push=gs.url("priv"), credfd=r)
    os.close(r)
    expect_eq(status, 1, "the exit status with a wrong password")
    expect(lines and lines[-1].startswith("failed ") and "Authentication failed" in lines[-1],
           "git's reason: %r" % lines)
    expect(wrong not in "\n".join(lines) + err, "the wrong password is in the output")
    expect_eq(ref_of(wsgit, "refs/heads/feature/wrong"), None, "the branch left in the workspace")
    expect_eq(server_ref(gs, "priv", "refs/heads/feature/wrong"), None, "the branch on the server")
    # A branch the repository has (that the commit would even fast-forward
    # from): refused, nothing moved there or left here.
    write(os.path.join(ws, "d.txt"), b"d\n", pw=pw)
    fd, _ = diff_file()
    r = cred_pipe(user, secret)
    status, lines, err = deliver(pw, ws, env, "taken", fd, push=gs.url("priv"), credfd=r)
    os.close(r)
    expect_eq(status, 1, "the exit status of a push to a branch that exists")
    expect(lines and lines[-1].startswith("failed the repository refused the branch"),
           "the reason: %r" % lines[-1:])
    expect_eq(server_ref(gs, "priv", "refs/heads/taken"), taken, "the server's branch")
    expect_eq(ref_of(wsgit, "refs/heads/taken"), None, "the branch left in the workspace")
    expect(base != taken, "the base is main's")


HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "reference-transaction",
         "pre-push", "post-index-change", "pre-auto-gc", "post-checkout", "post-merge", "post-rewrite",
         "fsmonitor-watchman", "push-to-checkout", "pre-applypatch", "post-applypatch", "update")


def plant_hooks(d, marker, pw):
    os.makedirs(d, exist_ok=True)
    for h in HOOKS:
        write(os.path.join(d, h), ("#!/bin/sh\necho %s >> %s\ncat >/dev/null\nexit 0\n" % (h, marker)).encode(),
              0o755, pw)
    os.chown(d, pw.pw_uid, pw.pw_gid)


def marks(marker):
    if not os.path.exists(marker):
        return []
    with open(marker) as f:
        return f.read().split()


@case("hooks the runtime's user planted, in .git/hooks or through core.hooksPath, do not run")
def t_hooks():
    gs = GitServer()
    gs.repo("proj").commit("main", {"a.txt": "a\n"})
    pushable(gs, "proj")
    home, pw = agent_home()
    tmp = agent_tmp(pw)
    env = agent_env(home, gs, tmp)
    ws = clone(gs, "proj", pw, home, tmp)
    wsgit = os.path.join(ws, ".git")
    mdir = scratch(0o777)
    marker = os.path.join(mdir, "ran")
    plant_hooks(os.path.join(wsgit, "hooks"), marker, pw)
    other = os.path.join(home, "hooks")
    plant_hooks(other, marker, pw)
    for path in (None, other):
        if path is not None:
            r = agent_git(pw, home, ws, "config", "core.hooksPath", path)
            expect_eq(r.returncode, 0, "git config core.hooksPath as the user")
        copy = agent_copy(pw, ws)
        agent_git(pw, home, copy, "update-ref", "refs/heads/probe", "HEAD")
        write(os.path.join(copy, "p.txt"), b"p\n", pw=pw)
        agent_git(pw, home, copy, "add", "p.txt")
        agent_git(pw, home, copy, "commit", "-q", "-m", "probe")
        ran = marks(marker)
        note("the user's own git ran: %r" % ran)
        for h in ("reference-transaction", "pre-commit", "commit-msg", "post-commit"):
            expect(h in ran, "the user's own git did not run %s: the attack is not real" % h)
        shutil.rmtree(copy)
        os.unlink(marker)
        write(os.path.join(ws, "n%s.txt" % bool(path)), b"n\n", pw=pw)
        fd, _ = diff_file()
        branch = "hooked/%s" % ("hookspath" if path else "dot-git")
        status, lines, _ = deliver(pw, ws, env, branch, fd, push=gs.url("proj"))
        expect_eq(status, 0, "the delivery's exit status")
        commit, _, pushed = delivered(lines)
        expect(pushed and server_ref(gs, "proj", "refs/heads/" + branch) == commit, "the push")
        expect_eq(marks(marker), [], "hooks that ran during the delivery")
        expect_eq(ref_of(wsgit, "refs/heads/" + branch), commit, "the branch in the workspace")


@case("the workspace's git config, excludes and attributes change nothing of what is committed or where it "
      "is pushed", timeout=120)
def t_config():
    gs = GitServer()
    gs.repo("proj").commit("main", {"a.txt": "a\n", ".gitignore": "*.tmp\n"})
    rogue = GitServer(cert_of=gs)
    rogue.repo("proj").commit("main", {"r": "r\n"})
    pushable(gs, "proj")
    pushable(rogue, "proj")
    home, pw = agent_home()
    tmp = agent_tmp(pw)
    env = agent_env(home, gs, tmp)
    ws = clone(gs, "proj", pw, home, tmp)
    wsgit = os.path.join(ws, ".git")
    url, evil = gs.url("proj"), rogue.url("proj")
    mdir = scratch(0o777)
    marker = os.path.join(mdir, "ran")
    tool = os.path.join(home, "tool.sh")
    write(tool, ("#!/bin/sh\necho \"$0 $*\" >> %s\ncat\n" % marker).encode(), 0o755, pw)
    excludes = os.path.join(home, "excludes")
    write(excludes, b"hidden2.txt\n", pw=pw)
    attributes = os.path.join(home, "attributes")
    write(attributes, b"* filter=evil ident\n", pw=pw)
    write(os.path.join(home, ".config/git/ignore"), b"hidden3.txt\n", pw=pw)
    write(os.path.join(home, ".config/git/attributes"), b"*.txt eol=crlf\n", pw=pw)
    chown_tree(os.path.join(home, ".config"), pw)
    write(os.path.join(wsgit, "info/exclude"), b"hidden.txt\n", pw=pw)
    write(os.path.join(wsgit, "info/attributes"), b"*.txt eol=crlf filter=evil ident\n", pw=pw)
    write(os.path.join(ws, ".gitattributes"), b"*.txt filter=evil\n", pw=pw)
    settings = [
        ("url.%s.insteadOf" % evil, url), ("url.%s.pushInsteadOf" % evil, url),
        ("remote.origin.url", evil), ("remote.origin.pushurl", evil),
        ("remote.%s.url" % url, evil), ("remote.%s.pushurl" % url, evil),
        ("filter.evil.clean", tool + " clean"), ("filter.evil.smudge", tool + " smudge"),
        ("filter.evil.required", "true"), ("core.fsmonitor", tool), ("core.excludesFile", excludes),
        ("core.attributesFile", attributes), ("core.autocrlf", "true"), ("core.eol", "crlf"),
        ("user.name", "Evil"), ("user.email", "evil@x"),
        ("core.worktree", home), ("diff.external", tool),
    ]
    for k, v in settings:
        r = agent_git(pw, home, ws, "config", "--add", k, v)
        expect_eq(r.returncode, 0, "git config %s as the user (%r)" % (k, r.stderr))
    files = {"hidden.txt": b"h1\n", "hidden2.txt": b"h2\n", "hidden3.txt": b"h3\n", "lf.txt": b"x\ny\n",
             "ident.txt": b"$Id: kept $\n", "ignored.tmp": b"in-tree .gitignore applies\n"}
    for name, data in files.items():
        write(os.path.join(ws, name), data, pw=pw)
    # The user's own git, in a copy: each setting is real.
    copy = agent_copy(pw, ws)
    r = agent_git(pw, home, copy, "status", "--porcelain", "--ignored", env=["GIT_WORK_TREE=" + copy])
    shown = r.stdout.decode()
    note("the user's git status: %r %r" % (shown, r.stderr[-300:]))
    for name in ("hidden.txt", "hidden2.txt"):
        expect("!! %s" % name in shown, "%s is not ignored by the user's own git" % name)
    # The user's ~/.config/git/ignore is git's core.excludesFile when the
    # config names none.
    agent_git(pw, home, copy, "config", "--unset", "core.excludesFile")
    r = agent_git(pw, home, copy, "status", "--porcelain", "--ignored", env=["GIT_WORK_TREE=" + copy])
    expect("!! hidden3.txt" in r.stdout.decode(), "hidden3.txt is not ignored by the user's own git: %r"
           % r.stdout)
    agent_git(pw, home, copy, "config", "core.excludesFile", excludes)
    r = agent_git(pw, home, copy, "ls-remote", "--get-url", url)
    expect_eq(r.stdout.decode().strip(), evil, "the URL the user's own git would use")
    agent_git(pw, home, copy, "add", "-A", env=["GIT_WORK_TREE=" + copy])
    ran = " ".join(marks(marker))
    note("the user's own git ran: %r" % ran)
    for what in ("tool.sh clean", "tool.sh 2"):
        expect(what in ran, "the user's own git did not run %r: the attack is not real" % what)
    shutil.rmtree(copy)
    os.unlink(marker)
    # What the runtime's env could say to git is left out too: a global
    # config of its own, config in the environment, an external diff, a
    # git directory elsewhere.
    gitconfig = os.path.join(home, "gitconfig")
    write(gitconfig, ("[url \"%s\"]\n\tinsteadOf = %s\n[filter \"evil\"]\n\tclean = %s clean\n"
                      "[core]\n\tfsmonitor = %s\n" % (evil, url, tool, tool)).encode(), pw=pw)
    env = dict(env, GIT_CONFIG_GLOBAL=gitconfig, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="core.hooksPath",
               GIT_CONFIG_VALUE_0=home, GIT_EXTERNAL_DIFF=tool, GIT_DIR=os.path.join(home, "elsewhere"))
    del env["GIT_CONFIG_NOSYSTEM"]
    fd, path = diff_file()
    status, lines, _ = deliver(pw, ws, env, "configured", fd, push=url)
    expect_eq(status, 0, "the delivery's exit status")
    commit, base, pushed = delivered(lines)
    expect(pushed, "not pushed")
    expect_eq(server_ref(gs, "proj", "refs/heads/configured"), commit, "the branch on the real server")
    expect_eq(rogue.auths, [], "requests that reached the other server")
    expect_eq(marks(marker), [], "what the workspace's config ran during the delivery")
    want = disk_files(ws, leave_out=("ignored.tmp",))
    got = tree_files(wsgit, commit)
    expect_eq(sorted(got), sorted(want), "the paths of the commit's tree")
    for p in want:
        expect_eq(got[p], want[p], "%s in the commit (mode, bytes)" % p)
    _, _, author, _, _ = commit_of(wsgit, commit)
    expect(author.startswith("%s <%s> " % AUTHOR), "the author: %r" % author)
    with open(path, "rb") as f:
        diff = f.read()
    expect(b"hidden.txt" in diff and b"+x\n+y\n" in diff, "the diff is not git's own of the files")


@case("an existing branch, no change, no clone or no commit: refused with nothing made")
def t_refused():
    gs = GitServer()
    first = gs.repo("proj").commit("main", {"a.txt": "a\n", ".gitignore": "*.tmp\n"})
    home, pw = agent_home()
    tmp = agent_tmp(pw)
    env = agent_env(home, gs, tmp)
    ws = clone(gs, "proj", pw, home, tmp)
    wsgit = os.path.join(ws, ".git")
    fd, path = diff_file()
    status, lines, _ = deliver(pw, ws, env, "nothing", fd)
    expect_eq((status, lines), (1, ["conflict nochange"]), "a clean workspace")
    write(os.path.join(ws, "only.tmp"), b"ignored\n", pw=pw)
    status, lines, _ = deliver(pw, ws, env, "nothing", fd)
    expect_eq((status, lines), (1, ["conflict nochange"]), "a workspace changed in ignored files only")
    expect_eq(ref_of(wsgit, "refs/heads/nothing"), None, "a branch made with no change")
    r = agent_git(pw, home, ws, "branch", "taken")
    expect_eq(r.returncode, 0, "git branch as the user")
    write(os.path.join(ws, "b.txt"), b"b\n", pw=pw)
    before = fingerprint(wsgit)
    status, lines, _ = deliver(pw, ws, env, "taken", fd)
    expect_eq((status, lines), (1, ["conflict exists"]), "a branch that exists")
    expect_eq(fingerprint(wsgit), before, "the workspace after the refusal")
    expect_eq(ref_of(wsgit, "refs/heads/taken"), first, "the branch that exists")
    expect_eq(os.fstat(fd).st_size, 0, "the diff file after the refusals")
    status, lines, _ = deliver(pw, ws, env, "taken/sub", fd)
    expect(status == 1 and lines[-1].startswith("failed ") and "taken" in lines[-1],
           "a branch under one that exists: %r" % lines)
    expect_eq(ref_of(wsgit, "refs/heads/taken/sub"), None, "refs/heads/taken/sub")
    plain = os.path.join(home, "plain")
    write(os.path.join(plain, "f"), b"f\n", pw=pw)
    os.chown(plain, pw.pw_uid, pw.pw_gid)
    status, lines, _ = deliver(pw, plain, env, "x", fd)
    expect_eq((status, lines), (1, ["conflict notrepo"]), "a directory that is no clone")
    status, lines, _ = deliver(pw, os.path.join(home, "absent"), env, "x", fd)
    expect_eq((status, lines), (1, ["conflict notrepo"]), "a directory that is not there")
    r = agent_git(pw, home, plain, "init", "-q")
    expect_eq(r.returncode, 0, "git init as the user")
    status, lines, _ = deliver(pw, plain, env, "x", fd)
    expect_eq((status, lines), (1, ["conflict nohead"]), "a clone with no commit")
    expect(os.listdir(tmp) == [], "berth-workspace left %r in its TMPDIR" % os.listdir(tmp))


@case("a branch name git refuses, or a malformed message or author, is refused before any git runs")
def t_bad_names():
    gs = GitServer()
    gs.repo("proj").commit("main", {"a.txt": "a\n"})
    home, pw = agent_home()
    tmp = agent_tmp(pw)
    env = agent_env(home, gs, tmp)
    ws = clone(gs, "proj", pw, home, tmp)
    write(os.path.join(ws, "b.txt"), b"b\n", pw=pw)
    # Every git the program runs, in a mount namespace of its own, is this
    # one: it leaves a mark and fails.
    mdir = scratch(0o777)
    marker = os.path.join(mdir, "git-ran")
    fake = os.path.join(scratch(), "git")
    write(fake, ("#!/bin/sh\necho \"$*\" >> %s\nexit 1\n" % marker).encode(), 0o755)

    def fake_git(argv):
        return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                'mount --bind "$0" %s && exec "$@"' % GIT, fake] + argv

    fd, _ = diff_file()
    status, lines, _ = deliver(pw, ws, env, "fine", fd, wrap=fake_git)
    expect(marks(marker), "the control: a good name ran no git (the fake is not in place)")
    os.unlink(marker)
    bad = ["-b", "--force", "a..b", "x y", "a.lock", "a.lock/b", "@{1}", "a@{1}", "HEAD", ".hidden", "a/.b",
           "a//b", "/a", "a/", "a.", "x~1", "x^", "x:y", "a*", "a?", "a[b", "a\\b", "\xe9t\xe9", "a\tb",
           "a" * 256]
    for branch in bad:
        status, lines, _ = deliver(pw, ws, env, branch, fd, wrap=fake_git)
        expect_eq((status, lines), (1, ["failed the branch is not a name berth gives git"]), "branch %r" % branch)
        expect_eq(marks(marker), [], "git ran for branch %r" % branch)
        r = subprocess.run([GIT, "check-ref-format", "--branch", branch], capture_output=True)
        if r.returncode == 0:
            note("git itself takes %r; berth does not" % branch)
    for message, name, email in (("", AUTHOR[0], AUTHOR[1]), ("m" * 65537, AUTHOR[0], AUTHOR[1]),
                                 ("m", "", AUTHOR[1]), ("m", "A <x>", AUTHOR[1]), ("m", "A\nB", AUTHOR[1]),
                                 ("m", AUTHOR[0], "a>b"), ("m", "n" * 257, AUTHOR[1])):
        args = ["deliver", "--dir", ws, "--branch", "fine", "--message", message, "--author-name", name,
                "--author-email", email, "--diff-fd", str(fd)]
        status, lines, _ = run_ws(pw, args, env, pass_fds=[fd], wrap=fake_git)
        expect(status == 1 and len(lines) == 1 and lines[0].startswith("failed "),
               "message %r, author %r <%r>: %r" % (message[:20], name[:20], email, lines))
        expect_eq(marks(marker), [], "git ran for message %r, author %r <%r>" % (message[:20], name, email))
    status, _, err = run_ws(pw, ["deliver", "--dir", ws, "--branch", "fine"], env, wrap=fake_git)
    expect(status == 2 and "usage" in err, "missing options: %d %r" % (status, err))
    expect_eq(marks(marker), [], "git ran for missing options")


run()
