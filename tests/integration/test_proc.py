"""Commands (proc.*), through the real gateway: stdin closed unless asked
for, stdout and stderr as separate streams read by offset during and after
the run, 100 MiB read back exactly across a reconnect, explicit losses,
exit codes and signals, timeouts that kill the whole group, disconnects
that kill nothing, stdin pipes, waits, and bad input for every op."""

import contextlib
import grp
import hashlib
import os
import pwd
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Closed,
    Sandbox,
    case,
    expect,
    expect_eq,
    note,
    pid_alive,
    read_to_eof,
    run,
    scratch,
    wait_for,
)


def streams(pid):
    return ["proc/%s/stdout" % pid, "proc/%s/stderr" % pid]


def run_proc(c, args, timeout=30.0):
    """Starts a process attached, reads both streams to their ends, waits
    for it. Returns (stdout, stderr, wait result)."""
    p = c.call("proc.start", dict(args, attach=True))
    got = read_to_eof(c, streams(p["id"]), timeout=timeout)
    w = c.call("proc.wait", {"id": p["id"]}, timeout=timeout)
    return got[streams(p["id"])[0]], got[streams(p["id"])[1]], w


@case("stdin is closed unless asked for: a command that reads it finishes at once")
def t_stdin_closed():
    with Sandbox() as sb:
        c = sb.ws()
        t0 = time.monotonic()
        out, err, w = run_proc(c, {"argv": ["cat"]})
        took = time.monotonic() - t0
        expect_eq(w["exit"], {"code": 0}, "cat's exit")
        expect_eq(out, b"", "cat's output")
        out, err, w = run_proc(c, {"shell": "read line; echo \"read: $?\""})
        expect_eq(out, b"read: 1\n", "read on a closed stdin sees the end at once")
        note("cat with stdin closed finished in %.3f s" % took)
        expect(took < 3, "cat took %.1f s: its stdin was not closed" % took)


@case("stdout and stderr are separate streams; exit codes and signals are right")
def t_streams_and_status():
    with Sandbox() as sb:
        c = sb.ws()
        out, err, w = run_proc(c, {"shell": "echo out; echo err >&2; echo more; exit 3"})
        expect_eq(out, b"out\nmore\n", "stdout")
        expect_eq(err, b"err\n", "stderr")
        expect_eq(w["exit"], {"code": 3}, "the exit code")
        expect_eq((w["state"], w["timed_out"], w["stdout_bytes"], w["stderr_bytes"]),
                  ("exited", False, 9, 4), "the wait result")
        out, err, w = run_proc(c, {"shell": "kill -TERM $$"})
        expect_eq(w["exit"], {"signal": 15, "core": False}, "killed by SIGTERM")
        out, err, w = run_proc(c, {"argv": ["/bin/sh", "-c", "printf '%s|' \"$@\"", "x", "a b", "", "c"]})
        expect_eq(out, b"a b||c|", "argv reaches the program unsplit")
        out, err, w = run_proc(c, {"argv": ["pwd"], "cwd": "/tmp"})
        expect_eq(out, b"/tmp\n", "cwd")
        out, err, w = run_proc(c, {"shell": "echo $FOO", "env": {"FOO": "bar baz"}})
        expect_eq(out, b"bar baz\n", "env")
        out, err, w = run_proc(c, {"argv": ["id", "-un"], "user": "nobody"})
        expect_eq(out, b"nobody\n", "user")


@contextlib.contextmanager
def user_in_groups(n):
    """A user whose primary group is its own and who is in n more groups,
    made for the test and removed after. Yields (name, gids, primary)."""
    tag = "bt%d" % os.getpid()
    groups = ["%sg%d" % (tag, i) for i in range(n)]
    try:
        for g in groups:
            subprocess.run(["groupadd", g], check=True, capture_output=True)
        subprocess.run(["useradd", "-M", "-U", "-G", ",".join(groups), tag], check=True, capture_output=True)
        pw = pwd.getpwnam(tag)
        yield tag, sorted(grp.getgrnam(g).gr_gid for g in groups), pw.pw_gid
    finally:
        subprocess.run(["userdel", tag], capture_output=True)
        for g in groups + [tag]:
            subprocess.run(["groupdel", g], capture_output=True)


