"""berth exec against a real sandbox, on both transports: stdout and stderr
apart and exact (binary, and 20 MiB by hash), the exit status passed
through (codes, signals, --timeout's 124, berth's own 125), --cwd, --env
and --user, stdin closed unless --stdin and passed whole with it, SIGINT
forwarded to the command, SIGPIPE when nobody reads berth's output any
more, and output that survives a killed gateway."""

import hashlib
import os
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    CLI,
    TRANSPORTS,
    Sandbox,
    Timeout,
    berth,
    case,
    conn_args,
    expect,
    expect_eq,
    expect_in,
    note,
    run,
    running,
    scratch,
    wait_for,
)


def berth_exec(sb, transport, *args, **kw):
    """berth exec ARGS: berth()'s (status, stdout bytes, stderr str)."""
    return berth(sb, transport, "exec", *args, **kw)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def sha_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_all(p, on_out=None, timeout=60):
    """Reads a Popen's stdout and stderr to their ends: (stdout, stderr).
    on_out(total) is called after each chunk of stdout."""
    out, err = bytearray(), bytearray()
    open_fds = {p.stdout.fileno(): out, p.stderr.fileno(): err}
    deadline = time.monotonic() + timeout
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("no end of berth's output within %d s (%d bytes, stderr %r)" % (timeout, len(out), bytes(err[-300:])))
        ready, _, _ = select.select(list(open_fds), [], [], left)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                del open_fds[fd]
                continue
            open_fds[fd] += chunk
            if fd == p.stdout.fileno() and on_out is not None:
                on_out(len(out))
    return bytes(out), bytes(err)


@case("exec: stdout and stderr come apart, byte for byte, binary included, on both transports", transports=TRANSPORTS)
def exec_streams_apart(transport):
    prog = (
        "printf 'out\\000one\\377\\n'; printf 'err\\000one\\001\\n' >&2; "
        "printf 'out-two'; printf 'err-two' >&2"
    )
    with Sandbox() as sb:
        rc, out, err = berth_exec(sb, transport, "--", "sh", "-c", prog)
        expect_eq(rc, 0, "exit status")
        expect_eq(out, b"out\0one\xff\nout-two", "stdout")
        expect_eq(err, "err\0one\x01\nerr-two", "stderr")


@case("exec: 20 MiB of random output arrives whole and in order (by hash), on both transports", timeout=240,
      transports=TRANSPORTS)
def exec_large_output(transport):
    path = os.path.join(scratch(), "out")
    size = 20 << 20
    with Sandbox() as sb:
        rc, out, err = berth_exec(
            sb, transport, "--", "sh", "-c",
            "head -c %d /dev/urandom | tee %s; echo done >&2" % (size, path), timeout=180,
        )
        expect_eq(rc, 0, "exit status")
        expect_eq(err, "done\n", "stderr")
        expect_eq(len(out), size, "bytes of stdout")
        expect_eq(sha(out), sha_file(path), "the hash of stdout against the file tee wrote")


@case("exec: the exit status passes through: 0, 3, 255, and 128 + N for signal N")
def exec_exit_status():
    with Sandbox() as sb:
        for code in (0, 3, 255):
            rc, _, err = berth_exec(sb, "unix", "--", "sh", "-c", "exit %d" % code)
            expect_eq(rc, code, "exit %d" % code)
            expect_eq(err, "", "stderr after exit %d" % code)
        rc, _, _ = berth_exec(sb, "ws", "--", "sh", "-c", "exit 3")
        expect_eq(rc, 3, "exit 3 over the WebSocket")
        rc, _, _ = berth_exec(sb, "unix", "--", "sh", "-c", "kill -TERM $$")
        expect_eq(rc, 128 + signal.SIGTERM, "killed by SIGTERM")
        rc, _, _ = berth_exec(sb, "ws", "--", "sh", "-c", "kill -KILL $$")
        expect_eq(rc, 128 + signal.SIGKILL, "killed by SIGKILL")


