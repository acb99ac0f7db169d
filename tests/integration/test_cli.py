"""The berth CLI on both transports: output for people and for scripts,
exit statuses, and an event follower that survives a killed gateway."""

import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    CLI,
    Sandbox,
    Spawned,
    case,
    expect,
    expect_contiguous,
    expect_eq,
    expect_in,
    generate_events,
    note,
    run,
    scratch,
    run_program,
    wait_for,
    ws_upgrade,
)


def berth(*args, timeout=20):
    """Runs the CLI with args: (status, stdout, stderr)."""
    rc, out, err = run_program([CLI] + list(args), timeout=timeout)
    note("berth %s -> %d\nstdout: %s\nstderr: %s" % (" ".join(args), rc, out, err))
    return rc, out, err


def json_lines(out):
    try:
        return [json.loads(line) for line in out.splitlines() if line.strip()]
    except ValueError as e:
        raise AssertionError("not JSON lines (%s): %r" % (e, out[:500]))


@case("ping over the socket prints pong")
def ping_socket():
    with Sandbox() as sb:
        rc, out, _ = berth("--socket", sb.socket, "ping")
        expect_eq(rc, 0, "exit status")
        expect("pong" in out, "no pong in %r" % out)


@case("--json ping is JSON with the boot id")
def ping_json():
    with Sandbox() as sb:
        boot = sb.unix().hello_result["boot_id"]
        rc, out, _ = berth("--socket", sb.socket, "--json", "ping")
        expect_eq(rc, 0, "exit status")
        (doc,) = json_lines(out)
        expect_eq(doc["result"]["boot_id"], boot, "result.boot_id")
        expect(doc["rtt_ms"] >= 0, "rtt_ms: %r" % doc)


@case("state --json has the services")
def state_json():
    with Sandbox(extra="[service sleeper]\ncommand = sleep 1000\n") as sb:
        rc, out, _ = berth("--socket", sb.socket, "state", "--json")
        expect_eq(rc, 0, "exit status")
        (doc,) = json_lines(out)
        names = {s["name"]: s for s in doc["services"]}
        expect_eq(sorted(names), ["gateway", "sleeper"], "service names")
        expect_eq(names["sleeper"]["state"], "ready", "sleeper's state")
        expect_eq(doc["pid"], 1, "pid")
        rc, text, _ = berth("--socket", sb.socket, "state")
        expect_eq(rc, 0, "exit status (text)")
        expect("sleeper" in text and "gateway" in text, "the text does not list the services: %r" % text)
        expect(text.startswith("berthd %s " % doc["agent_version"]), "the text's build: %r" % text[:60])


@case("events --from 1 prints the journal, berthd.started first, and exits")
def events_from():
    with Sandbox() as sb:
        last = sb.state()["last_seq"]
        rc, out, _ = berth("--socket", sb.socket, "events", "--from", "1")
        expect_eq(rc, 0, "exit status")
        lines = out.splitlines()
        expect(lines and "berthd.started" in lines[0], "first line: %r" % lines[:1])
        expect_eq(len(lines), last, "lines printed")
        rc, out, _ = berth("--socket", sb.socket, "--json", "events", "--from", "1")
        expect_eq(rc, 0, "exit status (--json)")
        evs = json_lines(out)
        expect_contiguous([e["seq"] for e in evs], 1, last)
        expect_eq(evs, json.loads(json.dumps(sb.events(1))), "the JSON events against the journal")


@case("ping over the WebSocket with a token file")
def ping_ws():
    with Sandbox() as sb:
        rc, out, _ = berth("--url", sb.url, "--token-file", sb.token_file, "ping")
        expect_eq(rc, 0, "exit status")
        expect("pong" in out, "no pong in %r" % out)


@case("a wrong or unreadable token file exits 4")
def wrong_token():
    with Sandbox() as sb:
        bad = os.path.join(sb.dir, "bad-token")
        with open(bad, "w") as f:
            f.write("f" * 64 + "\n")
        rc, _, err = berth("--url", sb.url, "--token-file", bad, "ping")
        expect_eq(rc, 4, "exit status with a wrong token")
        expect("f" * 64 not in err, "the token is in the message")
        rc, _, _ = berth("--url", sb.url, "--token-file", os.path.join(sb.dir, "absent"), "ping")
        expect_eq(rc, 4, "exit status without a token file")


@case("a missing socket exits 3 and names the path")
def missing_socket():
    with Sandbox(wait="socket") as sb:
        path = os.path.join(sb.dir, "no-such.sock")
        rc, _, err = berth("--socket", path, "ping")
        expect_eq(rc, 3, "exit status")
        expect(path in err, "the message does not name %s: %r" % (path, err))


