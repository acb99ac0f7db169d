"""desktop.input through the gateway, against a real X server: berthd runs
Xvfb and berth-desktop (no window manager), and xevlog (tests/x11), a
small X client holding the input focus over the whole screen, prints
every event that reaches it. Pointer actions arrive where and as sent;
key combos press their keys in order and release them all; type puts any
Unicode text into the window character for character and leaves the
keyboard map as it found it (also when berth-desktop is killed while
typing, and when the map has no spare keycode); bad requests are refused
whole, naming the action, with nothing reaching the window and
berth-desktop unharmed."""

import os
import signal
import sys

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (  # noqa: E402
    XEVLOG,
    Spawned,
    case,
    expect,
    expect_eq,
    expect_in,
    host_pid,
    note,
    run,
    run_program,
    wait_for,
)

W, H = 1280, 800
# Where settle() parks the pointer: no action of a test goes there.
MARKS = ((1, H - 1), (2, H - 1))


def need(*programs):
    """The programs, and xevlog, are part of ./dev test's install."""
    harness.need(*programs)
    expect(os.access(XEVLOG, os.X_OK), "no %s (make check builds it)" % XEVLOG)


class Desk(harness.Desk):
    """A sandbox running Xvfb and berth-desktop, a WebSocket client, and
    xevlog on the display."""

    def __init__(self):
        super().__init__(W, H, desktop_backoff_ms=(200, 500))
        self.mark = 0
        self.pos = (3, 3)

    def ready(self):
        self.ws = self.sb.ws(timeout=30)
        self.wait_serving()
        self.ev = Spawned([XEVLOG], env=self.env)
        expect_eq(self.ev.line(), "READY", "xevlog's first line")

    def wait_serving(self, timeout=30.0):
        """Until desktop.input answers: berth-desktop has X and berthd."""

        def serving():
            r = self.ws.request("desktop.input", {"actions": [{"type": "move", "x": 3, "y": 3}]})
            if not r.get("ok"):
                note("not yet: %r" % (r.get("error"),))
            return r.get("ok")

        wait_for(serving, timeout, "desktop.input answering", 0.1)

    def input(self, *actions, timeout=30.0):
        result = self.ws.call("desktop.input", {"actions": list(actions)}, timeout=timeout)
        expect_eq(result, {"done": len(actions)}, "desktop.input's result")

    def error(self, args):
        """desktop.input that must fail: (code, message)."""
        r = self.ws.request("desktop.input", args)
        expect(not r.get("ok"), "desktop.input succeeded where an error was expected: %r" % (r,))
        return r["error"]["code"], r["error"]["message"]

    def settle(self):
        """Every line xevlog printed since the last settle: the pointer
        goes to a spot of its own, and the lines before that motion are
        returned."""
        self.pos = MARKS[self.mark]
        self.mark ^= 1
        return harness.xevlog_settle(self.ev, self.ws, self.pos)

    def query(self):
        """The keys down (names) and the pointer's modifier mask."""
        status, out, err = run_program([XEVLOG, "--query"], env=self.env)
        expect_eq(status, 0, "xevlog --query (stderr %r)" % err)
        keys = out.splitlines()[0].split()[1:]
        mask = int(out.splitlines()[1].split()[1], 16)
        return keys, mask

    def keymap(self):
        status, out, err = run_program(["xmodmap", "-display", ":%d" % self.display, "-pke"])
        expect_eq(status, 0, "xmodmap -pke (stderr %r)" % err)
        return out

    def desktop_pid(self, other_than=None, timeout=30.0):
        return host_pid(self.sb, "berth-desktop", other_than, timeout)


def typed(lines):
    """The text of the key presses (xevlog's hex UTF-8), in order."""
    out = ""
    for line in lines:
        parts = line.split()
        if parts[0] == "K" and parts[2] != "-":
            out += bytes.fromhex(parts[2]).decode()
    return out


def without_map(lines):
    return [line for line in lines if line != "MAP"]


