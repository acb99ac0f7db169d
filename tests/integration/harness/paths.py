"""Where the programs and the sources are: programs from $BERTH_BUILDDIR
(default: the current directory), sources from $BERTH_SRCDIR (default:
three levels above this file)."""

import os

SRCDIR = os.environ.get("BERTH_SRCDIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
)
BUILDDIR = os.path.abspath(os.environ.get("BERTH_BUILDDIR") or os.getcwd())

BERTHD = os.path.join(BUILDDIR, "berthd")
GATEWAY = os.path.join(BUILDDIR, "berth-gateway")
CLI = os.path.join(BUILDDIR, "berth")
DESKTOP = os.path.join(BUILDDIR, "berth-desktop")
XPAINT = os.path.join(BUILDDIR, "tests", "x11", "xpaint")
XEVLOG = os.path.join(BUILDDIR, "tests", "x11", "xevlog")
MINIMAL_CONF = os.path.join(SRCDIR, "images", "minimal", "berth.conf")
# A program of the harness's own, run by the kill tests and bench/kill.sh.
FORKBOMB = os.path.join(SRCDIR, "tests", "integration", "harness", "forkbomb.py")
