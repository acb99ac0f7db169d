"""The supervision policy heals: an exit caused by a dependency going away
is not counted toward max_deaths and waits for the dependency; a service
that says max_deaths = unlimited is restarted however often it dies,
within its backoff cap; a service that really crash-loops still fails as
configured, and is tried again, afresh, after retry_failed_ms; the gateway
is restarted within its short cap however often it is killed."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    case,
    expect,
    expect_eq,
    http_get,
    note,
    run,
    wait_for,
)
from harness.sandbox import STATE_MARK  # noqa: E402

# The gateway's restart delay never exceeds this (supervisor/main.c).
GATEWAY_BACKOFF_MAX_MS = 250


def service(sb, name):
    return [s for s in sb.state()["services"] if s["name"] == name][0]


def of(events, kind, name):
    return [e for e in events if e["kind"] == kind and e["data"]["name"] == name]


def started_pid(sb, name, other_than=0):
    """Waits for name to run a process other than other_than; its pid."""
    return wait_for(
        lambda: (lambda s: s["state"] == "ready" and s["pid"] not in (0, other_than) and s["pid"])(service(sb, name)),
        10,
        "%s running again" % name,
    )


@case("a crash-looper fails as configured, is tried again after retry_failed_ms, afresh, and fails again")
def crash_loop_retried():
    extra = (
        '[service loop]\ncommand = /bin/sh -c "exit 1"\nrestart = on-failure\nmax_deaths = 3\n'
        "backoff_min_ms = 10\nbackoff_max_ms = 20\nretry_failed_ms = 2000\nrequired = no\n"
    )
    with Sandbox(extra=extra, wait="socket") as sb:
        c = sb.unix(timeout=20)
        c.subscribe(1)
        failed = 0

        def second_failure(ev):
            nonlocal failed
            if ev["kind"] == "service.failed" and ev["data"]["name"] == "loop":
                failed += 1
            return failed == 2

        evs = c.events_until(second_failure, 20)
        fails = of(evs, "service.failed", "loop")
        for f in fails:
            expect("3 exits within 60000 ms" in f["data"]["reason"], "the failure's reason: %r" % f["data"])
            expect_eq(f["data"]["retry_ms"], 2000, "service.failed's retry_ms")
        retries = [e for e in of(evs, "service.restarting", "loop") if e["data"].get("retry")]
        expect_eq(len(retries), 1, "retries between the two failures")
        retry = retries[0]
        expect(fails[0]["seq"] < retry["seq"] < fails[1]["seq"], "the retry comes between the failures")
        waited = retry["ts"] - fails[0]["ts"]
        note("retried %d ms after it failed" % waited)
        # The loop measures the delay from the time it cached when it woke
        # for the exit, a few ms before the failure was journaled.
        expect(waited >= 2000 - 50, "retried %d ms after it failed, before retry_failed_ms" % waited)
        # Its death count starts afresh: exactly max_deaths exits again.
        exits = [e for e in of(evs, "service.exited", "loop") if retry["seq"] < e["seq"] < fails[1]["seq"]]
        expect_eq(len(exits), 3, "exits between the retry and the second failure")
        s = service(sb, "loop")
        expect_eq(s["state"], "failed", "loop's state after the second failure")

        # service.stop cancels the retry: nothing starts it again.
        c.call("service.stop", {"name": "loop"})
        last = sb.state()["last_seq"]
        time.sleep(3.0)
        after = [e for e in sb.events(last + 1) if e["data"].get("name") == "loop"]
        expect_eq([e["kind"] for e in after], [], "events of loop after service.stop (its retry was due within 2 s)")
        expect_eq(service(sb, "loop")["state"], "failed", "loop's state after service.stop")


@case("a dependency's death is not counted: the dependant waits for it; its own deaths still are")
def dependency_not_counted():
    # b exits whenever a goes away (it polls a's pid); a tells its pid
    # before it is ready, so b never reads a stale one.
    extra = (
        "[service a]\n"
        "command = /bin/sh -c 'echo $$ > %s/a.pid; echo >&3; exec sleep 1000'\n"
        "ready = notify-fd 3\nmax_deaths = 100\nbackoff_min_ms = 10\nbackoff_max_ms = 50\n"
        "[service b]\n"
        "command = /bin/sh -c 'p=$(cat %s/a.pid); while kill -0 $p 2>/dev/null; do sleep 0.02; done; exit 1'\n"
        "after = a\nmax_deaths = 2\nbackoff_min_ms = 10\nbackoff_max_ms = 50\n"
    ) % (STATE_MARK, STATE_MARK)
    kills = 5
    with Sandbox(extra=extra, wait="socket") as sb:
        u = sb.unix(timeout=10)
        b_pid = started_pid(sb, "b")
        for i in range(kills):
            seq = sb.state()["last_seq"]
            u.call("service.signal", {"name": "a", "signal": "KILL"})
            u2 = sb.unix(timeout=10)
            u2.subscribe(seq + 1)
            evs = u2.events_until(
                lambda e: e["kind"] == "service.started" and e["data"]["name"] == "b", 10)
            u2.close()
            r = of(evs, "service.restarting", "b")
            expect_eq(len(r), 1, "b's restarts after a's kill %d" % (i + 1))
            expect_eq(r[0]["data"].get("dependency"), "a", "the dependency b's restart names")
            expect_eq(r[0]["data"]["delay_ms"], 0, "b's restart delay (it waits for a instead)")
            a_ready = of(evs, "service.ready", "a")
            expect(a_ready and a_ready[-1]["seq"] < evs[-1]["seq"], "b started again only after a was ready")
            b_pid = started_pid(sb, "b", b_pid)
        evs = sb.events(1)
        expect_eq(of(evs, "service.failed", "b"), [], "b's failures after %d deaths of a (max_deaths 2)" % kills)
        expect_eq(service(sb, "b")["state"], "ready", "b's state")

        # b's own deaths count: the second within the window fails it.
        u.call("service.signal", {"name": "b", "signal": "KILL"})
        b_pid = started_pid(sb, "b", b_pid)
        u.call("service.signal", {"name": "b", "signal": "KILL"})
        wait_for(lambda: service(sb, "b")["state"] == "failed", 10, "b failed")
        s = service(sb, "b")
        expect("2 exits within 60000 ms" in s["reason"], "b's reason: %r" % s["reason"])
        own = [e for e in of(sb.events(1), "service.restarting", "b") if "dependency" not in e["data"]]
        expect_eq(len(own), 1, "b's counted restarts (the first own kill; the second failed it)")
        u.close()


@case("max_deaths = unlimited: killed again and again, never failed, restart delays within the cap")
def restart_forever():
    extra = (
        "[service forever]\ncommand = sleep 1000\nmax_deaths = unlimited\n"
        "backoff_min_ms = 10\nbackoff_max_ms = 200\n"
    )
    kills = 12
    with Sandbox(extra=extra, wait="socket") as sb:
        u = sb.unix(timeout=10)
        pid = started_pid(sb, "forever")
        for _ in range(kills):
            u.call("service.signal", {"name": "forever", "signal": "KILL"})
            pid = started_pid(sb, "forever", pid)
        u.close()
        evs = sb.events(1)
        delays = [e["data"]["delay_ms"] for e in of(evs, "service.restarting", "forever")]
        note("restart delays: %s" % delays)
        expect_eq(len(delays), kills, "restarts")
        expect_eq(of(evs, "service.failed", "forever"), [], "failures of forever")
        expect(max(delays) == 200, "the delays reach the cap: %s" % delays)
        expect(all(d <= 200 for d in delays), "a delay past the cap: %s" % delays)
        expect_eq(service(sb, "forever")["state"], "ready", "forever's state")


@case("the gateway killed ten times in a row: each time back within its short restart delay")
def gateway_back_fast():
    with Sandbox() as sb:
        worst = 0.0
        pid = sb.gateway_pid()
        for i in range(10):
            os.kill(pid, 9)
            t0 = time.monotonic()
            pid = sb.gateway_pid(timeout=10, other_than=pid)

            def healthy():
                try:
                    return http_get(sb.port, "/healthz", timeout=1)[0] == 200
                except OSError:
                    return False

            wait_for(healthy, 10, "/healthz 200 after kill %d" % (i + 1), interval=0.005)
            worst = max(worst, time.monotonic() - t0)
        evs = sb.events(1)
        delays = [e["data"]["delay_ms"] for e in of(evs, "service.restarting", "gateway")]
        note("the gateway's restart delays: %s" % delays)
        expect_eq(len(delays), 10, "the gateway's restarts")
        expect(all(d <= GATEWAY_BACKOFF_MAX_MS for d in delays), "a delay past %d ms: %s" % (GATEWAY_BACKOFF_MAX_MS, delays))
        expect_eq(of(evs, "service.failed", "gateway"), [], "failures of the gateway")
        print("# /healthz back at worst %.0f ms after a kill of the gateway" % (worst * 1000))


run()
