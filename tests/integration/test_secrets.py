"""Secrets (secrets.*) through the real gateway: values go in and only
names come out — set, replace, unset and list; every limit at its edge
and one past; every bad input refused whole, with an error that names no
value; values locked in memory, kept out of core dumps and wiped once
gone (berthd's memory is searched); nothing kept across a restart; and
after a run of set, unset and failing ops no value is found in the
journal, the state directory, berthd's log, the events sent to a
subscriber or the gateway's /metrics."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import msgpack  # noqa: E402

from harness.memory import mappings, memory_holds, vm_flags  # noqa: E402
from harness import (  # noqa: E402
    Sandbox,
    case,
    expect,
    expect_eq,
    http_get,
    note,
    read_to_eof,
    run,
    wait_for,
)

NAME_MAX = 128
VALUE_MAX = 64 * 1024
TOTAL_MAX = 1024 * 1024
COUNT_MAX = 256


class Values:
    """Fresh values that occur nowhere by chance, each remembered so a
    case can look for all of them at its end."""

    def __init__(self):
        self.all = []

    def new(self, size=40, tag="v"):
        v = ("%s-%s-" % (tag, os.urandom(8).hex())).encode()
        v += os.urandom(size).hex().encode()[: max(size - len(v), 0)]
        self.all.append(v)
        return v

    def remember(self, *parts):
        """Values that do not come from new() (a NUL inside, say): the
        parts are what must not be found."""
        self.all.extend(parts)


def leaks(blob, values):
    """The values found in blob (bytes)."""
    return [v for v in values if v in blob]


def expect_no_value(blob, values, where):
    found = leaks(blob, values)
    expect(not found, "%d value(s) found in %s, e.g. %r" % (len(found), where, found[:3]))


def set_ok(c, secrets, values=None):
    """secrets.set that must succeed; its whole response holds no value."""
    r = c.request("secrets.set", secrets)
    expect(r.get("ok"), "secrets.set %s: %r" % (sorted(secrets), r.get("error")))
    if values is not None:
        expect_no_value(msgpack.packb(r), values, "the response to secrets.set")
    return r["result"]


def refused(c, op, args, code, values, names=()):
    """op must fail with code; its message must hold no value but name
    each of names. Returns the message."""
    r = c.request(op, args)
    expect(not r.get("ok"), "%s succeeded where %s was expected" % (op, code))
    err = r["error"]
    expect_eq(err["code"], code, "the error code of %s %s" % (op, describe(args)))
    expect_no_value(msgpack.packb(r), values, "the error of %s" % op)
    for n in names:
        expect(n in err["message"], "the error %r does not name %s" % (err["message"], n))
    return err["message"]


def describe(args):
    """args with values cut short, for messages."""
    if not isinstance(args, dict):
        return repr(args)
    out = {}
    for k, v in args.items():
        out[k if not isinstance(k, bytes) else repr(k)] = (
            (v[:6] + b"..." if isinstance(v, bytes) else v[:6] + "...")
            if isinstance(v, (bytes, str)) and len(v) > 8
            else v
        )
    return repr(out)[:200]


def listed(c):
    return c.call("secrets.list")["names"]


def secrets_events(events):
    return [ev["data"] for ev in events if ev["kind"] == "secrets.changed"]


def read_events(sb, sub):
    """What subscriber sub (subscribed from seq 1) has received, up to the
    last seq journaled now."""
    last = sb.state()["last_seq"]
    return sub.events_until(lambda ev: ev["seq"] >= last, 10)


def state_files(sb):
    """Every byte of every file under the state directory."""
    out = b""
    for root, _, files in os.walk(sb.state_dir):
        for name in files:
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as f:
                    out += f.read()
            except OSError:
                pass  # the socket
    return out


# ---------------------------------------------------------------------
# Round trips


@case("set, replace, unset and list: names in order, values never out")
def round_trips():
    vals = Values()
    with Sandbox() as sb:
        c = sb.ws()
        sub = sb.ws()
        sub.subscribe(1)
        expect_eq(listed(c), [], "secrets.list at start")
        a, b = vals.new(), vals.new()
        r = set_ok(c, {"API_KEY": a.decode(), "_tok2": b}, vals.all)
        expect_eq(r, {"names": ["API_KEY", "_tok2"]}, "secrets.set's result")
        expect_eq(listed(c), ["API_KEY", "_tok2"], "secrets.list")
        # Replacing one and adding one; a value may be any bytes but NUL.
        a2, d = vals.new(), "p\u00e4ss \u2603 " + vals.new().decode()
        r = set_ok(c, {"DB": d, "API_KEY": a2}, vals.all)
        expect_eq(r["names"], ["API_KEY", "DB", "_tok2"], "names after a replace")
        r = set_ok(c, {"EMPTY": ""}, vals.all)
        expect_eq(r["names"], ["API_KEY", "DB", "EMPTY", "_tok2"], "names after an empty value")
        # Unknown and repeated names in unset are fine.
        expect_eq(c.call("secrets.unset", {"names": ["DB", "NOPE", "DB"]}), {"unset": ["DB"]}, "unset")
        expect_eq(c.call("secrets.unset", {"names": ["NOPE"]}), {"unset": []}, "unset of an unknown name")
        expect_eq(c.call("secrets.unset", {"names": []}), {"unset": []}, "unset of nothing")
        expect_eq(
            c.call("secrets.unset", {"names": ["EMPTY", "_tok2"]}), {"unset": ["EMPTY", "_tok2"]}, "unset of two"
        )
        expect_eq(listed(c), ["API_KEY"], "secrets.list at the end")
        events = read_events(sb, sub)
        expect_eq(
            secrets_events(events),
            [
                {"set": ["API_KEY", "_tok2"]},
                {"set": ["API_KEY", "DB"]},
                {"set": ["EMPTY"]},
                {"unset": ["DB"]},
                {"unset": ["EMPTY", "_tok2"]},
            ],
            "secrets.changed events (none for an unset that unset nothing)",
        )
        expect_no_value(b"".join(msgpack.packb(ev) for ev in events), vals.all, "the events")


# ---------------------------------------------------------------------
# Limits


@case("limits: 256 secrets, 64 KiB values, 128-byte names, 1 MiB in all; one past each is refused")
def limits():
    vals = Values()
    with Sandbox() as sb:
        c = sb.ws(timeout=20)
        many = {"S%03d" % i: vals.new(24) for i in range(COUNT_MAX)}
        expect_eq(len(set_ok(c, many)["names"]), COUNT_MAX, "secrets held after setting 256")
        refused(c, "secrets.set", {"ONE_MORE": vals.new()}, "conflict", vals.all)
        set_ok(c, {"S000": vals.new()})  # a replacement adds nothing
        expect_eq(c.call("secrets.unset", {"names": sorted(many)})["unset"], sorted(many), "unset of all 256")
        too_many = {"T%03d" % i: vals.new(24) for i in range(COUNT_MAX + 1)}
        refused(c, "secrets.set", too_many, "bad_args", vals.all)
        expect_eq(listed(c), [], "names after 257 at once")

        set_ok(c, {"N" * NAME_MAX: vals.new()})
        refused(c, "secrets.set", {"N" * (NAME_MAX + 1): vals.new()}, "bad_args", vals.all)
        big = vals.new(VALUE_MAX)
        expect_eq(len(big), VALUE_MAX, "the test's big value")
        set_ok(c, {"BIG": big})
        refused(c, "secrets.set", {"BIGGER": big + b"x"}, "bad_args", vals.all, ["BIGGER"])
        c.call("secrets.unset", {"names": ["BIG", "N" * NAME_MAX]})

        # 16 values of 64 KiB fill the store exactly.
        full = {"F%02d" % i: vals.new(VALUE_MAX) for i in range(TOTAL_MAX // VALUE_MAX)}
        set_ok(c, full)
        refused(c, "secrets.set", {"X": vals.new(8)}, "conflict", vals.all)
        set_ok(c, {"F00": vals.new(VALUE_MAX)})  # the same size again
        refused(c, "secrets.set", {"F00": vals.new(VALUE_MAX) + b"1"}, "bad_args", vals.all)
        c.call("secrets.unset", {"names": ["F01"]})
        set_ok(c, {"X": vals.new(VALUE_MAX)})
        expect_eq(len(listed(c)), TOTAL_MAX // VALUE_MAX, "secrets held when full")
        c.call("secrets.unset", {"names": listed(c)})
        # One request over 1 MiB, whatever is held.
        over = {"O%02d" % i: vals.new(VALUE_MAX) for i in range(TOTAL_MAX // VALUE_MAX + 1)}
        refused(c, "secrets.set", over, "bad_args", vals.all)
        expect_eq(listed(c), [], "names after an oversized request")


# ---------------------------------------------------------------------
# Bad input


@case("bad input: each refused whole with its code, naming names but never a value")
def bad_input():
    vals = Values()
    with Sandbox() as sb:
        c = sb.ws()
        keep = vals.new()
        set_ok(c, {"KEEP": keep})
        v = vals.new
        left, right = vals.new(16, "l"), vals.new(16, "r")
        with_nul = left + b"\0" + right
        vals.remember(with_nul)
        cases = [
            ({}, "bad_args", ()),
            ({"1ABC": v()}, "bad_args", ()),
            ({"A-B": v()}, "bad_args", ()),
            ({"": v()}, "bad_args", ()),
            ({"A B": v()}, "bad_args", ()),
            ({"\u00c4B": v()}, "bad_args", ()),
            ({"A=B": v()}, "bad_args", ()),
            ({b"BINKEY": v()}, "bad_args", ()),
            ({5: v()}, "bad_args", ()),
            ({"A": 5}, "bad_args", ("A",)),
            ({"A": None}, "bad_args", ("A",)),
            ({"A": True}, "bad_args", ("A",)),
            ({"A": [v()]}, "bad_args", ("A",)),
            ({"A": {"x": v()}}, "bad_args", ("A",)),
            ({"A": with_nul}, "bad_args", ("A",)),
            ({"A": with_nul.decode()}, "bad_args", ("A",)),
            # All or nothing: one bad value and nothing is set.
            ({"GOOD": v(), "KEEP": v(), "BAD": b"x\0" + v()}, "bad_args", ("BAD",)),
            ({"GOOD": v(), "GOOD2": 7}, "bad_args", ("GOOD2",)),
        ]
        for args, code, names in cases:
            refused(c, "secrets.set", args, code, vals.all + [left, right], names)
        # A name given twice (msgpack allows it; Python dicts do not).
        dup = v()
        raw = b"\x82" + msgpack.packb("TWICE") + msgpack.packb(dup) + msgpack.packb("TWICE") + msgpack.packb(dup)
        c.send_raw(
            b"\x84"
            + msgpack.packb("type")
            + msgpack.packb("request")
            + msgpack.packb("id")
            + msgpack.packb(999)
            + msgpack.packb("op")
            + msgpack.packb("secrets.set")
            + msgpack.packb("args")
            + raw
        )
        r = c.response(999)
        expect_eq(r["error"]["code"], "bad_args", "a name given twice")
        expect("TWICE" in r["error"]["message"], "the error names TWICE: %r" % r["error"]["message"])
        expect_no_value(msgpack.packb(r), vals.all, "the error of a name given twice")

        for args in (
            {},
            {"names": "KEEP"},
            {"names": [5]},
            {"names": ["1A"]},
            {"names": [b"KEEP"]},
            {"names": ["KEEP", None]},
            {"names": ["KEEP"] * (COUNT_MAX + 1)},
        ):
            refused(c, "secrets.unset", args, "bad_args", vals.all)
        expect_eq(listed(c), ["KEEP"], "names after every refusal")
        # Still usable, and KEEP was never replaced: setting it again works.
        set_ok(c, {"KEEP": keep, "AFTER": v()})
        expect_eq(listed(c), ["AFTER", "KEEP"], "names after a good set")


# ---------------------------------------------------------------------
# Memory


@case("memory: the store is locked and not dumped, and a value gone is gone from berthd's memory")
def memory():
    vals = Values()
    with Sandbox() as sb:
        c = sb.ws()
        pid = sb.berthd_pid()
        store = [
            (start, end)
            for start, end, perms, rest in mappings(pid)
            if end - start == TOTAL_MAX and "rw" in perms and rest == ""
        ]
        flags = vm_flags(pid)
        locked = [s for s in store if {"lo", "dd"} <= set(flags.get(s[0], []))]
        note("1 MiB anonymous mappings: %r" % [(hex(s), flags.get(s)) for s, _ in store])
        expect(locked, "no 1 MiB mapping both locked (lo) and kept out of dumps (dd)")

        # A small request (one read) and a large one (many reads of the
        # socket, gathered into one message).
        small = {"SMALL_%d" % i: vals.new(40) for i in range(4)}
        large = {"LARGE_%d" % i: vals.new(VALUE_MAX) for i in range(6)}
        set_ok(c, small)
        set_ok(c, large)
        expect_eq(
            len(memory_holds(pid, vals.all)), len(vals.all), "values found in berthd's memory (the scan sees the store)"
        )
        # The request's bytes were wiped once stored: only the store holds them.
        elsewhere = memory_holds(pid, vals.all, skip=locked[0][0])
        expect(not elsewhere, "%d values held outside the store: %s" % (len(elsewhere), sorted(v[:20] for v in elsewhere)))
        c.call("secrets.unset", {"names": sorted(small) + sorted(large)})
        # Refused requests carry values too.
        refused(c, "secrets.set", {"R": vals.new(), "S": 5}, "bad_args", vals.all)
        refused(c, "secrets.set", {"T": vals.new(VALUE_MAX) + b"\0"}, "bad_args", vals.all)
        c.call("ping")
        left = memory_holds(pid, vals.all)
        expect(
            not left,
            "%d of %d values still in berthd's memory after unset or refusal: %s"
            % (len(left), len(vals.all), sorted(v[:20] for v in left)),
        )


# ---------------------------------------------------------------------
# Nothing kept, nothing leaked


@case("restart: secrets are not kept across a restart of berthd, and never reach the state directory")
def restart():
    vals = Values()
    with Sandbox() as sb:
        c = sb.ws()
        set_ok(c, {"A": vals.new(), "B": vals.new(VALUE_MAX)})
        expect_no_value(state_files(sb), vals.all, "the state directory")
        sb.restart()
        c = sb.ws()
        expect_eq(listed(c), [], "secrets after a restart")
        expect_no_value(state_files(sb), vals.all, "the state directory after a restart")


@case("no value in the journal, the state directory, berthd's log, the events or /metrics after many ops")
def no_leak():
    vals = Values()
    with Sandbox(debug=True) as sb:
        c = sb.ws()
        sub = sb.ws()
        sub.subscribe(1)
        unix = sb.unix()
        for round_ in range(3):
            set_ok(c, {"K%d" % i: vals.new() for i in range(5)})
            set_ok(unix, {"K0": vals.new(300), "U%d" % round_: vals.new()})
            refused(c, "secrets.set", {"K1": vals.new(), "BAD": 1}, "bad_args", vals.all)
            nul = vals.new(20, "n")
            vals.remember(nul + b"\0")
            refused(c, "secrets.set", {"K2": nul + b"\0" + vals.new(20)}, "bad_args", vals.all)
            refused(c, "secrets.set", {"-bad-": vals.new()}, "bad_args", vals.all)
            refused(c, "secrets.set", {"F": vals.new(VALUE_MAX) + b"+"}, "bad_args", vals.all)
            c.call("secrets.unset", {"names": ["K3", "K4", "NOPE"]})
            refused(c, "secrets.unset", {"names": [vals.new().decode()]}, "bad_args", vals.all)
        c.call("secrets.unset", {"names": listed(c)})
        events = read_events(sb, sub)
        expect(len(secrets_events(events)) >= 9, "secrets.changed events: %d" % len(secrets_events(events)))
        expect_no_value(b"".join(msgpack.packb(ev) for ev in events), vals.all, "the events sent to a subscriber")
        expect_no_value(sb.journal_bytes(), vals.all, "the journal")
        expect_no_value(state_files(sb), vals.all, "the state directory")
        status, _, body = http_get(sb.port, "/metrics")
        expect_eq(status, 200, "GET /metrics")
        expect_no_value(body, vals.all, "/metrics")
        sb.stop()
        log = sb.log().encode()
        expect(b"berthd" in log, "berthd's log is empty")
        expect_no_value(log, vals.all, "berthd's log (with --debug)")


# ---------------------------------------------------------------------
# Secrets given to processes


def run_attached(c, args, timeout=30.0):
    """proc.start attached; both streams to their ends; the wait result."""
    p = c.call("proc.start", dict(args, attach=True))
    names = ["proc/%s/stdout" % p["id"], "proc/%s/stderr" % p["id"]]
    got = read_to_eof(c, names, timeout=timeout)
    w = c.call("proc.wait", {"id": p["id"]}, timeout=timeout)
    return p["id"], got[names[0]], got[names[1]], w


# Writes its argument values (environment variable names) piece by piece,
# flushing and pausing between pieces, so each value crosses reads.
PIECES = r"""
import os, sys, time
for name in sys.argv[1:]:
    v = os.environb.get(name.encode(), b"<unset>")
    for i in range(0, len(v), 3):
        sys.stdout.buffer.write(v[i:i + 3]); sys.stdout.buffer.flush(); time.sleep(0.01)
    sys.stdout.buffer.write(b"|"); sys.stdout.buffer.flush()
