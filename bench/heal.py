"""heal: how fast a killed service is back, and a burst of clients.

  heal.py SRC BUILD DIR KILLS CLIENTS RUNS

Restarts: a service that is a `sleep 1000` is SIGKILLed KILLS times in
a row, each time as soon as it is back; the time from each kill until
its next sleep runs. Under berthd with the default backoff (and
max_deaths high enough not to fail), under s6-supervise and under runsv.
Then berthd's gateway is SIGKILLed KILLS times in a row; the time from
each kill until /healthz answers 200 again.

Burst: CLIENTS WebSocket clients (from ten loopback addresses) open at
once, each does one round trip: through berth-gateway, `hello` answered
by berthd; through websockify, a message echoed by a TCP echo server
behind it. The time until the last
is done and how many failed, median of RUNS runs each, alternating."""

import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

import msgpack
import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

src, build, d = sys.argv[1], sys.argv[2], sys.argv[3]
KILLS, CLIENTS, RUNS = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])

def sleeper_of(sup):
    """back() and kill() for a supervisor (host pid sup) whose service is
    a `sleep 1000` of its own children: the sleep's pid while it runs."""

    def back():
        for p in benchlib.children(sup):
            if benchlib.cmdline(p) == b"sleep\x001000\x00":
                return p
        return 0

    return back, lambda p: os.kill(p, signal.SIGKILL)


def kill_loop(kill, back, what):
    """KILLS times: waits for the service to be up (back() gives a
    token of the current instance, falsy while down), kills it, and
    times until back() gives another. Seconds, one per kill."""
    times = []
    benchlib.wait_until(back, 30, what + " up")
    for _ in range(KILLS):
        cur = back()
        t0 = time.monotonic()
        kill(cur)
        while True:
            now = back()
            if now and now != cur:
                break
            if time.monotonic() - t0 > 60:
                sys.exit("bench: %s not back within 60 s" % what)
            time.sleep(0.001)
        times.append(time.monotonic() - t0)
    return times


def restarts_berthd(run):
    svc = "\n[service victim]\ncommand = sleep 1000\nrequired = no\nmax_deaths = 1000\n"
    b = benchlib.Berth(src, build, d, run, services=svc, connect=False)
    try:
        return kill_loop(*reversed(sleeper_of(b.pid)), "berthd's service")
    finally:
        b.stop()


