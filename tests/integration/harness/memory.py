"""Searching a process's memory for secret values, as root, through
/proc/PID/mem: what a test reads to prove a value was wiped."""

import os
import re
import struct


def mappings(pid):
    """(start, end, perms, the rest of the line) of each mapping."""
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split(None, 5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            out.append((start, end, parts[1], parts[5].strip() if len(parts) > 5 else ""))
    return out


# Mappings larger than this are the sanitizers' reserved shadow, not data.
SCAN_MAX = 1 << 30
PAGE = os.sysconf("SC_PAGE_SIZE")
# Hex digits become "x", every other byte NUL: runs of hex digits are
# then found with bytes.find, at C speed.
HEX_RUNS = bytes(0x78 if chr(b) in "0123456789abcdef" else 0 for b in range(256))
WINDOW = 16


def present(pid, start, end):
    """The [from, to) runs of a mapping's pages that are in memory or
    swapped out: the rest was never touched and reads as zeros."""
    with open("/proc/%d/pagemap" % pid, "rb") as f:
        f.seek(start // PAGE * 8)
        entries = f.read((end - start) // PAGE * 8)
    runs, first = [], None
    for i, e in enumerate(struct.iter_unpack("<Q", entries)):
        if e[0] >> 62:
            first = start + i * PAGE if first is None else first
        elif first is not None:
            runs.append((first, start + i * PAGE))
            first = None
    if first is not None:
        runs.append((first, end))
    return runs


def hex_pieces(buf, windows):
    """The values of which buf holds a piece of WINDOW hex digits."""
    t = buf.translate(HEX_RUNS)
    run_start = b"x" * WINDOW
    out, i = set(), t.find(run_start)
    while i >= 0:
        j = t.find(b"\0", i)
        j = len(t) if j < 0 else j
        # The run may begin with a few digits that are not the value's.
        for k in range(i, min(j - WINDOW, i + 64) + 1):
            v = windows.get(buf[k : k + WINDOW])
            if v is not None:
                out.add(v)
                break
        i = t.find(run_start, j)
    return out


def memory_holds(pid, values, skip=None):
    """The values of which a copy, or a piece of WINDOW hex digits or
    more, is anywhere in the writable memory of pid, read through
    /proc/PID/mem (root may read an undumpable process). The values'
    digits are random: a piece of one is found nowhere by chance, and a
    copy cut into pieces (read from a socket in several reads) is
    found too. skip: the start of a mapping not to search, or a set of
    them."""
    windows = {}
    for v in values:
        for i in range(len(v) - WINDOW + 1):
            w = v[i : i + WINDOW]
            if w.translate(HEX_RUNS) == b"x" * WINDOW:
                windows[w] = v
    skips = skip if isinstance(skip, (set, frozenset)) else {skip}
    found = set()
    fd = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
    try:
        for start, end, perms, _ in mappings(pid):
            if "rw" not in perms or end - start > SCAN_MAX or start in skips:
                continue
            for lo, hi in present(pid, start, end):
                try:
                    buf = os.pread(fd, hi - lo, lo)
                except OSError:
                    continue
                found.update(hex_pieces(buf, windows))
    finally:
        os.close(fd)
    return found


def vm_flags(pid):
    """{start address: VmFlags} of each mapping."""
    flags, start = {}, None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            m = re.match(r"([0-9a-f]+)-[0-9a-f]+ ", line)
            if m:
                start = int(m.group(1), 16)
            elif line.startswith("VmFlags:"):
                flags[start] = line.split()[1:]
    return flags
