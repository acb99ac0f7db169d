"""docs/protocol.md mirrors the code: every op of protocol/catalog_ops.def,
every event kind of protocol/catalog.c and every error code of
protocol/proto.h is in it."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import SRCDIR, case, expect, run  # noqa: E402


sys.path.insert(0, os.path.join(SRCDIR, "protocol"))
import schema_check  # noqa: E402


def catalog_ops():
    return [row["name"] for row in schema_check.catalog_ops(SRCDIR)]


def catalog_events():
    return schema_check.catalog_events(SRCDIR)


def error_codes():
    return schema_check.error_codes(SRCDIR)


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