@case("input: moves, clicks, presses, drags and scrolls arrive where and as sent")
def pointer():
    need("Xvfb", "xdpyinfo")
    desk = Desk()
    with desk:
        desk.input({"type": "move", "x": 100, "y": 200}, {"type": "move", "x": 640, "y": 400},
                   {"type": "move", "x": W - 1, "y": H - 2}, {"type": "move", "x": 0, "y": 0})
        expect_eq(desk.settle(), ["M 100 200", "M 640 400", "M %d %d" % (W - 1, H - 2), "M 0 0"], "moves")

        desk.input({"type": "click", "x": 10, "y": 20}, {"type": "click", "button": "middle"},
                   {"type": "click", "button": "right", "x": 30, "y": 40, "count": 2},
                   {"type": "click", "count": 2}, {"type": "click", "button": "back"},
                   {"type": "click", "button": "forward"}, {"type": "click", "button": 9, "count": 3})
        expect_eq(desk.settle(), [
            "M 10 20", "BP 1 10 20", "BR 1", "BP 2 10 20", "BR 2",
            "M 30 40", "BP 3 30 40", "BR 3", "BP 3 30 40", "BR 3",
            "BP 1 30 40", "BR 1", "BP 1 30 40", "BR 1",
            "BP 8 30 40", "BR 8", "BP 9 30 40", "BR 9"] + ["BP 9 30 40", "BR 9"] * 3, "clicks")

        # A press and a release in requests of their own, with a motion
        # between: the button stays down meanwhile.
        desk.input({"type": "down", "button": "right"})
        x, y = desk.pos
        expect_eq(desk.settle(), ["BP 3 %d %d" % (x, y)], "the press where the pointer was")
        keys, mask = desk.query()
        expect(mask & 0x400, "button 3 is not down (mask 0x%x)" % mask)
        desk.input({"type": "move", "x": 50, "y": 60}, {"type": "up", "button": 3})
        expect_eq(desk.settle(), ["M 50 60", "BR 3"], "motion and release")
        keys, mask = desk.query()
        expect_eq(mask & 0x1f00, 0, "buttons down after the release (mask 0x%x)" % mask)

        desk.input({"type": "drag", "from": {"x": 100, "y": 100}, "to": {"x": 200, "y": 150}, "steps": 4})
        expect_eq(desk.settle(), ["M 100 100", "BP 1 100 100", "M 125 112", "M 150 125", "M 175 137",
                                  "M 200 150", "BR 1"], "a drag in 4 steps")
        desk.input({"type": "drag", "from": {"x": 300, "y": 300}, "to": {"x": 310, "y": 300},
                    "button": "middle", "steps": 1})
        expect_eq(desk.settle(), ["M 300 300", "BP 2 300 300", "M 310 300", "BR 2"], "a middle-button drag")

        desk.input({"type": "scroll", "dy": 3, "x": 500, "y": 300}, {"type": "scroll", "dy": -2},
                   {"type": "scroll", "dx": 2}, {"type": "scroll", "dx": -1, "dy": 1})
        expect_eq(desk.settle(), ["M 500 300"] + ["BP 5 500 300", "BR 5"] * 3 + ["BP 4 500 300", "BR 4"] * 2 +
                  ["BP 7 500 300", "BR 7"] * 2 + ["BP 5 500 300", "BR 5", "BP 6 500 300", "BR 6"],
                  "scrolls: down, up, right, then down and left")


@case("input: key combos press their keys in order, release them in reverse; nothing stays down")
def keys():
    need("Xvfb", "xdpyinfo")
    desk = Desk()
    with desk:
        desk.input({"type": "key", "combo": "ctrl+shift+t"})
        expect_eq(desk.settle(), ["K Control_L -", "K Shift_L -", "K T 14", "KR T", "KR Shift_L", "KR Control_L"],
                  "ctrl+shift+t")
        expect_eq(desk.query(), ([], 0), "keys down and modifiers after ctrl+shift+t")

        desk.input({"type": "key", "combo": "alt+F4"}, {"type": "key", "combo": "Return"},
                   {"type": "key", "combo": "enter"}, {"type": "key", "combo": "SUPER"},
                   {"type": "key", "combo": "Control+a"}, {"type": "key", "combo": "A"},
                   {"type": "key", "combo": "ctrl++"}, {"type": "key", "combo": "esc"},
                   {"type": "key", "combo": "f12"}, {"type": "key", "combo": "PageUp"},
                   {"type": "key", "combo": "BackSpace"}, {"type": "key", "combo": "\u00e9"})
        lines = without_map(desk.settle())
        expect_eq(lines, [
            "K Alt_L -", "K F4 -", "KR F4", "KR Alt_L",
            "K Return 0d", "KR Return", "K Return 0d", "KR Return",
            "K Super_L -", "KR Super_L",
            "K Control_L -", "K a 01", "KR a", "KR Control_L",
            # A keysym at the second level gets shift.
            "K Shift_L -", "K A 41", "KR A", "KR Shift_L",
            "K Control_L -", "K Shift_L -", "K plus 2b", "KR plus", "KR Shift_L", "KR Control_L",
            "K Escape 1b", "KR Escape", "K F12 -", "KR F12", "K Prior -", "KR Prior",
            "K BackSpace 08", "KR BackSpace",
            # Not in the map: bound to a spare keycode for the while.
            "K eacute c3a9", "KR eacute"], "the combos")
        expect_eq(desk.query(), ([], 0), "keys down and modifiers after the combos")

        # Held across requests: key_down and key_up.
        desk.input({"type": "key_down", "key": "shift"}, {"type": "key", "combo": "b"})
        expect_eq(desk.settle(), ["K Shift_L -", "K B 42", "KR B"], "b with shift held")
        expect_eq(desk.query(), (["Shift_L"], 0x1), "keys down while shift is held")
        desk.input({"type": "key_up", "key": "Shift_L"})
        expect_eq(desk.settle(), ["KR Shift_L"], "shift released")
        expect_eq(desk.query(), ([], 0), "keys down after key_up")


