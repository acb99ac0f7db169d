"""protocol/berth.v1.json is the one description of berth.v1, and nothing
drifts from it: it is well-formed; catalog_ops.def (names, order, server,
access, summary), catalog.c's event kinds, proto.h's error codes and
docs/protocol.md (its ops, event kinds and error codes tables, the ops'
argument tables) say the same; the SDK's protocol.ts is what gen_ts.py
makes of it; and what a live berthd answers and journals fits it exactly
(a field the schema does not name is a failure)."""

import copy
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SRCDIR, Sandbox, case, expect, expect_eq, note, run, scratch  # noqa: E402

sys.path.insert(0, os.path.join(SRCDIR, "protocol"))
import gen_ts  # noqa: E402
import schema_check  # noqa: E402

SCHEMA = gen_ts.load(os.path.join(SRCDIR, "protocol", "berth.v1.json"))
DOC = schema_check.read(SRCDIR, "docs/protocol.md")
OPS = {op["name"]: op for op in SCHEMA["ops"]}


def expect_none(problems, what):
    expect(not problems, "%s:\n  %s" % (what, "\n  ".join(problems)))


def conforms(value, t, where, problems):
    """Append to problems where value does not fit type t of the schema."""
    t = gen_ts.unwrap(t)
    if isinstance(t, str):
        ok = {
            "string": lambda v: isinstance(v, str),
            "uint": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
            "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "bool": lambda v: isinstance(v, bool),
            "bin": lambda v: isinstance(v, bytes),
            "null": lambda v: v is None,
            "any": lambda v: True,
        }[t](value)
        if not ok:
            problems.append("%s: %r is not %s" % (where, value, t))
        return
    c = gen_ts.constructor(t)
    v = t[c]
    if c == "ref":
        conforms(value, SCHEMA["types"][v], where, problems)
    elif c == "nullable":
        if value is not None:
            conforms(value, v, where, problems)
    elif c == "enum":
        if value not in v:
            problems.append("%s: %r is not one of %s" % (where, value, v))
    elif c == "array":
        if not isinstance(value, list):
            problems.append("%s: %r is not an array" % (where, value))
        else:
            for i, item in enumerate(value):
                conforms(item, v, "%s[%d]" % (where, i), problems)
    elif c == "map":
        if not isinstance(value, dict):
            problems.append("%s: %r is not a map" % (where, value))
        else:
            for key, item in value.items():
                conforms(item, v, "%s.%s" % (where, key), problems)
    elif c == "oneOf":
        tries = []
        for alt in v:
            p = []
            conforms(value, alt, where, p)
            if not p:
                return
            tries.append("; ".join(p))
        problems.append("%s: %r fits none of oneOf: %s" % (where, value, " | ".join(tries)))
    elif c == "object":
        conforms_object(value, t, where, problems)


def object_fields(t):
    """An object type's fields, its extends' included."""
    fields = {}
    for base in t.get("extends", []):
        fields.update(object_fields(gen_ts.unwrap(SCHEMA["types"][base])))
    fields.update(t["object"])
    return fields


def conforms_object(value, t, where, problems):
    if not isinstance(value, dict):
        problems.append("%s: %r is not a map" % (where, value))
        return
    fields = object_fields(t)
    for name, spec in fields.items():
        optional = isinstance(spec, dict) and spec.get("optional")
        if name in value:
            conforms(value[name], spec, "%s.%s" % (where, name), problems)
        elif not optional:
            problems.append("%s: lacks %s" % (where, name))
    for name in value:
        if name not in fields:
            if "rest" in t:
                conforms(value[name], t["rest"], "%s.%s" % (where, name), problems)
            else:
                problems.append("%s: %s is not in the schema" % (where, name))


def result_problems(op, result):
    p = []
    conforms(result, OPS[op]["result"], op + " result", p)
    return p


def event_problems(ev):
    p = []
    fields = SCHEMA["events"].get(ev["kind"])
    if fields is None:
        return ["event kind %s is not in the schema" % ev["kind"]]
    conforms(ev.get("data"), {"object": fields}, "event %s data" % ev["kind"], p)
    return p


@case("berth.v1.json is well-formed: every ref resolves, every type is sound, names are unique")
def schema_valid():
    expect_none(gen_ts.validate(SCHEMA), "berth.v1.json")


@case("catalog_ops.def has the schema's ops: names, order, server, access, summary")
def ops_catalog():
    rows = schema_check.catalog_ops(SRCDIR)
    expect(len(rows) >= 70 and rows[0]["name"] == "hello", "catalog_ops.def read: %r" % rows[:2])
    expect_none(schema_check.compare_ops(SCHEMA["ops"], rows, "protocol/catalog_ops.def"), "berth.v1.json vs catalog_ops.def")


@case("docs/protocol.md's ops table has the schema's ops: names, order, server, access, summary")
def ops_docs():
    rows = schema_check.doc_ops(DOC)
    expect(len(rows) >= 70, "the docs' ops table read: %d rows" % len(rows))
    expect_none(schema_check.compare_ops(SCHEMA["ops"], rows, "docs/protocol.md"), "berth.v1.json vs docs/protocol.md")


