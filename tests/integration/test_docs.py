"""docs/protocol.md mirrors the code: every op of protocol/catalog_ops.def,
every event kind of protocol/catalog.c and every error code of
protocol/proto.h is in it."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SRCDIR, case, expect, run  # noqa: E402


def read(rel):
    with open(os.path.join(SRCDIR, rel)) as f:
        return f.read()


def c_code(text):
    """C text without its comments."""
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def catalog_ops():
    """The op names: the name of each CATALOG_OP line of the ops' list."""
    return re.findall(r'^CATALOG_OP\(\s*\w+\s*,\s*"([^"]+)"', c_code(read("protocol/catalog_ops.def")), re.M)


def catalog_events():
    """The event kinds: each catalog_events[] entry names an EV_ macro of
    catalog.h (or a string)."""
    defines = dict(re.findall(r'#define\s+(EV_\w+)\s+"([^"]+)"', read("protocol/catalog.h")))
    table = re.search(r"catalog_events\[\]\s*=\s*\{(.*?)\n\};", c_code(read("protocol/catalog.c")), re.S)
    kinds = []
    for name in re.findall(r"\{\s*(EV_\w+|\"[^\"]+\")\s*,", table.group(1)):
        kinds.append(name.strip('"') if name.startswith('"') else defines[name])
    return kinds


def error_codes():
    return re.findall(r'#define\s+PROTO_E_\w+\s+"([^"]+)"', read("protocol/proto.h"))


DOC_PATH = os.path.join(SRCDIR, "docs", "protocol.md")


def documented(name):
    """Whether name appears in docs/protocol.md as a word of its own
    (`name` in code spans, or bare)."""
    try:
        with open(DOC_PATH) as f:
            doc = f.read()
    except FileNotFoundError:
        raise AssertionError("no %s" % DOC_PATH)
    return re.search(r"(?<![\w.])%s(?![\w.])" % re.escape(name), doc) is not None


def add_cases():
    ops, kinds, codes = catalog_ops(), catalog_events(), error_codes()

    @case("the tables were read: ops, event kinds and error codes")
    def tables_read():
        expect(len(ops) >= 7 and "hello" in ops, "ops: %r" % ops)
        expect(len(kinds) >= 7 and "berthd.started" in kinds, "event kinds: %r" % kinds)
        expect(len(codes) >= 12 and "bad_message" in codes, "error codes: %r" % codes)

    for what, names in (("op", ops), ("event kind", kinds), ("error code", codes)):
        for name in names:

            def check(name=name, what=what):
                expect(documented(name), "%s %s is not in docs/protocol.md" % (what, name))

            case("%s %s is documented" % (what, name))(check)


add_cases()
run()