@case("a command run for a user has the user's supplementary groups, as a login gives them")
def t_user_groups():
    with user_in_groups(3) as (name, gids, primary), Sandbox() as sb:
        c = sb.ws()
        out, err, w = run_proc(c, {"argv": ["id", "-G"], "user": name})
        expect_eq(w["exit"], {"code": 0}, "id's exit (stderr %r)" % err)
        got = [int(x) for x in out.split()]
        expect_eq(got[0], primary, "the primary group first")
        expect_eq(sorted(got[1:]), gids, "the supplementary groups")
        out, err, w = run_proc(c, {"argv": ["id", "-G"], "user": "nobody"})
        expect_eq(out.split(), [str(pwd.getpwnam("nobody").pw_gid).encode()], "nobody: its one group")


@case("events: proc.started and proc.exited with the status and the byte counts")
def t_events():
    with Sandbox() as sb:
        c = sb.ws()
        c.subscribe()
        out, err, w = run_proc(c, {"shell": "printf abc; printf de >&2; exit 7", "tag": "build"})
        evs = c.events_until(lambda e: e["kind"] == "proc.exited")
        started = [e for e in evs if e["kind"] == "proc.started"]
        expect_eq(len(started), 1, "proc.started events")
        expect_eq((started[0]["data"]["tag"], started[0]["data"]["command"][0]), ("build", "/bin/sh"), "proc.started")
        d = evs[-1]["data"]
        expect_eq((d["code"], d["timed_out"], d["oom_killed"], d["stdout_bytes"], d["stderr_bytes"]),
                  (7, False, False, 3, 2), "proc.exited")
        expect_eq(d["id"], started[0]["data"]["id"], "the same process")


@case("100 MiB of output is read back exactly across an abrupt reconnect midway", timeout=240)
def t_big_output_reconnect():
    d = scratch()
    path = os.path.join(d, "big")
    size = 100 << 20
    want = hashlib.sha256()
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            block = os.urandom(1 << 20)
            want.update(block)
            f.write(block)
    with Sandbox() as sb:
        c = sb.ws()
        # Attached before the first byte and acknowledging what arrived:
        # what was in flight when the connection dropped is still held.
        p = c.call("proc.start", {"argv": ["cat", path], "attach": True, "ack": True})
        out, err = streams(p["id"])
        got = hashlib.sha256()
        have = acked = 0
        while have < 30 << 20:
            m = c.recv(30)
            if m.get("type") == "data" and m["stream"] == out:
                expect_eq(m["offset"], have, "the offset of the next chunk")
                got.update(m["data"])
                have += len(m["data"])
                if have - acked >= 1 << 20:
                    acked = have
                    c.send_request("proc.ack", {"id": p["id"], "stdout": acked})
        c.abort()
        time.sleep(1.0)
        c2 = sb.ws()
        lst = {q["id"]: q for q in c2.call("proc.list")["procs"]}
        expect_eq(lst[p["id"]]["state"], "running", "cat waits for its reader while it is away")
        a = c2.call("proc.attach", {"id": p["id"], "from_offset": {"stdout": have, "stderr": 0}, "ack": True})
        expect_eq((a["stdout"]["offset"], a["stdout"]["lost"]), (have, 0), "resumed where the client was")
        note("reconnected at %d MiB; berthd had read %d MiB" % (have >> 20, a["stdout"]["end"] >> 20))
        sent = [have]

        def ack(stream, total):
            if stream == out and have + total - sent[0] >= 1 << 20:
                sent[0] = have + total
                c2.send_request("proc.ack", {"id": p["id"], "stdout": sent[0]})

        rest = read_to_eof(c2, [out, err], offsets={out: have, err: 0}, timeout=180, on_bytes=ack)[out]
        got.update(rest)
        expect_eq(have + len(rest), size, "bytes read back")
        expect_eq(got.hexdigest(), want.hexdigest(), "sha256 of the output")
        w = c2.call("proc.wait", {"id": p["id"]}, timeout=30)
        expect_eq(w["exit"], {"code": 0}, "cat's exit")


