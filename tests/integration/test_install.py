#!/usr/bin/python3
"""make install lays out a system (into a DESTDIR): berthd in sbin, berth
in bin, the helper programs in libexec/berth, the images' configs in
etc/berth (the desktop's only where it is built) with berth.conf the
default one, the manual pages and the docs; a berth.conf an operator
changed is kept by a second install and by uninstall, which removes
everything else."""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BUILDDIR, SRCDIR, case, expect, expect_eq, run, scratch  # noqa: E402

HELPERS = ("berth-gateway", "berth-probe", "berth-workspace", "berth-disk", "berth-vt")
DESKTOP_HELPERS = ("berth-desktop", "berth-xfce", "berth-chromium", "berth-xserver")
PAGES = ("man1/berth.1", "man5/berth.conf.5", "man8/berthd.8", "man8/berth-gateway.8")
DOCS = ("protocol.md", "operations.md", "architecture.md")


# A make of its own, not a part of the make check that runs this: none of
# its flags (a jobserver, directory messages) passed on.
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}


def make(target, destdir):
    p = subprocess.run(["make", "-s", "-C", BUILDDIR, target, "DESTDIR=" + destdir], capture_output=True, text=True,
                       timeout=300, env=ENV)
    expect_eq(p.returncode, 0, "make %s: %s" % (target, p.stderr[-2000:]))


def configured(var):
    """A directory variable of the build's Makefile, expanded."""
    p = subprocess.run(["make", "-s", "-C", BUILDDIR, "--no-print-directory", "-f", "Makefile", "-f", "-",
                        "print-var"], input="print-var:\n\t@echo $(%s)\n" % var, capture_output=True, text=True,
                       timeout=60, env=ENV)
    expect_eq(p.returncode, 0, "make's %s: %s" % (var, p.stderr))
    return p.stdout.strip()


def files(root):
    out = set()
    for d, _, names in os.walk(root):
        out.update(os.path.relpath(os.path.join(d, n), root) for n in names)
    return out


@case("make install: programs, helpers, configs, pages and docs where a system has them; uninstall leaves nothing")
def t_layout():
    desktop = os.access(os.path.join(BUILDDIR, "berth-desktop"), os.X_OK)
    dirs = {v: configured(v).lstrip("/") for v in ("sbindir", "bindir", "pkglibexecdir", "sysconfdir", "mandir",
                                                   "docdir")}
    root = scratch(0o755)
    make("install", root)
    want = {os.path.join(dirs["sbindir"], "berthd"), os.path.join(dirs["bindir"], "berth")}
    want |= {os.path.join(dirs["pkglibexecdir"], h) for h in HELPERS + (DESKTOP_HELPERS if desktop else ())}
    conf = os.path.join(dirs["sysconfdir"], "berth")
    want |= {os.path.join(conf, c) for c in ("minimal.conf", "berth.conf") + (("desktop.conf",) if desktop else ())}
    want |= {os.path.join(dirs["mandir"], p) for p in PAGES}
    want |= {os.path.join(dirs["docdir"], d) for d in DOCS}
    expect_eq(sorted(files(root) - want), [], "installed beyond the layout")
    expect_eq(sorted(want - files(root)), [], "missing from the installed layout")
    for prog in [os.path.join(dirs["sbindir"], "berthd"), os.path.join(dirs["bindir"], "berth")] + \
            [os.path.join(dirs["pkglibexecdir"], h) for h in HELPERS]:
        expect(os.access(os.path.join(root, prog), os.X_OK), "%s is not executable" % prog)
    with open(os.path.join(root, conf, "berth.conf")) as f, \
            open(os.path.join(SRCDIR, "images", "desktop" if desktop else "minimal", "berth.conf")) as g:
        expect_eq(f.read(), g.read(), "berth.conf: the %s image's" % ("desktop" if desktop else "minimal"))
    make("uninstall", root)
    expect_eq(sorted(files(root)), [], "left after make uninstall")
    shutil.rmtree(root)


@case("an operator's berth.conf survives a second make install and make uninstall")
def t_operator_conf():
    root = scratch(0o755)
    conf = os.path.join(root, configured("sysconfdir").lstrip("/"), "berth", "berth.conf")
    make("install", root)
    with open(conf, "a") as f:
        f.write("\n[labels]\nsite = ours\n")
    with open(conf) as f:
        ours = f.read()
    make("install", root)
    with open(conf) as f:
        expect_eq(f.read(), ours, "berth.conf after a second install")
    make("uninstall", root)
    expect_eq(sorted(files(root)), [os.path.relpath(conf, root)], "left after uninstall: the operator's config only")
    shutil.rmtree(root)


run()
