"""sdk: the TypeScript SDK beside the raw protocol, on the same berthd.

  sdk.py SRC BUILD DIR RUNS PINGS INFLIGHT BYTES

Two figures, each the median of RUNS runs, over the WebSocket:
- ping: PINGS pings with INFLIGHT always unanswered, through the SDK
  (bench/sdk.mjs) and through a raw client written from the protocol's
  page (bench/sdk_raw.py): requests per second;
- output: a command writes BYTES to stdout and the consumer reads them
  to the end, through the SDK's async iterator (acknowledging as it
  reads), the raw client (proc.start attach + ack) and the CLI (berth
  exec, C): MB/s.
Then the ratios of the SDK to each peer."""

import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

src, build, d = sys.argv[1], sys.argv[2], sys.argv[3]
RUNS, PINGS, INFLIGHT, BYTES = (int(x) for x in sys.argv[4:8])
SDK_DIST = os.environ.get("BERTH_SDK_DIST") or os.path.join(src, "clients", "typescript", "dist")


def seconds(argv):
    """What a bench client printed: the seconds its work took."""
    out = subprocess.run(argv, stdout=subprocess.PIPE, timeout=600, check=True).stdout
    return float(out.decode().split()[-1])


def timed(argv):
    """The seconds a program took to run to its end, its stdout dropped."""
    t0 = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, timeout=600, check=True)
    return time.monotonic() - t0


def median_of(argv, measure=seconds):
    return statistics.median(measure(argv) for _ in range(RUNS))


def cli_output(b):
    cmd = [os.path.join(build, "berth"), "--url", "ws://127.0.0.1:%d/v1" % b.port, "--token-file", b.token]
    return median_of(cmd + ["exec", "--", "head", "-c", str(BYTES), "/dev/zero"], timed)


def main():
    b = benchlib.Berth(src, build, d, 0)
    try:
        url = "ws://127.0.0.1:%d/v1" % b.port
        raw = ["/usr/bin/python3", os.path.join(src, "bench", "sdk_raw.py"), url, b.token]
        sdk = ["node", os.path.join(src, "bench", "sdk.mjs"), SDK_DIST, url, b.token]
        ping = {
            "SDK": median_of(sdk + ["ping", str(PINGS), str(INFLIGHT)]),
            "raw protocol (Python)": median_of(raw + ["ping", str(PINGS), str(INFLIGHT)]),
        }
        out = {
            "SDK": median_of(sdk + ["output", str(BYTES)]),
            "raw protocol (Python)": median_of(raw + ["output", str(BYTES)]),
            "berth exec (C)": cli_output(b),
        }
    finally:
        b.stop()
    print("ping, %d in flight, %d requests, median of %d runs:" % (INFLIGHT, PINGS, RUNS))
    for k, s in ping.items():
        print("  %-24s %10.0f req/s" % (k, PINGS / s))
    for k, s in ping.items():
        if k != "SDK":
            print("  SDK / %s: %.2fx" % (k, s / ping["SDK"]))
    print("output of one command, %d MiB, median of %d runs:" % (BYTES >> 20, RUNS))
    for k, s in out.items():
        print("  %-24s %10.1f MB/s" % (k, BYTES / s / 1e6))
    for k, s in out.items():
        if k != "SDK":
            print("  SDK / %s: %.2fx" % (k, s / out["SDK"]))


main()
