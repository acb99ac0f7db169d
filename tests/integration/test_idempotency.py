"""Idempotency keys (docs/protocol.md, "Idempotency keys"), through real
clients: a repeat of a keyed request on a new connection is answered the
first's result and creates nothing more, for every op that creates
something berthd serves; a repeat while the first waits gets the same
answer, also when the first's connection is gone; a key of another op is
a conflict; a first that failed holds no key, nor one cancelled, whose
waiting repeats are cancelled with it; bad keys are bad_args; the
oldest of 4097 keys is forgotten. record.start's key, which needs
berth-desktop, is tested in test_desktop_protocol.py."""

import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    case,
    expect,
    expect_eq,
    expect_in,
    free_port,
    note,
    run,
    scratch,
    wait_for,
)
from harness.runtimes import AgentDirs  # noqa: E402
from harness.tasks import exit_with, fake_section, listed_ids, steps, wait_final  # noqa: E402

MIB = 1 << 20
IDEM_MAX = 4096


def new_key():
    return "k-" + uuid.uuid4().hex


def error(r):
    expect(not r.get("ok"), "an error was expected: %r" % (r,))
    return r["error"]["code"], r["error"]["message"]


def procs(c):
    return sorted(p["id"] for p in c.call("proc.list")["procs"])


def ptys(c):
    return sorted(s["id"] for s in c.call("pty.list")["sessions"])


def events_of(sb, kind):
    return [e["data"] for e in sb.events() if e["kind"] == kind]


