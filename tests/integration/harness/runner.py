"""The TAP runner: @case("name") functions, run() at the bottom of each
test file; expect()/expect_eq() for failures with good messages; what a
case made (sandboxes, clients, scratch directories) cleaned up whatever
happens, and a sanitizer's report in a sandbox's log failing the case.

$BERTH_TEST_ONLY=WORD runs only the cases whose name contains WORD;
$BERTH_TEST_VERBOSE=1 shows every case's notes and time.
"""

import os
import signal
import sys
import time
import traceback


class TestFailure(AssertionError):
    """A broken promise: the case fails with this message."""


class Timeout(TestFailure):
    """A deadline passed while waiting for something."""


class Skip(Exception):
    """Raised by a case that cannot run here (reported as # SKIP)."""


class CaseTimeout(BaseException):
    """The whole case ran past its time limit (see case(timeout=))."""


_cases = []
_current = None


class _Case:
    """What one running case has made: notes for its diagnostics and
    sandboxes and clients to clean up if the case did not; and the
    transport it is on, in a case run once per transport."""

    def __init__(self, name):
        self.name = name
        self.notes = []
        self.sandboxes = []
        self.closers = []
        self.transport = None

    def body(self, fn, transports):
        """fn(), or fn(transport) for each of transports in turn."""
        if transports is None:
            fn()
            return
        for transport in transports:
            self.transport = transport
            note("on transport %s:" % transport)
            fn(transport)
        self.transport = None

    def where(self):
        """Where a failure came: "", or " on transport T" in a case run
        once per transport."""
        return "" if self.transport is None else " on transport %s" % self.transport

    def cleanup(self):
        for close in reversed(self.closers):
            try:
                close()
            except Exception:
                pass
        for sb in self.sandboxes:
            try:
                sb.close()
            except Exception as e:
                self.notes.append("cleanup of a sandbox failed: %r" % (e,))


def case(name, timeout=90, transports=None):
    """Registers a test case; cases run in the order they are defined.
    With transports, fn takes a transport and runs once for each, in
    turn, as the one case within its one time limit: the case passes if
    it passes on every transport, and a failure says on which it came."""

    def register(fn):
        _cases.append((name, fn, timeout, transports))
        return fn

    return register


def note(msg):
    """Adds a line to the current case's diagnostics (shown on failure)."""
    if _current is not None:
        _current.notes.extend(str(msg).splitlines())


def track_closer(close):
    """close() runs when the current case ends, whatever happened."""
    if _current is not None:
        _current.closers.append(close)


def track_sandbox(sb):
    """sb is closed when the current case ends, and its log is searched
    for sanitizer reports and shown if the case fails."""
    if _current is not None:
        _current.sandboxes.append(sb)


def expect(cond, msg):
    """Fails the case with msg unless cond holds."""
    if not cond:
        raise TestFailure(msg)


def expect_eq(got, want, what):
    if got != want:
        raise TestFailure("%s: expected %r, got %r" % (what, want, got))


def expect_in(item, container, what):
    if item not in container:
        raise TestFailure("%s: %r not in %r" % (what, item, short(container)))


def short(obj, limit=600):
    """repr(obj), cut to about limit characters: for messages."""
    s = repr(obj)
    return s if len(s) <= limit else s[:limit] + "...(%d more)" % (len(s) - limit)


def _diag(lines):
    for line in lines:
        for part in str(line).splitlines() or [""]:
            print("# " + part)


def _alarm_cb(signum, frame):
    raise CaseTimeout("the case ran past its time limit")


# What ASan, UBSan and LSan print; berthd and its children share a log.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                    "runtime error:")


def _sanitizer_report(sandboxes):
    """The first sanitizer line in any sandbox's log, or None: a case whose
    daemons misbehaved under ASan/UBSan fails even if its checks passed."""
    for sb in sandboxes:
        for line in sb.log().splitlines():
            if any(mark in line for mark in SANITIZER_MARKS):
                return line.strip()
    return None


def _default_dispositions():
    """Signals the suite's launcher left ignored (nohup's SIGHUP) go back
    to SIG_DFL, since exec keeps them ignored in every program a case
    starts: tini hands them on to its child, whose shell then cannot trap
    them. SIGPIPE and SIGXFSZ are Python's own, and subprocess restores
    them in a child."""
    for s in signal.valid_signals():
        if s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            if signal.getsignal(s) == signal.SIG_IGN:
                signal.signal(s, signal.SIG_DFL)
        except (OSError, ValueError):
            pass


def run():
    """Runs every registered case and prints TAP; exits 0 if all passed."""
    global _current
    only = os.environ.get("BERTH_TEST_ONLY")
    _default_dispositions()
    signal.signal(signal.SIGALRM, _alarm_cb)
    n = failed = 0
    for name, fn, limit, transports in _cases:
        if only and only not in name:
            continue
        n += 1
        _current = _Case(name)
        started = time.monotonic()
        status, detail, tb = "ok", None, ""
        signal.alarm(limit)
        try:
            _current.body(fn, transports)
        except Skip as e:
            status, detail = "skip", str(e)
        except CaseTimeout:
            status, detail, tb = "not ok", "timed out after %d s" % limit + _current.where(), traceback.format_exc()
        except Exception:
            status, tb = "not ok", traceback.format_exc()
            detail = "failed" + _current.where() if _current.transport else None
        finally:
            signal.alarm(0)
            try:
                _current.cleanup()
            except CaseTimeout:
                pass
        elapsed = time.monotonic() - started
        report = _sanitizer_report(_current.sandboxes)
        if report and status != "not ok":
            status, detail = "not ok", "a sanitizer reported: " + report
        if status == "ok":
            print("ok %d - %s" % (n, name))
        elif status == "skip":
            print("ok %d - %s # SKIP %s" % (n, name, detail))
        else:
            failed += 1
            print("not ok %d - %s" % (n, name))
            if detail:
                _diag([detail])
            _diag(tb.rstrip().splitlines())
            _diag(_current.notes)
            for sb in _current.sandboxes:
                _diag(["--- %s (last lines) ---" % sb.log_path])
                _diag(sb.log_tail(60))
        if os.environ.get("BERTH_TEST_VERBOSE"):
            if status != "not ok":
                _diag(_current.notes)
            _diag(["%.2f s" % elapsed])
        sys.stdout.flush()
        _current = None
    print("1..%d" % n)
    sys.stdout.flush()
    sys.exit(1 if failed else 0)
