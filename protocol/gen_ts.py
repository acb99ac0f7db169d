#!/usr/bin/python3
"""Validate protocol/berth.v1.json and write the TypeScript SDK's types
(clients/typescript/src/protocol.ts) from it. The type language is in
protocol/README.md.

  gen_ts.py           validate, then write protocol.ts
  gen_ts.py --check   validate, then exit 1 with a diff if protocol.ts differs
  gen_ts.py --docs    validate, then exit 1 listing where the schema,
                      protocol/catalog_ops.def, protocol/proto.h and
                      docs/protocol.md disagree
"""

import difflib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.dirname(HERE)
SCHEMA_PATH = os.path.join(HERE, "berth.v1.json")
TS_PATH = os.path.join(SRCDIR, "clients", "typescript", "src", "protocol.ts")

PRIMITIVES = {"string", "uint", "int", "number", "bool", "bin", "any", "null"}
CONSTRUCTORS = {"array", "map", "object", "enum", "oneOf", "ref", "nullable"}
OBJECT_KEYS = {"object", "extends", "rest", "doc"}
FIELD_KEYS = {"type", "optional", "doc"}
SERVERS = {"berthd", "desktop"}
ACCESS = {"any", "local"}
OP_KEYS = {"name", "server", "access", "summary", "waits", "args", "result"}
NAME_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
FIELD_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
OP_RE = re.compile(r"^[a-z]+(\.[a-z_]+)+$|^[a-z]+$")


class SchemaError(Exception):
    pass


def load(path=SCHEMA_PATH):
    with open(path) as f:
        return json.load(f)


def unwrap(spec):
    """A named type or a field may be given as {"type": T, ...}: T."""
    if isinstance(spec, dict) and "type" in spec:
        return spec["type"]
    return spec


def constructor(t):
    """The constructor key of a type expression given as a dict."""
    keys = [k for k in t if k in CONSTRUCTORS]
    return keys[0] if len(keys) == 1 else None


def check_type(t, types, where, problems):
    """Append to problems what is wrong with type expression t."""
    if isinstance(t, str):
        if t not in PRIMITIVES:
            problems.append("%s: unknown type %r" % (where, t))
        return
    if not isinstance(t, dict):
        problems.append("%s: a type is a string or an object, not %r" % (where, t))
        return
    c = constructor(t)
    if c is None:
        problems.append("%s: a type needs exactly one of %s: %r" % (where, sorted(CONSTRUCTORS), sorted(t)))
        return
    allowed = OBJECT_KEYS if c == "object" else {c, "doc"}
    extra = set(t) - allowed
    if extra:
        problems.append("%s: unexpected keys %s" % (where, sorted(extra)))
    v = t[c]
    if c in ("array", "map", "nullable"):
        check_type(v, types, where + "." + c, problems)
    elif c == "ref":
        if v not in types:
            problems.append("%s: ref %r does not resolve" % (where, v))
    elif c == "enum":
        if not v or not all(isinstance(x, str) for x in v) or len(set(v)) != len(v):
            problems.append("%s: an enum is a non-empty list of distinct strings" % where)
    elif c == "oneOf":
        if not isinstance(v, list) or len(v) < 2:
            problems.append("%s: oneOf takes two types or more" % where)
        else:
            for i, alt in enumerate(v):
                check_type(alt, types, "%s.oneOf[%d]" % (where, i), problems)
    elif c == "object":
        check_fields(v, types, where, problems)
        for base in t.get("extends", []):
            if base not in types:
                problems.append("%s: extends %r, which does not resolve" % (where, base))
            elif not isinstance(unwrap(types[base]), dict) or constructor(unwrap(types[base])) != "object":
                problems.append("%s: extends %r, which is not an object" % (where, base))
        if "rest" in t:
            check_type(t["rest"], types, where + ".rest", problems)


def check_fields(fields, types, where, problems):
    if not isinstance(fields, dict):
        problems.append("%s: an object's fields are a map" % where)
        return
    for name, spec in fields.items():
        if not FIELD_RE.match(name):
            problems.append("%s: bad field name %r" % (where, name))
        if isinstance(spec, dict) and "type" in spec:
            extra = set(spec) - FIELD_KEYS
            if extra:
                problems.append("%s.%s: unexpected keys %s" % (where, name, sorted(extra)))
            if not isinstance(spec.get("optional", False), bool):
                problems.append("%s.%s: optional is a bool" % (where, name))
        check_type(unwrap(spec), types, "%s.%s" % (where, name), problems)