def restarts_peer(name, argv_of):
    sdir = os.path.join(d, name)
    os.makedirs(sdir, exist_ok=True)
    with open(os.path.join(sdir, "run"), "w") as f:
        f.write("#!/bin/sh\nexec sleep 1000\n")
    os.chmod(os.path.join(sdir, "run"), 0o755)
    p = subprocess.Popen(argv_of(sdir), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        return kill_loop(*reversed(sleeper_of(p.pid)), name)
    finally:
        for c in benchlib.children(p.pid):
            os.kill(c, signal.SIGKILL)
        p.kill()
        p.wait(10)


def healthz_ok(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def restarts_gateway(run):
    b = benchlib.Berth(src, build, d, run, connect=False)
    try:
        state = {"killed": 0}

        def back():
            # A token per instance: the gateway's pid once it answers.
            pids = [p for p in benchlib.children(b.pid)
                    if os.path.basename(benchlib.cmdline(p).split(b"\0")[0]) == b"berth-gateway"]
            pid = pids[0] if pids else 0
            if not pid or pid == state["killed"] or not healthz_ok(b.port):
                return 0
            return pid

        def kill(pid):
            state["killed"] = pid
            os.kill(pid, signal.SIGKILL)

        return kill_loop(kill, back, "the gateway")
    finally:
        b.stop()


def hello_bytes():
    return msgpack.packb({"type": "request", "id": 1, "op": "hello",
                          "args": {"version": "berth.v1", "client": "bench"}}, use_bin_type=True)


async def one_client(k, url, headers, subprotocols, payload, check):
    # From ten loopback addresses, as clients of several hosts would come.
    try:
        async with websockets.connect(url, extra_headers=headers, subprotocols=subprotocols,
                                      compression=None, ping_interval=None, open_timeout=60,
                                      close_timeout=2, max_size=None,
                                      local_addr=("127.0.0.%d" % (2 + k % 10), 0)) as ws:
            await ws.send(payload)
            return check(await asyncio.wait_for(ws.recv(), 60))
    except Exception:
        return False


async def burst(url, headers, subprotocols, payload, check):
    t0 = time.monotonic()
    oks = await asyncio.gather(*(one_client(k, url, headers, subprotocols, payload, check)
                                 for k in range(CLIENTS)))
    return time.monotonic() - t0, CLIENTS - sum(oks)


def hello_ok(m):
    r = msgpack.unpackb(m, raw=False)
    return r.get("type") == "response" and r.get("ok") is True


ECHO = r"""
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4096)
def serve(c):
    while True:
        b = c.recv(65536)
        if not b:
            break
        c.sendall(b)
    c.close()
print("up", flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def bursts():
    b = benchlib.Berth(src, build, d, 900, connect=False)
    echo_port, ws_port = benchlib.free_port(), benchlib.free_port()
    echo = subprocess.Popen(["/usr/bin/python3", "-c", ECHO, str(echo_port)], stdout=subprocess.PIPE, text=True)
    echo.stdout.readline()
    wsfy = subprocess.Popen(["websockify", "127.0.0.1:%d" % ws_port, "127.0.0.1:%d" % echo_port],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        benchlib.wait_until(lambda: healthz_ok(b.port), 30, "the gateway")
        benchlib.wait_until(lambda: socket.socket().connect_ex(("127.0.0.1", ws_port)) == 0, 30, "websockify")
        with open(b.token) as f:
            token = f.read().strip()
        berth_args = ("ws://127.0.0.1:%d/v1" % b.port, {"Authorization": "Bearer " + token},
                      ["berth.v1"], hello_bytes(), hello_ok)
        echo_payload = os.urandom(64)
        wsfy_args = ("ws://127.0.0.1:%d/" % ws_port, {}, ["binary"], echo_payload,
                     lambda m: m == echo_payload)
        res = {"berth": [], "websockify": []}
        for _ in range(RUNS):
            res["berth"].append(asyncio.run(burst(*berth_args)))
            res["websockify"].append(asyncio.run(burst(*wsfy_args)))
        return res
    finally:
        wsfy.terminate()
        echo.terminate()
        wsfy.wait(10)
        echo.wait(10)
        b.stop()


def ms(xs):
    return "median %7.1f ms  max %7.1f ms  all %8.1f ms" % (
        statistics.median(xs) * 1000, max(xs) * 1000, sum(xs) * 1000)


def main():
    print("restarts: %d SIGKILLs in a row, each as soon as the service is back" % KILLS)
    rows = [
        ("berthd (default policy)", restarts_berthd(1)),
        ("s6-supervise", restarts_peer("s6", lambda s: ["s6-supervise", s])),
        ("runsv", restarts_peer("runsv", lambda s: ["runsv", s])),
    ]
    for name, xs in rows:
        print("  %-34s %s" % (name, ms(xs)))
    gw = restarts_gateway(2)
    print("  %-34s %s" % ("berthd's gateway (to /healthz 200)", ms(gw)))
    base = sum(rows[0][1])
    for name, xs in rows[1:]:
        print("  ratio berthd/%s, all %d restarts: %.2fx" % (name, KILLS, base / sum(xs)))
    print("  ratio gateway to /healthz/s6-supervise, all %d: %.2fx" % (KILLS, sum(gw) / sum(rows[1][1])))

    res = bursts()
    print("burst: %d WebSocket clients at once, one round trip each, %d runs each" % (CLIENTS, RUNS))
    med = {}
    for name in ("berth", "websockify"):
        t = [x[0] for x in res[name]]
        fails = [x[1] for x in res[name]]
        med[name] = statistics.median(t)
        label = "berth-gateway (hello to berthd)" if name == "berth" else "websockify (to a TCP echo)"
        print("  %-34s median %7.1f ms  failed %s" % (label, med[name] * 1000, "/".join(map(str, fails))))
    print("  ratio berth/websockify: %.2fx" % (med["berth"] / med["websockify"]))


main()
