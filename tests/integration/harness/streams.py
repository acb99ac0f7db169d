"""What arrives on a connection, checked as it is read: EventStream, a
subscriber that checks every seq across reconnections; pty_chunks,
pty_read and read_to_eof, data streams checked offset by offset."""

import itertools
import time

from .clients import Closed, UnixClient
from .runner import TestFailure, Timeout, expect, expect_eq, note, short


_peer_serial = itertools.count(1)


def generate_events(sb, n, peer="127.0.0.1:1", reason="invalid", batch=256):
    """Journals n auth.failed events quickly, through the local op the
    gateway uses, pipelined over one Unix connection. Returns the last
    seq journaled. berthd journals one event per peer per interval, so
    each event names a peer of its own, as long as peer."""
    c = UnixClient(sb.socket, timeout=30)
    try:
        done = 0
        while done < n:
            ids = []
            for _ in range(min(batch, n - done)):
                tail = str(next(_peer_serial))
                args = {"peer": (peer[: -len(tail)] + tail) if len(peer) > len(tail) else peer + tail,
                        "reason": reason}
                ids.append(c.send_request("gateway.auth_failed", args))
            for msg_id in ids:
                m = c.response(msg_id)
                expect(m.get("ok"), "gateway.auth_failed failed: %r" % (m,))
            done += len(ids)
        return c.call("state")["last_seq"]
    finally:
        c.close()


class EventStream:
    """What one logical subscriber received, across connections: each
    event must carry the next seq (no gap, no duplicate, no events.gap)."""

    def __init__(self):
        self.events = []

    @property
    def next_seq(self):
        return self.events[-1]["seq"] + 1 if self.events else 1

    def take(self, ev):
        expect(ev["kind"] != "events.gap", "an events.gap: %r" % ev)
        expect_eq(ev["seq"], self.next_seq, "the seq after %d" % (self.next_seq - 1))
        self.events.append(ev)
        return ev

    def read(self, c, until_seq, timeout=10):
        """Reads from c until until_seq is in; Closed if c drops first."""
        deadline = time.monotonic() + timeout
        while self.next_seq <= until_seq:
            self.take(c.next_event(max(deadline - time.monotonic(), 0.01)))

    def drain(self, c, timeout=10):
        """Reads from c until it is closed; returns the close code."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                m = c.recv(max(deadline - time.monotonic(), 0.01))
            except Closed as e:
                return e.code
            if m.get("type") == "event":
                self.take(m)

    def follow(self, sb, until_seq, timeout=20):
        """Reads until until_seq as a real client does: reconnecting and
        resuming from the next seq whenever the connection ends."""
        deadline = time.monotonic() + timeout
        stuck = 0
        while self.next_seq <= until_seq:
            c = sb.ws_retry(max(deadline - time.monotonic(), 0.01))
            start = self.next_seq
            c.subscribe(start)
            closed = None
            try:
                self.read(c, until_seq, max(deadline - time.monotonic(), 0.01))
            except Closed as e:
                closed = e
            c.close()
            if closed is not None:
                note("resumed after close code %s at seq %d" % (closed.code, self.next_seq))
                stuck = stuck + 1 if self.next_seq == start else 0
                expect(
                    stuck < 5,
                    "no progress: closed %d times in a row (code %s) before the first event from seq %d"
                    % (stuck, closed.code, start),
                )

    def seqs(self):
        return [e["seq"] for e in self.events]


def pty_chunks(c, pty_id, until, timeout=10.0):
    """Reads c's data messages of stream pty/<pty_id> until one ends at
    or past offset until; returns them as [(offset, bytes)]. Other
    messages are kept, in order, for recv()."""
    stream = "pty/" + pty_id
    deadline = time.monotonic() + timeout
    chunks, others = [], []
    try:
        while not chunks or chunks[-1][0] + len(chunks[-1][1]) < until:
            left = deadline - time.monotonic()
            if left <= 0:
                have = chunks[-1][0] + len(chunks[-1][1]) if chunks else None
                raise Timeout("%s: offset %d not reached within %.1f s (at %s)" % (stream, until, timeout, have))
            m = c.recv(left)
            if m.get("type") == "data" and m.get("stream") == stream:
                # The end of the stream carries no bytes; an attachment
                # made after it starts afresh.
                if not m.get("eof"):
                    chunks.append((m["offset"], bytes(m["data"])))
            else:
                others.append(m)
    finally:
        c._pending.extendleft(reversed(others))
    return chunks


def pty_read(c, pty_id, offset, until, timeout=10.0):
    """The bytes of pty/<pty_id> from offset to until (or the end of the
    last chunk read, if further), read from c. The first chunk must start
    at offset and each next one where the last ended: no gap, no
    duplicate."""
    out = bytearray()
    if until <= offset:
        return bytes(out)
    for at, data in pty_chunks(c, pty_id, until, timeout):
        expect_eq(at, offset + len(out), "pty/%s: the offset of the chunk after %d bytes" % (pty_id, len(out)))
        out += data
    return bytes(out)


def read_to_eof(c, streams, offsets=None, timeout=30.0, on_bytes=None):
    """Reads c's data messages of the named streams until each has sent its
    end (eof). Each stream's chunks must follow on from offsets[name] (0 by
    default) without gap or duplicate. Returns {name: bytes}. on_bytes(name,
    total) is called after each chunk (a test may abort midway by raising).
    Other messages are kept, in order, for recv()."""
    offsets = dict.fromkeys(streams, 0) if offsets is None else dict(offsets)
    out = {name: bytearray() for name in streams}
    done = set()
    others = []
    deadline = time.monotonic() + timeout
    try:
        while len(done) < len(streams):
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("streams %s: no end within %.1f s (have %s)" % (
                    sorted(set(streams) - done), timeout, {k: len(v) for k, v in out.items()}))
            m = c.recv(left)
            name = m.get("stream")
            if m.get("type") != "data" or name not in out:
                others.append(m)
                continue
            expect_eq(m["offset"], offsets[name] + len(out[name]), "%s: the offset after %d bytes" % (name, len(out[name])))
            expect(name not in done, "%s: data after its end" % name)
            out[name] += m["data"]
            if m.get("eof"):
                done.add(name)
            if on_bytes is not None:
                on_bytes(name, len(out[name]))
    finally:
        c._pending.extendleft(reversed(others))
    return {k: bytes(v) for k, v in out.items()}


def event_kinds(events):
    return [ev["kind"] for ev in events]


def expect_contiguous(seqs, first, last, what="seqs"):
    """seqs must be exactly first..last, in order, each once."""
    if seqs == list(range(first, last + 1)):
        return
    seen, dups = set(), []
    for s in seqs:
        if s in seen:
            dups.append(s)
        seen.add(s)
    missing = sorted(set(range(first, last + 1)) - seen)
    disorder = [(a, b) for a, b in zip(seqs, seqs[1:]) if b <= a]
    raise TestFailure(
        "%s are not exactly %d..%d: %d received, missing %s, duplicated %s, out of order at %s"
        % (what, first, last, len(seqs), short(missing, 200), short(dups, 200), short(disorder[:10], 200))
    )
