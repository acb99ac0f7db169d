#!/usr/bin/python3
"""The Debian packages, built from the tree as make dist carries it
(dpkg-buildpackage -us -uc -b): berth, the core, without any X11 or
FFmpeg library among its dependencies, and berth-desktop, with the
desktop's programs and what they run; each one's files as the layout
says, its library dependencies from ${shlibs:Depends} (present, and
nothing of them written by hand in debian/control), the users made by
their maintainer scripts, and lintian clean (each remaining tag
explained in an override file)."""

import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BUILDDIR, SRCDIR, case, expect, expect_eq, note, run, scratch  # noqa: E402

CORE = {
    "etc/berth/minimal.conf", "usr/bin/berth", "usr/sbin/berthd",
    "usr/libexec/berth/berth-gateway", "usr/libexec/berth/berth-probe", "usr/libexec/berth/berth-workspace",
    "usr/libexec/berth/berth-disk", "usr/libexec/berth/berth-vt",
    "usr/share/man/man1/berth.1.gz", "usr/share/man/man5/berth.conf.5.gz", "usr/share/man/man8/berthd.8.gz",
    "usr/share/man/man8/berth-gateway.8.gz",
    "usr/share/doc/berth/protocol.md.gz", "usr/share/doc/berth/operations.md.gz",
    "usr/share/doc/berth/architecture.md.gz", "usr/share/doc/berth/README.Debian",
    "usr/share/doc/berth/changelog.gz", "usr/share/doc/berth/copyright",
}
DESKTOP = {
    "etc/berth/desktop.conf", "usr/libexec/berth/berth-desktop", "usr/libexec/berth/berth-xfce",
    "usr/libexec/berth/berth-chromium", "usr/libexec/berth/berth-xserver",
    "usr/share/doc/berth-desktop/changelog.gz", "usr/share/doc/berth-desktop/copyright",
    "usr/share/lintian/overrides/berth-desktop",
}
DESKTOP_DEPENDS = {"tigervnc-standalone-server", "xfwm4", "xfce4-panel", "xfdesktop4", "xfce4-settings", "chromium",
                   "novnc", "dbus", "xfonts-base"}
# Libraries of the desktop alone: none may be the core's.
DESKTOP_ONLY_LIBS = re.compile(r"^lib(x11|xtst|xext|xfixes|xdamage|xrandr|avcodec|avformat|avutil|swscale)")


# Programs of their own, not parts of the make check that runs this: none
# of its make flags (a jobserver, directory messages) passed on.
ENV = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}


def sh(argv, cwd=None, timeout=900):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=ENV)
    return p.returncode, p.stdout, p.stderr


def deb_field(deb, field):
    return sh(["dpkg-deb", "-f", deb, field])[1].strip()


def deb_files(deb):
    rc, out, _ = sh(["dpkg-deb", "-c", deb])
    expect_eq(rc, 0, "dpkg-deb -c %s" % deb)
    return {line.split()[-1].lstrip("./") for line in out.splitlines() if not line.endswith("/")}


def deb_script(deb, name):
    d = scratch(0o755)
    expect_eq(sh(["dpkg-deb", "-e", deb, d])[0], 0, "dpkg-deb -e %s" % deb)
    with open(os.path.join(d, name)) as f:
        return f.read()


def depends(deb):
    """The package names of deb's Depends, alternatives included."""
    return {re.split(r"[ (]", alt.strip())[0] for dep in deb_field(deb, "Depends").split(",")
            for alt in dep.split("|") if alt.strip()}


def build():
    """The packages built from make distdir's tree: {name: path}."""
    d = scratch(0o755)
    tree = os.path.join(d, "berth")
    rc, _, err = sh(["make", "-s", "-C", BUILDDIR, "distdir", "distdir=" + tree])
    expect_eq(rc, 0, "make distdir: %s" % err[-1500:])
    rc, out, err = sh(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=tree)
    if rc != 0:
        note((out + err)[-4000:])
    expect_eq(rc, 0, "dpkg-buildpackage -us -uc -b")
    debs = {os.path.basename(p).split("_")[0]: p for p in glob.glob(os.path.join(d, "*.deb"))}
    debs["changes"] = glob.glob(os.path.join(d, "*.changes"))[0]
    return debs


@case("dpkg-buildpackage builds berth and berth-desktop: each with its files, the core free of X11 and FFmpeg, "
      "libraries from shlibs, users made by the packages, lintian clean", 1200)
def t_packages():
    with open(os.path.join(SRCDIR, "debian", "control")) as f:
        control = f.read()
    expect("${shlibs:Depends}" in control and not re.search(r"^Depends:.*\blib[a-z0-9-]+\d", control, re.M),
           "debian/control names libraries by hand instead of ${shlibs:Depends}")
    debs = build()
    expect({"berth", "berth-desktop"} <= set(debs), "the packages built: %r" % sorted(debs))
    expect_eq(sorted(deb_files(debs["berth"]) ^ CORE), [], "berth's files against the layout")
    expect_eq(sorted(deb_files(debs["berth-desktop"]) ^ DESKTOP), [], "berth-desktop's files against the layout")
    core = depends(debs["berth"])
    libs = {"libc6", "libevent-2.1-7", "libmsgpackc2", "libwebsockets17", "libseccomp2", "libvterm0"}
    expect_eq(sorted(libs - core), [], "berth's library dependencies (from shlibs) missing")
    expect_eq(sorted(d for d in core if DESKTOP_ONLY_LIBS.match(d)), [], "X11 or FFmpeg libraries in berth's Depends")
    desk = depends(debs["berth-desktop"])
    expect_eq(sorted(DESKTOP_DEPENDS - desk), [], "the desktop's programs missing from berth-desktop's Depends")
    expect(any(DESKTOP_ONLY_LIBS.match(d) for d in desk) and "berth" in desk,
           "berth-desktop's Depends: its libraries (from shlibs) and berth: %r" % sorted(desk))
    expect("adduser --system" in deb_script(debs["berth"], "postinst") and
           "berth-gateway" in deb_script(debs["berth"], "postinst"), "berth's postinst makes the gateway's user")
    expect("agent" in deb_script(debs["berth-desktop"], "postinst"), "berth-desktop's postinst makes the agent user")
    rc, out, err = sh(["lintian", "--fail-on", "error,warning", debs["changes"]])
    out = "\n".join(line for line in (out + err).splitlines() if "running with root privileges" not in line)
    expect_eq((rc, out.strip()), (0, ""), "lintian")


run()
