"""The peers' scenarios: what tini's and dumb-init's own suites ask of an
init and test_init.py does not already cover, each run against berthd
as PID 1 of its namespace (and as a plain process where that is the
point), and against tini and dumb-init on the same work where the
scenario means something for them. Every case must pass for berthd;
what a peer does differently is noted, not failed."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    TRANSPORTS,
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
    run,
    scratch,
    shfile,
    text_ok,
    track_closer,
    wait_for,
)
from harness.peers import (  # noqa: E402
    Peer,
    TtyPeer,
    TtySandbox,
    WrappedSandbox,
    descendants,
    dirty,
    kill_pids,
    parent,
    pids_running,
    signames,
    sigsets,
    trap_lines,
    wait_trap,
)

FORWARDED = ("HUP", "USR1", "USR2", "WINCH")


# ---------------------------------------------------------------------
# Helpers


def wait_file(path, timeout=10.0):
    def done():
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            return None
        return text if text.endswith("\n") else None

    return wait_for(done, timeout, "the file %s" % path)


def trapper(d, name, sigs=FORWARDED):
    """A script whose shell and a child of it (in its process group) trap
    sigs, each appending "leader:SIG" or "child:SIG" to d/name. Each
    writes its pid to d/name.leader or d/name.child once its traps are
    set. Returns (script, log path)."""
    log = os.path.join(d, name)
    traps = " ".join("trap 'echo %%s:%s >> %s' %s;" % (s, log, s) for s in sigs)
    body = (
        "cat > %(log)s.sh <<'EOF'\n%(child)s echo $$ > %(log)s.child\nwhile :; do sleep 0.05; done\nEOF\n"
        "/bin/sh %(log)s.sh &\n"
        "%(leader)s echo $$ > %(log)s.leader\n"
        "while :; do sleep 0.05; done\n"
    ) % {"log": log, "child": traps % (("child",) * len(sigs)), "leader": traps % (("leader",) * len(sigs))}
    return shfile(d=d, name=name + ".sh", body=body), log


def trapper_up(log, timeout=10.0):
    """Waits for both of a trapper's shells; returns their pids (as their
    namespace sees them)."""
    return int(wait_file(log + ".leader", timeout)), int(wait_file(log + ".child", timeout))


def with_berthd(lines):
    """The minimal config with lines added to its [berthd] section."""
    return minimal_config().replace("[berthd]\n", "[berthd]\n" + lines, 1)


def of(events, kind, name=None):
    return [e for e in events if e["kind"] == kind and (name is None or e["data"].get("name") == name)]


def started(sb, name, from_seq=1, timeout=10.0):
    ev = sb.wait_event(lambda e: e["kind"] == "service.started" and e["data"]["name"] == name, timeout, from_seq)
    return ev["data"]


def exited(sb, name, from_seq=1, timeout=10.0):
    ev = sb.wait_event(lambda e: e["kind"] == "service.exited" and e["data"]["name"] == name, timeout, from_seq)
    return ev["data"]


def service(sb, name):
    return [s for s in sb.state()["services"] if s["name"] == name][0]


def journal_after_exit(sb, from_seq):
    """berthd has exited: starts it again on the same state directory with
    no services; the journal from from_seq to the new berthd.started."""
    with open(sb.config_path, "w") as f:
        f.write(minimal_config())
    sb.start(wait="socket")
    evs = sb.events(from_seq)
    kinds = event_kinds(evs)
    return evs[: len(kinds) - 1 - kinds[::-1].index("berthd.started")]


def ns_processes(sb):
    """Host pids of the processes in berthd's namespace."""
    return [p for p in host_processes() if sb.in_namespace(p)]


def group_of(sb, pgid):
    """Live host pids of berthd's processes in process group pgid."""
    out = []
    for p in host_processes() if not sb.pid1 else ns_processes(sb):
        try:
            if os.getpgid(p) == pgid and pid_alive(p):
                out.append(p)
        except ProcessLookupError:
            pass
    return out