def big_file(directory, size):
    """A file of size bytes that is not all alike (so the copy is not
    cheaper than its size); returns its path."""
    path = os.path.join(directory, "big.dat")
    block = os.urandom(MIB)
    with open(path, "wb") as f:
        for _ in range(size // MIB):
            f.write(block)
    return path


def store_entries(sb):
    return os.listdir(os.path.join(sb.state_dir, "artifacts"))


def wait_under_way(sb):
    wait_for(lambda: any(e.startswith(".publish-") for e in store_entries(sb)), 10, "a publication under way", 0.002)


@case("proc.start: a repeat on a new connection answers the same id and pid, and the command ran once")
def t_proc_start():
    d = scratch()
    out = os.path.join(d, "ran")
    with Sandbox() as sb:
        a = sb.ws()
        key = new_key()
        args = {"shell": "echo once >> %s" % out, "key": key}
        first = a.call("proc.start", args)
        a.call("proc.wait", {"id": first["id"]})
        listed = procs(a)
        b = sb.ws()
        again = b.call("proc.start", args)
        expect_eq(again, first, "the repeat's result")
        expect_eq(procs(b), listed, "proc.list after the repeat")
        time.sleep(0.3)
        with open(out) as f:
            expect_eq(f.read(), "once\n", "what the command appended")
        other = b.call("proc.start", {"shell": "echo other >> %s" % out, "key": new_key()})
        expect(other["id"] != first["id"], "another key started another command: %r" % other)


@case("pty.open: a repeat on a new connection answers the same session, and pty.list gains none")
def t_pty_open():
    with Sandbox() as sb:
        a = sb.ws()
        key = new_key()
        args = {"argv": ["/bin/sleep", "1000"], "key": key}
        first = a.call("pty.open", args)
        listed = ptys(a)
        expect_in(first["id"], listed, "the session in pty.list")
        b = sb.ws()
        expect_eq(b.call("pty.open", args), first, "the repeat's result")
        expect_eq(ptys(b), listed, "pty.list after the repeat")


@case("secrets.set: key is no secret; a repeat answers the first's names and sets nothing")
def t_secrets_set():
    with Sandbox() as sb:
        a = sb.ws()
        key = new_key()
        first = a.call("secrets.set", {"ONE": "v1", "key": key})
        expect_eq(first, {"names": ["ONE"]}, "the first's result")
        b = sb.ws()
        again = b.call("secrets.set", {"ONE": "v2", "TWO": "x", "key": key})
        expect_eq(again, first, "the repeat's result")
        expect_eq(b.call("secrets.list")["names"], ["ONE"], "secrets.list after the repeat")
        expect_eq(len(events_of(sb, "secrets.changed")), 1, "secrets.changed events")


@case("grant.create: a repeat on a new connection answers the same grant, token included; grant.list gains none")
def t_grant_create():
    with Sandbox(extra="[gateway]\npreview_listen = 127.0.0.1:%d\n" % free_port()) as sb:
        a = sb.ws()
        key = new_key()
        args = {"scope": "preview:3000", "ttl_s": 600, "key": key}
        first = a.call("grant.create", args)
        b = sb.ws()
        expect_eq(b.call("grant.create", args), first, "the repeat's result")
        expect_eq([g["id"] for g in b.call("grant.list")["grants"]], [first["id"]], "grant.list after the repeat")


@case("task.run: a repeat on a new connection answers the same task, and task.list gains none")
def t_task_run():
    dirs = AgentDirs()
    with Sandbox(extra=fake_section("fake", dirs)) as sb:
        a = sb.unix()
        key = new_key()
        args = {"runtime": "fake", "prompt": steps(exit_with(0)), "key": key}
        first = a.call("task.run", args)
        wait_final(a, first["id"])
        b = sb.ws()
        expect_eq(b.call("task.run", args), first, "the repeat's result")
        expect_eq(listed_ids(b), [first["id"]], "task.list after the repeat")


@case("artifact.publish: a repeat after the answer, and one while the copy runs, get the first's answer; "
      "one publication", timeout=120)
def t_artifact_publish():
    path = big_file(scratch(), 256 * MIB)
    with Sandbox() as sb:
        a = sb.ws(timeout=60)
        key = new_key()
        args = {"path": path, "key": key}
        b = sb.ws(timeout=60)
        t0 = time.monotonic()
        first_id = a.send_request("artifact.publish", args)
        wait_under_way(sb)
        repeat_id = b.send_request("artifact.publish", args)
        # Answered in order but for what waits: the ping's answer first
        # says the repeat was held for the first's.
        ping_id = b.send_request("ping")
        m = b.recv()
        expect_eq((m.get("type"), m.get("id")), ("response", ping_id), "the first answer on the repeat's connection")
        waiting = b.response(repeat_id)
        first = a.response(first_id)
        note("the publication took %.2f s" % (time.monotonic() - t0))
        expect(first["ok"], "the first publication: %r" % (first,))
        expect_eq(waiting, {"type": "response", "id": waiting["id"], "ok": True, "result": first["result"]},
                  "the repeat sent while the copy ran")
        c = sb.ws()
        expect_eq(c.call("artifact.publish", args), first["result"], "the repeat after the answer")
        time.sleep(0.3)
        expect_eq(len(events_of(sb, "artifact.published")), 1, "artifact.published events")


@case("artifact.publish: a repeat waits on a first whose connection has gone, and gets its answer", timeout=120)
def t_artifact_first_gone():
    path = big_file(scratch(), 256 * MIB)
    with Sandbox() as sb:
        key = new_key()
        args = {"path": path, "key": key}
        gone = sb.ws()
        gone.send_request("artifact.publish", args)
        wait_under_way(sb)
        gone.abort()
        b = sb.ws(timeout=60)
        r = b.call("artifact.publish", args)
        expect_eq(r["size"], 256 * MIB, "the size the repeat was answered")
        expect_eq([e["id"] for e in events_of(sb, "artifact.published")], [r["id"]], "artifact.published events")
        expect_eq(sb.ws().call("artifact.publish", args), r, "a repeat after the answer")


@case("a request reusing the id of a keyed first still waiting is duplicate_id, and does not answer for the key",
      timeout=120)
def t_reused_id():
    path = big_file(scratch(), 256 * MIB)
    with Sandbox() as sb:
        a = sb.unix(timeout=60)
        key = new_key()
        args = {"path": path, "key": key}
        a.send({"type": "request", "id": 1000, "op": "artifact.publish", "args": args})
        wait_under_way(sb)
        a.send({"type": "request", "id": 1000, "op": "ping", "args": {}})
        reuse = a.response(1000)
        expect_eq(error(reuse)[0], "duplicate_id", "the ping under the publication's id")
        first = a.response(1000)
        expect_in("sha256", first["result"], "the publication's answer")
        expect_eq(sb.ws().call("artifact.publish", args), first["result"], "a repeat of the key")


@case("a repeat waiting for its first's answer is a waiting request: duplicate_id, and request.cancel lets it go "
      "while the first goes on", timeout=120)
def t_repeat_cancel():
    path = big_file(scratch(), 256 * MIB)
    with Sandbox() as sb:
        a = sb.ws(timeout=60)
        key = new_key()
        args = {"path": path, "key": key}
        first_id = a.send_request("artifact.publish", args)
        wait_under_way(sb)
        b = sb.unix(timeout=60)
        b.send({"type": "request", "id": 7, "op": "artifact.publish", "args": args})
        b.send({"type": "request", "id": 7, "op": "ping", "args": {}})
        expect_eq(error(b.response(7))[0], "duplicate_id", "a ping under the waiting repeat's id")
        b.send({"type": "request", "id": 8, "op": "request.cancel", "args": {"id": 7}})
        got = {}
        while len(got) < 2:
            m = b.recv()
            if m.get("type") == "response":
                got[m["id"]] = m
        expect_eq(error(got[7]), ("cancelled", "cancelled by request.cancel"), "the repeat's answer")
        expect_eq(got[8]["result"], {"cancelled": True}, "request.cancel's answer")
        first = a.response(first_id)
        expect(first["ok"], "the first publication goes on: %r" % (first,))
        expect_eq(b.call("artifact.publish", args), first["result"], "a repeat after the answer")
        b.send({"type": "request", "id": 9, "op": "ping", "args": {}})
        expect_eq(b.recv()["id"], 9, "no late answer for the cancelled repeat comes before the next")


@case("request.cancel of a keyed artifact.publish under way: it and the repeat waiting on it are answered "
      "cancelled; the copy goes on to artifact.published; the key is forgotten, so a repeat publishes anew",
      timeout=120)
def t_first_cancel():
    path = big_file(scratch(), 256 * MIB)
    with Sandbox() as sb:
        a, b = sb.unix(timeout=60), sb.ws(timeout=60)
        args = {"path": path, "key": new_key()}
        first_id = a.send_request("artifact.publish", args)
        wait_under_way(sb)
        repeat_id = b.send_request("artifact.publish", args)
        b.call("ping")
        expect_eq(a.call("request.cancel", {"id": first_id}), {"cancelled": True}, "request.cancel's answer")
        cancelled = ("cancelled", "cancelled by request.cancel")
        expect_eq(error(a.response(first_id)), cancelled, "the first's answer")
        expect_eq(error(b.response(repeat_id)), cancelled, "the waiting repeat's answer")
        published = sb.wait_event(lambda ev: ev["kind"] == "artifact.published", 60)
        expect(published is not None, "artifact.published after the cancel")
        listed = [x["id"] for x in a.call("artifact.list")["artifacts"]]
        expect_eq(listed, [published["data"]["id"]], "artifact.list")
        again = b.call("artifact.publish", args)
        expect_eq(again["id"], published["data"]["id"], "the repeat after the cancel: the same content")
        wait_for(lambda: len(events_of(sb, "artifact.published")) == 2, 10,
                 "a second artifact.published: the repeat was performed")


@case("a key used for one op is a conflict for another, which does nothing")
def t_conflict():
    with Sandbox() as sb:
        a = sb.ws()
        key = new_key()
        a.call("proc.start", {"argv": ["true"], "key": key})
        before = ptys(a)
        code, message = error(sb.ws().request("pty.open", {"argv": ["/bin/sleep", "1000"], "key": key}))
        expect_eq(code, "conflict", "pty.open with proc.start's key")
        expect_eq(message, "key %s was used for proc.start" % key, "the conflict's message")
        expect_eq(ptys(a), before, "pty.list after the conflict")


@case("a first request that failed does not hold its key: the repeat is performed")
def t_failed_first():
    with Sandbox() as sb:
        a = sb.ws()
        key = new_key()
        code, _ = error(a.request("proc.start", {"argv": ["/no/such/program"], "key": key}))
        expect_eq(code, "bad_args", "proc.start of a missing program")
        b = sb.ws()
        p = b.call("proc.start", {"argv": ["true"], "key": key})
        expect_in(p["id"], procs(b), "the repeat's command in proc.list")
        key = new_key()
        code, _ = error(a.request("proc.start", {"key": key}))
        expect_eq(code, "bad_args", "proc.start without a command")
        p = b.call("proc.start", {"argv": ["true"], "key": key})
        expect_in(p["id"], procs(b), "the repeat of the bad-args request")


@case("a key of 0 or 129 bytes, with a space or a control byte, or not a string, is bad_args; 1 and 128 are keys")
def t_bad_keys():
    with Sandbox() as sb:
        c = sb.ws()
        before = procs(c)
        for bad in ["", "k" * 129, "a b", "a\tb", "a\x7fb", "caf\u00e9", 42, None]:
            code, message = error(c.request("proc.start", {"argv": ["true"], "key": bad}))
            expect_eq(code, "bad_args", "key %r" % (bad,))
            expect_in("key", message, "the message of key %r" % (bad,))
        expect_eq(procs(c), before, "proc.list after the bad keys")
        for good in ["!", "~" * 128]:
            c.call("proc.start", {"argv": ["true"], "key": good})
        expect_eq(len(procs(c)), len(before) + 2, "commands started with the keys of 1 and 128 bytes")
        expect_eq(c.call("ping", {"key": ""})["boot_id"], c.hello_result["boot_id"],
                  "an op that takes no key ignores it")


@case("berthd remembers the 4096 most recent keys: after 4097, the first is forgotten, the second is not",
      timeout=300)
def t_eviction():
    with Sandbox() as sb:
        c = sb.unix(timeout=60)
        keys = ["evict-%d" % i for i in range(IDEM_MAX + 1)]
        t0 = time.monotonic()
        for at in range(0, len(keys), 256):
            ids = [c.send_request("secrets.set", {"S": "v", "key": k}) for k in keys[at : at + 256]]
            for i in ids:
                expect(c.response(i)["ok"], "secrets.set %d" % i)
        note("%d keyed secrets.set in %.1f s" % (len(keys), time.monotonic() - t0))
        expect_eq(c.call("secrets.set", {"KEPT": "x", "key": keys[1]}), {"names": ["S"]},
                  "the repeat of the second key, still remembered")
        expect_eq(c.call("secrets.set", {"FRESH": "x", "key": keys[0]}), {"names": ["FRESH", "S"]},
                  "the repeat of the first key, forgotten: performed anew")
        expect_eq(c.call("secrets.list")["names"], ["FRESH", "S"], "secrets.list")


if __name__ == "__main__":
    run()