def ack_reader(ring, size=48 << 20):
    """Reads a command's output through a gateway that paces berthd after
    1 MiB of backlog and drops a client that takes nothing of it for 1 s,
    acknowledging every MiB and stalling for 3 s twice. Returns how many
    times the client was dropped; the output must be exact."""
    d = scratch()
    path = os.path.join(d, "big")
    blob = os.urandom(size)
    with open(path, "wb") as f:
        f.write(blob)
    with Sandbox(extra="[gateway]\nclient_queue = 1M\nclient_stall_ms = 1000\n") as sb:
        c = sb.ws()
        p = c.call("proc.start", {"argv": ["cat", path], "ring": ring, "attach": True, "ack": True})
        out, err = streams(p["id"])
        have = bytearray()
        drops = 0
        stalls = 0
        acked = 0
        while True:
            try:
                m = c.recv(30)
                if m.get("type") != "data" or m["stream"] != out:
                    continue
                if m.get("eof"):
                    break
                expect_eq(m["offset"], len(have), "the offset of the next chunk")
                have += m["data"]
                if len(have) - acked >= 1 << 20:
                    acked = len(have)
                    c.send_request("proc.ack", {"id": p["id"], "stdout": acked})
                # Stall now and then, long enough for the gateway to give up.
                mark = (stalls + 1) * (16 << 20)
                if stalls < 2 and mark <= len(have):
                    stalls += 1
                    time.sleep(3)
            except Closed as e:
                # 4008, or no close frame at all if it could not get through.
                expect(e.code in (4008, None), "the close code of a slow client: %s" % e.code)
                drops += 1
                c = sb.ws()
                a = c.call("proc.attach", {"id": p["id"], "from_offset": {"stdout": len(have), "stderr": 0},
                                           "ack": True})
                expect_eq((a["stdout"]["offset"], a["stdout"]["lost"]), (len(have), 0), "resumed exactly")
                acked = len(have)
        note("ring %d MiB: dropped %d times as slow; %d bytes read back" % (ring >> 20, drops, len(have)))
        expect(bytes(have) == blob, "the output, across the stalls, is the file")
        return drops


@case("with acknowledgements berthd sends a stalled client no more than half a ring: it is never dropped", timeout=240)
def t_ack_paces():
    expect_eq(ack_reader(2 << 20), 0, "times the stalled client was dropped")


@case("with acknowledgements nothing is lost when the gateway drops a slow client", timeout=240)
def t_ack_across_drops():
    expect(ack_reader(32 << 20) >= 1, "the gateway never dropped the stalled client")


@case("proc.ack: only offsets that were sent, only with ack")
def t_ack_errors():
    with Sandbox() as sb:
        c = sb.ws()
        p = c.call("proc.start", {"shell": "printf 12345", "attach": True})
        read_to_eof(c, streams(p["id"]))
        expect_eq(c.error_of("proc.ack", {"id": p["id"], "stdout": 3}), "conflict", "ack without attaching with ack")
        c.call("proc.attach", {"id": p["id"], "ack": True})
        read_to_eof(c, streams(p["id"]))
        c.call("proc.ack", {"id": p["id"], "stdout": 5, "stderr": 0})
        expect_eq(c.error_of("proc.ack", {"id": p["id"], "stdout": 6}), "bad_args", "ack past what was sent")
        expect_eq(c.error_of("proc.ack", {"id": p["id"], "stdout": "5"}), "bad_args", "ack of the wrong type")
        expect_eq(c.error_of("proc.ack", {"id": "00000000", "stdout": 1}), "not_found", "ack of an unknown process")


@case("proc.input with offsets: input sent again is taken once; stdin_bytes says where to go on")
def t_input_offsets():
    with Sandbox() as sb:
        c = sb.ws()
        p = c.call("proc.start", {"argv": ["cat"], "stdin": "pipe", "attach": True})
        expect_eq(c.call("proc.input", {"id": p["id"], "data": b"hello ", "offset": 0}), {"stdin_bytes": 6}, "first")
        expect_eq(c.call("proc.input", {"id": p["id"], "data": b"hello ", "offset": 0}), {"stdin_bytes": 6}, "again")
        expect_eq(c.call("proc.input", {"id": p["id"], "data": b"o world", "offset": 4}), {"stdin_bytes": 11},
                  "overlapping")
        expect_eq(c.error_of("proc.input", {"id": p["id"], "data": b"!", "offset": 12}), "conflict", "a gap")
        expect_eq(c.error_of("proc.input", {"id": p["id"], "data": b"!", "offset": -1}), "bad_args", "a bad offset")
        expect_eq(c.call("proc.list")["procs"][0]["stdin_bytes"], 11, "stdin_bytes in proc.list")
        c.call("proc.input", {"id": p["id"], "data": b"!"})
        c.call("proc.close_stdin", {"id": p["id"]})
        got = read_to_eof(c, streams(p["id"]))
        expect_eq(got[streams(p["id"])[0]], b"hello world!", "what cat read")