# ---------------------------------------------------------------------
# 1. A dirty parent: its mask and its dispositions


def reaps_and_stops(sb):
    """berthd (whatever its parent left it) sees a one-shot exit, reaps
    an orphan, and stops in order on SIGTERM."""
    ex = exited(sb, "oneshot")
    expect_eq(ex.get("code"), 3, "the one-shot's exit code")
    wait_for(lambda: service(sb, "oneshot")["state"] == "stopped", 5, "the one-shot stopped")
    exited(sb, "orphans")
    sleeper = sb.host_pid(started(sb, "sleeper")["pid"])
    bpid = sb.berthd_pid()

    # The orphan sleeps 0.3 s as berthd's child, then is reaped.
    wait_for(lambda: "reaped orphan" in sb.log(), 5, "berthd reaping the orphan")
    zombies = [p for p, st in host_processes().items() if st[2] == bpid and st[1] == "Z"]
    expect_eq(zombies, [], "zombies under berthd")
    before = sb.state()["last_seq"]
    expect_eq(sb.stop(signal.SIGTERM, timeout=10), 0, "berthd's exit status on SIGTERM")
    expect(not pid_alive(sleeper), "the sleeper outlived berthd")
    evs = journal_after_exit(sb, before + 1)
    kinds = event_kinds(evs)
    expect(kinds and kinds[0] == "berthd.stopping", "no berthd.stopping after SIGTERM: %r" % kinds)
    sl = of(evs, "service.exited", "sleeper")
    expect(sl, "no service.exited for the sleeper: %r" % kinds)
    expect_eq(sl[0]["data"].get("signal"), signal.SIGTERM, "how the sleeper was stopped")


def dirty_services():
    return (
        '[service oneshot]\ncommand = /bin/sh -c "exit 3"\nrestart = never\n\n'
        '[service orphans]\ncommand = /bin/sh -c "(sleep 0.3 &)"\nrestart = never\n\n'
        "[service sleeper]\ncommand = sleep 1000\n"
    )


def dirty_peers(block, ignore):
    """tini and dumb-init under the same parent: do they reap an orphan
    and stop on SIGTERM? Noted, not failed."""
    for argv in (["tini", "--"], ["dumb-init"]):
        p = Peer(argv + ["/bin/sh", "-c", "(sleep 0.2 &); exec sleep 1000"], prefix=dirty(block, ignore))
        pid = p.pid()
        time.sleep(0.6)
        zombies = [q for q in descendants(pid) if proc_stat(q) and proc_stat(q)[1] == "Z"]
        p.signal(signal.SIGTERM)
        rc = p.wait(3)
        note("%s under a parent blocking %s, ignoring %s: zombies %r, status after SIGTERM %r"
             % (argv[0], block, ignore, zombies, rc))


def dirty_case(block, ignore):
    for pid1 in (True, False):
        kw = dict(extra=dirty_services(), wait="socket", pid1=pid1, debug=True)
        with WrappedSandbox(wrap=dirty(block, ignore), **kw) as sb:
            note("berthd as %s" % ("PID 1" if pid1 else "a plain process"))
            reaps_and_stops(sb)
    dirty_peers(block, ignore)


@case("dirty parent (tini sigconf): SIGCHLD and SIGTERM blocked, berthd still reaps and stops in order")
def dirty_blocked():
    dirty_case(("CHLD", "TERM"), ())


@case("dirty parent (tini sigconf): SIGCHLD and SIGTERM at SIG_IGN, berthd still reaps and stops in order")
def dirty_ignored():
    dirty_case((), ("CHLD", "TERM"))


def parse_sigsets(text):
    """/proc/PID/status's Sig lines as {field: set of signal numbers}, but
    32 and 33 (the C library's own: sigaction cannot reset them)."""
    out = {}
    for line in text.splitlines():
        k, v = line.split(":\t")
        if k not in ("SigBlk", "SigIgn"):
            continue
        bits = int(v, 16)
        out[k] = {n for n in range(1, 65) if bits & (1 << (n - 1)) and n not in (32, 33)}
    return out