@case("exec: --cwd, --env (the last of a name wins) and --user reach the command")
def exec_cwd_env_user():
    d = scratch()
    with Sandbox() as sb:
        rc, out, _ = berth_exec(
            sb, "unix", "--cwd", d, "--env", "ONE=1", "--env", "TWO=a b=c", "--env", "ONE=uno",
            "--", "sh", "-c", 'pwd; printf "%s|%s\\n" "$ONE" "$TWO"',
        )
        expect_eq(rc, 0, "exit status")
        expect_eq(out.decode(), "%s\nuno|a b=c\n" % d, "the directory and the variables")
        rc, out, _ = berth_exec(sb, "ws", "--user", "nobody", "--", "id", "-un")
        expect_eq(rc, 0, "--user: exit status")
        expect_eq(out, b"nobody\n", "--user: who runs it")


@case("exec: --limit bounds the command (open_files is its RLIMIT_NOFILE, memory_bytes its cgroup's limit, "
      "with K, M, G); a name or value berthd refuses is berth's failure, 125, saying why")
def exec_limit():
    with Sandbox() as sb:
        rc, out, _ = berth_exec(sb, "unix", "--limit", "open_files=20", "--limit", "memory_bytes=64M", "--",
                                "sh", "-c", "ulimit -n; p=$(grep :memory: /proc/self/cgroup | cut -d: -f3); "
                                "echo $p; cat /sys/fs/cgroup/memory$p/memory.limit_in_bytes")
        expect_eq(rc, 0, "exit status")
        lines = out.decode().splitlines()
        expect_eq(lines[0], "20", "the command's open files")
        expect_in("/berth/", lines[1], "the command's memory cgroup")
        expect_eq(lines[2], str(64 << 20), "its group's memory limit")
        for args, why in ((["--limit", "memry_bytes=1M"], "unknown limit \"memry_bytes\""),
                          (["--limit", "open_files=3"], "limits.open_files must be an integer from 16"),
                          (["--limit", "open_files"], "--limit wants NAME=NUMBER"),
                          (["--limit", "open_files=2X"], "--limit wants NAME=NUMBER")):
            rc, out, err = berth_exec(sb, "unix", *args, "--", "true")
            expect_eq(rc, 125, "%s: exit status" % args)
            expect_in(why, err, "%s: the message" % args)


@case("exec: --timeout kills the command, and berth says so and exits 124")
def exec_timeout():
    with Sandbox() as sb:
        started = time.monotonic()
        rc, out, err = berth_exec(sb, "unix", "--timeout", "1", "--", "sh", "-c", "echo begun; sleep 60")
        expect_eq(rc, 124, "exit status")
        expect_eq(out, b"begun\n", "the output before the kill")
        expect_eq(err, "berth: timed out after 1 s\n", "stderr")
        expect(time.monotonic() - started < 30, "berth took %.1f s" % (time.monotonic() - started))
        # Before the command, --timeout is the global one (answers): it
        # does not limit the command.
        rc, out, err = berth_exec(sb, "unix", "--", "sh", "-c", "sleep 1.5; echo slept")
        expect_eq((rc, out), (0, b"slept\n"), "a command with no limit")
        argv = [CLI, "--socket", sb.socket, "--timeout", "1", "exec", "--", "sh", "-c", "sleep 1.5; echo slept"]
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        expect_eq((p.returncode, p.stdout), (0, b"slept\n"), "the global --timeout before exec")


@case("exec: stdin is closed unless --stdin: cat ends at once though our stdin stays open", transports=TRANSPORTS)
def exec_stdin_closed(transport):
    with Sandbox() as sb:
        argv = [CLI] + conn_args(sb, transport) + ["exec", "--", "cat"]
        with running(argv, stdin=subprocess.PIPE) as p:
            p.stdin.write(b"never read\n")
            p.stdin.flush()
            out, err = read_all(p, timeout=15)
            rc = p.wait(10)
        note("stderr %r" % err)
        expect_eq(rc, 0, "cat's exit status")
        expect_eq(out, b"", "cat's output")


@case("exec --stdin: 5 MiB piped in arrive whole (by hash), and EOF ends the command", timeout=180,
      transports=TRANSPORTS)
