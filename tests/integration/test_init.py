"""berthd as an init: what tini's and dumb-init's own suites ask of a PID 1.
Orphans by the thousand are reaped, the stop signal reaches a service's
whole process group, exit statuses (and 128+signal) pass through berthd,
escapees are swept, shutdown runs in parallel and in reverse dependency
order, no fd leaks into a child, and user, group, cwd and env are set."""

import grp
import os
import pwd
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    Sandbox,
    case,
    event_kinds,
    expect,
    expect_eq,
    host_processes,
    minimal_config,
    note,
    pid_alive,
    proc_argv,
    proc_stat,
    proc_status,
    run,
    scratch,
    shfile,
    wait_for,
)


# ---------------------------------------------------------------------
# Helpers


def read(path):
    with open(path) as f:
        return f.read()


def wait_file(path, timeout=10.0, what=None):
    """Waits until path exists and ends with a newline; returns its text."""

    def done():
        try:
            text = read(path)
        except FileNotFoundError:
            return None
        return text if text.endswith("\n") else None

    return wait_for(done, timeout, what or "the file %s" % path)


def ns_pid(pid):
    """The pid that host pid has inside its own namespace, or None."""
    v = proc_status(pid, "NSpid")
    return int(v.split()[-1]) if v else None


def service(sb, name):
    for s in sb.state()["services"]:
        if s["name"] == name:
            return s
    raise harness.TestFailure("no service %r in state" % name)


def started(sb, name, timeout=10.0):
    """Waits for name's first service.started; returns its data."""
    ev = sb.wait_event(lambda e: e["kind"] == "service.started" and e["data"]["name"] == name, timeout)
    return ev["data"]


def of(events, kind, name=None):
    return [e for e in events if e["kind"] == kind and (name is None or e["data"].get("name") == name)]


def journal_after_exit(sb, from_seq):
    """berthd has exited: starts it again on the same state directory with
    no services, and returns the journal from from_seq up to (not
    including) the last berthd.started, the new one's."""
    with open(sb.config_path, "w") as f:
        f.write(minimal_config())
    sb.start(wait="socket")
    evs = sb.events(from_seq)
    kinds = event_kinds(evs)
    expect("berthd.started" in kinds, "no berthd.started after the restart: %r" % kinds)
    return evs[: len(kinds) - 1 - kinds[::-1].index("berthd.started")]


# ---------------------------------------------------------------------
# Reaping


@case("1000 orphaned grandchildren are reaped: no zombie remains", timeout=120)
def thousand_orphans():
    d = scratch()
    # Each (sleep &) subshell exits at once: its sleep is an orphan, which
    # the kernel hands to the namespace's init, berthd.
    sh = shfile(
        d=d,
        name="orphans.sh",
        body="i=0\nwhile [ $i -lt 1000 ]; do (sleep 1 &); i=$((i+1)); done\nexec sleep 1000\n",
    )
    extra = "[service orphans]\ncommand = /bin/sh %s\n" % sh
    with Sandbox(extra=extra, wait="socket", debug=True) as sb:
        bpid = sb.berthd_pid()
        svc = sb.host_pid(started(sb, "orphans")["pid"])
        seen = set()

        def forked_all():
            for pid, (comm, _, ppid) in host_processes().items():
                if ppid == bpid and comm == "sleep" and proc_argv(pid) == ["sleep", "1"]:
                    seen.add(pid)
            return proc_argv(svc) == ["sleep", "1000"]

        wait_for(forked_all, 60, "the service to fork its 1000 grandchildren and exec sleep 1000", 0.05)
        note("orphaned sleeps seen under berthd: %d" % len(seen))
        expect(len(seen) >= 10, "only %d orphaned sleeps were seen with berthd as parent" % len(seen))

        def leftovers():
            return [
                (pid, st)
                for pid, st in host_processes().items()
                if st[2] == bpid and (st[1] == "Z" or proc_argv(pid) == ["sleep", "1"])
            ]

        wait_for(lambda: not leftovers(), 20, "every orphan reaped (no zombie or sleep 1 under berthd)", 0.1)
        zombies = [(p, st) for p, st in host_processes().items() if st[1] == "Z" and sb.in_namespace(p)]
        expect(not zombies, "zombies in the namespace: %r" % zombies)
        reaped = sb.log().count("reaped orphan")
        expect(reaped >= 1000, "berthd reaped %d orphans, not 1000" % reaped)
        expect_eq(service(sb, "orphans")["state"], "ready", "the service's state")