@case("input: type puts ASCII and any Unicode text in the window, and the keyboard map is as before", timeout=180)
def typing():
    need("Xvfb", "xdpyinfo", "xmodmap")
    desk = Desk()
    with desk:
        before = desk.keymap()
        ascii_text = "Hello, World! 0123456789 ~`@#$%^&*()_+-=[]{}|;':\",./<>?\\ The End"
        desk.input({"type": "type", "text": ascii_text})
        lines = desk.settle()
        expect_eq(typed(lines), ascii_text, "ASCII typed")
        expect("MAP" not in lines, "the map changed to type ASCII")

        for text in ("h\u00e9llo \u2192 \u2713", "\U0001f600\U0001f389\U0001f44d", "\u4e2d\u6587\u5b57\u7b26\u30c6\u30b9\u30c8",
                     "na\u00efve caf\u00e9 \u00c5ngstr\u00f6m \u0416\u0436 \u03a9 \u20ac5"):
            desk.input({"type": "type", "text": text})
            expect_eq(typed(desk.settle()), text, "typed %r" % text)
            expect_eq(desk.keymap(), before, "the keyboard map after typing %r" % text)

        # More distinct characters than there are spare keycodes (a few
        # dozen), control characters as keys, and a delay between keys.
        many = "".join(chr(0x4E00 + i) for i in range(120))
        desk.input({"type": "type", "text": many + "\u00e9\U0001f600"})
        expect_eq(typed(desk.settle()), many + "\u00e9\U0001f600", "120 CJK characters")
        desk.input({"type": "type", "text": "a\tb\nc\r\nd", "delay_ms": 20}, {"type": "type", "text": ""})
        expect_eq(typed(desk.settle()), "a\tb\rc\rd", "tab and newlines (\\r\\n is one Return)")
        expect_eq(desk.keymap(), before, "the keyboard map after the long text")
        expect_eq(desk.query(), ([], 0), "keys down and modifiers after typing")

        # Held modifiers and Caps Lock do not change what is typed, and
        # are as they were afterwards.
        desk.input({"type": "key_down", "key": "ctrl"}, {"type": "key_down", "key": "shift"},
                   {"type": "type", "text": "aB\u00e9"})
        expect_eq(typed(desk.settle()), "aB\u00e9", "typed with ctrl and shift held")
        expect_eq(desk.query(), (["Control_L", "Shift_L"], 0x5), "held keys after typing")
        desk.input({"type": "key_up", "key": "shift"}, {"type": "key_up", "key": "ctrl"},
                   {"type": "key", "combo": "Caps_Lock"})
        desk.settle()
        expect_eq(desk.query()[1], 0x2, "Caps Lock locked")
        desk.input({"type": "type", "text": "abC"})
        expect_eq(typed(desk.settle()), "abC", "typed with Caps Lock on")
        expect_eq(desk.query(), ([], 0x2), "Caps Lock still locked, nothing down")
        desk.input({"type": "key", "combo": "Caps_Lock"})
        desk.settle()
        expect_eq(desk.query(), ([], 0), "Caps Lock unlocked")
        expect_eq(desk.keymap(), before, "the keyboard map at the end")