def exec_stdin_pipe(transport):
    data = os.urandom(5 << 20)
    with Sandbox() as sb:
        rc, out, err = berth_exec(sb, transport, "--stdin", "--", "sha256sum", input=data, timeout=120)
        expect_eq(rc, 0, "exit status")
        expect_eq(out.split()[0].decode(), sha(data), "the hash sha256sum read")
        # A command that reads slowly: berthd refuses input past its
        # backlog for a while, and the bytes go again, in order.
        rc, out, _ = berth_exec(sb, transport, "--stdin", "--", "sh", "-c", "sleep 1; sha256sum", input=data,
                                timeout=120)
        expect_eq(rc, 0, "slow reader: exit status")
        expect_eq(out.split()[0].decode(), sha(data), "slow reader: the hash")
        # A command that stops reading early: berth does not hang.
        rc, out, _ = berth_exec(sb, transport, "--stdin", "--", "head", "-c", "10", input=data, timeout=60)
        expect_eq((rc, out), (0, data[:10]), "head -c 10: status and output")


@case("exec: SIGINT to berth goes to the command's process group; berth waits for its end", transports=TRANSPORTS)
def exec_sigint(transport):
    prog = 'trap "echo got-INT; exit 7" INT; echo ready; while :; do sleep 0.1; done'
    with Sandbox() as sb:
        argv = [CLI] + conn_args(sb, transport) + ["exec", "--", "sh", "-c", prog]
        with running(argv) as p:
            seen = []

            def on_out(total):
                if not seen and total >= len(b"ready\n"):
                    seen.append(True)
                    p.send_signal(signal.SIGINT)

            out, err = read_all(p, on_out, timeout=20)
            rc = p.wait(10)
        note("stderr %r" % err)
        expect_eq(out, b"ready\ngot-INT\n", "the output")
        expect_eq(rc, 7, "the exit status the trap chose")


@case("exec: a closed stdout gives the command SIGPIPE and berth 141, as in a local pipeline")
def exec_broken_pipe():
    with Sandbox() as sb:
        c = sb.unix()

        def piped():
            (proc,) = [x for x in c.call("proc.list")["procs"] if x["tag"] == "piped"]
            return proc

        argv = [CLI] + conn_args(sb, "unix") + ["exec", "--tag", "piped", "--", "yes"]
        with running(argv) as p:
            expect_eq(p.stdout.read(4), b"y\ny\n", "the first output")
            # Unread, the pipe fills; berth stops reading berthd, whose
            # pacing then stops reading yes: berth goes with its reader's
            # place far behind. It must not hold yes's end back.
            seen = []

            def stalled():
                seen.append(piped()["stdout_bytes"])
                return len(seen) > 5 and seen[-1] == seen[-6]

            wait_for(stalled, 20, "berthd stops reading yes", interval=0.1)
            p.stdout.close()
            rc = p.wait(20)
            err = p.stderr.read()
        note("stderr %r; yes had written %d bytes" % (err, seen[-1]))
        expect_eq(rc, 128 + signal.SIGPIPE, "berth's exit status")
        expect_eq(err, b"", "berth's stderr")

        def ended():
            proc = piped()
            return proc if proc["state"] == "exited" else None

        proc = wait_for(ended, 10, "yes ended in the sandbox")
        expect_eq(proc["exit"], {"signal": signal.SIGPIPE, "core": False}, "how yes ended")


@case("exec over the WebSocket rides out a killed gateway: the output complete and exact", timeout=180)
def exec_gateway_killed():
    d = scratch()
    path = os.path.join(d, "out")
    # About 6 MiB over 3 s or more, stderr lines between.
    prog = (
        "i=0; while [ $i -lt 200 ]; do head -c 32768 /dev/urandom; echo line-$i >&2; "
        "sleep 0.015; i=$((i+1)); done | tee %s" % path
    )
    with Sandbox() as sb:
        argv = [CLI] + conn_args(sb, "ws") + ["exec", "--", "sh", "-c", prog]
        killed = []
        with running(argv) as p:

            def on_out(total):
                if not killed and total >= 1 << 20:
                    old = sb.gateway_pid()
                    os.kill(old, signal.SIGKILL)
                    killed.append(total)
                    killed.append(old)

            out, err = read_all(p, on_out, timeout=120)
            rc = p.wait(10)
        lines = err.decode(errors="replace").splitlines()
        own = [line for line in lines if line.startswith("berth: ")]
        note("berth's own lines: %r" % own)
        expect(killed, "the gateway was never killed")
        expect_eq(rc, 0, "exit status")
        # berth's connection went through the gateway that was killed.
        expect(sb.gateway_pid(timeout=10, other_than=killed[1]) != killed[1], "no new gateway")
        expect(killed[0] < len(out), "the kill came after the output (at %d of %d bytes)" % (killed[0], len(out)))
        expect_eq(len(out), 200 * 32768, "bytes of stdout")
        expect_eq(sha(out), sha_file(path), "the hash of stdout against the file tee wrote")
        expect_eq([line for line in lines if not line.startswith("berth: ")],
                  ["line-%d" % i for i in range(200)], "the command's stderr, every line once and in order")