def validate(schema):
    """Every problem of the schema, as strings; empty when it is sound."""
    problems = []
    for key in ("version", "types", "ops", "events", "errors"):
        if key not in schema:
            problems.append("no %r" % key)
    if problems:
        return problems
    types = schema["types"]
    for name, t in types.items():
        if not NAME_RE.match(name):
            problems.append("type %r: a type's name is CamelCase" % name)
        if isinstance(t, dict) and "type" in t and set(t) - {"type", "doc"}:
            problems.append("type %s: unexpected keys %s" % (name, sorted(set(t) - {"type", "doc"})))
        check_type(unwrap(t), types, "type " + name, problems)
    seen = set()
    for i, op in enumerate(schema["ops"]):
        name = op.get("name", "#%d" % i)
        if name in seen:
            problems.append("op %s: listed twice" % name)
        seen.add(name)
        if not OP_RE.match(name):
            problems.append("op %s: bad name" % name)
        if set(op) != OP_KEYS:
            problems.append("op %s: keys %s, want %s" % (name, sorted(op), sorted(OP_KEYS)))
            continue
        if op["server"] not in SERVERS:
            problems.append("op %s: server %r" % (name, op["server"]))
        if op["access"] not in ACCESS:
            problems.append("op %s: access %r" % (name, op["access"]))
        if not isinstance(op["waits"], bool):
            problems.append("op %s: waits is a bool" % name)
        if op["server"] == "desktop" and not op["waits"]:
            problems.append("op %s: a desktop op is forwarded, so it waits" % name)
        for part in ("args", "result"):
            check_type(op[part], types, "op %s %s" % (name, part), problems)
    for kind, fields in schema["events"].items():
        if not OP_RE.match(kind):
            problems.append("event %s: bad kind" % kind)
        check_fields(fields, types, "event " + kind, problems)
    for code, meaning in schema["errors"].items():
        if not re.match(r"^[a-z_]+$", code) or not isinstance(meaning, str) or not meaning:
            problems.append("error %r: a code is lowercase words, with a meaning" % code)
    return problems


def pascal(dotted):
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[._]", dotted))


def ts_type(t):
    """The TypeScript text of type expression t."""
    if isinstance(t, str):
        return {"string": "string", "uint": "number", "int": "number", "number": "number", "bool": "boolean",
                "bin": "Uint8Array", "any": "unknown", "null": "null"}[t]
    c = constructor(t)
    v = t[c]
    if c == "array":
        inner = ts_type(v)
        return ("%s[]" if re.match(r"^[\w.]+$", inner) else "(%s)[]") % inner
    if c == "map":
        return "Record<string, %s>" % ts_type(v)
    if c == "nullable":
        return "%s | null" % ts_type(v)
    if c == "ref":
        return v
    if c == "enum":
        return " | ".join(json.dumps(x) for x in v)
    if c == "oneOf":
        return " | ".join(ts_type(x) for x in v)
    # Other keys go in a Record of their own: an index signature would have
    # to admit every optional field's undefined.
    parts = list(t.get("extends", [])) + ([ts_fields(v, "")] if v else [])
    if "rest" in t:
        parts.append("Record<string, %s>" % ts_type(t["rest"]))
    return " & ".join(parts) if parts else "Record<string, never>"


def ts_fields(fields, indent):
    """An object literal type of fields; one line unless indent is given."""
    items = []
    for name, spec in fields.items():
        opt = "?" if isinstance(spec, dict) and spec.get("optional") else ""
        key = name if FIELD_RE.match(name) else json.dumps(name)
        items.append("%s%s: %s;" % (key, opt, ts_type(unwrap(spec))))
    if indent:
        return "{\n" + "".join("%s%s\n" % (indent, i) for i in items) + "}"
    return "{ " + " ".join(items) + " }" if items else "{}"