def dispositions(wrap):
    """berthd's own blocked and ignored signals, and those of a service it
    starts, with berthd started through wrap."""
    d = scratch()
    probe = '[service probe]\ncommand = /bin/sh -c "exec grep ^Sig /proc/self/status > %s/sig"\nrestart = never\n' % d
    with WrappedSandbox(wrap=wrap, extra=probe, wait="socket") as sb:
        exited(sb, "probe")
        own = sigsets(sb.berthd_pid())
    svc = parse_sigsets(wait_file(os.path.join(d, "sig")))
    note("berthd: %r; its service: %r" % ({k: signames(v) for k, v in own.items()},
                                           {k: signames(v) for k, v in svc.items()}))
    return own, svc


MESS = ("TTOU", "TTIN", "TSTP", "PIPE", "HUP", "USR1", "INT", "QUIT", "XFSZ")


@case("berthd ignores SIGTTOU, SIGTTIN, SIGTSTP itself; a service gets every signal at SIG_DFL and none blocked")
def clean_dispositions():
    for wrap in ([], dirty(MESS, MESS)):
        own, svc = dispositions(wrap)
        for s in ("TTOU", "TTIN", "TSTP"):
            expect(getattr(signal, "SIG" + s) in own["SigIgn"], "berthd does not ignore SIG%s" % s)
        expect_eq(signames(own["SigBlk"]), [], "signals blocked in berthd")
        expect_eq(signames(svc["SigBlk"]), [], "signals blocked in the service")
        expect_eq(signames(svc["SigIgn"]), [], "signals ignored in the service")
    # tini's own suite expects it to hand its child the parent's mask and
    # ignored signals back; dumb-init's child starts clean.
    mess = {getattr(signal, "SIG" + s) for s in MESS}
    for argv, want in ((["tini", "--"], mess), (["dumb-init"], set())):
        p = Peer(argv + ["sleep", "1000"], prefix=dirty(MESS, MESS))
        child = wait_for(lambda: [q for q in descendants(p.pid()) if proc_argv(q) == ["sleep", "1000"]], 5,
                         "%s's child" % argv[0])[0]
        got = sigsets(child)
        note("%s's child: %r" % (argv[0], {k: signames(v) for k, v in got.items()}))
        expect_eq(signames(got["SigBlk"]), signames(want), "what %s's child has blocked" % argv[0])
        expect_eq(signames(got["SigIgn"]), signames(want), "what %s's child ignores" % argv[0])


# ---------------------------------------------------------------------
# 3. Signal forwarding


def sent_and_seen(pid, log, sigs, who=("leader", "child")):
    """Sends each of sigs to pid and waits for who to trap it."""
    for s in sigs:
        os.kill(pid, getattr(signal, "SIG" + s))
        for w in who:
            wait_trap(log, "%s:%s" % (w, s), 5, "%s trapping SIG%s" % (w, s))


def peer_forwarding(argv, d, name):
    """What a peer forwards of FORWARDED to its child and grandchild."""
    sh, log = trapper(d, name)
    p = Peer(argv + ["/bin/sh", sh])
    trapper_up(log)
    pid = p.pid()
    for s in FORWARDED:
        os.kill(pid, getattr(signal, "SIG" + s))
    time.sleep(1)
    note("%s: %r" % (" ".join(argv), trap_lines(log)))
    return trap_lines(log)


@case("forward_signals by default: HUP, USR1, USR2, WINCH reach the main service's group (tini, dumb-init forward)")
def forward_default():
    d = scratch()
    sh, log = trapper(d, "main")
    extra = "[service boss]\ncommand = /bin/sh %s\nmain = yes\n" % sh
    with Sandbox(extra=extra, wait="socket") as sb:
        trapper_up(log)
        sent_and_seen(sb.berthd_pid(), log, FORWARDED)
        expect(sb.running(), "berthd exited on a forwarded signal")
        expect_eq(service(sb, "boss")["state"], "ready", "the main service's state")
    got = {}
    for argv in (["tini", "--"], ["tini", "-g", "--"], ["dumb-init"]):
        got[" ".join(argv)] = peer_forwarding(argv, d, argv[0] + str(len(got)))
    # tini signals its child only, tini -g and dumb-init the child's group.
    for k, who in (("tini --", ["leader"]), ("tini -g --", ["child", "leader"]), ("dumb-init", ["child", "leader"])):
        want = sorted("%s:%s" % (w, s) for w in who for s in FORWARDED)
        expect_eq(sorted(got[k]), want, "what %s forwarded" % k)


