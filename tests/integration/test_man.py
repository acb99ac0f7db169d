#!/usr/bin/python3
"""The manual pages: each renders without a warning (mandoc's lint, and
man -l through groff), and each says what the program it documents
really takes: every option of berthd's and the gateway's usage, every
command and option `berth help` lists, every config key docs/operations.md
documents (and config.c accepts), in its section. So a page cannot drift
from the code."""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BUILDDIR, SRCDIR, case, expect, expect_eq, run  # noqa: E402

PAGES = ("berth.1", "berth.conf.5", "berthd.8", "berth-gateway.8")


def page(name):
    with open(os.path.join(SRCDIR, "man", name)) as f:
        return f.read()


def usage(prog, *args):
    """What a built program prints for a bad option: its usage."""
    p = subprocess.run([os.path.join(BUILDDIR, prog)] + list(args), capture_output=True, text=True, timeout=10)
    out = p.stdout + p.stderr
    return out[out.find("usage:"):]


def options(text):
    """The long options a usage text names."""
    return sorted(set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", text)))


def named(src, word, macro="Fl"):
    """Whether a macro line of an mdoc source names word with macro (Fl
    -x, Cm x), alone or in a list of them after it."""
    return re.search(r"^\.[^\n]*\b%s [^\n]*?(?<![\w-])%s(?![\w-])" % (macro, re.escape(word)), src, re.M) is not None


@case("each page passes mandoc's lint and renders through man -l without a warning")
def t_lint():
    for name in PAGES:
        path = os.path.join(SRCDIR, "man", name)
        p = subprocess.run(["mandoc", "-Tlint", "-W", "warning", path], capture_output=True, text=True)
        expect_eq((p.returncode, p.stdout + p.stderr), (0, ""), "mandoc -Tlint %s" % name)
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
        p = subprocess.run(["man", "--warnings", "-l", path], capture_output=True, text=True, env=env)
        expect_eq((p.returncode, p.stderr), (0, ""), "man -l %s" % name)
        title = name.rsplit(".", 1)[0].upper()
        expect(title in p.stdout and "NAME" in p.stdout, "%s rendered has no title or NAME: %r" % (name, p.stdout[:200]))


@case("berthd(8) and berth-gateway(8) name every option of their program's usage, and no other")
def t_daemons():
    for prog, name in (("berthd", "berthd.8"), ("berth-gateway", "berth-gateway.8")):
        want = options(usage(prog, "--no-such-option"))
        expect(len(want) >= 5, "%s's usage was not read: %r" % (prog, want))
        src = page(name)
        missing = [o for o in want if not named(src, "-" + o)]
        expect_eq(missing, [], "options of %s's usage missing from %s" % (prog, name))
        extra = sorted(set(o for o in re.findall(r"\bFl -([a-z][a-z0-9-]*)", src) if o not in want))
        expect_eq(extra, [], "options in %s that %s does not take" % (name, prog))


@case("berth(1) names every command and every global option of `berth help`")
def t_cli():
    text = usage("berth", "help")
    commands = re.search(r"^commands:\n(.*?)^options:", text, re.M | re.S)
    expect(commands is not None, "berth help has no commands and options: %r" % text[:300])
    words = sorted(set(re.findall(r"^  ([a-z][a-z-]*)", commands.group(1), re.M)))
    expect(len(words) >= 20, "berth help's commands were not read: %r" % words)
    src = page("berth.1")
    missing = [w for w in words if not named(src, w, "Cm")]
    expect_eq(missing, [], "commands of berth help missing from berth.1")
    opts = options(text[commands.end():])
    missing = [o for o in opts if not named(src, "-" + o)]
    expect_eq(missing, [], "global options of berth help missing from berth.1")


def documented_keys():
    """{section: keys} of docs/operations.md's tables of the config file
    and of the runtimes' keys: each row's section (kept from the row
    above when empty) and its backquoted keys."""
    with open(os.path.join(SRCDIR, "docs", "operations.md")) as f:
        doc = f.read()
    keys = {}
    table = re.search(r"^## The config file\n(.*?)^### ", doc, re.M | re.S).group(1)
    section = None
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or cells[0] == "section" or cells[0].startswith("-"):
            continue
        if cells[0]:
            section = re.match(r"`\[(\w+)", cells[0]).group(1)
        if section != "labels":
            keys.setdefault(section, set()).update(re.findall(r"`(\w+)`", cells[1]))
    runtimes = re.search(r"^## Agent runtimes\n(.*?)^## ", doc, re.M | re.S).group(1)
    for row in re.findall(r"^\| (`\w+`(?:, `\w+`)*) \|", runtimes, re.M):
        keys.setdefault("runtime", set()).update(re.findall(r"`(\w+)`", row))
    return keys


def man_sections(src):
    """{section: its text} of berth.conf.5's .Ss blocks."""
    parts = re.split(r"^\.Ss \[?(\w+)[^\n]*\n", src, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


@case("berth.conf(5) names every key docs/operations.md documents, in its section, and every key config.c accepts")
def t_conf():
    keys = documented_keys()
    expect(set(keys) >= {"berthd", "gateway", "journal", "service", "check", "runtime"},
           "the docs' sections were not read: %r" % sorted(keys))
    expect(sum(len(v) for v in keys.values()) >= 70, "the docs' keys were not read: %r" % keys)
    src = page("berth.conf.5")
    sections = man_sections(src)
    for section, want in sorted(keys.items()):
        expect(section in sections, "berth.conf.5 has no section [%s]" % section)
        missing = sorted(k for k in want if not named(sections[section], k, "Cm"))
        expect_eq(missing, [], "keys of [%s] missing from berth.conf.5" % section)
    with open(os.path.join(SRCDIR, "supervisor", "config.c")) as f:
        accepted = set(re.findall(r'strcmp\(key, "(\w+)"\)', f.read()))
    expect(len(accepted) >= 40, "config.c's keys were not read: %r" % sorted(accepted))
    missing = sorted(k for k in accepted if not named(src, k, "Cm"))
    expect_eq(missing, [], "keys config.c accepts missing from berth.conf.5")


run()