@case("without a reader the ring keeps the newest bytes and says exactly how many are lost")
def t_explicit_loss():
    with Sandbox() as sb:
        c = sb.ws()
        ring = 64 << 10
        p = c.call("proc.start", {"shell": "head -c 1048576 /dev/zero | tr '\\0' x; printf END", "ring": ring})
        w = c.call("proc.wait", {"id": p["id"]}, timeout=20)
        total = (1 << 20) + 3
        expect_eq(w["stdout_bytes"], total, "bytes written")
        a = c.call("proc.attach", {"id": p["id"], "from_offset": 0})
        expect_eq((a["state"], a["stdout"]["lost"], a["stdout"]["offset"], a["stdout"]["end"]),
                  ("exited", total - ring, total - ring, total), "attach reports the loss")
        got = read_to_eof(c, streams(p["id"]), offsets={streams(p["id"])[0]: total - ring, streams(p["id"])[1]: 0})
        data = got[streams(p["id"])[0]]
        expect_eq((len(data), data[-3:]), (ring, b"END"), "the newest bytes are kept")


@case("output stays readable after the exit, by anyone, from any offset")
def t_after_exit():
    with Sandbox() as sb:
        c = sb.ws()
        p = c.call("proc.start", {"shell": "seq 1 1000; seq 1 10 >&2"})
        c.call("proc.wait", {"id": p["id"]})
        c.close()
        c2 = sb.ws()
        c2.call("proc.attach", {"id": p["id"], "from_offset": {"stdout": 4, "stderr": 2}})
        got = read_to_eof(c2, streams(p["id"]), offsets={streams(p["id"])[0]: 4, streams(p["id"])[1]: 2})
        want = "".join("%d\n" % i for i in range(1, 1001)).encode()
        expect_eq(got[streams(p["id"])[0]], want[4:], "stdout from offset 4")
        expect_eq(got[streams(p["id"])[1]], "".join("%d\n" % i for i in range(1, 11)).encode()[2:], "stderr from 2")


@case("a timeout kills the whole process group, grandchildren too, and says so")
def t_timeout():
    with Sandbox() as sb:
        c = sb.ws()
        c.subscribe()
        t0 = time.monotonic()
        p = c.call("proc.start", {"shell": "sleep 1000 & echo $!; sleep 1000 & echo $!; wait", "timeout_ms": 1500})
        out, err = streams(p["id"])
        c.call("proc.attach", {"id": p["id"]})
        text = b""
        while text.count(b"\n") < 2:
            m = c.recv(10)
            if m.get("type") == "data" and m["stream"] == out:
                text += m["data"]
        grandchildren = [sb.host_pid(int(x)) for x in text.split()]
        w = c.call("proc.wait", {"id": p["id"]}, timeout=10)
        took = time.monotonic() - t0
        expect_eq((w["timed_out"], w["exit"]), (True, {"signal": 9, "core": False}), "the wait result")
        for g in grandchildren:
            wait_for(lambda: not pid_alive(g), 5, "grandchild %d gone" % g)
        ev = c.events_until(lambda e: e["kind"] == "proc.exited")[-1]
        expect_eq((ev["data"]["timed_out"], ev["data"]["signal"]), (True, 9), "proc.exited says it timed out")
        note("killed after %.2f s" % took)
        expect(took < 5, "the timeout took %.1f s" % took)


@case("a client disconnect never kills a process; its output waits for the next reader")
def t_disconnect():
    with Sandbox() as sb:
        c = sb.ws()
        p = c.call("proc.start", {"shell": "sleep 1; echo done", "stdin": "pipe"})
        c.call("proc.attach", {"id": p["id"]})
        c.abort()
        c2 = sb.ws()
        w = c2.call("proc.wait", {"id": p["id"]}, timeout=10)
        expect_eq(w["exit"], {"code": 0}, "the exit after the disconnect")
        c2.call("proc.attach", {"id": p["id"]})
        got = read_to_eof(c2, streams(p["id"]))
        expect_eq(got[streams(p["id"])[0]], b"done\n", "its output")