# ---------------------------------------------------------------------
# Signals


@case("the stop signal reaches the service's whole process group")
def stop_signal_to_group():
    d = scratch()
    # The parent and a grandchild both trap the stop signal; each leaves
    # a file saying it got it. The grandchild is in the service's group.
    usr1 = shfile(
        d=d,
        name="usr1.sh",
        body='/bin/sh -c \'trap "echo child > %(d)s/child; exit 0" USR1; echo $$ > %(d)s/childpid; '
        "while :; do sleep 0.05; done' &\n"
        "trap 'echo parent > %(d)s/parent; exit 42' USR1\n"
        "echo $$ > %(d)s/parentpid\n"
        "while :; do sleep 0.05; done\n" % {"d": d},
    )
    # The same for SIGINT, sent by berthd's own shutdown.
    sigint = shfile(
        d=d,
        name="int.sh",
        body="trap 'echo int > %(d)s/int; exit 0' INT\necho $$ > %(d)s/intpid\nwhile :; do sleep 0.05; done\n" % {"d": d},
    )
    extra = (
        "[service usr1]\ncommand = /bin/sh %s\nstop_signal = USR1\n\n"
        "[service int]\ncommand = /bin/sh %s\nstop_signal = SIGINT\n" % (usr1, sigint)
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        parent = int(wait_file(os.path.join(d, "parentpid")))
        child = int(wait_file(os.path.join(d, "childpid")))
        wait_file(os.path.join(d, "intpid"))
        hp, hc = sb.host_pid(parent), sb.host_pid(child)
        # The grandchild is the service's child, in the service's group,
        # not a direct child of berthd.
        expect_eq(proc_stat(hc)[2], hp, "the grandchild's parent")
        expect_eq(os.getpgid(hc), os.getpgid(hp), "the grandchild's process group")
        c = sb.unix()
        before = c.call("state")["last_seq"]
        c.call("service.stop", {"name": "usr1"})
        ev = sb.wait_event(lambda e: e["kind"] == "service.exited" and e["data"]["name"] == "usr1", from_seq=before + 1)
        expect_eq(ev["data"].get("code"), 42, "the exit code of the USR1 trap")
        expect_eq(read(os.path.join(d, "parent")), "parent\n", "the parent's trap")
        wait_file(os.path.join(d, "child"), 5, "the grandchild's USR1 trap")
        wait_for(lambda: not pid_alive(hc), 5, "the grandchild gone")
        expect_eq(service(sb, "usr1")["state"], "stopped", "usr1's state")
        expect_eq(sb.stop(signal.SIGTERM), 0, "berthd's exit status")
    expect_eq(read(os.path.join(d, "int")), "int\n", "the INT trap (stop_signal = SIGINT at shutdown)")


# ---------------------------------------------------------------------
# Exit statuses


@case("a main service exiting 7 makes berthd exit 7, after stopping the others")
def main_exit_code():
    d = scratch()
    boss = shfile(d=d, name="boss.sh", body="while [ ! -e %s/go ]; do sleep 0.02; done\nexit 7\n" % d)
    extra = (
        "[service other]\ncommand = sleep 1000\n\n"
        "[service boss]\ncommand = /bin/sh %s\nmain = yes\nrestart = never\nafter = other\n" % boss
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        started(sb, "boss")
        before = sb.state()["last_seq"]
        open(os.path.join(d, "go"), "w").close()
        expect_eq(sb.wait_exit(10), 7, "berthd's exit status")
        evs = journal_after_exit(sb, before + 1)
    note("journal: %r" % [(e["kind"], e["data"]) for e in evs])
    stopping = of(evs, "berthd.stopping")
    expect(stopping, "no berthd.stopping: %r" % event_kinds(evs))
    expect("main" in stopping[0]["data"]["reason"], "berthd.stopping's reason: %r" % stopping[0]["data"])
    boss_exit = of(evs, "service.exited", "boss")
    expect_eq(boss_exit[0]["data"].get("code"), 7, "boss's exit code")
    # berthd stopped the other service itself (SIGTERM, journaled), before
    # it left: the kernel's kill at the end of the namespace journals nothing.
    other = of(evs, "service.exited", "other")
    expect(other, "no service.exited for the other service: %r" % event_kinds(evs))
    expect_eq(other[0]["data"].get("signal"), signal.SIGTERM, "how the other service was stopped")
    expect(other[0]["seq"] > stopping[0]["seq"], "the other service exited before the shutdown began")


@case("a main service killed by SIGKILL makes berthd exit 137")
def main_killed():
    extra = "[service boss]\ncommand = sleep 1000\nmain = yes\nrestart = never\n"
    with Sandbox(extra=extra, wait="socket") as sb:
        pid = sb.host_pid(started(sb, "boss")["pid"])
        os.kill(pid, signal.SIGKILL)
        expect_eq(sb.wait_exit(10), 128 + signal.SIGKILL, "berthd's exit status")


@case("a main service that fails for good ends berthd with its last status")
def main_failed():
    extra = (
        '[service boss]\ncommand = /bin/sh -c "exit 9"\nmain = yes\nrestart = on-failure\n'
        "max_deaths = 2\nbackoff_min_ms = 10\n"
    )
    with Sandbox(extra=extra, wait=None) as sb:
        expect_eq(sb.wait_exit(10), 9, "berthd's exit status")
        evs = journal_after_exit(sb, 1)
    expect_eq(len(of(evs, "service.exited", "boss")), 2, "boss's exits before it failed")
    expect(of(evs, "service.failed", "boss"), "no service.failed for boss: %r" % event_kinds(evs))


@case("SIGTERM to berthd: a main service trapping TERM gives berthd its exit code")
def main_traps_term():
    d = scratch()
    for code in (0, 3):
        sh = shfile(
            d=d, name="boss%d.sh" % code, body="trap 'exit %d' TERM\necho up > %s/up%d\nsleep 1000 & wait\n" % (code, d, code)
        )
        extra = "[service boss]\ncommand = /bin/sh %s\nmain = yes\n" % sh
        with Sandbox(extra=extra, wait="socket") as sb:
            wait_file(os.path.join(d, "up%d" % code))
            expect_eq(sb.stop(signal.SIGTERM), code, "berthd's exit status (boss traps TERM and exits %d)" % code)


@case("no main service: berthd exits 0 whatever its services did")
def no_main():
    extra = '[service bad]\ncommand = /bin/sh -c "exit 3"\nrestart = never\n\n[service sleeper]\ncommand = sleep 1000\n'
    with Sandbox(extra=extra, wait="socket") as sb:
        sb.wait_event(lambda e: e["kind"] == "service.exited" and e["data"]["name"] == "bad")
        started(sb, "sleeper")
        expect_eq(sb.stop(signal.SIGTERM), 0, "berthd's exit status")


# ---------------------------------------------------------------------
# Shutdown


@case("a descendant that escaped with setsid is killed and reaped by berthd at shutdown")
def setsid_escapee():
    d = scratch()
    # The escapee ignores TERM and HUP and lives in a session of its own,
    # made after its parent (a subshell) had already exited, and without
    # its run's tag: neither its session, its parentage nor its
    # environment tells it is the service's, so nothing but the final
    # sweep reaches it.
    sh = shfile(
        d=d, name="escape.sh", body="(sleep 0.2; env -u BERTH_SERVICE_RUN setsid /bin/sh -c 'trap \"\" TERM HUP; exec sleep 1001' &)\nexec sleep 1000\n"
    )
    extra = "[service escape]\ncommand = /bin/sh %s\n" % sh
    with Sandbox(extra=extra, wait="socket", debug=True) as sb:
        svc = sb.host_pid(started(sb, "escape")["pid"])

        def escapee():
            for pid in host_processes():
                if proc_argv(pid) == ["sleep", "1001"] and sb.in_namespace(pid):
                    return pid
            return None

        esc = wait_for(escapee, 5, "the escaped sleep 1001")
        expect(os.getsid(esc) != os.getsid(svc), "the escapee did not leave the service's session")
        nspid = ns_pid(esc)
        expect_eq(sb.stop(signal.SIGTERM), 0, "berthd's exit status")
        expect(not pid_alive(esc), "the escapee (host pid %d) is still alive" % esc)
    # berthd itself reaped it before it exited (the kernel's kill of a
    # namespace whose init is gone would have left no such line).
    log = sb.log()
    expect("reaped orphan %d\n" % nspid in log, "berthd did not reap the escapee (pid %d in the namespace)" % nspid)
    expect("swept" in log, "berthd did not sweep")


@case("the OOM killer takes any service before berthd")
def oom_score():
    extra = "[service plain]\ncommand = sleep 1000\n"
    with Sandbox(extra=extra, wait="socket") as sb:
        svc = sb.host_pid(started(sb, "plain")["pid"])
        with open("/proc/%d/oom_score_adj" % sb.berthd_pid()) as f:
            mine = int(f.read())
        with open("/proc/%d/oom_score_adj" % svc) as f:
            theirs = int(f.read())
        note("berthd %d, service %d" % (mine, theirs))
        # Without CAP_SYS_RESOURCE berthd cannot go below 0: then its
        # children are raised instead, and berthd says so.
        if mine == -1000:
            expect_eq(theirs, 0, "the service's oom_score_adj")
        else:
            expect_eq(theirs, 1000, "the service's oom_score_adj")
            expect("oom_score_adj" in sb.log(), "berthd did not say it could not lower its oom_score_adj")


@case("as a plain process (child subreaper): orphans are reaped, an escapee is swept at shutdown")
def subreaper():
    d = scratch()
    # An orphan that exits later (re-parented to berthd, then reaped), and
    # an escapee in a session of its own that ignores TERM and HUP, made
    # once its parent had exited and without its run's tag (so only the
    # final sweep finds it).
    sh = shfile(
        d=d,
        name="both.sh",
        body="(sleep 0.3 &)\n"
        "(sleep 0.2; env -u BERTH_SERVICE_RUN setsid /bin/sh -c 'trap \"\" TERM HUP; exec sleep 1002' &)\n"
        "exec sleep 1000\n",
    )
    extra = "[service both]\ncommand = /bin/sh %s\n" % sh
    with Sandbox(extra=extra, wait="socket", pid1=False, debug=True) as sb:
        berthd = sb.berthd_pid()
        expect(berthd != 1 and sb.state()["pid"] == berthd, "berthd must run as a plain process")

        def orphan_reaped():
            return "reaped orphan" in sb.log()

        wait_for(orphan_reaped, 10, "berthd to reap the orphaned sleep 0.3")

        def escapee():
            for pid in host_processes():
                if proc_argv(pid) == ["sleep", "1002"]:
                    return pid
            return None

        esc = wait_for(escapee, 5, "the escaped sleep 1002")
        expect_eq(sb.stop(signal.SIGTERM), 0, "berthd's exit status")
        expect(not pid_alive(esc), "the escapee (pid %d) is still alive" % esc)
    log = sb.log()
    expect("reaped orphan %d\n" % esc in log, "berthd did not reap the escapee (pid %d)" % esc)
    expect("swept" in log, "berthd did not sweep")


@case("shutdown stops services in parallel: as slow as the slowest, not the sum")
def parallel_shutdown():
    d = scratch()
    extra = ""
    for n in ("s1", "s2", "s3"):
        # The background child says it is up only once it runs with TERM
        # at its default: a stop signal that came while it was being
        # forked, with the trap still in place, would be lost on it, and
        # berthd would rightly have to SIGKILL it at the timeout.
        sh = shfile(
            d=d,
            name=n + ".sh",
            body="trap 'sleep 1.5; exit 0' TERM\n/bin/sh -c 'echo up > %s/%s; exec sleep 1000' &\nwait\n" % (d, n),
        )
        extra += "[service %s]\ncommand = /bin/sh %s\n\n" % (n, sh)
    with Sandbox(extra=extra, wait="socket") as sb:
        for n in ("s1", "s2", "s3"):
            wait_file(os.path.join(d, n))
        before = sb.state()["last_seq"]
        t0 = time.monotonic()
        rc = sb.stop(signal.SIGTERM, timeout=15)
        took = time.monotonic() - t0
        note("shutdown took %.2f s" % took)
        expect_eq(rc, 0, "berthd's exit status")
        # Each waited out its 1.5 s; one after the other would be 4.5 s.
        expect(took >= 1.4, "shutdown took %.2f s: a service did not get to finish its trap" % took)
        expect(took < 3.0, "shutdown took %.2f s: the services were stopped one after the other" % took)
        evs = journal_after_exit(sb, before + 1)
    for n in ("s1", "s2", "s3"):
        ex = of(evs, "service.exited", n)
        expect(ex, "no service.exited for %s" % n)
        expect_eq(ex[0]["data"].get("code"), 0, "%s's exit (its TERM trap)" % n)


@case("a service ignoring its stop signal is SIGKILLed after stop_timeout_ms")
def stop_timeout():
    extra = "[service stubborn]\ncommand = /bin/sh -c \"trap '' TERM; sleep 1000 & wait\"\nstop_timeout_ms = 1000\n"
    with Sandbox(extra=extra, wait="socket") as sb:
        pid = sb.host_pid(started(sb, "stubborn")["pid"])
        term = 1 << (signal.SIGTERM - 1)
        wait_for(lambda: int(proc_status(pid, "SigIgn") or "0", 16) & term, 5, "the shell ignoring TERM")
        before = sb.state()["last_seq"]
        # Well under the default 5 s: the service's own timeout counted.
        expect_eq(sb.stop(signal.SIGTERM, timeout=4.5), 0, "berthd's exit status")
        evs = journal_after_exit(sb, before + 1)
    ex = of(evs, "service.exited", "stubborn")
    expect(ex, "no service.exited for stubborn: %r" % event_kinds(evs))
    expect_eq(ex[0]["data"].get("signal"), signal.SIGKILL, "how stubborn ended")
    expect("did not stop in 1000 ms" in sb.log(), "berthd's log does not say why it used SIGKILL")


@case("shutdown runs in reverse dependency order")
def reverse_order():
    d = scratch()

    def svc(name, delay):
        trap = "sleep %s; exit 0" % delay if delay else "exit 0"
        return shfile(d=d, name=name + ".sh", body="trap '%s' TERM\necho up > %s/%s\nsleep 1000 & wait\n" % (trap, d, name))

    # c after b, b requires a. The dependents take their time to go: were
    # all three signalled at once, a would exit first.
    extra = (
        "[service a]\ncommand = /bin/sh %s\n\n"
        "[service b]\ncommand = /bin/sh %s\nrequires = a\n\n"
        "[service c]\ncommand = /bin/sh %s\nafter = b\n" % (svc("a", 0), svc("b", 0.3), svc("c", 0.3))
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        for n in "abc":
            wait_file(os.path.join(d, n))
        before = sb.state()["last_seq"]
        expect_eq(sb.stop(signal.SIGTERM), 0, "berthd's exit status")
        evs = journal_after_exit(sb, before + 1)
    order = [e["data"]["name"] for e in of(evs, "service.exited") if e["data"]["name"] in "abc"]
    note("exit order: %r" % order)
    expect_eq(order, ["c", "b", "a"], "the order in which the services exited")
    for n in "abc":
        expect_eq(of(evs, "service.exited", n)[0]["data"].get("code"), 0, "%s's exit (its TERM trap)" % n)


# ---------------------------------------------------------------------
# What a child gets


def list_fds_sh(out):
    """A shell command line writing the fds the shell has open to out.<pid>,
    one a line, then "end". "exec >" replaces fd 1 without saving it."""
    return (
        "exec > %s.$$.tmp; for fd in $(seq 0 63); do [ -e /proc/self/fd/$fd ] && echo $fd; done; "
        "echo end; mv %s.$$.tmp %s.$$" % (out, out, out)
    )


def is_berth_probe(pid):
    argv = proc_argv(pid)
    return bool(argv) and os.path.basename(argv[0]) == "berth-probe"


def fds_of(d, base, nspid):
    lines = wait_file(os.path.join(d, "%s.%d" % (base, nspid)), 10).split()
    expect_eq(lines[-1], "end", "the end of the fd list")
    return [int(x) for x in lines[:-1]]


@case("no fd leaks into a service, a notify-fd service, an exec probe or berth-probe")
def no_fd_leaks():
    d = scratch()
    plain = os.path.join(d, "plain")
    notify = os.path.join(d, "notify")
    check = os.path.join(d, "check")
    extra = (
        '[service plain]\ncommand = /bin/sh -c "%s; exec sleep 1000"\n\n'
        '[service notify]\ncommand = /bin/sh -c "%s; echo >&7; exec sleep 1000"\nready = notify-fd 7\n\n'
        "[service probed]\ncommand = sleep 1000\n"
        'ready = exec /bin/sh -c "%s"\nready_interval_ms = 60000\n\n'
        "[service tcp]\ncommand = sleep 1000\nready = tcp 127.0.0.1:%%d\nready_interval_ms = 60000\n"
        % (list_fds_sh(plain), list_fds_sh(notify), list_fds_sh(check))
    )
    # The tcp probe's port is the test's: berth-probe then idles between
    # checks, holding nothing but what berthd gave it.
    listener = socket.socket()
    harness.track_closer(listener.close)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    with Sandbox(extra=extra % listener.getsockname()[1]) as sb:
        sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "notify")
        expect_eq(fds_of(d, "plain", started(sb, "plain")["pid"]), [0, 1, 2], "the plain service's fds")
        expect_eq(fds_of(d, "notify", started(sb, "notify")["pid"]), [0, 1, 2, 7], "the notify-fd service's fds")
        sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "probed")
        probes = [n for n in os.listdir(d) if n.startswith("check.") and not n.endswith(".tmp")]
        expect(probes, "the exec probe left no fd list")
        expect_eq(fds_of(d, "check", int(probes[0].split(".")[1])), [0, 1, 2], "the exec probe's fds")
        sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "tcp")
        helpers = [p for p in host_processes() if sb.in_namespace(p) and is_berth_probe(p)]
        expect_eq(len(helpers), 1, "berth-probe processes")
        fds = sorted(int(x) for x in os.listdir("/proc/%d/fd" % helpers[0]))
        expect_eq(fds, [0, 1, 2], "berth-probe's fds")
        expect(os.readlink("/proc/%d/fd/1" % helpers[0]).startswith("pipe:"), "berth-probe's stdout is not a pipe")
        # Clients on both transports hold sockets in berthd: a service
        # started now must see none of them.
        clients = [sb.unix() for _ in range(3)] + [sb.ws()]
        c = clients[0]
        before = c.call("state")["last_seq"]
        for name in ("plain", "notify"):
            c.call("service.restart", {"name": name})
        for name, want in (("plain", [0, 1, 2]), ("notify", [0, 1, 2, 7])):
            ev = sb.wait_event(
                lambda e: e["kind"] == "service.started" and e["data"]["name"] == name, from_seq=before + 1
            )
            expect_eq(
                fds_of(d, name, ev["data"]["pid"]), want, "%s's fds after a restart, with clients connected" % name
            )