@case("the event kinds of catalog.c and of the docs are the schema's, with the schema's fields in the docs")
def events_agree():
    kinds, documented = schema_check.catalog_events(SRCDIR), schema_check.doc_events(DOC)
    expect(len(kinds) >= 40 and len(documented) >= 40, "read %d kinds, %d documented" % (len(kinds), len(documented)))
    expect_none(schema_check.compare_events(SCHEMA, kinds, documented), "event kinds")


@case("proto.h's error codes are the schema's")
def errors_proto():
    codes = schema_check.error_codes(SRCDIR)
    expect("bad_message" in codes, "proto.h read: %r" % codes)
    expect_none(schema_check.compare_names(list(SCHEMA["errors"]), codes, "error", "protocol/proto.h"), "error codes")


@case("docs/protocol.md's error codes table is the schema's")
def errors_docs():
    codes = schema_check.doc_errors(DOC)
    expect("bad_message" in codes, "the docs' error table read: %r" % codes)
    expect_none(schema_check.compare_names(list(SCHEMA["errors"]), codes, "error", "docs/protocol.md"), "error codes")


@case("each op's argument table in docs/protocol.md names the schema's arguments")
def args_docs():
    tables = schema_check.doc_arg_tables(DOC, list(OPS))
    for op in ("hello", "fs.write", "task.run", "workspace.prepare", "desktop.screenshot"):
        expect(op in tables, "no argument table found for %s: %s" % (op, sorted(tables)))
    expect_none(schema_check.compare_args(SCHEMA, tables), "arguments")


@case("clients/typescript/src/protocol.ts is what gen_ts.py makes of the schema")
def ts_current():
    r = subprocess.run([sys.executable, os.path.join(SRCDIR, "protocol", "gen_ts.py"), "--check"],
                       capture_output=True, text=True)
    expect_eq(r.returncode, 0, "gen_ts.py --check exit (run protocol/gen_ts.py):\n%s%s" % (r.stdout[-3000:], r.stderr))


@case("a change on one side alone is reported: op, event, error, argument, type, generated file")
def one_side_changes():
    rows = schema_check.catalog_ops(SRCDIR)
    doc_events = schema_check.doc_events(DOC)
    s = copy.deepcopy(SCHEMA)
    s["ops"][1]["summary"] = "something else"
    s["ops"][2]["access"] = "local"
    s["ops"][3], s["ops"][4] = s["ops"][4], s["ops"][3]
    problems = schema_check.compare_ops(s["ops"], rows, "catalog")
    for needle in ("op ping: summary", "op state: access", "out of order"):
        expect(any(needle in p for p in problems), "%r not reported: %r" % (needle, problems))
    expect(any("op nothing.new: in catalog, not in berth.v1.json" in p
               for p in schema_check.compare_ops(SCHEMA["ops"], rows + [dict(rows[0], name="nothing.new")], "catalog")),
           "an op only in the catalog is not reported")
    table = ("## Ops\n\n| op | served by | who may call | waits | what |\n|---|---|---|---|---|\n"
             "| `proc.wait` | berthd | any | no | answer when a command has exited |\n\n## Next\n")
    problems = schema_check.compare_ops([OPS["proc.wait"]], schema_check.doc_ops(table), "docs")
    expect(any("op proc.wait: waits" in p for p in problems), "a waits column that disagrees: %r" % problems)
    s = copy.deepcopy(SCHEMA)
    del s["events"]["pty.opened"]
    s["events"]["proc.started"]["extra_field"] = "string"
    problems = schema_check.compare_events(s, schema_check.catalog_events(SRCDIR), doc_events)
    expect(any("event pty.opened: in protocol/catalog.c" in p for p in problems), "a lost event: %r" % problems)
    expect(any("proc.started: field extra_field" in p for p in problems), "an undocumented field: %r" % problems)
    problems = schema_check.compare_names(list(SCHEMA["errors"]) + ["made_up"], schema_check.error_codes(SRCDIR),
                                          "error", "protocol/proto.h")
    expect(any("error made_up" in p for p in problems), "an error only in the schema: %r" % problems)
    s = copy.deepcopy(SCHEMA)
    hello = next(op for op in s["ops"] if op["name"] == "hello")
    hello["args"]["object"]["clientname"] = hello["args"]["object"].pop("client")
    problems = schema_check.compare_args(s, schema_check.doc_arg_tables(DOC, list(OPS)))
    expect(any("op hello: argument clientname" in p for p in problems), "a renamed argument: %r" % problems)
    expect(any("op hello: argument client of docs" in p for p in problems), "a renamed argument: %r" % problems)
    s = copy.deepcopy(SCHEMA)
    s["types"]["Exit"]["oneOf"][0] = {"ref": "NoSuchType"}
    s["types"]["Region"] = {"object": {"x": "integer"}}
    problems = gen_ts.validate(s)
    expect(any("NoSuchType" in p for p in problems), "an unresolved ref: %r" % problems)
    expect(any("'integer'" in p for p in problems), "an unknown type: %r" % problems)
    s = copy.deepcopy(SCHEMA)
    s["types"]["Region"]["object"]["depth"] = "uint"
    expect(gen_ts.generate(s) != gen_ts.generate(SCHEMA), "a changed type leaves protocol.ts as it was")