@case("a command that dies while its reader is away ends at once; what it wrote still waits for the reader")
def t_dies_reader_away():
    with Sandbox() as sb:
        c = sb.ws()
        p = c.call("proc.start", {"argv": ["yes"], "attach": True, "ack": True})
        c2 = sb.unix()

        def stdout_bytes():
            return {q["id"]: q for q in c2.call("proc.list")["procs"]}[p["id"]]["stdout_bytes"]

        # Nothing read, nothing acknowledged: pacing stops reading yes half
        # a ring on, and the reader's place is 0.
        seen = []

        def stalled():
            seen.append(stdout_bytes())
            return len(seen) > 5 and seen[-1] == seen[-6]

        wait_for(stalled, 20, "berthd stops reading yes", interval=0.1)
        c.abort()
        c2.call("proc.signal", {"id": p["id"], "signal": "KILL"})
        t0 = time.monotonic()
        w = c2.call("proc.wait", {"id": p["id"], "timeout_ms": 20000}, timeout=30)
        took = time.monotonic() - t0
        note("yes had written %d bytes when paced; its end came %.2f s after the kill" % (seen[-1], took))
        expect_eq(w.get("exit"), {"signal": 9, "core": False}, "yes's end, told before the wait's timeout")
        a = c2.call("proc.attach", {"id": p["id"], "from_offset": {"stdout": 0, "stderr": 0}})
        expect_eq((a["stdout"]["offset"], a["stdout"]["lost"]), (0, 0), "the place held: nothing lost")
        out = read_to_eof(c2, streams(p["id"]), timeout=60)[streams(p["id"])[0]]
        expect_eq(len(out), stdout_bytes(), "every byte yes wrote, read back")
        expect(len(out) >= seen[-1] and out == b"y\n" * (len(out) // 2), "the bytes are yes's")


@case("stdin as a pipe: input in order, close_stdin gives EOF; input after it is a conflict")
def t_stdin_pipe():
    with Sandbox() as sb:
        c = sb.ws()
        p = c.call("proc.start", {"argv": ["sha256sum"], "stdin": "pipe"})
        blob = os.urandom(3 << 20)
        for i in range(0, len(blob), 60000):
            while True:
                r = c.request("proc.input", {"id": p["id"], "data": blob[i:i + 60000]})
                if r["ok"]:
                    break
                expect_eq(r["error"]["code"], "unavailable", "a full stdin backlog")
                time.sleep(0.01)
        c.call("proc.close_stdin", {"id": p["id"]})
        expect_eq(c.error_of("proc.input", {"id": p["id"], "data": b"x"}), "conflict", "input after close_stdin")
        c.call("proc.attach", {"id": p["id"]})
        got = read_to_eof(c, streams(p["id"]))
        expect_eq(got[streams(p["id"])[0]].split()[0].decode(), hashlib.sha256(blob).hexdigest(), "what the program read")
        q = c.call("proc.start", {"argv": ["true"]})
        expect_eq(c.error_of("proc.input", {"id": q["id"], "data": b"x"}), "conflict", "input with stdin closed")


@case("proc.signal reaches the process group; proc.wait with a timeout; proc.list")
def t_signal_wait_list():
    with Sandbox() as sb:
        c = sb.ws()
        p = c.call("proc.start", {"shell": "trap 'echo got TERM; exit 5' TERM; sleep 100 & wait", "tag": "t1"})
        w = c.call("proc.wait", {"id": p["id"], "timeout_ms": 300})
        expect_eq((w["state"], w["exit"]), ("running", None), "a wait that timed out")
        procs = {q["id"]: q for q in c.call("proc.list")["procs"]}
        expect_eq((procs[p["id"]]["state"], procs[p["id"]]["tag"]), ("running", "t1"), "proc.list")
        wid = c.send_request("proc.wait", {"id": p["id"]})
        # Answers to later requests may come first: the wait is pending.
        c.call("ping")
        c.call("proc.signal", {"id": p["id"], "signal": "TERM"})
        w = c.response(wid, 10)["result"]
        expect_eq(w["exit"], {"code": 5}, "the shell's trap ran")
        c.call("proc.attach", {"id": p["id"]})
        got = read_to_eof(c, streams(p["id"]))
        expect_eq(got[streams(p["id"])[0]], b"got TERM\n", "output of the trap")
        expect_eq(c.error_of("proc.signal", {"id": p["id"], "signal": "TERM"}), "conflict", "signal after the exit")


@case("a wait pending on a connection that goes away is dropped; berthd carries on")
def t_wait_conn_gone():
    with Sandbox() as sb:
        c = sb.ws()
        p = c.call("proc.start", {"shell": "sleep 0.5"})
        c.send_request("proc.wait", {"id": p["id"]})
        c.abort()
        time.sleep(1.0)
        c2 = sb.ws()
        w = c2.call("proc.wait", {"id": p["id"]})
        expect_eq(w["exit"], {"code": 0}, "the exit")
        c2.call("ping")


@case("bad input to every proc op: clear errors, nothing started, berthd unharmed")
def t_bad_input():
    with Sandbox() as sb:
        c = sb.ws()
        bad = [
            ("proc.start", {}, "bad_args"),
            ("proc.start", {"argv": []}, "bad_args"),
            ("proc.start", {"argv": "ls"}, "bad_args"),
            ("proc.start", {"argv": ["ls", 1]}, "bad_args"),
            ("proc.start", {"argv": ["l\0s"]}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "shell": "ls"}, "bad_args"),
            ("proc.start", {"shell": 5}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "stdin": "open"}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "timeout_ms": -1}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "timeout_ms": 1 << 62}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "ring": 1 << 40}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "ring": 10}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "tag": "x" * 65}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "env": {"A=B": "c"}}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "env": ["A"]}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "user": "no-such-user"}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "cwd": "/no/such/dir"}, "bad_args"),
            ("proc.start", {"argv": ["/no/such/program"]}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "redact": "yes"}, "bad_args"),
            ("proc.start", {"argv": ["ls"], "attach": 1}, "bad_args"),
            ("proc.attach", {}, "bad_args"),
            ("proc.attach", {"id": 5}, "bad_args"),
            ("proc.attach", {"id": "00000000"}, "not_found"),
            ("proc.input", {"id": "00000000", "data": b"x"}, "not_found"),
            ("proc.input", {"id": "00000000", "data": "text"}, "bad_args"),
            ("proc.input", {"id": "00000000", "data": b"x" * (64 * 1024 + 1)}, "bad_args"),
            ("proc.close_stdin", {"id": "00000000"}, "not_found"),
            ("proc.signal", {"id": "00000000", "signal": "TERM"}, "not_found"),
            ("proc.wait", {"id": "00000000"}, "not_found"),
            ("proc.detach", {"id": "nope"}, "not_found"),
        ]
        for op, args, code in bad:
            expect_eq(c.error_of(op, args), code, "%s %r" % (op, {k: (v if len(repr(v)) < 40 else "...") for k, v in args.items()}))
        p = c.call("proc.start", {"argv": ["sleep", "5"]})
        for op, args, code in [
            ("proc.signal", {"id": p["id"], "signal": "NOPE"}, "bad_args"),
            ("proc.signal", {"id": p["id"], "signal": 4096}, "bad_args"),
            ("proc.signal", {"id": p["id"]}, "bad_args"),
            ("proc.attach", {"id": p["id"], "from_offset": 10}, "bad_args"),
            ("proc.attach", {"id": p["id"], "from_offset": "0"}, "bad_args"),
            ("proc.attach", {"id": p["id"], "from_offset": {"stdout": -1}}, "bad_args"),
            ("proc.wait", {"id": p["id"], "timeout_ms": "1"}, "bad_args"),
        ]:
            expect_eq(c.error_of(op, args), code, "%s %r" % (op, args))
        procs = c.call("proc.list")["procs"]
        expect_eq([q["id"] for q in procs], [p["id"]], "only the one good process exists")
        c.call("proc.signal", {"id": p["id"], "signal": "KILL"})
        w = c.call("proc.wait", {"id": p["id"]})
        expect_eq(w["exit"], {"signal": 9, "core": False}, "killed")


if __name__ == "__main__":
    run()