def ts_decl(name, t):
    """The export declaring type t under name."""
    if isinstance(t, dict) and constructor(t) == "object" and t["object"] and "rest" not in t:
        ext = " extends " + ", ".join(t["extends"]) if t.get("extends") else ""
        return "export interface %s%s %s\n" % (name, ext, ts_fields(t["object"], "  "))
    return "export type %s = %s;\n" % (name, ts_type(t))


def ts_doc(spec):
    doc = spec.get("doc") if isinstance(spec, dict) else None
    return "/** %s */\n" % doc if doc else ""


def generate(schema):
    out = [
        "// generated from protocol/berth.v1.json by protocol/gen_ts.py; do not edit\n",
        "\n",
        "export const PROTOCOL_VERSION = %s;\n" % json.dumps(schema["version"]),
        "\n",
        "export type ErrorCode =\n" + "".join("  | %s\n" % json.dumps(c) for c in schema["errors"]).rstrip("\n") + ";\n",
        "\n",
        "export const ERROR_CODES: readonly ErrorCode[] = [\n"
        + "".join("  %s,\n" % json.dumps(c) for c in schema["errors"])
        + "];\n",
        "\n",
    ]
    for name, spec in schema["types"].items():
        out.append(ts_doc(spec) + ts_decl(name, unwrap(spec)))
    out.append("\n")
    for op in schema["ops"]:
        base = pascal(op["name"])
        out.append("/** %s */\n" % op["summary"])
        out.append(ts_decl(base + "Args", op["args"]))
        out.append(ts_decl(base + "Result", op["result"]))
    out.append("\nexport interface Ops {\n")
    for op in schema["ops"]:
        base = pascal(op["name"])
        out.append('  "%s": { args: %sArgs; result: %sResult };\n' % (op["name"], base, base))
    out.append(
        "}\n"
        "export type OpName = keyof Ops;\n"
        'export type Args<O extends OpName> = Ops[O]["args"];\n'
        'export type Result<O extends OpName> = Ops[O]["result"];\n'
        "\n"
        "export interface OpInfo {\n"
        '  server: "berthd" | "desktop";\n'
        '  access: "any" | "local";\n'
        "  waits: boolean;\n"
        "}\n"
        "\n"
        "export const OPS: { readonly [O in OpName]: OpInfo } = {\n"
    )
    for op in schema["ops"]:
        out.append(
            '  "%s": { server: "%s", access: "%s", waits: %s },\n'
            % (op["name"], op["server"], op["access"], "true" if op["waits"] else "false")
        )
    out.append("};\n\n/** The ops whose answer waits for something besides the request (request.cancel can end the wait). */\n")
    out.append("export const WAITING_OPS: readonly OpName[] = [\n")
    out.extend('  "%s",\n' % op["name"] for op in schema["ops"] if op["waits"])
    out.append("];\n\n")
    for kind, fields in schema["events"].items():
        out.append(ts_decl(pascal(kind) + "Data", {"object": fields}))
    out.append("\nexport interface Events {\n")
    out.extend('  "%s": %sData;\n' % (kind, pascal(kind)) for kind in schema["events"])
    out.append(
        "}\n"
        "export type EventKind = keyof Events;\n"
        "export type BerthEvent = { [K in EventKind]: { seq: number; ts: number; kind: K; data: Events[K] } }[EventKind];\n"
    )
    return "".join(out)


def main(argv):
    schema = load()
    problems = validate(schema)
    if problems:
        sys.stderr.write("berth.v1.json:\n" + "".join("  %s\n" % p for p in problems))
        return 1
    if "--docs" in argv:
        sys.path.insert(0, HERE)
        import schema_check

        problems = schema_check.all_problems(schema, SRCDIR)
        sys.stdout.write("".join("%s\n" % p for p in problems))
        return 1 if problems else 0
    text = generate(schema)
    if "--check" in argv:
        try:
            with open(TS_PATH) as f:
                old = f.read()
        except FileNotFoundError:
            old = ""
        if old == text:
            return 0
        sys.stdout.writelines(
            difflib.unified_diff(old.splitlines(True), text.splitlines(True), "protocol.ts (on disk)", "protocol.ts (generated)")
        )
        return 1
    with open(TS_PATH, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