"""


@case("grants: a list or all become the program's environment, and secrets.injected names them")
def grants():
    vals = Values()
    with Sandbox() as sb:
        c = sb.ws()
        c.subscribe()
        a, b = vals.new(), vals.new()
        set_ok(c, {"API_KEY": a, "DB_PASS": b})
        show = "printf '%s|%s' \"${API_KEY-unset}\" \"${DB_PASS-unset}\""
        pid, out, err, w = run_attached(c, {"shell": show, "secrets": ["API_KEY"]})
        expect_eq(out, a + b"|unset", "the environment with one granted")
        ev = c.events_until(lambda e: e["kind"] == "secrets.injected")[-1]["data"]
        expect_eq(ev, {"target": "proc/" + pid, "names": ["API_KEY"]}, "secrets.injected")
        pid, out, err, w = run_attached(c, {"shell": show, "secrets": "all", "env": {"API_KEY": "from-env"}})
        expect_eq(out, a + b"|" + b, "every secret; a secret wins over env")
        pid, out, err, w = run_attached(c, {"shell": show})
        expect_eq(out, b"unset|unset", "no grant, no secret")
        refused(c, "proc.start", {"shell": show, "secrets": ["API_KEY", "NOPE"]}, "not_found", vals.all, ["NOPE"])
        refused(c, "proc.start", {"shell": show, "secrets": "some"}, "bad_args", vals.all)
        refused(c, "proc.start", {"shell": show, "secrets": [1]}, "bad_args", vals.all)
        refused(c, "pty.open", {"argv": ["true"], "secrets": ["NOPE"]}, "not_found", vals.all, ["NOPE"])
        expect_eq([q for q in c.call("proc.list")["procs"] if q["command"][-1] == show and q["state"] == "running"],
                  [], "nothing left running")


@case("redact: values are replaced in stdout, stderr and a terminal, even written 3 bytes at a time")
def redaction():
    vals = Values()
    with Sandbox() as sb:
        c = sb.ws()
        a, b = vals.new(48), vals.new(20)
        set_ok(c, {"API_KEY": a, "SHORT": b, "TINY": b"abc"})
        argv = ["/usr/bin/python3", "-c", PIECES, "API_KEY", "SHORT", "TINY"]
        pid, out, err, w = run_attached(c, {"argv": argv, "secrets": "all", "redact": True})
        expect_eq(out, b"[redacted:API_KEY]|[redacted:SHORT]|abc|", "redacted output (TINY is under 4 bytes)")
        pid, out, err, w = run_attached(c, {"argv": argv, "secrets": "all"})
        expect_eq(out, a + b"|" + b + b"|abc|", "without redact the program prints what it was given")
        many = "for i in $(seq 1 20000); do echo \"$API_KEY\"; echo \"x$SHORT\" >&2; done"
        pid, out, err, w = run_attached(c, {"shell": many, "secrets": "all", "redact": True}, timeout=60)
        expect_eq(out, b"[redacted:API_KEY]\n" * 20000, "20000 lines of stdout, all redacted")
        expect_eq(err, b"x[redacted:SHORT]\n" * 20000, "20000 lines of stderr, all redacted")
        p = c.call("pty.open", {"argv": argv, "secrets": ["API_KEY", "SHORT"], "redact": True})
        c.call("pty.attach", {"id": p["id"], "from_offset": 0})
        screen = read_to_eof(c, ["pty/" + p["id"]])["pty/" + p["id"]]
        expect(b"[redacted:API_KEY]|[redacted:SHORT]|<unset>|" in screen, "the terminal's output: %r" % screen[:200])
        expect_no_value(screen, [a, b], "the terminal's output")


@case("a secret set while a program runs is redacted from then on")
def redaction_live():
    vals = Values()
    with Sandbox() as sb:
        c = sb.ws()
        a = vals.new(30)
        p = c.call("proc.start", {"argv": ["cat"], "stdin": "pipe", "redact": True, "attach": True})
        c.call("proc.input", {"id": p["id"], "data": a + b"\n"})
        wait_for(lambda: c.call("proc.list")["procs"][0]["stdout_bytes"] > 0, 5, "the first line")
        set_ok(c, {"LATE": a})
        c.call("proc.input", {"id": p["id"], "data": b"then " + a + b"\n"})
        c.call("proc.close_stdin", {"id": p["id"]})
        got = read_to_eof(c, ["proc/%s/stdout" % p["id"], "proc/%s/stderr" % p["id"]])
        expect_eq(got["proc/%s/stdout" % p["id"]], a + b"\nthen [redacted:LATE]\n", "before and after the set")


@case("no value in the journal, berthd's log, the events or /metrics after processes used and printed them")
def no_leak_with_processes():
    vals = Values()
    with Sandbox(debug=True) as sb:
        c = sb.ws()
        sub = sb.ws()
        sub.subscribe(1)
        set_ok(c, {"K%d" % i: vals.new() for i in range(4)})
        for redact in (True, False):
            run_attached(c, {"shell": "env; echo $K0 >&2; exit 3", "secrets": "all", "redact": redact})
            p = c.call("pty.open", {"argv": ["sh", "-c", "echo $K1"], "secrets": ["K1"], "redact": redact})
            c.call("pty.attach", {"id": p["id"], "from_offset": 0})
            read_to_eof(c, ["pty/" + p["id"]])
        refused(c, "proc.start", {"shell": "true", "secrets": ["K0", "MISSING"]}, "not_found", vals.all)
        refused(c, "proc.start", {"argv": ["/no/such"], "secrets": "all"}, "bad_args", vals.all)
        c.call("secrets.unset", {"names": ["K2"]})
        events = read_events(sb, sub)
        kinds = [ev["kind"] for ev in events]
        expect(kinds.count("secrets.injected") == 4, "secrets.injected events: %d" % kinds.count("secrets.injected"))
        expect_no_value(b"".join(msgpack.packb(ev) for ev in events), vals.all, "the events sent to a subscriber")
        expect_no_value(sb.journal_bytes(), vals.all, "the journal")
        status, _, body = http_get(sb.port, "/metrics")
        expect_no_value(body, vals.all, "/metrics")
        sb.stop()
        expect_no_value(sb.log().encode(), vals.all, "berthd's log (with --debug)")


run()