@case("user, group, cwd and env: the service runs as told")
def identity():
    d = scratch()
    out = os.path.join(d, "out")
    os.mkdir(out)
    os.chmod(out, 0o777)
    sh = shfile(
        d=d,
        name="ident.sh",
        body='exec > %s/$1\nid -u\nid -g\npwd\necho "$FOO"\necho "$BAR"\necho "$HOME"\necho "$USER"\n' % out,
    )
    extra = (
        "[service nobody]\ncommand = /bin/sh %s nobody\nuser = nobody\ncwd = /tmp\n"
        "env = FOO=bar baz\nenv = BAR=x=y\nrestart = never\n\n"
        "[service grouped]\ncommand = /bin/sh %s grouped\nuser = nobody\ngroup = daemon\nrestart = never\n\n"
        "[service root]\ncommand = /bin/sh %s root\nrestart = never\n" % (sh, sh, sh)
    )
    nobody = pwd.getpwnam("nobody")
    daemon = grp.getgrnam("daemon")
    with Sandbox(extra=extra, wait="socket") as sb:
        for n in ("nobody", "grouped", "root"):
            ev = sb.wait_event(lambda e: e["kind"] == "service.exited" and e["data"]["name"] == n)
            expect_eq(ev["data"].get("code"), 0, "%s's exit code" % n)
    got = {n: read(os.path.join(out, n)).split("\n")[:-1] for n in ("nobody", "grouped", "root")}
    note("written: %r" % got)
    expect_eq(
        got["nobody"],
        [str(nobody.pw_uid), str(nobody.pw_gid), "/tmp", "bar baz", "x=y", nobody.pw_dir, "nobody"],
        "uid, gid, cwd, FOO, BAR, HOME, USER of the nobody service",
    )
    expect_eq(got["grouped"][:3], [str(nobody.pw_uid), str(daemon.gr_gid), "/"], "uid, gid and cwd with group = daemon")
    expect_eq(got["root"][:3], ["0", "0", "/"], "uid, gid and cwd of a service with neither")


run()
