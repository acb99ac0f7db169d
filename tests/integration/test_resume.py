"""Resuming the event stream: across a killed gateway, abrupt client
drops, a restarted berthd, and a slow consumer the gateway cuts off.
Every time the seqs received add up to exactly 1..last, once each."""

import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    EventStream,
    Sandbox,
    case,
    event_kinds,
    expect,
    expect_contiguous,
    expect_eq,
    generate_events,
    note,
    raw_ws_socket,
    run,
    wait_for,
)


@case("a killed gateway: the client resumes with no gap and no duplicate")
def gateway_killed():
    with Sandbox() as sb:
        s = EventStream()
        c = sb.ws()
        last = c.subscribe(0)["last_seq"]
        s.read(c, last)
        old_gw = [x for x in sb.state()["services"] if x["name"] == "gateway"][0]
        host_gw = sb.gateway_pid()
        os.kill(host_gw, signal.SIGKILL)
        s.drain(c)
        sb.gateway_pid(timeout=10, other_than=host_gw)

        c = sb.ws_retry()
        c.subscribe(s.next_seq)

        def restarted(ev):
            d = ev["data"]
            return ev["kind"] == "service.started" and d["name"] == "gateway" and d["pid"] != old_gw["pid"]

        while not any(restarted(e) for e in s.events):
            s.take(c.next_event())
        s.read(c, sb.state()["last_seq"])
        expect_contiguous(s.seqs(), 1, s.events[-1]["seq"])
        exited = [e for e in s.events if e["kind"] == "service.exited" and e["data"]["name"] == "gateway"]
        expect(exited, "no service.exited for the gateway")
        expect_eq(exited[0]["data"].get("signal"), signal.SIGKILL, "the gateway's exit signal")
        expect_eq(exited[0]["data"]["pid"], old_gw["pid"], "the exited gateway's pid")
        expect_eq(s.events, sb.events(1), "what the client got against a fresh replay")


@case("20 abrupt drops at random points while events flow: nothing lost, nothing twice")
def random_drops():
    seed = int(os.environ.get("BERTH_TEST_SEED") or time.time())
    note("BERTH_TEST_SEED=%d" % seed)
    rng = random.Random(seed)
    with Sandbox() as sb:
        stop = threading.Event()
        refused = []
        errors = []

        def generate():
            while not stop.is_set():
                try:
                    refused.append(generate_events(sb, 1))
                except Exception as e:  # reported by the main thread
                    errors.append(repr(e))
                    return
                # A steady flow, not a flood the reader never catches up on.
                time.sleep(0.002)

        gen = threading.Thread(target=generate, daemon=True)
        gen.start()
        s = EventStream()
        try:
            for _ in range(20):
                c = sb.ws_retry()
                c.subscribe(s.next_seq)
                for _ in range(rng.randint(0, 40)):
                    s.take(c.next_event())
                if rng.random() < 0.5:
                    time.sleep(rng.random() * 0.02)
                c.abort()
        finally:
            stop.set()
            gen.join(10)
        expect(not errors, "the generator failed: %r" % errors)
        expect(refused, "no events generated")
        s.follow(sb, sb.state()["last_seq"])
        note("%d events, %d generated" % (len(s.events), len(refused)))
        expect_contiguous(s.seqs(), 1, s.events[-1]["seq"])
        expect(len(s.events) > len(refused) // 2, "fewer events than refusals")
        expect_eq(s.events, sb.events(1), "what the client got against a fresh replay")
        # The gateway let go of every dropped client.
        wait_for(lambda: sb.metrics()["berth_gateway_connections_active"] == 0, 5, "connections_active back to 0")


@case("a restarted berthd continues the boot: same boot id, seqs from last+1")
def berthd_restart():
    with Sandbox() as sb:
        boot = sb.unix().hello_result["boot_id"]
        generate_events(sb, 3)
        wait_for(lambda: event_kinds(sb.events(1)).count("auth.failed") == 3, 5, "three auth.failed events")
        before = sb.events(1)
        last = before[-1]["seq"]
        expect_eq(sb.restart(), 0, "berthd's exit status")
        c = sb.ws()
        expect_eq(c.hello_result["boot_id"], boot, "boot_id after the restart")
        s = EventStream()
        s.events = list(before)
        c.subscribe(last + 1)
        s.read(c, sb.state()["last_seq"])
        after = s.events[len(before) :]
        note("after the restart: %r" % [(e["seq"], e["kind"]) for e in after])
        expect_eq(after[0]["kind"], "berthd.stopping", "the event after the old last")
        started = [e for e in after if e["kind"] == "berthd.started"]
        expect(len(started) == 1, "berthd.started after the restart: %r" % started)
        expect_eq(started[0]["data"]["boot_id"], boot, "berthd.started's boot_id")
        expect_eq(sb.events(1), s.events, "the whole journal after the restart")


@case("a backlog larger than client_queue reaches a client that reads")
def big_backlog():
    with Sandbox(extra="[gateway]\nclient_queue = 64K\n") as sb:
        # About eight times the queue, waiting in the journal.
        last = generate_events(sb, 5000, peer="127.0.0.1:" + "7" * 40)
        s = EventStream()
        s.follow(sb, last)
        expect_contiguous(s.seqs(), 1, last)


@case("a consumer that stops reading is cut off, others are not slowed, and it resumes")
def slow_consumer():
    with Sandbox(extra="[gateway]\nclient_queue = 64K\nclient_stall_ms = 1000\n") as sb:
        sock = raw_ws_socket(sb.port, rcvbuf=4096)
        slow = sb.ws(sock=sock)
        slow.subscribe(0)
        fast = sb.ws()
        fast_stream = EventStream()
        fast.subscribe(1)
        pinger = sb.ws()
        total = 0
        dropped = 0
        # Events come until the gateway gives up on the slow client, a
        # second after its queue filled; a fast subscriber reads them all
        # and pings are answered meanwhile.
        while total < 30000:
            last = generate_events(sb, 250, peer="127.0.0.1:" + "7" * 40)
            total += 250
            expect(pinger.call("ping", timeout=3), "no pong")
            fast_stream.read(fast, last, timeout=10)
            dropped = sb.metrics()["berth_gateway_slow_consumer_drops_total"]
            if dropped >= 1:
                break
            time.sleep(0.05)
        note("generated %d events before the drop" % total)
        expect(dropped >= 1, "the slow client was never dropped")
        expect_contiguous(fast_stream.seqs(), 1, last, "the fast client's seqs")
        s = EventStream()
        code = s.drain(slow, timeout=30)
        note("slow client: %d events, close code %s" % (len(s.events), code))
        expect(code in (4008, None, 1006), "close code %s" % code)
        expect(s.events and s.events[-1]["seq"] < last, "the slow client got everything: was it slow?")
        s.follow(sb, last)
        expect_contiguous(s.seqs(), 1, last, "the slow client's seqs")
        expect_eq(s.events, fast_stream.events[: len(s.events)], "the slow client's events against the fast one's")


run()
