"""Where protocol/berth.v1.json and the other places that describe berth.v1
disagree: protocol/catalog_ops.def (the C op table), protocol/catalog.c
(the event kinds), protocol/proto.h (the error codes) and docs/protocol.md
(its "## Ops" table, its "## Event kinds" and "## Error codes" tables, and
the argument tables of the ops' sections). Each function returns a list of
problems, each naming the op, event kind or code it is about; gen_ts.py
--docs prints them and tests/integration/test_schema.py holds them to
empty. tests/integration/test_docs.py reads the C tables through here too."""

import os
import re

SERVER_OF = {"BERTHD": "berthd", "DESKTOP": "desktop", "berthd": "berthd", "berth-desktop": "desktop"}


def read(srcdir, rel):
    with open(os.path.join(srcdir, rel)) as f:
        return f.read()


def c_code(text):
    """C text without its comments."""
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def c_strings(text):
    """The value of adjacent C string literals."""
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', text))


def catalog_ops(srcdir):
    """Each CATALOG_OP line of catalog_ops.def, in order, as
    {name, server, access, summary}."""
    rows = []
    pattern = r'^CATALOG_OP\(\s*\w+\s*,\s*"([^"]+)"\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\)'
    for name, server, access, summary in re.findall(pattern, c_code(read(srcdir, "protocol/catalog_ops.def")), re.M):
        rows.append({"name": name, "server": SERVER_OF.get(server, server), "access": access.lower(), "summary": c_strings(summary)})
    return rows


def catalog_events(srcdir):
    """The event kinds: each catalog_events[] entry names an EV_ macro of
    catalog.h (or a string)."""
    defines = dict(re.findall(r'#define\s+(EV_\w+)\s+"([^"]+)"', read(srcdir, "protocol/catalog.h")))
    table = re.search(r"catalog_events\[\]\s*=\s*\{(.*?)\n\};", c_code(read(srcdir, "protocol/catalog.c")), re.S)
    kinds = []
    for name in re.findall(r"\{\s*(EV_\w+|\"[^\"]+\")\s*,", table.group(1)):
        kinds.append(name.strip('"') if name.startswith('"') else defines[name])
    return kinds


def error_codes(srcdir):
    """The error codes of proto.h's PROTO_E_ macros."""
    return re.findall(r'#define\s+PROTO_E_\w+\s+"([^"]+)"', read(srcdir, "protocol/proto.h"))


def section(doc, heading):
    """The text of the "## heading" section of a markdown document."""
    m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(heading), doc, re.M | re.S)
    if m is None:
        raise ValueError("docs/protocol.md has no section ## %s" % heading)
    return m.group(1)


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(text):
    """Each markdown table of text as (the line before it, header, rows)."""
    lines = text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-| ]+\|$", lines[i + 1]):
            j = i + 2
            rows = []
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(cells(lines[j]))
                j += 1
            before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            found.append((before, cells(lines[i]), rows, i))
            i = j
        else:
            i += 1
    return found


def code_names(cell):
    """The `names` of a table cell."""
    return re.findall(r"`([^`]+)`", cell)


def unquote(text):
    return text.replace("`", "")


def doc_ops(doc):
    """The rows of the "## Ops" table: {name, server, access, summary}, and
    waits when the table has a column for it."""
    _, header, rows, _ = tables(section(doc, "Ops"))[0]
    col = {h.lower(): i for i, h in enumerate(header)}
    wait_col = next((i for h, i in col.items() if "wait" in h), None)
    out = []
    for r in rows:
        row = {
            "name": unquote(r[col["op"]]),
            "server": SERVER_OF.get(r[col["served by"]], r[col["served by"]]),
            "access": r[col["who may call"]],
            "summary": unquote(r[col["what"]]),
        }
        if wait_col is not None:
            row["waits"] = unquote(r[wait_col]).lower() not in ("", "no", "-", "\u2014", "false")
        out.append(row)
    return out


def doc_events(doc):
    """kind -> the `names` its data cell mentions, from "## Event kinds"."""
    _, _, rows, _ = tables(section(doc, "Event kinds"))[0]
    return {unquote(r[0]): set(code_names(r[1])) for r in rows}


def doc_errors(doc):
    """The codes of the "## Error codes" table, in order."""
    _, _, rows, _ = tables(section(doc, "Error codes"))[0]
    return [unquote(r[0]) for r in rows]


