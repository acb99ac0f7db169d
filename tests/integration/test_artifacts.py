"""Artifacts (artifact.*), through the gateway's WebSocket: a published
file's reference (digest, size, media type, preview), the event that
carries the reference and never the content, ranged reads that rebuild
the exact bytes, one artifact per content, a large publication that does
not stall berthd, the store and its index across restarts (a torn index
tail, leftover temp files), the limit on publications in progress, a
publisher that goes away, a full disk, and bad arguments."""

import hashlib
import os
import random
import subprocess
import sys
import threading
import time

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (  # noqa: E402
    Sandbox,
    Skip,
    case,
    expect,
    expect_eq,
    expect_in,
    note,
    run,
    scratch,
    wait_for,
)

MIB = 1 << 20
READ_MAX = 4 * MIB
REF_KEYS = {"id", "sha256", "size", "media_type", "name"}


def write_file(directory, name, data):
    path = os.path.join(directory, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def write_big(directory, name, size, seed):
    """A file of size pseudo-random bytes (a random MiB with a counter in
    every 4 KiB, so no two MiB are alike); returns (path, sha256 hex)."""
    rng = random.Random(seed)
    block = bytearray(rng.randbytes(MIB))
    digest = hashlib.sha256()
    path = os.path.join(directory, name)
    with open(path, "wb") as f:
        for i in range(0, size, MIB):
            for j in range(0, MIB, 4096):
                block[j : j + 8] = (i + j).to_bytes(8, "big")
            piece = bytes(block[: min(MIB, size - i)])
            digest.update(piece)
            f.write(piece)
    return path, digest.hexdigest()


def publish(c, path, timeout=60, **extra):
    args = {"path": path}
    args.update(extra)
    return c.call("artifact.publish", args, timeout=timeout)


def read_all(c, ref, chunk=READ_MAX):
    """The artifact's bytes, read chunk after chunk; each answer checked."""
    out = bytearray()
    while True:
        r = c.call("artifact.read", {"id": ref["id"], "offset": len(out), "length": chunk}, timeout=20)
        expect_eq(r["offset"], len(out), "the offset artifact.read echoes")
        expect_eq(r["size"], ref["size"], "the size artifact.read reports")
        expect(len(r["data"]) <= chunk, "a read longer than asked: %d" % len(r["data"]))
        out += r["data"]
        expect_eq(r["eof"], len(out) >= ref["size"], "eof after %d bytes" % len(out))
        if r["eof"]:
            return bytes(out)
        expect(len(r["data"]) > 0, "an empty read before the end")


def expect_ref(ref, data, name, media_type):
    """ref is the reference of data published as name."""
    digest = hashlib.sha256(data).hexdigest()
    expect_eq(ref["sha256"], digest, "sha256 of %s" % name)
    expect_eq(ref["id"], digest, "id of %s" % name)
    expect_eq(ref["size"], len(data), "size of %s" % name)
    expect_eq(ref["name"], name, "name of %s" % name)
    expect_eq(ref["media_type"], media_type, "media_type of %s" % name)


def listed(c):
    r = c.call("artifact.list")
    expect_eq(r["truncated"], False, "artifact.list truncated")
    return {a["id"]: a for a in r["artifacts"]}


def store_entries(sb):
    return sorted(os.listdir(os.path.join(sb.state_dir, "artifacts")))


def wait_under_way(sb):
    """Waits until a publication's temp file is in the store."""
    wait_for(lambda: any(e.startswith(".publish-") for e in store_entries(sb)), 10, "a publication under way", 0.002)


# ---------------------------------------------------------------------
# References


@case("a text file: sha256, size, media type, name, and a preview of its first lines; the event has no content")
def text_file():
    d = scratch()
    marker = "zebra-%08x" % random.getrandbits(32)
    lines = ["line %03d of the report %s\n" % (i, marker) for i in range(100)]
    text = "".join(lines).encode()
    path = write_file(d, "report.log", text)
    with Sandbox() as sb:
        watcher = sb.ws()
        watcher.subscribe()
        c = sb.ws()
        before = int(time.time() * 1000)
        ref = publish(c, path)
        after = int(time.time() * 1000)
        note("reference: %r" % {k: v for k, v in ref.items() if k != "preview"})
        expect_eq(set(ref), REF_KEYS | {"created", "preview"}, "the keys of the reference")
        expect_ref(ref, text, "report.log", "text/plain")
        expect(before <= ref["created"] <= after, "created %d not within %d..%d" % (ref["created"], before, after))
        expect_eq(bytes(ref["preview"]), "".join(lines[:40]).encode(), "the preview: the first 40 lines")

        ev = watcher.events_until(lambda e: e["kind"] == "artifact.published")[-1]
        note("event: %r" % ev)
        expect_eq(ev["data"], {k: ref[k] for k in REF_KEYS}, "the event's data")
        expect(marker.encode() not in msgpack.packb(ev, use_bin_type=True), "the event holds the file's content")
        expect(marker.encode() not in sb.journal_bytes(), "the journal holds the file's content")
        expect_eq(read_all(c, ref), text, "the bytes read back")
        expect_eq(listed(c)[ref["id"]], {k: ref[k] for k in REF_KEYS | {"created"}}, "what artifact.list says")
        with open(os.path.join(sb.state_dir, "artifacts", ref["id"]), "rb") as f:
            expect_eq(f.read(), text, "the stored file")

        # Long lines: the preview stops at the last newline within 4 KiB.
        long_lines = ["%s %s\n" % (marker, "x" * 290) for _ in range(30)]
        ref = publish(c, write_file(d, "long.txt", "".join(long_lines).encode()))
        expect_eq(ref["media_type"], "text/plain", "media_type of long.txt")
        expect_eq(
            bytes(ref["preview"]),
            "".join(long_lines[: 4096 // len(long_lines[0])]).encode(),
            "the preview of long lines",
        )

        # One line longer than 4 KiB: cut at 4 KiB, not inside a character.
        one = ("\u00e9" * 3000).encode()
        ref = publish(c, write_file(d, "accents", one))
        expect_eq(ref["media_type"], "text/plain", "media_type of UTF-8 without an extension")
        expect_eq(bytes(ref["preview"]), one[:4096], "the preview of one long line")
        one = b"a" + ("\u00e9" * 3000).encode()
        ref = publish(c, write_file(d, "accents2", one))
        expect_eq(bytes(ref["preview"]), one[:4095], "the preview of one long line, cut before a character")

        # By extension, with a preview for text types.
        doc = b'{"a": 1}\n'
        ref = publish(c, write_file(d, "data.JSON", doc))
        expect_ref(ref, doc, "data.JSON", "application/json")
        expect_eq(bytes(ref["preview"]), doc, "the preview of a short JSON file")
        ref = publish(c, write_file(d, "empty", b""))
        expect_ref(ref, b"", "empty", "text/plain")
        expect_eq(bytes(ref["preview"]), b"", "the preview of an empty file")
        expect_eq(read_all(c, ref), b"", "an empty artifact read back")


@case("binary files: application/octet-stream and no preview; a given name and media_type are kept")
def binary_file():
    d = scratch()
    blob = random.Random(7).randbytes(100000)
    with Sandbox() as sb:
        c = sb.ws()
        ref = publish(c, write_file(d, "blob", blob))
        expect_ref(ref, blob, "blob", "application/octet-stream")
        expect(ref["preview"] is None, "a preview of a binary file")
        expect_eq(read_all(c, ref, chunk=30000), blob, "the bytes read back in 30000-byte reads")

        ref = publish(c, write_file(d, "shot.png", blob))
        expect_ref(ref, blob, "shot.png", "image/png")
        expect(ref["preview"] is None, "a preview of a PNG")

        for what, data in [("a NUL byte", b"text\0more"), ("Latin-1", "caf\u00e9\n".encode("latin-1"))]:
            ref = publish(c, write_file(d, "odd", data))
            expect_eq(ref["media_type"], "application/octet-stream", "media_type of text with %s" % what)

        ref = publish(c, write_file(d, "x.bin", b"hello\n"), name="notes for you", media_type="text/x-note")
        expect_ref(ref, b"hello\n", "notes for you", "text/x-note")
        expect_eq(bytes(ref["preview"]), b"hello\n", "the preview of a text type given by the client")
        ref = publish(c, write_file(d, "y", blob), media_type="application/x-thing; v=2")
        expect_eq(ref["media_type"], "application/x-thing; v=2", "a media_type with a parameter")


@case("ranged reads rebuild a 50 MiB file exactly; the same content published twice is one artifact", timeout=180)
def ranges_and_dedup():
    d = scratch()
    path, digest = write_big(d, "big.dat", 50 * MIB + 12345, 1)
    with open(path, "rb") as f:
        data = f.read()
    with Sandbox() as sb:
        c = sb.ws(timeout=60)
        ref = publish(c, path)
        expect_eq((ref["id"], ref["size"]), (digest, len(data)), "the reference of big.dat")
        started = time.monotonic()
        back = read_all(c, ref)
        note("read back %d bytes in %.2f s" % (len(back), time.monotonic() - started))
        expect_eq(hashlib.sha256(back).hexdigest(), digest, "the sha256 of what was read back")

        for offset, length in [(0, 1), (12345, 1000), (len(data) - 10, 100), (READ_MAX - 3, 7)]:
            r = c.call("artifact.read", {"id": ref["id"], "offset": offset, "length": length})
            expect_eq(bytes(r["data"]), data[offset : offset + length], "bytes %d+%d" % (offset, length))
            expect_eq(r["eof"], offset + length >= len(data), "eof of %d+%d" % (offset, length))
        r = c.call("artifact.read", {"id": ref["id"], "offset": len(data)})
        expect_eq((bytes(r["data"]), r["eof"]), (b"", True), "a read at the end")

        copy = write_file(d, "copy.dat", data)
        again = publish(c, copy, name="the same")
        expect_eq(again["id"], ref["id"], "the id of the same content")
        expect_eq(again["name"], "the same", "the name of the second publication")
        arts = listed(c)
        expect_eq(len(arts), 1, "artifacts listed after two publications of one content")
        expect_eq(arts[ref["id"]]["name"], "the same", "the listed name: the latest publication's")
        expect_eq(store_entries(sb), sorted([ref["id"], "index"]), "the store's files (no copy, no temp)")


@case("publishing 200 MiB does not stall berthd: pings keep being answered", timeout=240)
def big_publish_pings():
    d = scratch()
    path, digest = write_big(d, "huge.dat", 200 * MIB, 2)
    with Sandbox() as sb:
        pub = sb.ws(timeout=180)
        pinger = sb.ws()
        pinger.call("ping")
        result = {}

        def publisher():
            started = time.monotonic()
            try:
                result["ref"] = publish(pub, path, timeout=180)
            except Exception as e:  # reported by the main thread
                result["error"] = e
            result["took"] = time.monotonic() - started

        t = threading.Thread(target=publisher)
        t.start()
        rtts = []
        while t.is_alive():
            sent = time.monotonic()
            pinger.call("ping")
            rtts.append(time.monotonic() - sent)
            time.sleep(0.003)
        t.join()
        if "error" in result:
            raise result["error"]
        took = result["took"]
        note(
            "published 200 MiB in %.2f s; %d pings, the slowest %.1f ms, median %.1f ms"
            % (took, len(rtts), max(rtts) * 1000, sorted(rtts)[len(rtts) // 2] * 1000)
        )
        expect_eq(result["ref"]["sha256"], digest, "the sha256 of the 200 MiB file")
        expect(len(rtts) >= 20, "only %d pings during %.2f s" % (len(rtts), took))
        expect(
            max(rtts) < min(0.5, took / 4),
            "the slowest ping took %.0f ms of a %.2f s publication" % (max(rtts) * 1000, took),
        )


# ---------------------------------------------------------------------
# The store across restarts


@case("artifacts survive restarts; a torn index tail is cut away and leftover temps removed")
def restart():
    d = scratch()
    texts = [("first line %d\n" % i).encode() * 50 for i in range(3)]
    paths = [write_file(d, "t%d.txt" % i, t) for i, t in enumerate(texts)]
    blob = random.Random(3).randbytes(3 * MIB + 5)
    bpath = write_file(d, "b.bin", blob)
    with Sandbox() as sb:
        c = sb.ws()
        refs = [publish(c, paths[0]), publish(c, bpath)]
        before = listed(c)
        expect_eq(len(before), 2, "artifacts before the restart")

        sb.stop()
        index = os.path.join(sb.state_dir, "artifacts", "index")
        with open(index, "ab") as f:  # a record cut short, as a crash leaves it
            f.write(b"\x00\x00\x00\x60\x85\xa2id")
        write_file(os.path.join(sb.state_dir, "artifacts"), ".publish-7", b"half a copy")
        sb.start()

        c = sb.ws()
        expect_eq(listed(c), before, "artifact.list after the restart")
        expect_eq(read_all(c, refs[1]), blob, "the binary read back after the restart")
        expect_eq(read_all(c, refs[0]), texts[0], "the text read back after the restart")
        expect_in("the index ends there", sb.log(), "berthd's log")
        expect(".publish-7" not in store_entries(sb), "the leftover temp file is still there")

        # Appends continue after the last whole record: a third one
        # survives the next restart.
        refs.append(publish(c, paths[2]))
        sb.restart()
        c = sb.ws()
        after = listed(c)
        expect_eq(set(after), {r["id"] for r in refs}, "the ids listed after the second restart")
        expect_eq(read_all(c, refs[2]), texts[2], "the third artifact read back")

        # A stored file removed by hand: its entry is forgotten, not served.
        sb.stop()
        os.unlink(os.path.join(sb.state_dir, "artifacts", refs[0]["id"]))
        sb.start()
        c = sb.ws()
        expect_eq(set(listed(c)), {refs[1]["id"], refs[2]["id"]}, "the ids listed once a file is gone")
        expect_eq(c.error_of("artifact.read", {"id": refs[0]["id"]}), "not_found", "reading the removed artifact")
        expect_eq(publish(c, paths[0])["id"], refs[0]["id"], "publishing the removed content again")
        expect_eq(read_all(c, refs[0]), texts[0], "the content published again")


# ---------------------------------------------------------------------
# Concurrency and failures


@case(
    "at most 16 publications in progress: more are unavailable; a publisher that goes away still publishes", timeout=180
)
def in_progress_limit():
    d = scratch()
    path, digest = write_big(d, "mid.dat", 32 * MIB, 4)
    with Sandbox() as sb:
        c = sb.ws(timeout=120)
        ids = [c.send_request("artifact.publish", {"path": path}) for _ in range(20)]
        answers = [c.response(i, timeout=120) for i in ids]
        codes = [a["result"]["id"] if a["ok"] else a["error"]["code"] for a in answers]
        note("answers: %r" % codes)
        expect_eq(codes.count(digest), 16, "publications that succeeded")
        expect_eq(codes.count("unavailable"), 4, "publications refused")
        expect_eq(store_entries(sb), sorted([digest, "index"]), "the store's files")

        other, odigest = write_big(d, "other.dat", 64 * MIB, 5)
        watcher = sb.ws()
        watcher.subscribe()
        gone = sb.ws()
        gone.send_request("artifact.publish", {"path": other})
        wait_under_way(sb)
        gone.abort()
        ev = watcher.events_until(
            lambda e: e["kind"] == "artifact.published" and e["data"]["id"] == odigest, timeout=60
        )[-1]
        expect_eq(ev["data"]["size"], 64 * MIB, "the size in the event of the abandoned publication")
        expect_in(odigest, listed(c), "the abandoned publication in artifact.list")


@case("berthd stopped in the middle of a publication: no temp file is left, nothing is indexed", timeout=120)
def stop_mid_publication():
    d = scratch()
    path, _ = write_big(d, "long.dat", 256 * MIB, 6)
    with Sandbox() as sb:
        c = sb.ws()
        c.send_request("artifact.publish", {"path": path})
        wait_under_way(sb)
        expect_eq(sb.stop(), 0, "berthd's exit status")
        expect(" as artifact " not in sb.log(), "the publication ended before the stop")
        expect_eq(store_entries(sb), ["index"], "the store's files after the stop")
        sb.start()
        expect_eq(listed(sb.ws()), {}, "artifacts after the restart")


@case("a full disk: no_space naming the store, the temp file removed, the next publication works")
def disk_full():
    d = scratch()
    big = write_file(d, "big", random.Random(5).randbytes(2 * MIB))
    small = write_file(d, "small.txt", b"fits\n")
    with Sandbox(wait="socket") as sb:
        sb.stop()
        store = os.path.join(sb.state_dir, "artifacts")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", store], capture_output=True)
        if r.returncode != 0:
            raise Skip("cannot mount a small tmpfs: %s" % r.stderr.decode().strip())
        try:
            sb.start()
            c = sb.ws()
            r = c.request("artifact.publish", {"path": big})
            expect(not r["ok"], "publishing 2 MiB into 1 MiB succeeded")
            expect_eq(r["error"]["code"], "no_space", "the error code")
            expect_eq(r["error"]["path"], store, "the path the error names")
            expect_eq(store_entries(sb), ["index"], "the store's files after the failure")
            ref = publish(c, small)
            expect_eq(read_all(c, ref), b"fits\n", "the small file read back")
        finally:
            sb.stop()
            subprocess.run(["umount", "-l", store])


@case("bad arguments: each refused with its code and the path it is about; berthd still publishes")
def bad_args():
    d = scratch()
    good = write_file(d, "good.txt", b"good\n")
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    with Sandbox() as sb:
        c = sb.ws()
        ref = publish(c, good)
        rid = ref["id"]
        file_errors = [
            ({"path": d}, "is_a_directory", d),
            ({"path": os.path.join(d, "nothing")}, "not_found", os.path.join(d, "nothing")),
            ({"path": fifo}, "bad_args", fifo),
            ({"path": "/dev/null"}, "bad_args", "/dev/null"),
            ({"path": good + "/x"}, "not_a_directory", good + "/x"),
        ]
        for args, code, path in file_errors:
            r = c.request("artifact.publish", args, timeout=5)
            expect(not r["ok"], "artifact.publish %r succeeded" % args)
            expect_eq((r["error"]["code"], r["error"].get("path")), (code, path), "the error of %r" % args)
        cases = [
            ("artifact.publish", {}),
            ("artifact.publish", {"path": "relative/good.txt"}),
            ("artifact.publish", {"path": good + "\0x"}),
            ("artifact.publish", {"path": 5}),
            ("artifact.publish", {"path": good.encode()}),
            ("artifact.publish", {"path": "/" + "a" * 256}),
            ("artifact.publish", {"path": good, "name": 5}),
            ("artifact.publish", {"path": good, "name": ""}),
            ("artifact.publish", {"path": good, "name": "n" * 256}),
            ("artifact.publish", {"path": good, "media_type": 5}),
            ("artifact.publish", {"path": good, "media_type": "plain"}),
            ("artifact.publish", {"path": good, "media_type": "text/\x01"}),
            ("artifact.read", {}),
            ("artifact.read", {"id": 5}),
            ("artifact.read", {"id": "zz"}),
            ("artifact.read", {"id": rid.upper()}),
            ("artifact.read", {"id": rid + "0"}),
            ("artifact.read", {"id": rid, "offset": 7}),
            ("artifact.read", {"id": rid, "offset": -1}),
            ("artifact.read", {"id": rid, "offset": "0"}),
            ("artifact.read", {"id": rid, "length": 0}),
            ("artifact.read", {"id": rid, "length": READ_MAX + 1}),
            ("artifact.read", {"id": rid, "length": -5}),
            ("artifact.read", {"id": rid, "length": 1.5}),
        ]
        for op, args in cases:
            expect_eq(c.error_of(op, args), "bad_args", "%s %r" % (op, args))
        expect_eq(c.error_of("artifact.read", {"id": "0" * 64}), "not_found", "an unknown id")
        expect_eq(publish(c, good, name="n" * 255)["name"], "n" * 255, "a 255-byte name")
        expect_eq(read_all(c, ref), b"good\n", "the artifact after the refusals")
        expect_eq(sorted(listed(c)), [rid], "the ids listed")
        expect_eq(store_entries(sb), sorted([rid, "index"]), "the store's files (no temp left)")


run()