@case("input: with no spare keycode, text outside the map is unavailable and nothing is typed")
def no_spares():
    need("Xvfb", "xdpyinfo", "xmodmap")
    desk = Desk()
    with desk:
        before = desk.keymap()
        empty = [line.split()[1] for line in before.splitlines() if line.split("=")[1].strip() == ""]
        note("empty keycodes: %s" % " ".join(empty))
        expect(len(empty) > 2, "the map has no empty keycodes to fill")
        filler = " ".join("-e 'keycode %s = F35'" % kc for kc in empty)
        status, _, err = run_program(["sh", "-c", "xmodmap -display :%d %s" % (desk.display, filler)])
        expect_eq(status, 0, "xmodmap filling the spares (stderr %r)" % err)
        desk.settle()

        code, message = desk.error({"actions": [{"type": "type", "text": "abc"},
                                                {"type": "type", "text": "x\u00e9y"}]})
        expect_eq(code, "unavailable", "the error for text outside a full map (%s)" % message)
        expect_in("actions[1]", message, "the message")
        expect_in("U+00E9", message, "the message")
        expect_eq(desk.settle(), [], "what reached the window")
        desk.input({"type": "type", "text": "still types ASCII"})
        expect_eq(typed(desk.settle()), "still types ASCII", "ASCII with a full map")

        restore = " ".join("-e 'keycode %s ='" % kc for kc in empty)
        status, _, err = run_program(["sh", "-c", "xmodmap -display :%d %s" % (desk.display, restore)])
        expect_eq(status, 0, "xmodmap emptying the spares (stderr %r)" % err)
        expect_eq(desk.keymap(), before, "the map emptied again")


@case("input: berth-desktop killed while typing; the one berthd starts again gives the spare keycodes back")
def killed_while_typing():
    need("Xvfb", "xdpyinfo", "xmodmap", "xprop")
    desk = Desk()
    with desk:
        before = desk.keymap()
        pid = desk.desktop_pid()
        text = "\u00e9\u2713\U0001f600\u4e2d" * 20
        msg_id = desk.ws.send_request("desktop.input", {"actions": [{"type": "type", "text": text, "delay_ms": 100}]})
        # Typing has begun once the first character arrived.
        wait_for(lambda: desk.ev.line().startswith("K eacute"), 10, "the first character typed")
        os.kill(pid, signal.SIGKILL)
        r = desk.ws.response(msg_id, timeout=10)
        note("the answer to the interrupted request: %r" % (r,))
        expect(not r.get("ok"), "the interrupted request succeeded")
        left = desk.keymap()
        expect(left != before, "the killed berth-desktop left no binding behind: the case proves nothing")
        status, out, _ = run_program(["xprop", "-display", ":%d" % desk.display, "-root", "_BERTH_INPUT_KEYS"])
        note("xprop: %s" % out.strip())
        expect_in("CARDINAL", out, "the root's list of bound keycodes")

        desk.desktop_pid(other_than=pid)
        desk.wait_serving()
        desk.input({"type": "type", "text": "x\u00e9"})
        expect_eq(typed(desk.settle())[-2:], "x\u00e9", "typed after the restart")
        expect_eq(desk.keymap(), before, "the keyboard map after the restart's first type")
        expect_in("left bound by a berth-desktop that stopped", desk.sb.log(), "berth-desktop's log")


def raw_request(desk, args):
    """desktop.input with args packed as the old msgpack spec does, where
    bytes are strings: a way to send a str that is not UTF-8."""
    msg_id = desk.ws._next_id
    desk.ws._next_id += 1
    desk.ws.send_raw(msgpack.packb({"type": "request", "id": msg_id, "op": "desktop.input", "args": args},
                                   use_bin_type=False))
    r = desk.ws.response(msg_id)
    expect(not r.get("ok"), "desktop.input succeeded where an error was expected: %r" % (r,))
    return r["error"]["code"], r["error"]["message"]