def doc_arg_tables(doc, op_names):
    """op -> the argument names of its section's argument table, for the ops
    whose section has one: a table right after a line that ends "args:" (or
    "args (...):"), in the section of the op named by the nearest heading
    "### `op`" or paragraph opening "**`op`**" before it."""
    ops = set(op_names)
    lines = doc.split("\n")
    marks = []
    for i, line in enumerate(lines):
        m = re.match(r"^(?:#{3,4} `([^`]+)`|\*\*`([^`]+)`\*\*)", line)
        if m and (m.group(1) or m.group(2)) in ops:
            marks.append((i, m.group(1) or m.group(2)))
    found = {}
    for before, header, rows, at in tables(doc):
        if not re.search(r"\bargs\b(?: \([^)]*\))?:\s*$", before) or header[0] not in ("field", "arg"):
            continue
        owner = [name for i, name in marks if i < at]
        if not owner:
            continue
        names = set()
        for r in rows:
            names.update(code_names(r[0]))
        found[owner[-1]] = names
    return found


def fields_of(t, types):
    """The field names of an object type (its extends included), or None."""
    if isinstance(t, dict) and "ref" in t:
        t = types[t["ref"]]
        t = t.get("type", t) if isinstance(t, dict) else t
    if not isinstance(t, dict) or "object" not in t:
        return None
    names = set(t["object"])
    for base in t.get("extends", []):
        names |= fields_of({"ref": base}, types)
    return names


def compare_ops(schema_ops, other_ops, where, order=True):
    """Problems between the schema's ops and another table of them."""
    problems = []
    mine = {o["name"]: o for o in schema_ops}
    theirs = {o["name"]: o for o in other_ops}
    for name in mine:
        if name not in theirs:
            problems.append("op %s: in berth.v1.json, not in %s" % (name, where))
    for name in theirs:
        if name not in mine:
            problems.append("op %s: in %s, not in berth.v1.json" % (name, where))
    for name, o in theirs.items():
        if name not in mine:
            continue
        for key in ("server", "access", "summary", "waits"):
            if key in o and o[key] != mine[name][key]:
                problems.append("op %s: %s is %r in berth.v1.json, %r in %s" % (name, key, mine[name][key], o[key], where))
    if order:
        a = [n for n in mine if n in theirs]
        b = [n for n in theirs if n in mine]
        for x, y in zip(a, b):
            if x != y:
                problems.append("op %s: out of order: berth.v1.json has %s at its place in %s" % (y, x, where))
                break
    return problems


def compare_names(mine, theirs, what, where):
    problems = ["%s %s: in berth.v1.json, not in %s" % (what, n, where) for n in mine if n not in theirs]
    problems += ["%s %s: in %s, not in berth.v1.json" % (what, n, where) for n in theirs if n not in mine]
    return problems


def compare_events(schema, kinds, documented):
    problems = compare_names(list(schema["events"]), kinds, "event", "protocol/catalog.c")
    problems += compare_names(list(schema["events"]), list(documented), "event", "docs/protocol.md")
    for kind, fields in schema["events"].items():
        for field in fields:
            if kind in documented and field not in documented[kind]:
                problems.append("event %s: field %s is not in its docs/protocol.md row" % (kind, field))
    return problems


def compare_args(schema, documented):
    problems = []
    for op in schema["ops"]:
        if op["name"] not in documented:
            continue
        mine = fields_of(op["args"], schema["types"])
        if mine is None:
            problems.append("op %s: docs/protocol.md has an argument table, berth.v1.json no object args" % op["name"])
            continue
        for name in sorted(mine - documented[op["name"]]):
            problems.append("op %s: argument %s is not in its docs/protocol.md table" % (op["name"], name))
        for name in sorted(documented[op["name"]] - mine):
            problems.append("op %s: argument %s of docs/protocol.md is not in berth.v1.json" % (op["name"], name))
    return problems


def all_problems(schema, srcdir):
    doc = read(srcdir, "docs/protocol.md")
    ops = schema["ops"]
    problems = compare_ops(ops, catalog_ops(srcdir), "protocol/catalog_ops.def")
    problems += compare_ops(ops, doc_ops(doc), "docs/protocol.md")
    problems += compare_events(schema, catalog_events(srcdir), doc_events(doc))
    problems += compare_names(list(schema["errors"]), error_codes(srcdir), "error", "protocol/proto.h")
    problems += compare_names(list(schema["errors"]), doc_errors(doc), "error", "docs/protocol.md")
    problems += compare_args(schema, doc_arg_tables(doc, [o["name"] for o in ops]))
    return problems