@case("forward = yes: the services that say so get the forwarded signals, the main one then does not")
def forward_yes():
    d = scratch()
    sa, la = trapper(d, "a")
    sbb, lb = trapper(d, "b")
    sm, lm = trapper(d, "m")
    extra = (
        "[service a]\ncommand = /bin/sh %s\nforward = yes\n\n"
        "[service b]\ncommand = /bin/sh %s\nforward = yes\n\n"
        "[service m]\ncommand = /bin/sh %s\nmain = yes\n" % (sa, sbb, sm)
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        for lg in (la, lb, lm):
            trapper_up(lg)
        for s in ("HUP", "USR2"):
            os.kill(sb.berthd_pid(), getattr(signal, "SIG" + s))
            for lg in (la, lb):
                for w in ("leader", "child"):
                    wait_trap(lg, "%s:%s" % (w, s), 5, "%s of %s trapping SIG%s" % (w, os.path.basename(lg), s))
        time.sleep(0.5)
        expect_eq(trap_lines(lm), [], "what the main service (not forward = yes) trapped")


@case("forward_signals = none: nothing is forwarded, berthd stays up and still stops on SIGTERM")
def forward_none():
    d = scratch()
    sh, log = trapper(d, "main")
    config = with_berthd("forward_signals = none\n") + "\n[service boss]\ncommand = /bin/sh %s\nmain = yes\n" % sh
    with Sandbox(config=config, wait="socket") as sb:
        trapper_up(log)
        for s in FORWARDED:
            os.kill(sb.berthd_pid(), getattr(signal, "SIG" + s))
        time.sleep(1)
        expect_eq(trap_lines(log), [], "what the main service trapped")
        expect_eq(sb.state()["pid"], 1, "berthd answering after the signals")
        rc = sb.stop(signal.SIGTERM)
        note("berthd's exit status: %r" % rc)
        expect(not sb.running(), "berthd still runs after SIGTERM")
    # dumb-init's -r SIG:0 is its way to drop a signal.
    p = Peer(["dumb-init", "-r", "1:0", "-r", "10:0", "/bin/sh", trapper(d, "dumb")[0]])
    trapper_up(os.path.join(d, "dumb"))
    for s in ("HUP", "USR1"):
        p.signal(getattr(signal, "SIG" + s))
    time.sleep(0.5)
    expect_eq(trap_lines(os.path.join(d, "dumb")), [], "what dumb-init -r 1:0 -r 10:0 passed on (it drops both)")


@case("forward_signals = SIGUSR2: USR2 is forwarded, HUP and USR1 (not in the list) are not")
def forward_listed_only():
    d = scratch()
    sh, log = trapper(d, "main")
    config = with_berthd("forward_signals = SIGUSR2\n") + "\n[service boss]\ncommand = /bin/sh %s\nmain = yes\n" % sh
    with Sandbox(config=config, wait="socket") as sb:
        trapper_up(log)
        pid = sb.berthd_pid()
        os.kill(pid, signal.SIGHUP)
        os.kill(pid, signal.SIGUSR1)
        time.sleep(0.5)
        sent_and_seen(pid, log, ["USR2"])
        time.sleep(0.3)
        expect_eq(sorted(trap_lines(log)), ["child:USR2", "leader:USR2"], "what the main service trapped")
        expect(sb.running(), "berthd exited on a signal it does not forward")


# ---------------------------------------------------------------------
# 4. service.signal and berth service signal


@case("service.signal and berth service signal reach the service's whole process group")
def service_signal():
    d = scratch()
    sh, log = trapper(d, "t")
    extra = "[service t]\ncommand = /bin/sh %s\n" % sh
    with Sandbox(extra=extra) as sb:
        trapper_up(log)
        c = sb.unix()
        for sig, name in (("USR1", "USR1"), ("SIGUSR2", "USR2"), (int(signal.SIGHUP), "HUP")):
            c.call("service.signal", {"name": "t", "signal": sig})
            for w in ("leader", "child"):
                wait_trap(log, "%s:%s" % (w, name), 5, "%s trapping %r from service.signal" % (w, sig))
        for transport in TRANSPORTS:
            before = len(trap_lines(log))
            text_ok(sb, transport, "service", "signal", "t", "WINCH")
            wait_for(lambda: len(trap_lines(log)) >= before + 2, 5, "both shells trapping the CLI's WINCH")
            expect_eq(sorted(trap_lines(log)[before:]), ["child:WINCH", "leader:WINCH"], "what the CLI's WINCH reached")
        expect_eq(c.error_of("service.signal", {"name": "nosuch", "signal": "HUP"}), "not_found", "an unknown service")
        for bad in ("NOSUCH", 999, ""):
            expect_eq(c.error_of("service.signal", {"name": "t", "signal": bad}), "bad_args", "signal %r" % (bad,))
        expect_eq(service(sb, "t")["state"], "ready", "the service's state after its signals")


# ---------------------------------------------------------------------
# 5. exit_codes_ok (tini -e)


@case("exit_codes_ok = 0 143: a main service exiting 143 makes berthd exit 0, else 143 (tini -e)")
def exit_codes_ok_main():
    for codes, want in (("exit_codes_ok = 0 143\n", 0), ("", 143)):
        extra = '[service boss]\ncommand = /bin/sh -c "sleep 0.2; exit 143"\nmain = yes\nrestart = never\n' + codes
        with Sandbox(extra=extra, wait=None) as sb:
            expect_eq(sb.wait_exit(10), want, "berthd's exit status with %r" % codes)
    for argv, want in ((["tini", "-e", "143", "--"], 0), (["tini", "--"], 143), (["dumb-init"], 143)):
        p = Peer(argv + ["/bin/sh", "-c", "exit 143"])
        expect_eq(p.wait(10), want, "%s's exit status" % " ".join(argv))


@case("exit_codes_ok: restart = on-failure leaves a listed code alone, a one-shot's listed code is success")
def exit_codes_ok_restart():
    extra = (
        '[service listed]\ncommand = /bin/sh -c "exit 143"\nrestart = on-failure\nexit_codes_ok = 0 143\n'
        "backoff_min_ms = 50\n\n"
        '[service unlisted]\ncommand = /bin/sh -c "exit 142"\nrestart = on-failure\nexit_codes_ok = 0 143\n'
        "backoff_min_ms = 50\nmax_deaths = 100\n\n"
        '[service oneshot]\ncommand = /bin/sh -c "exit 143"\nrestart = never\nexit_codes_ok = 143\n\n'
        "[service after]\ncommand = sleep 1000\nafter = oneshot\n"
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        expect_eq(exited(sb, "listed").get("code"), 143, "listed's exit code")
        # unlisted restarts at 50, 100, 200 ms: by its third restart,
        # listed would have restarted too.
        c = sb.unix(timeout=10)
        c.subscribe(1)
        third = ("unlisted", 3)
        c.events_until(lambda e: e["kind"] == "service.restarting"
                       and (e["data"]["name"], e["data"]["restarts"]) == third, 10)
        evs = sb.events()
        expect_eq(of(evs, "service.restarting", "listed"), [], "restarts of listed (143 is in exit_codes_ok)")
        expect_eq(len(of(evs, "service.exited", "listed")), 1, "exits of listed")
        expect_eq(service(sb, "listed")["state"], "stopped", "listed's state")
        started(sb, "after")
        expect_eq(exited(sb, "oneshot").get("code"), 143, "the one-shot's exit code")


# ---------------------------------------------------------------------
# 6. Subreaper mode (tini -s)


GENERATIONS = (
    # The leader ignores TERM and starts a middle generation that starts
    # a third in a session of its own, then dies: the third is orphaned,
    # re-parented to berthd. Its own child, in yet another session, is
    # no child of berthd until the third is killed.
    "trap '' TERM\n/bin/sh %(d)s/middle.sh &\nexec sleep 1001\n",
    "trap '' TERM\nsetsid /bin/sh %(d)s/third.sh &\nsleep 0.3\nexit 0\n",
    "trap '' TERM HUP\nsetsid /bin/sh -c 'exec sleep 1003' &\nexec sleep 1002\n",
)


def generations(d):
    for name, body in zip(("leader", "middle", "third"), GENERATIONS):
        shfile(d=d, name=name + ".sh", body=body % {"d": d})
    return os.path.join(d, "leader.sh")


LINEAGE = (["sleep", "1001"], ["sleep", "1002"], ["sleep", "1003"])


def lineage(root):
    """The pids of LINEAGE under root, or None until all three run."""
    under = descendants(root)
    found = [next((p for p in under if proc_argv(p) == argv and pid_alive(p)), None) for argv in LINEAGE]
    return None if None in found else found


@case("subreaper (tini -s): as a plain process, a grandchild orphaned in a chain of three is berthd's and ends with it")
def subreaper_chain():
    d = scratch()
    extra = "[service chain]\ncommand = /bin/sh %s\nstop_timeout_ms = 1000\n" % generations(d)
    with Sandbox(extra=extra, wait="socket", pid1=False, debug=True) as sb:
        bpid = sb.berthd_pid()
        found = wait_for(lambda: lineage(bpid), 10, "the three generations running")
        track_closer(lambda f=found: kill_pids(f))
        orphan = found[1]
        wait_for(lambda: (proc_stat(orphan) or ("", "", 0))[2] == bpid, 5, "the third generation re-parented to berthd")
        expect_eq(sb.stop(signal.SIGTERM, timeout=15), 0, "berthd's exit status")
        left = [proc_argv(p) for p in found if pid_alive(p)]
        expect_eq(left, [], "processes of the chain that outlived berthd")
    # berthd reaped both: the orphan, and its child once that was orphaned.
    for pid, argv in zip(found[1:], LINEAGE[1:]):
        expect("reaped orphan %d\n" % pid in sb.log(), "berthd did not reap %s (pid %d)" % (" ".join(argv), pid))
    # tini -s: the same chain, tini a plain process, stopped with SIGTERM.
    d2 = scratch()
    p = Peer(["tini", "-s", "--", "/bin/sh", generations(d2)], ns=False)
    found = wait_for(lambda: lineage(p.pid()), 10, "tini's three generations running")
    track_closer(lambda f=found: kill_pids(f))
    p.signal(signal.SIGTERM)
    rc = p.wait(3)
    left = [proc_argv(q) for q in found if pid_alive(q)]
    note("tini -s after SIGTERM: status %r, still alive %r" % (rc, left))


# ---------------------------------------------------------------------
# 7. --pdeathsig (tini -p)


@case("--pdeathsig TERM: berthd, a plain process, shuts down when its parent dies (tini -p)")
def pdeathsig():
    extra = "[service sleeper]\ncommand = sleep 1000\n"
    with WrappedSandbox(wrap=parent(), extra=extra, wait="socket", pid1=False, args=["--pdeathsig", "TERM"]) as sb:
        bpid = sb.berthd_pid()
        expect(bpid != sb.proc.pid, "berthd is not the parent's child")
        sleeper = wait_for(lambda: [p for p in pids_running(["sleep", "1000"]) if proc_stat(p)[2] == bpid], 5,
                           "the sleeper under berthd")[0]
        os.kill(sb.proc.pid, signal.SIGKILL)
        sb.proc.wait(5)
        wait_for(lambda: not pid_alive(bpid), 10, "berthd gone after its parent died")
        expect(not pid_alive(sleeper), "the sleeper outlived berthd")
        kill_pids([sleeper])
        log = sb.log()
    expect("shutting down" in log, "berthd's log does not say it shut down")
    d = scratch()
    got = os.path.join(d, "got")
    p = Peer(["tini", "-p", "SIGTERM", "--", "/bin/sh", "-c", "trap 'echo TERM > %s; exit 0' TERM; "
              "while :; do sleep 0.05; done" % got], ns=False, outer=parent())
    tini = p.pid()
    time.sleep(0.3)
    os.kill(p.proc.pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(tini), 5, "tini -p gone after its parent died")
    note("tini -p SIGTERM: its child trapped %r" % trap_lines(got))


# ---------------------------------------------------------------------
# 8. tty and job control


@case("tty: in a background process group with tostop, berthd writes its log and runs; SIGTSTP does not stop it")
def tty_background():
    extra = "[service sleeper]\ncommand = sleep 1000\n"
    for pid1 in (False, True):
        note("berthd as %s" % ("PID 1" if pid1 else "a plain process"))
        with TtySandbox(extra=extra, debug=True, pid1=pid1) as sb:
            bpid = sb.berthd_pid()
            expect(os.getpgid(bpid) != os.tcgetpgrp(sb.tty.master), "berthd is in the terminal's foreground group")
            wait_for(lambda: "sleeper" in sb.log(), 10, "berthd's log about the sleeper on the terminal")
            for sig in (signal.SIGTSTP, signal.SIGTTOU, signal.SIGTTIN):
                os.kill(bpid, sig)
                time.sleep(0.2)
                expect(proc_stat(bpid)[1] != "T", "berthd stopped on %s" % sig.name)
            n = len(sb.log())
            sb.unix().call("service.restart", {"name": "sleeper"})
            wait_for(lambda: "sleeper" in sb.log()[n:], 10, "berthd's log after the restart on the terminal")
            expect(proc_stat(bpid)[1] != "T", "berthd stopped writing its log")
            expect_eq(sb.stop(signal.SIGTERM), 0, "berthd's exit status")
    # Both peers write in the background (tini ignores SIGTTOU, dumb-init
    # blocks it); on SIGTSTP dumb-init suspends itself, as its job
    # control tests ask, and tini does not.
    for argv, stops in ((["tini", "-vvv", "--"], False), (["dumb-init", "-v"], True)):
        p = TtyPeer(argv + ["sleep", "1000"])
        pid = p.pid()
        wait_for(lambda: argv[0] in p.tty.text(), 5, "%s's log on the terminal" % argv[0])
        expect(proc_stat(pid)[1] != "T", "%s stopped in the background" % argv[0])
        os.kill(pid, signal.SIGTSTP)
        if stops:
            wait_for(lambda: proc_stat(pid)[1] == "T", 5, "%s stopped on SIGTSTP" % argv[0])
        else:
            time.sleep(0.3)
            expect(proc_stat(pid)[1] != "T", "%s stopped on SIGTSTP" % argv[0])
        os.kill(pid, signal.SIGCONT)


# ---------------------------------------------------------------------
# 9. A stop, a restart and a crash end the whole process group


GROUP = "/bin/sh -c 'trap \"\" TERM; exec sleep 1001' &\nexec sleep 1000\n"


@case("service stop: the group's TERM-ignoring member is SIGKILLed after stop_timeout_ms, service.killed says so")
def group_stop():
    d = scratch()
    extra = "[service g]\ncommand = /bin/sh %s\nstop_timeout_ms = 1000\n" % shfile(d=d, name="g.sh", body=GROUP)
    with Sandbox(extra=extra, wait="socket") as sb:
        leader = sb.host_pid(started(sb, "g")["pid"])
        wait_for(lambda: [p for p in pids_running(["sleep", "1001"]) if sb.in_namespace(p)], 5, "sleep 1001")
        pgid = os.getpgid(leader)
        members = group_of(sb, pgid)
        expect(len(members) >= 2, "the group holds %r" % members)
        before = sb.state()["last_seq"]
        t0 = time.monotonic()
        sb.unix().call("service.stop", {"name": "g"})
        wait_for(lambda: not group_of(sb, pgid), 3, "nothing of the group alive")
        note("the group was gone after %.2f s" % (time.monotonic() - t0))
        ev = sb.wait_event(lambda e: e["kind"] == "service.killed" and e["data"]["name"] == "g", 5, before + 1)
        expect(ev["data"]["count"] >= 1, "service.killed's count: %r" % ev["data"])
        # Stopped once what was killed is reaped, a moment after.
        wait_for(lambda: service(sb, "g")["state"] == "stopped", 2, "g stopped")


@case("service restart three times: no sleep 1001 of an old group piles up")
def group_restarts():
    d = scratch()
    extra = "[service g]\ncommand = /bin/sh %s\nstop_timeout_ms = 1000\n" % shfile(d=d, name="g.sh", body=GROUP)
    with Sandbox(extra=extra, wait="socket") as sb:
        c = sb.unix(timeout=15)
        seen = set()

        def new_member():
            # The sleep 1001 of the incarnation now running: restarted
            # before it forks, a group would have nothing to kill.
            fresh = [p for p in pids_running(["sleep", "1001"]) if sb.in_namespace(p) and p not in seen]
            return fresh[0] if len(fresh) == 1 else None

        for _ in range(3):
            seen.add(wait_for(new_member, 5, "the sleep 1001 of the running group"))
            before = c.call("state")["last_seq"]
            c.call("service.restart", {"name": "g"}, timeout=15)
            started(sb, "g", before + 1)
        wait_for(new_member, 5, "the sleep 1001 of the last group")
        left = [p for p in pids_running(["sleep", "1001"]) if sb.in_namespace(p)]
        expect_eq(len(left), 1, "sleep 1001 processes after three restarts (%r)" % left)
        killed = of(sb.events(), "service.killed", "g")
        expect_eq([e["data"]["count"] for e in killed], [1, 1, 1], "service.killed's counts, one a restart")


@case("a leader killed with SIGKILL takes its group with it")
def group_crash():
    d = scratch()
    extra = "[service g]\ncommand = /bin/sh %s\nstop_timeout_ms = 1000\n" % shfile(d=d, name="g.sh", body=GROUP)
    with Sandbox(extra=extra, wait="socket") as sb:
        leader = sb.host_pid(started(sb, "g")["pid"])
        child = wait_for(lambda: [p for p in pids_running(["sleep", "1001"]) if sb.in_namespace(p)], 5, "sleep 1001")[0]
        before = sb.state()["last_seq"]
        os.kill(leader, signal.SIGKILL)
        ex = exited(sb, "g", before + 1)
        expect_eq(ex.get("signal"), signal.SIGKILL, "how the leader ended")
        wait_for(lambda: not pid_alive(child), 3, "the TERM-ignoring member of the crashed leader's group gone")


@case("a setsid escapee of a service is ended when the service stops, berthd still running")
def escapee_at_stop():
    d = scratch()
    sh = shfile(d=d, name="e.sh", body="setsid /bin/sh -c 'trap \"\" TERM HUP; exec sleep 1002' &\nexec sleep 1000\n")
    extra = "[service e]\ncommand = /bin/sh %s\nstop_timeout_ms = 1000\n" % sh
    with Sandbox(extra=extra, wait="socket") as sb:
        leader = sb.host_pid(started(sb, "e")["pid"])
        esc = wait_for(lambda: [p for p in pids_running(["sleep", "1002"]) if sb.in_namespace(p)], 5, "the escapee")[0]
        expect(os.getsid(esc) != os.getsid(leader), "the escapee did not leave the session")
        sb.unix().call("service.stop", {"name": "e"})
        wait_for(lambda: not pid_alive(esc), 4, "the escapee ended at the service's stop")
        expect(sb.running(), "berthd is not running")


run()