@case("an unknown command or option exits 2")
def usage():
    rc, _, err = berth("--socket", "unused", "frobnicate")
    expect_eq(rc, 2, "exit status for an unknown command")
    expect("frobnicate" in err, "the message does not name the command: %r" % err)
    rc, _, _ = berth("--no-such-option", "ping")
    expect_eq(rc, 2, "exit status for an unknown option")
    rc, _, _ = berth("events", "--from", "zero")
    expect_eq(rc, 2, "exit status for a bad --from")


def help_commands(out):
    """The command names of berth --help's "commands:" part."""
    part = out.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in part.splitlines() if line.startswith("  ") and not line.startswith("   ")]


@case("--help lists every command, and each command's --help is its own: synopsis and summary, nothing run")
def help_per_command():
    rc, out, _ = berth("--help")
    expect_eq(rc, 0, "berth --help's exit status")
    names = help_commands(out)
    for name in ("ping", "state", "events", "service", "pty", "exec", "cp", "ls", "cat", "screenshot", "record", "help"):
        expect_in(name, names, "commands of berth --help")
    # A socket that does not exist: running anything would exit 3.
    nowhere = "/nonexistent/berthd.sock"
    for name in names:
        rc, cmd_out, err = berth("--socket", nowhere, name, "--help")
        expect_eq((rc, err), (0, ""), "berth %s --help: exit status and stderr" % name)
        expect(cmd_out.startswith("usage: berth [OPTIONS] %s" % name), "berth %s --help: %r" % (name, cmd_out))
        expect(cmd_out != out and "commands:" not in cmd_out, "berth %s --help is the whole help" % name)
    for words in (["pty", "open"], ["record", "stop"], ["service", "list"]):
        rc, cmd_out, err = berth("--socket", nowhere, *words, "--help")
        expect_eq((rc, err), (0, ""), "berth %s --help" % " ".join(words))
        expect(cmd_out.startswith("usage: berth [OPTIONS] %s" % " ".join(words)) or
               cmd_out.startswith("usage: berth [OPTIONS] %s" % words[0]),
               "berth %s --help: %r" % (" ".join(words), cmd_out))
    rc, cmd_out, _ = berth("--socket", nowhere, "exec", "--help", "--", "touch", "/nonexistent/x")
    expect_eq(rc, 0, "berth exec --help -- CMD does not run CMD")


@case("events --follow over the WebSocket survives a killed gateway, every seq once")
def follow_across_gateway_kill():
    with Sandbox() as sb:
        p = Spawned(
            [CLI, "--url", sb.url, "--token-file", sb.token_file, "--json", "events", "--from", "1", "--follow"]
        )
        evs = []

        def read_until(pred):
            while True:
                evs.append(json.loads(p.line(timeout=15)))
                if pred(evs[-1]):
                    return

        last = sb.state()["last_seq"]
        read_until(lambda e: e["seq"] >= last)
        old = sb.gateway_pid()
        os.kill(old, signal.SIGKILL)
        sb.gateway_pid(timeout=10, other_than=old)
        sb.wait_healthy()
        # Events happen while (or after) the CLI reconnects.
        expect_eq(ws_upgrade(sb.port, token="wrong")[0], 401, "refused upgrade")
        generate_events(sb, 2)
        read_until(lambda e: e["kind"] == "auth.failed")
        wait_for(lambda: sb.state()["last_seq"] >= evs[-1]["seq"] + 2, 5, "three auth.failed events journaled")
        target = sb.state()["last_seq"]
        read_until(lambda e: e["seq"] >= target)
        expect_eq(p.stop(signal.SIGTERM), 0, "the CLI's exit status on SIGTERM")
        note("CLI stderr: %s" % p.stderr())
        expect_contiguous([e["seq"] for e in evs], 1, target)
        kinds = [(e["kind"], e["data"].get("name")) for e in evs]
        expect(("service.exited", "gateway") in kinds, "no service.exited for the gateway")
        expect(kinds.count(("service.started", "gateway")) == 2, "not two service.started for the gateway: %r" % kinds)
        expect_eq(evs, json.loads(json.dumps(sb.events(1))), "the followed events against the journal")


