"""berthd as PID 1: it is pid 1 in its namespace, reaps orphans, restarts
services with doubling backoff, and stops everything in order on SIGTERM
and SIGINT."""

import os
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    case,
    event_kinds,
    expect,
    expect_eq,
    host_processes,
    note,
    pid_alive,
    run,
    wait_for,
)


@case("berthd is pid 1 of its namespace")
def pid_one():
    with Sandbox(wait="socket") as sb:
        c = sb.unix()
        expect_eq(c.hello_result["pid"], 1, "hello's pid")
        expect_eq(c.call("state")["pid"], 1, "state's pid")
        started = sb.events()[0]
        expect_eq(started["kind"], "berthd.started", "the first event")
        expect_eq(started["data"]["pid"], 1, "berthd.started's pid")
        expect(sb.berthd_pid() != 1, "the host sees berthd under another pid")


@case("orphans are reaped: no zombie is left")
def orphans_reaped():
    # A subshell starts two sleeps and exits at once, while the service's
    # leader lives on: the sleeps are orphans, re-parented to berthd, and
    # stay the service's (an exit of the leader would end them).
    extra = '[service orphans]\ncommand = /bin/sh -c "(sleep 1 & sleep 1 &); exec sleep 1000"\n'
    with Sandbox(extra=extra, wait="socket") as sb:
        bpid = sb.berthd_pid()

        leader = wait_for(
            lambda: [s["pid"] for s in sb.state()["services"] if s["name"] == "orphans" and s["pid"]], 5, "the leader"
        )[0]
        leader = sb.host_pid(leader)

        def sleepers():
            return [
                p
                for p, (comm, _, ppid) in host_processes().items()
                if ppid == bpid and comm == "sleep" and p != leader
            ]

        found = wait_for(lambda: len(sleepers()) >= 2, 5, "two orphaned sleeps under berthd")
        note("orphans seen: %r" % found)
        # They exit after a second; berthd must reap them.
        wait_for(lambda: not sleepers(), 5, "the orphans reaped (no sleep, live or zombie, under berthd)")
        zombies = [(p, st) for p, st in host_processes().items() if st[2] == bpid and st[1] == "Z"]
        expect(not zombies, "zombies under berthd: %r" % zombies)
        svc = [s for s in sb.state()["services"] if s["name"] == "orphans"][0]
        expect_eq(svc["state"], "ready", "the orphans service's state (its leader lives)")


@case("a failing service restarts with doubling, capped backoff")
def backoff():
    extra = '[service flaky]\ncommand = /bin/sh -c "exit 1"\nbackoff_min_ms = 50\nbackoff_max_ms = 400\nmax_deaths = 100\n'
    with Sandbox(extra=extra, wait="socket") as sb:
        c = sb.unix(timeout=10)
        c.subscribe(1)
        restarting = []

        def fifth(ev):
            if ev["kind"] == "service.restarting" and ev["data"]["name"] == "flaky":
                restarting.append(ev["data"])
            return len(restarting) == 5

        evs = c.events_until(fifth, timeout=15)
        expect_eq([d["delay_ms"] for d in restarting], [50, 100, 200, 400, 400], "delay_ms of the restarts")
        expect_eq([d["restarts"] for d in restarting], [1, 2, 3, 4, 5], "restart counts")
        exits = [e["data"] for e in evs if e["kind"] == "service.exited" and e["data"]["name"] == "flaky"]
        expect(len(exits) >= 5, "fewer than 5 exits of flaky: %r" % exits)
        expect(all(d.get("code") == 1 for d in exits), "flaky did not exit 1: %r" % exits)