@case("input: bad requests are refused whole, naming the action; nothing reaches the window; unknown keys are ignored")
def bad_input():
    need("Xvfb", "xdpyinfo", "xmodmap")
    desk = Desk()
    with desk:
        before = desk.keymap()
        pid = desk.desktop_pid()
        # Good actions first: none of them may be performed.
        good = [{"type": "move", "x": 100, "y": 100}, {"type": "click"}, {"type": "type", "text": "h\u00e9"},
                {"type": "key", "combo": "ctrl+a"}]
        cases = [
            ({"type": "key", "combo": "ctrl+nosuchkey"}, "nosuchkey"),
            ({"type": "key", "combo": "ctrl+"}, "empty key name"),
            ({"type": "key_down", "key": "hyperdrive"}, "hyperdrive"),
            ({"type": "move", "x": "10", "y": "20"}, '"x" must be an integer'),
            ({"type": "move", "x": 10}, '"y" is missing'),
            ({"type": "move", "x": 10.5, "y": 20}, '"x" must be an integer'),
            ({"type": "move", "x": W, "y": 20}, "outside the screen"),
            ({"type": "move", "x": -1, "y": 20}, '"x" must be an integer'),
            ({"type": "down", "button": 0}, '"button"'),
            ({"type": "up", "button": 10}, '"button"'),
            ({"type": "click", "button": "huge"}, '"button"'),
            ({"type": "click", "count": 4}, '"count"'),
            ({"type": "click", "x": 5}, "together"),
            ({"type": "drag", "from": {"x": 1, "y": 1}, "to": [2, 2]}, '"to"'),
            ({"type": "drag", "from": {"x": 1, "y": 1}, "to": {"x": 2, "y": H}}, "outside the screen"),
            ({"type": "scroll", "dy": 101}, '"dy"'),
            ({"type": "scroll"}, '"dx" or "dy"'),
            ({"type": "type", "text": b"bytes"}, '"text" must be a string'),
            ({"type": "type", "text": 5}, '"text" must be a string'),
            ({"type": "type", "text": "bell\a"}, "U+0007"),
            ({"type": "type", "text": "x" * 10001}, "10000"),
            ({"type": "type", "text": "ab", "delay_ms": 1001}, '"delay_ms"'),
            ({"type": "type", "text": "x" * 200, "delay_ms": 100}, "delays add up to 19900 ms"),
            ({"type": "teleport"}, '"type" must be one of'),
            ({"type": 5}, '"type" must be a string'),
            ({"x": 5}, '"type" is missing'),
            ("move", "must be a map"),
        ]
        for bad, words in cases:
            code, message = desk.error({"actions": good + [bad]})
            what = repr(bad)[:80]
            note("%s: %s" % (what, message))
            expect_eq(code, "bad_args", "the error for %s (%s)" % (what, message))
            expect_in("actions[%d]" % len(good), message, "the message for %s" % what)
            expect_in(words, message, "the message for %s" % what)

        for args, words in (({}, '"actions"'), ({"actions": []}, '"actions"'),
                            ({"actions": {"type": "move", "x": 1, "y": 1}}, '"actions"'),
                            ({"actions": [{"type": "move", "x": 1, "y": 1}] * 257}, "1-256")):
            code, message = desk.error(args)
            expect_eq(code, "bad_args", "the error for %r (%s)" % (str(args)[:60], message))
            expect_in(words, message, "the message")

        # A str that is not UTF-8, in the text and in a combo.
        for bad, words in (({"type": "type", "text": b"ab\xff\xfecd"}, "not valid UTF-8 (at byte 2)"),
                           ({"type": "type", "text": b"\xed\xa0\x80"}, "not valid UTF-8"),
                           ({"type": "type", "text": b"\xc0\xaf"}, "not valid UTF-8"),
                           ({"type": "key", "combo": b"ctrl+\xff"}, "not valid UTF-8")):
            code, message = raw_request(desk, {"actions": [{"type": "move", "x": 100, "y": 100}, bad]})
            note("%r: %s" % (bad, message))
            expect_eq(code, "bad_args", "the error for %r" % (bad,))
            expect_in("actions[1]", message, "the message")
            expect_in(words, message, "the message")

        expect_eq(desk.settle(), [], "what reached the window (MAP would be a change of the map)")
        expect_eq(desk.keymap(), before, "the keyboard map")
        expect_eq(desk.query(), ([], 0), "keys down and modifiers")
        expect_eq(desk.desktop_pid(), pid, "berth-desktop's pid")
        desk.input(*good)
        expect_eq(typed(desk.settle()), "h\u00e9\x01", "the good actions alone")
        # Unknown keys, of the request and of an action, are ignored.
        extra = dict(good[2], speed=3)
        r = desk.ws.call("desktop.input", {"actions": [extra], "speed": 3})
        expect_eq(r, {"done": 1}, "desktop.input with unknown keys")
        expect_eq(typed(desk.settle()), "h\u00e9", "what the action with an unknown key typed")


run()