@case("service list, status, stop, start and restart, with their exit statuses")
def service_commands():
    extra = "[service sleeper]\ncommand = sleep 1000\n\n[check told]\nready = report\n"
    with Sandbox(extra=extra) as sb:
        rc, out, _ = berth("--socket", sb.socket, "service", "list")
        expect_eq(rc, 0, "list: exit status")
        rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}
        expect_eq(out.split()[:3], ["NAME", "KIND", "STATE"], "list: the header")
        expect_eq(sorted(rows), ["gateway", "sleeper", "told"], "list: the names")
        expect_eq([rows[n][1] for n in ("gateway", "sleeper", "told")], ["service", "service", "check"], "list: kinds")
        rc, out, _ = berth("--socket", sb.socket, "service", "status", "sleeper", "--json")
        expect_eq(rc, 0, "status: exit status")
        (doc,) = json_lines(out)
        expect_eq(doc["state"], "ready", "status: state")
        expect_eq(doc["command"], ["sleep", "1000"], "status: command")
        first_pid = doc["pid"]
        rc, _, _ = berth("--socket", sb.socket, "service", "stop", "sleeper")
        expect_eq(rc, 0, "stop: exit status")
        sb.wait_event(lambda e: e["kind"] == "service.exited" and e["data"]["name"] == "sleeper")
        wait_for(lambda: [s for s in sb.state()["services"] if s["name"] == "sleeper"][0]["state"] == "stopped",
                 10, "sleeper stopped")
        rc, _, _ = berth("--socket", sb.socket, "service", "start", "sleeper")
        expect_eq(rc, 0, "start: exit status")

        def new_pid():
            s = [s for s in sb.state()["services"] if s["name"] == "sleeper"][0]
            return s["pid"] if s["state"] == "ready" and s["pid"] != first_pid else None

        second_pid = wait_for(new_pid, 10, "sleeper started again")
        rc, _, _ = berth("--url", sb.url, "--token-file", sb.token_file, "service", "restart", "sleeper")
        expect_eq(rc, 0, "restart over the WebSocket: exit status")
        wait_for(lambda: (lambda p: p if p not in (None, second_pid) else None)(new_pid()), 10,
                 "sleeper restarted")
        rc, _, err = berth("--socket", sb.socket, "service", "status", "nope")
        expect_eq(rc, 1, "an unknown service: exit status")
        expect("not_found" in err, "the error names not_found: %r" % err)
        rc, _, _ = berth("--url", sb.url, "--token-file", sb.token_file, "service", "stop", "gateway")
        expect_eq(rc, 1, "stopping the gateway: exit status")
        rc, _, _ = berth("--socket", sb.socket, "service", "frobnicate")
        expect_eq(rc, 2, "an unknown action: exit status")
        rc, _, _ = berth("--socket", sb.socket, "service", "stop")
        expect_eq(rc, 2, "stop without a name: exit status")


@case("service signal NAME SIG reaches the service's process group, by name or number; errors say why")
def service_signal_command():
    d = scratch()
    # The leader and a child in its group each note the signals they get.
    sh = os.path.join(d, "traps.sh")
    with open(sh, "w") as f:
        f.write(
            "/bin/sh -c 'trap \"echo child-hup >> %(d)s/log\" HUP; trap \"echo child-usr2 >> %(d)s/log\" USR2; "
            "echo > %(d)s/child; while :; do sleep 0.05; done' &\n"
            "trap 'echo leader-hup >> %(d)s/log' HUP\n"
            "trap 'echo leader-usr2 >> %(d)s/log' USR2\n"
            "echo > %(d)s/leader\n"
            "while :; do sleep 0.05; done\n" % {"d": d}
        )
    extra = "[service traps]\ncommand = /bin/sh %s\n\n[check told]\nready = report\nrequired = no\n" % sh
    with Sandbox(extra=extra) as sb:
        wait_for(lambda: os.path.exists(os.path.join(d, "leader")) and os.path.exists(os.path.join(d, "child")), 10,
                 "both traps set")

        def log():
            try:
                with open(os.path.join(d, "log")) as f:
                    return sorted(f.read().split())
            except FileNotFoundError:
                return []

        rc, out, err = berth("--socket", sb.socket, "service", "signal", "traps", "hup")
        expect_eq((rc, out, err), (0, "", ""), "signal by name: exit status and output")
        wait_for(lambda: log() == ["child-hup", "leader-hup"], 5, "HUP in the leader and its child")
        rc, out, _ = berth("--url", sb.url, "--token-file", sb.token_file, "--json", "service", "signal", "traps",
                           str(signal.SIGUSR2))
        expect_eq(rc, 0, "signal by number over the WebSocket: exit status")
        expect_eq(json.loads(out), {"name": "traps", "signal": signal.SIGUSR2}, "the --json answer")
        wait_for(lambda: log() == ["child-hup", "child-usr2", "leader-hup", "leader-usr2"], 5, "USR2 in both")
        for args, rc_want, word in (
            (["traps", "BOGUS"], 1, "bad_args"),
            (["traps", "0"], 1, "bad_args"),
            (["nope", "HUP"], 1, "not_found"),
            (["gateway", "HUP"], 1, "forbidden"),
            (["told", "HUP"], 1, "conflict"),
        ):
            rc, _, err = berth("--socket", sb.socket, "service", "signal", *args)
            expect_eq(rc, rc_want, "service signal %s: exit status" % " ".join(args))
            expect(word in err, "service signal %s names %s: %r" % (" ".join(args), word, err))
        rc, _, _ = berth("--socket", sb.socket, "service", "signal", "traps")
        expect_eq(rc, 2, "signal without a signal: exit status")
        rc, _, _ = berth("--socket", sb.socket, "service", "stop", "traps")
        expect_eq(rc, 0, "stop: exit status")
        wait_for(lambda: [s for s in sb.state()["services"] if s["name"] == "traps"][0]["state"] == "stopped", 10,
                 "traps stopped")
        rc, _, err = berth("--socket", sb.socket, "service", "signal", "traps", "HUP")
        expect_eq(rc, 1, "signal to a stopped service: exit status")
        expect("conflict" in err and "not running" in err, "a stopped service: %r" % err)