@case("the validator refuses an unknown field, a missing one and a wrong type, and takes an optional one's absence")
def validator_strict():
    good = {"id": "0a1b2c3d", "pid": 7}
    expect_eq(result_problems("proc.start", good), [], "a good proc.start result")
    expect(result_problems("proc.start", dict(good, extra=1)), "an unknown field passes")
    expect(result_problems("proc.start", {"id": "0a1b2c3d"}), "a missing field passes")
    expect(result_problems("proc.start", {"id": 5, "pid": 7}), "a wrong type passes")
    expect_eq(result_problems("fs.write", {"path": "/x"}), [], "optional fields absent")
    expect(result_problems("proc.wait", {"id": "a", "state": "running", "exit": {"code": 1, "core": True},
                                         "timed_out": False, "oom_killed": False, "stdout_bytes": 0,
                                         "stderr_bytes": 0}),
           "an Exit of code and core passes")


@case("live: what berthd answers and journals fits the schema exactly")
def live():
    d = scratch()
    with Sandbox() as sb:
        c = sb.unix()
        answers = [("hello", c.hello_result)]

        def call(op, args=None, timeout=None):
            result = c.call(op, args, timeout)
            answers.append((op, result))
            return result

        sub = call("events.subscribe", {"from_seq": 1})
        call("ping")
        call("state")
        call("service.list")
        call("service.status", {"name": "gateway"})
        proc = call("proc.start", {"argv": ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], "tag": "schema"})
        call("proc.wait", {"id": proc["id"], "timeout_ms": 10000}, timeout=15)
        call("proc.list")
        killed = call("proc.start", {"argv": ["/bin/sleep", "30"]})
        call("proc.signal", {"id": killed["id"], "signal": "KILL"})
        call("proc.wait", {"id": killed["id"], "timeout_ms": 10000}, timeout=15)
        pty = call("pty.open", {"argv": ["/bin/sh", "-c", "echo hi; sleep 30"], "cols": 80, "rows": 24})
        call("pty.list")
        call("pty.close", {"id": pty["id"]})
        path = os.path.join(d, "f.txt")
        call("fs.write", {"path": path, "offset": 0, "data": b"hello\n", "done": True})
        call("fs.stat", {"path": path})
        call("fs.list", {"path": d})
        call("fs.read", {"path": path})
        call("proc.attach", {"id": proc["id"]})
        call("limits.status", {"target": "proc/" + proc["id"]})
        call("fs.mkdir", {"path": os.path.join(d, "sub")})
        watch = call("fs.watch", {"path": d, "recursive": True})
        call("fs.watches")
        call("fs.write", {"path": os.path.join(d, "sub", "g.txt"), "offset": 0, "data": b"x", "done": True})
        call("fs.move", {"from": os.path.join(d, "sub", "g.txt"), "to": os.path.join(d, "g.txt")})
        call("fs.chmod", {"path": os.path.join(d, "g.txt"), "mode": 0o600})
        call("fs.remove", {"path": os.path.join(d, "sub"), "recursive": True})
        call("secrets.set", {"SCHEMA_TEST": "v"})
        call("secrets.list")
        call("secrets.unset", {"names": ["SCHEMA_TEST"]})
        art = call("artifact.publish", {"path": path}, timeout=15)
        call("artifact.read", {"id": art["id"]})
        call("artifact.list")
        for op in ("grant.list", "port.list", "runtime.list", "task.list"):
            call(op)
        time.sleep(0.5)  # fs.changed is coalesced over 100 ms
        call("fs.unwatch", {"id": watch["id"]})
        call("events.unsubscribe")
        c.subscribe(1)
        last = sb.state()["last_seq"]
        events = c.events_until(lambda ev: ev["seq"] >= last, timeout=15)
        kinds = {ev["kind"] for ev in events}
        for kind in ("berthd.started", "service.started", "proc.started", "proc.exited", "pty.opened",
                     "secrets.changed", "artifact.published", "fs.changed"):
            expect(kind in kinds, "no %s among the events: %s" % (kind, sorted(kinds)))
        expect(sub["first_seq"] >= 1, "events.subscribe: %r" % sub)
        problems = []
        for op, result in answers:
            problems += result_problems(op, result)
        for ev in events:
            problems += event_problems(ev)
        note("%d results of %d ops and %d events of %d kinds checked"
             % (len(answers), len({op for op, _ in answers}), len(events), len(kinds)))
        expect_none(problems, "what berthd sent does not fit berth.v1.json")


run()