@case("a service starts clean: fds 0-2 only, stdin /dev/null, no blocked or ignored signal, own session")
def clean_child():
    # Each probe is exec'd by the shell berthd started, after the shell's
    # redirection: it sees what berthd handed over, not what a shell does.
    probes = {
        "fds": "readlink %s" % " ".join("/proc/self/fd/%d" % fd for fd in range(64)),
        "sig": "grep -E '^Sig(Blk|Ign)' /proc/self/status",
        "sid": "cut -d' ' -f1,5,6 /proc/self/stat",
    }
    out = tempfile.mkdtemp(prefix="berth-it-probe-")
    try:
        extra = "".join(
            '[service probe-%s]\ncommand = /bin/sh -c "exec %s > %s/%s"\nrestart = never\n\n' % (k, v, out, k)
            for k, v in probes.items()
        )
        with Sandbox(extra=extra, wait="socket") as sb:
            for k in probes:
                ev = sb.wait_event(lambda e: e["kind"] == "service.exited" and e["data"]["name"] == "probe-" + k)
                note("probe-%s: %r" % (k, ev["data"]))
        got = {}
        for k in probes:
            with open(os.path.join(out, k)) as f:
                got[k] = f.read().split("\n")[:-1]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    note("probes: %r" % got)
    # readlink is quiet about fds that are not open: one line per open fd.
    expect_eq(len(got["fds"]), 3, "open fds (their targets: %r)" % got["fds"])
    expect_eq(got["fds"][0], "/dev/null", "stdin")
    sig = {k: int(v, 16) for k, v in (line.split(":\t") for line in got["sig"])}
    # Signals 32 and 33 are the C library's own: sigaction cannot reset
    # them, so berthd passes on whatever it inherited there.
    libc = (1 << 31) | (1 << 32)
    expect_eq({k: hex(v & ~libc) for k, v in sig.items()}, {"SigBlk": "0x0", "SigIgn": "0x0"}, "signal masks")
    pid, pgrp, session = got["sid"][0].split()
    expect_eq((pgrp, session), (pid, pid), "process group and session (the pid's own)")


def orderly_stop(sig):
    """berthd stops on sig: exit 0, services and gateway gone, socket
    removed, and the journal (read after a restart) tells the story."""
    extra = "[service sleeper]\ncommand = sleep 1000\n"
    with Sandbox(extra=extra) as sb:
        gw = sb.gateway_pid()
        st = sb.state()
        sleeper = [s for s in st["services"] if s["name"] == "sleeper"][0]
        expect(sleeper["pid"] > 0, "sleeper is not running: %r" % sleeper)
        bpid = sb.berthd_pid()
        sleeper_host = [p for p, (comm, _, ppid) in host_processes().items() if comm == "sleep" and ppid == bpid]
        expect(len(sleeper_host) == 1, "sleeper not found on the host: %r" % sleeper_host)
        before = st["last_seq"]

        rc = sb.stop(sig, timeout=8)
        expect_eq(rc, 0, "berthd's exit status")
        expect(not pid_alive(gw), "the gateway (pid %d) is still alive" % gw)
        expect(not pid_alive(sleeper_host[0]), "sleeper is still alive")
        expect(not os.path.exists(sb.socket), "the socket file %s is still there" % sb.socket)

        sb.start(wait="socket")
        evs = sb.events(before + 1)
        kinds = event_kinds(evs)
        note("events after the stop: %r" % [(e["seq"], e["kind"], e["data"]) for e in evs])
        expect(kinds and kinds[0] == "berthd.stopping", "no berthd.stopping right after seq %d" % before)
        expect_eq(evs[0]["data"]["signal"], int(sig), "berthd.stopping's signal")
        restarted = kinds.index("berthd.started")
        stopped = {e["data"]["name"]: e["data"] for e in evs[1:restarted] if e["kind"] == "service.exited"}
        expect("gateway" in stopped and "sleeper" in stopped, "not every service exited before berthd: %r" % stopped)
        expect_eq(stopped["sleeper"].get("signal"), signal.SIGTERM, "how sleeper was stopped")


@case("SIGTERM stops everything and berthd exits 0")
def sigterm():
    orderly_stop(signal.SIGTERM)


@case("SIGINT stops everything and berthd exits 0")
def sigint():
    orderly_stop(signal.SIGINT)