@case("pty open, list, send and attach: the output, the input and the exit status come through")
def pty_commands():
    with Sandbox() as sb:
        rc, out, _ = berth("--socket", sb.socket, "pty", "open", "--", "/bin/sh", "-c",
                           "echo hello-from-pty; read line; echo got:$line; exit 5")
        expect_eq(rc, 0, "open: exit status")
        pty_id = out.strip()
        expect(len(pty_id) == 8, "open prints the id: %r" % out)
        rc, out, _ = berth("--socket", sb.socket, "pty", "list")
        expect_eq(rc, 0, "list: exit status")
        expect(pty_id in out, "list shows the session: %r" % out)
        rc, _, _ = berth("--socket", sb.socket, "pty", "send", pty_id, "typed-text\n")
        expect_eq(rc, 0, "send: exit status")
        # Not a terminal: attach prints the output from offset 0 and ends
        # with the session's exit status.
        rc, out, err = berth("--url", sb.url, "--token-file", sb.token_file, "pty", "attach", pty_id, "--from", "0")
        expect_eq(rc, 5, "attach: the session's exit status")
        expect("hello-from-pty" in out and "got:typed-text" in out, "attach printed the output: %r" % out)
        expect("exited with status 5" in err, "attach said how it ended: %r" % err)
        rc, _, _ = berth("--socket", sb.socket, "pty", "attach", "00000000")
        expect_eq(rc, 1, "attach to an unknown session: exit status")


@case("pty attach over the WebSocket rides out a killed gateway: every line once, in order")
def pty_attach_reconnects():
    with Sandbox() as sb:
        prog = "for i in $(seq 0 299); do echo n$i; sleep 0.01; done; exit 0"
        rc, out, _ = berth("--socket", sb.socket, "pty", "open", "--", "/bin/sh", "-c", prog)
        expect_eq(rc, 0, "open: exit status")
        pty_id = out.strip()
        cli = Spawned([CLI, "--url", sb.url, "--token-file", sb.token_file, "pty", "attach", pty_id, "--from", "0"])
        lines = []
        while len(lines) < 60:
            lines.append(cli.line(10).strip())
        old = sb.gateway_pid()
        os.kill(old, signal.SIGKILL)
        sb.gateway_pid(timeout=10, other_than=old)
        while True:
            try:
                lines.append(cli.line(20).strip())
            except Exception:
                break
        rc = cli.proc.wait(20)
        note("stderr: %s" % cli.stderr())
        expect_eq(rc, 0, "attach: the session's exit status")
        expect("reconnecting" in cli.stderr(), "the CLI did not lose its connection: %r" % cli.stderr())
        got = [line for line in lines if line]
        expect_eq(got, ["n%d" % i for i in range(300)], "the lines, once each and in order")


def core_limits(pid):
    with open("/proc/%d/limits" % pid) as f:
        return [line.split()[4:6] for line in f if line.startswith("Max core file size")][0]


@case("the CLI holding the token is not dumpable and writes no core: run as another user, its memory is not its own")
def cli_not_dumpable():
    import pwd
    import shutil
    import tempfile

    nobody = pwd.getpwnam("nobody")
    with Sandbox() as sb:
        d = tempfile.mkdtemp(prefix="berth-cli-")
        try:
            tok = os.path.join(d, "token")
            shutil.copy(sb.token_file, tok)
            os.chown(tok, nobody.pw_uid, nobody.pw_gid)
            os.chmod(d, 0o755)
            f = Spawned(["setpriv", "--reuid", str(nobody.pw_uid), "--regid", str(nobody.pw_gid), "--clear-groups",
                         CLI, "--url", sb.url, "--token-file", tok, "events", "--follow", "--from", "1"])
            line = f.line(10)
            expect("berthd.started" in line, "the first event: %r" % line)
            pid = f.proc.pid
            # A dumpable process's /proc files are its uid's; these are root's.
            expect_eq(os.stat("/proc/%d/mem" % pid).st_uid, 0, "the owner of the CLI's /proc/PID/mem")
            expect_eq(core_limits(pid)[0], "0", "the CLI's core file size limit")
            f.kill()
        finally:
            shutil.rmtree(d, ignore_errors=True)


run()