@case("exec with a slow reader, through a gateway that drops slow clients: nothing lost", timeout=240)
def exec_slow_reader():
    d = scratch()
    path = os.path.join(d, "blob")
    size = 64 << 20
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            f.write(os.urandom(1 << 20))
    # berth's stdout is a pipe read in bursts with pauses: berth stops
    # reading the WebSocket, and the gateway (client_queue 1 MiB) may drop it.
    with Sandbox(extra="[gateway]\nclient_queue = 1M\n") as sb:
        argv = [CLI] + conn_args(sb, "ws") + ["exec", "--", "cat", path]
        with running(argv) as p:
            paused = []

            def on_out(total):
                if len(paused) < 4 and total >= (len(paused) + 1) * (8 << 20):
                    paused.append(total)
                    time.sleep(2)

            out, err = read_all(p, on_out, timeout=200)
            rc = p.wait(10)
        note("paused at %r; berth said %r" % (paused, err[-300:]))
        expect_eq(rc, 0, "exit status")
        expect_eq(len(out), size, "bytes of stdout")
        expect_eq(sha(out), sha_file(path), "the hash of stdout against the file")
        expect(b"lost" not in err, "berth reports a loss: %r" % err[-300:])


@case("exec --stdin over the WebSocket rides out a killed gateway: stdin arrives exactly once", timeout=180)
def exec_stdin_gateway_killed():
    blob = os.urandom(6 << 20)
    with Sandbox() as sb:
        argv = [CLI] + conn_args(sb, "ws") + ["exec", "--stdin", "--", "sha256sum"]
        with running(argv, stdin=subprocess.PIPE) as p:
            killed = False
            for i in range(0, len(blob), 1 << 16):
                p.stdin.write(blob[i:i + (1 << 16)])
                p.stdin.flush()
                if not killed and i >= len(blob) // 2:
                    os.kill(sb.gateway_pid(), signal.SIGKILL)
                    killed = True
            out, err = p.communicate(timeout=120)
        note("berth said %r" % err[-300:])
        expect_eq(p.returncode, 0, "exit status")
        expect_eq(out.split()[0].decode(), sha(blob), "the hash of what the command read")


@case("exec: berth's own failures exit 125 and say why")
def exec_failures():
    with Sandbox() as sb:
        rc, _, err = berth_exec(sb, "unix")
        expect_eq(rc, 125, "no command")
        expect("wants a command" in err, "no command: %r" % err)
        rc, _, err = berth_exec(sb, "unix", "--env", "NOEQUALS", "--", "true")
        expect_eq(rc, 125, "a bad --env")
        expect("NOEQUALS" in err, "a bad --env: %r" % err)
        rc, _, err = berth_exec(sb, "unix", "--no-such-option", "--", "true")
        expect_eq(rc, 125, "an unknown option")
        rc, _, err = berth_exec(sb, "unix", "--", "/no/such/program")
        expect_eq(rc, 125, "a program that does not exist")
        expect("/no/such/program" in err, "the message names the program: %r" % err)
        rc, _, err = berth_exec(sb, "unix", "--user", "no-such-user-here", "--", "true")
        expect_eq(rc, 125, "an unknown user")
        p = subprocess.run([CLI, "--socket", os.path.join(sb.dir, "absent.sock"), "exec", "--", "true"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        expect_eq(p.returncode, 125, "no berthd to connect to")


run()