@case("a service that ignores SIGTERM is killed after the grace period")
def stubborn_service():
    # Ready only once its trap is set: a TERM before that would kill it.
    extra = (
        "[service stubborn]\n"
        "command = /bin/sh -c \"trap '' TERM; echo >&3; while :; do sleep 0.1; done\"\n"
        "ready = notify-fd 3\n"
        "stop_timeout_ms = 1000\n"
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        sb.wait_event(lambda e: e["kind"] == "service.ready" and e["data"]["name"] == "stubborn")
        before = sb.state()["last_seq"]
        expect_eq(sb.stop(signal.SIGTERM, timeout=15), 0, "berthd's exit status")
        sb.start(wait="socket")
        evs = sb.events(before + 1)
        ex = [e["data"] for e in evs if e["kind"] == "service.exited" and e["data"]["name"] == "stubborn"]
        expect(ex, "no service.exited for stubborn: %r" % event_kinds(evs))
        expect_eq(ex[0].get("signal"), signal.SIGKILL, "how stubborn was stopped")
        sb.kill()  # not another grace period for the restarted one


PEEK = (
    "exec > %s/$1\n"
    "ls /proc | grep -c '^[0-9]'\n"
    "cat /proc/1/cmdline >/dev/null 2>&1 && echo seen || echo hidden\n"
)


def peek_services(sh):
    return (
        "[service asnobody]\ncommand = /bin/sh %s nobody\nuser = nobody\nrestart = never\n\n"
        "[service asroot]\ncommand = /bin/sh %s root\nrestart = never\n" % (sh, sh)
    )


def peek(pid1):
    d = tempfile.mkdtemp(prefix="berth-peek-")
    try:
        os.chmod(d, 0o777)
        sh = os.path.join(d, "peek.sh")
        with open(sh, "w") as f:
            f.write(PEEK % d)
        with Sandbox(extra=peek_services(sh), wait="socket", pid1=pid1) as sb:
            for n in ("asnobody", "asroot"):
                sb.wait_event(lambda e: e["kind"] == "service.exited" and e["data"]["name"] == n)
            log = sb.log()
        got = {}
        for n in ("nobody", "root"):
            with open(os.path.join(d, n)) as f:
                count, seen = f.read().split()
            got[n] = (int(count), seen)
        note("what each saw: %r" % got)
        return got, log
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case("as PID 1, /proc hides berth's processes from another user")
def proc_hidden():
    got, log = peek(True)
    expect_eq(got["nobody"][1], "hidden", "whether nobody can read berthd's /proc/1/cmdline")
    # Its shell and what it runs: nothing of berthd, the gateway or root's.
    expect(got["nobody"][0] <= 3, "nobody saw %d processes in /proc" % got["nobody"][0])
    expect_eq(got["root"][1], "seen", "whether root can read /proc/1/cmdline")
    expect(got["root"][0] >= 3, "root saw only %d processes" % got["root"][0])
    expect("/proc remounted with hidepid=invisible" in log, "the log says /proc was remounted")


@case("not PID 1, /proc is left alone and the log says so")
def proc_not_pid1():
    got, log = peek(False)
    expect_eq(got["nobody"][1], "seen", "nobody reading the host's /proc/1/cmdline")
    expect("not PID 1: /proc shows every process to every user" in log, "the log says why /proc was left")


def core_limit(pid):
    with open("/proc/%d/limits" % pid) as f:
        return [line.split()[4:6] for line in f if line.startswith("Max core file size")][0]


@case("berthd writes no core file, and its services get back the core limit it was started with")
def no_core():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    want = ["unlimited" if v == resource.RLIM_INFINITY else str(v) for v in (soft, hard)]
    extra = "[service idle]\ncommand = sleep 1000\n"
    with Sandbox(extra=extra, wait="socket") as sb:
        ev = sb.wait_event(lambda e: e["kind"] == "service.started" and e["data"]["name"] == "idle")
        idle = sb.host_pid(ev["data"]["pid"])
        expect_eq(core_limit(sb.berthd_pid()), ["0", want[1]], "berthd's core limit (soft, hard)")
        expect_eq(core_limit(idle), want, "a service's core limit (soft, hard)")


run()
